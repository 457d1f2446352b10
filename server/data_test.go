package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/wire"
)

func TestDataPlaneRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("orders")
	q := "/" + acct + "/orders"

	var one struct{ Sequence int64 }
	e.do(tok, "POST", q+"/messages", `{"id": 1}`).expect(201).decode(&one)
	if one.Sequence <= 0 {
		t.Fatalf("sequence %d", one.Sequence)
	}
	var batch struct{ Sequences []int64 }
	e.do(tok, "POST", q+"/messages", `[{"id": 2}, "plain", 3]`).expect(201).decode(&batch)
	if len(batch.Sequences) != 3 || batch.Sequences[0] <= one.Sequence {
		t.Fatalf("batch sequences %v after %d", batch.Sequences, one.Sequence)
	}

	peeked := e.do(tok, "GET", q+"/messages?max_messages=2", "").expect(200).messages()
	if len(peeked) != 2 || peeked[0].Receipt != "" || string(peeked[0].Body) != `{"id":1}` {
		t.Fatalf("peek %+v", peeked)
	}

	got := e.do(tok, "POST", q+"/messages/receive", `{"max_messages": 10, "visibility_timeout_seconds": 60}`).expect(200).messages()
	if len(got) != 4 || got[0].Sequence != one.Sequence || got[0].Receipt == "" || got[0].ReceiveCount != 1 {
		t.Fatalf("receive %+v", got)
	}
	if string(got[2].Body) != `"plain"` || string(got[2].Headers) != "null" {
		t.Fatalf("message 3 %+v", got[2])
	}
	if got[0].CreatedAt.Location() != time.UTC || !got[0].VisibleAt.After(got[0].CreatedAt) {
		t.Fatalf("times %v %v", got[0].CreatedAt, got[0].VisibleAt)
	}

	// Ack with the receipt; a second delete is a 404.
	e.do(tok, "DELETE", fmt.Sprintf("%s/messages/%d?receipt=%s", q, got[0].Sequence, got[0].Receipt), "").expect(204)
	e.do(tok, "DELETE", fmt.Sprintf("%s/messages/%d", q, got[0].Sequence), "").expectError(404, "message_not_found")

	// Visibility 0 makes message 2 receivable again; its old receipt is then stale.
	e.do(tok, "POST", fmt.Sprintf("%s/messages/%d/visibility", q, got[1].Sequence), fmt.Sprintf(`{"seconds": 0, "receipt": %q}`, got[1].Receipt)).expect(204)
	again := e.do(tok, "POST", q+"/messages/receive", "").expect(200).messages()
	if len(again) != 1 || again[0].Sequence != got[1].Sequence || again[0].ReceiveCount != 2 {
		t.Fatalf("receive again %+v", again)
	}
	e.do(tok, "DELETE", fmt.Sprintf("%s/messages/%d?receipt=%s", q, got[1].Sequence, got[1].Receipt), "").expectError(409, "stale_receipt")

	var purged struct{ Purged int64 }
	e.do(tok, "DELETE", q+"/messages", "").expect(200).decode(&purged)
	if purged.Purged != 3 {
		t.Fatalf("purged %d, want 3", purged.Purged)
	}
	if n := len(e.do(tok, "GET", q+"/messages", "").expect(200).messages()); n != 0 {
		t.Fatalf("%d messages after purge", n)
	}
}

func TestReceiveWithDeleteAndLongPoll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("jobs")
	q := "/" + acct + "/jobs"

	// A long poll returns as soon as a message is sent.
	done := make(chan []wire.Message, 1)
	start := time.Now()
	go func() {
		res := e.do(tok, "POST", q+"/messages/receive", `{"wait_seconds": 10, "delete": true}`)
		var out struct{ Messages []wire.Message }
		_ = json.Unmarshal(res.body, &out)
		done <- out.Messages
	}()
	time.Sleep(200 * time.Millisecond)
	e.do(tok, "POST", q+"/messages", `{"job": "x"}`).expect(201)
	var got []wire.Message
	select {
	case got = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("long poll did not return after a send")
	}
	if len(got) != 1 || got[0].Receipt != "" {
		t.Fatalf("receive with delete %+v", got)
	}
	if time.Since(start) > 14*time.Second {
		t.Fatalf("long poll took %v", time.Since(start))
	}
	// Deleted: nothing left to peek.
	if n := len(e.do(tok, "GET", q+"/messages", "").expect(200).messages()); n != 0 {
		t.Fatalf("%d messages left after receive with delete", n)
	}

	// delete=true also needs mq:delete.
	recvOnly := e.key(acct, []string{ScopeRecv})
	e.do(recvOnly, "POST", q+"/messages/receive", `{"delete": true}`).expectError(403, "forbidden")
	e.do(recvOnly, "POST", q+"/messages/receive", `{}`).expect(200)
}

func TestDLQRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name": "mail", "max_receive_count": 1}`).expect(201)
	q := "/" + acct + "/mail"
	e.do(tok, "POST", q+"/messages", `[{"n":1},{"n":2},{"n":3}]`).expect(201)
	msgs := e.do(tok, "POST", q+"/messages/receive", `{"max_messages": 3, "visibility_timeout_seconds": 0}`).expect(200).messages()
	if len(msgs) != 3 {
		t.Fatalf("received %d", len(msgs))
	}
	// The last lease expires within a second; the sweeper moves them.
	var dead []wire.DeadLetter
	deadline := time.Now().Add(30 * time.Second)
	for len(dead) < 3 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		var out struct{ Messages []wire.DeadLetter }
		e.do(tok, "GET", q+"/dlq?max_messages=100", "").expect(200).decode(&out)
		dead = out.Messages
	}
	if len(dead) != 3 || dead[0].Reason != "max_receive_count" || dead[0].FailedAt.IsZero() {
		t.Fatalf("dead letters %+v", dead)
	}
	e.do(tok, "DELETE", fmt.Sprintf("%s/dlq/%d", q, dead[0].Sequence), "").expect(204)
	e.do(tok, "DELETE", fmt.Sprintf("%s/dlq/%d", q, dead[0].Sequence), "").expectError(404, "message_not_found")
	var rd struct{ Redriven int64 }
	e.do(tok, "POST", q+"/dlq/redrive", `{"max_messages": 1}`).expect(200).decode(&rd)
	if rd.Redriven != 1 {
		t.Fatalf("redriven %d", rd.Redriven)
	}
	var pd struct{ Purged int64 }
	e.do(tok, "DELETE", q+"/dlq", "").expect(200).decode(&pd)
	if pd.Purged != 1 {
		t.Fatalf("purged %d dead letters, want 1", pd.Purged)
	}
	if n := len(e.do(tok, "GET", q+"/messages", "").expect(200).messages()); n != 1 {
		t.Fatalf("%d messages after redrive, want 1", n)
	}
	e.do(tok, "POST", q+"/dlq/redrive", "").expect(200)
}

func TestSendDelayAndDedup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	q := "/" + acct + "/q"
	var a, b struct{ Sequence int64 }
	e.do(tok, "POST", q+"/messages?dedup_key=k1", `{"x":1}`).expect(201).decode(&a)
	e.do(tok, "POST", q+"/messages?dedup_key=k1", `{"x":2}`).expect(201).decode(&b)
	if a.Sequence != b.Sequence {
		t.Fatalf("dedup: %d then %d", a.Sequence, b.Sequence)
	}
	e.do(tok, "POST", q+"/messages?delay_seconds=3600", `{"later":true}`).expect(201)
	var qi wire.Queue
	e.do(tok, "GET", "/v1/accounts/"+acct+"/queues/q", "").expect(200).decode(&qi)
	if qi.Stats == nil || qi.Stats.Ready != 1 || qi.Stats.Delayed != 1 {
		t.Fatalf("stats %+v", qi.Stats)
	}
	// A message over the queue's limit is 413 message_too_large.
	e.do(tok, "PATCH", "/v1/accounts/"+acct+"/queues/q", `{"max_message_bytes": 100}`).expect(200)
	e.do(tok, "POST", q+"/messages", `{"big":"`+strings.Repeat("x", 200)+`"}`).expectError(http.StatusRequestEntityTooLarge, "message_too_large")
}

// pageAll reads path page by page (max_messages=100, after = the last
// sequence seen) until a short page, checking order, and returns the
// sequences.
func (e *env) pageAll(tok, path string) []int64 {
	e.t.Helper()
	var all []int64
	after := int64(0)
	for {
		ms := e.do(tok, "GET", fmt.Sprintf("%s?max_messages=100&after=%d", path, after), "").expect(200).messages()
		for _, m := range ms {
			if m.Sequence <= after {
				e.t.Fatalf("%s after %d: sequence %d out of order", path, after, m.Sequence)
			}
			after = m.Sequence
			all = append(all, m.Sequence)
		}
		if len(ms) < 100 {
			return all
		}
	}
}

