package pgqueue_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/pgqueue"
)

// A receive with Delete claims and deletes in one statement: under
// concurrent consumers no message is returned twice, every one is
// returned once, and nothing remains.
func TestReceiveDeleteConcurrentAtMostOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	const total = 3000
	batch := make([]pgqueue.NewMessage, 1000)
	for i := range batch {
		batch[i] = pgqueue.NewMessage{Body: body(i), Headers: []byte(`{"k":"v"}`)}
	}
	for range total / len(batch) {
		if _, err := e.c.SendBatch(e.ctx, acct, "q", batch); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var dup []int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for {
				msgs, err := e.c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 1 + w*3, Delete: true})
				if err != nil {
					errs <- err
					return
				}
				if len(msgs) == 0 {
					return
				}
				mu.Lock()
				for _, m := range msgs {
					if seen[m.Sequence] {
						dup = append(dup, m.Sequence)
					}
					seen[m.Sequence] = true
					if !m.Receipt.IsZero() || m.ReceiveCount != 1 || string(m.Headers) != `{"k": "v"}` {
						errs <- errors.New("receive with delete returned a receipt, a wrong count or lost headers")
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(dup) > 0 {
		t.Fatalf("%d messages returned twice, e.g. %v", len(dup), dup[:min(5, len(dup))])
	}
	if len(seen) != total {
		t.Fatalf("returned %d distinct messages, want %d", len(seen), total)
	}
	if s := e.stats("q"); s.Total != 0 {
		t.Fatalf("left %+v", s)
	}
}

// Delete ignores the visibility timeout, long-polls like a receive, and
// leaves delayed and leased messages alone.
func TestReceiveDeleteLeavesOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	leased := e.send("q", `{"n":1}`)
	e.receive("q", pgqueue.ReceiveOptions{})
	if _, err := e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: body(2), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ready := e.send("q", `{"n":3}`)
	got := e.receive("q", pgqueue.ReceiveOptions{Max: 10, Delete: true, VisibilityTimeout: time.Minute})
	if len(got) != 1 || got[0].Sequence != ready {
		t.Fatalf("receive with delete %v, want [%d] (leased %d)", seqs(got), ready, leased)
	}
	if s := e.stats("q"); s.Inflight != 1 || s.Delayed != 1 || s.Ready != 0 {
		t.Fatalf("stats %+v", s)
	}
	start := time.Now()
	go func() {
		time.Sleep(300 * time.Millisecond)
		e.c.Send(e.ctx, acct, "q", pgqueue.NewMessage{Body: body(4)})
	}()
	got = e.receive("q", pgqueue.ReceiveOptions{Delete: true, Wait: 10 * time.Second})
	if len(got) != 1 || time.Since(start) > 8*time.Second {
		t.Fatalf("long poll with delete returned %v after %v", seqs(got), time.Since(start))
	}
	if _, err := e.c.Receive(e.ctx, acct, "q", pgqueue.ReceiveOptions{Max: 1001, Delete: true}); !errors.Is(err, pgqueue.ErrInvalidArgument) {
		t.Fatalf("max 1001 with delete: %v", err)
	}
}

// send_entries takes per-entry options; receive_delete receives and
// deletes in one statement; bad entries get errors naming the entry and
// the allowed form.
func TestSQLSendEntriesAndReceiveDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec(`SELECT create_queue('jobs')`)
	rows := e.rows(`SELECT * FROM send_entries('jobs', '[
		{"body": {"n": 1}, "headers": {"k": "v"}, "expires_in_seconds": 60},
		{"body": "two", "delay_seconds": 3600},
		{"body": 3, "dedup_key": "d"},
		{"body": 4, "dedup_key": "d"}]')`)
	if len(rows) != 4 || rows[3][0] != rows[2][0] {
		t.Fatalf("send_entries returned %v (the repeated dedup key should return the first sequence)", rows)
	}
	if v := e.one(`SELECT delayed FROM queue_stats WHERE queue = 'jobs'`); v != int64(1) {
		t.Fatalf("delayed = %v", v)
	}
	got := e.rows(`SELECT sequence, headers, receipt, receive_count FROM receive_delete('jobs', 10)`)
	if len(got) != 2 || got[0][2] != nil || got[0][3] != int32(1) {
		t.Fatalf("receive_delete returned %v", got)
	}
	if h, ok := got[0][1].(map[string]any); !ok || h["k"] != "v" {
		t.Fatalf("headers %v", got[0][1])
	}
	if v := e.one(`SELECT total FROM queue_stats WHERE queue = 'jobs'`); v != int64(1) {
		t.Fatalf("total after receive_delete = %v, want the delayed one", v)
	}
	if n := len(e.rows(`SELECT * FROM receive_delete('jobs')`)); n != 0 {
		t.Fatalf("second receive_delete returned %d", n)
	}

	for _, c := range []struct{ entries, msg string }{
		{`{}`, "invalid entries: use a JSON array of 1 to 1000 objects"},
		{`[]`, "invalid number of entries 0: use 1 to 1000"},
		{`[1]`, "invalid entries[0]: use an object"},
		{`[{"body": 1}, {"headers": {}}]`, `entries[1] has no body`},
		{`[{"body": null}]`, `entries[0] has no body`},
		{`[{"body": 1, "priority": "g"}]`, `unknown field "priority" in entries[0]`},
		{`[{"body": 1, "group": 7}]`, `invalid entries[0].group`},
		{`[{"body": 1, "group": ""}]`, `invalid entries[0].group`},
		{`[{"body": 1, "headers": {"k": 1}}]`, `invalid entries[0].headers: use a JSON object of string values`},
		{`[{"body": 1, "headers": ["k"]}]`, `invalid entries[0].headers`},
		{`[{"body": 1, "delay_seconds": 43201}]`, `invalid entries[0].delay_seconds 43201: use an integer from 0 to 43200`},
		{`[{"body": 1, "delay_seconds": 1.5}]`, `invalid entries[0].delay_seconds 1.5`},
		{`[{"body": 1, "expires_in_seconds": 0}]`, `invalid entries[0].expires_in_seconds 0: use an integer from 1 to 1209600`},
		{`[{"body": 1, "dedup_key": ""}]`, `invalid entries[0].dedup_key: use a string of 1 to 128 characters`},
		{`[{"body": 1, "dedup_key": 7}]`, `invalid entries[0].dedup_key`},
	} {
		tx, err := e.pool.Begin(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(e.ctx, `SELECT * FROM `+pgxIdent(e.schema)+`.send_entries('jobs', $1)`, c.entries)
		tx.Rollback(e.ctx)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "SQ005" || !strings.Contains(pgErr.Message, c.msg) {
			t.Errorf("send_entries(%s): %v, want SQ005 %q", c.entries, err, c.msg)
		}
	}
	many := "[" + strings.Repeat(`{"body":1},`, 1000) + `{"body":1}]`
	tx, _ := e.pool.Begin(e.ctx)
	defer tx.Rollback(e.ctx)
	_, err := tx.Exec(e.ctx, `SELECT * FROM `+pgxIdent(e.schema)+`.send_entries('jobs', $1)`, many)
	if err == nil || !strings.Contains(err.Error(), "invalid number of entries 1001: use 1 to 1000") {
		t.Fatalf("1001 entries: %v", err)
	}
}
