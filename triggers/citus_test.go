//go:build citus

package triggers_test

// The trigger engine on a Citus cluster: scripts/test-citus runs
// ./triggers/ with -tags citus against a coordinator whose test schemas are
// distributed (SLUICE_TEST_CITUS=1), queue tables and invocation log alike.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/citus"
	"github.com/sluicehq/sluice/triggers"
)

func requireCitus(t *testing.T) {
	t.Helper()
	if os.Getenv("SLUICE_TEST_CITUS") != "1" {
		t.Fatal("SLUICE_TEST_CITUS is not 1: run the Citus tests with scripts/test-citus, which starts the cluster")
	}
}

// loggedPool returns a pool on e's database whose sessions log the
// commands Citus sends to other nodes (citus.log_remote_commands), and
// take, which returns the commands logged since its last call.
func (e *env) loggedPool() (*pgxpool.Pool, func() []string) {
	e.t.Helper()
	return pgtest.RemoteCommands(e.t, e.pool)
}

func (e *env) queueID(name string) int64 {
	e.t.Helper()
	return e.scalar(`SELECT id FROM {{schema}}.queues WHERE account = $1 AND name = $2`, acct, name)
}

// workerOf returns the address of the worker holding queue id's shard, as
// the coordinator names it.
func (e *env) workerOf(id int64) (string, uint16) {
	e.t.Helper()
	var host string
	var port uint16
	if err := e.pool.QueryRow(context.Background(), fmt.Sprintf(`
		SELECT n.nodename, n.nodeport
		  FROM pg_dist_placement p JOIN pg_dist_node n ON n.groupid = p.groupid
		 WHERE p.shardid = get_shard_id_for_distribution_column('%s.messages', $1::bigint)`, pgx.Identifier{e.schema}.Sanitize()), id).
		Scan(&host, &port); err != nil {
		e.t.Fatalf("the worker of queue id %d: %v", id, err)
	}
	return host, port
}

// queueOnAnotherWorker creates queues named dlq-0, dlq-1, ... until one
// lands on a worker other than the one at port, and returns its name.
func (e *env) queueOnAnotherWorker(port uint16) string {
	e.t.Helper()
	for i := range 40 {
		name := fmt.Sprintf("dlq-%d", i)
		e.createQueue(name, pgqueue.Settings{})
		if _, p := e.workerOf(e.queueID(name)); p != port {
			return name
		}
	}
	e.t.Fatal("no queue landed on the other worker in 40 tries")
	return ""
}

