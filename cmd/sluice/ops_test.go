package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// sluice triggers, functions invoke, logs and invocations against a real
// server: every name and id one command prints is taken back by another.
func TestCLITriggersInvokeLogs(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	ctx := context.Background()
	module, err := wasmbuild.Build(ctx, "flaky", wasmbuild.Reactor)
	if err != nil {
		t.Fatal(err)
	}
	c.ok("queues", "create", "jobs")
	c.ok("functions", "deploy", "fn", module, "--env", "FLAKY_RETRY_SECONDS=0")
	if out := c.ok("triggers", "list"); !strings.Contains(out, "no triggers") {
		t.Errorf("triggers list, empty: %q", out)
	}
	tr := client.Trigger{Name: "queue:jobs:fn", Kind: "queue", Queue: "jobs", Function: "fn"}
	if _, err := c.srv.Client(t).Triggers.Put(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("triggers", "list"); !regexp.MustCompile(`queue:jobs:fn +queue +fn +queue jobs +enabled +api`).MatchString(out) {
		t.Errorf("triggers list:\n%s", out)
	}
	if out := c.ok("triggers", "get", "queue:jobs:fn"); !regexp.MustCompile(`state: +enabled\n`).MatchString(out) || !strings.Contains(out, "batch size:") {
		t.Errorf("triggers get:\n%s", out)
	}
	if out := c.ok("triggers", "disable", "queue:jobs:fn"); !strings.Contains(out, "trigger queue:jobs:fn disabled") {
		t.Errorf("disable: %q", out)
	}
	if out := c.ok("triggers", "disable", "queue:jobs:fn"); !strings.Contains(out, "already disabled") {
		t.Errorf("disable again: %q", out)
	}
	var got client.Trigger
	c.json(&got, "triggers", "get", "queue:jobs:fn")
	if got.Enabled == nil || *got.Enabled {
		t.Errorf("get --json after disable: %+v", got)
	}
	c.ok("triggers", "enable", "queue:jobs:fn")
	c.fails(1, `404`, "triggers", "get", "nope")
	c.fails(2, `usage`, "triggers", "get")

	// The trigger runs a message; its name, as the TRIGGER column shows
	// it, is what --trigger takes.
	c.ok("mq", "send", "jobs", "--body", `{"n":1}`)
	deadline := time.Now().Add(60 * time.Second)
	var invs struct{ Invocations []client.Invocation }
	for {
		c.json(&invs, "invocations", "--trigger", "queue:jobs:fn")
		if len(invs.Invocations) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(invs.Invocations) != 1 || invs.Invocations[0].Trigger != "queue:jobs:fn" {
		t.Fatalf("invocations of the trigger: %+v", invs)
	}

	// Invoke through the API.
	var res client.InvokeResult
	c.json(&res, "functions", "invoke", "fn", "--body", "{n:1}", "--body", `{"fail_until_attempt":2}`)
	if res.Outcome != "partial_failure" || len(res.Messages) != 2 || res.Messages[1].Outcome != "retry" || res.InvocationID == 0 {
		t.Fatalf("functions invoke: %+v", res)
	}
	if out := c.ok("functions", "invoke", "fn", "--version", "1", "--body", "{}", "--dry-run"); !regexp.MustCompile(`outcome: +success\n`).MatchString(out) ||
		!regexp.MustCompile(`1 +acked`).MatchString(out) {
		t.Errorf("functions invoke (table):\n%s", out)
	}
	c.fails(2, `--alias or --version, not both`, "functions", "invoke", "fn", "--alias", "live", "--version", "1", "--body", "{}")
	c.fails(2, `--body`, "functions", "invoke", "fn")
	c.fails(1, `404`, "functions", "invoke", "nope", "--body", "{}")

	// sluice logs: each line names the invocation id, which invocations
	// get looks up, and the trigger, which --trigger takes back.
	out := c.ok("logs", "--since", "1h")
	line := regexp.MustCompile(`(?m)^\S+ fn@1 (\S+) \[(\d+)\] .*processed.*$`).FindStringSubmatch(out)
	if line == nil {
		t.Fatalf("logs: no function log line:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^\S+ fn@1 invoke \[\d+\] partial_failure \(item_failures\) batch=2 acked=1 retried=1`).MatchString(out) {
		t.Errorf("logs: no summary of the invoke:\n%s", out)
	}
	if got := c.ok("invocations", "get", line[2]); !regexp.MustCompile(`trigger: +` + regexp.QuoteMeta(line[1]) + ` `).MatchString(got) {
		t.Errorf("invocations get %s (from the log line %q):\n%s", line[2], line[0], got)
	}
	table := c.ok("invocations")
	for _, row := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		cols := strings.Fields(row)
		name := cols[5] // ID STARTED(2 words) FUNCTION VERSION TRIGGER
		c.json(&invs, "invocations", "--trigger", name)
		if len(invs.Invocations) == 0 {
			t.Errorf("TRIGGER %q of row %q: --trigger finds nothing", name, row)
		}
	}

	// A key without mq:admin gets none of it.
	weak := newCLIWithKey(t, c.srv, []string{"mq:send"})
	weak.fails(1, `403`, "triggers", "list")
	weak.fails(1, `403`, "triggers", "disable", "queue:jobs:fn")
	weak.fails(1, `403`, "logs", "--since", "1h")
	weak.fails(1, `403`, "functions", "invoke", "fn", "--body", "{}")

	c.ok("triggers", "delete", "queue:jobs:fn")
	c.fails(1, `404`, "triggers", "delete", "queue:jobs:fn")
	c.json(&invs, "invocations", "--trigger", "queue:jobs:fn")
	if len(invs.Invocations) != 1 {
		t.Errorf("a deleted trigger's invocations by name: %+v", invs)
	}
}

// newCLIWithKey is newCLI logged in with a key of the given scopes.
func newCLIWithKey(t *testing.T, srv *clienttest.Server, scopes []string) *cli {
	c := &cli{t: t, config: t.TempDir() + "/config.json", srv: srv}
	c.ok("login", "--endpoint", srv.URL, "--key", srv.Key(t, client.DefaultAccount, scopes, nil))
	return c
}
