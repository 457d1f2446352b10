package pgqueue_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/pgqueue"
)

func TestAsError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	schema := pgx.Identifier{e.schema}.Sanitize()

	// A statement calling the SQL API outside the Client: its SQLSTATE
	// maps to the same kind as the Client's own error.
	_, err := e.pool.Exec(e.ctx, "SELECT "+schema+".account_purge($1, 'nope')", acct)
	qe, ok := pgqueue.AsError(fmt.Errorf("wrapped: %w", err))
	if !ok || !errors.Is(qe, pgqueue.ErrQueueNotFound) || qe.Message == "" {
		t.Fatalf("AsError(%v) = %+v, %v; want ErrQueueNotFound", err, qe, ok)
	}
	_, clientErr := e.c.Purge(e.ctx, acct, "nope")
	if ce, ok := pgqueue.AsError(clientErr); !ok || ce.Kind != qe.Kind || ce.Message != qe.Message {
		t.Fatalf("client error %+v, raw statement %+v: want the same kind and message", ce, qe)
	}
	if _, err := e.c.CreateQueue(e.ctx, acct, "jobs", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	_, err = e.pool.Exec(e.ctx, "SELECT "+schema+".account_create_queue($1, 'jobs')", acct)
	if qe, ok := pgqueue.AsError(err); !ok || !errors.Is(qe, pgqueue.ErrQueueExists) {
		t.Fatalf("AsError(%v) = %+v, %v; want ErrQueueExists", err, qe, ok)
	}

	// Other Postgres errors, including invalid JSON, are not the SQL API's.
	_, err = e.pool.Exec(e.ctx, "SELECT '{'::jsonb")
	if qe, ok := pgqueue.AsError(err); ok {
		t.Fatalf("AsError(%v) = %+v; want false for a plain Postgres error", err, qe)
	}
	if qe, ok := pgqueue.AsError(errors.New("boom")); ok || qe != nil {
		t.Fatalf("AsError(boom) = %+v, %v", qe, ok)
	}
	if _, ok := pgqueue.AsError(nil); ok {
		t.Fatal("AsError(nil) = true")
	}
}
