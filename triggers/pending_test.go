package triggers_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// A batch starts while its claim's commit is on its way to disk. When that
// commit fails, the messages were never leased: a batch already running is
// stopped and its outcome dropped, nothing is settled or recorded, and the
// messages are delivered again, each once. A batch of ordered groups does
// not start before the commit.
func TestClaimNotCommittedIsDeliveredAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Each refused commit takes a second, time for a batch to start; the
	// function would then run for a minute if it were not stopped.
	refuse, allow := pgtest.RefuseCommits(t, e.pool, e.schema, time.Second)
	e.deploy("slow", "fn", functions.Config{Env: map[string]string{"SLOW_DURATION": "60s"}, Timeout: 2 * time.Minute})
	e.createQueue("plain", pgqueue.Settings{})
	e.createQueue("ordered", pgqueue.Settings{Fifo: true})
	const n = 20
	e.send("plain", bodies(n, `{"n":%d}`)...)
	ordered := make([]pgqueue.NewMessage, n)
	for i := range ordered {
		ordered[i] = pgqueue.NewMessage{Body: json.RawMessage(`{}`), Group: "g" + string(rune('a'+i%4))}
	}
	if _, err := e.queue.SendBatch(t.Context(), acct, "ordered", ordered); err != nil {
		t.Fatal(err)
	}
	refuse()
	for _, q := range []string{"plain", "ordered"} {
		e.putTrigger(triggers.Trigger{Queue: q, Function: "fn", BatchSize: 5, Concurrency: 2})
	}
	var logs syncBuffer
	eng := e.startEngine(func(c *triggers.Config) { c.Logger = zerolog.New(&logs).Level(zerolog.WarnLevel) })

	// lines returns the "claim not committed" lines of a queue's trigger,
	// by whether the batch had run; a run's line names its invocation.
	lines := func(queue string) (ran, notRun int) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var l struct {
				Queue      string `json:"queue"`
				Ran        *bool  `json:"ran"`
				Invocation string `json:"invocation"`
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.Queue != queue || l.Ran == nil {
				continue
			}
			if (l.Invocation != "") != *l.Ran {
				t.Errorf("claim not committed, ran %v, invocation %q: a run, and only a run, names its invocation", *l.Ran, l.Invocation)
			}
			if *l.Ran {
				ran++
			} else {
				notRun++
			}
		}
		return ran, notRun
	}
	// A run that was not stopped would take 60 s: the line saying it was
	// stopped comes well before.
	e.waitFor("a plain batch stopped when its claim's commit failed", 45*time.Second, func() bool {
		ran, _ := lines("plain")
		return ran > 0
	})
	e.waitFor("an ordered batch not run when its claim's commit failed", 45*time.Second, func() bool {
		_, notRun := lines("ordered")
		return notRun > 0
	})
	if ran, _ := lines("ordered"); ran > 0 {
		t.Errorf("%d ordered batches ran before their claim's commit:\n%s", ran, logs.String())
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations`); got != 0 {
		t.Fatalf("%d invocations recorded while no claim committed", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE receive_count > 0 OR last_error IS NOT NULL`); got != 0 {
		t.Fatalf("%d messages touched while no claim committed", got)
	}

	// Stopped (its batches stopped or not run, it has nothing to wait
	// for), and started again with the function quick now and the commits
	// allowed, the engine drains both queues, each message delivered once.
	if err := eng.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.deploy("noop", "fn", functions.Config{})
	allow()
	e.startEngine(func(c *triggers.Config) { c.Logger = zerolog.New(&logs).Level(zerolog.WarnLevel) })
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
			t.Logf("left: %d messages, %d received", e.scalar(`SELECT count(*) FROM {{schema}}.messages`),
				e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE receive_count > 0`))
		}
	}()
	e.waitFor("both queues to drain", 60*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	e.waitFor("the invocation log", 10*time.Second, func() bool {
		return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) == 2*n
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations, unnest(message_ids)`); got != 2*n {
		t.Errorf("message deliveries recorded = %d, want %d (each message once)", got, 2*n)
	}
}