func TestPagingAndSelectiveRedrive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("big")
	q := "/" + acct + "/big"
	ctx := t.Context()
	ms := make([]pgqueue.NewMessage, 250)
	for i := range ms {
		ms[i] = pgqueue.NewMessage{Body: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	sent, err := e.srv.queue.SendBatch(ctx, acct, "big", ms)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.pageAll(tok, q+"/messages"); !slices.Equal(got, sent) {
		t.Fatalf("paged %d messages, want %d", len(got), len(sent))
	}
	// 180 dead letters, failed newest first.
	fails := make([]pgqueue.Failure, 180)
	for i := range fails {
		fails[i] = pgqueue.Failure{Sequence: sent[179-i]}
	}
	if _, err := e.srv.queue.Fail(ctx, acct, "big", fails); err != nil {
		t.Fatal(err)
	}
	if got := e.pageAll(tok, q+"/dlq"); !slices.Equal(got, sent[:180]) {
		t.Fatalf("paged %d dead letters, want 180", len(got))
	}
	if got := e.pageAll(tok, q+"/messages"); !slices.Equal(got, sent[180:]) {
		t.Fatalf("paged %d messages after the failures, want 70", len(got))
	}
	for _, bad := range []string{"-1", "x", "9223372036854775808", "01"} {
		msg := e.do(tok, "GET", q+"/messages?after="+bad, "").expectError(400, "invalid_argument")
		if !strings.Contains(msg, "after") {
			t.Errorf("after=%s: %s", bad, msg)
		}
		e.do(tok, "GET", q+"/dlq?after="+bad, "").expectError(400, "invalid_argument")
	}

	// Redrive two dead letters and a message that is not dead: 2 move.
	var out struct{ Redriven int64 }
	e.do(tok, "POST", q+"/dlq/redrive", fmt.Sprintf(`{"sequences": [%d, %d, %d]}`, sent[10], sent[20], sent[200])).expect(200).decode(&out)
	if out.Redriven != 2 {
		t.Fatalf("redriven %d, want 2", out.Redriven)
	}
	e.do(tok, "POST", q+"/dlq/redrive", fmt.Sprintf(`{"sequences": [%d]}`, sent[10])).expect(200).decode(&out)
	if out.Redriven != 0 {
		t.Fatalf("redriven again %d, want 0", out.Redriven)
	}
	if got := e.pageAll(tok, q+"/dlq"); len(got) != 178 || slices.Contains(got, sent[10]) || slices.Contains(got, sent[20]) {
		t.Fatalf("dlq after redrive: %d dead letters", len(got))
	}
	thousand := strings.Repeat("1,", 1000)
	for body, want := range map[string]string{
		`{"sequences": [1], "max_messages": 5}`:            "not both",
		`{"sequences": []}`:                                "1 to 1000",
		`{"sequences": [` + thousand + `1]}`:               "got 1001",
		`{"sequences": [3, 4, 3]}`:                         "sequence 3 is given twice",
		`{"sequences": [0]}`:                               "sequences[0] 0",
		`{"sequences": [1, "2"]}`:                          "sequences[1]",
		`{"sequences": [1, null]}`:                         "sequences[1] null",
		`{"sequences": [1.5]}`:                             "sequences[0]",
		`{"sequences": 7}`:                                 "sequences",
		`{"sequences": [1], "max_messages": null, "x": 1}`: "unknown field",
	} {
		if msg := e.do(tok, "POST", q+"/dlq/redrive", body).expectError(400, "invalid_argument"); !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want it to say %q", truncate(body, 60), msg, want)
		}
	}
	// The old forms still work.
	e.do(tok, "POST", q+"/dlq/redrive", `{"max_messages": 8}`).expect(200).decode(&out)
	if out.Redriven != 8 {
		t.Fatalf("redriven %d, want 8", out.Redriven)
	}
	e.do(tok, "POST", q+"/dlq/redrive", `{}`).expect(200).decode(&out)
	if out.Redriven != 170 {
		t.Fatalf("redriven %d, want 170", out.Redriven)
	}
}
