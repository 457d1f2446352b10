package server

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/wire"
)

// TestFifoQueueOverHTTP: a queue created with "fifo": true refuses a send
// without a group; ?group= and entries' "group" put messages into groups;
// a receive gets one message per group, with its group; the queue's stats
// count the groups; the DLQ shows a dead letter's group.
func TestFifoQueueOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("")
	base := "/v1/accounts/" + acct + "/queues"
	var q wire.Queue
	e.do(tok, "POST", base, `{"name": "orders", "fifo": true}`).expect(201).decode(&q)
	if !q.Fifo {
		t.Fatalf("created queue: %+v, want fifo", q)
	}
	e.do(tok, "POST", base, `{"name": "bad", "fifo": 1}`).expectError(400, "invalid_argument")
	qu := "/" + acct + "/orders"
	msg := e.do(tok, "POST", qu+"/messages", `{"x": 1}`).expectError(400, "invalid_argument")
	if !strings.Contains(msg, "fifo queue") {
		t.Fatalf("send without a group: %q, want it to say the queue is fifo", msg)
	}
	e.do(tok, "POST", qu+"/messages?group=", `{"x": 1}`).expectError(400, "invalid_argument")
	e.do(tok, "POST", qu+"/messages?group=c1", `{"x": 1}`).expect(201)
	e.do(tok, "POST", qu+"/messages?group=c1", `[{"x": 2}, {"x": 3}]`).expect(201)
	e.do(tok, "POST", qu+"/messages/entries", `{"entries": [{"body": {"x": 4}, "group": "c2"}, {"body": {"x": 5}, "group": "c2"}]}`).expect(201)
	e.do(tok, "POST", qu+"/messages/entries", `{"entries": [{"body": {"x": 6}, "group": ""}]}`).expectError(400, "invalid_argument")

	got := e.do(tok, "POST", qu+"/messages/receive", `{"max_messages": 10}`).expect(200).messages()
	if len(got) != 2 || got[0].Group != "c1" || got[1].Group != "c2" {
		t.Fatalf("receive: %+v, want the heads of c1 and c2", got)
	}
	e.do(tok, "GET", base+"/orders", "").expect(200).decode(&q)
	if s := q.Stats; s == nil || s.Groups != 2 || s.GroupsInflight != 2 || s.GroupedWaiting != 3 {
		t.Fatalf("stats: %+v, want 2 groups in flight, 3 waiting", q.Stats)
	}
	// Off: ungrouped messages are accepted again.
	var off wire.Queue
	e.do(tok, "PATCH", base+"/orders", `{"fifo": false}`).expect(200).decode(&off)
	if off.Fifo {
		t.Fatal("fifo still on after PATCH false")
	}
	e.do(tok, "POST", qu+"/messages", `{"x": 7}`).expect(201)
}
