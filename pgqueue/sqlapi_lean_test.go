package pgqueue_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// send_batch and receive keep their contracts on the lean paths of
// migration 012: the exact size limit on a body's text, NULL bodies and
// fifo queues refused, an empty batch, the wake-up only for listeners and
// only for visible messages, and receive's order and receipts across more
// calls than the plan cache needs to settle on a generic plan.
func TestSQLLeanPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// 1e20 is a few bytes stored and 21 as text (100000000000000000000):
	// the limit counts the text.
	e.exec(`SELECT create_queue('small', '{"max_message_bytes": 21}')`)
	if n := len(e.rows(`SELECT * FROM send_batch('small', ARRAY['1e20', '"abc"']::jsonb[])`)); n != 2 {
		t.Fatalf("send_batch of bodies at the limit returned %d rows", n)
	}
	if pgErr := e.sqlErr(`SELECT * FROM send_batch('small', ARRAY['1', '1e21']::jsonb[])`); pgErr.Code != "SQ004" ||
		!strings.Contains(pgErr.Message, "body is 22 bytes") || !strings.Contains(pgErr.Message, "at most 21 bytes") {
		t.Fatalf("body over the limit: %s %s", pgErr.Code, pgErr.Message)
	}
	if pgErr := e.sqlErr(`SELECT * FROM send_batch('small', ARRAY['1', NULL]::jsonb[])`); pgErr.Code != "SQ005" ||
		!strings.Contains(pgErr.Message, "batch index 1") {
		t.Fatalf("NULL body: %s %s", pgErr.Code, pgErr.Message)
	}
	if n := len(e.rows(`SELECT * FROM send_batch('small', ARRAY[]::jsonb[])`)); n != 0 {
		t.Fatalf("empty send_batch returned %d rows", n)
	}
	if pgErr := e.sqlErr(`SELECT * FROM send_batch('nope', ARRAY['1']::jsonb[])`); pgErr.Code != "SQ001" {
		t.Fatalf("send_batch to a missing queue: %s %s", pgErr.Code, pgErr.Message)
	}
	if v := e.one(`SELECT ready FROM queue_stats WHERE queue = 'small'`); v != int64(2) {
		t.Fatalf("ready = %v after the refused batches, want 2", v)
	}

	if _, err := e.c.CreateQueue(e.ctx, acct, "fifo", pgqueue.Settings{Fifo: true}); err != nil {
		t.Fatal(err)
	}
	if pgErr := e.sqlErr(`SELECT * FROM send_batch('fifo', ARRAY['1']::jsonb[])`); pgErr.Code != "SQ005" ||
		!strings.Contains(pgErr.Message, "fifo queue") {
		t.Fatalf("send_batch without a group to a fifo queue: %s %s", pgErr.Code, pgErr.Message)
	}
	if n := len(e.rows(`SELECT * FROM send_batch('fifo', ARRAY['1', '2']::jsonb[], 0, 'g')`)); n != 2 {
		t.Fatalf("grouped send_batch returned %d rows", n)
	}

	// The wake-up: a NOTIFY when someone registered interest and the
	// messages are visible now; none for a delayed batch.
	e.exec(`SELECT create_queue('woken')`)
	conn, err := e.pool.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(e.ctx, "LISTEN "+pgxIdent(e.schema+"_wake")); err != nil {
		t.Fatal(err)
	}
	e.exec(`SELECT * FROM send_batch('woken', ARRAY['1']::jsonb[])`)
	e.exec(`INSERT INTO wake_interest (queue_id, until)
	        SELECT id, now() + interval '1 minute' FROM queues WHERE name = 'woken'`)
	e.exec(`SELECT * FROM send_batch('woken', ARRAY['2']::jsonb[], 60)`)
	e.exec(`SELECT * FROM send_batch('woken', ARRAY['3']::jsonb[])`)
	var payloads []string
	for {
		ctx, cancel := context.WithTimeout(e.ctx, 500*time.Millisecond)
		n, err := conn.Conn().WaitForNotification(ctx)
		cancel()
		if err != nil {
			break
		}
		payloads = append(payloads, n.Payload)
	}
	if len(payloads) != 1 || payloads[0] != acct+"/woken" {
		t.Fatalf("wake-ups %q, want one for %s/woken", payloads, acct)
	}

	// receive: in sequence order, distinct receipts, the same on every
	// call of one session (the plan cache switches plans after five).
	e.exec(`SELECT create_queue('many')`)
	e.exec(`SELECT send_batch('many', (SELECT array_agg(jsonb_build_object('n', g)) FROM generate_series(1, 40) g))`)
	tx := e.schemaTx()
	defer tx.Rollback(e.ctx)
	var last int64
	receipts := map[string]bool{}
	for call := range 10 {
		want := 1 + call%3
		rows, err := tx.Query(e.ctx, `SELECT sequence, receipt::text, (body->>'n')::int FROM receive('many', $1)`, want)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for rows.Next() {
			var seq int64
			var receipt string
			var n int
			if err := rows.Scan(&seq, &receipt, &n); err != nil {
				t.Fatal(err)
			}
			if seq <= last || receipts[receipt] {
				t.Fatalf("call %d: sequence %d after %d, receipt %s seen before: %v", call, seq, last, receipt, receipts[receipt])
			}
			last = seq
			receipts[receipt] = true
			got++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("call %d: receive('many', %d) returned %d rows", call, want, got)
		}
	}
}

