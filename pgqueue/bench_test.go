package pgqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	// benchSweeper runs while the benchmarks do; TestMain stops it.
	benchSweeper *pgqueue.Sweeper
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchSweeper != nil {
		_ = benchSweeper.Stop(context.Background())
	}
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
		pool := benchPool(b)
		schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
		if err := migrate.Up(context.Background(), pool, schema, pgqueue.Migrations); err != nil {
			b.Fatal(err)
		}
		dropAfterRun = append(dropAfterRun, schema)
		c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		// A Sweeper runs, as in a server: while it does, the client counts
		// its sends and acks for the per-minute statistics. It does not
		// vacuum, which BenchmarkSustained measures on its own.
		benchSweeper = pgqueue.NewSweeper(c, pgqueue.SweeperOptions{VacuumThreshold: -1})
		if err := benchSweeper.Start(context.Background()); err != nil {
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

var (
	benchPoolOnce sync.Once
	benchPoolP    *pgxpool.Pool
)

// benchPool is a pool of its own whose connections carry application_name
// pgqueue_bench, so the benchmarks can find their server processes and
// measure the CPU time they use.
func benchPool(b *testing.B) *pgxpool.Pool {
	b.Helper()
	benchPoolOnce.Do(func() {
		cfg, err := pgxpool.ParseConfig(pgtest.Pool(b).Config().ConnString())
		if err != nil {
			b.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["application_name"] = "pgqueue_bench"
		cfg.MaxConns = 16
		if benchPoolP, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	})
	return benchPoolP
}

// cpuTime is the CPU time (user+system) used so far by this process and by
// the Postgres server processes serving the benchmark pool. Postgres must
// run on this machine (its /proc is read); background processes (WAL
// writer, checkpointer) are not counted.
func cpuTime(b *testing.B) (self, server time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	rows, err := benchPool(b).Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = 'pgqueue_bench'`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which ends with ')'): utime is the
		// 12th, stime the 13th, in clock ticks (100 per second on Linux).
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		server += time.Duration(u+st) * 10 * time.Millisecond
	}
	return self, server
}

// parallel runs op b.N times split over clients goroutines and reports
// msgs/s (counting perOp messages per op) and the CPU time used per message
// by the client process and by the Postgres backends. On a shared machine
// msgs/s swings with other load; CPU time per message barely does, and
// 2 cores / CPU per message bounds what an idle 2-core machine could do.
func parallel(b *testing.B, clients, perOp int, op func(ctx context.Context) error) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	self0, server0 := cpuTime(b)
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
	msgs := float64(b.N * perOp)
	b.ReportMetric(msgs/elapsed.Seconds(), "msgs/s")
	self1, server1 := cpuTime(b)
	b.ReportMetric(float64((self1-self0).Microseconds())/msgs, "client-cpu-us/msg")
	b.ReportMetric(float64((server1-server0).Microseconds())/msgs, "server-cpu-us/msg")
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
// with Options.NoCoalescing: one statement and one commit per call (acks
// still commit asynchronously).
func BenchmarkNoCoalescing(b *testing.B) {
	e := benchSetup(b)
	plain, err := pgqueue.New(e.c.Pool(), pgqueue.Options{Schema: e.schema, NoCoalescing: true})
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
	receiveDeleteFrom(b, e, func() string { return q }, clients, batch)
}

// receiveDeleteFrom is receiveDelete from the queue queue() names at each op.
func receiveDeleteFrom(b *testing.B, e benchEnv, queue func() string, clients, batch int) {
	parallel(b, clients, batch, func(ctx context.Context) error {
		q := queue()
		msgs, err := e.c.Receive(ctx, acct, q, pgqueue.ReceiveOptions{Max: batch})
		if err != nil {
			return err
		}
		if len(msgs) != batch {
			return fmt.Errorf("received %d messages, want %d", len(msgs), batch)
		}
		acks := pgqueue.Leases(msgs)
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

// BenchmarkSustained keeps a queue busy (8 clients, each op sends 10
// messages, receives 10 and acks them, over a steady backlog of 10,000)
// with and without the Sweeper's VACUUM, and reports how large the
// messages table and its indexes grew and what a receive cost at the end.
// It shows why the Sweeper vacuums: without it (and with autovacuum off,
// as on the machine these figures come from) every receive walks the dead
// index entries that earlier receives and acks left at the head of the
// queue. Run it with a fixed count, e.g. -benchtime 20000x.
func BenchmarkSustained(b *testing.B) {
	for _, vacuum := range []bool{false, true} {
		b.Run(fmt.Sprintf("sweeper_vacuum=%v", vacuum), func(b *testing.B) {
			ctx := context.Background()
			// A schema of its own, so the table size is this run's alone.
			pool := benchPool(b)
			schema := fmt.Sprintf("bench_sustained_%d", time.Now().UnixNano())
			if err := migrate.Up(ctx, pool, schema, pgqueue.Migrations); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _, _ = pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
			c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
			if err != nil {
				b.Fatal(err)
			}
			e := benchEnv{c: c, schema: schema}
			q := "sustained"
			benchQueue(b, e, q, 10_000)
			var sw *pgqueue.Sweeper
			if vacuum {
				sw = pgqueue.NewSweeper(e.c, pgqueue.SweeperOptions{Interval: 100 * time.Millisecond, VacuumThreshold: 20_000})
				if err := sw.Start(ctx); err != nil {
					b.Fatal(err)
				}
			}
			msgs := make([]pgqueue.NewMessage, 10)
			for i := range msgs {
				msgs[i] = pgqueue.NewMessage{Body: benchBody}
			}
			parallel(b, 8, 10, func(ctx context.Context) error {
				if _, err := e.c.SendBatch(ctx, acct, q, msgs); err != nil {
					return err
				}
				got, err := e.c.Receive(ctx, acct, q, pgqueue.ReceiveOptions{Max: 10})
				if err != nil {
					return err
				}
				acks := pgqueue.Leases(got)
				_, err = e.c.Ack(ctx, acct, q, acks)
				return err
			})
			if sw != nil {
				if err := sw.Stop(ctx); err != nil {
					b.Fatal(err)
				}
			}
			var size int64
			ident := pgx.Identifier{e.schema, "messages"}.Sanitize()
			if err := e.c.Pool().QueryRow(ctx, `SELECT pg_total_relation_size($1)`, ident).Scan(&size); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(size)/(1<<20), "table+index-MB")
			start := time.Now()
			for range 20 {
				if _, err := e.c.Receive(ctx, acct, q, pgqueue.ReceiveOptions{Max: 10}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/20, "final-receive-us")
			if _, err := e.c.Purge(ctx, acct, q); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkInFlight compares how many coalesced statements per queue run
// at once, on the reference workloads.
func BenchmarkInFlight(b *testing.B) {
	e := benchSetup(b)
	msgs := make([]pgqueue.NewMessage, 10)
	for i := range msgs {
		msgs[i] = pgqueue.NewMessage{Body: benchBody}
	}
	for _, k := range []int{1, 2, 4, 8} {
		c, err := pgqueue.New(e.c.Pool(), pgqueue.Options{Schema: e.schema})
		if err != nil {
			b.Fatal(err)
		}
		pgqueue.SetCoalesceInFlight(c, k)
		b.Run(fmt.Sprintf("in_flight=%d/send_batch/clients=8/batch=10", k), func(b *testing.B) {
			benchQueue(b, e, "sendb_empty", 0)
			parallel(b, 8, 10, func(ctx context.Context) error {
				_, err := c.SendBatch(ctx, acct, "sendb_empty", msgs)
				return err
			})
		})
		b.Run(fmt.Sprintf("in_flight=%d/receive_delete/backlog=500k/clients=8/batch=10", k), func(b *testing.B) {
			benchQueue(b, e, "recv_500k", 500_000+int64(b.N*10))
			receiveDelete(b, benchEnv{c: c, schema: e.schema}, "recv_500k", 8, 10)
		})
	}
}
