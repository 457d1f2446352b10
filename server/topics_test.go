package server

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/wire"
)

func TestTopics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("billing")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"shipping"}`).expect(201)
	base := "/v1/accounts/" + acct + "/topics"

	var tp wire.Topic
	e.do(tok, "POST", base, `{"name":"orders"}`).expect(201).decode(&tp)
	if tp.Name != "orders" || tp.CreatedAt.IsZero() || tp.Subscriptions == nil || len(tp.Subscriptions) != 0 {
		t.Fatalf("created %+v", tp)
	}
	e.do(tok, "POST", base, `{"name":"orders"}`).expectError(409, "topic_exists")
	e.do(tok, "POST", base, `{"name":"a b"}`).expectError(400, "invalid_name")
	e.do(tok, "POST", base, `{"name":"x","other":1}`).expectError(400, "invalid_argument")

	e.do(tok, "PUT", base+"/orders/subscriptions/billing", `{"filter":{"type":"order"}}`).expect(200).decode(&tp)
	if len(tp.Subscriptions) != 1 || tp.Subscriptions[0].Filter["type"] != "order" {
		t.Fatalf("subscribed %+v", tp)
	}
	e.do(tok, "PUT", base+"/orders/subscriptions/shipping", "").expect(200)
	var list wire.TopicList
	e.do(tok, "GET", base, "").expect(200).decode(&list)
	if len(list.Topics) != 1 || len(list.Topics[0].Subscriptions) != 2 || list.Topics[0].Subscriptions[1].Filter != nil {
		t.Fatalf("list %+v", list)
	}

	// Publish: one message, a batch, entries with headers.
	var one wire.PublishResult
	e.do(tok, "POST", "/"+acct+"/topics/orders/messages", `{"n":1}`).expect(201).decode(&one)
	if one.Copies != 1 {
		t.Fatalf("publish one: %+v", one)
	}
	var batch wire.PublishBatchResult
	e.do(tok, "POST", "/"+acct+"/topics/orders/messages?delay_seconds=60", `[1,2]`).expect(201).decode(&batch)
	if len(batch.Copies) != 2 || batch.Copies[0] != 1 {
		t.Fatalf("publish batch: %+v", batch)
	}
	e.do(tok, "POST", "/"+acct+"/topics/orders/messages/entries",
		`{"entries":[{"body":{"n":2},"headers":{"type":"order"}},{"body":3,"headers":{"type":"refund"},"delay_seconds":5}]}`).expect(201).decode(&batch)
	if len(batch.Copies) != 2 || batch.Copies[0] != 2 || batch.Copies[1] != 1 {
		t.Fatalf("publish entries: %+v", batch)
	}
	msgs := e.do(tok, "GET", "/"+acct+"/billing/messages", "").expect(200).messages()
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Headers), "order") {
		t.Fatalf("billing got %+v", msgs)
	}

	// Bad inputs.
	e.do(tok, "POST", "/"+acct+"/topics/nope/messages", `{}`).expectError(404, "topic_not_found")
	e.do(tok, "PUT", base+"/nope/subscriptions/billing", "").expectError(404, "topic_not_found")
	e.do(tok, "PUT", base+"/orders/subscriptions/missing", "").expectError(404, "queue_not_found")
	e.do(tok, "PUT", base+"/orders/subscriptions/billing", `{"filter":{"type":1}}`).expectError(400, "invalid_argument")
	e.do(tok, "PUT", base+"/orders/subscriptions/billing", `{"filter":["type"]}`).expectError(400, "invalid_argument")
	// A queue's send options a publish would drop are refused, naming them.
	for _, opt := range []string{"dedup_key=k", "expires_in_seconds=60", "group=g"} {
		msg := e.do(tok, "POST", "/"+acct+"/topics/orders/messages?"+opt, `{}`).expectError(400, "invalid_argument")
		if name, _, _ := strings.Cut(opt, "="); !strings.Contains(msg, name+" applies to a queue's send") {
			t.Errorf("publish ?%s: %q, want it to name %s", opt, msg, name)
		}
	}
	e.do(tok, "POST", "/"+acct+"/topics/orders/messages/entries", `{"entries":[]}`).expectError(400, "invalid_argument")
	e.do(tok, "POST", "/"+acct+"/topics/orders/messages/entries", `{"entries":[{"body":1,"headers":[1]}]}`).expectError(400, "invalid_argument")
	e.do(tok, "POST", "/"+acct+"/topics/orders/messages/entries", `{"entries":[{"body":1,"delay_seconds":-1}]}`).expectError(400, "invalid_argument")
	e.do(tok, "GET", base+"/nope", "").expectError(404, "topic_not_found")

	// Scopes and queue patterns.
	sender := e.key(acct, []string{"mq:send"}, "nothing-*")
	e.do(sender, "POST", "/"+acct+"/topics/orders/messages", `{}`).expect(201)
	e.do(sender, "POST", base, `{"name":"x"}`).expectError(403, "forbidden")
	limited := e.key(acct, []string{"mq:admin", "mq:receive"}, "bill*")
	e.do(limited, "PUT", base+"/orders/subscriptions/shipping", "").expectError(403, "forbidden")
	e.do(limited, "PUT", base+"/orders/subscriptions/billing", "").expect(200).decode(&tp)
	if len(tp.Subscriptions) != 1 || tp.Subscriptions[0].Queue != "billing" {
		t.Fatalf("limited key sees %+v", tp)
	}
	if msg := e.do(limited, "DELETE", base+"/orders", "").expectError(403, "forbidden"); !strings.Contains(msg, "other queues") {
		t.Fatalf("limited delete: %s", msg)
	}

	// A publish a subscribed queue refuses names it to a key for every
	// queue only: a key limited to some learns no name past its patterns.
	e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"secret-tiny","max_message_bytes":20}`).expect(201)
	e.do(tok, "PUT", base+"/orders/subscriptions/secret-tiny", "").expect(200)
	big := `{"padding":"` + strings.Repeat("x", 40) + `"}`
	if msg := e.do(tok, "POST", "/"+acct+"/topics/orders/messages", big).expectError(413, "message_too_large"); !strings.Contains(msg, "secret-tiny") {
		t.Errorf("too large for a subscriber, a key for every queue: %q, want the queue named", msg)
	}
	for _, path := range []string{"/messages", "/messages/entries"} {
		body := big
		if path == "/messages/entries" {
			body = `{"entries":[{"body":` + big + `}]}`
		}
		if msg := e.do(sender, "POST", "/"+acct+"/topics/orders"+path, body).expectError(413, "message_too_large"); strings.Contains(msg, "secret") ||
			!strings.Contains(msg, `subscribed to topic "orders"`) {
			t.Errorf("too large for a subscriber past the key's patterns (%s): %q", path, msg)
		}
	}
	e.do(tok, "DELETE", base+"/orders/subscriptions/secret-tiny", "").expect(204)
	e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"secret-fifo"}`).expect(201)
	e.do(tok, "PUT", base+"/orders/subscriptions/secret-fifo", "").expect(200)
	e.do(tok, "PATCH", "/v1/accounts/"+acct+"/queues/secret-fifo", `{"fifo":true}`).expect(200) // made fifo once subscribed
	if msg := e.do(sender, "POST", "/"+acct+"/topics/orders/messages", `{}`).expectError(400, "invalid_argument"); strings.Contains(msg, "secret") ||
		!strings.Contains(msg, "a fifo queue") {
		t.Errorf("a fifo subscriber past the key's patterns: %q", msg)
	}
	if msg := e.do(tok, "POST", "/"+acct+"/topics/orders/messages", `{}`).expectError(400, "invalid_argument"); !strings.Contains(msg, "secret-fifo") {
		t.Errorf("a fifo subscriber, a key for every queue: %q, want the queue named", msg)
	}
	e.do(tok, "DELETE", base+"/orders/subscriptions/secret-fifo", "").expect(204)

	e.do(tok, "DELETE", base+"/orders/subscriptions/shipping", "").expect(204)
	e.do(tok, "DELETE", base+"/orders", "").expect(204)
	e.do(tok, "DELETE", base+"/orders", "").expectError(404, "topic_not_found")
}

func TestDeadLetterQueueSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("dead")
	base := "/v1/accounts/" + acct + "/queues"
	var q wire.Queue
	e.do(tok, "POST", base, `{"name":"work","max_receive_count":1,"dead_letter_queue":"dead"}`).expect(201).decode(&q)
	if q.DeadLetterQueue != "dead" {
		t.Fatalf("created %+v", q)
	}
	e.do(tok, "GET", base+"/work", "").expect(200).decode(&q)
	if q.DeadLetterQueue != "dead" {
		t.Fatalf("get %+v", q)
	}
	e.do(tok, "PATCH", base+"/work", `{"dead_letter_queue":"nope"}`).expectError(400, "invalid_argument")
	e.do(tok, "PATCH", base+"/work", `{"dead_letter_queue":"work"}`).expectError(400, "invalid_argument")
	e.do(tok, "PATCH", base+"/work", `{"dead_letter_queue":7}`).expectError(400, "invalid_argument")
	e.do(tok, "PATCH", base+"/work", `{"dead_letter_queue":"a b"}`).expectError(400, "invalid_name")
	e.do(tok, "PATCH", base+"/dead", `{"dead_letter_queue":"work"}`).expectError(400, "invalid_argument") // a cycle
	limited := e.key(acct, []string{"mq:admin"}, "work")
	e.do(limited, "PATCH", base+"/work", `{"dead_letter_queue":"dead"}`).expectError(403, "forbidden")
	var cleared wire.Queue
	e.do(tok, "PATCH", base+"/work", `{"dead_letter_queue":null}`).expect(200).decode(&cleared)
	if cleared.DeadLetterQueue != "" || cleared.MaxReceiveCount != 1 {
		t.Fatalf("cleared %+v", cleared)
	}

	// A key that may delete only "dead" cannot so change "work": the
	// delete is refused while work names dead, and work keeps its setting.
	e.do(tok, "PATCH", base+"/work", `{"dead_letter_queue":"dead"}`).expect(200)
	deleter := e.key(acct, []string{"mq:admin"}, "dead")
	refused := e.do(deleter, "DELETE", base+"/dead", "").expectError(409, "queue_in_use")
	if strings.Contains(refused, "work") {
		t.Errorf("a key limited to dead is told the name of a queue past its patterns: %s", refused)
	}
	named := e.do(tok, "DELETE", base+"/dead", "").expectError(409, "queue_in_use")
	if !strings.Contains(named, `"work"`) {
		t.Errorf("a key for every queue is not told which queue uses dead: %s", named)
	}
	e.do(tok, "GET", base+"/work", "").expect(200).decode(&q)
	if q.DeadLetterQueue != "dead" {
		t.Fatalf("work after the refused delete of its dead-letter queue: %+v", q)
	}
	e.do(tok, "PATCH", base+"/work", `{"dead_letter_queue":null}`).expect(200)
	e.do(deleter, "DELETE", base+"/dead", "").expect(204)

	// A cycle through a queue past a key's patterns is refused without
	// naming it: w1 -> w2 -> secret-x -> w1.
	for _, q := range []string{"w1", "w2", "secret-x"} {
		e.do(tok, "POST", base, `{"name":"`+q+`"}`).expect(201)
	}
	e.do(tok, "PATCH", base+"/w2", `{"dead_letter_queue":"secret-x"}`).expect(200)
	e.do(tok, "PATCH", base+"/secret-x", `{"dead_letter_queue":"w1"}`).expect(200)
	ws := e.key(acct, []string{"mq:admin"}, "w*")
	if msg := e.do(ws, "PATCH", base+"/w1", `{"dead_letter_queue":"w2"}`).expectError(400, "invalid_argument"); strings.Contains(msg, "secret") || !strings.Contains(msg, "a cycle") {
		t.Errorf("a cycle through a queue past the key's patterns: %q", msg)
	}
	if msg := e.do(tok, "PATCH", base+"/w1", `{"dead_letter_queue":"w2"}`).expectError(400, "invalid_argument"); !strings.Contains(msg, "secret-x") {
		t.Errorf("a cycle, a key for every queue: %q, want the queue named", msg)
	}
}
