package triggers_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// Every message of a 10,000-message backlog is acked, and each was handed
// to the function exactly once (the invocation log lists every id once).
func TestDrainAcksEveryMessageOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("noop", "noop", functions.Config{})
	e.createQueue("work", pgqueue.Settings{})
	const n = 10000
	e.send("work", bodies(n, `{"n":%d}`)...)
	e.putTrigger(triggers.Trigger{Queue: "work", Function: "noop", BatchSize: 100, Concurrency: 4})
	e.startEngine()

	e.waitFor("the queue to drain", 60*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	e.waitFor("the invocation log", 5*time.Second, func() bool {
		return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) == n
	})
	if got := e.scalar(`SELECT count(DISTINCT m.id) FROM {{schema}}.invocations, unnest(message_ids) AS m(id)`); got != n {
		t.Errorf("distinct message ids invoked = %d, want %d", got, n)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations, unnest(message_ids)`); got != n {
		t.Errorf("message deliveries = %d, want %d (no message twice)", got, n)
	}
	if got := e.scalar(`SELECT coalesce(sum(retried + dead), 0) FROM {{schema}}.invocations`); got != 0 {
		t.Errorf("retried + dead = %d, want 0", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`); got != 0 {
		t.Errorf("dead letters = %d, want 0", got)
	}
}

// A function that fails some ids gets only those again.
func TestPartialFailureRetriesOnlyFailedIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("flaky", "flaky", functions.Config{Env: map[string]string{"FLAKY_RETRY_SECONDS": "0"}})
	e.createQueue("jobs", pgqueue.Settings{MaxReceiveCount: 5})
	seqs := e.send("jobs", `{"n":1}`, `{"fail_until_attempt":3}`, `{"n":2}`, `{"n":3}`)
	e.putTrigger(triggers.Trigger{Queue: "jobs", Function: "flaky", BatchSize: 10,
		BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond})
	e.startEngine()

	e.waitFor("the queue to drain", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	e.waitFor("the invocation log", 5*time.Second, func() bool {
		return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) == 4
	})
	for i, seq := range seqs {
		want := int64(1)
		if i == 1 {
			want = 3 // failed on attempts 1 and 2, succeeded on 3
		}
		got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE $1 = ANY (message_ids)`, seq)
		if got != want {
			t.Errorf("message %d (body %d) delivered %d times, want %d", seq, i, got, want)
		}
	}
	// The first batch (all four) fails one message: partial_failure. The
	// retry holds that message alone, and failing every message of a
	// batch is a failure (kind item_failures), not a partial one.
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE outcome = 'partial_failure' AND failure_kind = 'item_failures' AND retried = 1`); got != 1 {
		t.Errorf("partial failures retrying one message = %d, want 1", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE outcome = 'failure' AND failure_kind = 'item_failures' AND retried = 1`); got != 1 {
		t.Errorf("failures of a one-message batch = %d, want 1", got)
	}
}

// The poison function drives its messages to the DLQ after exactly
// max_receive_count deliveries, with the function's error recorded.
func TestPoisonReachesDLQAfterMaxReceiveCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("poison", "poison", functions.Config{})
	e.createQueue("bad", pgqueue.Settings{MaxReceiveCount: 3})
	seqs := e.send("bad", bodies(5, `{"n":%d}`)...)
	e.putTrigger(triggers.Trigger{Queue: "bad", Function: "poison", BatchSize: 10,
		BackoffInitial: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	e.startEngine()

	e.waitFor("every message in the DLQ", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`) == 5
	})
	dead, err := e.queue.ReceiveDLQ(context.Background(), acct, "bad", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if d.ReceiveCount != 3 || d.Reason != triggers.ReasonMaxReceiveCount || d.LastError != "poison: this function rejects every message" {
			t.Errorf("dead letter %d = count %d, reason %q, error %q; want 3, %q and the function's error",
				d.Sequence, d.ReceiveCount, d.Reason, d.LastError, triggers.ReasonMaxReceiveCount)
		}
	}
	time.Sleep(300 * time.Millisecond) // nothing may run after the DLQ move
	for _, seq := range seqs {
		if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE $1 = ANY (message_ids)`, seq); got != 3 {
			t.Errorf("message %d invoked %d times, want exactly 3", seq, got)
		}
	}
}

// With POISON_PERMANENT the function fails messages permanently: straight
// to the DLQ on the first delivery. reject_on_error does the same for
// retryable failures.
func TestPermanentFailureAndRejectOnError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("poison", "poison-permanent", functions.Config{Env: map[string]string{"POISON_PERMANENT": "1"}})
	e.deploy("poison", "poison", functions.Config{})
	e.createQueue("perm", pgqueue.Settings{MaxReceiveCount: 5})
	e.createQueue("strict", pgqueue.Settings{MaxReceiveCount: 5})
	e.send("perm", `{"a":1}`, `{"a":2}`)
	e.send("strict", `{"b":1}`)
	e.putTrigger(triggers.Trigger{Queue: "perm", Function: "poison-permanent"})
	e.putTrigger(triggers.Trigger{Queue: "strict", Function: "poison", AckPolicy: "reject_on_error"})
	e.startEngine()

	e.waitFor("three dead letters", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`) == 3
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters WHERE receive_count = 1 AND reason IN ($1, $2)`,
		triggers.ReasonPermanent, triggers.ReasonRejected); got != 3 {
		t.Errorf("dead letters after one delivery with the right reason = %d, want 3", got)
	}
}

// A batch claimed by a process that died before acking (simulated: a
// receive whose lease is never settled) is delivered again after the lease.
func TestCrashedBatchIsRedeliveredAfterLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("noop", "noop", functions.Config{})
	e.createQueue("q", pgqueue.Settings{VisibilityTimeout: time.Second})
	seqs := e.send("q", `{"x":1}`, `{"x":2}`)
	// The "crashed process" claims both and vanishes.
	got, err := e.queue.Receive(context.Background(), acct, "q", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Second})
	if err != nil || len(got) != 2 {
		t.Fatalf("receive = %d messages, %v", len(got), err)
	}
	claimed := time.Now()
	e.putTrigger(triggers.Trigger{Queue: "q", Function: "noop"})
	e.startEngine()
	e.waitFor("redelivery", 20*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	if since := time.Since(claimed); since < 900*time.Millisecond {
		t.Errorf("redelivered after %s, before the 1s lease ended", since)
	}
	for _, seq := range seqs {
		var attempt int64
		e.waitFor("the invocation log", 5*time.Second, func() bool {
			return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE $1 = ANY (message_ids)`, seq) == 1
		})
		attempt = e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE $1 = ANY (message_ids) AND outcome = 'success'`, seq)
		if attempt != 1 {
			t.Errorf("message %d: successful invocations = %d, want 1", seq, attempt)
		}
	}
}

// Two engines (processes) over one database never run a lease twice:
// every message is invoked exactly once.
func TestTwoEnginesShareWithoutDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("noop", "noop", functions.Config{})
	e.createQueue("shared", pgqueue.Settings{})
	const n = 3000
	e.send("shared", bodies(n, `{"n":%d}`)...)
	e.putTrigger(triggers.Trigger{Queue: "shared", Function: "noop", BatchSize: 10, Concurrency: 4})
	e.startEngine()
	e.startEngine()
	e.waitFor("the queue to drain", 60*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	e.waitFor("the invocation log", 5*time.Second, func() bool {
		return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) == n
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations, unnest(message_ids)`); got != n {
		t.Errorf("deliveries = %d, want %d: some lease ran twice", got, n)
	}
}

