package main

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/pgqueue"
)

// benchQueue is the "queue" system: the queue core alone, no trigger and
// no function. c.concurrency consumers drain c.n preloaded messages with
// receives of c.batch and one ack per receive (a consumer loop as users
// write it by hand); then one consumer, woken by the Listener as a
// trigger's dispatcher is, takes messages sent at c.rate msg/s, whose
// latency is from the send's transaction start (created_at) to the
// receive's return: a send's commit, the wake-up and a receive's commit,
// which every trigger's latency includes.
func benchQueue(ctx context.Context, pool *pgxpool.Pool, c config) (result, error) {
	schema, drop := freshSchema(ctx, pool, "bench_queue")
	defer drop()
	if err := migrateSluice(ctx, pool, schema, c.citus); err != nil {
		return result{}, err
	}
	listener, qc, stopListener, err := listen(ctx, pool, schema)
	if err != nil {
		return result{}, err
	}
	defer stopListener()
	if err := makeQueues(ctx, qc, c); err != nil {
		return result{}, err
	}

	var pr probe
	runCtx, stop := context.WithCancel(ctx)
	var consumers sync.WaitGroup
	failed := make(chan error, 1) // the first consumer's error
	consume := func(queue string, latency bool) error {
		sub, err := listener.Subscribe(runCtx, account, queue)
		if err != nil {
			return err
		}
		consumers.Go(func() {
			defer sub.Close()
			err := consumeQueue(runCtx, qc, sub, queue, c.batch, func(msgs []pgqueue.Message, at time.Time) {
				if !latency {
					pr.observe(len(msgs))
					return
				}
				lat := make([]time.Duration, len(msgs))
				for i, m := range msgs {
					lat[i] = at.Sub(m.CreatedAt)
				}
				pr.observe(0, lat...)
			})
			if err != nil && runCtx.Err() == nil {
				select {
				case failed <- err:
				default:
				}
			}
		})
		return nil
	}
	r, err := pr.run(ctx, c, func() error {
		for range c.concurrency {
			if err := consume("drain", false); err != nil {
				return err
			}
		}
		return consume("latency", true)
	}, func() error {
		_, err := qc.SendBatch(ctx, account, "latency", []pgqueue.NewMessage{{Body: benchBody}})
		return err
	})
	stop()
	consumers.Wait()
	if err == nil {
		select {
		case err = <-failed:
		default:
		}
	}
	return r, err
}

// consumeQueue receives up to batch messages of queue at a time and acks
// them, handing each receive's messages and the time it returned to got,
// until ctx ends; an empty receive waits for a wake-up of sub (at most
// 100 ms).
func consumeQueue(ctx context.Context, qc *pgqueue.Client, sub *pgqueue.Subscription, queue string, batch int,
	got func([]pgqueue.Message, time.Time)) error {
	opts := pgqueue.ReceiveOptions{Max: batch, VisibilityTimeout: 30 * time.Second}
	for ctx.Err() == nil {
		msgs, err := qc.Receive(context.WithoutCancel(ctx), account, queue, opts)
		if err != nil {
			return err
		}
		at := time.Now()
		if len(msgs) == 0 {
			select {
			case <-sub.C():
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		got(msgs, at)
		acks := pgqueue.Leases(msgs)
		if _, err := qc.Ack(context.WithoutCancel(ctx), account, queue, acks); err != nil {
			return err
		}
	}
	return nil
}
