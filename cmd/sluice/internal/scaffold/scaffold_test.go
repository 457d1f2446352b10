package scaffold

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The SDK copies that new projects vendor are byte for byte the files of
// sdk/ (run `go generate ./cmd/sluice/internal/scaffold/` after changing
// an SDK).
func TestEmbeddedSDKsMatch(t *testing.T) {
	t.Parallel()
	sdk := filepath.Join("..", "..", "..", "..", "sdk")
	want := map[string]string{ // embedded → repository
		"_sdk/c/sluice.h":              "c/sluice.h",
		"_sdk/c/sluice.c":              "c/sluice.c",
		"_sdk/c/sluice_host.h":         "c/sluice_host.h",
		"_sdk/c/sluice_host.c":         "c/sluice_host.c",
		"_sdk/assemblyscript/host.ts":  "assemblyscript/assembly/host.ts",
		"_sdk/rust/Cargo.toml":         "rust/Cargo.toml",
		"_sdk/assemblyscript/index.ts": "assemblyscript/assembly/index.ts",
	}
	for _, dir := range []struct{ embedded, repo string }{{"_sdk/go", "."}, {"_sdk/rust/src", "rust/src"}} {
		entries, err := os.ReadDir(filepath.Join(sdk, dir.repo))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") || strings.HasSuffix(n, ".rs")) {
				want[dir.embedded+"/"+n] = filepath.Join(dir.repo, n)
			}
		}
	}
	got := map[string]bool{}
	for _, lang := range Languages {
		entries, err := files.ReadDir("_sdk/" + lang)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				sub, _ := files.ReadDir("_sdk/" + lang + "/" + e.Name())
				for _, s := range sub {
					got["_sdk/"+lang+"/"+e.Name()+"/"+s.Name()] = true
				}
				continue
			}
			got["_sdk/"+lang+"/"+e.Name()] = true
		}
	}
	for embedded, repo := range want {
		a, err := files.ReadFile(embedded)
		if err != nil {
			t.Errorf("sdk/%s is not embedded as %s: run go generate ./cmd/sluice/internal/scaffold/", repo, embedded)
			continue
		}
		b, err := os.ReadFile(filepath.Join(sdk, repo))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from sdk/%s: run go generate ./cmd/sluice/internal/scaffold/", embedded, repo)
		}
		delete(got, embedded)
	}
	for extra := range got {
		t.Errorf("%s is embedded but not in sdk/: run go generate ./cmd/sluice/internal/scaffold/", extra)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	for _, lang := range Languages {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "upper")
			names, err := Write(dir, "upper", lang)
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(names, " ")
			for _, want := range []string{"sluice.yaml", "batch.json", "README.md", "build.sh", ".gitignore", "sluice-sdk/"} {
				if !strings.Contains(joined, want) {
					t.Errorf("%s project lacks %s: %s", lang, want, joined)
				}
			}
			yaml, _ := os.ReadFile(filepath.Join(dir, "sluice.yaml"))
			if !strings.Contains(string(yaml), "upper:") || strings.Contains(string(yaml), "{{") {
				t.Errorf("sluice.yaml:\n%s", yaml)
			}
			if _, err := Write(dir, "upper", lang); err == nil || !strings.Contains(err.Error(), "not empty") {
				t.Errorf("Write over a project: %v", err)
			}
		})
	}
	if _, err := Lang("cobol"); err == nil {
		t.Error("Lang(cobol) succeeded")
	}
	if l, err := Lang("AS"); err != nil || l != "assemblyscript" {
		t.Errorf("Lang(AS) = %q, %v", l, err)
	}
}
