package pgqueue_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
)

// batchSizes are the batch sizes around every chunk boundary of
// queue_send_batch's INSERTs (statements of 100, 10, 5, 2 and 1 rows,
// migration 015), up to the maximum of 1000.
var batchSizes = []int{0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 15, 17, 19, 20, 21, 23, 99, 100, 101, 110, 111, 199, 999, 1000}

// A batch of any size stores exactly its messages and returns their
// sequences in the batch's order, growing, the sequence at position k
// naming the message sent at position k: through the Go client (by queue
// id), the SQL forms by id, by name and the default account's short form,
// with per-message options (headers, delays, expiry), in a group, and with
// dedup keys repeated within and across batches.
func TestSendBatchSizes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("q", pgqueue.Settings{})
	qid := e.one(`SELECT id FROM queues WHERE name = 'q'`).(int64)

	var last int64
	// check verifies the sequences seqs returned for the batch tagged tag
	// of n messages (bodies {"t": tag, "i": k}).
	check := func(tag string, n int, seqs []int64) {
		t.Helper()
		if len(seqs) != n {
			t.Fatalf("%s: %d sequences for %d messages", tag, len(seqs), n)
		}
		for k, s := range seqs {
			if s <= last {
				t.Fatalf("%s: sequence %d at position %d after %d: not in the batch's order", tag, s, k, last)
			}
			last = s
		}
		rows := e.rows(`SELECT sequence, (body->>'i')::int FROM messages WHERE queue_id = $1 AND body->>'t' = $2 ORDER BY sequence`, qid, tag)
		if len(rows) != n {
			t.Fatalf("%s: %d messages stored for %d sent", tag, len(rows), n)
		}
		for k, r := range rows {
			if r[0].(int64) != seqs[k] || int(r[1].(int32)) != k {
				t.Fatalf("%s: stored row %d is sequence %v, message %v; want sequence %d, message %d", tag, k, r[0], r[1], seqs[k], k)
			}
		}
	}
	bodies := func(tag string, n int) []string {
		out := make([]string, n)
		for k := range out {
			out[k] = fmt.Sprintf(`{"t":%q,"i":%d}`, tag, k)
		}
		return out
	}
	messages := func(tag string, n int) []pgqueue.NewMessage {
		out := make([]pgqueue.NewMessage, n)
		for k, b := range bodies(tag, n) {
			out[k] = pgqueue.NewMessage{Body: json.RawMessage(b)}
		}
		return out
	}
	sqlSeqs := func(query string, args ...any) []int64 {
		t.Helper()
		var out []int64
		for _, r := range e.rows(query, args...) {
			out = append(out, r[0].(int64))
		}
		return out
	}

	for _, n := range batchSizes {
		tag := fmt.Sprintf("client-%d", n)
		seqs, err := e.c.SendBatch(e.ctx, acct, "q", messages(tag, n))
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		check(tag, n, seqs)

		tag = fmt.Sprintf("by-id-%d", n)
		check(tag, n, sqlSeqs(`SELECT s FROM queue_send_batch($1, $2, 'q', $3::jsonb[]) s`, qid, acct, bodies(tag, n)))
		tag = fmt.Sprintf("by-name-%d", n)
		check(tag, n, sqlSeqs(`SELECT s FROM account_send_batch($1, 'q', $2::jsonb[]) s`, acct, bodies(tag, n)))
		tag = fmt.Sprintf("short-%d", n)
		check(tag, n, sqlSeqs(`SELECT s FROM send_batch('q', $1::jsonb[]) s`, bodies(tag, n)))

		// Per-message options: headers on odd positions, a delay of k%3
		// seconds, an expiry of 100+k seconds on even positions.
		tag = fmt.Sprintf("options-%d", n)
		ms := messages(tag, n)
		for k := range ms {
			if k%2 == 1 {
				ms[k].Headers = json.RawMessage(fmt.Sprintf(`{"k":"%d"}`, k))
			}
			ms[k].Delay = time.Duration(k%3) * time.Second
			if k%2 == 0 {
				ms[k].ExpiresIn = time.Duration(100+k) * time.Second
			}
		}
		if seqs, err = e.c.SendBatch(e.ctx, acct, "q", ms); err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		check(tag, n, seqs)
		rows := e.rows(`SELECT headers->>'k', extract(epoch FROM visible_at - created_at)::int,
		                       extract(epoch FROM expires_at - created_at)::int
		                  FROM messages WHERE queue_id = $1 AND body->>'t' = $2 ORDER BY sequence`, qid, tag)
		for k, r := range rows {
			var want [3]any
			if k%2 == 1 {
				want[0] = fmt.Sprint(k)
			}
			want[1] = int32(k % 3)
			if k%2 == 0 {
				want[2] = int32(100 + k)
			}
			if r[0] != want[0] || r[1] != want[1] || r[2] != want[2] {
				t.Fatalf("%s: message %d has headers.k, delay, expiry %v, want %v", tag, k, r, want)
			}
		}

		// One group, in the batch's order.
		tag = fmt.Sprintf("group-%d", n)
		ms = messages(tag, n)
		for k := range ms {
			ms[k].Group = tag
		}
		if seqs, err = e.c.SendBatch(e.ctx, acct, "q", ms); err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		check(tag, n, seqs)
		if got := e.one(`SELECT count(*) FROM messages WHERE queue_id = $1 AND group_key = $2`, qid, tag); got != int64(n) {
			t.Fatalf("%s: %v messages in the group, want %d", tag, got, n)
		}
	}

	// Over the maximum.
	if pgErr := e.sqlErr(`SELECT * FROM send_batch('q', (SELECT array_agg('1'::jsonb) FROM generate_series(1, 1001)))`); pgErr.Code != "SQ005" ||
		!strings.Contains(pgErr.Message, "batch size 1001") {
		t.Fatalf("a batch of 1001: %s %s", pgErr.Code, pgErr.Message)
	}
	// The first bad body of a batch larger than a chunk is the one named,
	// and nothing of the batch is stored.
	e.exec(`SELECT create_queue('small', '{"max_message_bytes": 10}')`)
	if pgErr := e.sqlErr(`SELECT * FROM send_batch('small', array_fill('1'::jsonb, ARRAY[150]) || '"a long body"'::jsonb || '"another long one"'::jsonb)`); pgErr.Code != "SQ004" ||
		!strings.Contains(pgErr.Message, "body is 13 bytes") {
		t.Fatalf("an oversized body at position 150: %s %s", pgErr.Code, pgErr.Message)
	}
	if pgErr := e.sqlErr(`SELECT * FROM send_batch('small', array_fill('1'::jsonb, ARRAY[23]) || NULL::jsonb)`); pgErr.Code != "SQ005" ||
		!strings.Contains(pgErr.Message, "batch index 23") {
		t.Fatalf("a NULL body at position 23: %s %s", pgErr.Code, pgErr.Message)
	}
	if v := e.one(`SELECT count(*) FROM messages m JOIN queues q ON q.id = m.queue_id WHERE q.name = 'small'`); v != int64(0) {
		t.Fatalf("%v messages stored from refused batches", v)
	}
	// Arrays that do not count from 1 in one dimension are read in order,
	// as unnest reads them.
	for _, arr := range []string{`'{{1,2},{3,4}}'::jsonb[]`, `'[0:3]={1,2,3,4}'::jsonb[]`} {
		e.exec(`DELETE FROM messages WHERE queue_id = $1`, qid)
		if n := len(e.rows(`SELECT * FROM send_batch('q', ` + arr + `)`)); n != 4 {
			t.Fatalf("send_batch of %s returned %d sequences", arr, n)
		}
		if got := e.one(`SELECT string_agg(body::text, '' ORDER BY sequence) FROM messages WHERE queue_id = $1`, qid); got != "1234" {
			t.Fatalf("send_batch of %s stored %v", arr, got)
		}
	}

	// Dedup keys: repeated inside a batch (position 5 repeats 2's key) and
	// across batches (the second batch repeats every key of the first and
	// adds one).
	keyed := func(tag string, n int, key func(k int) string) []int64 {
		t.Helper()
		ms := messages(tag, n)
		for k := range ms {
			ms[k].DedupKey = key(k)
		}
		seqs, err := e.c.SendBatch(e.ctx, acct, "q", ms)
		if err != nil || len(seqs) != n {
			t.Fatalf("%s: %v %v", tag, seqs, err)
		}
		return seqs
	}
	first := keyed("dedup-1", 23, func(k int) string {
		if k == 5 {
			return "key-2"
		}
		return fmt.Sprintf("key-%d", k)
	})
	if first[5] != first[2] {
		t.Fatalf("a key repeated inside the batch got sequence %d, want %d", first[5], first[2])
	}
	prev := int64(0)
	for k, s := range first {
		if k == 5 {
			continue
		}
		if s <= prev {
			t.Fatalf("dedup batch: sequence %d at position %d after %d", s, k, prev)
		}
		prev = s
	}
	second := keyed("dedup-2", 24, func(k int) string { return fmt.Sprintf("key-%d", k) })
	for k := range 23 {
		if k != 5 && second[k] != first[k] {
			t.Fatalf("key-%d sent again: sequence %d, want the first batch's %d", k, second[k], first[k])
		}
	}
	// key-5 (not taken by the first batch) and key-23 are new.
	if second[5] <= first[22] || second[23] <= second[5] {
		t.Fatalf("new keys of the second batch: sequences %d and %d after %d", second[5], second[23], first[22])
	}
	if got := e.one(`SELECT count(*) FROM messages WHERE queue_id = $1 AND body->>'t' LIKE 'dedup-%'`, qid); got != int64(22+2) {
		t.Fatalf("%v messages stored for 24 distinct keys", got)
	}
}
