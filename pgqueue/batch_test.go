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

// After NoteSent, a batch's sends and publishes record what they sent in
// the transaction-local setting SentSetting, for a later statement of the
// same batch; the setting ends with the transaction.
func TestBatchNoteSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("out", pgqueue.Settings{})
	e.queue("copy", pgqueue.Settings{})
	if err := e.c.CreateTopic(e.ctx, acct, "audit"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Subscribe(e.ctx, acct, "audit", "copy"); err != nil {
		t.Fatal(err)
	}
	first := e.send("out", string(body(0)))
	conn, err := e.pool.Acquire(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	b := e.c.NewBatch()
	b.NoteSent()
	b.Publish(acct, "audit", body(1), nil, nil)
	b.Send(acct, "out", []pgqueue.NewMessage{{Body: body(2)}, {Body: body(3)}})
	// Copy the note to a session setting this test can read after commit.
	b.Queue("SELECT set_config('sluice_test.sent', current_setting($1, true), false)", pgqueue.SentSetting)
	if err := b.Run(e.ctx, conn.Conn()); err != nil {
		t.Fatal(err)
	}
	var noted string
	if err := conn.QueryRow(e.ctx, "SELECT current_setting('sluice_test.sent')").Scan(&noted); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Queue     string
		Topic     string
		Sequences []int64
		Copies    int
	}
	if err := json.Unmarshal([]byte(noted), &got); err != nil {
		t.Fatalf("noted %q: %v", noted, err)
	}
	if len(got) != 2 || got[0].Topic != "audit" || got[0].Copies != 1 || got[1].Queue != "out" ||
		len(got[1].Sequences) != 2 || got[1].Sequences[0] <= first || got[1].Sequences[1] <= got[1].Sequences[0] {
		t.Errorf("noted %s; want the publish (1 copy) then the send's two new sequences after %d", noted, first)
	}
	var after *string
	if err := conn.QueryRow(e.ctx, "SELECT current_setting($1, true)", pgqueue.SentSetting).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != nil && *after != "" {
		t.Errorf("%s after the transaction = %q, want it gone", pgqueue.SentSetting, *after)
	}
	// Without NoteSent nothing is noted.
	b = e.c.NewBatch()
	b.Send(acct, "out", []pgqueue.NewMessage{{Body: body(4)}})
	b.Queue("SELECT set_config('sluice_test.sent', coalesce(current_setting($1, true), ''), false)", pgqueue.SentSetting)
	if err := b.Run(e.ctx, conn.Conn()); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(e.ctx, "SELECT current_setting('sluice_test.sent')").Scan(&noted); err != nil || noted != "" {
		t.Errorf("without NoteSent: noted %q, %v; want nothing", noted, err)
	}
}
