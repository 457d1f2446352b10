package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/reliability"
	"github.com/sluicehq/sluice/triggers"
)

// TestPoisonToDLQ: always-failing messages among good ones, max receive
// count 3. Each poison message must reach the DLQ with receive_count
// exactly 3 and its last error, having run exactly 3 times and never after
// the move; every good message must be processed.
func TestPoisonToDLQ(t *testing.T) {
	t.Parallel()
	good, poison := reliability.Size(300, 1000), reliability.Size(30, 100)
	env := reliability.NewEnv(t, `
queues:
  mixed: {visibility_timeout_seconds: 10, max_receive_count: 3}
functions:
  record: {build: ./record, reactor: true}
triggers:
  - {queue: mixed, function: record, batch_size: 10, concurrency: 2, backoff: {initial: 100ms, max: 200ms}}
`, reliability.EnvOptions{})
	ctx := context.Background()
	env.StartNode("a")
	// Every (good/poison)th message is poison.
	every := (good + poison) / poison
	isPoison := func(i int) bool { return i%every == every-1 }
	sent, err := reliability.SendN(ctx, env.Queue, "mixed", good+poison, 100, func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"i":%d,"fail":%t}`, i, isPoison(i)))
	})
	if err != nil {
		t.Fatal(err)
	}
	poisoned := map[int64]bool{}
	for i, seq := range sent {
		if isPoison(i) {
			poisoned[seq] = true
		}
	}
	took, err := env.WaitDrained(ctx, "mixed", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := env.Queue.ReceiveDLQ(ctx, pgqueue.DefaultAccount, "mixed", 1000)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	v := reliability.Check(sent, logs, "mixed", reliability.CheckOptions{Poison: poisoned})
	runs := logs.For("queue:mixed")
	inDLQ := map[int64]bool{}
	for _, d := range dead {
		inDLQ[d.Sequence] = true
		switch {
		case !poisoned[d.Sequence]:
			t.Errorf("good message %d in the DLQ (%s: %s)", d.Sequence, d.Reason, d.LastError)
			continue
		case d.ReceiveCount != 3:
			t.Errorf("poison message %d in the DLQ with receive_count %d, want 3", d.Sequence, d.ReceiveCount)
		case d.Reason != triggers.ReasonMaxReceiveCount:
			t.Errorf("poison message %d in the DLQ for %q, want %q", d.Sequence, d.Reason, triggers.ReasonMaxReceiveCount)
		case !strings.Contains(d.LastError, fmt.Sprintf("message %d is poison", d.Sequence)):
			t.Errorf("poison message %d in the DLQ with last error %q, want its own", d.Sequence, d.LastError)
		}
		xs := runs[d.Sequence]
		if len(xs) != 3 {
			t.Errorf("poison message %d ran %d times, want 3", d.Sequence, len(xs))
		}
		for i, x := range xs {
			if x.Attempt != i+1 {
				t.Errorf("poison message %d: run %d was attempt %d", d.Sequence, i+1, x.Attempt)
			}
			if x.StartMS > d.FailedAt.UnixMilli() {
				t.Errorf("poison message %d ran (attempt %d) at %d, after its DLQ move at %d", d.Sequence, x.Attempt, x.StartMS, d.FailedAt.UnixMilli())
			}
		}
	}
	for seq := range poisoned {
		if !inDLQ[seq] {
			t.Errorf("poison message %d is not in the DLQ", seq)
		}
	}
	t.Logf("poison to DLQ: %d good + %d poison, max receive count 3: %s; %d in the DLQ; drained in %.1fs",
		good, poison, v, len(dead), took.Seconds())
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
}

// TestStaleLease: with lease extension off, a function that sleeps past its
// lease has its message redelivered; its late ack carries the old receipt
// and is refused while the new delivery holds the lease, which then acks.
func TestStaleLease(t *testing.T) {
	t.Parallel()
	const lease = 6 * time.Second
	env := reliability.NewEnv(t, fmt.Sprintf(`
queues:
  stale: {visibility_timeout_seconds: %d, max_receive_count: 5}
functions:
  record: {build: ./record, reactor: true, timeout: 30s}
triggers:
  - {queue: stale, function: record, batch_size: 1, concurrency: 3}
`, int(lease.Seconds())), reliability.EnvOptions{})
	ctx := context.Background()
	ts, err := env.Server.Triggers().List(ctx, pgqueue.DefaultAccount)
	if err != nil || len(ts) != 1 {
		t.Fatalf("triggers: %v %v", ts, err)
	}
	ts[0].LeaseExtension = false
	if _, err := env.Server.Triggers().Put(ctx, ts[0]); err != nil {
		t.Fatal(err)
	}
	env.StartNode("a")
	// Attempt 1 outlives its lease by far; attempt 2 starts after the
	// lease expired, is still running when attempt 1 acks, and ends well
	// within its own lease.
	sent, err := reliability.SendN(ctx, env.Queue, "stale", 1, 1, func(int) json.RawMessage {
		return json.RawMessage(`{"sleep_ms": {"1": 8500, "2": 4000}}`)
	})
	if err != nil {
		t.Fatal(err)
	}
	var first reliability.Execution
	for deadline := time.Now().Add(30 * time.Second); first.StartMS == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("attempt 1 did not start within 30s")
		}
		logs, err := env.ReadLogs()
		if err != nil {
			t.Fatal(err)
		}
		if xs := logs.For("queue:stale")[sent[0]]; len(xs) > 0 {
			first = xs[0]
		}
	}
	// Wake the dispatcher just after the lease expired (a send notifies
	// it), so the redelivery does not wait for its idle poll.
	time.Sleep(time.Until(time.UnixMilli(first.StartMS).Add(lease + 500*time.Millisecond)))
	nudge, err := reliability.SendN(ctx, env.Queue, "stale", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.WaitDrained(ctx, "stale", time.Minute); err != nil {
		t.Fatal(err)
	}
	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	xs := logs.For("queue:stale")[sent[0]]
	if len(xs) != 2 {
		t.Fatalf("the sleeper ran %d times, want 2 (the first past its lease, then the redelivery): %+v", len(xs), xs)
	}
	a1, a2 := xs[0], xs[1]
	s1, s2 := logs.Settles[a1.Invocation], logs.Settles[a2.Invocation]
	t.Logf("stale lease (lease %s, extension off): attempt 1 ran %d..%d ms, attempt 2 %d..%d ms (relative to attempt 1's start); attempt 1 acked %d of %d (refused: %d), attempt 2 acked %d of %d",
		lease, 0, a1.EndMS-a1.StartMS, a2.StartMS-a1.StartMS, a2.EndMS-a1.StartMS, s1.Acked, s1.Batch, logs.Refused, s2.Acked, s2.Batch)
	if a2.StartMS < a1.StartMS+lease.Milliseconds() {
		t.Errorf("attempt 2 started %d ms after attempt 1, before its lease of %s expired", a2.StartMS-a1.StartMS, lease)
	}
	if !(a2.StartMS < a1.EndMS && a1.EndMS < a2.EndMS) {
		t.Errorf("attempt 1's ack (after %d) did not come while attempt 2 ran (%d..%d): timing too loose to test fencing", a1.EndMS, a2.StartMS, a2.EndMS)
	}
	if s1.Acked != 0 || logs.Refused < 1 {
		t.Errorf("attempt 1's ack with the old receipt: acked %d, refused %d; want refused", s1.Acked, logs.Refused)
	}
	if s2.Acked != 1 {
		t.Errorf("attempt 2's ack: acked %d of %d, want 1: the old ack broke the new lease", s2.Acked, s2.Batch)
	}
	v := reliability.Check(append(sent, nudge...), logs, "stale", reliability.CheckOptions{AllowOverlap: true})
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
}

// TestStaleReceiptFencing checks the fencing itself through the Go API: an
// ack with the receipt of an expired lease is refused and the newer lease
// stays (still in flight, same lease end), and its own receipt acks.
func TestStaleReceiptFencing(t *testing.T) {
	t.Parallel()
	env := reliability.NewEnv(t, `queues: {fence: {visibility_timeout_seconds: 1}}`, reliability.EnvOptions{})
	ctx := context.Background()
	q := env.Queue
	const acct = pgqueue.DefaultAccount
	if _, err := reliability.SendN(ctx, q, "fence", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	old, err := q.Receive(ctx, acct, "fence", pgqueue.ReceiveOptions{VisibilityTimeout: time.Second})
	if err != nil || len(old) != 1 {
		t.Fatalf("receive: %v %v", old, err)
	}
	var cur []pgqueue.Message
	for deadline := time.Now().Add(10 * time.Second); len(cur) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no redelivery within 10s of a 1s lease")
		}
		if cur, err = q.Receive(ctx, acct, "fence", pgqueue.ReceiveOptions{VisibilityTimeout: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	done, err := q.Ack(ctx, acct, "fence", []pgqueue.Ack{{Sequence: old[0].Sequence, Receipt: old[0].Receipt}})
	if err != nil || len(done) != 0 {
		t.Fatalf("ack with the old receipt: done %v, err %v; want refused", done, err)
	}
	if err := q.Delete(ctx, acct, "fence", old[0].Sequence, old[0].Receipt); err == nil {
		t.Fatal("delete with the old receipt succeeded")
	}
	st, err := q.Stats(ctx, acct, "fence")
	if err != nil || st.Inflight != 1 || st.Ready != 0 {
		t.Fatalf("after the stale acks: %+v %v; want the message still in flight", st, err)
	}
	var visibleAt time.Time
	var receipt pgqueue.Receipt
	if err := env.Pool.QueryRow(ctx, "SELECT visible_at, receipt FROM "+env.Schema+".messages WHERE sequence = $1",
		cur[0].Sequence).Scan(&visibleAt, &receipt); err != nil {
		t.Fatal(err)
	}
	if !visibleAt.Equal(cur[0].VisibleAt) || receipt != cur[0].Receipt {
		t.Fatalf("after the stale acks the lease changed: until %s with receipt %s, was until %s with %s", visibleAt, receipt, cur[0].VisibleAt, cur[0].Receipt)
	}
	if done, err := q.Ack(ctx, acct, "fence", []pgqueue.Ack{{Sequence: cur[0].Sequence, Receipt: cur[0].Receipt}}); err != nil || len(done) != 1 {
		t.Fatalf("ack with the current receipt: %v %v", done, err)
	}
}