// onShards returns the commands among shipped that the coordinator ran on
// a shard of the queue tables or of the invocation log itself, instead of
// shipping a function call; but for the engine's pruning of old records
// (prune_invocations, a DELETE on every shard of the log now and then).
func onShards(shipped []string) []string {
	var out []string
	for _, m := range shipped {
		if strings.Contains(m, "DELETE FROM") && strings.Contains(m, "invocations WHERE (started_at OPERATOR(pg_catalog.<)") {
			continue
		}
		for _, table := range []string{".messages_", ".dead_letters_", ".invocations_"} {
			if strings.Contains(m, table) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

func calls(shipped []string, fn string) int {
	n := 0
	for _, m := range shipped {
		if strings.HasPrefix(m, "issuing ") && strings.Contains(m, "."+fn+"(") {
			n++
		}
	}
	return n
}

// The engine's settlements without emits run on the worker holding the
// queue's shard: with citus.log_remote_commands on for the engine's pool,
// the coordinator ships settle_invocations calls and no statement on a
// shard of messages, dead letters or the invocation log, while the engine
// drains a queue (noop, batches of 10: acks and their records). The
// records are on the queue's shard (queue_id) and count every message.
func TestEngineSettlesOnTheQueuesWorker(t *testing.T) {
	requireCitus(t)
	e := newEnv(t)
	ctx := context.Background()
	// The Citus step of every line runs again and changes nothing.
	for range 2 {
		if err := citus.Distribute(ctx, e.pool, e.schema, pgqueue.Migrations, functions.Migrations, triggers.Migrations); err != nil {
			t.Fatalf("distribute again: %v", err)
		}
	}
	var distributed bool
	if err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = $1::regclass)`,
		e.schema+".invocations").Scan(&distributed); err != nil || !distributed {
		t.Fatalf("invocations distributed: %v %v", distributed, err)
	}
	e.createQueue("jobs", pgqueue.Settings{})
	e.deploy("noop", "noop", functions.Config{})
	e.putTrigger(triggers.Trigger{Queue: "jobs", Function: "noop", BatchSize: 10})
	const n = 200
	e.send("jobs", bodies(n, `{"n":%d}`)...)

	logged, take := e.loggedPool()
	e.startEngine(func(c *triggers.Config) {
		c.Pool = logged
		q, err := pgqueue.New(logged, pgqueue.Options{Schema: e.schema, Listener: c.Listener})
		if err != nil {
			t.Fatal(err)
		}
		c.Queue = q
	})
	e.waitFor("the queue drained and every ack recorded", time.Minute, func() bool {
		return e.scalar(`SELECT coalesce(sum(acked), 0) FROM {{schema}}.invocations`) == n
	})
	shipped := take()
	if got := calls(shipped, "settle_invocations"); got == 0 {
		t.Fatalf("no settle_invocations call shipped to a worker; remote commands: %q", shipped)
	} else {
		t.Logf("%d settle_invocations calls shipped for %d messages", got, n)
	}
	if bad := onShards(shipped); len(bad) > 0 {
		t.Errorf("the coordinator ran %d statements on shards, e.g. %s", len(bad), bad[0])
	}
	if left := e.scalar(`SELECT count(*) FROM {{schema}}.messages`); left != 0 {
		t.Errorf("%d messages left", left)
	}
	id := e.queueID("jobs")
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE queue_id <> $1`, id); got != 0 {
		t.Errorf("%d records not on the queue's shard", got)
	}
	// The reads of the log work on the distributed table.
	invs, err := e.triggers.Invocations().List(ctx, acct, triggers.InvocationFilter{Limit: 1000})
	if err != nil {
		t.Fatalf("list invocations: %v", err)
	}
	acked := 0
	for _, v := range invs {
		acked += v.Acked
	}
	if acked != n {
		t.Errorf("listed invocations acked %d, want %d", acked, n)
	}
	if _, err := e.triggers.Invocations().Follow(ctx, acct, 0, 10*time.Second, triggers.InvocationFilter{Limit: 10}); err != nil {
		t.Errorf("follow invocations: %v", err)
	}
	if _, err := e.triggers.Invocations().SeqSince(ctx, acct, time.Now().Add(-time.Hour)); err != nil {
		t.Errorf("seq since: %v", err)
	}
}

// A settlement that retries one message (delay 0: a wake-up NOTIFY) and
// fails another into a dead_letter_queue held by the other worker: the
// delegated call writes that worker too, so its transaction commits with
// two-phase commit run by the queue's worker, alongside the NOTIFYs. It
// commits whole: the retried message is ready with its error, the failed
// one is in the DLQ, the record is written, and the NOTIFYs of both queues
// reach a session listening on the queue's worker. A settlement whose
// retry's lease is no longer current fails whole with ErrStaleReceipt,
// the DLQ write on the other worker included.
func TestSettlementWithDeadLetterQueueOnOtherWorker(t *testing.T) {
	requireCitus(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.createQueue("jobs", pgqueue.Settings{})
	jobs := e.queueID("jobs")
	host, port := e.workerOf(jobs)
	dlq := e.queueOnAnotherWorker(port)
	s := pgqueue.DefaultSettings()
	s.DeadLetterQueue = dlq
	if _, err := e.queue.UpdateQueue(ctx, acct, "jobs", s); err != nil {
		t.Fatal(err)
	}
	t.Logf("queue jobs (id %d) is on %s:%d, its dead_letter_queue %s on the other worker", jobs, host, port, dlq)
	// Someone waits on both queues: wake() NOTIFYs.
	if _, err := e.pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.wake_interest (queue_id, until)
		VALUES ($1, now() + interval '1 hour'), ($2, now() + interval '1 hour')
		ON CONFLICT (queue_id) DO UPDATE SET until = excluded.until`, pgx.Identifier{e.schema}.Sanitize()), jobs, e.queueID(dlq)); err != nil {
		t.Fatal(err)
	}
	wcfg := e.pool.Config().ConnConfig.Copy()
	wcfg.Host, wcfg.Port, wcfg.Fallbacks = host, port, nil
	wc, err := pgx.ConnectConfig(ctx, wcfg)
	if err != nil {
		t.Fatalf("connect to the queue's worker: %v", err)
	}
	defer wc.Close(context.Background())
	if _, err := wc.Exec(ctx, "LISTEN "+pgx.Identifier{e.schema + "_wake"}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	logged, take := e.loggedPool()
	qc, err := pgqueue.New(logged, pgqueue.Options{Schema: e.schema})
	if err != nil {
		t.Fatal(err)
	}
	settle := fmt.Sprintf("SELECT %s.settle_invocations(%s)", pgx.Identifier{e.schema}.Sanitize(), placeholders(36))
	record := func(seqs []int64) []any {
		id := e.scalar(`SELECT nextval(pg_get_serial_sequence('{{schema}}.invocations', 'id'))`)
		list, _ := json.Marshal(seqs)
		ids := "{" + strings.Trim(string(list), "[]") + "}"
		return []any{"fn", 1, nil, "queue", "jobs", "jobs-trigger",
			[]int64{id}, []int{len(seqs)}, []time.Time{time.Now()}, []float64{1.5}, []string{"partial_failure"},
			[]*string{nil}, []string{"boom"}, []int{0}, []int{1}, []int{1}, []string{ids}, []*string{nil},
			[]int{0}, []int{0}, []int64{0}, []int64{0}}
	}
	e.send("jobs", `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`)
	got, err := qc.Receive(ctx, acct, "jobs", pgqueue.ReceiveOptions{Max: 4})
	if err != nil || len(got) != 4 {
		t.Fatalf("receive: %d messages, %v", len(got), err)
	}
	take()

	// A retry whose lease is stale and a good failure: nothing happens,
	// on either worker.
	err = qc.SettleByID(ctx, acct, "jobs", nil,
		[]pgqueue.Nack{{Sequence: got[0].Sequence, Receipt: got[1].Receipt, Error: "retry"}},
		[]pgqueue.Failure{{Sequence: got[1].Sequence, Receipt: got[1].Receipt, Reason: "permanent_failure", Error: "boom"}},
		settle, record([]int64{got[0].Sequence, got[1].Sequence})...)
	if !errors.Is(err, pgqueue.ErrStaleReceipt) {
		t.Fatalf("a stale retry: %v, want ErrStaleReceipt", err)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE queue_id = $1`, e.queueID(dlq)); n != 0 {
		t.Errorf("after the refused settlement the DLQ holds %d messages", n)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.invocations`); n != 0 {
		t.Errorf("after the refused settlement %d records", n)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE queue_id = $1 AND last_error IS NULL AND visible_at > now()`, jobs); n != 4 {
		t.Errorf("after the refused settlement %d of 4 messages still leased and untouched", n)
	}

	// The same with the retry's lease current: all of it.
	take()
	if err := qc.SettleByID(ctx, acct, "jobs", []pgqueue.Ack{{Sequence: got[2].Sequence, Receipt: got[2].Receipt}},
		[]pgqueue.Nack{{Sequence: got[0].Sequence, Receipt: got[0].Receipt, Error: "retry"}},
		[]pgqueue.Failure{{Sequence: got[1].Sequence, Receipt: got[1].Receipt, Reason: "permanent_failure", Error: "boom"}},
		settle, record([]int64{got[0].Sequence, got[1].Sequence, got[2].Sequence})...); err != nil {
		t.Fatalf("settle a retry and a failure into the other worker's DLQ: %v", err)
	}
	shipped := take()
	if calls(shipped, "settle_invocations") != 1 {
		t.Errorf("the settlement was not shipped as one call; remote commands: %q", shipped)
	}
	if bad := onShards(shipped); len(bad) > 0 {
		t.Errorf("the coordinator ran statements on shards: %q", bad)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE queue_id = $1 AND sequence = $2 AND last_error = 'retry' AND visible_at <= now()`, jobs, got[0].Sequence); n != 1 {
		t.Errorf("the retried message is not ready with its error")
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE queue_id = $1 AND sequence = ANY ($2)`, jobs, []int64{got[1].Sequence, got[2].Sequence}); n != 0 {
		t.Errorf("%d of the failed and acked messages are still in the queue", n)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE queue_id = $1`, e.queueID(dlq)); n != 1 {
		t.Errorf("the DLQ holds %d messages, want 1", n)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE queue_id = $1 AND retried = 1 AND dead = 1`, jobs); n != 1 {
		t.Errorf("%d records of the settlement, want 1", n)
	}
	want := map[string]bool{acct + "/jobs": false, acct + "/" + dlq: false}
	for left := len(want); left > 0; {
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := wc.WaitForNotification(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("wake-ups on the queue's worker: %v; seen %v", err, want)
		}
		if seen, ok := want[n.Payload]; ok && !seen {
			want[n.Payload] = true
			left--
		}
	}
}

func placeholders(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", i)
	}
	return b.String()
}

