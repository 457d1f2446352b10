package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

// benchIdle runs an engine with queues idle queue triggers for d and
// reports the CPU use of the process and of each node, and the database
// transactions it caused.
func benchIdle(ctx context.Context, pool *pgxpool.Pool, queues int, d time.Duration, onCitus bool, nodes []node) error {
	schema, drop := freshSchema(ctx, pool, "bench_idle")
	defer drop()
	if err := migrateSluice(ctx, pool, schema, onCitus); err != nil {
		return err
	}
	qc, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		return err
	}
	reg, err := functions.NewRegistry(pool, schema, nil)
	if err != nil {
		return err
	}
	store, err := triggers.NewStore(pool, schema)
	if err != nil {
		return err
	}
	path, err := wasmbuild.Build(ctx, "noop", wasmbuild.Reactor)
	if err != nil {
		return err
	}
	module, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := reg.Deploy(ctx, account, "noop", module, functions.Config{MemoryMiB: memoryMiB, Timeout: 30 * time.Second}, ""); err != nil {
		return err
	}
	for i := range queues {
		name := fmt.Sprintf("idle-%03d", i)
		if _, err := qc.CreateQueue(ctx, account, name, pgqueue.Settings{}); err != nil {
			return err
		}
		t := triggers.Trigger{Account: account, Kind: triggers.KindQueue, Queue: name, Function: "noop", Enabled: true, LeaseExtension: true}
		t.Name = t.DerivedName()
		if _, err := store.Put(ctx, t); err != nil {
			return err
		}
	}
	listener, err := pgqueue.NewListener(pool, pgqueue.ListenerOptions{Schema: schema})
	if err != nil {
		return err
	}
	if err := listener.Start(ctx); err != nil {
		return err
	}
	defer listener.Stop(context.WithoutCancel(ctx))
	lqc, err := pgqueue.New(pool, pgqueue.Options{Schema: schema, Listener: listener})
	if err != nil {
		return err
	}
	rt, err := runtime.New(ctx, runtime.Config{})
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	eng, err := triggers.NewEngine(triggers.Config{Pool: pool, Schema: schema, Queue: lqc, Listener: listener,
		Registry: reg, Runtime: rt, Logger: zerolog.New(os.Stderr).Level(zerolog.WarnLevel)})
	if err != nil {
		return err
	}
	if err := eng.Start(ctx); err != nil {
		return err
	}
	defer eng.Stop(context.WithoutCancel(ctx))
	time.Sleep(3 * time.Second) // settle: functions loaded, pollers backed off

	xacts := func() int64 {
		var n int64
		_ = pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
		return n
	}
	cpu0, err := cpuSnapshot(nodes)
	if err != nil {
		return err
	}
	x0, t0 := xacts(), time.Now()
	time.Sleep(d)
	x1, elapsed := xacts(), time.Since(t0)
	cpu1, err := cpuSnapshot(nodes)
	if err != nil {
		return err
	}
	fmt.Printf("idle: %d queue triggers for %s: %.1f database transactions/s (whole database, includes other clients); CPU, %% of one core:",
		queues, elapsed.Round(time.Second), float64(x1-x0-2)/elapsed.Seconds())
	for _, u := range cpuSince(cpu0, cpu1) {
		fmt.Printf(" %s %.2f%%", u.name, 100*float64(u.cpu)/float64(elapsed))
	}
	fmt.Println()
	return nil
}
