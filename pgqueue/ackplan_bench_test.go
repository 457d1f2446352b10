package pgqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// BenchmarkAckLarge times one Ack of 1,000 leased messages in a queue of
// ~100,000, the size of a trigger's settlement at batch size 1,000
// (BENCHMARKS.md, "a large ack can scan its whole queue"). With
// "fresh-statistics" the messages table was analyzed with the queue full;
// with "stale-statistics" it was analyzed when the queue held one message
// of 30,001, as for a queue that filled after the last ANALYZE (autovacuum
// is off for the table in both, so the statistics stay as set). The
// receives are not timed. Run with e.g.
//
//	scripts/bench ./pgqueue/ BenchmarkAckLarge -benchtime 20x
func BenchmarkAckLarge(b *testing.B) {
	for _, stale := range []bool{false, true} {
		name := "fresh-statistics"
		if stale {
			name = "stale-statistics"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			pool, schema := pgtest.Schema(b, pgqueue.Migrations)
			c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
			if err != nil {
				b.Fatal(err)
			}
			for _, q := range []string{"big", "other"} {
				if _, err := c.CreateQueue(ctx, pgqueue.DefaultAccount, q, pgqueue.Settings{}); err != nil {
					b.Fatal(err)
				}
			}
			messages := pgx.Identifier{schema, "messages"}.Sanitize()
			mustExec(b, pool, "ALTER TABLE "+messages+" SET (autovacuum_enabled = off)")
			if stale {
				fillQueue(b, pool, schema, "big", 1)
				fillQueue(b, pool, schema, "other", 30_000)
				mustExec(b, pool, "ANALYZE "+messages)
				if _, err := c.Purge(ctx, pgqueue.DefaultAccount, "other"); err != nil {
					b.Fatal(err)
				}
			}
			const backlog, size = 100_000, 1000
			fillQueue(b, pool, schema, "big", backlog)
			if !stale {
				mustExec(b, pool, "VACUUM ANALYZE "+messages)
			}
			opts := pgqueue.ReceiveOptions{Max: size, VisibilityTimeout: 10 * time.Minute}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				msgs, err := c.Receive(ctx, pgqueue.DefaultAccount, "big", opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(msgs) < size {
					fillQueue(b, pool, schema, "big", backlog)
					i--
					continue
				}
				b.StartTimer()
				acked, err := c.Ack(ctx, pgqueue.DefaultAccount, "big", pgqueue.Leases(msgs))
				if err != nil || len(acked) != size {
					b.Fatalf("ack of %d: %d acked, %v", size, len(acked), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/ack")
		})
	}
}

// fillQueue inserts n small ready messages into queue in one statement
// (benchQueue does too, but analyzes the table after: these benchmarks
// choose when it is analyzed).
func fillQueue(b *testing.B, pool *pgxpool.Pool, schema, queue string, n int) {
	b.Helper()
	mustExec(b, pool, `INSERT INTO `+pgx.Identifier{schema, "messages"}.Sanitize()+` (queue_id, visible_at, body)
		SELECT q.id, now() - interval '1 hour', '{"n":1}' FROM `+pgx.Identifier{schema, "queues"}.Sanitize()+` q, generate_series(1, $2)
		 WHERE q.account = $1 AND q.name = $3`, pgqueue.DefaultAccount, n, queue)
}

// mustExec runs sql on pool and fails the benchmark if it fails.
func mustExec(b *testing.B, pool *pgxpool.Pool, sql string, args ...any) {
	b.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
}