// The engine drains a queue whose messages are retried at once (a
// wake-up NOTIFY each time) and then, at the queue's receive limit, failed
// into a dead_letter_queue on the other worker: every message ends in the
// DLQ, and the invocation log counts exactly the retries and failures.
func TestEngineRetriesAndDeadLettersAcrossWorkers(t *testing.T) {
	requireCitus(t)
	e := newEnv(t)
	ctx := context.Background()
	e.createQueue("jobs", pgqueue.Settings{})
	jobs := e.queueID("jobs")
	_, port := e.workerOf(jobs)
	dlq := e.queueOnAnotherWorker(port)
	s := pgqueue.DefaultSettings()
	s.DeadLetterQueue, s.MaxReceiveCount = dlq, 2
	if _, err := e.queue.UpdateQueue(ctx, acct, "jobs", s); err != nil {
		t.Fatal(err)
	}
	e.deploy("flaky", "flaky", functions.Config{Env: map[string]string{"FLAKY_RETRY_SECONDS": "0"}})
	e.putTrigger(triggers.Trigger{Queue: "jobs", Function: "flaky", BatchSize: 10})
	const n = 60
	e.startEngine()
	// Two waves, so that batches hold first and second deliveries.
	e.send("jobs", bodies(n/2, `{"fail_until_attempt": 100, "n": %d}`)...)
	time.Sleep(200 * time.Millisecond)
	e.send("jobs", bodies(n/2, `{"fail_until_attempt": 100, "n": %d}`)...)
	e.waitFor("every message dead-lettered and recorded", 2*time.Minute, func() bool {
		return e.scalar(`SELECT coalesce(sum(dead), 0) FROM {{schema}}.invocations`) == n
	})
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE queue_id = $1`, e.queueID(dlq)); got != n {
		t.Errorf("the DLQ holds %d messages, want %d", got, n)
	}
	if got := e.scalar(`SELECT count(*) FROM {{schema}}.messages WHERE queue_id = $1`, jobs); got != 0 {
		t.Errorf("%d messages left in the queue", got)
	}
	if got := e.scalar(`SELECT coalesce(sum(retried), 0) FROM {{schema}}.invocations`); got != n {
		t.Errorf("the log counts %d retries, want %d", got, n)
	}
	mixed := e.scalar(`SELECT count(*) FROM {{schema}}.invocations WHERE retried > 0 AND dead > 0`)
	t.Logf("%d of the records settled retries and failures together", mixed)
}
