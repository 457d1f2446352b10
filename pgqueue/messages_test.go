package pgqueue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

func TestSendReceiveDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	s1, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: json.RawMessage(`{"a":1}`), Headers: json.RawMessage(`{"trace":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := e.c.SendBatch(e.ctx, acct, "q", []pgqueue.NewMessage{{Body: body(2)}, {Body: body(3)}, {Body: body(4)}})
	if err != nil || len(batch) != 3 {
		t.Fatalf("batch: %v %v", batch, err)
	}
	all := append([]int64{s1}, batch...)
	if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != 4 {
		t.Fatalf("sequences not increasing: %v", all)
	}
	msgs := e.receive("q", pgqueue.ReceiveOptions{Max: 2})
	if !slices.Equal(seqs(msgs), all[:2]) {
		t.Fatalf("received %v, want %v", seqs(msgs), all[:2])
	}
	m := msgs[0]
	if string(m.Body) != `{"a": 1}` || string(m.Headers) != `{"trace": "x"}` || m.ReceiveCount != 1 || m.Receipt.IsZero() ||
		!m.VisibleAt.After(m.CreatedAt.Add(29*time.Second)) {
		t.Fatalf("message %+v", m)
	}
	if msgs[1].Headers != nil {
		t.Fatalf("headers of a message sent without: %s", msgs[1].Headers)
	}
	if s := e.stats("q"); s.Ready != 2 || s.Inflight != 2 || s.Total != 4 {
		t.Fatalf("stats %+v", s)
	}
	if err := e.c.Delete(e.ctx, acct, "q", m.Sequence, m.Receipt); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx, acct, "q", m.Sequence, m.Receipt); !errors.Is(err, pgqueue.ErrMessageNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	acked, err := e.c.Ack(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: msgs[1].Sequence, Receipt: msgs[1].Receipt}, {Sequence: all[2]}, {Sequence: 999999}})
	if err != nil || !slices.Equal(acked, []int64{msgs[1].Sequence, all[2]}) && !slices.Equal(acked, []int64{all[2], msgs[1].Sequence}) {
		t.Fatalf("ack: %v %v", acked, err)
	}
	rest := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(rest), all[3:]) {
		t.Fatalf("rest %v", seqs(rest))
	}
}

func TestVisibilityExpiryRedelivers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{VisibilityTimeout: time.Second})
	seq := e.send("q", `1`)
	first := e.receive("q", pgqueue.ReceiveOptions{})
	if len(first) != 1 {
		t.Fatal("nothing received")
	}
	if again := e.receive("q", pgqueue.ReceiveOptions{}); len(again) != 0 {
		t.Fatalf("leased message received again: %v", seqs(again))
	}
	waitPast(first[0].VisibleAt)
	second := e.receive("q", pgqueue.ReceiveOptions{VisibilityTimeout: time.Minute})
	if len(second) != 1 || second[0].Sequence != seq || second[0].ReceiveCount != 2 || second[0].Receipt == first[0].Receipt {
		t.Fatalf("redelivery %+v after %+v", second, first)
	}
	// The first lease is stale: its receipt is refused and the new lease
	// stays intact.
	if err := e.c.Delete(e.ctx, acct, "q", seq, first[0].Receipt); !errors.Is(err, pgqueue.ErrStaleReceipt) {
		t.Fatalf("stale delete: %v", err)
	}
	if err := e.c.ChangeVisibility(e.ctx, acct, "q", seq, first[0].Receipt, 0); !errors.Is(err, pgqueue.ErrStaleReceipt) {
		t.Fatalf("stale change visibility: %v", err)
	}
	if acked, _ := e.c.Ack(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: seq, Receipt: first[0].Receipt}}); len(acked) != 0 {
		t.Fatalf("stale ack deleted %v", acked)
	}
	if got := e.receive("q", pgqueue.ReceiveOptions{}); len(got) != 0 {
		t.Fatalf("stale settlement released the lease: %v", seqs(got))
	}
	if s := e.stats("q"); s.Inflight != 1 || s.Ready != 0 {
		t.Fatalf("stats %+v", s)
	}
	if err := e.c.Delete(e.ctx, acct, "q", seq, second[0].Receipt); err != nil {
		t.Fatalf("fresh delete: %v", err)
	}
}

func TestChangeVisibilityAndNack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	a, b := e.send("q", `"a"`), e.send("q", `"b"`)
	msgs := e.receive("q", pgqueue.ReceiveOptions{Max: 2})
	if err := e.c.ChangeVisibility(e.ctx, acct, "q", a, msgs[0].Receipt, 0); err != nil {
		t.Fatal(err)
	}
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 2})
	if !slices.Equal(seqs(got), []int64{a}) || got[0].ReceiveCount != 2 {
		t.Fatalf("after change visibility: %+v", got)
	}
	n, err := e.c.Nack(e.ctx, acct, "q", []pgqueue.Nack{
		{Sequence: a, Receipt: got[0].Receipt, Delay: time.Hour, Error: "smtp 451"},
		{Sequence: b, Receipt: msgs[1].Receipt, Error: "boom"},
		{Sequence: a, Receipt: msgs[0].Receipt}, // stale: skipped
	})
	if err != nil || len(n) != 2 {
		t.Fatalf("nack: %v %v", n, err)
	}
	got = e.receive("q", pgqueue.ReceiveOptions{Max: 2})
	if !slices.Equal(seqs(got), []int64{b}) {
		t.Fatalf("after nack: %v", seqs(got))
	}
	if err := e.c.ChangeVisibility(e.ctx, acct, "q", 424242, pgqueue.Receipt{}, 0); !errors.Is(err, pgqueue.ErrMessageNotFound) {
		t.Fatalf("missing message: %v", err)
	}
	if _, err := e.c.Nack(e.ctx, acct, "q", []pgqueue.Nack{{Sequence: a, Delay: 13 * time.Hour}}); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Fatalf("nack delay too long: %v", err)
	}
}

// TestReleaseGivesBackTheClaim: a released claim does not count as a
// delivery. A message released from its final lease is received again
// (not dead-lettered by the sweeper) with the receive count it had; a
// stale receipt releases nothing; a released receipt acks nothing.
func TestReleaseGivesBackTheClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 2})
	a := e.send("q", `"a"`)
	first := e.receive("q", pgqueue.ReceiveOptions{})
	if _, err := e.c.Nack(e.ctx, acct, "q", []pgqueue.Nack{{Sequence: a, Receipt: first[0].Receipt}}); err != nil {
		t.Fatal(err)
	}
	final := e.receive("q", pgqueue.ReceiveOptions{})
	if len(final) != 1 || final[0].ReceiveCount != 2 {
		t.Fatalf("second receive: %+v, want receive count 2 (the final lease)", final)
	}
	if got, err := e.c.Release(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: a, Receipt: first[0].Receipt}}); err != nil || len(got) != 0 {
		t.Fatalf("release with a stale receipt: %v %v, want nothing released", got, err)
	}
	got, err := e.c.Release(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: a, Receipt: final[0].Receipt}})
	if err != nil || !slices.Equal(got, []int64{a}) {
		t.Fatalf("release: %v %v, want [%d]", got, err, a)
	}
	if n := e.sweep(); n != 0 {
		t.Fatalf("sweep moved %d after the release, want 0: a released final lease is not a delivery", n)
	}
	if acked, err := e.c.Ack(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: a, Receipt: final[0].Receipt}}); err != nil || len(acked) != 0 {
		t.Fatalf("ack with the released receipt: %v %v, want nothing acked", acked, err)
	}
	again := e.receive("q", pgqueue.ReceiveOptions{})
	if len(again) != 1 || again[0].Sequence != a || again[0].ReceiveCount != 2 {
		t.Fatalf("after the release: %+v, want message %d again with receive count 2", again, a)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	e.queue("slow", pgqueue.Settings{Delay: 1 * time.Second})
	seq, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: body(1), Delay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	slow := e.send("slow", `1`)
	start := time.Now()
	if got := e.receive("q", pgqueue.ReceiveOptions{}); len(got) != 0 {
		t.Fatal("delayed message delivered early")
	}
	if got := e.receive("slow", pgqueue.ReceiveOptions{}); len(got) != 0 {
		t.Fatal("message in delayed queue delivered early")
	}
	if s := e.stats("q"); s.Delayed != 1 || s.Ready != 0 {
		t.Fatalf("stats %+v", s)
	}
	time.Sleep(time.Until(start.Add(1200 * time.Millisecond)))
	if got := e.receive("q", pgqueue.ReceiveOptions{}); len(got) != 1 || got[0].Sequence != seq {
		t.Fatalf("delayed message not delivered after its delay: %v", got)
	}
	if got := e.receive("slow", pgqueue.ReceiveOptions{}); len(got) != 1 || got[0].Sequence != slow {
		t.Fatalf("queue delay: %v", got)
	}
}

func TestMaxReceiveCountMovesToDLQAtLeaseExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 2, VisibilityTimeout: time.Second})
	seq := e.send("q", `"job"`)
	m1 := e.receive("q", pgqueue.ReceiveOptions{})
	if _, err := e.c.Nack(e.ctx, acct, "q", []pgqueue.Nack{{Sequence: seq, Receipt: m1[0].Receipt, Error: "first failure"}}); err != nil {
		t.Fatal(err)
	}
	m2 := e.receive("q", pgqueue.ReceiveOptions{})
	if len(m2) != 1 || m2[0].ReceiveCount != 2 {
		t.Fatalf("second delivery %+v", m2)
	}
	// The last lease is still live: the sweeper leaves the message alone.
	if n := e.sweep(); n != 0 {
		t.Fatalf("sweep moved %d messages during a live lease", n)
	}
	waitPast(m2[0].VisibleAt)
	// Exhausted: never delivered a third time, even before the sweep.
	if got := e.receive("q", pgqueue.ReceiveOptions{}); len(got) != 0 {
		t.Fatalf("delivered a third time: %+v", got)
	}
	if n := e.sweep(); n != 1 {
		t.Fatalf("sweep moved %d, want 1", n)
	}
	dl, err := e.c.ReceiveDLQ(e.ctx, acct, "q", 10)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dlq %v %v", dl, err)
	}
	if d := dl[0]; d.Sequence != seq || d.Reason != "max_receive_count" || d.LastError != "first failure" || d.ReceiveCount != 2 || string(d.Body) != `"job"` {
		t.Fatalf("dead letter %+v", d)
	}
	if s := e.stats("q"); s.DLQ != 1 || s.Total != 0 {
		t.Fatalf("stats %+v", s)
	}

	// Redrive puts it back with a fresh receive count.
	if n, err := e.c.Redrive(e.ctx, acct, "q", 0); err != nil || n != 1 {
		t.Fatalf("redrive %d %v", n, err)
	}
	got := e.receive("q", pgqueue.ReceiveOptions{})
	if len(got) != 1 || got[0].Sequence != seq || got[0].ReceiveCount != 1 {
		t.Fatalf("after redrive %+v", got)
	}
	if s := e.stats("q"); s.DLQ != 0 {
		t.Fatalf("stats after redrive %+v", s)
	}
}

func TestLoweringMaxReceiveCountAppliesToLeasedMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 5, VisibilityTimeout: time.Second})
	e.send("q", `1`)
	m := e.receive("q", pgqueue.ReceiveOptions{})
	q, _ := e.c.GetQueue(e.ctx, acct, "q")
	s := q.Settings
	s.MaxReceiveCount = 1
	if _, err := e.c.UpdateQueue(e.ctx, acct, "q", s); err != nil {
		t.Fatal(err)
	}
	waitPast(m[0].VisibleAt)
	if n := e.sweep(); n != 1 {
		t.Fatalf("sweep moved %d, want 1", n)
	}
}

func TestFailPermanently(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	a, b := e.send("q", `"a"`), e.send("q", `"b"`)
	msgs := e.receive("q", pgqueue.ReceiveOptions{Max: 2})
	moved, err := e.c.Fail(e.ctx, acct, "q", []pgqueue.Failure{
		{Sequence: a, Receipt: msgs[0].Receipt, Error: "bad input"},
		{Sequence: b, Receipt: msgs[1].Receipt, Reason: "rejected"},
	})
	if err != nil || len(moved) != 2 {
		t.Fatalf("fail: %v %v", moved, err)
	}
	dl, _ := e.c.ReceiveDLQ(e.ctx, acct, "q", 10)
	if len(dl) != 2 {
		t.Fatalf("dlq %+v", dl)
	}
	byseq := map[int64]pgqueue.DeadLetter{dl[0].Sequence: dl[0], dl[1].Sequence: dl[1]}
	if d := byseq[a]; d.Reason != "permanent_failure" || d.LastError != "bad input" {
		t.Fatalf("dead letter a %+v", d)
	}
	if d := byseq[b]; d.Reason != "rejected" || d.LastError != "" {
		t.Fatalf("dead letter b %+v", d)
	}
	if err := e.c.DeleteDLQ(e.ctx, acct, "q", a); err != nil {
		t.Fatal(err)
	}
	if err := e.c.DeleteDLQ(e.ctx, acct, "q", a); !errors.Is(err, pgqueue.ErrMessageNotFound) {
		t.Fatalf("second delete dlq: %v", err)
	}
	if n, err := e.c.PurgeDLQ(e.ctx, acct, "q"); err != nil || n != 1 {
		t.Fatalf("purge dlq %d %v", n, err)
	}
}

func TestPeekAndPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	for i := range 5 {
		e.send("q", string(body(i)))
	}
	peeked, err := e.c.Peek(e.ctx, acct, "q", 3)
	if err != nil || len(peeked) != 3 || !peeked[0].Receipt.IsZero() || peeked[0].ReceiveCount != 0 {
		t.Fatalf("peek %+v %v", peeked, err)
	}
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 3})
	if !slices.Equal(seqs(got), seqs(peeked)) {
		t.Fatalf("peek %v then receive %v", seqs(peeked), seqs(got))
	}
	if p, _ := e.c.Peek(e.ctx, acct, "q", 10); len(p) != 2 {
		t.Fatalf("peek shows leased messages: %v", seqs(p))
	}
	n, err := e.c.Purge(e.ctx, acct, "q")
	if err != nil || n != 5 {
		t.Fatalf("purge %d %v", n, err)
	}
	if s := e.stats("q"); s.Total != 0 {
		t.Fatalf("after purge %+v", s)
	}
}

func TestExpiration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	if _, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: body(1), ExpiresIn: time.Second}); err != nil {
		t.Fatal(err)
	}
	keep := e.send("q", `"keep"`)
	if p, _ := e.c.Peek(e.ctx, acct, "q", 10); len(p) != 2 {
		t.Fatalf("peek before expiry %v", seqs(p))
	}
	time.Sleep(1200 * time.Millisecond)
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if !slices.Equal(seqs(got), []int64{keep}) {
		t.Fatalf("expired message delivered: %v", seqs(got))
	}
	if n := e.sweep(); n != 1 {
		t.Fatalf("sweep removed %d, want 1", n)
	}
	if s := e.stats("q"); s.Total != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{Retention: time.Hour})
	e.queue("long", pgqueue.Settings{})
	var old []int64
	for i := range 3 {
		old = append(old, e.send("q", string(body(i))))
	}
	fresh := e.send("q", `"fresh"`)
	e.send("long", `"x"`)
	// Age the first messages (and the long-retention queue's) past an hour,
	// as the database sees it.
	e.exec(`UPDATE messages SET created_at = now() - interval '2 hours' WHERE sequence <= $1 OR queue_id = (SELECT id FROM queues WHERE name = 'long')`, old[2])
	e.exec(`INSERT INTO dead_letters (queue_id, sequence, body, receive_count, created_at, failed_at, reason)
	        SELECT id, 0, '1', 1, now() - interval '3 hours', now() - interval '2 hours', 'test' FROM queues WHERE name = 'q'`)
	if n := e.sweep(); n != 3 {
		t.Fatalf("sweep removed %d, want 3", n)
	}
	if p, _ := e.c.Peek(e.ctx, acct, "q", 10); !slices.Equal(seqs(p), []int64{fresh}) {
		t.Fatalf("left %v, want [%d]", seqs(p), fresh)
	}
	if s := e.stats("long"); s.Total != 1 {
		t.Fatalf("4-day retention queue lost messages: %+v", s)
	}
	if s := e.stats("q"); s.DLQ != 0 {
		t.Fatalf("dead letter past retention kept: %+v", s)
	}
}

func TestDedupKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	send := func(key string, b string) int64 {
		t.Helper()
		seq, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: json.RawMessage(b), DedupKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	first := send("order-1", `1`)
	if again := send("order-1", `2`); again != first {
		t.Fatalf("repeat send returned %d, want %d", again, first)
	}
	other := send("order-2", `3`)
	if other == first {
		t.Fatal("different keys share a sequence")
	}
	batch, err := e.c.SendBatch(e.ctx, acct, "q", []pgqueue.NewMessage{{Body: body(4), DedupKey: "order-1"}, {Body: body(5)}, {Body: body(6), DedupKey: "order-3"}, {Body: body(7), DedupKey: "order-3"}})
	if err != nil || len(batch) != 4 || batch[0] != first || batch[2] != batch[3] {
		t.Fatalf("batch with keys %v %v", batch, err)
	}
	if s := e.stats("q"); s.Total != 4 {
		t.Fatalf("stored %d messages, want 4", s.Total)
	}
	// Concurrent repeats still store one message.
	var wg sync.WaitGroup
	got := make([]int64, 8)
	for i := range got {
		wg.Go(func() { got[i] = send("race", `0`) })
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatalf("concurrent repeats got %v", got)
		}
	}
	// Once the window has passed, the key is new again.
	e.exec(`UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE dedup_key = 'order-1'`)
	if again := send("order-1", `8`); again == first {
		t.Fatal("key reused after its window")
	}
	e.exec(`UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE dedup_key = 'order-2'`)
	e.sweep()
	if n := e.one(`SELECT count(*) FROM dedup_keys WHERE dedup_key = 'order-2'`); n != int64(0) {
		t.Fatal("sweep kept an expired dedup key")
	}
}

func TestSendTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// On a failure, an open transaction must not outlive the test: its
	// cleanup drops the schema, which would wait for it forever.
	defer func() { tx.Rollback(e.ctx) }()
	if _, err := e.c.SendTx(e.ctx, tx, acct, "q", pgqueue.NewMessage{Body: body(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.SendBatchTx(e.ctx, tx, acct, "q", []pgqueue.NewMessage{{Body: body(2)}}); err != nil {
		t.Fatal(err)
	}
	if got := e.receive("q", pgqueue.ReceiveOptions{}); len(got) != 0 {
		t.Fatal("uncommitted message visible")
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if s := e.stats("q"); s.Total != 0 {
		t.Fatalf("rolled back send stored %d", s.Total)
	}
	tx, _ = e.pool.Begin(e.ctx)
	seq, err := e.c.SendTx(e.ctx, tx, acct, "q", pgqueue.NewMessage{Body: body(3)})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.receive("q", pgqueue.ReceiveOptions{}); len(got) != 1 || got[0].Sequence != seq {
		t.Fatalf("committed send: %v", got)
	}
}

// Sixteen receivers drain 10,000 messages; no message is ever leased to two
// receivers at once (each is delivered exactly once, since every lease
// outlives the test's use of it and is settled with its receipt).
func TestConcurrentReceiversNeverShareALease(t *testing.T) {
	t.Parallel()
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, NoCoalescing: !coalesce})
			if err != nil {
				t.Fatal(err)
			}
			e.c = c
			drainConcurrently(t, e)
		})
	}
}

func drainConcurrently(t *testing.T, e *env) {
	e.queue("q", pgqueue.Settings{VisibilityTimeout: 5 * time.Minute})
	const total = 10000
	batch := make([]pgqueue.NewMessage, 1000)
	for i := range batch {
		batch[i] = pgqueue.NewMessage{Body: body(i)}
	}
	for range total / len(batch) {
		if _, err := e.c.SendBatch(e.ctx, acct, "q", batch); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	owner := map[int64]int{}
	var dup []int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for {
				msgs, err := e.c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 1 + w%10})
				if err != nil {
					errs <- err
					return
				}
				if len(msgs) == 0 {
					return
				}
				acks := make([]pgqueue.Ack, len(msgs))
				mu.Lock()
				for i, m := range msgs {
					if _, seen := owner[m.Sequence]; seen {
						dup = append(dup, m.Sequence)
					}
					owner[m.Sequence] = w
					acks[i] = pgqueue.Ack{Sequence: m.Sequence, Receipt: m.Receipt}
				}
				mu.Unlock()
				acked, err := e.c.Ack(e.ctx, acct, "q", acks)
				if err != nil {
					errs <- err
					return
				}
				if len(acked) != len(acks) {
					errs <- errors.New("an ack with a live receipt was refused")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(dup) > 0 {
		t.Fatalf("%d messages leased twice, e.g. %v", len(dup), dup[:min(5, len(dup))])
	}
	if len(owner) != total {
		t.Fatalf("received %d distinct messages, want %d", len(owner), total)
	}
	if s := e.stats("q"); s.Total != 0 {
		t.Fatalf("left %+v", s)
	}
}

// Acks commit asynchronously in their own transaction only; the setting
// never leaks onto the pooled connection. SynchronousAcks turns it off.
func TestAckCommitModes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	one := e.poolOf(1)
	for _, sync := range []bool{false, true} {
		c, err := pgqueue.New(one, pgqueue.Options{Schema: e.schema, SynchronousAcks: sync})
		if err != nil {
			t.Fatal(err)
		}
		a, b := e.send("q", `1`), e.send("q", `2`)
		msgs, err := c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 2})
		if err != nil || len(msgs) != 2 {
			t.Fatalf("receive %v %v", msgs, err)
		}
		if err := c.Delete(e.ctx, acct, "q", a, msgs[0].Receipt); err != nil {
			t.Fatalf("sync=%v delete: %v", sync, err)
		}
		if err := c.Delete(e.ctx, acct, "q", a, msgs[0].Receipt); !errors.Is(err, pgqueue.ErrMessageNotFound) {
			t.Fatalf("sync=%v second delete: %v", sync, err)
		}
		if err := c.Delete(e.ctx, acct, "q", b, pgqueue.Receipt{1}); !errors.Is(err, pgqueue.ErrStaleReceipt) {
			t.Fatalf("sync=%v stale delete: %v", sync, err)
		}
		if acked, err := c.Ack(e.ctx, acct, "q", []pgqueue.Ack{{Sequence: b, Receipt: msgs[1].Receipt}}); err != nil || len(acked) != 1 {
			t.Fatalf("sync=%v ack: %v %v", sync, acked, err)
		}
		if _, err := c.Ack(e.ctx, acct, "missing", []pgqueue.Ack{{Sequence: b}}); !errors.Is(err, pgqueue.ErrQueueNotFound) {
			t.Fatalf("sync=%v ack on missing queue: %v", sync, err)
		}
		var setting string
		if err := one.QueryRow(e.ctx, "SHOW synchronous_commit").Scan(&setting); err != nil || setting != "on" {
			t.Fatalf("sync=%v: synchronous_commit on the pooled connection is %q (%v)", sync, setting, err)
		}
	}
}

func FuzzParseReceipt(f *testing.F) {
	f.Add("3da9b9b9-7e3e-4b4c-9deb-1b9c1a6897ce")
	f.Add("")
	f.Add("3DA9B9B97E3E4B4C9DEB1B9C1A6897CE")
	f.Add("{3da9b9b9-7e3e-4b4c-9deb-1b9c1a6897ce}")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := pgqueue.ParseReceipt(s)
		if err != nil {
			if !errors.Is(err, pgqueue.ErrInvalidArgument) {
				t.Fatalf("ParseReceipt(%q): %v is not ErrInvalidArgument", s, err)
			}
			return
		}
		back, err := pgqueue.ParseReceipt(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseReceipt(%q) = %v, which does not round-trip: %v %v", s, r, back, err)
		}
	})
}

// Coalesced calls keep their own results and errors: one caller's
// oversized body fails only that caller.
func TestCoalescedSendsFailAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The default client coalesces.
	e.queue("q", pgqueue.Settings{MaxMessageBytes: 50})
	var wg sync.WaitGroup
	const callers = 24
	seqsBy := make([][]int64, callers)
	errsBy := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			ms := []pgqueue.NewMessage{{Body: body(i)}, {Body: body(i + 1000)}}
			if i == 7 {
				ms[1].Body = json.RawMessage(`"` + strings.Repeat("x", 100) + `"`)
			}
			seqsBy[i], errsBy[i] = e.c.SendBatch(e.ctx, acct, "q", ms)
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i := range callers {
		if i == 7 {
			if !errors.Is(errsBy[i], pgqueue.ErrMessageTooLarge) {
				t.Fatalf("caller 7: %v, want ErrMessageTooLarge", errsBy[i])
			}
			continue
		}
		if errsBy[i] != nil || len(seqsBy[i]) != 2 || seqsBy[i][0] >= seqsBy[i][1] {
			t.Fatalf("caller %d: %v %v", i, seqsBy[i], errsBy[i])
		}
		for _, s := range seqsBy[i] {
			if seen[s] {
				t.Fatalf("sequence %d returned twice", s)
			}
			seen[s] = true
		}
	}
	if s := e.stats("q"); s.Total != 2*(callers-1) {
		t.Fatalf("stored %d messages, want %d", s.Total, 2*(callers-1))
	}
	// Each message's body is the one its caller sent.
	msgs := e.receive("q", pgqueue.ReceiveOptions{Max: 100})
	for _, m := range msgs {
		var v struct{ N int }
		if err := json.Unmarshal(m.Body, &v); err != nil {
			t.Fatal(err)
		}
		i := v.N % 1000
		if !slices.Contains(seqsBy[i], m.Sequence) {
			t.Fatalf("message %d with body %s was not returned to caller %d (%v)", m.Sequence, m.Body, i, seqsBy[i])
		}
	}
}

// Keep decides, before a receive with delete commits, whether it keeps
// what it took: refused, nothing is deleted and the receive returns the
// refusal; accepted, the messages are gone as with any such receive.
func TestKeepDecidesAReceiveWithDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	a, b := e.send("q", `"a"`), e.send("q", `"b"`)
	refuse := errors.New("no room")
	var offered []int64
	keep := func(ok bool) func([]pgqueue.Message) error {
		return func(ms []pgqueue.Message) error {
			offered = offered[:0]
			for _, m := range ms {
				offered = append(offered, m.Sequence)
			}
			if !ok {
				return refuse
			}
			return nil
		}
	}
	msgs, err := e.c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 10, Delete: true, Keep: keep(false)})
	if !errors.Is(err, refuse) || len(msgs) != 0 || !slices.Equal(offered, []int64{a, b}) {
		t.Fatalf("refused: %v, %v, offered %v; want the refusal after messages %d and %d were offered", msgs, err, offered, a, b)
	}
	if left, err := e.c.Peek(e.ctx, acct, "q", 10); err != nil || len(left) != 2 || left[0].ReceiveCount != 0 || left[1].ReceiveCount != 0 {
		t.Fatalf("after a refused receive with delete: %+v, %v; want both messages, never received", left, err)
	}
	msgs, err = e.c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 10, Delete: true, Keep: keep(true)})
	if err != nil || len(msgs) != 2 || msgs[0].Sequence != a || msgs[1].Sequence != b {
		t.Fatalf("kept: %+v, %v; want messages %d and %d", msgs, err, a, b)
	}
	if left, err := e.c.Peek(e.ctx, acct, "q", 10); err != nil || len(left) != 0 {
		t.Fatalf("after a kept receive with delete: %+v, %v; want the queue empty", left, err)
	}
}
