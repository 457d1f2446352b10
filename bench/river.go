package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is the job River runs for the comparison.
type noopArgs struct {
	Latency bool `json:"latency,omitempty"`
}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done func(job *river.Job[noopArgs])
}

func (w *noopWorker) Work(_ context.Context, job *river.Job[noopArgs]) error {
	w.done(job)
	return nil
}

// benchRiver does what benchSluice does with River, tuned for speed as the
// issue asks: FetchCooldown 1ms, MaxWorkers 1000.
func benchRiver(ctx context.Context, pool *pgxpool.Pool, c config) (result, error) {
	schema, drop := freshSchema(ctx, pool, "bench_river")
	defer drop()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return result{}, err
	}
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return result{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return result{}, err
	}

	var worked atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	measuring := atomic.Bool{}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{done: func(job *river.Job[noopArgs]) {
		now := time.Now()
		worked.Add(1)
		if job.Args.Latency && measuring.Load() {
			mu.Lock()
			latencies = append(latencies, now.Sub(job.CreatedAt))
			mu.Unlock()
		}
	}})
	client, err := river.NewClient(driver, &river.Config{
		Schema:        schema,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1000}},
		Workers:       workers,
		FetchCooldown: time.Millisecond,
	})
	if err != nil {
		return result{}, err
	}

	params := make([]river.InsertManyParams, 1000)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	for sent := 0; sent < c.n; sent += len(params) {
		if _, err := client.InsertManyFast(ctx, params[:min(len(params), c.n-sent)]); err != nil {
			return result{}, err
		}
	}

	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return result{}, err
	}
	defer client.Stop(context.WithoutCancel(ctx))
	for worked.Load() < int64(c.n) {
		if time.Since(start) > 10*time.Minute {
			return result{}, fmt.Errorf("drain stalled at %d of %d", worked.Load(), c.n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	r := result{drainElapsed: elapsed, drainPerSec: float64(c.n) / elapsed.Seconds()}

	measuring.Store(true)
	var sent int64
	if err := pace(ctx, c.rate, c.duration, func() error {
		sent++
		_, err := client.Insert(ctx, noopArgs{Latency: true}, nil)
		return err
	}); err != nil {
		return result{}, err
	}
	// Wait for the last sends to be worked.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(latencies)
		mu.Unlock()
		if int64(n) >= sent {
			break
		}
	}
	mu.Lock()
	r.sent = sent
	r.samples = len(latencies)
	r.p50, r.p99 = percentiles(latencies)
	mu.Unlock()
	return r, nil
}
