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

// The per-message options of a batch land on their own message at every
// chunk of queue_send_batch's INSERTs (sizes 1 to 123 take the statements
// of 1, 2, 5, 10 and 100 rows): headers, delays, expiry and groups, with
// NULLs inside the arrays (no header, the batch's delay, no expiry, no
// group) and arrays shorter than the bodies (the same as NULL for the
// rest); a delay below the queue's is raised to it. Values out of range
// are refused with the first one's error, in the array's order, and
// nothing of the batch is stored.
func TestSendBatchOptionValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.queue("oq", pgqueue.Settings{Delay: 2 * time.Second})
	qid := e.one(`SELECT id FROM queues WHERE name = 'oq'`).(int64)
	const batchDelay = 7

	for _, n := range []int{1, 2, 3, 5, 9, 10, 23, 100, 123} {
		tag := fmt.Sprintf("options-%d", n)
		bodies := make([]string, n)
		headers := make([]*string, n)
		delays := make([]*int32, max(n-1, 1)) // the last message has none when n > 1
		expires := make([]*int32, n)
		groups := make([]*string, n)
		type want struct {
			header        any // headers->>'k'
			delay, expiry any // seconds after created_at
			group         any
		}
		wants := make([]want, n)
		for k := range n {
			bodies[k] = fmt.Sprintf(`{"t":%q,"i":%d}`, tag, k)
			w := &wants[k]
			if k%4 != 0 {
				h := fmt.Sprintf(`{"k":"h%d"}`, k)
				headers[k] = &h
				w.header = fmt.Sprintf("h%d", k)
			}
			w.delay = int32(batchDelay)
			if k < len(delays) {
				var d int32
				switch {
				case k == n-2:
					d = 43200
				case k%5 == 0:
					d = -1 // NULL: the batch's delay
				case k%5 == 1:
					d = 1 // below the queue's 2 s
				default:
					d = int32(10*k + k%5)
				}
				if d >= 0 {
					delays[k] = &d
					w.delay = max(d, 2)
				}
			}
			if k%3 != 0 {
				x := int32(100 + k)
				if k == n-1 {
					x = 1209600
				}
				expires[k] = &x
				w.expiry = x
			}
			if k%6 != 5 {
				g := fmt.Sprintf("g%d", k%2)
				groups[k] = &g
				w.group = g
			}
		}
		seqs := e.rows(`SELECT s FROM queue_send_batch($1, $2, 'oq', $3::jsonb[], $4, $5::jsonb[], $6::int[], $7::int[], NULL, $8::text[]) s`,
			qid, acct, bodies, batchDelay, headers, delays, expires, groups)
		// A grouped message behind its group's head is parked (visible_at
		// infinity) with its own visibility kept in ready_at (migration 008).
		rows := e.rows(`SELECT sequence, (body->>'i')::int, headers->>'k', extract(epoch FROM coalesce(ready_at, visible_at) - created_at)::int,
		                       extract(epoch FROM expires_at - created_at)::int, group_key
		                  FROM messages WHERE queue_id = $1 AND body->>'t' = $2 ORDER BY sequence`, qid, tag)
		if len(seqs) != n || len(rows) != n {
			t.Fatalf("%s: %d sequences returned, %d messages stored, for %d sent", tag, len(seqs), len(rows), n)
		}
		for k, r := range rows {
			w := wants[k]
			if r[0] != seqs[k][0] || r[1] != int32(k) {
				t.Fatalf("%s: stored row %d is sequence %v, message %v; want sequence %v, message %d", tag, k, r[0], r[1], seqs[k][0], k)
			}
			if got := (want{r[2], r[3], r[4], r[5]}); got != w {
				t.Fatalf("%s: message %d has header, delay, expiry, group %v, want %v", tag, k, got, w)
			}
		}
	}

	// Out of range: the first bad value in the array's order is named, a
	// NULL before it skipped, and nothing is stored.
	for _, c := range []struct{ options, code, msg string }{
		{`0, NULL, '{NULL,-1,50000}'`, "SQ005", "invalid delay_seconds -1: use 0 to 43200"},
		{`0, NULL, '{NULL,43201,-1}'`, "SQ005", "invalid delay_seconds 43201: use 0 to 43200"},
		{`0, NULL, NULL, '{NULL,0,1209601}'`, "SQ005", "invalid expires_in_seconds 0: use 1 to 1209600"},
		{`0, NULL, NULL, '{1209601}'`, "SQ005", "invalid expires_in_seconds 1209601: use 1 to 1209600"},
		{`0, NULL, '{1,2,3}', '{5,5,0}'`, "SQ005", "invalid expires_in_seconds 0: use 1 to 1209600"},
		{`0, '{NULL,"{\"a\":1}","[1]"}'`, "SQ005", "invalid headers: use a JSON object or NULL"},
		{`-1, NULL, '{1,2,3}'`, "SQ005", "invalid delay_seconds -1: use 0 to 43200"},
	} {
		query := fmt.Sprintf(`SELECT * FROM queue_send_batch(%d, '%s', 'oq', '{1,2,3}', %s)`, qid, acct, c.options)
		if pgErr := e.sqlErr(query); pgErr.Code != c.code || pgErr.Message != c.msg {
			t.Fatalf("%s: %s %s, want %s %s", query, pgErr.Code, pgErr.Message, c.code, c.msg)
		}
	}
	if got := e.one(`SELECT count(*) FROM messages WHERE queue_id = $1 AND jsonb_typeof(body) = 'number'`, qid); got != int64(0) {
		t.Fatalf("%v messages stored from refused batches", got)
	}
}
