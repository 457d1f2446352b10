package wasmbuild

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestBuildCachesBySource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	paths := make([]string, 4)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := Build(ctx, "runtime/testdata/empty", Command)
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		}()
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("concurrent builds gave %v, want one cached path", paths)
		}
	}
	b, err := os.ReadFile(paths[0])
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("cached module %s: %v", paths[0], err)
	}
	if !strings.Contains(filepath.Base(paths[0]), "runtime_testdata_empty-command-") {
		t.Fatalf("cache file %s does not name the package and mode", paths[0])
	}
	// No temporary files are left behind.
	tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(paths[0]), ".build-*"))
	for _, f := range tmp {
		t.Logf("temporary file (maybe another build in flight): %s", f)
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	if _, err := Build(context.Background(), "no-such-example", Command); err == nil || !strings.Contains(err.Error(), "no main.go") {
		t.Fatalf("Build of a missing example: %v", err)
	}
}

func TestHandwrittenUnknownPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Handwritten accepted an unknown name")
		}
	}()
	Handwritten("nope")
}

func TestBuildDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	command := false
	b, err := BuildDir(ctx, filepath.Join(root, "runtime", "testdata", "empty"), &command)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("BuildDir of runtime/testdata/empty: %d bytes, %v", len(b), err)
	}
	if _, err := BuildDir(ctx, filepath.Join(t.TempDir(), "missing"), &command); err == nil {
		t.Fatal("BuildDir of a missing folder succeeded")
	}
}

// A Go main package in a module of its own, outside this repository, is
// built in that module: a command unless it imports the SDK.
func TestBuildDirOutsideTheModule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/upper\n\ngo 1.24\n",
		"main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"{}\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if sdk, err := ImportsSDK(ctx, dir); err != nil || sdk {
		t.Fatalf("ImportsSDK = %v, %v; want false", sdk, err)
	}
	b, err := BuildDir(ctx, dir, nil)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) || !bytes.Contains(b, []byte("_start")) {
		t.Fatalf("BuildDir outside the module: %d bytes, %v", len(b), err)
	}
}

// RunCommand returns what the command wrote, and fails with the
// command's output when it fails or writes no module.
func TestRunCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	b, err := RunCommand(ctx, dir, "printf '\\000asm\\001\\000\\000\\000' > out.wasm", filepath.Join(dir, "out.wasm"))
	if err != nil || len(b) != 8 {
		t.Fatalf("RunCommand = %q, %v", b, err)
	}
	if _, err := RunCommand(ctx, dir, "echo broken >&2; exit 3", filepath.Join(dir, "none.wasm")); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("failing command: %v", err)
	}
	if _, err := RunCommand(ctx, dir, "true", filepath.Join(dir, "none.wasm")); err == nil {
		t.Fatal("a command writing nothing succeeded")
	}
	if _, err := RunCommand(ctx, dir, "echo text > t.wasm", filepath.Join(dir, "t.wasm")); err == nil || !strings.Contains(err.Error(), "not a WebAssembly module") {
		t.Fatalf("text output: %v", err)
	}
}
