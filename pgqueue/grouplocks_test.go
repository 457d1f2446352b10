package pgqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// TestGroupLocksTakenInOneOrder: every statement that touches several
// groups of a queue takes their locks in group-key order (migration 019),
// so two of them over the same groups never wait for each other in a
// cycle (the 40P01 "deadlock detected" a batch send across groups met
// while acks of group heads ran). Each case holds group "a" (the lowest)
// in another transaction, runs a statement over groups "a" and "b" in
// which "b" comes first (array order or sequence order), waits until the
// statement is blocked on "a", and checks that it holds no lock on "b"
// meanwhile; then lets it finish.
func TestGroupLocksTakenInOneOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// run is the statement under test, given the sequences of the
		// groups' messages sent in order b1, a1, b2, a2 and leased.
		run func(e *env, leased map[string]pgqueue.Message) error
	}{
		{"send batch", func(e *env, _ map[string]pgqueue.Message) error {
			_, err := e.c.SendBatch(e.ctx, acct, "q", []pgqueue.NewMessage{
				{Body: body(1), Group: "b"}, {Body: body(2), Group: "a"}})
			return err
		}},
		{"ack", func(e *env, m map[string]pgqueue.Message) error {
			_, err := e.c.Ack(e.ctx, acct, "q", []pgqueue.Ack{
				{Sequence: m["b"].Sequence, Receipt: m["b"].Receipt}, {Sequence: m["a"].Sequence, Receipt: m["a"].Receipt}})
			return err
		}},
		{"fail", func(e *env, m map[string]pgqueue.Message) error {
			_, err := e.c.Fail(e.ctx, acct, "q", []pgqueue.Failure{
				{Sequence: m["b"].Sequence, Receipt: m["b"].Receipt}, {Sequence: m["a"].Sequence, Receipt: m["a"].Receipt}})
			return err
		}},
		{"fail into a dead_letter_queue", func(e *env, m map[string]pgqueue.Message) error {
			// f's dead_letter_queue is q2: the copies join q2's groups.
			_, err := e.c.Fail(e.ctx, acct, "f", []pgqueue.Failure{
				{Sequence: m["fail b"].Sequence, Receipt: m["fail b"].Receipt}, {Sequence: m["fail a"].Sequence, Receipt: m["fail a"].Receipt}})
			return err
		}},
		{"receive with delete", func(e *env, _ map[string]pgqueue.Message) error {
			_, err := e.c.Receive(e.ctx, acct, "q2", pgqueue.ReceiveOptions{Max: 10, Delete: true})
			return err
		}},
		{"purge", func(e *env, _ map[string]pgqueue.Message) error {
			_, err := e.c.Purge(e.ctx, acct, "q")
			return err
		}},
		{"redrive", func(e *env, _ map[string]pgqueue.Message) error {
			_, err := e.c.Redrive(e.ctx, acct, "q3", 10)
			return err
		}},
		{"redrive by sequence", func(e *env, m map[string]pgqueue.Message) error {
			_, err := e.c.RedriveSequences(e.ctx, acct, "q3", []int64{m["dead b"].Sequence, m["dead a"].Sequence})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			leased := groupsAAndB(e)
			held := e.holdGroup("a", "q", "q2", "q3") // each statement uses one of them
			errc := make(chan error, 1)
			go func() { errc <- tc.run(e, leased) }()
			pgtest.WaitBlockedBy(t, e.pool, held.pid, errc)
			if err := e.tryLockGroup("q", "b"); err != nil {
				t.Errorf("while waiting for group a the statement holds group b: %v", err)
			}
			if err := e.tryLockGroup("q2", "b"); err != nil {
				t.Errorf("while waiting for group a the statement holds group b of q2: %v", err)
			}
			if err := e.tryLockGroup("q3", "b"); err != nil {
				t.Errorf("while waiting for group a the statement holds group b of q3: %v", err)
			}
			held.release()
			if err := <-errc; err != nil {
				t.Fatalf("the statement, once group a was free: %v", err)
			}
		})
	}
}

