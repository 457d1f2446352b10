package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/server/migrations"
)

var (
	cBuildMu sync.Mutex
	cBuilds  = map[string]string{} // build.sh args -> module
)

// buildC builds a C example with its build.sh once per test binary.
func buildC(t *testing.T, script string, args ...string) string {
	t.Helper()
	toolchains(t, "c")
	cBuildMu.Lock()
	defer cBuildMu.Unlock()
	key := script + " " + strings.Join(args, " ")
	if p, ok := cBuilds[key]; ok {
		return p
	}
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sluice-invoke-c-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "fn.wasm")
	if b, err := exec.Command(filepath.Join(root, script), append(args, out)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, b)
	}
	cBuilds[key] = out
	return out
}

// pongServer answers every request 201 "pong-<X-Test>".
func pongServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "pong-%s", r.Header.Get("X-Test"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hostSummary returns the summary of the host-calls function's log line.
func hostSummary(t *testing.T, out invokeOutput) string {
	t.Helper()
	for _, l := range out.Logs {
		if l["message"] == "host" {
			s, _ := l["summary"].(string)
			return s
		}
	}
	t.Fatalf("no host log line in %+v", out.Logs)
	return ""
}

// `sluice invoke --emits` lists what the function emitted with whether a
// deployed batch would send it; without the patterns the batch fails with
// invalid_output, as it would deployed.
func TestInvokeEmits(t *testing.T) {
	t.Parallel()
	relay := buildC(t, "examples/c-relay/build.sh")
	args := []string{relay, "--body", `{"to":"orders"}`, "--body", `{"to":"orders","fail":true}`}
	code, out, stderr := runInvokeCLI(t, append(args, "--emits", "orders", "--emits", "aud*")...)
	if code != 0 || out.Failure != nil || len(out.Emits) != 3 {
		t.Fatalf("with --emits: exit %d, %+v, stderr %s", code, out, stderr)
	}
	want := map[string]bool{"queue orders for 1": true, "queue orders for 2": false, "topic audit for ": true}
	for _, e := range out.Emits {
		key := "queue " + e.Queue + " for " + e.For
		if e.Topic != "" {
			key = "topic " + e.Topic + " for " + e.For
		}
		if w, ok := want[key]; !ok || e.Sent != w {
			t.Errorf("emit %s: would_send %v; want %v (known: %v)", key, e.Sent, w, ok)
		}
	}
	code, out, stderr = runInvokeCLI(t, args...)
	if code != 0 || out.OK || out.Failure == nil || out.Failure.Kind != "invalid_output" ||
		!strings.Contains(out.Failure.Message, "the function's manifest declares no emits") {
		t.Fatalf("without --emits: exit %d, %+v, stderr %s; want an invalid_output failure", code, out, stderr)
	}
	for _, e := range out.Emits {
		if e.Sent {
			t.Errorf("without --emits, emit %+v would be sent", e)
		}
	}
}

// `sluice invoke --allow-host --store` lets a function call HTTP and use
// key-value stores, in memory without DATABASE_URL; without them both are
// denied.
func TestInvokeHostCapabilities(t *testing.T) {
	t.Parallel()
	module := buildC(t, "examples/host-calls/build.sh", "c")
	srv := pongServer(t)
	body := fmt.Sprintf(`{"url":%q,"denied_url":"http://127.0.0.2:1/"}`, srv.URL+"/x")
	code, out, stderr := runInvokeCLI(t, module, "--body", body, "--allow-host", srv.URL, "--store", "counts", "--store", "sessions")
	want := "http=201:pong-c denied=1 inc=2 get=v1 cas=0 cas2=6 absent=6 del=0 get2=5 open=1"
	if code != 0 || out.KV != "memory" || hostSummary(t, out) != want {
		t.Fatalf("with the flags: exit %d, kv %q, summary %q (want %q); stderr %s", code, out.KV, hostSummary(t, out), want, stderr)
	}
	code, out, stderr = runInvokeCLI(t, module, "--body", body)
	if s := hostSummary(t, out); code != 0 || out.KV != "" || !strings.HasPrefix(s, "http=error:") || !strings.Contains(s, "allowed_outbound_hosts") || !strings.HasSuffix(s, "open=1") {
		t.Fatalf("without the flags: exit %d, kv %q, summary %q; want HTTP and stores denied; stderr %s", code, out.KV, s, stderr)
	}
}

// `sluice invoke FUNCTION -f sluice.yaml` runs a manifest function with
// its capabilities; with DATABASE_URL its stores are the account's in the
// database, so a second run sees the first one's increment. (Not
// parallel: it sets DATABASE_URL, which the other tests of this package
// need unset.)
func TestInvokeManifestFunctionWithDatabase(t *testing.T) {
	module := buildC(t, "examples/host-calls/build.sh", "c")
	srv := pongServer(t)
	pool, schema := pgtest.Schema(t, migrations.All...)
	queue, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	account := fmt.Sprintf("%012d", rand.Int64N(1e12))
	if err := queue.CreateAccount(context.Background(), account, "invoke test"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest := fmt.Sprintf(`
functions:
  hc: {wasm: %q, allowed_outbound_hosts: [%q], stores: [counts, sessions], timeout: 20s}
`, module, srv.URL)
	if err := os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", os.Getenv(pgtest.EnvVar))
	body := fmt.Sprintf(`{"url":%q,"denied_url":"http://127.0.0.2:1/"}`, srv.URL+"/x")
	for round := 1; round <= 2; round++ {
		code, out, stderr := runInvokeCLI(t, "hc", "-f", filepath.Join(dir, "sluice.yaml"), "--schema", schema, "--account", account, "--body", body)
		want := fmt.Sprintf("http=201:pong-c denied=1 inc=%d get=v1 cas=0 cas2=6 absent=6 del=0 get2=5 open=1", 2*round)
		if code != 0 || out.Function != "hc" || !strings.HasPrefix(out.KV, "database") || hostSummary(t, out) != want {
			t.Fatalf("round %d: exit %d, function %q, kv %q, summary %q (want %q); stderr %s", round, code, out.Function, out.KV, hostSummary(t, out), want, stderr)
		}
	}
	stores, err := kv.New(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := stores.Get(context.Background(), account, "counts", []byte("hits")); err != nil || !ok || string(v) != "4" {
		t.Errorf("counts/hits in the database = %q, %v, %v; want 4", v, ok, err)
	}
	code, _, stderr := runInvokeCLI(t, "nosuch", "-f", filepath.Join(dir, "sluice.yaml"), "--body", "{}")
	if code != 2 || !strings.Contains(stderr, `has no function "nosuch"`) {
		t.Errorf("unknown function: exit %d, stderr %q", code, stderr)
	}
}
