package triggers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// A batch that runs longer than the queue's visibility timeout is not
// redelivered while it runs: the dispatcher keeps extending its lease.
func TestLeaseExtensionCoversSlowFunction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("slow", "slow", functions.Config{Env: map[string]string{"SLOW_DURATION": "3500ms"}})
	e.createQueue("slowq", pgqueue.Settings{VisibilityTimeout: time.Second})
	seq := e.send("slowq", `{"n":1}`)[0]
	e.putTrigger(triggers.Trigger{Queue: "slowq", Function: "slow"})
	e.startEngine()
	e.waitFor("the message to be acked", 20*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	e.waitFor("the invocation log", 5*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) >= 1
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE $1 = ANY (message_ids)`, seq); got != 1 {
		t.Errorf("message delivered %d times while one slow batch ran, want 1", got)
	}
}

// With lease extension off, a batch outliving its lease is redelivered and
// the first run's late ack is refused (its receipt is stale), leaving the
// second delivery's lease intact; that delivery's ack takes effect. (No
// sweeper runs here, so the second, final lease is not dead-lettered when
// it lapses before the ack.)
func TestWithoutLeaseExtensionSlowBatchIsRedelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("slow", "slow", functions.Config{Env: map[string]string{"SLOW_DURATION": "1500ms"}})
	e.createQueue("stale", pgqueue.Settings{VisibilityTimeout: time.Second, MaxReceiveCount: 2})
	seq := e.send("stale", `{"n":1}`)[0]
	tr := triggers.Trigger{Account: acct, Kind: triggers.KindQueue, Queue: "stale", Function: "slow",
		Concurrency: 2, Enabled: true, LeaseExtension: false}
	tr.Name = tr.DerivedName()
	if _, err := e.triggers.Put(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	e.startEngine()
	e.waitFor("the message to be acked", 20*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	e.waitFor("two deliveries in the log", 10*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE $1 = ANY (message_ids)`, seq) == 2
	})
	if got := e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`); got != 1 {
		t.Errorf("acks that took effect = %d, want 1 (the stale one refused)", got)
	}
}

// Stop lets a running batch finish within the grace period.
func TestStopLetsRunningBatchFinish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("slow", "slow", functions.Config{Env: map[string]string{"SLOW_DURATION": "1500ms"}})
	e.createQueue("g", pgqueue.Settings{VisibilityTimeout: 30 * time.Second})
	e.send("g", `{"n":1}`)
	e.putTrigger(triggers.Trigger{Queue: "g", Function: "slow"})
	eng := e.startEngine()
	e.waitFor("the batch to begin running", 20*time.Second, e.batchBegun)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages`); got != 0 {
		t.Errorf("messages left after a graceful stop = %d, want 0 (the batch finished and acked)", got)
	}
	if err := eng.Stop(ctx); err != nil {
		t.Errorf("second stop: %v, want nil", err)
	}
}

// A batch claimed ahead of a free slot and not started when the engine
// stops is given back uncounted: the claim was no delivery, so the
// message keeps its receive count (on a queue allowing one delivery, a
// counted claim would be its final lease, dead-lettered unrun).
func TestStopGivesBackUnstartedClaimsUncounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("slow", "slow", functions.Config{Env: map[string]string{"SLOW_DURATION": "1500ms"}})
	e.createQueue("ahead", pgqueue.Settings{VisibilityTimeout: 30 * time.Second, MaxReceiveCount: 1})
	e.send("ahead", `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`)
	e.putTrigger(triggers.Trigger{Queue: "ahead", Function: "slow", BatchSize: 1, Concurrency: 1})
	eng := e.startEngine()
	e.waitFor("a batch to run and one more to be claimed ahead", 20*time.Second, func() bool {
		return e.batchBegun() && e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE receive_count = 1`) == 2
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := eng.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages`); got != 3 {
		t.Fatalf("messages left = %d, want 3 (the running batch acked)", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE receive_count = 0 AND visible_at <= now() AND NOT final_lease`); got != 3 {
		t.Errorf("messages ready with receive count 0 = %d, want 3: the claim given back must not count as a delivery", got)
	}
}

// When the grace period ends first, the running batch is cut short and its
// lease released: the message is ready again at once, not after the
// 30-second visibility timeout.
func TestStopAfterGraceReleasesLeases(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("slow", "slow", functions.Config{Env: map[string]string{"SLOW_DURATION": "20s"}, Timeout: 30 * time.Second})
	e.createQueue("r", pgqueue.Settings{VisibilityTimeout: 30 * time.Second})
	e.send("r", `{"n":1}`)
	e.putTrigger(triggers.Trigger{Queue: "r", Function: "slow"})
	eng := e.startEngine()
	e.waitFor("the batch to begin running", 20*time.Second, e.batchBegun)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := eng.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stop = %v, want the grace period's deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %s after the grace period", took)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE visible_at <= now() AND receive_count = 1`); got != 1 {
		t.Errorf("released messages ready now = %d, want 1", got)
	}
}

// A deploy while the engine runs takes effect within the engine's reload
// interval (1 s) plus the time this machine takes to get a version running:
// the larger of a second and twice what version 1 took from the engine's
// start (which loads the module before it returns) to its first run, so a
// loaded machine does not fail the test while a version that waits for a
// restart still does.
func TestNewVersionTakesEffectWithoutRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("echo", "f", functions.Config{Env: map[string]string{"V": "1"}})
	e.createQueue("hot", pgqueue.Settings{})
	e.putTrigger(triggers.Trigger{Queue: "hot", Function: "f"})
	started := time.Now()
	e.startEngine(func(c *triggers.Config) { c.ReloadInterval = 0 }) // the default, 1s
	e.send("hot", `{"n":1}`)
	e.waitFor("version 1 to run", 20*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE version = 1`) == 1
	})
	var firstV1 time.Time
	if err := e.pool.QueryRow(context.Background(),
		`SELECT min(started_at) FROM "`+e.schema+`".invocations WHERE version = 1`).Scan(&firstV1); err != nil {
		t.Fatal(err)
	}
	allowed := time.Second + max(time.Second, 2*firstV1.Sub(started))
	e.deploy("echo", "f", functions.Config{Env: map[string]string{"V": "2"}})
	deployed := time.Now()
	for time.Since(deployed) < allowed+3*time.Second {
		e.send("hot", `{"n":2}`)
		time.Sleep(100 * time.Millisecond)
		if e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE version = 2`) > 0 {
			break
		}
	}
	var first time.Time
	if err := e.pool.QueryRow(context.Background(),
		`SELECT min(started_at) FROM "`+e.schema+`".invocations WHERE version = 2`).Scan(&first); err != nil {
		t.Fatalf("version 2 never ran: %v", err)
	}
	if lag := first.Sub(deployed); lag > allowed {
		t.Errorf("version 2 first ran %s after the deploy, want within %s (the reload interval, 1s, plus the larger of 1s and twice version 1's %s from the engine's start, its load included, to its first run)",
			lag, allowed, firstV1.Sub(started).Round(time.Millisecond))
	}
}