// groupsAAndB makes queues q, q2 and q3 each with groups "a" and "b",
// whose messages are sent in the order b1, a1, b2, a2 (so b's head has the
// lower sequence), and returns q's heads, leased, by group. q2's heads are
// ready; q3's heads are dead letters ("dead a", "dead b"), the groups
// holding their second messages. Queue f, whose dead_letter_queue is q2,
// has groups b and a too, their heads leased ("fail a", "fail b").
func groupsAAndB(e *env) map[string]pgqueue.Message {
	e.t.Helper()
	out := map[string]pgqueue.Message{}
	for _, q := range []string{"q", "q2", "q3"} {
		e.queue(q, pgqueue.Settings{})
		for i, g := range []string{"b", "a", "b", "a"} {
			e.sendGroup(q, g, i)
		}
	}
	for _, m := range e.receive("q", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute}) {
		out[m.Group] = m
	}
	e.queue("f", pgqueue.Settings{DeadLetterQueue: "q2"})
	for i, g := range []string{"b", "a"} {
		e.sendGroup("f", g, i)
	}
	for _, m := range e.receive("f", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute}) {
		out["fail "+m.Group] = m
	}
	heads := e.receive("q3", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute})
	var fails []pgqueue.Failure
	for _, m := range heads {
		out["dead "+m.Group] = m
		fails = append(fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt})
	}
	if _, err := e.c.Fail(e.ctx, acct, "q3", fails); err != nil {
		e.t.Fatal(err)
	}
	if out["a"].Group == "" || out["b"].Group == "" || out["dead a"].Group == "" || out["dead b"].Group == "" ||
		out["fail a"].Group == "" || out["fail b"].Group == "" {
		e.t.Fatalf("the groups' heads: %v", out)
	}
	return out
}

// heldLocks is a transaction holding row locks (a group's or a message's).
type heldLocks struct {
	pid uint32
	end func()
}

// held keeps tx's locks until release (or the test's end).
func (e *env) held(tx pgx.Tx) *heldLocks {
	h := &heldLocks{pid: tx.Conn().PgConn().PID(), end: func() { tx.Rollback(e.ctx) }}
	e.t.Cleanup(h.release)
	return h
}

// holdGroup locks group of each of queues in a transaction of its own
// until release.
func (e *env) holdGroup(group string, queues ...string) *heldLocks {
	e.t.Helper()
	tx := e.schemaTx()
	for _, q := range queues {
		var n int
		if err := tx.QueryRow(e.ctx, `SELECT count(*) FROM (SELECT 1 FROM message_groups
		                                 WHERE queue_id = $1 AND group_key = $2 FOR UPDATE) l`, e.queueID(q), group).Scan(&n); err != nil || n != 1 {
			tx.Rollback(e.ctx)
			e.t.Fatalf("lock group %s of %s: %d rows, %v", group, q, n, err)
		}
	}
	return e.held(tx)
}

func (h *heldLocks) release() {
	if h.end != nil {
		h.end()
		h.end = nil
	}
}

// tryLockGroup locks group of queue without waiting, in a transaction it
// rolls back: nil when no other transaction holds it.
func (e *env) tryLockGroup(queue, group string) error {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	tx := e.schemaTx()
	defer tx.Rollback(ctx)
	_, err := tx.Exec(ctx, `SELECT 1 FROM message_groups WHERE queue_id = $1 AND group_key = $2 FOR UPDATE NOWAIT`,
		e.queueID(queue), group)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		return errors.New("group " + group + " of " + queue + " is locked")
	}
	return err
}

