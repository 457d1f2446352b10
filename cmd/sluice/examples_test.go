package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/internal/race"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/triggers"
)

// The triage examples' sample batch, as in their READMEs: one message to
// ack, one to retry after 5 s, one to dead-letter.
var triageBodies = []string{`{"n":1}`, `{"fail":true,"retry_after":5}`, `{"permanent":true,"error":"bad input"}`}

// Each examples/*-triage function, built from source with its toolchain,
// handles the sample batch through `sluice invoke` and, deployed with
// `sluice deploy` behind a queue trigger, the same messages sent to its
// queue: one acked, one retried, one dead-lettered.
func TestTriageExamples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lang, dir, toolchain, kind string }{
		{"c", "c-triage", "c", "reactor"},
		{"rust", "rust-triage", "rust", "command"},
		{"as", "as-triage", "as", "reactor"},
		{"go", "go-triage", "", "reactor"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			t.Parallel()
			if tc.lang == "go" && race.Enabled {
				// Compiling the multi-MB Go module inside this race-built
				// process takes minutes; scripts/test runs this case
				// without -race.
				t.Skip("compiles a Go module in process: scripts/test runs it without -race")
			}
			module := buildTriageExample(t, tc.dir, tc.toolchain)

			args := []string{module, "--timeout", "30s"}
			for _, b := range triageBodies {
				args = append(args, "--body", b)
			}
			code, res, stderr := runInvokeCLI(t, args...)
			if code != 0 || res.Kind != tc.kind || res.Failure != nil || len(res.Acked) != 1 || res.Acked[0] != "1" || len(res.Failed) != 2 ||
				res.Failed[0].ID != "2" || res.Failed[0].Outcome != "retry" || res.Failed[0].RetryAfterSeconds != 5 ||
				res.Failed[1].ID != "3" || res.Failed[1].Outcome != "permanent" || res.Failed[1].Error != "bad input" || len(res.Logs) != 3 {
				t.Fatalf("invoke: exit %d, %+v, stderr %s", code, res, stderr)
			}

			c := newCLI(t)
			name := tc.dir
			dir := t.TempDir()
			manifest := fmt.Sprintf(`
queues:
  %[1]s: {max_receive_count: 5}
functions:
  %[1]s: {wasm: %[2]q, timeout: 30s}
triggers:
  - {queue: %[1]s, function: %[1]s, batch_size: 10}
`, name, module)
			if err := os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			c.ok("deploy", "-f", filepath.Join(dir, "sluice.yaml"))
			for _, b := range triageBodies {
				c.ok("mq", "send", name, "--body", b)
			}
			waitForTriage(t, c, name)
		})
	}
}

// buildTriageExample builds examples/dir from source and returns the
// module's path.
func buildTriageExample(t *testing.T, dir, toolchain string) string {
	t.Helper()
	ctx := context.Background()
	if toolchain == "" {
		path, err := wasmbuild.Build(ctx, dir, wasmbuild.Reactor)
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	toolchains(t, toolchain)
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), dir+".wasm")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "examples", dir, "build.sh"), out)
	cmd.Env = os.Environ()
	if toolchain == "rust" {
		// Keep cargo's incremental state between runs, outside the tree
		// (the directory examples/polyglot_test.go uses too).
		target, err := wasmbuild.TreeCacheDir("rust-triage-target")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "CARGO_TARGET_DIR="+target)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build examples/%s: %v\n%s", dir, err, b)
	}
	return out
}

// waitForTriage waits until function's invocations have acked one
// message, retried at least one and dead-lettered one, and checks the
// dead letter is the permanent message.
func waitForTriage(t *testing.T, c *cli, function string) {
	t.Helper()
	var acked, retried, dead int
	for deadline := time.Now().Add(60 * time.Second); ; {
		var list struct{ Invocations []client.Invocation }
		c.json(&list, "invocations", "--function", function)
		acked, retried, dead = 0, 0, 0
		for _, inv := range list.Invocations {
			// Failed messages make the kind item_failures; any other
			// kind is a failure of the whole batch.
			if inv.FailureKind != "" && inv.FailureKind != triggers.FailureItems {
				b, _ := json.Marshal(inv)
				t.Fatalf("invocation failed as a whole: %s", b)
			}
			acked += inv.Acked
			retried += inv.Retried
			dead += inv.Dead
		}
		if acked == 1 && retried >= 1 && dead == 1 {
			break
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(list)
			t.Fatalf("within 60 s, %s acked %d, retried %d, dead-lettered %d (want 1, ≥1, 1): %s", function, acked, retried, dead, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var dl struct {
		Messages []struct {
			Body      json.RawMessage `json:"body"`
			LastError string          `json:"last_error"`
		} `json:"messages"`
	}
	c.json(&dl, "mq", "receive-dlq", function, "--max-messages", "10")
	for _, m := range dl.Messages {
		if m.LastError == "bad input" {
			return
		}
	}
	t.Errorf("dead letters of %s: %+v, want the permanent message with error \"bad input\"", function, dl)
}