// send_batch inserts a batch of bodies only itself on plain Postgres (one
// lookup, one INSERT: migration 018) and hands every other batch to
// queue_send_batch, which owns the errors and the options; on Citus every
// batch goes through queue_send_batch and its routed inserts. Which path
// a call took is read from the transaction's own function statistics.
func TestSendBatchCommonCaseStaysInSendBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`SELECT create_queue('plain')`)
	e.exec(`SELECT create_queue('small', '{"max_message_bytes": 12}')`)
	e.exec(`SELECT create_queue('fifo', '{"fifo": true}')`)
	onCitus := os.Getenv(pgtest.CitusEnvVar) == "1"
	for _, c := range []struct {
		call   string
		common bool // the batch is the common case
	}{
		{`send_batch('plain', ARRAY['1', '{"a": 2}']::jsonb[])`, true},
		{`send_batch('plain', ARRAY['1']::jsonb[], 5)`, true},
		{`send_batch('plain', ARRAY['1']::jsonb[], NULL)`, true},
		{`send_batch('plain', ARRAY['1', '2']::jsonb[], 0, 'g')`, false},
		{`send_batch('fifo', ARRAY['1']::jsonb[], 0, 'g')`, false},
		{`send_batch('plain', ARRAY[]::jsonb[])`, false},
		// Each body fits the limit, the batch's JSON text does not
		// (["12345", "12345"] is 18 bytes), so queue_send_batch checks
		// them one by one; ["12345"] is 9.
		{`send_batch('small', ARRAY['"12345"', '"12345"']::jsonb[])`, false},
		{`send_batch('small', ARRAY['"12345"']::jsonb[])`, true},
	} {
		handedOn := e.sendBatchHandOns(c.call)
		want := int64(1)
		if c.common && !onCitus {
			want = 0
		}
		if handedOn != want {
			t.Errorf("%s called queue_send_batch %d times, want %d (common case %t, Citus %t)", c.call, handedOn, want, c.common, onCitus)
		}
	}
}

// sendBatchHandOns runs call (a send_batch) in a transaction it rolls
// back and returns how many times the call ran queue_send_batch, read
// from the session's function statistics not yet reported, before and
// after the call (they can include earlier transactions).
func (e *env) sendBatchHandOns(call string) int64 {
	e.t.Helper()
	tx := e.schemaTx()
	defer tx.Rollback(e.ctx)
	if _, err := tx.Exec(e.ctx, "SET LOCAL track_functions = 'pl'"); err != nil {
		e.t.Fatal(err)
	}
	calls := func() int64 {
		var n int64
		if err := tx.QueryRow(e.ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
			WHERE schemaname = $1 AND funcname = 'queue_send_batch'`, e.schema).Scan(&n); err != nil {
			e.t.Fatal(err)
		}
		return n
	}
	before := calls()
	if _, err := tx.Exec(e.ctx, "SELECT * FROM "+call); err != nil {
		e.t.Fatalf("%s: %v", call, err)
	}
	return calls() - before
}
