package pgqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicehq/sluice/pgqueue"
)

func TestStoredBytesLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const other = "000000000777"
	if err := e.c.CreateAccount(e.ctx, other, "other"); err != nil {
		t.Fatal(err)
	}
	const limit = 2000
	limits := map[string]int64{acct: limit, other: limit} // other stores nothing
	c, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema,
		StoredBytesLimit: func(_ context.Context, _ pgqueue.DB, account string) (int64, error) { return limits[account], nil }})
	if err != nil {
		t.Fatal(err)
	}
	e.queue("q", pgqueue.Settings{})
	if _, err := e.c.CreateQueue(e.ctx, other, "q", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.CreateTopic(e.ctx, acct, "t"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Subscribe(e.ctx, acct, "t", "q"); err != nil {
		t.Fatal(err)
	}
	// Not started: a started sweeper samples once at its start, on its own
	// goroutine; this one samples only when asked.
	sw := pgqueue.NewSweeper(e.c, pgqueue.SweeperOptions{})
	sample := func() {
		t.Helper()
		if err := sw.RecordStats(e.ctx); err != nil {
			t.Fatal(err)
		}
		pgqueue.ForgetStoredBytes(c)
	}
	stored := func(account string) int64 {
		t.Helper()
		s, err := c.StoredBytes(e.ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		return s.Bytes
	}
	count := func() int64 {
		t.Helper()
		return e.one("SELECT (SELECT count(*) FROM " + pgxIdent(e.schema) + ".messages) + (SELECT count(*) FROM " +
			pgxIdent(e.schema) + ".dead_letters)").(int64)
	}
	// The sum the sample must find: bodies and headers as stored.
	direct := func(table string) int64 {
		t.Helper()
		return e.one("SELECT coalesce(sum(pg_column_size(m.body) + coalesce(pg_column_size(m.headers), 0)), 0)::bigint FROM "+
			pgxIdent(e.schema)+"."+table+" m JOIN "+pgxIdent(e.schema)+".queues q ON q.id = m.queue_id WHERE q.account = $1", acct).(int64)
	}

	if s, err := c.StoredBytes(e.ctx, acct); err != nil || s.Bytes != 0 || !s.SampledAt.IsZero() {
		t.Fatalf("before any sample: %+v, %v; want nothing sampled", s, err)
	}
	// Under the limit (and before any sample) sends pass.
	pad := `{"pad":"` + strings.Repeat("x", 300) + `"}`
	for i := 0; i < 8; i++ {
		if _, err := c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: json.RawMessage(pad), Headers: json.RawMessage(`{"h":"v"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	sample()
	want := direct("messages")
	if want < 8*300 {
		t.Fatalf("the messages' stored size is %d bytes, want at least %d", want, 8*300)
	}
	if got := stored(acct); got != want {
		t.Fatalf("StoredBytes = %d, want %d (pg_column_size of bodies and headers)", got, want)
	}
	// Dead letters count as well.
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 4})
	e.fail("q", seqs(got))
	sample()
	if got, want := stored(acct), direct("messages")+direct("dead_letters"); got != want || direct("dead_letters") == 0 {
		t.Fatalf("with dead letters: StoredBytes = %d, want %d", got, want)
	}
	if st := e.stats("q"); st.Bytes != direct("messages") || st.DLQBytes != direct("dead_letters") {
		t.Fatalf("Stats: bytes %d, dlq bytes %d; want %d and %d", st.Bytes, st.DLQBytes, direct("messages"), direct("dead_letters"))
	}
	if stored(acct) < limit {
		t.Fatalf("stored %d bytes: the test needs at least its limit of %d", stored(acct), limit)
	}

	// At the limit every way of adding messages is refused, and adds nothing.
	before := count()
	msg := pgqueue.NewMessage{Body: json.RawMessage(`{"n":1}`)}
	refusals := map[string]error{}
	_, refusals["Send"] = c.Send(e.ctx, acct, "q", msg)
	_, refusals["Send with dedup key"] = c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: msg.Body, DedupKey: "k"})
	_, refusals["SendTx"] = c.SendTx(e.ctx, e.pool, acct, "q", msg)
	_, refusals["SendBatch"] = c.SendBatch(e.ctx, acct, "q", []pgqueue.NewMessage{msg, msg})
	_, refusals["SendBatchTx"] = c.SendBatchTx(e.ctx, e.pool, acct, "q", []pgqueue.NewMessage{msg})
	_, refusals["Publish"] = c.Publish(e.ctx, acct, "t", msg.Body, nil)
	_, refusals["PublishBatch"] = c.PublishBatch(e.ctx, acct, "t", []pgqueue.Publication{{Body: msg.Body}})
	b := c.NewBatch()
	b.Send(acct, "q", []pgqueue.NewMessage{msg})
	refusals["Batch.Send"] = b.Run(e.ctx, e.pool)
	b = c.NewBatch()
	b.Publish(acct, "t", msg.Body, nil, nil)
	refusals["Batch.Publish"] = b.Run(e.ctx, e.pool)
	for what, err := range refusals {
		if !errors.Is(err, pgqueue.ErrStoredBytesLimit) {
			t.Errorf("%s at the limit: %v, want ErrStoredBytesLimit", what, err)
			continue
		}
		if m := err.Error(); !strings.Contains(m, "account "+acct+" stores") || !strings.Contains(m, "its limit is 2000") {
			t.Errorf("%s: %q does not name the account, its bytes and its limit", what, m)
		}
	}
	if n := count(); n != before {
		t.Fatalf("refused sends stored %d messages", n-before)
	}
	// Another account is not held back, nor are the account's receives,
	// acks and deletes.
	if _, err := c.Send(e.ctx, other, "q", msg); err != nil {
		t.Fatalf("send of another account: %v", err)
	}
	rest := e.receive("q", pgqueue.ReceiveOptions{Max: 10})
	if len(rest) != 4 {
		t.Fatalf("received %d, want the 4 left", len(rest))
	}
	for _, m := range rest {
		if err := c.Delete(e.ctx, acct, "q", m.Sequence, m.Receipt); err != nil {
			t.Fatal(err)
		}
	}
	// Until the next sample the account stays refused; after it, with its
	// dead letters purged, it sends again.
	if _, err := c.Send(e.ctx, acct, "q", msg); !errors.Is(err, pgqueue.ErrStoredBytesLimit) {
		t.Fatalf("send before the next sample: %v, want ErrStoredBytesLimit", err)
	}
	if _, err := c.PurgeDLQ(e.ctx, acct, "q"); err != nil {
		t.Fatal(err)
	}
	sample()
	if got := stored(acct); got != 0 {
		t.Fatalf("after the purge: StoredBytes = %d, want 0", got)
	}
	if _, err := c.Send(e.ctx, acct, "q", msg); err != nil {
		t.Fatalf("send after the purge: %v", err)
	}

	// A sample older than 5 minutes (sampling has stopped) refuses nothing.
	for i := 0; i < 8; i++ {
		e.send("q", pad)
	}
	sample()
	if _, err := c.Send(e.ctx, acct, "q", msg); !errors.Is(err, pgqueue.ErrStoredBytesLimit) {
		t.Fatalf("send over the limit again: %v, want ErrStoredBytesLimit", err)
	}
	// Age the last sample by 6 minutes and forget the earlier ones (with
	// constants: Citus does not run now() - interval over a column).
	last, err := c.StoredBytes(e.ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	aged := last.SampledAt.Add(-6 * time.Minute)
	e.exec("DELETE FROM depth_samples WHERE minute <> $1", last.SampledAt)
	e.exec("UPDATE depth_samples SET minute = $1 WHERE minute = $2", aged, last.SampledAt)
	e.exec("UPDATE queue_minutes SET minute = $1 WHERE minute = $2", aged, last.SampledAt)
	pgqueue.ForgetStoredBytes(c)
	if s, err := c.StoredBytes(e.ctx, acct); err != nil || s.Bytes < limit || time.Since(s.SampledAt) < 6*time.Minute {
		t.Fatalf("the aged sample: %+v, %v", s, err)
	}
	if _, err := c.Send(e.ctx, acct, "q", msg); err != nil {
		t.Fatalf("send on a sample 6 minutes old: %v, want it to pass", err)
	}
}

func TestStoredBytesLimitError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema,
		StoredBytesLimit: func(context.Context, pgqueue.DB, string) (int64, error) { return 0, errors.New("limits unavailable") }})
	if err != nil {
		t.Fatal(err)
	}
	e.queue("q", pgqueue.Settings{})
	_, err = c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), `pgqueue: send to queue "q": limits unavailable`) {
		t.Fatalf("send whose limit cannot be read: %v, want the failure named", err)
	}
}

// The check runs on what the send runs on: sends inside transactions that
// hold every connection of the pool still complete (reading the stored
// bytes on another connection would wait for one for good).
func TestStoredBytesCheckUsesTheSendsConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	const conns = 2
	pool := e.poolOf(conns)
	c, err := pgqueue.New(pool, pgqueue.Options{Schema: e.schema,
		StoredBytesLimit: func(ctx context.Context, db pgqueue.DB, _ string) (int64, error) {
			var n int64
			err := db.QueryRow(ctx, "SELECT 1000000").Scan(&n) // as a server reads its limits table
			return n, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute) // a hang, not the work (milliseconds)
	defer cancel()
	txs := make([]pgx.Tx, conns)
	for i := range txs {
		if txs[i], err = pool.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		defer txs[i].Rollback(e.ctx)
	}
	errs := make(chan error, len(txs))
	for _, tx := range txs {
		go func() {
			_, err := c.SendTx(ctx, tx, acct, "q", pgqueue.NewMessage{Body: json.RawMessage(`{}`)})
			if err == nil {
				b := c.NewBatch()
				b.Send(acct, "q", []pgqueue.NewMessage{{Body: json.RawMessage(`{}`)}})
				err = b.Run(ctx, tx)
			}
			errs <- err
		}()
	}
	for range txs {
		if err := <-errs; err != nil {
			t.Fatalf("a send in a transaction holding the pool's last connection: %v", err)
		}
	}
}
