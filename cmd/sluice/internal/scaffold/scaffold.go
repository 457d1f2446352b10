// Package scaffold writes the project of a new Sluice function (`sluice
// new`): its source, a build script, a sluice.yaml with a queue, the
// function and its trigger, a sample batch for `sluice invoke` and a
// README, for Go, C, Rust or AssemblyScript.
//
// The function's source (and its Cargo.toml or npm files) is the triage
// example's (examples.Triage), renamed and pointed at the project's SDK
// copy; the rest lives in _templates (common files, then each
// language's); the guest SDK a project vendors comes from sdk.Sources,
// the files of the repository's sdk/ folder embedded there: one copy of
// each, no drift.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/sdk"
)

//go:embed all:_templates
var files embed.FS

// Languages are the languages a project may be written in.
var Languages = []string{"go", "c", "rust", "assemblyscript"}

var langNames = map[string]string{"go": "Go", "c": "C", "rust": "Rust", "assemblyscript": "AssemblyScript"}

// langAliases are other names accepted for a language.
var langAliases = map[string]string{"golang": "go", "as": "assemblyscript", "rs": "rust"}

// Lang returns the language named s (or one of its aliases).
func Lang(s string) (string, error) {
	s = strings.ToLower(s)
	if a, ok := langAliases[s]; ok {
		s = a
	}
	if !slices.Contains(Languages, s) {
		return "", fmt.Errorf("language %q: use one of %s", s, strings.Join(Languages, ", "))
	}
	return s, nil
}

// sdkDirs says where each language's SDK copy goes in a project, and
// how its files are renamed there.
var sdkDirs = map[string]string{
	"go":             "sluice-sdk/sdk",
	"c":              "sluice-sdk",
	"rust":           "sluice-sdk",
	"assemblyscript": "sluice-sdk",
}

// sdkRoots is where each language's SDK is in sdk.Sources.
var sdkRoots = map[string]string{"go": ".", "c": "c", "rust": "rust", "assemblyscript": "assemblyscript/assembly"}

// exampleFile is a file a project takes from the triage example.
type exampleFile struct {
	from, to string // its path in examples.Triage and in the project
	// replace holds old, new pairs, each old found in the example: the
	// example's names become the function's ({{.Name}} in a new), its SDK
	// paths (into the repository's sdk/) the project's copy's.
	replace []string
}

// exampleFiles are the files of each language's project that come from
// the triage example.
var exampleFiles = map[string][]exampleFile{
	"go": {{"go-triage/main.go", "main.go", []string{"Command go-triage ", "Command {{.Name}} "}}},
	"c":  {{"c-triage/triage.c", "main.c", []string{" * triage: ", " * {{.Name}}: "}}},
	"rust": {
		{"rust-triage/Cargo.toml", "Cargo.toml", []string{
			`name = "rust-triage"`, `name = "{{.Name}}"`,
			`sluice-sdk = { path = "../../sdk/rust" }`, "# A copy of the Sluice Rust SDK (no dependencies), written by `sluice new`.\nsluice-sdk = { path = \"sluice-sdk\" }",
		}},
		{"rust-triage/src/main.rs", "src/main.rs", []string{"//! triage: ", "//! {{.Name}}: "}},
	},
	"assemblyscript": {
		{"as-triage/assembly/index.ts", "assembly/index.ts", []string{
			"// triage: ", "// {{.Name}}: ",
			`"../../../sdk/assemblyscript/assembly/index"`, `"../sluice-sdk/index"`,
		}},
		{"as-triage/asconfig.json", "asconfig.json", nil},
		{"as-triage/package.json", "package.json", []string{
			`"name": "as-triage"`, `"name": "{{.Name}}"`,
			`"build": "asc assembly/index.ts --config asconfig.json --outFile triage.wasm"`, `"build": "./build.sh"`,
		}},
		{"as-triage/package-lock.json", "package-lock.json", []string{`"name": "as-triage"`, `"name": "{{.Name}}"`}},
	},
}

// fromExample returns f's example file with f.replace made for function
// name.
func fromExample(f exampleFile, name string) ([]byte, error) {
	b, err := examples.Triage.ReadFile(f.from)
	if err != nil {
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	text := string(b)
	for i := 0; i < len(f.replace); i += 2 {
		old, new := f.replace[i], strings.ReplaceAll(f.replace[i+1], "{{.Name}}", name)
		if !strings.Contains(text, old) {
			return nil, fmt.Errorf("scaffold: examples/%s no longer has %q, which a project replaces: update exampleFiles", f.from, old)
		}
		text = strings.ReplaceAll(text, old, new)
	}
	return []byte(text), nil
}

// SDKFiles returns the SDK files a project in lang vendors, by their path
// in its SDK folder: the files of the repository's sdk/ (sdk.Sources),
// the Go SDK (with package sdkhttp) without its tests and sources.go.
func SDKFiles(lang string) (map[string][]byte, error) {
	root, ok := sdkRoots[lang]
	if !ok {
		return nil, fmt.Errorf("scaffold: no SDK for language %q", lang)
	}
	out := map[string][]byte{}
	err := fs.WalkDir(sdk.Sources, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if lang == "go" && p != "." && p != "sdkhttp" {
				return fs.SkipDir // the other languages' SDKs
			}
			return nil
		}
		if lang == "go" && (strings.HasSuffix(p, "_test.go") || p == "sources.go") {
			return nil
		}
		b, err := sdk.Sources.ReadFile(p)
		rel := p
		if root != "." {
			rel = strings.TrimPrefix(p, root+"/")
		}
		out[rel] = b
		return err
	})
	return out, err
}

// Write writes the project of function name in lang to folder dir, which
// must not exist or be empty, and returns the paths written, relative to
// dir.
func Write(dir, name, lang string) ([]string, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s exists and is not empty: choose another --dir", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	data := struct{ Name, Lang, LangName, Wasm string }{name, lang, langNames[lang], name + ".wasm"}
	out := map[string][]byte{}
	for _, root := range []string{"_templates/common", "_templates/" + lang} {
		err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			text, err := files.ReadFile(p)
			if err != nil {
				return err
			}
			t, err := template.New(p).Option("missingkey=error").Parse(string(text))
			if err != nil {
				return fmt.Errorf("scaffold: template %s: %w", p, err)
			}
			var b bytes.Buffer
			if err := t.Execute(&b, data); err != nil {
				return fmt.Errorf("scaffold: template %s: %w", p, err)
			}
			out[projectPath(strings.TrimPrefix(p, root+"/"))] = b.Bytes()
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, f := range exampleFiles[lang] {
		b, err := fromExample(f, name)
		if err != nil {
			return nil, err
		}
		out[f.to] = b
	}
	sdkFiles, err := SDKFiles(lang)
	if err != nil {
		return nil, err
	}
	for p, b := range sdkFiles {
		out[path.Join(sdkDirs[lang], p)] = b
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range out {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(n, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, out[n], mode); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// projectPath is where a template file goes in the project: dot files
// and nested go.mod files are stored under other names (a go.mod would
// make its folder another module, which go:embed cannot hold).
func projectPath(p string) string {
	switch p {
	case "gitignore":
		return ".gitignore"
	case "gomod":
		return "go.mod"
	case "sdk.go.mod":
		return "sluice-sdk/go.mod"
	}
	return p
}
