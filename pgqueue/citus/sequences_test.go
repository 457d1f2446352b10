//go:build citus

package citus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// Within a queue, sequences grow with send time whatever drew them: plain
// sends, batches, grouped sends (drawn under the group's lock, after a
// hand-over too), sends with a dedup key and a redriven grouped dead
// letter (which rejoins its group with a new sequence); and every one of
// them comes from the range of the worker holding the queue's shard
// (Citus gives node group g the range from g × 2^48), not from the
// coordinator's (group 0). Checked for a queue on each worker.
func TestSequencesDrawnOnTheShardsWorker(t *testing.T) {
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	const acct = pgqueue.DefaultAccount

	// Queues until one is on each worker; group id of each queue's worker.
	onGroup := map[int64]string{}
	for i := 0; len(onGroup) < 2; i++ {
		if i == 50 {
			t.Fatalf("50 queues and still not one on each worker: %v", onGroup)
		}
		name := fmt.Sprintf("q%d", i)
		if _, err := c.CreateQueue(ctx, acct, name, pgqueue.Settings{}); err != nil {
			t.Fatal(err)
		}
		var group int64
		if err := pool.QueryRow(ctx, fmt.Sprintf(`
			SELECT p.groupid
			  FROM %[1]s.queues q
			  JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('%[1]s.messages', q.id)
			 WHERE q.name = $1`, schema), name).Scan(&group); err != nil {
			t.Fatalf("find the worker of queue %s: %v", name, err)
		}
		if _, ok := onGroup[group]; !ok {
			onGroup[group] = name
		}
	}

	for group, queue := range onGroup {
		var seqs []int64 // in the order the sends returned
		var what []string
		add := func(label string, s ...int64) {
			for _, x := range s {
				seqs = append(seqs, x)
				what = append(what, label)
			}
		}
		send := func(label string, m pgqueue.NewMessage) int64 {
			t.Helper()
			m.Body = json.RawMessage(fmt.Sprintf(`{"n":%d}`, len(seqs)))
			s, err := c.Send(ctx, acct, queue, m)
			if err != nil {
				t.Fatalf("queue %s: %s: %v", queue, label, err)
			}
			add(label, s)
			return s
		}

		send("send", pgqueue.NewMessage{})
		batch, err := c.SendBatch(ctx, acct, queue, []pgqueue.NewMessage{
			{Body: json.RawMessage(`{"b":1}`)}, {Body: json.RawMessage(`{"b":2}`)}, {Body: json.RawMessage(`{"b":3}`)}})
		if err != nil {
			t.Fatalf("queue %s: send_batch: %v", queue, err)
		}
		add("send_batch", batch...)
		head := send("grouped send (head)", pgqueue.NewMessage{Group: "g"})
		send("grouped send (parked)", pgqueue.NewMessage{Group: "g"})
		grouped, err := c.SendBatch(ctx, acct, queue, []pgqueue.NewMessage{
			{Body: json.RawMessage(`{"g":1}`), Group: "g"}, {Body: json.RawMessage(`{"g":2}`), Group: "h"}})
		if err != nil {
			t.Fatalf("queue %s: grouped send_batch: %v", queue, err)
		}
		add("grouped send_batch", grouped...)
		dedup := send("send with a dedup key", pgqueue.NewMessage{DedupKey: "k"})
		if again, err := c.Send(ctx, acct, queue, pgqueue.NewMessage{Body: json.RawMessage(`{}`), DedupKey: "k"}); err != nil || again != dedup {
			t.Fatalf("queue %s: repeated dedup send: %d, %v; want %d", queue, again, err, dedup)
		}
		send("grouped send with a dedup key", pgqueue.NewMessage{Group: "g", DedupKey: "k2"})

		// Hand-over: the head fails for good (a dead letter); the next of
		// group g becomes its head; new sends join behind it.
		if _, err := c.Fail(ctx, acct, queue, []pgqueue.Failure{{Sequence: head}}); err != nil {
			t.Fatalf("queue %s: fail the head: %v", queue, err)
		}
		// Take h's head out of the way, then g's next is the only ready one
		// besides the ungrouped ones, which are received and deleted first.
		for {
			got, err := c.Receive(ctx, acct, queue, pgqueue.ReceiveOptions{Max: 10})
			if err != nil {
				t.Fatalf("queue %s: receive: %v", queue, err)
			}
			if len(got) == 0 {
				break
			}
			for _, m := range got {
				if m.Group == "g" {
					if m.Sequence != seqs[5] {
						t.Fatalf("queue %s: group g handed over to %d, want %d", queue, m.Sequence, seqs[5])
					}
					continue // kept leased: group g waits for it
				}
				if err := c.Delete(ctx, acct, queue, m.Sequence, m.Receipt); err != nil {
					t.Fatal(err)
				}
			}
		}
		send("grouped send after the hand-over", pgqueue.NewMessage{Group: "g"})

		// Redrive: the dead letter rejoins group g at its end, with a new
		// sequence drawn now.
		if n, err := c.Redrive(ctx, acct, queue, 10); err != nil || n != 1 {
			t.Fatalf("queue %s: redrive: %d, %v; want 1", queue, n, err)
		}
		var redriven int64
		if err := pool.QueryRow(ctx, fmt.Sprintf(`
			SELECT m.sequence FROM %[1]s.messages m JOIN %[1]s.queues q ON q.id = m.queue_id
			 WHERE q.name = $1 AND m.body = '{"n": 4}'`, schema), queue).Scan(&redriven); err != nil {
			t.Fatalf("queue %s: find the redriven message: %v", queue, err)
		}
		add("redriven grouped dead letter", redriven)
		send("send after the redrive", pgqueue.NewMessage{})

		for i, s := range seqs {
			if s>>48 != group {
				t.Errorf("queue %s on node group %d: %s got sequence %d, from node group %d's range", queue, group, what[i], s, s>>48)
			}
			if i > 0 && s <= seqs[i-1] {
				t.Errorf("queue %s: %s got sequence %d, not above %d of the %s before it", queue, what[i], s, seqs[i-1], what[i-1])
			}
		}
		t.Logf("queue %s on node group %d: sequences %d .. %d (%d sends)", queue, group, seqs[0], seqs[len(seqs)-1], len(seqs))
	}
}
