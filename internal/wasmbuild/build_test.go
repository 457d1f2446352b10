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
	b, err := BuildDir(ctx, filepath.Join(root, "runtime", "testdata", "empty"), false)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm")) {
		t.Fatalf("BuildDir of runtime/testdata/empty: %d bytes, %v", len(b), err)
	}
	if _, err := BuildDir(ctx, filepath.Join(root, "..", "outside"), false); err == nil || !strings.Contains(err.Error(), "outside the Sluice module") {
		t.Fatalf("BuildDir outside the module: %v", err)
	}
}