// TestGroupLocksAfterMessageLocks: a statement deleting messages of
// several groups locks the messages before their groups, as a DELETE
// of one message does (the message's row, then in its trigger the group's),
// so that an ack of one message and an ack, failure or purge of many
// never wait for each other in a cycle. With a's head locked elsewhere,
// each statement waits for it holding neither group.
func TestGroupLocksAfterMessageLocks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(e *env, leased map[string]pgqueue.Message) error
	}{
		{"ack", func(e *env, m map[string]pgqueue.Message) error {
			_, err := e.c.Ack(e.ctx, acct, "q", []pgqueue.Ack{
				{Sequence: m["b"].Sequence, Receipt: m["b"].Receipt}, {Sequence: m["a"].Sequence, Receipt: m["a"].Receipt}})
			return err
		}},
		{"fail", func(e *env, m map[string]pgqueue.Message) error {
			_, err := e.c.Fail(e.ctx, acct, "q", []pgqueue.Failure{
				{Sequence: m["b"].Sequence, Receipt: m["b"].Receipt}, {Sequence: m["a"].Sequence, Receipt: m["a"].Receipt}})
			return err
		}},
		{"purge", func(e *env, _ map[string]pgqueue.Message) error {
			_, err := e.c.Purge(e.ctx, acct, "q")
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			leased := groupsAAndB(e)
			held := e.holdMessage("q", leased["a"].Sequence)
			errc := make(chan error, 1)
			go func() { errc <- tc.run(e, leased) }()
			pgtest.WaitBlockedBy(t, e.pool, held.pid, errc)
			for _, g := range []string{"a", "b"} {
				if err := e.tryLockGroup("q", g); err != nil {
					t.Errorf("while waiting for a's head the statement holds group %s: %v", g, err)
				}
			}
			held.release()
			if err := <-errc; err != nil {
				t.Fatalf("the statement, once a's head was free: %v", err)
			}
		})
	}
}

// holdMessage locks the row of message seq of queue in a transaction of
// its own until release.
func (e *env) holdMessage(queue string, seq int64) *heldLocks {
	e.t.Helper()
	tx := e.schemaTx()
	var n int
	if err := tx.QueryRow(e.ctx, `SELECT count(*) FROM (SELECT 1 FROM messages
	                                 WHERE queue_id = $1 AND sequence = $2 FOR UPDATE) l`, e.queueID(queue), seq).Scan(&n); err != nil || n != 1 {
		tx.Rollback(e.ctx)
		e.t.Fatalf("lock message %d of %s: %d rows, %v", seq, queue, n, err)
	}
	return e.held(tx)
}

// TestSweepSkipsGroupsHeldElsewhere: the sweeper never waits for a group
// (migration 020): of the messages it would move (final leases that
// expired, to the dead-letter table or into a dead_letter_queue; expired
// messages), it moves those whose groups it can lock at once, in the
// queue and in the dead_letter_queue the copies join, and leaves the
// others to a later sweep, which moves them once the group is free.
func TestSweepSkipsGroupsHeldElsewhere(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// held is the queue whose group a another transaction holds.
		held string
		// setup sends to queue, in groups b then a, what the sweep moves.
		setup func(e *env)
		// moved counts the messages the sweeps have moved so far.
		moved func(e *env) int64
	}{
		{"final leases to the dead-letter table", "s", func(e *env) {
			e.queue("s", pgqueue.Settings{MaxReceiveCount: 1})
			e.expireFinalLeases("s")
		}, func(e *env) int64 {
			return e.count(`SELECT count(*) FROM dead_letters d JOIN queues q ON q.id = d.queue_id WHERE q.name = 's'`)
		}},
		{"final leases into a dead_letter_queue", "d", func(e *env) {
			e.queue("d", pgqueue.Settings{})
			e.sendGroup("d", "a", 0) // d's group a exists, and is held
			e.queue("s", pgqueue.Settings{MaxReceiveCount: 1, DeadLetterQueue: "d"})
			e.expireFinalLeases("s")
		}, func(e *env) int64 {
			return e.count(`SELECT count(*) FROM messages m JOIN queues q ON q.id = m.queue_id WHERE q.name = 'd'`) - 1
		}},
		{"expired messages", "s", func(e *env) {
			e.queue("s", pgqueue.Settings{})
			for i, g := range []string{"b", "a"} {
				e.sendGroup("s", g, i)
			}
			e.exec(`UPDATE messages SET expires_at = now() - interval '1 second' WHERE queue_id = (SELECT id FROM queues WHERE name = 's')`)
		}, func(e *env) int64 {
			return 2 - e.count(`SELECT count(*) FROM messages m JOIN queues q ON q.id = m.queue_id WHERE q.name = 's'`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.setup(e)
			held := e.holdGroup("a", tc.held)
			if err := e.sweepWithoutWaitingFor(held); err != nil {
				t.Fatalf("sweep with group a of %s held: %v", tc.held, err)
			}
			if n := tc.moved(e); n != 1 {
				t.Errorf("with group a of %s held, the sweep moved %d messages, want 1 (group b's)", tc.held, n)
			}
			held.release()
			if _, err := e.c.Sweep(e.ctx); err != nil {
				t.Fatalf("sweep: %v", err)
			}
			if n := tc.moved(e); n != 2 {
				t.Errorf("once group a was free, the sweeps moved %d messages, want 2", n)
			}
		})
	}
}

