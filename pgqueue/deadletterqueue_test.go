package pgqueue_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

// A queue with a dead_letter_queue sends its dead letters there as new
// messages, from the sweeper and from Fail alike; without one they stay
// in the dead-letter table.
func TestDeadLetterQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("dead", pgqueue.Settings{})
	q, err := e.c.CreateQueue(e.ctx, acct, "work", pgqueue.Settings{MaxReceiveCount: 1, DeadLetterQueue: "dead"})
	if err != nil || q.Settings.DeadLetterQueue != "dead" {
		t.Fatalf("create with a dead-letter queue: %+v %v", q.Settings, err)
	}
	if got, err := e.c.GetQueue(e.ctx, acct, "work"); err != nil || got.Settings.DeadLetterQueue != "dead" {
		t.Fatalf("get: %+v %v", got.Settings, err)
	}

	// The sweeper: the last lease expires.
	seq := e.send("work", `{"n":1}`)
	msgs := e.receive("work", pgqueue.ReceiveOptions{Max: 1, VisibilityTimeout: time.Second})
	if len(msgs) != 1 {
		t.Fatalf("received %d", len(msgs))
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.stats("dead").Total == 0 && time.Now().Before(deadline) {
		e.sweep()
		time.Sleep(100 * time.Millisecond)
	}
	moved := e.receive("dead", pgqueue.ReceiveOptions{Max: 10})
	if len(moved) != 1 || string(moved[0].Body) != `{"n": 1}` {
		t.Fatalf("dead-letter queue got %+v", moved)
	}
	var h struct {
		DL struct {
			Queue    string `json:"queue"`
			Sequence int64  `json:"sequence"`
			Reason   string `json:"reason"`
		} `json:"sluice_dead_letter"`
	}
	if err := json.Unmarshal(moved[0].Headers, &h); err != nil || h.DL.Queue != "work" || h.DL.Sequence != seq || h.DL.Reason != "max_receive_count" {
		t.Fatalf("headers %s: %v", moved[0].Headers, err)
	}
	if s := e.stats("work"); s.DLQ != 0 || s.Total != 0 {
		t.Fatalf("work after the move: %+v", s)
	}

	// Fail (permanent failures, reject_on_error).
	seq = e.send("work", `{"n":2}`)
	if done, err := e.c.Fail(e.ctx, acct, "work", []pgqueue.Failure{{Sequence: seq, Error: "boom"}}); err != nil || len(done) != 1 {
		t.Fatalf("fail: %v %v", done, err)
	}
	moved = e.receive("dead", pgqueue.ReceiveOptions{Max: 10})
	if len(moved) != 1 || !strings.Contains(string(moved[0].Headers), `"boom"`) || !strings.Contains(string(moved[0].Headers), "permanent_failure") {
		t.Fatalf("failed message in the dead-letter queue: %+v", moved)
	}

	// Cleared: back to the dead-letter table.
	if _, err := e.c.PatchQueue(e.ctx, acct, "work", pgqueue.QueueOptions{"dead_letter_queue": nil}); err != nil {
		t.Fatal(err)
	}
	e.fail("work", []int64{e.send("work", `3`)})
	if s := e.stats("work"); s.DLQ != 1 {
		t.Fatalf("dlq table after clearing: %+v", s)
	}
	// A dead-letter queue in use is not deleted: the error names its
	// users, and nothing changes until their setting does.
	if _, err := e.c.PatchQueue(e.ctx, acct, "work", pgqueue.QueueOptions{"dead_letter_queue": "dead"}); err != nil {
		t.Fatal(err)
	}
	e.queue("other", pgqueue.Settings{DeadLetterQueue: "dead"})
	held := e.stats("dead").Total
	err = e.c.DeleteQueue(e.ctx, acct, "dead")
	if !errors.Is(err, pgqueue.ErrQueueInUse) ||
		!strings.Contains(err.Error(), `queue "dead" is the dead_letter_queue of "other", "work" in account `+acct) {
		t.Fatalf("deleting a dead-letter queue in use: %v", err)
	}
	if got, err := e.c.GetQueue(e.ctx, acct, "work"); err != nil || got.Settings.DeadLetterQueue != "dead" {
		t.Fatalf("work after the refused delete: %+v %v", got.Settings, err)
	}
	if s := e.stats("dead"); s.Total != held || held == 0 {
		t.Fatalf("dead after the refused delete: %+v", s)
	}
	// The SQL API refuses it alike.
	_, sqlErr := e.pool.Exec(e.ctx, "SELECT "+pgxIdent(e.schema)+".account_delete_queue($1, 'dead')", acct)
	if qe, ok := pgqueue.AsError(sqlErr); !ok || !errors.Is(qe, pgqueue.ErrQueueInUse) {
		t.Fatalf("SQL delete_queue of a dead-letter queue in use: %v", sqlErr)
	}
	for _, q := range []string{"work", "other"} {
		if _, err := e.c.PatchQueue(e.ctx, acct, q, pgqueue.QueueOptions{"dead_letter_queue": nil}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.DeleteQueue(e.ctx, acct, "dead"); err != nil {
		t.Fatalf("delete once no queue names it: %v", err)
	}
	if s := e.stats("work"); s.DLQ != 1 {
		t.Fatalf("work's dead letters after deleting the former dead-letter queue: %+v", s)
	}
}

func TestDeadLetterQueueRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("a", pgqueue.Settings{})
	e.queue("b", pgqueue.Settings{DeadLetterQueue: "a"})
	e.queue("c", pgqueue.Settings{DeadLetterQueue: "b"})
	for name, opts := range map[string]pgqueue.QueueOptions{
		"unknown queue": {"dead_letter_queue": "nope"},
		"itself":        {"dead_letter_queue": "a"},
		"a cycle":       {"dead_letter_queue": "c"},
		"not a string":  {"dead_letter_queue": 7},
	} {
		_, err := e.c.PatchQueue(e.ctx, acct, "a", opts)
		if !errors.Is(err, pgqueue.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := e.c.CreateQueueWithOptions(e.ctx, acct, "d", pgqueue.QueueOptions{"dead_letter_queue": "d"}); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Errorf("create as its own: %v", err)
	}
	_, err := e.c.PatchQueue(e.ctx, acct, "a", pgqueue.QueueOptions{"dead_letter_queue": "c"})
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle message: %v", err)
	}
	// From SQL.
	if err := e.tryExec(`SELECT create_queue('e', '{"dead_letter_queue": "missing"}')`); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Errorf("SQL unknown target: %v", err)
	}
	e.exec(`SELECT create_queue('e', '{"dead_letter_queue": "a"}')`)
}
