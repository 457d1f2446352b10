package namedsql_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/namedsql"
)

func ExampleParse() {
	file := `-- Statements of the example package.

-- name: count
SELECT count(*) FROM {{schema}}.messages

-- name: one
SELECT 1
`
	s, err := namedsql.Parse(file, "test_Schema")
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Get("count"))
	fmt.Println(s.Get("one"))
	// Output:
	// SELECT count(*) FROM "test_Schema".messages
	// SELECT 1
}

func TestParseRejectsDuplicatesAndBlanks(t *testing.T) {
	t.Parallel()
	if _, err := namedsql.Parse("-- name: a\nSELECT 1\n-- name: a\nSELECT 2", "s"); err == nil || !strings.Contains(err.Error(), `"a" is defined twice`) {
		t.Errorf("duplicate: err = %v", err)
	}
	if _, err := namedsql.Parse("-- name: \nSELECT 1", "s"); err == nil || !strings.Contains(err.Error(), "has no name") {
		t.Errorf("blank: err = %v", err)
	}
}
