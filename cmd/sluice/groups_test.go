package main

import (
	"strings"
	"testing"
)

// TestCLIFifoQueueAndGroups: queues create --fifo, mq send --group (and a
// send without one refused), the GROUP column of mq receive, and the fifo
// line and group counts of queues get.
func TestCLIFifoQueueAndGroups(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "fq", "--fifo")
	c.fails(1, `fifo queue: give every message a group`, "mq", "send", "fq", "{a:1}")
	c.fails(2, `--group: give 1 to 128 characters`, "mq", "send", "fq", "{a:1}", "--group", "")
	c.ok("mq", "send", "fq", "{a:1}", "--group", "customer-17")
	c.ok("mq", "send", "fq", "[{a:2},{a:3}]", "--group", "customer-17")
	out := c.ok("mq", "receive", "fq", "--max-messages", "10")
	if !strings.Contains(out, "GROUP") || strings.Count(out, "customer-17") != 1 {
		t.Fatalf("mq receive: want a GROUP column and the one head of customer-17:\n%s", out)
	}
	got := c.ok("queues", "get", "fq")
	for _, want := range []string{"fifo", "groups in flight", "waiting in groups"} {
		if !strings.Contains(got, want) {
			t.Fatalf("queues get: no %q in:\n%s", want, got)
		}
	}
	c.ok("queues", "update", "fq", "--fifo=false")
	c.ok("mq", "send", "fq", "{a:4}")
}
