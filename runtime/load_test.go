package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		wasm []byte
		cfg  runtime.FunctionConfig
		want string
	}{
		{"unknown import", wasmbuild.Handwritten("unknown-import"), runtime.FunctionConfig{}, `unknown import "env"."foo"`},
		{"no entry point", wasmbuild.Handwritten("no-entry"), runtime.FunctionConfig{}, "exports neither _start"},
		{"not wasm", []byte("hello"), runtime.FunctionConfig{}, "compile module"},
		{"memory over the limit", wasmbuild.MustRead(t, "noop", wasmbuild.Command), runtime.FunctionConfig{MemoryMiB: 1}, "over the 1 MiB limit"},
		{"bad config", wasmbuild.Handwritten("trap"), runtime.FunctionConfig{MemoryMiB: 5000}, "out of range"},
	} {
		_, err := rt.Load(ctx, tc.wasm, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestLoadRejectsReactorWithoutSDK loads a c-shared Go build that does not
// use the SDK: it exports _initialize but not the sluice_ functions.
func TestLoadRejectsReactorWithoutSDK(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	_, err := rt.Load(context.Background(), wasmbuild.MustRead(t, "runtime/testdata/plain", wasmbuild.Reactor), runtime.FunctionConfig{})
	if err == nil || !strings.Contains(err.Error(), "lacks export sluice_alloc, sluice_handle") {
		t.Fatalf("Load error %v, want the missing exports named", err)
	}
}

func TestCompilationCacheDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	// A hand-written module: the cache is what is under test, and even the
	// smallest Go module takes ~15 s of CPU to compile under -race.
	wasm := wasmbuild.Handwritten("trap")
	files := func() int {
		n := 0
		_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	for i := range 2 {
		rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		f, err := rt.Load(ctx, wasm, runtime.FunctionConfig{Name: "trap"})
		if err != nil {
			t.Fatal(err)
		}
		// The code, compiled or read back, runs: the module traps.
		wantFailure(t, invoke(t, f, batch(`1`)), runtime.FailureTrap, "unreachable")
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// The first runtime writes the compiled code; the second finds it
		// and writes nothing new.
		if n := files(); n != 1 {
			t.Fatalf("runtime %d: %d files in the cache, want 1", i+1, n)
		}
	}
}

func TestSameModuleSharesCompilation(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	ctx := context.Background()
	wasm := wasmbuild.MustRead(t, "echo", wasmbuild.Reactor)
	var wg sync.WaitGroup
	fns := make([]*runtime.Function, 4)
	for i := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := rt.Load(ctx, wasm, runtime.FunctionConfig{Name: "echo", Version: i + 1})
			if err != nil {
				t.Error(err)
				return
			}
			fns[i] = f
		}()
	}
	wg.Wait()
	for i, f := range fns {
		if f == nil {
			t.FailNow()
		}
		if res := invoke(t, f, batch(`1`)); !res.OK() {
			t.Fatalf("function %d: %v", i, res.Failure)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInvokeRejectsInvalidInvocations(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f, err := rt.Load(context.Background(), wasmbuild.Handwritten("trap"), runtime.FunctionConfig{Name: "trap"})
	if err != nil {
		t.Fatal(err)
	}
	dup := batch(`1`, `2`)
	dup.Messages[1].ID = "1"
	many := batch(make([]string, 20)...)
	many.Messages[19].ID = "3"
	badBody := batch(`{"a":`)
	noID := batch(`1`)
	noID.Messages[0].ID = ""
	badHeaders := batch(`1`)
	badHeaders.Messages[0].Headers = json.RawMessage(`nope`)
	for name, inv := range map[string]runtime.Invocation{"duplicate id": dup, "duplicate id in a large batch": many, "bad body": badBody, "missing id": noID, "bad headers": badHeaders} {
		if _, err := f.Invoke(context.Background(), inv); err == nil {
			t.Errorf("%s: Invoke accepted it", name)
		}
	}
	// Empty bodies are allowed (they encode as null).
	if _, err := f.Invoke(context.Background(), batch("")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Invoke(context.Background(), batch(`1`)); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Invoke after Close: %v, want ErrClosed", err)
	}
	if err := f.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestRuntimeClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: compileCacheDir(t), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := rt.Load(ctx, wasmbuild.MustRead(t, "echo", wasmbuild.Reactor), runtime.FunctionConfig{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	invoke(t, f, batch(`1`))
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := rt.Load(ctx, wasmbuild.Handwritten("trap"), runtime.FunctionConfig{}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("Load after Close: %v, want ErrClosed", err)
	}
}

// compilePanic is a malformed module on which wazero's validator panics
// (v1.12: index out of range) instead of returning an error: function 0
// calls function 1, whose declared type index 48 does not exist.
var compilePanic = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: ()->()
	0x03, 0x03, 0x02, 0x00, 0x30, // funcs: f0:t0, f1:t48
	0x0a, 0x09, 0x02, // code: 2 bodies
	0x04, 0x00, 0x10, 0x01, 0x0b, // f0: call 1
	0x02, 0x00, 0x0b, // f1: nothing
}

// TestLoadCompilePanic: a panic while compiling fails Load with "invalid
// module", and leaves no half-made cache entry behind, so loading the same
// bytes again fails as promptly instead of waiting for a compilation that
// never ends.
func TestLoadCompilePanic(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		f, err := func() (f *runtime.Function, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("Load panicked: %v", p)
				}
			}()
			return rt.Load(ctx, compilePanic, runtime.FunctionConfig{Name: "panic"})
		}()
		cancel()
		if f != nil {
			_ = f.Close(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), "invalid module") {
			t.Errorf("load %d: error %v, want invalid module", i+1, err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Fatalf("load %d took %s", i+1, elapsed)
		}
	}
}
