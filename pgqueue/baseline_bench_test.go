package pgqueue_test

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed testdata/pgmq_style.sql
var pgmqStyleSQL string

// BenchmarkBaseline runs the reference workloads of the issue (send_batch
// and receive+delete, batch 10, 8 clients) against a pgmq-style queue (see
// testdata/pgmq_style.sql) on the same server, so the queue core's figures
// can be compared side by side under the same load.
func BenchmarkBaseline(b *testing.B) {
	pool := benchPool(b)
	ident := pgx.Identifier{baselineSchema(b, pool)}.Sanitize()
	bodies := make([]string, 10)
	for i := range bodies {
		bodies[i] = string(benchBody)
	}
	b.Run("send_batch/backlog=empty/clients=8/batch=10", func(b *testing.B) {
		parallel(b, 8, 10, func(ctx context.Context) error {
			_, err := pool.Exec(ctx, `SELECT count(*) FROM `+ident+`.send_batch('bench', $1)`, bodies)
			return err
		})
	})
	for _, backlog := range []int64{0, 500_000} {
		b.Run(fmt.Sprintf("receive_delete/backlog=%s/clients=8/batch=10", backlogName(backlog)), func(b *testing.B) {
			ctx := context.Background()
			var n int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+ident+`.q_bench`).Scan(&n); err != nil {
				b.Fatal(err)
			}
			if missing := backlog + int64(b.N*10) - n; missing > 0 {
				if _, err := pool.Exec(ctx, `INSERT INTO `+ident+`.q_bench (vt, message) SELECT now(), $2::jsonb FROM generate_series(1, $1::bigint)`, missing, string(benchBody)); err != nil {
					b.Fatal(err)
				}
				if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+ident+`.q_bench`); err != nil {
					b.Fatal(err)
				}
			}
			parallel(b, 8, 10, func(ctx context.Context) error {
				rows, err := pool.Query(ctx, `SELECT msg_id FROM `+ident+`.read('bench', 600, 10)`)
				if err != nil {
					return err
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				if err != nil {
					return err
				}
				if len(ids) != 10 {
					return fmt.Errorf("read %d messages, want 10", len(ids))
				}
				_, err = pool.Exec(ctx, `SELECT count(*) FROM `+ident+`.delete('bench', $1)`, ids)
				return err
			})
		})
	}
}

var (
	baselineOnce sync.Once
	baselineName string
)

func baselineSchema(b *testing.B, pool *pgxpool.Pool) string {
	baselineOnce.Do(func() {
		ctx := context.Background()
		name := fmt.Sprintf("bench_pgmq_%d", time.Now().UnixNano())
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(ctx)
		ident := pgx.Identifier{name}.Sanitize()
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+ident+"; SET LOCAL search_path = "+ident); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, pgmqStyleSQL); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		baselineName = name
		dropAfterRun = append(dropAfterRun, name)
	})
	if baselineName == "" {
		b.Fatal("baseline setup failed")
	}
	return baselineName
}
