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
			held := e.holdGroup("q", "a")
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
// holding their second messages.
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
	heads := e.receive("q3", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute})
	var fails []pgqueue.Failure
	for _, m := range heads {
		out["dead "+m.Group] = m
		fails = append(fails, pgqueue.Failure{Sequence: m.Sequence, Receipt: m.Receipt})
	}
	if _, err := e.c.Fail(e.ctx, acct, "q3", fails); err != nil {
		e.t.Fatal(err)
	}
	if out["a"].Group == "" || out["b"].Group == "" || out["dead a"].Group == "" || out["dead b"].Group == "" {
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

// holdGroup locks group of queue (of each of q, q2 and q3 when queue is
// "q": the statements under test use one of them) in a transaction of its
// own until release.
func (e *env) holdGroup(queue, group string) *heldLocks {
	e.t.Helper()
	tx := e.schemaTx()
	for _, q := range []string{queue, queue + "2", queue + "3"} {
		var n int
		if err := tx.QueryRow(e.ctx, `SELECT count(*) FROM (SELECT 1 FROM message_groups g JOIN queues q ON q.id = g.queue_id
		                                 WHERE q.name = $1 AND g.group_key = $2 FOR UPDATE OF g) l`, q, group).Scan(&n); err != nil || n != 1 {
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
	_, err := tx.Exec(ctx, `SELECT 1 FROM message_groups g JOIN queues q ON q.id = g.queue_id
	                         WHERE q.name = $1 AND g.group_key = $2 FOR UPDATE OF g NOWAIT`, queue, group)
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
	if err := tx.QueryRow(e.ctx, `SELECT count(*) FROM (SELECT 1 FROM messages m JOIN queues q ON q.id = m.queue_id
	                                 WHERE q.name = $1 AND m.sequence = $2 FOR UPDATE OF m) l`, queue, seq).Scan(&n); err != nil || n != 1 {
		tx.Rollback(e.ctx)
		e.t.Fatalf("lock message %d of %s: %d rows, %v", seq, queue, n, err)
	}
	return e.held(tx)
}
