// Package namedsql reads the SQL statements a package keeps in a .sql file:
// blocks that each start with a "-- name: <key>" line, written against a
// {{schema}} placeholder that is replaced by the quoted schema name, so one
// file serves every schema (tests use a fresh schema each).
//
//	-- name: get_function
//	SELECT id, name FROM {{schema}}.functions WHERE account = $1 AND name = $2
package namedsql

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Statements are the named statements of one file, bound to one schema.
type Statements map[string]string

// Parse splits file into named statements for schema. It fails on a block
// without a name or a name used twice.
func Parse(file, schema string) (Statements, error) {
	ident := pgx.Identifier{schema}.Sanitize()
	out := Statements{}
	for i, block := range strings.Split(file, "-- name: ")[1:] {
		name, body, _ := strings.Cut(block, "\n")
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("namedsql: block %d has no name", i+1)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("namedsql: statement %q is defined twice", name)
		}
		out[name] = strings.TrimSpace(strings.ReplaceAll(body, "{{schema}}", ident))
	}
	return out, nil
}

// MustParse is Parse for files embedded in the binary, where a malformed
// file is a programmer error.
func MustParse(file, schema string) Statements {
	s, err := Parse(file, schema)
	if err != nil {
		panic(err)
	}
	return s
}

// Get returns the statement called name; asking for a statement the file
// does not define is a programmer error and panics.
func (s Statements) Get(name string) string {
	q, ok := s[name]
	if !ok {
		panic("namedsql: no statement named " + name)
	}
	return q
}
