package reliability_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/reliability"
	"github.com/sluicehq/sluice/triggers"
)

// TestSustainedLoad: sends over HTTP and processing at a steady rate. The
// error rate must stay under 0.1%, nothing may be lost, and the queue
// tables' size must stay bounded (no runaway bloat); the p99
// send-to-function latency is reported.
func TestSustainedLoad(t *testing.T) {
	t.Parallel()
	duration := reliability.Size(20*time.Second, 10*time.Minute)
	const workers, every, batch = 2, 50 * time.Millisecond, 5
	env := reliability.NewEnv(t, `
queues:
  sustained: {visibility_timeout_seconds: 30}
functions:
  record: {build: ./record, reactor: true}
triggers:
  - {queue: sustained, function: record, batch_size: 10, concurrency: 2}
`, reliability.EnvOptions{})
	ctx := context.Background()
	id, secret, err := env.Server.CreateKey(ctx, pgqueue.DefaultAccount, []string{"mq:*"}, nil, "reliability")
	if err != nil {
		t.Fatal(err)
	}
	var clients []*client.Client
	for _, name := range []string{"a", "b"} {
		n := env.StartNode(name)
		c, err := client.New("http://"+n.Addr, id, secret, client.WithAccount(pgqueue.DefaultAccount))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	bodies := make([]any, batch)
	for i := range bodies {
		bodies[i] = map[string]any{"order": i, "note": "sustained load"}
	}
	var turn atomic.Int64
	start := time.Now()
	load := reliability.StartLoad(ctx, workers, every, func(ctx context.Context) ([]int64, error) {
		return clients[turn.Add(1)%int64(len(clients))].MQ.SendBatch(ctx, "sustained", bodies)
	})
	// The queue tables' size, at each tenth of the run.
	var sizes []int64
	for range 10 {
		time.Sleep(duration / 10)
		size, err := tableBytes(ctx, env, "messages", "dead_letters")
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, size)
	}
	sends := load.Stop()
	ran := time.Since(start)
	if _, err := env.WaitDrained(ctx, "sustained", time.Minute); err != nil {
		t.Error(err)
	}
	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	v := reliability.Check(reliability.Acked(sends), logs, "sustained", reliability.CheckOptions{})
	var lat []float64
	for _, x := range logs.Execs {
		lat = append(lat, x.LatencyMS)
	}
	errRate := float64(reliability.Failed(sends)) / float64(max(len(sends), 1))
	kib := func(b int64) string { return fmt.Sprintf("%d KiB", b>>10) }
	t.Logf("sustained load %s over HTTP (2 nodes; %d sends of %d, %.0f msgs/s): error rate %.3f%%; send-to-function p50/p99/max %.1f/%.1f/%.1f ms; queue tables %s at 10%%, %s at 50%%, %s at the end (peak %s); %s",
		ran.Round(time.Second), len(sends), batch, float64(len(reliability.Acked(sends)))/ran.Seconds(), 100*errRate,
		reliability.Percentile(lat, 50), reliability.Percentile(lat, 99), reliability.Percentile(lat, 100),
		kib(sizes[0]), kib(sizes[4]), kib(sizes[9]), kib(slicesMax(sizes)), v)
	if errRate >= 0.001 {
		t.Errorf("error rate %.3f%%, want under 0.1%%", 100*errRate)
	}
	// Bloat is bounded when the second half of the run does not keep
	// growing the tables: its end is within twice its start (plus 1 MiB
	// for the first vacuum cycles of a short run).
	if sizes[9] > 2*sizes[4]+1<<20 {
		t.Errorf("queue tables grew from %s at half-time to %s at the end: bloat not bounded", kib(sizes[4]), kib(sizes[9]))
	}
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
}

