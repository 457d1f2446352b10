package scaffold

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A new project vendors exactly its language's SDK files of sdk/: every
// file a project needs, none it does not (the Go SDK's tests, the C SDK's
// README), byte for byte.
func TestSDKFiles(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..", "..", "sdk")
	for lang, globs := range map[string][]string{
		"go":             {"*.go", "sdkhttp/*.go"},
		"c":              {"c/*.c", "c/*.h"},
		"rust":           {"rust/Cargo.toml", "rust/src/*.rs"},
		"assemblyscript": {"assemblyscript/assembly/*.ts"},
	} {
		want := map[string]string{} // path in the project's SDK folder -> in sdk/
		for _, g := range globs {
			matches, err := filepath.Glob(filepath.Join(root, g))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range matches {
				rel, _ := filepath.Rel(root, m)
				rel = filepath.ToSlash(rel)
				if strings.HasSuffix(rel, "_test.go") || rel == "sources.go" {
					continue
				}
				want[strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(rel, "assemblyscript/assembly/"), "c/"), "rust/")] = rel
			}
		}
		got, err := SDKFiles(lang)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 2 || len(got) != len(want) {
			t.Errorf("%s: SDK files %v, want those of sdk/ %v", lang, keys(got), want)
		}
		for p, repo := range want {
			b, err := os.ReadFile(filepath.Join(root, repo))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[p], b) {
				t.Errorf("%s: the project's %s is not sdk/%s", lang, p, repo)
			}
		}
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
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

// A project's function source is the triage example's (examples/), under
// the function's name and with the SDK paths of the project's own copy:
// nothing of it points back into the repository.
func TestProjectSourceIsTheExample(t *testing.T) {
	t.Parallel()
	for _, lang := range Languages {
		dir := filepath.Join(t.TempDir(), "upper")
		if _, err := Write(dir, "upper", lang); err != nil {
			t.Fatal(err)
		}
		if len(exampleFiles[lang]) == 0 {
			t.Errorf("%s: no file comes from the example", lang)
		}
		for _, f := range exampleFiles[lang] {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.to)))
			if err != nil {
				t.Fatal(err)
			}
			ex, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "examples", filepath.FromSlash(f.from)))
			if err != nil {
				t.Fatal(err)
			}
			text := string(ex)
			for i := 0; i < len(f.replace); i += 2 {
				text = strings.ReplaceAll(text, f.replace[i], strings.ReplaceAll(f.replace[i+1], "{{.Name}}", "upper"))
			}
			if string(got) != text {
				t.Errorf("%s: %s is not examples/%s with its replacements:\n%s", lang, f.to, f.from, got)
			}
			if strings.Contains(text, "../sdk") || strings.Contains(text, "-triage") {
				t.Errorf("%s: %s still names the example or its SDK path:\n%s", lang, f.to, got)
			}
		}
	}
}
