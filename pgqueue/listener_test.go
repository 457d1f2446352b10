package pgqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

func startListener(t *testing.T, e *env) *pgqueue.Listener {
	t.Helper()
	l, err := pgqueue.NewListener(e.pool, pgqueue.ListenerOptions{Schema: e.schema, OnError: func(err error) { t.Log(err) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return l
}

// A long-poll receive wakes on a send committed by another connection.
// The receive waits 5 s and the poll interval is 10 s, so a round that
// returns the message was woken by NOTIFY: the poll could not have found it
// in time. How fast the wake-up is, is a figure, not a pass mark (the
// machine running the tests may be shared): the test logs the latencies,
// and BENCHMARKS.md ("Long-poll wake-up") reports them.
func TestLongPollWakesOnSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	l := startListener(t, e)
	c, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, Listener: l, PollInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1)
	pgqueue.SetWaitingHook(c, func() { waiting <- struct{}{} })
	var lats []time.Duration
	for round := range 5 {
		got := make(chan time.Time, 1)
		var msgs []pgqueue.Message
		go func() {
			msgs, err = c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Wait: 5 * time.Second})
			got <- time.Now()
		}()
		<-waiting // the receiver is subscribed, found nothing, and waits
		conn, cerr := e.pool.Acquire(e.ctx)
		if cerr != nil {
			t.Fatal(cerr)
		}
		sent := time.Now()
		var seq int64
		qerr := conn.QueryRow(e.ctx, "SELECT "+pgxIdent(e.schema)+".send('q', '{}')").Scan(&seq)
		conn.Release()
		if qerr != nil {
			t.Fatal(qerr)
		}
		woke := <-got
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || msgs[0].Sequence != seq {
			t.Fatalf("round %d: long poll returned %v, want [%d]", round, msgs, seq)
		}
		lats = append(lats, woke.Sub(sent))
		if err := c.Delete(e.ctx, acct, "q", seq, msgs[0].Receipt); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(lats)
	t.Logf("wake latencies: %v (median %v)", lats, lats[len(lats)/2])
}

func TestLongPollTimesOutEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	l := startListener(t, e)
	c, _ := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, Listener: l})
	start := time.Now()
	msgs, err := c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Wait: 700 * time.Millisecond})
	if err != nil || len(msgs) != 0 {
		t.Fatalf("%v %v", msgs, err)
	}
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Fatalf("returned after %v, before the wait ended", d)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.Receive(ctx, acct, "q", pgqueue.ReceiveOptions{Wait: 5 * time.Second}); err == nil {
		t.Fatal("cancelled long poll returned no error")
	}
}

// Without a listener (or for delayed messages, which send no NOTIFY) the
// long poll falls back to polling.
func TestLongPollFallsBackToPolling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	c, _ := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, PollInterval: 100 * time.Millisecond})
	seq, err := c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: json.RawMessage(`1`), Delay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Wait: 5 * time.Second})
	if err != nil || len(msgs) != 1 || msgs[0].Sequence != seq {
		t.Fatalf("%v %v", msgs, err)
	}
}

func TestListenerSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("a", pgqueue.Settings{})
	e.queue("b", pgqueue.Settings{})
	l, err := pgqueue.NewListener(e.pool, pgqueue.ListenerOptions{Schema: e.schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Subscribe(e.ctx, acct, "a"); err != pgqueue.ErrListenerStopped {
		t.Fatalf("subscribe before start: %v", err)
	}
	if err := l.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(e.ctx); err == nil {
		t.Fatal("second start succeeded")
	}
	sa, err := l.Subscribe(e.ctx, acct, "a")
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := l.Subscribe(e.ctx, acct, "b")
	var woke atomic.Int32
	e.send("a", `1`)
	select {
	case <-sa.C():
		woke.Add(1)
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up for a")
	}
	select {
	case <-sb.C():
		t.Fatal("b woken by a send to a")
	case <-time.After(100 * time.Millisecond):
	}
	// A publish and a redrive wake subscribers too.
	if err := e.c.CreateTopic(e.ctx, acct, "t"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Subscribe(e.ctx, acct, "t", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Publish(e.ctx, acct, "t", json.RawMessage(`1`), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sb.C():
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up for b on publish")
	}
	sa.Close()
	sa.Close()
	if err := l.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Stop(e.ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

func TestSweeperService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 1, VisibilityTimeout: time.Second})
	seq := e.send("q", `1`)
	var swept atomic.Int64
	// Several sweepers at once (as in several processes) are safe.
	var sweepers []*pgqueue.Sweeper
	for range 3 {
		sweepers = append(sweepers, e.startSweeper(pgqueue.SweeperOptions{
			Interval: 100 * time.Millisecond,
			OnSweep:  func(n int64) { swept.Add(n) },
		}))
	}
	m := e.receive("q", pgqueue.ReceiveOptions{})
	if len(m) != 1 {
		t.Fatal("nothing received")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		dl, err := e.c.ReceiveDLQ(e.ctx, acct, "q", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(dl) == 1 && dl[0].Sequence == seq {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sweeper did not move the exhausted message to the DLQ")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range sweepers {
		if err := s.Stop(e.ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if swept.Load() != 1 {
		t.Fatalf("sweepers reported %d moves, want 1", swept.Load())
	}
}

// A sweep in progress when Stop comes finishes, and OnSweep hears of it:
// the database moved the message, so the count says so too. The sweep is
// held in progress by a lock on the DLQ table that Stop waits behind.
func TestSweeperStopWaitsForSweepInProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{MaxReceiveCount: 1, VisibilityTimeout: time.Second})
	seq := e.send("q", `1`)
	if m := e.receive("q", pgqueue.ReceiveOptions{}); len(m) != 1 {
		t.Fatal("nothing received")
	}
	// SHARE blocks the sweep's insert into dead_letters, not the reads of
	// the sweeper's statistics.
	lock := e.schemaTx()
	defer lock.Rollback(e.ctx)
	if _, err := lock.Exec(e.ctx, "LOCK TABLE dead_letters IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	var swept atomic.Int64
	s := e.startSweeper(pgqueue.SweeperOptions{
		Interval: 50 * time.Millisecond,
		OnSweep:  func(n int64) { swept.Add(n) },
	})
	// Once the lease has expired, a sweep waits for the lock.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if e.one("SELECT count(*) FROM pg_locks WHERE relation = 'dead_letters'::regclass AND NOT granted").(int64) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no sweep waited for the lock on dead_letters")
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(e.ctx) }()
	// Let Stop begin before the sweep can go on; had it not begun yet, the
	// sweep would simply finish as any other.
	time.Sleep(200 * time.Millisecond)
	if err := lock.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	dl, err := e.c.ReceiveDLQ(e.ctx, acct, "q", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].Sequence != seq {
		t.Fatalf("DLQ holds %v, want message %d", dl, seq)
	}
	if swept.Load() != 1 {
		t.Fatalf("OnSweep heard of %d moves, want 1 (the database made one)", swept.Load())
	}
}

// When the LISTEN connection dies, the listener reconnects, wakes every
// subscriber (notifications may have been missed) and keeps delivering.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	errs := make(chan error, 10)
	l, err := pgqueue.NewListener(e.pool, pgqueue.ListenerOptions{Schema: e.schema, OnError: func(err error) {
		select {
		case errs <- err:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Stop(e.ctx)
	sub, err := l.Subscribe(e.ctx, acct, "q")
	if err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1`,
		`LISTEN "`+e.schema+`_wake"`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listener connections (%v)", killed, err)
	}
	select {
	case <-sub.C():
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after reconnecting")
	}
	select {
	case err := <-errs:
		t.Logf("reported: %v", err)
	default:
		t.Fatal("connection loss not reported")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.send("q", `1`)
		select {
		case <-sub.C():
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no wake-up for a send after reconnecting")
		}
	}
}

// The sweeper vacuums the messages table once it has enough dead rows.
func TestSweeperVacuums(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	e.autovacuumOff()
	e.sendN("q", 200)
	if _, err := e.c.Purge(e.ctx, acct, "q"); err != nil {
		t.Fatal(err)
	}
	e.startSweeper(pgqueue.SweeperOptions{
		Interval:        50 * time.Millisecond,
		VacuumThreshold: 100,
	})
	deadline := time.Now().Add(statsDelay)
	for {
		if e.messagesMaintained("q", "last_vacuum") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not vacuum a table with 200 dead rows (threshold 100)")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The sweeper analyzes a messages table that was filled before it was ever
// analyzed, and only once it holds AnalyzeThreshold rows.
func TestSweeperAnalyzes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	e.autovacuumOff()
	e.sendN("q", 100)
	e.startSweeper(pgqueue.SweeperOptions{
		Interval:         50 * time.Millisecond,
		VacuumThreshold:  -1,
		AnalyzeThreshold: 300,
	})
	// Under the threshold nothing is analyzed, however long the sweeper
	// waits for the sends' statistics.
	time.Sleep(2 * time.Second)
	if e.messagesMaintained("q", "last_analyze") {
		t.Fatal("the sweeper analyzed a table of 100 rows (threshold 300)")
	}
	e.sendN("q", 300)
	deadline := time.Now().Add(statsDelay)
	for !e.messagesMaintained("q", "last_analyze") {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not analyze a table of 400 rows never analyzed (threshold 300)")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// statsDelay bounds the time from a send's commit to the sweeper acting on
// what the statistics views say about it: an idle backend's counts reach
// them within PGSTAT_IDLE_INTERVAL (10 s in Postgres 15) when it reported
// less than a second before, and the sweeper then needs a sweep or ten (its
// periodic checks) and the VACUUM or ANALYZE itself, on a loaded machine.
const statsDelay = 30 * time.Second

// autovacuumOff turns autovacuum off for the messages table, as on the
// servers the sweeper's maintenance is for: an autovacuum run in between
// would leave the sweeper nothing to do, and the test nothing to see.
func (e *env) autovacuumOff() {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, "ALTER TABLE "+pgxIdent(e.schema)+".messages SET (autovacuum_enabled = off)"); err != nil {
		e.t.Fatalf("autovacuum off: %v", err)
	}
}

// messagesMaintained reports whether the messages of queue were vacuumed
// (what is "last_vacuum") or analyzed ("last_analyze") where they live: the
// messages table on plain Postgres; with the schema distributed on Citus
// (pgtest.CitusEnvVar), the queue's shard, read on its worker.
func (e *env) messagesMaintained(queue, what string) bool {
	e.t.Helper()
	table := pgxIdent(e.schema) + ".messages"
	query := `SELECT coalesce((SELECT ` + what + ` IS NOT NULL FROM pg_stat_user_tables WHERE relid = to_regclass($1)), false)`
	args := []any{table}
	if os.Getenv(pgtest.CitusEnvVar) == "1" {
		query = `
SELECT coalesce(bool_and(s.success AND s.result::boolean), false)
  FROM run_command_on_shards(to_regclass($1),
           $c$SELECT coalesce((SELECT ` + what + ` IS NOT NULL FROM pg_stat_user_tables WHERE relid = to_regclass('%s')), false)$c$) s
 WHERE s.shardid = get_shard_id_for_distribution_column(to_regclass($1),
           (SELECT id FROM ` + pgxIdent(e.schema) + `.queues WHERE account = $2 AND name = $3))`
		args = append(args, acct, queue)
	}
	var done bool
	if err := e.pool.QueryRow(e.ctx, query, args...).Scan(&done); err != nil {
		e.t.Fatalf("%s of %s: %v", what, table, err)
	}
	return done
}

// ReceiveOptions.Claim runs each claim, a long poll's included; a look
// it skips takes nothing (the message stays ready with its receive count,
// or, with Delete, stays in the queue) and a long poll looks again; an
// error it returns ends the receive.
func TestClaimWrapsEachLook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	c, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	seq := e.send("q", `1`)
	var looks atomic.Int32
	skip := func(func() ([]pgqueue.Message, error)) ([]pgqueue.Message, error) { looks.Add(1); return nil, nil }
	for _, o := range []pgqueue.ReceiveOptions{{Claim: skip}, {Delete: true, Claim: skip}} {
		looks.Store(0)
		if msgs, err := c.Receive(e.ctx, acct, "q", o); err != nil || len(msgs) != 0 || looks.Load() != 1 {
			t.Fatalf("skipped look (delete %v): %v, %v after %d looks; want nothing after one", o.Delete, msgs, err, looks.Load())
		}
	}
	// A long poll skipped twice looks again and takes the message.
	looks.Store(0)
	msgs, err := c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Wait: pgqueue.MaxWait, Claim: func(claim func() ([]pgqueue.Message, error)) ([]pgqueue.Message, error) {
		if looks.Add(1) <= 2 {
			return nil, nil
		}
		return claim()
	}})
	if err != nil || len(msgs) != 1 || msgs[0].Sequence != seq || msgs[0].ReceiveCount != 1 || looks.Load() != 3 {
		t.Fatalf("long poll let through at its third look: %v, %v after %d looks; want message %d at its first receive", msgs, err, looks.Load(), seq)
	}
	stop := errors.New("stop")
	if _, err := c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Wait: pgqueue.MaxWait, Claim: func(func() ([]pgqueue.Message, error)) ([]pgqueue.Message, error) { return nil, stop }}); !errors.Is(err, stop) {
		t.Fatalf("long poll whose look failed: %v, want its error", err)
	}
}
