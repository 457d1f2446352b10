package pgqueue_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

// A queue with RequireReceipt refuses a batch ack of a leased message
// without its receipt, as it refuses the single delete: the whole call
// fails naming the message and acks nothing. Messages not leased, and
// leased ones with their receipts, are acked; the SQL account_ack refuses
// alike. Queues without the setting ack as before.
func TestRequireReceiptBatchAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("strict", pgqueue.Settings{RequireReceipt: true})
	e.queue("open", pgqueue.Settings{})
	var sent []int64
	for range 3 {
		sent = append(sent, e.send("strict", `{}`))
		e.send("open", `{}`)
	}
	leased := e.receive("strict", pgqueue.ReceiveOptions{Max: 2, VisibilityTimeout: 10 * time.Minute})
	if len(leased) != 2 {
		t.Fatalf("received %d", len(leased))
	}
	waiting := sent[2] // the message not received (receives go in send order)
	if leased[0].Sequence != sent[0] || leased[1].Sequence != sent[1] {
		t.Fatalf("received %d and %d of %v", leased[0].Sequence, leased[1].Sequence, sent)
	}

	// A leased message without its receipt: refused, nothing acked.
	_, err := e.c.Ack(e.ctx, acct, "strict", []pgqueue.Ack{{Sequence: waiting}, {Sequence: leased[1].Sequence}})
	want := fmt.Sprintf("message %d of queue \"strict\" is leased and the queue requires a receipt", leased[1].Sequence)
	if !errors.Is(err, pgqueue.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
		t.Fatalf("ack of a leased message without its receipt: %v", err)
	}
	if s := e.stats("strict"); s.Total != 3 {
		t.Fatalf("after the refused ack: %+v", s)
	}
	// One with its receipt, one without: refused alike.
	_, err = e.c.Ack(e.ctx, acct, "strict", []pgqueue.Ack{pgqueue.Leases(leased)[0], {Sequence: leased[1].Sequence}})
	if !errors.Is(err, pgqueue.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
		t.Fatalf("ack with one receipt of two: %v", err)
	}
	if s := e.stats("strict"); s.Total != 3 {
		t.Fatalf("after the second refused ack: %+v", s)
	}
	_, err = e.pool.Exec(e.ctx, "SELECT * FROM "+pgxIdent(e.schema)+".account_ack($1, 'strict', $2)",
		acct, []int64{leased[0].Sequence})
	if qe, ok := pgqueue.AsError(err); !ok || !errors.Is(qe, pgqueue.ErrInvalidArgument) {
		t.Fatalf("SQL account_ack of a leased message without its receipt: %v", err)
	}

	// With the receipts of the leased ones, and none for the one never
	// received, all three go.
	acks := append(pgqueue.Leases(leased), pgqueue.Ack{Sequence: waiting})
	done, err := e.c.Ack(e.ctx, acct, "strict", acks)
	if err != nil || len(done) != 3 {
		t.Fatalf("ack with receipts: %v %v", done, err)
	}

	// Without the setting a leased message is acked without its receipt.
	open := e.receive("open", pgqueue.ReceiveOptions{Max: 3, VisibilityTimeout: 10 * time.Minute})
	var seqs []pgqueue.Ack
	for _, m := range open {
		seqs = append(seqs, pgqueue.Ack{Sequence: m.Sequence})
	}
	if done, err := e.c.Ack(e.ctx, acct, "open", seqs); err != nil || len(done) != 3 {
		t.Fatalf("ack on a queue without require_receipt: %v %v", done, err)
	}
}
