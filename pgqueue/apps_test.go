package pgqueue_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/pgqueue"
)

// A queue records the app that owns it: "" when made by hand, then what
// SetQueueApp sets, visible to SQL users as queues.app; MessageCount
// counts every message and dead letter a deletion would lose.
func TestQueueApps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, q := range []string{"a", "b"} {
		if _, err := e.c.CreateQueue(e.ctx, acct, q, pgqueue.Settings{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.SetQueueApp(e.ctx, acct, "a", "shop"); err != nil {
		t.Fatal(err)
	}
	apps, err := e.c.QueueApps(e.ctx, acct)
	if err != nil || len(apps) != 2 || apps["a"] != "shop" || apps["b"] != "" {
		t.Errorf("queue apps = %v, %v; want a: shop, b: none", apps, err)
	}
	if rows := e.rows(`SELECT app FROM queues WHERE name = 'a'`); len(rows) != 1 || rows[0][0] != "shop" {
		t.Errorf("queues.app of a = %v", rows)
	}
	if err := e.c.SetQueueApp(e.ctx, acct, "missing", "shop"); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Errorf("set app of a missing queue: %v", err)
	}
	if err := e.c.SetQueueApp(e.ctx, acct, "a", "no spaces"); !errors.Is(err, pgqueue.ErrInvalidName) {
		t.Errorf("set an invalid app name: %v", err)
	}
	if err := e.c.SetQueueApp(e.ctx, acct, "a", ""); err != nil {
		t.Errorf("release a queue from its app: %v", err)
	}

	for range 3 {
		if _, err := e.c.Send(e.ctx, acct, "b", pgqueue.NewMessage{Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := e.c.Receive(e.ctx, acct, "b", pgqueue.ReceiveOptions{Max: 2})
	if err != nil || len(ms) != 2 {
		t.Fatalf("receive: %v, %v", ms, err)
	}
	if _, err := e.c.Fail(e.ctx, acct, "b", []pgqueue.Failure{{Sequence: ms[0].Sequence, Receipt: ms[0].Receipt}}); err != nil {
		t.Fatal(err)
	}
	// 1 ready, 1 in flight, 1 dead.
	if n, err := e.c.MessageCount(e.ctx, acct, "b"); err != nil || n != 3 {
		t.Errorf("message count = %d, %v; want 3", n, err)
	}
	if _, err := e.c.MessageCount(e.ctx, acct, "missing"); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Errorf("message count of a missing queue: %v", err)
	}
}
