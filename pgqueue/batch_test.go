package pgqueue_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/pgqueue"
)

// A Batch settles and sends in one transaction: all of it or none.
func TestBatchAllOrNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("in", pgqueue.Settings{})
	e.queue("out", pgqueue.Settings{})
	if err := e.c.CreateTopic(e.ctx, acct, "audit"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Subscribe(e.ctx, acct, "audit", "out"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e.send("in", string(body(i)))
	}
	msgs := e.receive("in", pgqueue.ReceiveOptions{Max: 3})
	ack := pgqueue.Ack{Sequence: msgs[0].Sequence, Receipt: msgs[0].Receipt}
	nack := pgqueue.Nack{Sequence: msgs[1].Sequence, Receipt: msgs[1].Receipt, Error: "later"}
	fail := pgqueue.Failure{Sequence: msgs[2].Sequence, Receipt: msgs[2].Receipt, Reason: "permanent_failure"}

	// A send to a queue that does not exist fails the batch: nothing is settled.
	b := e.c.NewBatch()
	b.Ack(acct, "in", []pgqueue.Ack{ack})
	b.Nack(acct, "in", []pgqueue.Nack{nack})
	b.Send(acct, "out", []pgqueue.NewMessage{{Body: body(9)}})
	b.Send(acct, "missing", []pgqueue.NewMessage{{Body: body(9)}})
	if err := b.Run(e.ctx, e.pool); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("Run with a send to a missing queue = %v, want ErrQueueNotFound", err)
	}
	if s := e.stats("in"); s.Inflight != 3 {
		t.Fatalf("after a failed batch: %+v, want 3 in flight", s)
	}
	if s := e.stats("out"); s.Ready != 0 {
		t.Fatalf("after a failed batch, out has %+v", s)
	}

	// A stale receipt fails the batch too.
	b = e.c.NewBatch()
	b.Ack(acct, "in", []pgqueue.Ack{{Sequence: ack.Sequence, Receipt: pgqueue.Receipt{1}}})
	b.Send(acct, "out", []pgqueue.NewMessage{{Body: body(9)}})
	if err := b.Run(e.ctx, e.pool); !errors.Is(err, pgqueue.ErrStaleReceipt) {
		t.Fatalf("Run with a stale receipt = %v, want ErrStaleReceipt", err)
	}

	b = e.c.NewBatch()
	b.Ack(acct, "in", []pgqueue.Ack{ack})
	b.Nack(acct, "in", []pgqueue.Nack{nack})
	b.Fail(acct, "in", []pgqueue.Failure{fail})
	b.Send(acct, "out", []pgqueue.NewMessage{{Body: body(7), DedupKey: "k"}})
	var copies int
	b.Publish(acct, "audit", json.RawMessage(`"done"`), nil, &copies)
	if err := b.Run(e.ctx, e.pool); err != nil {
		t.Fatal(err)
	}
	if copies != 1 {
		t.Fatalf("publish made %d copies, want 1", copies)
	}
	if s := e.stats("in"); s.Inflight+s.Ready+s.Delayed != 1 || s.DLQ != 1 {
		t.Fatalf("in after the batch: %+v, want the nacked message left and one dead", s)
	}
	if s := e.stats("out"); s.Ready != 2 {
		t.Fatalf("out after the batch: %+v, want 2 ready", s)
	}
}

func TestSettleTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("in", pgqueue.Settings{})
	e.send("in", "1")
	e.send("in", "2")
	msgs := e.receive("in", pgqueue.ReceiveOptions{Max: 2})
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	done, err := e.c.AckTx(e.ctx, tx, acct, "in", []pgqueue.Ack{{Sequence: msgs[0].Sequence, Receipt: msgs[0].Receipt}})
	if err != nil || len(done) != 1 {
		t.Fatalf("AckTx = %v, %v", done, err)
	}
	if done, err := e.c.FailTx(e.ctx, tx, acct, "in", []pgqueue.Failure{{Sequence: msgs[1].Sequence, Receipt: msgs[1].Receipt}}); err != nil || len(done) != 1 {
		t.Fatalf("FailTx = %v, %v", done, err)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if s := e.stats("in"); s.Inflight != 2 || s.DLQ != 0 {
		t.Fatalf("after rollback: %+v, want both in flight", s)
	}
}
