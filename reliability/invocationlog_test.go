package reliability_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/reliability"
)

// TestInvocationLogExactAfterKill: one serve process drains 5,000 messages
// and is killed with SIGKILL a third of the way, then started again. The
// invocation log must account for every message exactly once (issue #18):
// the records' acked counts sum to 5,000 and their message ids name each
// message once; a run whose invocation has a record is its message's last
// run; a run without a record was cut short by the kill (it ran on the
// killed process, and its message ran again).
func TestInvocationLogExactAfterKill(t *testing.T) {
	t.Parallel()
	const messages = 5000
	const visibility = 3 * time.Second
	env := reliability.NewEnv(t, `
queues:
  work: {visibility_timeout_seconds: 3, max_receive_count: 100}
functions:
  record: {build: ./record, reactor: true, timeout: 10s, env: {RECORD_SLEEP_MS: "20"}}
triggers:
  - {queue: work, function: record, batch_size: 10, concurrency: 4}
`, reliability.EnvOptions{})
	ctx := context.Background()
	sent, err := reliability.SendN(ctx, env.Queue, "work", messages, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	acked := func() int64 { return env.Int(t, `SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) }

	node := env.StartNode("a")
	// The kill comes once a third is acked; the wait is bounded by the
	// progress made, not by a fixed time: it ends early only if the log
	// stops growing for a minute.
	last, lastGrew := int64(0), time.Now()
	for n := acked(); n < messages/3; n = acked() {
		if n > last {
			last, lastGrew = n, time.Now()
		} else if time.Since(lastGrew) > time.Minute {
			t.Fatalf("the invocation log stopped at %d acked of %d before the kill", n, messages)
		}
		time.Sleep(10 * time.Millisecond)
	}
	node.Kill()
	node = env.StartNode("a")
	if _, err := env.WaitDrained(ctx, "work", visibility+time.Minute); err != nil {
		t.Fatalf("queue did not drain within the visibility timeout + 1m of the kill: %v", err)
	}
	if code, _ := node.Term(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}

	// The log.
	type record struct {
		outcome string
		acked   int
		ids     []int64
	}
	records := map[string]record{}
	rows, err := env.Pool.Query(ctx, `SELECT id, outcome, acked, message_ids FROM `+env.Schema+`.invocations`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var r record
		if err := rows.Scan(&id, &r.outcome, &r.acked, &r.ids); err != nil {
			t.Fatal(err)
		}
		records[strconv.FormatInt(id, 10)] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	total, recordOf := 0, map[int64]string{}
	for inv, r := range records {
		total += r.acked
		if r.outcome != "success" || r.acked != len(r.ids) {
			t.Errorf("invocation %s: %s with %d acked of %d messages, want success with all acked", inv, r.outcome, r.acked, len(r.ids))
		}
		for _, id := range r.ids {
			if other, ok := recordOf[id]; ok {
				t.Errorf("message %d acked by invocations %s and %s", id, other, inv)
			}
			recordOf[id] = inv
		}
	}
	if total != messages {
		t.Errorf("acked counts in the invocation log sum to %d, want %d", total, messages)
	}
	for _, id := range sent {
		if _, ok := recordOf[id]; !ok {
			t.Errorf("message %d is in no invocation record", id)
		}
	}

	// The runs the function logged, against the log.
	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	killedLog := ""
	for log := range env.Kills() {
		killedLog = log
	}
	runs := logs.For("queue:work")
	cut, again := 0, 0
	for id, xs := range runs {
		for i, x := range xs {
			_, recorded := records[x.Invocation]
			switch {
			case recorded && recordOf[id] != x.Invocation:
				t.Errorf("message %d ran in invocation %s, whose record does not list it (it is in %s)", id, x.Invocation, recordOf[id])
			case recorded && i != len(xs)-1:
				t.Errorf("message %d ran again (attempt %d) after invocation %s recorded it", id, xs[i+1].Attempt, x.Invocation)
			case !recorded && x.Log != killedLog:
				t.Errorf("message %d: invocation %s on %s has no record, yet that process was not killed", id, x.Invocation, x.Log)
			case !recorded && i == len(xs)-1:
				t.Errorf("message %d: its last run, invocation %s, has no record", id, x.Invocation)
			case !recorded:
				cut++
			}
			if x.Attempt > 1 {
				again++
			}
		}
	}
	v := reliability.Check(sent, logs, "work", reliability.CheckOptions{Kills: env.Kills()})
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
	t.Logf("invocation log after a SIGKILL mid-drain: %d messages, %d records acking %d; %d runs cut short by the kill (no record), %d runs of a redelivered message; %s",
		messages, len(records), total, cut, again, v)
}