// expireFinalLeases sends to queue (max_receive_count 1) a message in
// group b, then one in group a, leases both (their last leases) and moves
// their visibility into the past: the sweep's to move.
func (e *env) expireFinalLeases(queue string) {
	e.t.Helper()
	for i, g := range []string{"b", "a"} {
		e.sendGroup(queue, g, i)
	}
	e.receive(queue, pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute})
	e.exec(`UPDATE messages SET visible_at = now() - interval '1 second'
	         WHERE final_lease AND queue_id = (SELECT id FROM queues WHERE name = $1)`, queue)
}

// count runs a count(*) query in the test schema.
func (e *env) count(query string) int64 {
	e.t.Helper()
	return e.one(query).(int64)
}

// sweepWithoutWaitingFor runs a sweep, which fails if it waits for the
// locks held holds (it is canceled as soon as it does).
func (e *env) sweepWithoutWaitingFor(held *heldLocks) error {
	e.t.Helper()
	ctx, cancel := context.WithCancelCause(e.ctx)
	defer cancel(nil)
	errc := make(chan error, 1)
	go func() {
		_, err := e.c.Sweep(ctx)
		errc <- err
	}()
	for {
		select {
		case err := <-errc:
			return err
		case <-time.After(2 * time.Millisecond):
		}
		blocked, err := pgtest.BlockedBy(e.ctx, e.pool, held.pid)
		if err != nil {
			return err
		}
		if blocked {
			cancel(errors.New("the sweep waited for a group held elsewhere"))
			<-errc
			return context.Cause(ctx)
		}
	}
}

// TestSweepGivesUpOnAGroupBeingCreated: the one wait left to the sweep,
// creating a dead_letter_queue's group that another transaction is
// creating, lasts at most its lock_timeout (100 ms, below Postgres' 1 s
// deadlock check): the sweep fails with 55P03 and moves nothing, and the
// next sweep after that transaction moves the message.
func TestSweepGivesUpOnAGroupBeingCreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("d", pgqueue.Settings{})
	e.queue("s", pgqueue.Settings{MaxReceiveCount: 1, DeadLetterQueue: "d"})
	e.sendGroup("s", "b", 0)
	e.receive("s", pgqueue.ReceiveOptions{VisibilityTimeout: time.Minute})
	e.exec(`UPDATE messages SET visible_at = now() - interval '1 second' WHERE final_lease`)
	creating := e.schemaTx()
	defer creating.Rollback(e.ctx)
	if _, err := e.c.SendTx(e.ctx, creating, acct, "d", pgqueue.NewMessage{Body: body(1), Group: "b"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.c.Sweep(e.ctx)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("sweep while d's group b is being created: %v, want lock_timeout's 55P03", err)
	}
	if err := creating.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM messages m JOIN queues q ON q.id = m.queue_id WHERE q.name = 'd'`); n != 2 {
		t.Errorf("d holds %d messages after the second sweep, want 2 (the send and the forwarded lease)", n)
	}
}

// queueID is the id of queue: the statements that lock rows name it, so
// that on Citus each is a query of one shard, which may lock.
func (e *env) queueID(queue string) int64 {
	e.t.Helper()
	return e.one(`SELECT id FROM queues WHERE name = $1`, queue).(int64)
}
