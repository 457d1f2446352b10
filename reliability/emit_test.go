package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/reliability"
)

// TestEmitKilledBeforeCommit: a serve process is killed with SIGKILL while
// a batch whose function emits is running (invoked, not yet settled).
// Nothing of the batch may be emitted; the batch is redelivered to another
// process, and then exactly one set of emits exists, beside exactly one
// successful invocation record counting them.
func TestEmitKilledBeforeCommit(t *testing.T) {
	t.Parallel()
	const n = 20
	env := reliability.NewEnv(t, `
queues:
  work: {visibility_timeout_seconds: 2, max_receive_count: 10}
  out: {}
functions:
  record: {build: ./record, reactor: true, timeout: 30s, emits: [out]}
triggers:
  - {queue: work, function: record, batch_size: 50, batch_window: 500ms}
`, reliability.EnvOptions{})
	ctx := context.Background()
	q := func(sql string) int64 { t.Helper(); return env.Int(t, sql) }
	outCount := func() int64 {
		t.Helper()
		st, err := env.Queue.Stats(ctx, pgqueue.DefaultAccount, "out")
		if err != nil {
			t.Fatal(err)
		}
		return st.Ready + st.Delayed + st.Inflight
	}

	a := env.StartNode("a")
	// The first delivery sleeps 20 s: long enough to be killed mid-run.
	body := `{"emit":"out","sleep_ms":{"1":20000}}`
	ms := make([]pgqueue.NewMessage, n)
	for i := range ms {
		ms[i] = pgqueue.NewMessage{Body: json.RawMessage(body)}
	}
	if _, err := env.Queue.SendBatch(ctx, pgqueue.DefaultAccount, "work", ms); err != nil {
		t.Fatal(err)
	}
	// Wait until the whole batch is claimed and the function has been
	// running a moment: invoked, its settlement not committed.
	deadline := time.Now().Add(30 * time.Second)
	for q(`SELECT count(*) FROM {{schema}}.messages WHERE receive_count = 1 AND visible_at > now()`) < n {
		if time.Now().After(deadline) {
			t.Fatal("the batch was not claimed within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	a.Kill()
	if got := outCount(); got != 0 {
		t.Fatalf("after the kill, out holds %d messages: emits escaped an uncommitted batch", got)
	}
	if got := q(`SELECT count(*) FROM {{schema}}.invocations`); got != 0 {
		t.Fatalf("after the kill, %d invocation records exist", got)
	}

	env.StartNode("b")
	if _, err := env.WaitDrained(ctx, "work", 60*time.Second); err != nil {
		t.Fatalf("the batch was not redelivered and settled: %v", err)
	}
	time.Sleep(time.Second) // any stray emit would show by now
	if got := outCount(); got != n {
		t.Fatalf("out holds %d messages, want exactly %d (one per message)", got, n)
	}
	if got := q(`SELECT count(DISTINCT body->>'from') FROM {{schema}}.messages m JOIN {{schema}}.queues q ON q.id = m.queue_id WHERE q.name = 'out'`); got != n {
		t.Errorf("out holds emits of %d distinct messages, want %d", got, n)
	}
	if got := q(`SELECT coalesce(sum(emitted), 0) FROM {{schema}}.invocations`); got != n {
		t.Errorf("the invocation log counts %d emitted, want %d", got, n)
	}
	if got := q(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`); got != n {
		t.Errorf("the invocation log counts %d acked, want %d", got, n)
	}
	if got := q(`SELECT count(*) FROM {{schema}}.invocations WHERE outcome <> 'success'`); got != 0 {
		t.Errorf("%d invocations did not succeed", got)
	}
	if t.Failed() {
		t.Log(fmt.Sprintf("node logs in %s", env.Dir))
	}
}
