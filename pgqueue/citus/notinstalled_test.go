//go:build !citus

package citus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/citus"
)

// On a Postgres without Citus (what `make test` runs on), Distribute
// refuses with ErrNotInstalled and says what to do; the Citus suite
// (-tags citus, scripts/test-citus) covers a cluster.
func TestDistributeWithoutCitus(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	err := citus.Distribute(context.Background(), pool, schema)
	if !errors.Is(err, citus.ErrNotInstalled) {
		t.Fatalf("Distribute on plain Postgres: %v, want ErrNotInstalled", err)
	}
	for _, want := range []string{schema, "CREATE EXTENSION citus", "without --citus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
