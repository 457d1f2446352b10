// Package examples_test builds the example functions written in C, Rust
// and AssemblyScript from source with their toolchains (installed by
// scripts/toolchains when missing) and runs them through the runtime
// beside the same function written with the Go SDK.
package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// lang is one build of the triage function.
type lang struct {
	name string
	kind runtime.Kind
	// build returns the module's path.
	build func(ctx context.Context, out string) (string, error)
}

var langs = []lang{
	{"c", runtime.Reactor, script("c", "c-triage")},
	{"c-command", runtime.Command, script("c", "c-triage", "MODE=command")},
	{"rust", runtime.Command, script("rust", "rust-triage")},
	{"as", runtime.Reactor, script("as", "as-triage")},
	{"go", runtime.Reactor, goBuild(wasmbuild.Reactor)},
	{"go-command", runtime.Command, goBuild(wasmbuild.Command)},
}

var (
	outDir  string
	modules sync.Map // lang name -> *module
)

type module struct {
	once sync.Once
	wasm []byte
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-polyglot-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	outDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	toolchainsOnce sync.Once
	toolchainsErr  error
)

// toolchains runs scripts/toolchains once per process: it installs what
// is missing when run as root and fails, saying what to install, when not.
func toolchains(ctx context.Context) error {
	toolchainsOnce.Do(func() {
		root, err := wasmbuild.Root()
		if err != nil {
			toolchainsErr = err
			return
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "toolchains"))
		if out, err := cmd.CombinedOutput(); err != nil {
			toolchainsErr = fmt.Errorf("scripts/toolchains (the C, Rust and AssemblyScript toolchains these tests need; run it as root to install them): %w\n%s", err, out)
		}
	})
	return toolchainsErr
}

// script builds examples/<dir> with its build.sh.
func script(toolchain, dir string, env ...string) func(context.Context, string) (string, error) {
	return func(ctx context.Context, out string) (string, error) {
		if err := toolchains(ctx); err != nil {
			return "", err
		}
		root, err := wasmbuild.Root()
		if err != nil {
			return "", err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "examples", dir, "build.sh"), out)
		cmd.Env = append(os.Environ(), env...)
		if toolchain == "rust" {
			// Keep cargo's incremental state between runs, outside the tree.
			target, err := wasmbuild.TreeCacheDir("rust-triage-target")
			if err != nil {
				return "", err
			}
			cmd.Env = append(cmd.Env, "CARGO_TARGET_DIR="+target)
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build examples/%s with its %s toolchain: %w\n%s", dir, toolchain, err, b)
		}
		return out, nil
	}
}

func goBuild(mode wasmbuild.Mode) func(context.Context, string) (string, error) {
	return func(ctx context.Context, _ string) (string, error) {
		return wasmbuild.Build(ctx, "go-triage", mode)
	}
}

// wasm builds l once per process and returns its module.
func wasm(tb testing.TB, l lang) []byte {
	tb.Helper()
	v, _ := modules.LoadOrStore(l.name, &module{})
	m := v.(*module)
	m.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		path, err := l.build(ctx, filepath.Join(outDir, l.name+".wasm"))
		if err == nil {
			m.wasm, err = os.ReadFile(path)
		}
		m.err = err
	})
	if m.err != nil {
		tb.Fatalf("lang=%s: %v", l.name, m.err)
	}
	return m.wasm
}

