package main

import (
	"context"
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

	var pr probe
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{done: func(job *river.Job[noopArgs]) {
		if job.Args.Latency {
			pr.observe(0, time.Since(job.CreatedAt))
		} else {
			pr.observe(1)
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

	defer client.Stop(context.WithoutCancel(ctx))
	return pr.run(ctx, c, func() error { return client.Start(ctx) }, func() error {
		_, err := client.Insert(ctx, noopArgs{Latency: true}, nil)
		return err
	})
}
