package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/client"
)

func TestCLITopics(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "billing")
	c.ok("queues", "create", "shipping")
	if out := c.ok("topics", "create", "orders"); !strings.Contains(out, "created topic orders") {
		t.Errorf("create: %q", out)
	}
	if out := c.ok("topics", "list"); !strings.Contains(out, "orders") {
		t.Errorf("list without subscriptions: %q", out)
	}
	if out := c.ok("topics", "subscribe", "orders", "billing", "--filter", "type=order"); !strings.Contains(out, "filter type=order") {
		t.Errorf("subscribe: %q", out)
	}
	c.ok("topics", "subscribe", "orders", "shipping")
	var list struct{ Topics []client.Topic }
	c.json(&list, "topics", "list")
	if len(list.Topics) != 1 || len(list.Topics[0].Subscriptions) != 2 || list.Topics[0].Subscriptions[0].Filter["type"] != "order" {
		t.Fatalf("list: %+v", list)
	}
	if out := c.ok("topics", "list"); !strings.Contains(out, "type=order") || !strings.Contains(out, "shipping") {
		t.Errorf("list:\n%s", out)
	}
	if out := c.ok("topics", "publish", "orders", "--body", "{n:1}", "--header", "type=order"); !strings.Contains(out, "copies 2") {
		t.Errorf("publish: %q", out)
	}
	var res struct{ Copies []int }
	c.json(&res, "topics", "publish", "orders", "--body", "[1,2]", "--delay-seconds", "5")
	if len(res.Copies) != 2 || res.Copies[0] != 1 {
		t.Errorf("publish batch: %+v", res)
	}
	c.fails(1, `topic "nope" not found`, "topics", "publish", "nope", "--body", "{}")
	c.fails(1, `queue "missing" not found`, "topics", "subscribe", "orders", "missing")
	c.fails(2, `use NAME=VALUE`, "topics", "subscribe", "orders", "billing", "--filter", "type")
	c.fails(2, `missing QUEUE`, "topics", "subscribe", "orders")
	c.ok("topics", "unsubscribe", "orders", "shipping")
	c.ok("topics", "delete", "orders")
	if out := c.ok("topics", "list"); !strings.Contains(out, "no topics") {
		t.Errorf("list after delete: %q", out)
	}
}

func TestCLIDeadLetterQueueFlag(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "dead")
	if out := c.ok("queues", "create", "work", "--dead-letter-queue", "dead"); !strings.Contains(out, "dead-letter queue") {
		t.Errorf("create: %q", out)
	}
	var q client.Queue
	c.json(&q, "queues", "get", "work")
	if q.DeadLetterQueue != "dead" {
		t.Errorf("get: %+v", q)
	}
	c.fails(1, `invalid dead_letter_queue "work"`, "queues", "update", "work", "--dead-letter-queue", "work")
	c.fails(1, `no such queue`, "queues", "update", "work", "--dead-letter-queue", "missing")
	var cleared client.Queue
	c.json(&cleared, "queues", "update", "work", "--dead-letter-queue", "")
	if cleared.Name != "work" || cleared.DeadLetterQueue != "" {
		t.Errorf("cleared: %+v", cleared)
	}
}
