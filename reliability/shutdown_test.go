package reliability_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/reliability"
)

// TestGracefulShutdown: SIGTERM during a steady load. Running batches
// finish (within the grace period) or are cut short and their leases
// released; the process exits 0; no message waits for a visibility
// timeout (60 s here) to be run again; nothing is lost.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	const visibility = 60 * time.Second
	env := reliability.NewEnv(t, `
queues:
  steady: {visibility_timeout_seconds: 60, max_receive_count: 10}
functions:
  record: {build: ./record, reactor: true, timeout: 60s, env: {RECORD_SLEEP_MS: "300"}}
triggers:
  - {queue: steady, function: record, batch_size: 5, concurrency: 2}
`, reliability.EnvOptions{})
	ctx := context.Background()

	// Phase 1: two nodes under a steady load; SIGTERM one of them. Its
	// batches are short, so they finish within the grace period.
	a, b := env.StartNode("a"), env.StartNode("b")
	load := reliability.StartLoad(ctx, 1, 100*time.Millisecond, func(ctx context.Context) ([]int64, error) {
		return reliability.SendN(ctx, env.Queue, "steady", 5, 5, nil)
	})
	time.Sleep(reliability.Size(3*time.Second, 10*time.Second))
	codeA, tookA := a.Term(30 * time.Second)
	time.Sleep(2 * time.Second)
	sends := load.Stop()
	drain, err := env.WaitDrained(ctx, "steady", visibility/2)
	if err != nil {
		t.Errorf("after SIGTERM of one node the queue did not drain within half the visibility timeout: %v", err)
	}
	if codeA != 0 {
		t.Errorf("node a exited %d after SIGTERM, want 0", codeA)
	}

	// Phase 2: a batch far longer than the grace period on the only node:
	// SIGTERM cuts it short and releases its lease, so the next node runs
	// it at once instead of after the visibility timeout.
	c := env.StartNode("c", "--grace", "1s")
	if code, _ := b.Term(30 * time.Second); code != 0 {
		t.Errorf("node b exited %d after SIGTERM, want 0", code)
	}
	long, err := reliability.SendN(ctx, env.Queue, "steady", 1, 1, func(int) json.RawMessage {
		return json.RawMessage(`{"sleep_ms": {"1": 30000, "*": 0}}`)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, env, "steady", long[0], 1)
	codeC, tookC := c.Term(30 * time.Second)
	if codeC != 0 {
		t.Errorf("node c (grace 1s, a batch of 30s running) exited %d after SIGTERM, want 0", codeC)
	}
	released := time.Now()
	st, err := env.Queue.Stats(ctx, pgqueue.DefaultAccount, "steady")
	if err != nil || st.Ready != 1 {
		t.Errorf("after SIGTERM cut the long batch short: %+v %v; want its message ready again (lease released)", st, err)
	}
	env.StartNode("d")
	waitRun(t, env, "steady", long[0], 2)
	rerun := time.Since(released)
	if _, err := env.WaitDrained(ctx, "steady", visibility/2); err != nil {
		t.Error(err)
	}

	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	sent := append(reliability.Acked(sends), long...)
	v := reliability.Check(sent, logs, "steady", reliability.CheckOptions{})
	t.Logf("graceful shutdown (visibility %s): steady load %d sends (%d refused); node a exited %d in %s; queue drained %.1fs after; a 30s batch cut short by SIGTERM with grace 1s: exit %d in %s, re-run by the next node %.1fs after; %s",
		visibility, len(sends), reliability.Failed(sends), codeA, tookA.Round(time.Millisecond), drain.Seconds(), codeC, tookC.Round(time.Millisecond), rerun.Seconds(), v)
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
}

// waitRun waits until message id of queue has run its attempt.
func waitRun(t *testing.T, env *reliability.Env, queue string, id int64, attempt int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		logs, err := env.ReadLogs()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range logs.For("queue:" + queue)[id] {
			if x.Attempt == attempt {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d did not run attempt %d within 30s", id, attempt)
		}
	}
}
