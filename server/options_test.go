package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/wire"
)

// POST .../messages/entries sends entries with their own options; the
// query form takes expires_in_seconds; received and peeked messages carry
// their headers.
func TestSendEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	q := "/" + acct + "/q"
	var res wire.SendBatchResult
	e.do(tok, "POST", q+"/messages/entries", `{"entries": [
		{"body": {"n": 1}, "headers": {"trace": "abc"}, "expires_in_seconds": 60},
		{"body": "two", "delay_seconds": 3600},
		{"body": [3], "dedup_key": "d"},
		{"body": 4, "dedup_key": "d", "headers": null}]}`).expect(201).decode(&res)
	if len(res.Sequences) != 4 || res.Sequences[3] != res.Sequences[2] {
		t.Fatalf("sequences %v (the repeated dedup key should answer the first sequence)", res.Sequences)
	}
	peeked := e.do(tok, "GET", q+"/messages", "").expect(200).messages()
	if len(peeked) != 2 || string(peeked[0].Headers) != `{"trace":"abc"}` || string(peeked[1].Body) != `[3]` {
		t.Fatalf("peek %+v", peeked)
	}
	got := e.do(tok, "POST", q+"/messages/receive", `{"max_messages": 10}`).expect(200).messages()
	if len(got) != 2 || string(got[0].Headers) != `{"trace":"abc"}` || string(got[1].Headers) != "null" {
		t.Fatalf("receive %+v", got)
	}
	var qi wire.Queue
	e.do(tok, "GET", "/v1/accounts/"+acct+"/queues/q", "").expect(200).decode(&qi)
	if qi.Stats == nil || qi.Stats.Delayed != 1 || qi.Stats.Inflight != 2 {
		t.Fatalf("stats %+v", qi.Stats)
	}

	// The query form: expiration for one message or a whole batch.
	e.do(tok, "POST", q+"/messages?expires_in_seconds=1&delay_seconds=2", `{"gone": true}`).expect(201)
	e.do(tok, "POST", q+"/messages?expires_in_seconds=1209600", `[1, 2]`).expect(201)

	// Scope: entries is a send.
	recvOnly := e.key(acct, []string{ScopeRecv})
	e.do(recvOnly, "POST", q+"/messages/entries", `{"entries": [{"body": 1}]}`).expectError(403, "forbidden")
}

// Each bad input is a 400 naming what is wrong and what is allowed.
func TestSendOptionsBadInputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	q := "/" + acct + "/q"
	many := `{"entries": [` + strings.Repeat(`{"body": 1},`, maxEntries) + `{"body": 1}]}`
	for _, c := range []struct{ path, body, msg string }{
		{"/messages?delay_seconds=43201", `{}`, "invalid delay_seconds 43201: use an integer from 0 to 43200"},
		{"/messages?delay_seconds=-1", `[1]`, "invalid delay_seconds -1: use an integer from 0 to 43200"},
		{"/messages?expires_in_seconds=0", `{}`, "invalid expires_in_seconds 0: use an integer from 1 to 1209600"},
		{"/messages?expires_in_seconds=1209601", `{}`, "invalid expires_in_seconds 1209601: use an integer from 1 to 1209600"},
		{"/messages?expires_in_seconds=1&expires_in_seconds=2", `{}`, "expires_in_seconds is given 2 times"},
		{"/messages?dedup_key=k", `[1, 2]`, "dedup_key applies to a single message, not a batch: send the batch to .../messages/entries"},
		{"/messages/entries", `{"entries": []}`, "invalid entries: give 1 to 1000 entries"},
		{"/messages/entries", `{}`, "invalid entries: give 1 to 1000 entries"},
		{"/messages/entries", many, "give 1 to 1000 entries like {\"body\": {...}}, got 1001"},
		{"/messages/entries", `{"entries": [{"body": 1}, {"headers": {"k": "v"}}]}`, `entries[1] has no body: give "body", any JSON value but null`},
		{"/messages/entries", `{"entries": [{"body": null}]}`, `entries[0] has no body`},
		{"/messages/entries", `{"entries": [{"body": 1, "headers": {"k": 1}}]}`, `invalid entries[0].headers: use a JSON object of string values like {"k": "v"}`},
		{"/messages/entries", `{"entries": [{"body": 1, "headers": ["k=v"]}]}`, `invalid entries[0].headers: use a JSON object of string values`},
		{"/messages/entries", `{"entries": [{"body": 1, "headers": "k=v"}]}`, `invalid entries[0].headers: use a JSON object of string values`},
		{"/messages/entries", `{"entries": [{"body": 1, "delay_seconds": 43201}]}`, "invalid entries[0].delay_seconds 43201: use an integer from 0 to 43200"},
		{"/messages/entries", `{"entries": [{"body": 1, "delay_seconds": 1.5}]}`, "invalid entries[0].delay_seconds 1.5: use an integer from 0 to 43200"},
		{"/messages/entries", `{"entries": [{"body": 1, "expires_in_seconds": 0}]}`, "invalid entries[0].expires_in_seconds 0: use an integer from 1 to 1209600"},
		{"/messages/entries", `{"entries": [{"body": 1, "dedup_key": ""}]}`, "invalid entries[0].dedup_key: use a string of 1 to 128 characters"},
		{"/messages/entries", `{"entries": [{"body": 1, "dedup_key": 5}]}`, "invalid entries[0].dedup_key"},
		{"/messages/entries", `{"entries": [{"body": 1, "priority": "g"}]}`, `unknown field "priority"`},
		{"/messages/entries", `{"entries": [{"body": 1, "group": 5}]}`, "invalid entries[0].group: use a string of 1 to 128 characters"},
		{"/messages?group=", `{}`, "invalid group: give it once, 1 to 128 characters"},
		{"/messages/entries", `[{"body": 1}]`, "expected a JSON object"},
	} {
		msg := e.do(tok, "POST", q+c.path, c.body).expectError(http.StatusBadRequest, "invalid_argument")
		if !strings.Contains(msg, c.msg) {
			t.Errorf("POST %s %.60s: %q, want it to say %q", c.path, c.body, msg, c.msg)
		}
	}
	// A rejected batch sends nothing.
	if n := len(e.do(tok, "GET", q+"/messages", "").expect(200).messages()); n != 0 {
		t.Fatalf("%d messages after refused sends", n)
	}
}

// A receive with delete under concurrent consumers never returns a
// message twice, and leaves nothing behind.
func TestReceiveDeleteConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	q := "/" + acct + "/q"
	const total = 200
	for i := 0; i < total; i += 10 {
		e.do(tok, "POST", q+"/messages", fmt.Sprintf(`[%d,%d,%d,%d,%d,%d,%d,%d,%d,%d]`, i, i+1, i+2, i+3, i+4, i+5, i+6, i+7, i+8, i+9)).expect(201)
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				got := e.do(tok, "POST", q+"/messages/receive", `{"max_messages": 7, "delete": true}`).expect(200).messages()
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					seen[m.Sequence]++
					if m.Receipt != "" {
						t.Errorf("message %d received with delete has a receipt", m.Sequence)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("received %d distinct messages, want %d", len(seen), total)
	}
	for seq, n := range seen {
		if n != 1 {
			t.Fatalf("message %d returned %d times", seq, n)
		}
	}
	var qi wire.Queue
	e.do(tok, "GET", "/v1/accounts/"+acct+"/queues/q", "").expect(200).decode(&qi)
	if s := qi.Stats; s == nil || s.Ready+s.Inflight+s.Delayed+s.DLQ != 0 {
		t.Fatalf("left %+v", qi.Stats)
	}
}
