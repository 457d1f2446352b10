//go:build citus

package citus_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// A NOTIFY issued on the worker holding a queue's shard (where a write
// delegated to that worker runs) wakes a long-poll receive waiting through
// the coordinator within a second, where the poll fallback would have taken
// the whole wait (20 s); after that worker restarts, the listener
// reconnects to it, says so, and such NOTIFYs wake long polls again.
func TestWorkerNotifyWakesLongPollOnCoordinator(t *testing.T) {
	dir := os.Getenv("SLUICE_CITUS_DIR")
	if dir == "" {
		t.Fatal("SLUICE_CITUS_DIR is not set: run this suite with scripts/test-citus, which starts the cluster")
	}
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := pool.Exec(ctx, fmt.Sprintf("SELECT %s.create_queue('q')", schema)); err != nil {
		t.Fatal(err)
	}
	// The worker holding the queue's shard, as the coordinator names it.
	var host string
	var port uint16
	if err := pool.QueryRow(ctx, fmt.Sprintf(`
		SELECT n.nodename, n.nodeport
		  FROM %[1]s.queues q
		  JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('%[1]s.messages', q.id)
		  JOIN pg_dist_node n ON n.groupid = p.groupid
		 WHERE q.name = 'q'`, schema)).Scan(&host, &port); err != nil {
		t.Fatalf("find the worker of queue q: %v", err)
	}
	coord := pool.Config().ConnConfig
	worker := coord.Copy()
	worker.Host, worker.Port, worker.Fallbacks = host, port, nil
	n := int(port) - int(coord.Port) // scripts/citus: worker N listens on the coordinator's port + N
	t.Logf("queue q is on worker %d (%s:%d)", n, host, port)

	errs := make(chan error, 100)
	l, err := pgqueue.NewListener(pool, pgqueue.ListenerOptions{Schema: schema, OnError: func(err error) {
		select {
		case errs <- err:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Stop(context.Background())
	c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema, Listener: l, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}

	// round starts a long poll on the empty queue, sends a message delayed
	// by a second through the coordinator (a delayed send NOTIFYs nobody),
	// and once it is ready, NOTIFYs on the worker as the send path does.
	// Only that NOTIFY can end the long poll before its 20 s wait.
	round := func(name string) {
		t.Helper()
		type result struct {
			msgs []pgqueue.Message
			err  error
			at   time.Time
		}
		got := make(chan result, 1)
		go func() {
			msgs, err := c.Receive(ctx, pgqueue.DefaultAccount, "q", pgqueue.ReceiveOptions{Wait: pgqueue.MaxWait})
			got <- result{msgs, err, time.Now()}
		}()
		time.Sleep(300 * time.Millisecond) // the long poll subscribes and waits
		var seq int64
		deadline := time.Now().Add(30 * time.Second)
		for {
			// After a worker restart the coordinator's first statement
			// to it may fail on a dead cached connection.
			err := pool.QueryRow(ctx, fmt.Sprintf("SELECT %s.send('q', '{}', 1)", schema)).Scan(&seq)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: send through the coordinator: %v", name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(1300 * time.Millisecond) // the message becomes ready
		select {
		case r := <-got:
			t.Fatalf("%s: the long poll returned %v, %v before any NOTIFY", name, r.msgs, r.err)
		default:
		}
		wc, err := pgx.ConnectConfig(ctx, worker)
		if err != nil {
			t.Fatalf("%s: connect to worker %s:%d: %v", name, host, port, err)
		}
		defer wc.Close(context.Background())
		notified := time.Now()
		if _, err := wc.Exec(ctx, "SELECT pg_notify($1, $2)", schema+"_wake", pgqueue.DefaultAccount+"/q"); err != nil {
			t.Fatalf("%s: notify on worker %s:%d: %v", name, host, port, err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("%s: long poll: %v", name, r.err)
		}
		if len(r.msgs) != 1 || r.msgs[0].Sequence != seq {
			t.Fatalf("%s: long poll returned %v, want message %d", name, r.msgs, seq)
		}
		lat := r.at.Sub(notified)
		t.Logf("%s: the long poll returned %v after the NOTIFY on the worker", name, lat)
		if lat > time.Second {
			t.Fatalf("%s: the long poll returned %v after the NOTIFY on the worker, want < 1s: it was not woken", name, lat)
		}
		if err := c.Delete(ctx, pgqueue.DefaultAccount, "q", seq, r.msgs[0].Receipt); err != nil {
			t.Fatal(err)
		}
	}
	round("before the restart")

	sub, err := l.Subscribe(ctx, pgqueue.DefaultAccount, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if out, err := exec.CommandContext(ctx, "../../scripts/citus", "restart-worker", dir, fmt.Sprint(n)).CombinedOutput(); err != nil {
		t.Fatalf("restart worker %d: %v: %s", n, err, out)
	}
	// The listener wakes every subscriber once it is connected again
	// (notifications may have been missed meanwhile), and reports the loss.
	select {
	case <-sub.C():
	case <-time.After(30 * time.Second):
		t.Fatalf("no wake-up within 30 s of worker %d's restart: the listener did not reconnect", n)
	}
	lost := fmt.Sprintf("connection to %s:%d lost", host, port)
	var reported []string
	for len(errs) > 0 {
		reported = append(reported, (<-errs).Error())
	}
	if !strings.Contains(strings.Join(reported, "\n"), lost) {
		t.Fatalf("the listener did not report %q; reported: %q", lost, reported)
	}
	t.Logf("reported while worker %d restarted: %q", n, reported)
	round("after the restart")
}
