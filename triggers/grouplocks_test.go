package triggers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// TestSettlementLocksGroupsInOneOrder: settle_invocations locks the groups
// of the messages it fails and acks together, in group-key order, before
// settling any (migration 009; pgqueue's TestGroupLocksTakenInOneOrder
// checks the statements it calls). With group "a" held elsewhere, a
// settlement that fails b's head and acks a's waits for "a" holding no lock
// on "b"; it settles both once "a" is free.
func TestSettlementLocksGroupsInOneOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.queue.CreateQueue(ctx, acct, "jobs", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	for i, g := range []string{"a", "b", "a", "b"} {
		if _, err := e.queue.Send(ctx, acct, "jobs", pgqueue.NewMessage{Body: json.RawMessage(fmt.Sprint(i)), Group: g}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.queue.Receive(ctx, acct, "jobs", pgqueue.ReceiveOptions{Max: 10, VisibilityTimeout: time.Minute})
	if err != nil || len(got) != 2 || got[0].Group != "a" || got[1].Group != "b" {
		t.Fatalf("receive the groups' heads: %+v, %v", got, err)
	}
	a, b := got[0], got[1]

	// By the queue's id, a query of one shard that Citus runs FOR UPDATE.
	qid := e.scalar(`SELECT id FROM {{schema}}.queues WHERE name = 'jobs'`)
	lockGroup := fmt.Sprintf(`SELECT 1 FROM %s.message_groups WHERE queue_id = %d AND group_key = $1 FOR UPDATE`,
		pgx.Identifier{e.schema}.Sanitize(), qid)
	holder, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, lockGroup, "a"); err != nil {
		t.Fatal(err)
	}

	params := make([]string, 36)
	for i := range params {
		params[i] = fmt.Sprintf("$%d", i+1)
	}
	settle := fmt.Sprintf("SELECT %s.settle_invocations(%s)", pgx.Identifier{e.schema}.Sanitize(), strings.Join(params, ", "))
	id := e.scalar(`SELECT nextval(pg_get_serial_sequence('{{schema}}.invocations', 'id'))`)
	record := []any{"fn", 1, nil, "queue", "jobs", "jobs-trigger",
		[]int64{id}, []int{2}, []time.Time{time.Now()}, []float64{1.5}, []string{"partial_failure"},
		[]*string{nil}, []string{"boom"}, []int{1}, []int{0}, []int{1},
		[]string{fmt.Sprintf("{%d,%d}", a.Sequence, b.Sequence)}, []*string{nil},
		[]int{0}, []int{0}, []int64{0}, []int64{0}}
	done := make(chan error, 1)
	go func() {
		done <- e.queue.SettleByID(ctx, acct, "jobs", []pgqueue.Ack{{Sequence: a.Sequence, Receipt: a.Receipt}}, nil,
			[]pgqueue.Failure{{Sequence: b.Sequence, Receipt: b.Receipt, Error: "boom"}}, settle, record...)
	}()

	// Wait until the settlement waits for the holder.
	pgtest.WaitBlockedBy(t, e.pool, holder.Conn().PgConn().PID(), done)
	probe, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = probe.Exec(ctx, lockGroup+" NOWAIT", "b")
	probe.Rollback(ctx)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55P03" {
		t.Errorf("while waiting for group a the settlement holds group b")
	} else if err != nil {
		t.Fatal(err)
	}
	holder.Rollback(ctx)
	if err := <-done; err != nil {
		t.Fatalf("the settlement, once group a was free: %v", err)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.dead_letters`); n != 1 {
		t.Errorf("dead letters after the settlement: %d, want 1 (b's head)", n)
	}
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages`); n != 2 {
		t.Errorf("messages after the settlement: %d, want 2 (each group's second)", n)
	}
	if n := e.scalar(`SELECT sum(acked + dead) FROM {{schema}}.invocations`); n != 2 {
		t.Errorf("the record's acked + dead: %d, want 2", n)
	}
}
