package pgqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

// Benchmarks of the queue core against the Postgres in TEST_DATABASE_URL.
// Each reports msgs/s (messages sent, or received and deleted, per second
// of wall time across all clients). Run with e.g.
//
//	go test ./pgqueue -run '^$' -bench . -benchtime 3s
//
// "backlog" is how many ready messages sit in the queue besides the ones
// the benchmark works on; "clients" is the number of concurrent
// goroutines, each using its own pooled connection.

var benchBody = json.RawMessage(`{"order_id":123456,"customer":"c-42","items":3,"total_cents":4599}`)

type benchEnv struct {
	c      *pgqueue.Client
	schema string
}

var (
	benchOnce sync.Once
	benchE    benchEnv
	// dropAfterRun lists the schemas the benchmarks created; TestMain
	// drops them.
	dropAfterRun []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if len(dropAfterRun) > 0 {
		if pool, err := pgxpool.New(context.Background(), os.Getenv(pgtest.EnvVar)); err == nil {
			for _, s := range dropAfterRun {
				_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{s}.Sanitize()+" CASCADE")
			}
			pool.Close()
		}
	}
	os.Exit(code)
}

// benchSetup migrates one schema shared by all benchmarks of the run.
func benchSetup(b *testing.B) benchEnv {
	b.Helper()
	benchOnce.Do(func() {
		// The schema outlives each sub-benchmark; TestMain drops it.
		pool := pgtest.Pool(b)
		schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
		if err := migrate.Up(context.Background(), pool, schema, pgqueue.Migrations); err != nil {
			b.Fatal(err)
		}
		dropAfterRun = append(dropAfterRun, schema)
		c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		benchE = benchEnv{c: c, schema: schema}
	})
	if benchE.c == nil {
		b.Fatal("benchmark setup failed")
	}
	return benchE
}

// benchQueue creates (once) a queue and tops it up to at least n ready
// messages, inserting directly with generate_series.
func benchQueue(b *testing.B, e benchEnv, name string, n int64) {
	b.Helper()
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
	if missing := n - s.Ready; missing > 0 {
		ident := pgx.Identifier{e.schema}.Sanitize()
		_, err := e.c.Pool().Exec(ctx, `INSERT INTO `+ident+`.messages (queue_id, visible_at, body)
			SELECT q.id, now(), $3 FROM `+ident+`.queues q, generate_series(1, $2::bigint)
			WHERE q.account = '000000000001' AND q.name = $1`, name, missing, string(benchBody))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.c.Pool().Exec(ctx, `VACUUM ANALYZE `+ident+`.messages`); err != nil {
			b.Fatal(err)
		}
	}
}

