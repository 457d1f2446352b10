package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/server/migrations"
	"github.com/sluicehq/sluice/triggers"
)

// hostLangs are the builds of examples/host-calls, one per SDK.
var hostLangs = []lang{
	{"host-c", runtime.Reactor, hostScript("c")},
	{"host-rust", runtime.Command, hostScript("rust")},
	{"host-as", runtime.Reactor, hostScript("as")},
}

// hostScript builds examples/host-calls in language l with its build.sh.
func hostScript(l string) func(context.Context, string) (string, error) {
	return func(ctx context.Context, out string) (string, error) {
		if err := toolchains(ctx); err != nil {
			return "", err
		}
		root, err := wasmbuild.Root()
		if err != nil {
			return "", err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "examples", "host-calls", "build.sh"), l, out)
		if l == "rust" {
			target, err := wasmbuild.TreeCacheDir("rust-host-calls-target")
			if err != nil {
				return "", err
			}
			cmd.Env = append(cmd.Environ(), "CARGO_TARGET_DIR="+target)
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build examples/host-calls (%s): %w\n%s", l, err, b)
		}
		return out, nil
	}
}

// The C, Rust and AssemblyScript SDKs' wrappers of the v1.1 host imports
// work against the real runtime: an HTTP POST to a server on 127.0.0.1
// listed in allowed_outbound_hosts (its body and headers arrive, its
// response comes back), a URL not listed refused (denied), and the
// key-value calls (increment, set, get, compare-and-set that succeeds and
// that conflicts, set-if-absent, delete, get of a deleted key, opening a
// store not listed) against Postgres through package kv.
func TestSDKHostCalls(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.Schema(t, migrations.All...)
	stores, err := kv.New(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]string{} // X-Test header -> request body
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.Header.Get("X-Test")] = r.Method + " " + string(b)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "pong-%s", r.Header.Get("X-Test"))
	}))
	t.Cleanup(srv.Close)

	for _, l := range hostLangs {
		t.Run("lang="+l.name, func(t *testing.T) {
			t.Parallel()
			name := strings.TrimPrefix(l.name, "host-")
			account := fmt.Sprintf("%012d", rand.Int64N(1e12))
			if err := queue.CreateAccount(context.Background(), account, "host calls "+name); err != nil {
				t.Fatal(err)
			}
			rt := newRuntime(t)
			f, err := rt.Load(context.Background(), wasm(t, l), runtime.FunctionConfig{Name: "host-calls", Version: 1, Timeout: time.Minute,
				AllowedOutboundHosts: []string{srv.URL}, Stores: []string{"counts", "sessions"}, KV: triggers.AccountKV(stores, account)})
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind() != l.kind {
				t.Fatalf("Kind = %s, want %s", f.Kind(), l.kind)
			}
			body, _ := json.Marshal(map[string]string{"url": srv.URL + "/hook", "denied_url": "http://127.0.0.2:1/"})
			inv := runtime.Invocation{ID: "inv", Trigger: runtime.Trigger{Type: "queue", Source: "q"},
				Messages: []runtime.Message{{ID: "1", Attempt: 1, CreatedAt: time.Now(), Body: body}}}
			for round := 1; round <= 2; round++ { // a reactor keeps its store handles
				res, err := f.Invoke(context.Background(), inv)
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure != nil || res.Count(runtime.Acked) != 1 {
					t.Fatalf("round %d: %v %+v\nstderr:\n%s", round, res.Failure, res.Messages, res.Stderr)
				}
				var ev struct{ Message, Summary string }
				if err := json.Unmarshal(res.Stderr, &ev); err != nil || ev.Message != "host" {
					t.Fatalf("round %d: stderr %q is not the one host log line: %v", round, res.Stderr, err)
				}
				want := fmt.Sprintf("http=201:pong-%s denied=1 inc=%d get=v1 cas=0 cas2=6 absent=6 del=0 get2=5 open=1", name, 2*round)
				if ev.Summary != want {
					t.Errorf("round %d: summary\n %q, want\n %q", round, ev.Summary, want)
				}
			}
			mu.Lock()
			req := got[name]
			mu.Unlock()
			if req != "POST ping" {
				t.Errorf("the test server got %q with X-Test %s, want POST ping", req, name)
			}
			if v, ok, err := stores.Get(context.Background(), account, "counts", []byte("hits")); err != nil || !ok || string(v) != "4" {
				t.Errorf("counts/hits in Postgres = %q, %v, %v; want 4", v, ok, err)
			}
		})
	}
}
