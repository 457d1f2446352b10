package pgqueue_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/pgqueue"
)

// The Client caches queue ids for the hot path (the queue_* functions of
// migration 014). A queue deleted and created again under the same name
// has a new id: each hot-path call made first after that, with the old id
// in the cache, is refused by the database without effect, resolves the
// id again and succeeds on the new queue. A queue deleted for good gives
// ErrQueueNotFound.
func TestCachedQueueIDAfterQueueRecreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx
	var oldID int64
	// recreate deletes and creates queue q again, checks its id changed,
	// and returns a message of it received with SQL (by name, leaving the
	// Client's cache alone).
	recreate := func() (int64, pgqueue.Receipt) {
		t.Helper()
		if oldID != 0 {
			if err := e.c.DeleteQueue(ctx, acct, "q"); err != nil {
				t.Fatal(err)
			}
		}
		e.queue("q", pgqueue.Settings{})
		id := e.one(`SELECT id FROM queues WHERE name = 'q'`).(int64)
		if id == oldID {
			t.Fatalf("queue q created again with the same id %d", id)
		}
		oldID = id
		e.exec(`SELECT send('q', '{"seed":1}')`)
		row := e.rows(`SELECT sequence, receipt::text FROM receive('q', 1)`)[0]
		r, err := pgqueue.ParseReceipt(row[1].(string))
		if err != nil {
			t.Fatal(err)
		}
		return row[0].(int64), r
	}
	ready := func(want int64) {
		t.Helper()
		if s := e.stats("q"); s.Ready != want {
			t.Fatalf("ready = %d, want %d", s.Ready, want)
		}
	}
	msg := pgqueue.NewMessage{Body: json.RawMessage(`{"a":1}`)}

	recreate()
	if _, err := e.c.Send(ctx, acct, "q", msg); err != nil { // caches the id
		t.Fatal(err)
	}

	recreate()
	if _, err := e.c.Send(ctx, acct, "q", msg); err != nil {
		t.Fatalf("send after the queue was created again: %v", err)
	}
	ready(1)

	recreate()
	if seqs, err := e.c.SendBatch(ctx, acct, "q", []pgqueue.NewMessage{msg, msg}); err != nil || len(seqs) != 2 {
		t.Fatalf("send batch after the queue was created again: %v %v", seqs, err)
	}
	ready(2)

	recreate()
	e.exec(`SELECT send('q', '{"b":1}')`)
	if got, err := e.c.Receive(ctx, acct, "q", pgqueue.ReceiveOptions{Max: 10}); err != nil || len(got) != 1 {
		t.Fatalf("receive after the queue was created again: %v %v", got, err)
	}

	recreate()
	e.exec(`SELECT send('q', '{"b":1}')`)
	if got, err := e.c.Receive(ctx, acct, "q", pgqueue.ReceiveOptions{Max: 10, Delete: true}); err != nil || len(got) != 1 {
		t.Fatalf("receive with delete after the queue was created again: %v %v", got, err)
	}

	seq, r := recreate()
	if got, err := e.c.Ack(ctx, acct, "q", []pgqueue.Ack{{Sequence: seq, Receipt: r}}); err != nil || len(got) != 1 {
		t.Fatalf("ack after the queue was created again: %v %v", got, err)
	}

	seq, r = recreate()
	if err := e.c.Delete(ctx, acct, "q", seq, r); err != nil {
		t.Fatalf("delete after the queue was created again: %v", err)
	}

	seq, r = recreate()
	if err := e.c.ChangeVisibility(ctx, acct, "q", seq, r, 0); err != nil {
		t.Fatalf("change visibility after the queue was created again: %v", err)
	}
	ready(1)

	seq, r = recreate()
	if got, err := e.c.Nack(ctx, acct, "q", []pgqueue.Nack{{Sequence: seq, Receipt: r}}); err != nil || len(got) != 1 {
		t.Fatalf("nack after the queue was created again: %v %v", got, err)
	}
	ready(1)

	seq, r = recreate()
	if got, err := e.c.Release(ctx, acct, "q", []pgqueue.Ack{{Sequence: seq, Receipt: r}}); err != nil || len(got) != 1 {
		t.Fatalf("release after the queue was created again: %v %v", got, err)
	}
	ready(1)

	seq, r = recreate()
	if got, err := e.c.Fail(ctx, acct, "q", []pgqueue.Failure{{Sequence: seq, Receipt: r}}); err != nil || len(got) != 1 {
		t.Fatalf("fail after the queue was created again: %v %v", got, err)
	}
	if s := e.stats("q"); s.DLQ != 1 {
		t.Fatalf("dlq = %d after fail, want 1", s.DLQ)
	}

	// Deleted for good: the cached id is dropped, the name resolves to
	// nothing.
	if err := e.c.DeleteQueue(ctx, acct, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Send(ctx, acct, "q", msg); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("send to a deleted queue: %v, want ErrQueueNotFound", err)
	}
	if _, err := e.c.Receive(ctx, acct, "q", pgqueue.ReceiveOptions{}); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("receive from a deleted queue: %v, want ErrQueueNotFound", err)
	}
}

// A queue_* function given an id that is not the named queue's raises the
// queue-not-found error of the account_* functions (same SQLSTATE), also
// for a queue of another account with that name.
func TestQueueFunctionsCheckTheID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("a", pgqueue.Settings{})
	e.queue("b", pgqueue.Settings{})
	if err := e.c.CreateAccount(e.ctx, "000000000777", "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateQueue(e.ctx, "000000000777", "a", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT queue_send((SELECT id FROM queues WHERE name = 'b'), '000000000001', 'a', '{}')`,
		`SELECT * FROM queue_send_batch((SELECT id FROM queues WHERE name = 'b'), '000000000001', 'a', ARRAY['{}']::jsonb[])`,
		`SELECT * FROM queue_receive((SELECT id FROM queues WHERE name = 'a' AND account = '000000000777'), '000000000001', 'a')`,
		`SELECT * FROM queue_receive_delete(0, '000000000001', 'a')`,
		`SELECT queue_delete(0, '000000000001', 'a', 1)`,
		`SELECT * FROM queue_ack(0, '000000000001', 'a', ARRAY[1]::bigint[])`,
		`SELECT * FROM queue_nack(0, '000000000001', 'a', ARRAY[1]::bigint[])`,
		`SELECT * FROM queue_fail(0, '000000000001', 'a', ARRAY[1]::bigint[])`,
		`SELECT * FROM queue_release(0, '000000000001', 'a', ARRAY[1]::bigint[], ARRAY[NULL]::uuid[])`,
		`SELECT queue_set_visibility(0, '000000000001', 'a', 1, 0)`,
	} {
		if pgErr := e.sqlErr(q); pgErr.Code != "SQ001" || pgErr.Message != `queue "a" not found in account 000000000001` {
			t.Errorf("%s: %s %s, want SQ001", q, pgErr.Code, pgErr.Message)
		}
	}
	if pgErr := e.sqlErr(`SELECT * FROM queue_ack(0, '000000000001', 'no way', ARRAY[1]::bigint[])`); pgErr.Code != "SQ003" {
		t.Errorf("queue_ack with a bad name: %s %s, want SQ003", pgErr.Code, pgErr.Message)
	}
}
