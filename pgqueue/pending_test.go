package pgqueue_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

func TestReceivePendingLeasesAtCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	all := []int64{e.send("q", `{"n":1}`), e.send("q", `{"n":2}`), e.send("q", `{"n":3}`)}
	p, err := e.c.ReceivePending(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs(p.Messages), all[:2]) {
		t.Fatalf("received %v, want %v", seqs(p.Messages), all[:2])
	}
	if m := p.Messages[0]; string(m.Body) != `{"n": 1}` || m.ReceiveCount != 1 || m.Receipt.IsZero() {
		t.Fatalf("message %+v", m)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("Err after the commit: %v", err)
	}
	if rest := e.receive("q", pgqueue.ReceiveOptions{Max: 10}); !slices.Equal(seqs(rest), all[2:]) {
		t.Fatalf("a receive after the pending one got %v, want %v", seqs(rest), all[2:])
	}
	acked, err := e.c.Ack(e.ctx, acct, "q", pgqueue.Leases(p.Messages))
	if err != nil || len(acked) != 2 {
		t.Fatalf("ack of the pending receive's leases: %v %v", acked, err)
	}
	if s := e.stats("q"); s.Total != 1 {
		t.Fatalf("stats after the ack: %+v", s)
	}
}

func TestReceivePendingCommitRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	refuse, allow := pgtest.RefuseCommits(t, e.pool, e.schema, 0)
	e.queue("q", pgqueue.Settings{})
	all := []int64{e.send("q", `{"n":1}`), e.send("q", `{"n":2}`)}
	refuse()
	p, err := e.c.ReceivePending(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 10})
	if err != nil {
		t.Fatalf("the rows come before the commit, which fails later: %v", err)
	}
	if !slices.Equal(seqs(p.Messages), all) {
		t.Fatalf("received %v, want %v", seqs(p.Messages), all)
	}
	if err := p.Wait(); err == nil || !strings.Contains(err.Error(), "commit refused by the test") {
		t.Fatalf("Wait: %v, want the refused commit", err)
	}
	if p.Err() == nil {
		t.Fatal("Err is nil after a refused commit")
	}
	allow()
	again := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(again), all) {
		t.Fatalf("after the refused commit a receive got %v, want %v (not leased)", seqs(again), all)
	}
	for _, m := range again {
		if m.ReceiveCount != 1 {
			t.Fatalf("message %d: receive count %d, want 1: the refused lease must not count", m.Sequence, m.ReceiveCount)
		}
	}
}

func TestReceivePendingRefusesWaitDeleteAndUnknownQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	for _, o := range []pgqueue.ReceiveOptions{{Wait: 1}, {Delete: true}} {
		if _, err := e.c.ReceivePending(e.ctx, acct, "q", o); err == nil || !strings.Contains(err.Error(), "use Receive") {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	if _, err := e.c.ReceivePending(e.ctx, acct, "nope", pgqueue.ReceiveOptions{}); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("unknown queue: %v", err)
	}
	// A statement the database refuses (a Max out of range) is an error,
	// and its connection is given back in a usable state.
	if _, err := e.c.ReceivePending(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 5000}); err == nil {
		t.Fatal("Max 5000: no error")
	} else {
		t.Logf("Max 5000: %v", err)
	}
	e.send("q", `{"n":1}`)
	p, err := e.c.ReceivePending(e.ctx, acct, "q", pgqueue.ReceiveOptions{})
	if err != nil || len(p.Messages) != 1 || p.Wait() != nil {
		t.Fatalf("after a refused statement: %v", err)
	}
}
