package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// TestMain fails the run if goroutines outlive the tests: every Runtime is
// closed by its test, so whatever wazero or the host started must be gone.
func TestMain(m *testing.M) {
	before := goruntime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for goruntime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := goruntime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:goruntime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines after the tests, %d before\n%s\n", n, before, buf)
			code = 1
		}
	}
	os.Exit(code)
}

// logBuffer collects zerolog output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// events returns the logged events as maps.
func (b *logBuffer) events(t testing.TB) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var evs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// compileCacheDir is the wazero compilation cache shared by the tests of
// every run (wasmbuild.CompiledCacheDir).
func compileCacheDir(t testing.TB) string {
	t.Helper()
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// newRuntime returns a Runtime closed when the test ends, logging into the
// returned buffer.
func newRuntime(t testing.TB) (*runtime.Runtime, *logBuffer) {
	t.Helper()
	return newRuntimeWith(t, runtime.Config{})
}

// newRuntimeWith is newRuntime with cfg's other fields.
func newRuntimeWith(t testing.TB, cfg runtime.Config) (*runtime.Runtime, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg.CompilationCacheDir, cfg.Logger = compileCacheDir(t), zerolog.New(logs)
	rt, err := runtime.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return rt, logs
}

// load builds a module and loads it.
func load(t testing.TB, rt *runtime.Runtime, name string, mode wasmbuild.Mode, cfg runtime.FunctionConfig) *runtime.Function {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = filepath.Base(name)
	}
	return loadBytes(t, rt, wasmbuild.MustRead(t, name, mode), cfg)
}

// loadBytes loads a module, closed when the test ends.
func loadBytes(t testing.TB, rt *runtime.Runtime, wasm []byte, cfg runtime.FunctionConfig) *runtime.Function {
	t.Helper()
	if cfg.Version == 0 {
		cfg.Version = 1
	}
	f, err := rt.Load(context.Background(), wasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return f
}

// batch makes an invocation of one message per body, ids "1", "2", ….
func batch(bodies ...string) runtime.Invocation {
	inv := runtime.Invocation{ID: "inv-1", Trigger: runtime.Trigger{Type: "queue", Source: "tests"}}
	for i, b := range bodies {
		inv.Messages = append(inv.Messages, runtime.Message{
			ID:        fmt.Sprint(i + 1),
			Attempt:   1,
			CreatedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
			Body:      json.RawMessage(b),
		})
	}
	return inv
}

// invoke runs inv and fails the test on a host error.
func invoke(t testing.TB, f *runtime.Function, inv runtime.Invocation) runtime.Result {
	t.Helper()
	res, err := f.Invoke(context.Background(), inv)
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if len(res.Messages) != len(inv.Messages) {
		t.Fatalf("Invoke returned %d message results for %d messages", len(res.Messages), len(inv.Messages))
	}
	return res
}

// modes runs fn as a subtest per module kind.
func modes(t *testing.T, fn func(t *testing.T, mode wasmbuild.Mode)) {
	for _, mode := range []wasmbuild.Mode{wasmbuild.Command, wasmbuild.Reactor} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			fn(t, mode)
		})
	}
}

// wantFailure fails the test unless res is a whole-batch failure of kind.
func wantFailure(t testing.TB, res runtime.Result, kind runtime.FailureKind, msgPart string) {
	t.Helper()
	if res.Failure == nil {
		t.Fatalf("result %+v has no batch failure, want %s", res.Messages, kind)
	}
	if res.Failure.Kind != kind {
		t.Fatalf("failure = %s (%s), want %s; stderr:\n%s", res.Failure.Kind, res.Failure.Message, kind, res.Stderr)
	}
	if !strings.Contains(res.Failure.Message, msgPart) {
		t.Fatalf("failure message %q does not contain %q", res.Failure.Message, msgPart)
	}
	for _, m := range res.Messages {
		if m.Outcome != runtime.Retry || m.Error != res.Failure.Message {
			t.Fatalf("message %s = %+v, want retry with the failure message", m.ID, m)
		}
	}
}
