package pgqueue_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// The claims of queue_receive and queue_receive_delete run with the plan
// cache's generic plan on plain Postgres (migration 016), and without it
// on Citus, which cannot plan them so (pgqueue/citus/distribute.sql
// resets it); and the plan honours each call's limit: receives of 1, 7, 10
// and 3 messages, over many more calls than the plan cache needs to keep
// a plan, each get exactly that many (or what is left), oldest first,
// none twice.
func TestClaimKeepsItsPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	onCitus := os.Getenv(pgtest.CitusEnvVar) == "1"
	for _, f := range []string{
		"queue_receive(bigint, text, text, integer, integer)",
		"queue_receive_delete(bigint, text, text, integer)",
	} {
		config := functionSettings(e, f)
		generic := strings.Contains(config, "plan_cache_mode=force_generic_plan")
		switch {
		case onCitus && generic:
			t.Errorf("%s runs with %q on Citus: distribute.sql did not reset plan_cache_mode", f, config)
		case !onCitus && !generic:
			t.Errorf("%s runs with %q, not plan_cache_mode=force_generic_plan: a migration replaced it without setting it again", f, config)
		}
	}

	for _, del := range []bool{false, true} {
		queue := fmt.Sprintf("claims-delete-%t", del)
		if _, err := e.c.CreateQueue(e.ctx, acct, queue, pgqueue.Settings{}); err != nil {
			t.Fatal(err)
		}
		const n = 150
		batch := make([]pgqueue.NewMessage, n)
		for i := range batch {
			batch[i] = pgqueue.NewMessage{Body: body(i)}
		}
		sent, err := e.c.SendBatch(e.ctx, acct, queue, batch)
		if err != nil {
			t.Fatal(err)
		}
		limits := []int{1, 7, 10, 3}
		got := 0
		for call := 0; got < n; call++ {
			limit := limits[call%len(limits)]
			msgs, err := e.c.Receive(e.ctx, acct, queue, pgqueue.ReceiveOptions{Max: limit, Delete: del})
			if err != nil {
				t.Fatal(err)
			}
			if want := min(limit, n-got); len(msgs) != want {
				t.Fatalf("delete=%t: call %d with limit %d got %d messages, want %d", del, call, limit, len(msgs), want)
			}
			for _, m := range msgs {
				if m.Sequence != sent[got] {
					t.Fatalf("delete=%t: call %d: message %d is sequence %d, want %d (oldest first, none twice)",
						del, call, got, m.Sequence, sent[got])
				}
				got++
			}
		}
		if msgs, err := e.c.Receive(e.ctx, acct, queue, pgqueue.ReceiveOptions{Max: 10, Delete: del}); err != nil || len(msgs) != 0 {
			t.Fatalf("delete=%t: a receive after all %d got %d messages (%v)", del, n, len(msgs), err)
		}
	}
}

// The settling functions run with random_page_cost = 1.1 (migration 017),
// on Postgres and on Citus alike, so that a settlement of many messages
// looks each up by its key instead of hashing its whole queue; and one
// settlement of 1,000 settles exactly the 1,000 messages it names.
func TestSettlingFunctionsCostReadsInMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, f := range []string{
		"queue_ack(bigint, text, text, bigint[], uuid[], boolean)",
		"queue_nack(bigint, text, text, bigint[], uuid[], integer[], text[])",
		"queue_fail(bigint, text, text, bigint[], uuid[], text[], text[])",
		"queue_release(bigint, text, text, bigint[], uuid[])",
	} {
		config := functionSettings(e, f)
		if !strings.Contains(config, "random_page_cost=1.1") {
			t.Errorf("%s runs with %q, not random_page_cost=1.1: a migration replaced it without setting it again", f, config)
		}
	}

	const queue, n = "settle-many", 1000
	if _, err := e.c.CreateQueue(e.ctx, acct, queue, pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	batch := make([]pgqueue.NewMessage, n)
	for i := range batch {
		batch[i] = pgqueue.NewMessage{Body: body(i)}
	}
	for range 3 { // 2,000 the ack does not name
		if _, err := e.c.SendBatch(e.ctx, acct, queue, batch); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := e.c.Receive(e.ctx, acct, queue, pgqueue.ReceiveOptions{Max: n})
	if err != nil || len(msgs) != n {
		t.Fatalf("receive of %d: %d messages, %v", n, len(msgs), err)
	}
	acked, err := e.c.Ack(e.ctx, acct, queue, pgqueue.Leases(msgs))
	if err != nil || len(acked) != n {
		t.Fatalf("ack of %d: %d acked, %v", n, len(acked), err)
	}
	s, err := e.c.Stats(e.ctx, acct, queue)
	if err != nil {
		t.Fatal(err)
	}
	if s.Ready != 2*n || s.Inflight != 0 {
		t.Fatalf("after acking %d of %d: %d ready and %d in flight, want %d and 0", n, 3*n, s.Ready, s.Inflight, 2*n)
	}
}

// functionSettings returns the settings function f (a regprocedure, such
// as "queue_ack(bigint, ...)") runs with, comma-separated.
func functionSettings(e *env, f string) string {
	return e.one(`SELECT coalesce(array_to_string(proconfig, ','), '') FROM pg_proc WHERE oid = $1::regprocedure`, f).(string)
}