// A cron tick fires once across two engines.
func TestCronTickFiresOnceAcrossEngines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("cron-report", "report", functions.Config{})
	e.putTrigger(triggers.Trigger{Kind: triggers.KindCron, CronSpec: "* * * * * *", Function: "report"})
	e.startEngine()
	e.startEngine()
	e.waitFor("three ticks", 10*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE trigger_type = 'cron'`) >= 3
	})
	ticks := e.scalar(`SELECT count(*) FROM {{schema}}.cron_ticks`)
	runs := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE trigger_type = 'cron'`)
	distinct := e.scalar(`SELECT count(DISTINCT m.id) FROM {{schema}}.invocations, unnest(message_ids) AS m(id) WHERE trigger_type = 'cron'`)
	if runs != distinct || runs > ticks || runs < ticks-2 {
		t.Errorf("cron: %d ticks claimed, %d runs, %d distinct scheduled times: want each tick run once", ticks, runs, distinct)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE trigger_type = 'cron' AND outcome <> 'success'`); got != 0 {
		t.Errorf("failed cron runs = %d, want 0", got)
	}
}

// A cron trigger with enqueue sends its body at each tick.
func TestCronEnqueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("digest", pgqueue.Settings{})
	e.putTrigger(triggers.Trigger{Kind: triggers.KindCron, CronSpec: "* * * * * *", Queue: "digest",
		EnqueueBody: []byte(`{"kind":"digest"}`)})
	e.startEngine()
	e.waitFor("two enqueued ticks", 10*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE body = '{"kind":"digest"}'`) >= 2
	})
}

// OnBatch describes each settled batch: what ran, its outcome and counts,
// and its times in order (the messages' sends, the claim, the invocation,
// the function's first read of its batch).
func TestOnBatchDescribesTheBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("echo", "echo", functions.Config{})
	e.createQueue("work", pgqueue.Settings{})
	e.send("work", bodies(3, `{"n":%d}`)...)
	e.putTrigger(triggers.Trigger{Queue: "work", Function: "echo", BatchSize: 10})
	events := make(chan triggers.BatchEvent, 10)
	e.startEngine(func(c *triggers.Config) { c.OnBatch = func(ev triggers.BatchEvent) { events <- ev } })
	var ev triggers.BatchEvent
	select {
	case ev = <-events:
	case <-time.After(20 * time.Second):
		t.Fatal("no batch reported within 20s")
	}
	if ev.Account != acct || ev.Queue != "work" || ev.Function != "echo" || ev.Version != 1 || ev.Trigger == "" {
		t.Errorf("event names account %q, queue %q, function %q v%d, trigger %q; want %s, work, echo v1 and the trigger's name",
			ev.Account, ev.Queue, ev.Function, ev.Version, ev.Trigger, acct)
	}
	if ev.Outcome != "success" || ev.Acked != 3 || ev.Retried != 0 || ev.Dead != 0 || len(ev.CreatedAt) != 3 {
		t.Errorf("outcome %s, acked %d, retried %d, dead %d, %d send times; want success, 3 acked and 3 send times",
			ev.Outcome, ev.Acked, ev.Retried, ev.Dead, len(ev.CreatedAt))
	}
	// The send times are the database's clock; on another host it may be
	// a little off this process's.
	const skew = time.Second
	for i, created := range ev.CreatedAt {
		if created.IsZero() || created.After(ev.Claimed.Add(skew)) {
			t.Errorf("message %d sent at %s, claimed at %s", i, created, ev.Claimed)
		}
	}
	if ev.Claimed.IsZero() || ev.Claimed.After(ev.Started) || ev.Startup < 0 || ev.Startup > ev.Duration {
		t.Errorf("claimed %s, started %s, startup %s of %s: want claimed ≤ started and 0 ≤ startup ≤ duration",
			ev.Claimed, ev.Started, ev.Startup, ev.Duration)
	}
}
