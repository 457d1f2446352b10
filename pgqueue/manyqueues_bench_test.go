package pgqueue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkReceiveManyQueues receives and acks batches of 10 (8 clients)
// from one queue, then from 10,000 queues of the same account taken in
// turn, each op on the next queue, every queue holding 100 messages and
// more as b.N needs: what receive costs when the messages table holds
// many queues' heads instead of one (issue #18: receive cost flat with
// 10,000 queues). Run it with a fixed count, e.g. -benchtime 20000x, so
// both rows do the same work.
func BenchmarkReceiveManyQueues(b *testing.B) {
	e := benchSetup(b)
	for _, queues := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("queues=%d/clients=8/batch=10", queues), func(b *testing.B) {
			names := manyQueues(b, e, fmt.Sprintf("many%d_", queues), queues, max(100, 10*(b.N/queues+1)))
			var next atomic.Int64
			receiveDeleteFrom(b, e, func() string { return names[int(next.Add(1)-1)%len(names)] }, 8, 10)
		})
	}
}

// manyQueues creates (once) n queues named prefix0 … prefix(n-1) and tops
// each up to at least per ready messages, inserting directly.
func manyQueues(b *testing.B, e benchEnv, prefix string, n, per int) []string {
	b.Helper()
	ctx := context.Background()
	ident := pgx.Identifier{e.schema}.Sanitize()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint(prefix, i)
	}
	_, err := e.c.Pool().Exec(ctx, `SELECT `+ident+`.account_create_queue('000000000001', $1 || i, '{"visibility_timeout_seconds": 600}')
		  FROM generate_series(0, $2::int - 1) i
		 WHERE NOT EXISTS (SELECT 1 FROM `+ident+`.queues q WHERE q.account = '000000000001' AND q.name = $1 || i)`, prefix, n)
	if err != nil {
		b.Fatalf("create %d queues: %v", n, err)
	}
	// The ready counts are taken in one pass: a per-queue subquery is
	// planned as a scan of the whole table once it holds another row's
	// backlog.
	_, err = e.c.Pool().Exec(ctx, `INSERT INTO `+ident+`.messages (queue_id, visible_at, body)
		SELECT q.id, now(), $3 FROM `+ident+`.queues q
		  LEFT JOIN (SELECT queue_id, count(*) AS ready FROM `+ident+`.messages
		              WHERE visible_at <= now() GROUP BY queue_id) c ON c.queue_id = q.id
		 CROSS JOIN LATERAL generate_series(1, $2::int - coalesce(c.ready, 0)::int)
		 WHERE q.account = '000000000001' AND q.name = ANY ($1)`, names, per, string(benchBody))
	if err != nil {
		b.Fatalf("fill %d queues: %v", n, err)
	}
	if _, err := e.c.Pool().Exec(ctx, `VACUUM ANALYZE `+ident+`.messages`); err != nil {
		b.Fatal(err)
	}
	return names
}

// BenchmarkStatsOfAPage counts the live messages of a page of 50 queues
// of an account of 10,000 queues holding 100 messages each: every queue
// of the account at once (ListStats, one statement over the account's
// messages), and the page's queues one by one (StatsOf, what the HTTP
// API's live list of a page of at most 100 takes). BENCHMARKS.md, "Live
// counts of a page of queues".
func BenchmarkStatsOfAPage(b *testing.B) {
	e := benchSetup(b)
	names := manyQueues(b, e, "stats_", 10_000, 100)
	ctx := context.Background()
	b.Run("ListStats", func(b *testing.B) {
		for range b.N {
			if all, err := e.c.ListStats(ctx, "000000000001"); err != nil || len(all) < len(names) {
				b.Fatalf("ListStats: %d queues, %v", len(all), err)
			}
		}
	})
	b.Run("StatsOf50", func(b *testing.B) {
		for i := range b.N {
			from := i * 50 % len(names)
			if page, err := e.c.StatsOf(ctx, "000000000001", names[from:from+50]); err != nil || len(page) != 50 || page[0].Ready != 100 {
				b.Fatalf("StatsOf: %+v, %v", page, err)
			}
		}
	})
}
