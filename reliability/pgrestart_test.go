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
)

// TestPostgresRestart: `pg_ctl restart -m immediate` of a private, durable
// cluster while clients send over HTTP and two serve processes process.
// No acknowledged send may be lost (a send that succeeded was durable),
// processing resumes within 30 s of Postgres being back, and the serve
// processes' connections stay within their pool caps.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	restarts := reliability.Size(1, 3)
	const nodes, maxConns = 2, 6
	cluster := reliability.PrivateCluster(t, true)
	env := reliability.NewEnv(t, `
queues:
  work: {visibility_timeout_seconds: 5, max_receive_count: 100}
functions:
  record: {build: ./record, reactor: true, timeout: 10s, env: {RECORD_SLEEP_MS: "20"}}
triggers:
  - {queue: work, function: record, batch_size: 10, concurrency: 2}
`, reliability.EnvOptions{URL: cluster.URL()})
	ctx := context.Background()
	id, secret, err := env.Server.CreateKey(ctx, pgqueue.DefaultAccount, []string{"mq:*"}, nil, "reliability")
	if err != nil {
		t.Fatal(err)
	}
	var clients []*client.Client
	for i := range nodes {
		n := env.StartNode(fmt.Sprintf("n%d", i))
		c, err := client.New("http://"+n.Addr, id, secret, client.WithAccount(pgqueue.DefaultAccount))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	var turn atomic.Int64
	load := reliability.StartLoad(ctx, 4, 50*time.Millisecond, func(ctx context.Context) ([]int64, error) {
		c := clients[turn.Add(1)%int64(len(clients))]
		return c.MQ.SendBatch(ctx, "work", []any{map[string]int{"a": 1}, map[string]int{"b": 2}, map[string]int{"c": 3}})
	})

	// Sample the serve processes' connections all along.
	peakConns := reliability.Peak(200*time.Millisecond, func(ctx context.Context) (int64, error) {
		n, err := env.ServeConns(ctx)
		return int64(n), err
	})

	type window struct{ from, to time.Time }
	var outages []window
	for range restarts {
		time.Sleep(3 * time.Second)
		w := window{from: time.Now()}
		if err := cluster.Restart(ctx, true); err != nil {
			t.Fatal(err)
		}
		w.to = time.Now()
		outages = append(outages, w)
	}
	time.Sleep(5 * time.Second)
	sends := load.Stop()
	drain, err := env.WaitDrained(ctx, "work", time.Minute)
	if err != nil {
		t.Error(err)
	}
	maxSeen := peakConns()
	for _, n := range env.Nodes() {
		if !n.Alive() {
			t.Errorf("node %s died during the restarts", n.Name)
		}
	}
	logs, err := env.ReadLogs()
	if err != nil {
		t.Fatal(err)
	}
	acked := reliability.Acked(sends)
	v := reliability.Check(acked, logs, "work", reliability.CheckOptions{AcksMayBeLost: true, IgnoreUnsent: true})

	// Errors and successes around each restart, and how soon processing
	// came back after it.
	for i, w := range outages {
		errs, oks := 0, 0
		for _, r := range sends {
			if r.Done.Before(w.from) || r.At.After(w.to) {
				continue
			}
			if r.Err != nil {
				errs++
			} else {
				oks++
			}
		}
		resume := time.Duration(-1)
		for _, x := range logs.Execs {
			if x.StartMS >= w.to.UnixMilli() {
				if d := time.UnixMilli(x.StartMS).Sub(w.to); resume < 0 || d < resume {
					resume = d
				}
			}
		}
		t.Logf("restart %d: Postgres down and back in %s; sends overlapping it: %d refused, %d acknowledged (each checked durable below); processing resumed %s after",
			i+1, w.to.Sub(w.from).Round(time.Millisecond), errs, oks, resume.Round(time.Millisecond))
		if resume < 0 || resume > 30*time.Second {
			t.Errorf("restart %d: processing did not resume within 30s (%s)", i+1, resume)
		}
	}
	limit := int64(nodes * (maxConns + 1)) // each pool plus its LISTEN connection
	t.Logf("postgres restart x%d: %d sends over HTTP, %d refused; %s; drained %.1fs after the load stopped; serve connections at most %d (cap %d)",
		restarts, len(sends), reliability.Failed(sends), v, drain.Seconds(), maxSeen, limit)
	if maxSeen > limit {
		t.Errorf("serve processes held %d connections, more than their pools' cap %d", maxSeen, limit)
	}
	if err := v.Err(); err != nil {
		t.Errorf("broken promises:\n%v", err)
	}
}
