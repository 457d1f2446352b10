package triggers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// newTestEngine returns an engine on a fresh schema, not started.
func newTestEngine(t *testing.T) (*Engine, *pgxpool.Pool, *pgqueue.Client, string) {
	t.Helper()
	ctx := context.Background()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations, functions.Migrations, Migrations)
	qc, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := functions.NewRegistry(pool, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	e, err := NewEngine(Config{Pool: pool, Schema: schema, Queue: qc, Registry: reg, Runtime: rt, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return e, pool, qc, schema
}

// Invocation ids taken in blocks are unique across engines and increase
// within each engine, at any rate.
func TestInvocationIDsInBlocks(t *testing.T) {
	t.Parallel()
	e1, pool, qc, schema := newTestEngine(t)
	e2, err := NewEngine(Config{Pool: pool, Schema: schema, Queue: qc, Registry: e1.cfg.Registry, Runtime: e1.cfg.Runtime})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 600
	got := make([][]int64, 4)
	var wg sync.WaitGroup
	for i := range got {
		e := []*Engine{e1, e2}[i%2]
		wg.Go(func() {
			for range n {
				id, err := e.invocationID(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = append(got[i], id)
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i, ids := range got {
		if !slices.IsSorted(ids) {
			t.Errorf("caller %d: ids not increasing: %v", i, ids)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("id %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	// At this rate the blocks grew: far fewer round trips than ids.
	if e1.ids.size < 8 {
		t.Errorf("block size after %d ids = %d, want it grown", 2*n, e1.ids.size)
	}
	// A block outlives its life: the next id comes from a new block,
	// larger than every id handed out before.
	e1.ids.taken = time.Now().Add(-2 * idBlockLife)
	id, err := e1.invocationID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for old := range seen {
		if old >= id {
			t.Fatalf("id %d after an expired block, not above the earlier %d", id, old)
		}
	}
}

// The settlements of several batches commit together, each with its own
// record; one whose lease is no longer current does not take the others
// down: they are settled one by one, and its record says what was done.
func TestSettleTogether(t *testing.T) {
	t.Parallel()
	e, pool, qc, schema := newTestEngine(t)
	ctx := context.Background()
	const queue = "work"
	if _, err := qc.CreateQueue(ctx, pgqueue.DefaultAccount, queue, pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	body := json.RawMessage(`{}`)
	if _, err := qc.SendBatch(ctx, pgqueue.DefaultAccount, queue, []pgqueue.NewMessage{{Body: body}, {Body: body}, {Body: body}, {Body: body}, {Body: body}}); err != nil {
		t.Fatal(err)
	}
	msgs, err := qc.Receive(ctx, pgqueue.DefaultAccount, queue, pgqueue.ReceiveOptions{Max: 5, VisibilityTimeout: time.Minute})
	if err != nil || len(msgs) != 5 {
		t.Fatalf("receive: %d messages, %v", len(msgs), err)
	}
	a := &active{Trigger: Trigger{Account: pgqueue.DefaultAccount, Queue: queue, Name: "queue:work:noop", Function: "noop"},
		visibility: time.Minute, maxReceiveCount: 5}
	d := &dispatcher{e: e, a: a, log: zerolog.Nop(), due: make(chan struct{}, 1)}
	settlementOf := func(batch []pgqueue.Message) *settlement {
		b := newQueueBatch(batch)
		res := runtime.Result{Messages: make([]runtime.MessageResult, len(batch))}
		for i := range res.Messages {
			res.Messages[i] = runtime.MessageResult{ID: b.messages[i].ID, Outcome: runtime.Acked}
		}
		id, err := e.invocationID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rules := a.settleRules()
		s := &settlement{b: b, rules: rules, plan: planSettlement(rules, b, res, nil), res: res, rec: invocationRecord{
			id: id, trigger: a.Name, account: a.Account, function: a.Function, version: 1, triggerType: "queue",
			source: queue, batchSize: len(batch), startedAt: time.Now(), messageIDs: b.ids,
		}}
		s.rec.setResult(res)
		return s
	}
	scalar := func(sql string) int64 {
		var n int64
		if err := pool.QueryRow(ctx, fmt.Sprintf(sql, schema)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Two batches, together.
	d.settleTogether([]*settlement{settlementOf(msgs[0:1]), settlementOf(msgs[1:2])})
	if n := scalar(`SELECT count(*) FROM %s.messages`); n != 3 {
		t.Fatalf("after settling 2 batches together: %d messages left, want 3", n)
	}
	if n := scalar(`SELECT count(*) FROM %s.invocations WHERE acked = 1`); n != 2 {
		t.Fatalf("records acking 1: %d, want 2", n)
	}
	// Each record names its own message, and what every record says.
	for _, m := range msgs[0:2] {
		var batchSize, retried, dead, emitted int
		var outcome, trigger string
		if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT batch_size, retried, dead, emitted, outcome, trigger
		      FROM %s.invocations WHERE message_ids = ARRAY[$1::bigint]`, schema), m.Sequence).
			Scan(&batchSize, &retried, &dead, &emitted, &outcome, &trigger); err != nil {
			t.Fatalf("the record of message %d: %v", m.Sequence, err)
		}
		if batchSize != 1 || retried != 0 || dead != 0 || emitted != 0 || outcome != OutcomeSuccess || trigger != a.Name {
			t.Errorf("record of message %d: batch_size %d, retried %d, dead %d, emitted %d, outcome %s, trigger %s",
				m.Sequence, batchSize, retried, dead, emitted, outcome, trigger)
		}
	}

	// The lease of msgs[4] expires and another consumer takes it: the
	// receipt this dispatcher holds is stale.
	if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.messages SET visible_at = now() WHERE sequence = $1`, schema), msgs[4].Sequence); err != nil {
		t.Fatal(err)
	}
	again, err := qc.Receive(ctx, pgqueue.DefaultAccount, queue, pgqueue.ReceiveOptions{Max: 5, VisibilityTimeout: time.Minute})
	if err != nil || len(again) != 1 || again[0].Sequence != msgs[4].Sequence {
		t.Fatalf("receive again: %+v, %v", again, err)
	}
	d.settleTogether([]*settlement{settlementOf(msgs[2:3]), settlementOf(msgs[3:5])})
	if n := scalar(`SELECT count(*) FROM %s.messages`); n != 1 {
		t.Fatalf("after settling with a stale receipt: %d messages left, want 1 (the one leased by the other consumer)", n)
	}
	if n := scalar(`SELECT count(*) FROM %s.invocations`); n != 4 {
		t.Fatalf("records: %d, want 4", n)
	}
	if n := scalar(`SELECT sum(acked) FROM %s.invocations`); n != 4 {
		t.Fatalf("acked in the log: %d, want 4 (exactly what was deleted)", n)
	}
	// The records settle_invocations wrote are keyed by the queue's id (on
	// Citus: on its shard); the one the stale lease sent through the
	// explicit transaction (settleTx) by 0.
	if n := scalar(`SELECT count(*) FROM %[1]s.invocations i JOIN %[1]s.queues q ON q.id = i.queue_id WHERE q.name = 'work'`); n != 3 {
		t.Fatalf("records keyed by the queue's id: %d, want 3", n)
	}
}