// ack_first deletes messages when received: a failing function loses them
// (at-most-once), they are never retried.
func TestAckFirstIsAtMostOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("poison", "poison", functions.Config{})
	e.createQueue("amo", pgqueue.Settings{})
	e.send("amo", `{"n":1}`, `{"n":2}`)
	e.putTrigger(triggers.Trigger{Queue: "amo", Function: "poison", AckPolicy: "ack_first"})
	e.startEngine()
	e.waitFor("the invocation", 20*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) >= 1
	})
	time.Sleep(500 * time.Millisecond)
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages`) + e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`); got != 0 {
		t.Errorf("messages or dead letters left = %d, want 0", got)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations, unnest(message_ids)`); got != 2 {
		t.Errorf("deliveries = %d, want 2 (each once, never retried)", got)
	}
}

// ack_first's delete reaches disk before the function runs: a delete
// committed with synchronous_commit off could be lost to a database crash
// after the run, and the message would run again. A deferred constraint
// trigger notes the setting each deleting transaction commits with; a plain
// trigger's settlement, which may commit asynchronously (a lost ack only
// redelivers), shows that the note tells the two apart.
func TestAckFirstDeletesDurablyBeforeTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var serverDefault string
	if err := e.pool.QueryRow(t.Context(), `SHOW synchronous_commit`).Scan(&serverDefault); err != nil {
		t.Fatal(err)
	}
	if serverDefault == "off" {
		t.Fatal("the test database's synchronous_commit is off: nothing then commits durably (RELIABILITY.md); run the tests against a server that keeps the default, on")
	}
	q := pgx.Identifier{e.schema}.Sanitize()
	pgtest.AtCommitOnMessages(t, e.pool, e.schema, "test_note_delete_commit", "DELETE", `
	INSERT INTO `+q+`.test_delete_commits VALUES (OLD.queue_id, current_setting('synchronous_commit'));`)
	if _, err := e.pool.Exec(t.Context(), `CREATE TABLE `+q+`.test_delete_commits (queue_id bigint NOT NULL, synchronous_commit text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	e.deploy("echo", "echo", functions.Config{})
	for _, name := range []string{"amo", "plain"} {
		e.createQueue(name, pgqueue.Settings{})
		e.send(name, `{"n":1}`, `{"n":2}`, `{"n":3}`)
	}
	e.putTrigger(triggers.Trigger{Queue: "amo", Function: "echo", AckPolicy: "ack_first"})
	e.putTrigger(triggers.Trigger{Queue: "plain", Function: "echo"})
	e.startEngine()
	e.waitFor("both queues' messages deleted", 20*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.test_delete_commits`) == 6
	})
	for queue, want := range map[string]string{"amo": serverDefault, "plain": "off"} {
		got := e.scalar(`SELECT count(*) FROM {{schema}}.test_delete_commits d JOIN {{schema}}.queues q ON q.id = d.queue_id
			WHERE q.name = $1 AND d.synchronous_commit = $2`, queue, want)
		if got != 3 {
			t.Errorf("queue %s: %d of 3 deletes committed with synchronous_commit = %s", queue, got, want)
		}
	}
}

// A DLQ trigger hands dead letters to a handler and deletes the ones it
// handled.
func TestDLQTriggerHandlesDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deploy("poison", "poison", functions.Config{Env: map[string]string{"POISON_PERMANENT": "1"}})
	e.deploy("echo", "handler", functions.Config{})
	e.createQueue("src", pgqueue.Settings{})
	e.send("src", `{"n":1}`, `{"n":2}`, `{"n":3}`)
	e.putTrigger(triggers.Trigger{Queue: "src", Function: "poison"})
	e.putTrigger(triggers.Trigger{Queue: "src", DLQ: true, Function: "handler"})
	e.startEngine()
	e.waitFor("the handler to work the DLQ", 30*time.Second, func() bool {
		return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations WHERE trigger_type = 'dlq'`) == 3
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`); got != 0 {
		t.Errorf("dead letters left = %d, want 0", got)
	}
}
