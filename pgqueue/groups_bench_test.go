package pgqueue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/pgqueue"
)

// Benchmarks of ordered groups beside today's unordered receive, in one
// run so that their ratio means something on a shared machine:
//
//	go test ./pgqueue -run '^$' -bench 'Groups' -benchtime 2000x
//
// BenchmarkGroupsReceive: receive 10 + ack, 8 clients, over a backlog of
// 1k and 1M ready messages, unordered (no group) and grouped (1k in 100
// groups, 1M in 10k groups). BenchmarkGroupsThroughput: the same loop
// draining 0 (no groups), 1 and 100 groups.

// benchGroupQueue creates (once) a queue and tops it up to at least n
// messages spread over groups groups (0: no group), inserted in bulk. The
// triggers are bypassed for speed, and the group bookkeeping they keep is
// then rebuilt in one statement each: heads visible, the rest parked.
func benchGroupQueue(b *testing.B, e benchEnv, name string, n int64, groups int) {
	b.Helper()
	if groups == 0 {
		benchQueue(b, e, name, n)
		return
	}
	ctx := context.Background()
	if _, err := e.c.GetQueue(ctx, acct, name); err != nil {
		if _, err := e.c.CreateQueue(ctx, acct, name, pgqueue.Settings{VisibilityTimeout: 10 * time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
	s, err := e.c.Stats(ctx, acct, name)
	if err != nil {
		b.Fatal(err)
	}
	if s.Total >= n {
		return
	}
	ident := pgx.Identifier{e.schema}.Sanitize()
	tx, err := e.c.Pool().Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	named := []any{name}
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`SET LOCAL session_replication_role = replica`, nil},
		{`INSERT INTO ` + ident + `.messages (queue_id, visible_at, ready_at, body, group_key)
			SELECT q.id, 'infinity', now(), $3, 'g' || (i % $4)
			  FROM ` + ident + `.queues q, generate_series(1, $2::bigint) i
			 WHERE q.account = '000000000001' AND q.name = $1`, []any{name, n - s.Total, string(benchBody), groups}},
		{`DELETE FROM ` + ident + `.message_groups WHERE queue_id = (SELECT id FROM ` + ident + `.queues WHERE account = '000000000001' AND name = $1)`, named},
		{`INSERT INTO ` + ident + `.message_groups (queue_id, group_key, size)
			SELECT m.queue_id, m.group_key, count(*) FROM ` + ident + `.messages m
			  JOIN ` + ident + `.queues q ON q.id = m.queue_id AND q.account = '000000000001' AND q.name = $1
			 GROUP BY 1, 2`, named},
		{`UPDATE ` + ident + `.messages m SET visible_at = now(), ready_at = NULL
			  FROM (SELECT m2.queue_id, m2.group_key, min(m2.sequence) AS s FROM ` + ident + `.messages m2
			          JOIN ` + ident + `.queues q ON q.id = m2.queue_id AND q.account = '000000000001' AND q.name = $1
			         GROUP BY 1, 2) h
			 WHERE m.queue_id = h.queue_id AND m.sequence = h.s AND m.visible_at = 'infinity'
			   AND NOT EXISTS (SELECT 1 FROM ` + ident + `.messages o
			                    WHERE o.queue_id = h.queue_id AND o.group_key = h.group_key AND o.visible_at < 'infinity')`, named},
	} {
		if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("%s: %v", st.sql, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := e.c.Pool().Exec(ctx, `VACUUM ANALYZE `+ident+`.messages`); err != nil {
		b.Fatal(err)
	}
	if _, err := e.c.Pool().Exec(ctx, `VACUUM ANALYZE `+ident+`.message_groups`); err != nil {
		b.Fatal(err)
	}
}

// drain receives up to batch messages and acks them, in clients loops,
// until b.N*batch messages were processed; a receive may return fewer
// than batch when the receivable heads run short. It reports msgs/s and
// the share of receives that came back short.
func drain(b *testing.B, e benchEnv, q string, clients, batch int) {
	b.Helper()
	want := int64(b.N * batch)
	var got, receives, short atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	self0, server0 := cpuTime(b)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for got.Load() < want {
				msgs, err := e.c.Receive(ctx, acct, q, pgqueue.ReceiveOptions{Max: batch})
				if err != nil {
					errs <- err
					return
				}
				receives.Add(1)
				if len(msgs) < batch {
					short.Add(1)
				}
				if len(msgs) == 0 {
					time.Sleep(100 * time.Microsecond)
					continue
				}
				acks := pgqueue.Leases(msgs)
				if _, err := e.c.Ack(ctx, acct, q, acks); err != nil {
					errs <- err
					return
				}
				got.Add(int64(len(msgs)))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	n := float64(got.Load())
	b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(n/float64(receives.Load()), "msgs/receive")
	self1, server1 := cpuTime(b)
	b.ReportMetric(float64((self1-self0).Microseconds())/n, "client-cpu-us/msg")
	b.ReportMetric(float64((server1-server0).Microseconds())/n, "server-cpu-us/msg")
}

// BenchmarkGroupsReceive compares receive+ack over 1k and 1M backlogs,
// unordered and grouped, side by side.
func BenchmarkGroupsReceive(b *testing.B) {
	e := benchSetup(b)
	for _, c := range []struct {
		backlog int64
		groups  int
	}{{1_000, 0}, {1_000, 100}, {1_000_000, 0}, {1_000_000, 10_000}} {
		kind := "unordered"
		if c.groups > 0 {
			kind = fmt.Sprintf("groups=%d", c.groups)
		}
		b.Run(fmt.Sprintf("backlog=%s/%s/clients=8/batch=10", backlogName(c.backlog), kind), func(b *testing.B) {
			q := fmt.Sprintf("grecv_%s_%d", backlogName(c.backlog), c.groups)
			benchGroupQueue(b, e, q, c.backlog+int64(b.N*10), c.groups)
			drain(b, e, q, 8, 10)
		})
	}
}

// BenchmarkGroupsThroughput drains a queue with no groups, 1 group and 100
// groups: one group runs one message at a time, so its rate is that of one
// receive+ack round trip whatever the number of clients.
func BenchmarkGroupsThroughput(b *testing.B) {
	e := benchSetup(b)
	for _, c := range []struct{ groups, clients int }{{0, 8}, {1, 1}, {1, 8}, {100, 8}} {
		b.Run(fmt.Sprintf("groups=%d/clients=%d/batch=10", c.groups, c.clients), func(b *testing.B) {
			q := fmt.Sprintf("gthru_%d", c.groups)
			benchGroupQueue(b, e, q, int64(b.N*10), c.groups)
			drain(b, e, q, c.clients, 10)
		})
	}
}
