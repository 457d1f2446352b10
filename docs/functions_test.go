package docs_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/race"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// shBlock is a ```sh test (every variant) or ```sh test=VARIANT block of
// functions.md.
type shBlock struct {
	variant string // "" for every variant
	line    int
	text    string
}

func shBlocks(t *testing.T, file string) []shBlock {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out []shBlock
		cur *shBlock
		sc  = bufio.NewScanner(f)
		n   int
	)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && (line == "```sh test" || strings.HasPrefix(line, "```sh test=")):
			cur = &shBlock{variant: strings.TrimPrefix(strings.TrimPrefix(line, "```sh test"), "="), line: n}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: block never closed", file, cur.line)
	}
	return out
}

// sluiceCommand builds the sluice command into a temporary folder of t
// and returns that folder.
func sluiceCommand(t *testing.T) string {
	t.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "sluice"), "./cmd/sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	return dir
}

// docs/functions.md's walkthrough works as written, in a folder outside
// the repository: for Go every marked block (scaffold, build, invoke,
// deploy, send, watch, fix, redrive) against a real server the CLI is
// logged in to; for C the scaffold, build and invoke blocks.
func TestFirstFunctionWalkthrough(t *testing.T) {
	t.Parallel()
	blocks := shBlocks(t, "functions.md")
	if len(blocks) < 8 {
		t.Fatalf("functions.md has %d ```sh test blocks; the parser or the page is broken", len(blocks))
	}
	bin := sluiceCommand(t)
	for _, variant := range []string{"go", "c"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			if variant == "go" && race.Enabled {
				// The server here runs in this race-built process and,
				// where the shared compilation cache lacks them, compiles
				// the walkthrough's two versions of a Go module there:
				// ~15 s of CPU each, against ~1 s without -race.
				// scripts/test runs this case without -race.
				t.Skip("compiles Go modules in process: scripts/test runs it without -race")
			}
			if variant == "c" {
				root, _ := wasmbuild.Root()
				if out, err := exec.Command(filepath.Join(root, "scripts", "toolchains"), "c").CombinedOutput(); err != nil {
					t.Fatalf("scripts/toolchains c: %v\n%s", err, out)
				}
			}
			work := t.TempDir()
			env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
				"XDG_CONFIG_HOME=" + filepath.Join(work, "config")}
			for _, kv := range os.Environ() {
				switch k, _, _ := strings.Cut(kv, "="); k {
				case "PATH", "XDG_CONFIG_HOME", "DATABASE_URL", "SLUICE_ENDPOINT", "SLUICE_KEY", "SLUICE_ACCOUNT", "SLUICE_CONFIG", "GOFLAGS":
				default:
					env = append(env, kv)
				}
			}
			var srv *clienttest.Server
			script := "set -ex\n"
			if variant == "go" {
				srv = clienttest.NewShared(t)
				key := srv.Key(t, client.DefaultAccount, clienttest.AllScopes, nil)
				script += "sluice login --endpoint '" + srv.URL + "' --key '" + key + "'\n"
			}
			for _, b := range blocks {
				if b.variant == "" || b.variant == variant {
					script += "# functions.md:" + strconv.Itoa(b.line) + "\n" + b.text
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", script)
			cmd.Dir, cmd.Env = work, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the walkthrough's commands failed: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), `"acked"`) {
				t.Errorf("no sluice invoke output:\n%s", out)
			}
			t.Logf("the walkthrough's output:\n%s", out)
			if variant != "go" {
				return
			}
			// The redriven letter was processed by the fixed version 2.
			c := srv.Client(t)
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				invs, err := c.Invocations.List(ctx, client.InvocationsOptions{Function: "hello", Outcome: "success"})
				if err != nil {
					t.Fatal(err)
				}
				done := false
				for _, inv := range invs {
					done = done || inv.Version == 2
				}
				if done {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no successful invocation of version 2 after the redrive; invocations %+v\n%s", invs, out)
				}
			}
		})
	}
}