func slicesMax(xs []int64) int64 {
	m := int64(0)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// tableBytes sums pg_total_relation_size (heap, indexes, TOAST) of tables
// of the scenario's schema.
func tableBytes(ctx context.Context, env *reliability.Env, tables ...string) (int64, error) {
	var total int64
	for _, name := range tables {
		var n int64
		if err := env.Pool.QueryRow(ctx, "SELECT pg_total_relation_size($1::regclass)", env.Schema+"."+name).Scan(&n); err != nil {
			return 0, fmt.Errorf("size of %s: %w", name, err)
		}
		total += n
	}
	return total, nil
}

// TestBacklog: a queue holding a large backlog. Receiving from it must cost
// about what it costs on an almost empty queue (within 1.5×, asserted by
// the full suite, reported by the short one); the drain rate of a serve
// process is reported.
func TestBacklog(t *testing.T) {
	// The full suite asserts a latency ratio here: it runs alone, before
	// the parallel scenarios, whose load would skew one side of it.
	if !reliability.Full() {
		t.Parallel()
	}
	backlog := reliability.Size(20000, 1000000)
	cluster := reliability.PrivateCluster(t, false)
	env := reliability.NewEnv(t, `
queues:
  backlog: {visibility_timeout_seconds: 30}
functions:
  noop: {build: ./noop, reactor: true}
`, reliability.EnvOptions{URL: cluster.URL()})
	ctx := context.Background()
	q := env.Queue
	const acct, rounds, warmup = pgqueue.DefaultAccount, 200, 20
	// receiveAck times receive (10) + ack, the dispatcher's round trip,
	// after a few rounds of warm-up.
	receiveAck := func() []float64 {
		var ms []float64
		for i := range rounds + warmup {
			start := time.Now()
			got, err := q.Receive(ctx, acct, "backlog", pgqueue.ReceiveOptions{Max: 10})
			if err != nil || len(got) == 0 {
				t.Fatalf("receive: %d messages, %v", len(got), err)
			}
			acks := pgqueue.Leases(got)
			if _, err := q.Ack(ctx, acct, "backlog", acks); err != nil {
				t.Fatal(err)
			}
			if i >= warmup {
				ms = append(ms, float64(time.Since(start).Microseconds())/1000)
			}
		}
		return ms
	}
	// Nearly empty: the queue holds just what one round takes.
	if _, err := reliability.SendN(ctx, q, "backlog", (rounds+warmup)*10, 1000, nil); err != nil {
		t.Fatal(err)
	}
	analyze := func() {
		if _, err := env.Pool.Exec(ctx, "ANALYZE "+env.Schema+".messages"); err != nil {
			t.Fatal(err)
		}
	}
	analyze()
	empty := receiveAck()
	fill := time.Now()
	if _, err := reliability.SendN(ctx, q, "backlog", backlog, 1000, nil); err != nil {
		t.Fatal(err)
	}
	filled := time.Since(fill)
	analyze()
	full := receiveAck()
	e50, f50 := reliability.Percentile(empty, 50), reliability.Percentile(full, 50)
	e99, f99 := reliability.Percentile(empty, 99), reliability.Percentile(full, 99)

	// Drain what is left with the noop function, batches of 100.
	left := backlog - (rounds+warmup)*10
	env.StartNode("a")
	if _, err := env.Server.Triggers().Put(ctx, triggers.Trigger{Account: acct, Name: "drain", Kind: triggers.KindQueue,
		Function: "noop", Queue: "backlog", BatchSize: 100, Concurrency: 4, LeaseExtension: true, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	drained, err := env.WaitDrained(ctx, "backlog", reliability.Size(5*time.Minute, 60*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	st, err := q.Stats(ctx, acct, "backlog")
	if err != nil || st.DLQ != 0 {
		t.Errorf("after the drain: %+v %v; want no dead letters", st, err)
	}
	t.Logf("backlog of %d (sent in %.1fs, %.0f msgs/s): receive(10)+ack p50/p99 %.2f/%.2f ms on a nearly empty queue, %.2f/%.2f ms on the backlog (%.2f× at p50); one serve process drained %d messages in %.1fs: %.0f msgs/s",
		backlog, filled.Seconds(), float64(backlog)/filled.Seconds(), e50, e99, f50, f99, f50/e50, left, drained.Seconds(), float64(left)/drained.Seconds())
	if f50 > 1.5*e50 {
		msg := fmt.Sprintf("receive+ack on the backlog takes %.2f ms at p50, %.2f× the %.2f ms on a nearly empty queue (want within 1.5×)", f50, f50/e50, e50)
		if reliability.Full() {
			t.Error(msg)
		} else {
			t.Log(msg + "; asserted only by the full suite")
		}
	}
}