// parallel runs op ops times split over clients goroutines and reports
// msgs/s, counting perOp messages per op.
func parallel(b *testing.B, clients, perOp int, op func(ctx context.Context) error) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for w := range clients {
		n := b.N / clients
		if w < b.N%clients {
			n++
		}
		wg.Go(func() {
			for range n {
				if err := op(ctx); err != nil {
					errs <- err
					return
				}
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
	b.ReportMetric(float64(b.N*perOp)/elapsed.Seconds(), "msgs/s")
}

var (
	benchClients = []int{1, 8}
	benchBatches = []int{1, 10, 100}
	benchBacklog = []int64{0, 500_000}
)

func backlogName(n int64) string {
	if n == 0 {
		return "empty"
	}
	return fmt.Sprintf("%dk", n/1000)
}

// BenchmarkSend sends one message per statement.
func BenchmarkSend(b *testing.B) {
	e := benchSetup(b)
	for _, backlog := range benchBacklog {
		for _, clients := range benchClients {
			b.Run(fmt.Sprintf("backlog=%s/clients=%d", backlogName(backlog), clients), func(b *testing.B) {
				q := "send_" + backlogName(backlog)
				benchQueue(b, e, q, backlog)
				parallel(b, clients, 1, func(ctx context.Context) error {
					_, err := e.c.Send(ctx, acct, q, pgqueue.NewMessage{Body: benchBody})
					return err
				})
			})
		}
	}
}

// BenchmarkSendBatch sends batch messages per statement.
func BenchmarkSendBatch(b *testing.B) {
	e := benchSetup(b)
	for _, backlog := range benchBacklog {
		for _, clients := range benchClients {
			for _, batch := range benchBatches {
				b.Run(fmt.Sprintf("backlog=%s/clients=%d/batch=%d", backlogName(backlog), clients, batch), func(b *testing.B) {
					q := "sendb_" + backlogName(backlog)
					benchQueue(b, e, q, backlog)
					msgs := make([]pgqueue.NewMessage, batch)
					for i := range msgs {
						msgs[i] = pgqueue.NewMessage{Body: benchBody}
					}
					parallel(b, clients, batch, func(ctx context.Context) error {
						_, err := e.c.SendBatch(ctx, acct, q, msgs)
						return err
					})
				})
			}
		}
	}
}

// BenchmarkReceiveDelete receives batch messages and acknowledges them all
// in a second statement (what the dispatcher does per batch).
func BenchmarkReceiveDelete(b *testing.B) {
	e := benchSetup(b)
	for _, backlog := range benchBacklog {
		for _, clients := range benchClients {
			for _, batch := range benchBatches {
				b.Run(fmt.Sprintf("backlog=%s/clients=%d/batch=%d", backlogName(backlog), clients, batch), func(b *testing.B) {
					q := fmt.Sprintf("recv_%s", backlogName(backlog))
					benchQueue(b, e, q, backlog+int64(b.N*batch))
					receiveDelete(b, e, q, clients, batch)
				})
			}
		}
	}
}

// BenchmarkReceiveDeleteSyncAcks is the reference workload (batch 10, 8
// clients) with SynchronousAcks: every statement waits for its commit to
// reach disk, as the baseline does.
func BenchmarkReceiveDeleteSyncAcks(b *testing.B) {
	e := benchSetup(b)
	sync, err := pgqueue.New(e.c.Pool(), pgqueue.Options{Schema: e.schema, SynchronousAcks: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, backlog := range benchBacklog {
		b.Run(fmt.Sprintf("backlog=%s/clients=8/batch=10", backlogName(backlog)), func(b *testing.B) {
			q := fmt.Sprintf("recv_%s", backlogName(backlog))
			benchQueue(b, e, q, backlog+int64(b.N*10))
			receiveDelete(b, benchEnv{c: sync, schema: e.schema}, q, 8, 10)
		})
	}
}

// BenchmarkNoCoalescing is the reference workloads (batch 10, 8 clients)
// with Options.NoCoalescing and SynchronousAcks: one statement and one
// synchronous commit per call, like the baseline.
func BenchmarkNoCoalescing(b *testing.B) {
	e := benchSetup(b)
	plain, err := pgqueue.New(e.c.Pool(), pgqueue.Options{Schema: e.schema, NoCoalescing: true, SynchronousAcks: true})
	if err != nil {
		b.Fatal(err)
	}
	pe := benchEnv{c: plain, schema: e.schema}
	msgs := make([]pgqueue.NewMessage, 10)
	for i := range msgs {
		msgs[i] = pgqueue.NewMessage{Body: benchBody}
	}
	b.Run("send_batch/backlog=empty/clients=8/batch=10", func(b *testing.B) {
		benchQueue(b, e, "sendb_empty", 0)
		parallel(b, 8, 10, func(ctx context.Context) error {
			_, err := plain.SendBatch(ctx, acct, "sendb_empty", msgs)
			return err
		})
	})
	for _, backlog := range benchBacklog {
		b.Run(fmt.Sprintf("receive_delete/backlog=%s/clients=8/batch=10", backlogName(backlog)), func(b *testing.B) {
			q := fmt.Sprintf("recv_%s", backlogName(backlog))
			benchQueue(b, e, q, backlog+int64(b.N*10))
			receiveDelete(b, pe, q, 8, 10)
		})
	}
}

// BenchmarkReceiveBacklog shows receive+delete cost as the backlog grows.
func BenchmarkReceiveBacklog(b *testing.B) {
	e := benchSetup(b)
	for _, backlog := range []int64{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("backlog=%s/clients=8/batch=10", backlogName(backlog)), func(b *testing.B) {
			q := "backlog_" + backlogName(backlog)
			benchQueue(b, e, q, backlog+int64(b.N*10))
			receiveDelete(b, e, q, 8, 10)
		})
	}
}

func receiveDelete(b *testing.B, e benchEnv, q string, clients, batch int) {
	parallel(b, clients, batch, func(ctx context.Context) error {
		msgs, err := e.c.Receive(ctx, acct, q, pgqueue.ReceiveOptions{Max: batch})
		if err != nil {
			return err
		}
		if len(msgs) != batch {
			return fmt.Errorf("received %d messages, want %d", len(msgs), batch)
		}
		acks := make([]pgqueue.Ack, len(msgs))
		for i, m := range msgs {
			acks[i] = pgqueue.Ack{Sequence: m.Sequence, Receipt: m.Receipt}
		}
		acked, err := e.c.Ack(ctx, acct, q, acks)
		if err != nil {
			return err
		}
		if len(acked) != len(acks) {
			return fmt.Errorf("acked %d of %d", len(acked), len(acks))
		}
		return nil
	})
}
