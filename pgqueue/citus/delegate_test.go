//go:build citus

package citus_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// The hot path runs on the worker holding the queue's shard: with
// citus.log_remote_commands on, the coordinator ships the call of the
// queue_* function itself (`SELECT ... FROM schema.queue_receive(...)`),
// never a statement on a shard of messages, for the Go client's calls and
// for the same calls written by hand in SQL. The account_* form, by name,
// is shown running on the coordinator, shipping its statements to the
// shard, for contrast.
func TestHotPathRunsOnTheWorkers(t *testing.T) {
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx := context.Background()
	logged, take := pgtest.RemoteCommands(t, pool)
	c, err := pgqueue.New(logged, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	const acct = pgqueue.DefaultAccount
	if _, err := c.CreateQueue(ctx, acct, "q", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := logged.QueryRow(ctx, "SELECT "+schema+".queue_id($1, 'q')", acct).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// delegated checks that the coordinator shipped a call of fn and no
	// statement on a shard of messages.
	delegated := func(what, fn string) {
		t.Helper()
		shipped := take()
		call := false
		for _, m := range shipped {
			if strings.HasPrefix(m, "issuing ") && strings.Contains(m, "."+fn+"(") {
				call = true
			}
			if strings.Contains(m, ".messages_") {
				t.Errorf("%s: the coordinator ran a statement on a shard: %s", what, m)
			}
		}
		if !call {
			t.Errorf("%s: no call of %s shipped to a worker; remote commands: %q", what, fn, shipped)
		}
	}

	// The Go client.
	take()
	ms := make([]pgqueue.NewMessage, 10)
	for i := range ms {
		ms[i] = pgqueue.NewMessage{Body: json.RawMessage(`{"n":1}`)}
	}
	if _, err := c.SendBatch(ctx, acct, "q", ms); err != nil {
		t.Fatal(err)
	}
	take() // the first call resolved the id on the coordinator
	if _, err := c.SendBatch(ctx, acct, "q", ms); err != nil {
		t.Fatal(err)
	}
	delegated("client send batch", "queue_send_batch")
	got, err := c.Receive(ctx, acct, "q", pgqueue.ReceiveOptions{Max: 10})
	if err != nil || len(got) != 10 {
		t.Fatalf("receive: %d messages, %v", len(got), err)
	}
	delegated("client receive", "queue_receive")
	acks := pgqueue.Leases(got)
	if done, err := c.Ack(ctx, acct, "q", acks); err != nil || len(done) != 10 {
		t.Fatalf("ack: %v %v", done, err)
	}
	delegated("client ack", "queue_ack")
	got, err = c.Receive(ctx, acct, "q", pgqueue.ReceiveOptions{Max: 2})
	if err != nil || len(got) != 2 {
		t.Fatalf("receive: %d messages, %v", len(got), err)
	}
	take()
	if _, err := c.Fail(ctx, acct, "q", []pgqueue.Failure{{Sequence: got[0].Sequence, Receipt: got[0].Receipt}}); err != nil {
		t.Fatal(err)
	}
	delegated("client fail", "queue_fail")
	if err := c.Delete(ctx, acct, "q", got[1].Sequence, got[1].Receipt); err != nil {
		t.Fatal(err)
	}
	delegated("client delete", "queue_delete")

	// The same by hand, in SQL: a statement of its own per call.
	var seqs []int64
	rows, err := logged.Query(ctx, "SELECT s FROM "+schema+".queue_send_batch($1, $2, 'q', ARRAY['1', '2']::jsonb[]) s", id, acct)
	if err == nil {
		seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil || len(seqs) != 2 {
		t.Fatalf("queue_send_batch: %v %v", seqs, err)
	}
	delegated("SQL queue_send_batch", "queue_send_batch")
	rows, err = logged.Query(ctx, "SELECT sequence, receipt FROM "+schema+".queue_receive($1, $2, 'q', 10)", id, acct)
	if err != nil {
		t.Fatal(err)
	}
	type lease struct {
		Sequence int64
		Receipt  [16]byte
	}
	leases, err := pgx.CollectRows(rows, pgx.RowToStructByPos[lease])
	if err != nil || len(leases) == 0 {
		t.Fatalf("queue_receive: %v %v", leases, err)
	}
	delegated("SQL queue_receive", "queue_receive")
	take()
	if _, err := logged.Exec(ctx, "SELECT s FROM "+schema+".queue_ack($1, $2, 'q', $3) s", id, acct,
		[]int64{leases[len(leases)-1].Sequence}); err != nil {
		t.Fatal(err)
	}
	delegated("SQL queue_ack", "queue_ack")

	// The account_* form by name runs on the coordinator, which ships the
	// statements of its body to the shard.
	take()
	if _, err := logged.Exec(ctx, "SELECT s FROM "+schema+".account_send_batch($1, 'q', ARRAY['3']::jsonb[]) s", acct); err != nil {
		t.Fatal(err)
	}
	onShard := false
	for _, m := range take() {
		if strings.Contains(m, ".messages_") {
			onShard = true
		}
	}
	if !onShard {
		t.Error("account_send_batch: no statement on a shard of messages shipped by the coordinator")
	}
}

// A pgx batch (one pipeline, one implicit transaction) is no transaction
// block for Citus: a queue_* call in it is delegated and commits on the
// worker by itself, so a later failure in the batch does not undo it. An
// account_* call by name in the same place runs on the coordinator inside
// the batch's transaction and is undone. That is why pgqueue.Batch (all or
// nothing) keeps the account_* forms; docs/scale-out.md.
func TestPgxBatchIsNoTransactionBlock(t *testing.T) {
	pool, schema := pgtest.Schema(t, pgqueue.Migrations)
	ctx := context.Background()
	const acct = pgqueue.DefaultAccount
	if _, err := pool.Exec(ctx, "SELECT "+schema+".create_queue('q')"); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(ctx, "SELECT "+schema+".queue_id($1, 'q')", acct).Scan(&id); err != nil {
		t.Fatal(err)
	}
	count := func() int64 {
		t.Helper()
		var n int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+schema+".messages WHERE queue_id = $1", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		call string
		args []any
		kept int64
	}{
		{"SELECT s FROM " + schema + ".queue_send_batch($1, $2, 'q', ARRAY['1']::jsonb[]) s", []any{id, acct}, 1},
		{"SELECT s FROM " + schema + ".account_send_batch($1, 'q', ARRAY['1']::jsonb[]) s", []any{acct}, 0},
	} {
		before := count()
		b := &pgx.Batch{}
		b.Queue(c.call, c.args...)
		b.Queue("SELECT 1/0")
		if err := pool.SendBatch(ctx, b).Close(); err == nil {
			t.Fatal("the batch's division by zero did not fail it")
		}
		if n := count() - before; n != c.kept {
			t.Errorf("%s then a failure in one pgx batch: %d messages kept, want %d", c.call, n, c.kept)
		}
	}
}