// newRuntime returns a Runtime closed when the test ends, sharing the
// wazero compilation cache that the runtime's tests keep beside the built
// modules.
func newRuntime(tb testing.TB) *runtime.Runtime {
	tb.Helper()
	cache, err := wasmbuild.CacheDir()
	if err != nil {
		tb.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{CompilationCacheDir: filepath.Join(cache, "wazero")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// triageBatch has messages to ack, retry and dead-letter, with escapes in
// ids, bodies and headers that a guest's JSON reader and writer must get
// right.
func triageBatch() runtime.Invocation {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	msg := func(id, body, headers string) runtime.Message {
		m := runtime.Message{ID: id, Attempt: 1, CreatedAt: at, Body: json.RawMessage(body)}
		if headers != "" {
			m.Headers = json.RawMessage(headers)
		}
		return m
	}
	return runtime.Invocation{ID: "inv-1", Trigger: runtime.Trigger{Type: "queue", Source: "orders"}, Messages: []runtime.Message{
		msg("1", `{"n":1}`, ""),
		msg("2", `{"fail":true,"retry_after":5,"error":"smtp \"451\"\n\u00e9"}`, `{"k":"v"}`),
		msg("3", `{"permanent":true}`, ""),
		msg("4", ` { "fail" : true } `, ""),
		msg("5", `"just a string"`, `{"k":"v \u00e9 \ud83d\ude00","n":[1,2.5e-3,null]}`),
		msg("m\"6\\é", `{"permanent":true,"error":"bad \u0001 input"}`, ""),
		msg("7", `{"a":[1,2,{"b":null}],"s":"\ud83d\ude00","fail":false,"permanent":"yes"}`, ""),
		msg("8", `null`, ""),
	}}
}

type want struct {
	outcome runtime.Outcome
	after   time.Duration
	err     string
	log     string // the message and level of its log line
	level   string
}

var triageWant = []want{
	{runtime.Acked, 0, "", "acked", "info"},
	{runtime.Retry, 5 * time.Second, "smtp \"451\"\né", "retry", "warn"},
	{runtime.Permanent, 0, "asked to fail permanently", "permanent", "error"},
	{runtime.Retry, 60 * time.Second, "asked to fail", "retry", "warn"},
	{runtime.Acked, 0, "", "acked", "info"},
	{runtime.Permanent, 0, "bad \u0001 input", "permanent", "error"},
	{runtime.Acked, 0, "", "acked", "info"},
	{runtime.Acked, 0, "", "acked", "info"},
}

func TestTriage(t *testing.T) {
	t.Parallel()
	for _, l := range langs {
		t.Run("lang="+l.name, func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t)
			f, err := rt.Load(context.Background(), wasm(t, l), runtime.FunctionConfig{Name: "triage", Version: 2, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind() != l.kind {
				t.Fatalf("Kind = %s, want %s", f.Kind(), l.kind)
			}
			inv := triageBatch()
			for round := range 3 { // a reactor instance serves every round
				res, err := f.Invoke(context.Background(), inv)
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure != nil {
					t.Fatalf("round %d: batch failed: %v\nstderr:\n%s", round, res.Failure, res.Stderr)
				}
				checkTriage(t, l, inv, res)
			}
			if l.kind == runtime.Reactor {
				if s := f.Stats(); s.Instances != 1 || s.Idle != 1 {
					t.Fatalf("Stats = %+v, want one pooled instance reused", s)
				}
			}
		})
	}
}

func checkTriage(t *testing.T, l lang, inv runtime.Invocation, res runtime.Result) {
	t.Helper()
	if len(res.Messages) != len(triageWant) {
		t.Fatalf("%d results, want %d", len(res.Messages), len(triageWant))
	}
	lines := bytes.Split(bytes.TrimRight(res.Stderr, "\n"), []byte("\n"))
	if len(lines) != len(triageWant) {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(triageWant), res.Stderr)
	}
	for i, w := range triageWant {
		m := res.Messages[i]
		if m.ID != inv.Messages[i].ID || m.Outcome != w.outcome || m.RetryAfter != w.after || m.Error != w.err {
			t.Errorf("message %q = %s after %s error %q, want %s after %s error %q", inv.Messages[i].ID, m.Outcome, m.RetryAfter, m.Error, w.outcome, w.after, w.err)
		}
		var ev map[string]any
		if err := json.Unmarshal(lines[i], &ev); err != nil {
			t.Fatalf("stderr line %d is not a JSON object: %s", i+1, lines[i])
		}
		level := w.level
		if level == "warn" && (l.name == "go" || l.name == "go-command") {
			level = "info" // the Go SDK logs at info or error
		}
		if ev["message"] != w.log || ev["level"] != level || ev["id"] != inv.Messages[i].ID {
			t.Errorf("stderr line %d = %s, want message %q, level %q, id %q", i+1, lines[i], w.log, level, inv.Messages[i].ID)
		}
	}
}

// BenchmarkInvoke runs a 10-message batch (8 acked, 1 retried, 1 dead-
// lettered) through each build; reactors reuse their pooled instance,
// commands start a fresh one per batch.
func BenchmarkInvoke(b *testing.B) {
	inv := runtime.Invocation{ID: "bench", Trigger: runtime.Trigger{Type: "queue", Source: "bench"}}
	for i := range 10 {
		body := fmt.Sprintf(`{"order":%d,"sku":"A-%d","qty":2}`, i, i)
		switch i {
		case 3:
			body = `{"fail":true,"retry_after":5}`
		case 7:
			body = `{"permanent":true,"error":"bad sku"}`
		}
		inv.Messages = append(inv.Messages, runtime.Message{ID: fmt.Sprint(100 + i), Attempt: 1, CreatedAt: time.Now(), Body: json.RawMessage(body)})
	}
	for _, l := range langs {
		b.Run("lang="+l.name, func(b *testing.B) {
			rt := newRuntime(b)
			f, err := rt.Load(context.Background(), wasm(b, l), runtime.FunctionConfig{Name: "triage", Version: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := f.Invoke(context.Background(), inv)
				if err != nil || res.Failure != nil || res.Count(runtime.Acked) != 8 {
					b.Fatalf("invoke: %v %v %+v", err, res.Failure, res.Messages)
				}
			}
		})
	}
}

// BenchmarkLoad measures a cold start of each build: Load (rewriting and
// compiling the module, with no compilation cache) plus the first
// invocation; creating and closing the runtime is not timed.
func BenchmarkLoad(b *testing.B) {
	inv := runtime.Invocation{ID: "load", Messages: []runtime.Message{{ID: "1", Attempt: 1, Body: json.RawMessage(`{}`)}}}
	for _, l := range langs {
		b.Run("lang="+l.name, func(b *testing.B) {
			mod := wasm(b, l)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				rt, err := runtime.New(ctx, runtime.Config{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				f, err := rt.Load(ctx, mod, runtime.FunctionConfig{Name: "triage", Version: 1})
				if err != nil {
					b.Fatal(err)
				}
				if res, err := f.Invoke(ctx, inv); err != nil || !res.OK() {
					b.Fatalf("invoke: %v %v", err, res.Failure)
				}
				b.StopTimer()
				_ = rt.Close(ctx)
				b.StartTimer()
			}
		})
	}
}

// TestRustSDK runs the Rust SDK's own unit tests (its JSON reader and
// writer) on the host with Debian's toolchain.
func TestRustSDK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if err := toolchains(ctx); err != nil {
		t.Fatal(err)
	}
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	target, err := wasmbuild.TreeCacheDir("rust-sdk-target")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "/usr/bin/cargo", "test", "--quiet", "--offline",
		"--manifest-path", filepath.Join(root, "sdk", "rust", "Cargo.toml"),
		"--target-dir", target)
	cmd.Env = append(os.Environ(), "RUSTC=/usr/bin/rustc", "RUSTDOC=/usr/bin/rustdoc")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo test of sdk/rust: %v\n%s", err, out)
	}
}
