// Command warm builds the Go guest modules the test suite loads and
// compiles each into the compilation cache the tests share
// (wasmbuild.CompiledCacheDir), so that the race-enabled test binaries
// find their machine code there instead of compiling it themselves.
//
// wazero's compiler, instrumented by -race, takes about ten times the CPU
// it takes without (a multi-MB Go module: ~20 s against ~2 s), and on a
// machine whose caches are empty (a fresh clone on a new machine, or the
// first run after a change to sdk/, which every Go example links) the
// suite's packages each met those compiles. This program is built without
// -race; scripts/test runs it before the suite. The cache key is the
// module's bytes after the runtime's own rewrites, so the tests hit it only
// because this loads each module through runtime.Load exactly as they do
// (with the default memory limit, which changes the bytes only of a module
// that grows its tables: guard.CapTables). wazero files the code under its
// version, which test binaries cannot read from their build information
// and call "dev": so scripts/test links this program with that version
// (-X github.com/tetratelabs/wazero/internal/version.version=dev), and
// the program fails if the code went anywhere else.
//
// The modules are every Go main package under examples/, runtime/testdata/
// and docs/testdata/, each as a command and as a reactor (some are loaded
// only one way; building the other costs a few seconds). Warming is best
// effort: a module that does not build is reported and skipped, and the
// test that needs it reports the error itself.
//
//	go run -ldflags=-X=github.com/tetratelabs/wazero/internal/version.version=dev ./internal/wasmbuild/warm
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "warm:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	began := time.Now()
	names, err := modules()
	if err != nil {
		return err
	}
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		return err
	}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: dir})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)

	type job struct {
		name string
		mode wasmbuild.Mode
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range goruntime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := warm(ctx, rt, j.name, j.mode); err != nil {
					failed.Add(1)
					fmt.Fprintf(os.Stderr, "warm: %s (%s): %v\n", j.name, j.mode, err)
				}
			}
		}()
	}
	for _, name := range names {
		for _, mode := range []wasmbuild.Mode{wasmbuild.Reactor, wasmbuild.Command} {
			jobs <- job{name, mode}
		}
	}
	close(jobs)
	wg.Wait()
	if elsewhere := filedElsewhere(dir, began); elsewhere != "" {
		return fmt.Errorf("wazero filed compiled code in %s, not under version \"dev\" where test binaries look: link this program with -ldflags=-X=github.com/tetratelabs/wazero/internal/version.version=dev (scripts/test does)", elsewhere)
	}
	fmt.Printf("warm: %d Go guest modules built and compiled into %s in %s", 2*len(names)-int(failed.Load()), dir, time.Since(began).Round(100*time.Millisecond))
	if n := failed.Load(); n > 0 {
		fmt.Printf(" (%d did not build)", n)
	}
	fmt.Println()
	return nil
}

// warm builds name in mode and loads it with the runtime's defaults, which
// compiles it into the runtime's cache unless it is there already. A
// module the runtime refuses after compiling it (a reactor build of a
// package without the SDK, which the tests load to see it refused) is
// compiled all the same, and is not an error here.
func warm(ctx context.Context, rt *runtime.Runtime, name string, mode wasmbuild.Mode) error {
	path, err := wasmbuild.Build(ctx, name, mode)
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if f, err := rt.Load(ctx, wasm, runtime.FunctionConfig{Name: filepath.Base(name)}); err == nil {
		return f.Close(ctx)
	}
	return nil
}

// filedElsewhere returns a folder of wazero's cache under dir, other than
// those of version "dev", that changed since t, or "".
func filedElsewhere(dir string, t time.Time) string {
	folders, _ := filepath.Glob(filepath.Join(dir, "*", "wazero-*"))
	for _, f := range folders {
		if st, err := os.Stat(f); err == nil && !strings.HasPrefix(filepath.Base(f), "wazero-dev-") && st.ModTime().After(t) {
			return f
		}
	}
	return ""
}

// modules returns the names (as wasmbuild.Build takes them) of the Go main
// packages the tests build.
func modules() ([]string, error) {
	root, err := wasmbuild.Root()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, dir := range []string{"examples", "runtime/testdata", "docs/testdata"} {
		mains, err := filepath.Glob(filepath.Join(root, dir, "*", "main.go"))
		if err != nil {
			return nil, err
		}
		for _, m := range mains {
			rel, err := filepath.Rel(root, filepath.Dir(m))
			if err != nil {
				return nil, err
			}
			if dir == "examples" { // Build's bare names, so its cache files are the tests'
				rel = filepath.Base(rel)
			}
			names = append(names, filepath.ToSlash(rel))
		}
	}
	sort.Strings(names)
	return names, nil
}
