package reliability_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/internal/localpg"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/reliability"
)

// TestPostgresRestart: a private, durable cluster stopped in immediate mode
// (as a crash would), left down for a second, and started again — `pg_ctl
// restart -m immediate` with a pause, so that sends land in the outage —
// while clients send over HTTP and two serve processes process. No
// acknowledged send may be lost (a send that succeeded was durable), every
// send made entirely while Postgres was down is refused, processing
// resumes within 30 s of Postgres being back, and the serve processes'
// connections stay within their pool caps.
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

	// from: the stop was asked for; down: the server is gone; up: the
	// start was asked for; to: the server accepts connections again.
	type window struct{ from, down, up, to time.Time }
	var outages []window
	for range restarts {
		time.Sleep(3 * time.Second)
		w := window{from: time.Now()}
		if err := cluster.Crash(ctx); err != nil {
			t.Fatal(err)
		}
		w.down = time.Now()
		time.Sleep(time.Second)
		w.up = time.Now()
		if err := cluster.Start(ctx, localpg.Options{Durable: true}); err != nil {
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
	// came back after it. A send made entirely while the server was gone
	// must be refused; one overlapping the stop or the start may go
	// either way (and if acknowledged, the check above holds it durable).
	for i, w := range outages {
		errs, oks, inside, insideOK := 0, 0, 0, 0
		for _, r := range sends {
			if r.Done.Before(w.from) || r.At.After(w.to) {
				continue
			}
			if r.Err != nil {
				errs++
			} else {
				oks++
			}
			if r.At.After(w.down) && r.Done.Before(w.up) {
				inside++
				if r.Err == nil {
					insideOK++
					t.Errorf("restart %d: a send made while Postgres was down (%s to %s) was acknowledged: sequences %v",
						i+1, r.At.Format(time.StampMilli), r.Done.Format(time.StampMilli), r.Seqs)
				}
			}
		}
		if inside == 0 {
			t.Errorf("restart %d: no send was made entirely while Postgres was down (%s): the outage went untested",
				i+1, w.up.Sub(w.down).Round(time.Millisecond))
		}
		resume := time.Duration(-1)
		for _, x := range logs.Execs {
			if x.StartMS >= w.to.UnixMilli() {
				if d := time.UnixMilli(x.StartMS).Sub(w.to); resume < 0 || d < resume {
					resume = d
				}
			}
		}
		t.Logf("restart %d: Postgres down and back in %s; sends overlapping it: %d refused, %d acknowledged (each checked durable); made while it was down: %d, %d acknowledged; processing resumed %s after",
			i+1, w.to.Sub(w.from).Round(time.Millisecond), errs, oks, inside, insideOK, resume.Round(time.Millisecond))
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
