package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/internal/race"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// The new-project tests deploy through the API (the logged-in key), so
// DATABASE_URL must not send them to a database instead.
func init() { os.Unsetenv("DATABASE_URL") }

var toolchainsMu sync.Mutex

// toolchains runs scripts/toolchains for lang (c, rust or as): it
// installs what is missing when run as root and fails, saying what to
// install, when not.
func toolchains(t *testing.T, lang string) {
	t.Helper()
	toolchainsMu.Lock()
	defer toolchainsMu.Unlock()
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(root, "scripts", "toolchains"), lang).CombinedOutput(); err != nil {
		t.Fatalf("scripts/toolchains %s: %v\n%s", lang, err, out)
	}
}

// `sluice new` writes a project, for every language, that builds with its
// build.sh, runs under `sluice invoke` with its batch.json, and deploys
// with `sluice deploy` from its folder, outside this repository, without
// edits; a message sent to its queue is then processed.
func TestNewProjectBuildsInvokesAndDeploys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lang, toolchain, kind string }{
		{"go", "", "reactor"},
		{"c", "c", "reactor"},
		{"rust", "rust", "command"},
		{"assemblyscript", "as", "reactor"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			t.Parallel()
			if tc.lang == "go" && race.Enabled {
				// Compiling the 3.6 MB Go module inside this race-built
				// process takes many minutes; scripts/test runs this case
				// without -race.
				t.Skip("compiles a Go module in process: scripts/test runs it without -race")
			}
			if tc.toolchain != "" {
				toolchains(t, tc.toolchain)
			}
			c := newCLI(t)
			name := "hello-" + tc.lang
			dir := filepath.Join(t.TempDir(), name) // outside the repository
			if code, out, errOut := newCmd(t, name, "--lang", tc.lang, "--dir", dir); code != 0 || !strings.Contains(out, "sluice.yaml") {
				t.Fatalf("sluice new: exit %d: %s%s", code, out, errOut)
			}
			build := exec.Command("./build.sh")
			build.Dir = dir
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build.sh: %v\n%s", err, out)
			}
			code, res, stderr := runInvokeCLI(t, filepath.Join(dir, name+".wasm"), "--input", filepath.Join(dir, "batch.json"), "--timeout", "30s")
			if code != 0 || res.Kind != tc.kind || len(res.Acked) != 1 || res.Acked[0] != "1" || len(res.Failed) != 2 ||
				res.Failed[0].Outcome != "retry" || res.Failed[0].RetryAfterSeconds != 5 || res.Failed[1].Outcome != "permanent" {
				t.Fatalf("invoke: exit %d, %+v, stderr %s", code, res, stderr)
			}

			out := c.ok("deploy", "-f", filepath.Join(dir, "sluice.yaml"))
			for _, want := range []string{name + ": building", name + ": uploading", "live as version 1", "+ queue " + name + " (create)", "+ trigger queue:" + name + ":" + name + " (create)"} {
				if !strings.Contains(out, want) {
					t.Errorf("deploy output lacks %q:\n%s", want, out)
				}
			}
			if out := c.ok("deploy", "-f", filepath.Join(dir, "sluice.yaml")); !strings.Contains(out, "no changes") {
				t.Errorf("second deploy:\n%s", out)
			}
			c.ok("mq", "send", name, "--body", `{"text": "hello"}`)
			waitForInvocation(t, c, name, "success")
		})
	}
}

// waitForInvocation waits until function has an invocation with outcome.
func waitForInvocation(t *testing.T, c *cli, function, outcome string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		var list struct{ Invocations []client.Invocation }
		c.json(&list, "invocations", "--function", function)
		for _, inv := range list.Invocations {
			if inv.Outcome == outcome {
				return
			}
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(list)
			t.Fatalf("no %s invocation of %s within 60 s: %s", outcome, function, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newCmd runs `sluice new args...` (no --config: it reads none).
func newCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"new"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestNewUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "want exactly one NAME"},
		{[]string{"a/b"}, 2, `name "a/b"`},
		{[]string{"f", "--lang", "cobol"}, 2, `--lang: language "cobol"`},
		{[]string{"f", "--dir", dir, "--lang", "c"}, 0, ""},
		{[]string{"f", "--dir", dir}, 1, "not empty"},
	} {
		code, _, errOut := newCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("sluice new %q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
