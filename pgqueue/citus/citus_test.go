//go:build citus

// The Citus suite, run by scripts/test-citus (`make test-citus`) against
// the local cluster it starts: TEST_DATABASE_URL is the coordinator and
// SLUICE_CITUS_DIR the cluster's folder (for restarting a worker).
package citus_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/citus"
)

// placementSQL counts, per worker, the queues whose messages shard it
// holds; docs/scale-out.md shows the same query.
const placementSQL = `
SELECT n.nodename || ':' || n.nodeport AS worker, count(*) AS queues
  FROM queues q
  JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('messages', q.id)
  JOIN pg_dist_node n ON n.groupid = p.groupid
 GROUP BY 1
 ORDER BY 1`

func TestDistributeIsIdempotent(t *testing.T) {
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx := context.Background()
	if err := citus.Distribute(ctx, pool, schema); err != nil {
		t.Fatalf("distribute again: %v", err)
	}
	var distributed, reference int
	err := pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE partmethod = 'h'), count(*) FILTER (WHERE partmethod = 'n')
		  FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
		  JOIN pg_namespace s ON s.oid = c.relnamespace
		 WHERE s.nspname = $1`, schema).Scan(&distributed, &reference)
	if err != nil {
		t.Fatal(err)
	}
	if distributed != 6 || reference != 5 {
		t.Fatalf("schema %s: %d distributed and %d reference tables, want 6 and 5", schema, distributed, reference)
	}
}

func TestHundredQueuesSpreadOverBothWorkers(t *testing.T) {
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx := context.Background()
	for i := range 100 {
		if _, err := pool.Exec(ctx, fmt.Sprintf("SELECT %s.create_queue($1)", schema), fmt.Sprintf("q%03d", i)); err != nil {
			t.Fatalf("create queue %d: %v", i, err)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET search_path = "+schema); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET search_path")
	rows, err := conn.Query(ctx, placementSQL)
	if err != nil {
		t.Fatalf("placement query: %v", err)
	}
	per := map[string]int{}
	total := 0
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		per[w] = n
		total += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("queues per worker: %v", per)
	if len(per) != 2 || total != 100 {
		t.Fatalf("100 queues placed as %v (%d in all), want them on both workers", per, total)
	}
}

// A worker killed with pg_ctl -m immediate and started again loses no send
// that was acknowledged (its commit returned): every sequence a sender got
// back is in the queue afterwards. Sends that fail while the worker is down
// were never acknowledged and are retried.
func TestWorkerCrashLosesNoAcknowledgedSend(t *testing.T) {
	dir := os.Getenv("SLUICE_CITUS_DIR")
	if dir == "" {
		t.Fatal("SLUICE_CITUS_DIR is not set: run this suite with scripts/test-citus, which starts the cluster")
	}
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const queues = 8
	for i := range queues {
		if _, err := pool.Exec(ctx, fmt.Sprintf("SELECT %s.create_queue($1)", schema), fmt.Sprintf("q%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	acked := map[string][]int64{}
	failures := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range queues {
		wg.Add(1)
		go func(queue string) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var seq int64
				err := pool.QueryRow(ctx, fmt.Sprintf("SELECT %s.send($1, $2)", schema), queue, fmt.Sprintf(`{"n":%d}`, n)).Scan(&seq)
				mu.Lock()
				if err != nil {
					failures++
				} else {
					acked[queue] = append(acked[queue], seq)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}(fmt.Sprintf("q%d", i))
	}
	time.Sleep(time.Second)
	out, err := exec.CommandContext(ctx, "../../scripts/citus", "restart-worker", dir, "1", "immediate").CombinedOutput()
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("restart worker 1: %v: %s", err, out)
	}
	// The senders keep going until a read of every shard (both workers)
	// succeeds again, and a second more.
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := 0
		for _, s := range acked {
			n += len(s)
		}
		mu.Unlock()
		var stored int
		if pool.QueryRow(ctx, fmt.Sprintf("SELECT count(*)::int FROM %s.messages", schema)).Scan(&stored) == nil {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("the cluster took no query a minute after the worker restart (%d sends acknowledged)", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	total := 0
	for queue, seqs := range acked {
		var id int64
		if err := pool.QueryRow(ctx, fmt.Sprintf("SELECT id FROM %s.queues WHERE name = $1", schema), queue).Scan(&id); err != nil {
			t.Fatalf("queue %s: %v", queue, err)
		}
		rows, err := pool.Query(ctx, fmt.Sprintf("SELECT sequence FROM %s.messages WHERE queue_id = $1", schema), id)
		if err != nil {
			t.Fatalf("read queue %s: %v", queue, err)
		}
		stored := map[int64]bool{}
		for rows.Next() {
			var s int64
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			stored[s] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("read queue %s: %v", queue, err)
		}
		var missing []int64
		for _, s := range seqs {
			if !stored[s] {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			t.Errorf("queue %s: %d of %d acknowledged sends lost after the worker crash: sequences %v", queue, len(missing), len(seqs), missing)
		}
		total += len(seqs)
	}
	t.Logf("%d sends acknowledged over %d queues, %d failed while the worker was down, none lost", total, queues, failures)
	if failures == 0 {
		t.Errorf("no send failed: worker 1 was not down while sending, so the test proved nothing")
	}
}
