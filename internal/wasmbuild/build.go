package wasmbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
)

// Mode selects the kind of module to build.
type Mode int

const (
	// Command builds a module exporting _start (a fresh instance per batch).
	Command Mode = iota
	// Reactor builds with -buildmode=c-shared: _initialize plus the SDK's
	// sluice_alloc/sluice_handle exports, instances reused across batches.
	Reactor
)

// String returns "command" or "reactor".
func (m Mode) String() string {
	if m == Reactor {
		return "reactor"
	}
	return "command"
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error

	goVersionOnce sync.Once
	goVersion     string
	goVersionErr  error

	locks sync.Map // cache path -> *sync.Mutex, one build per module at a time
)

// Root returns the repository root (the folder holding go.mod).
func Root() (string, error) {
	rootOnce.Do(func() {
		if _, file, _, ok := goruntime.Caller(0); ok {
			dir := filepath.Join(filepath.Dir(file), "..", "..")
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				rootDir = filepath.Clean(dir)
				return
			}
		}
		out, err := exec.Command("go", "env", "GOMOD").Output()
		gomod := strings.TrimSpace(string(out))
		if err != nil || gomod == "" || gomod == os.DevNull {
			rootErr = fmt.Errorf("wasmbuild: locate module root: %v", err)
			return
		}
		rootDir = filepath.Dir(gomod)
	})
	return rootDir, rootErr
}

// Dir returns the source folder Build uses for name: examples/<name> for a
// bare name, else name taken relative to the repository root.
func Dir(name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	if !strings.Contains(name, "/") {
		return filepath.Join(root, "examples", name), nil
	}
	return filepath.Join(root, filepath.FromSlash(name)), nil
}

// Build compiles the Go main package name (see Dir) to WebAssembly in the
// given mode and returns the path of the cached .wasm file.
func Build(ctx context.Context, name string, mode Mode) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	dir, err := Dir(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
		return "", fmt.Errorf("wasmbuild: build %s: no main.go in %s", name, dir)
	}
	key, err := sourceHash(ctx, root, dir, mode)
	if err != nil {
		return "", fmt.Errorf("wasmbuild: build %s: %w", name, err)
	}
	cache, err := cacheDir(root)
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, fmt.Sprintf("%s-%s-%s.wasm", strings.ReplaceAll(name, "/", "_"), mode, key[:20]))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	mu, _ := locks.LoadOrStore(out, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp, err := os.CreateTemp(cache, ".build-*.wasm")
	if err != nil {
		return "", fmt.Errorf("wasmbuild: build %s: %w", name, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-buildvcs=false", "-trimpath", "-o", tmp.Name()}
	if mode == Reactor {
		args = append(args, "-buildmode=c-shared")
	}
	args = append(args, ".")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = buildEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("wasmbuild: go build %s (%s): %w: %s", name, mode, err, strings.TrimSpace(stderr.String()))
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("wasmbuild: build %s: %w", name, err)
	}
	return out, nil
}

// SDKPackage is the import path of the Go guest SDK; a package importing
// it is built as a reactor unless told otherwise.
const SDKPackage = "github.com/sluicehq/sluice/sdk"

// BuildDir builds the Go main package in folder dir and returns the
// module's bytes: a reactor when *reactor is true, a command when false,
// and when reactor is nil a reactor exactly if the package imports the
// SDK (SDKPackage, found with go list -deps). A package inside the Sluice
// module is built like Build (cached by source hash); any other is built
// by `go build` in its own module, so its go.mod, replaces and vendor
// folder apply (Go's build cache keeps rebuilds fast). Its signature is
// that of a deploy.Builder, the builder the CLI gives
// deploy.ManifestModules.
func BuildDir(ctx context.Context, dir string, reactor *bool) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mode := Command
	if reactor == nil {
		sdk, err := ImportsSDK(ctx, abs)
		if err != nil {
			return nil, err
		}
		if sdk {
			mode = Reactor
		}
	} else if *reactor {
		mode = Reactor
	}
	if name, err := modulePackage(abs); err == nil {
		path, err := Build(ctx, name, mode)
		if err != nil {
			return nil, err
		}
		return os.ReadFile(path)
	}
	tmp, err := os.CreateTemp("", "sluice-build-*.wasm")
	if err != nil {
		return nil, fmt.Errorf("wasmbuild: build %s: %w", dir, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-trimpath", "-o", tmp.Name()}
	if mode == Reactor {
		args = append(args, "-buildmode=c-shared")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, ".")...)
	cmd.Dir, cmd.Env = abs, buildEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("wasmbuild: go build %s (%s, GOOS=wasip1 GOARCH=wasm): %w: %s", dir, mode, err, strings.TrimSpace(string(out)))
	}
	return os.ReadFile(tmp.Name())
}

// ImportsSDK reports whether the Go package in folder dir imports the
// Sluice SDK, directly or not, when built for wasip1.
func ImportsSDK(ctx context.Context, dir string) (bool, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", ".")
	cmd.Dir, cmd.Env = dir, buildEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("wasmbuild: go list -deps in %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if dep == SDKPackage {
			return true, nil
		}
	}
	return false, nil
}

// RunCommand runs a manifest's build command (sh -c command) in folder
// dir, with the caller's environment, and returns the module it wrote to
// output. A non-zero exit is an error quoting the command's last output;
// so is an output file missing or not a WebAssembly binary. Its signature
// is that of a deploy.Runner.
func RunCommand(ctx context.Context, dir, command, output string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, lastBytes(strings.TrimSpace(string(out)), 4096))
	}
	module, err := os.ReadFile(output)
	if err != nil {
		return nil, fmt.Errorf("the command succeeded but its output: %w", err)
	}
	if !bytes.HasPrefix(module, []byte("\x00asm")) {
		return nil, fmt.Errorf("%s is not a WebAssembly module (no \\0asm header)", output)
	}
	return module, nil
}

// lastBytes returns the end of s, at most n bytes of it.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// modulePackage turns a package folder inside the Sluice module into the
// module-relative name Build takes.
func modulePackage(abs string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the Sluice module %s", abs, root)
	}
	return filepath.ToSlash(rel), nil
}

// MustRead builds name like Build and returns the module's bytes; it is
// meant for tests and benchmarks, and reports failures through tb.
func MustRead(tb interface {
	Helper()
	Fatalf(format string, args ...any)
}, name string, mode Mode) []byte {
	tb.Helper()
	path, err := Build(context.Background(), name, mode)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("wasmbuild: %v", err)
	}
	return b
}

// buildEnv is the environment for go build: the caller's, targeting
// wasip1/wasm, without flags meant for the host build (such as -race).
func buildEnv() []string {
	env := make([]string, 0, len(os.Environ())+4)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
}

// CacheDir returns (creating it) the folder holding built modules; tests
// may keep other build artefacts, such as a wazero compilation cache, in
// sub-folders of it.
func CacheDir() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return cacheDir(root)
}

// CompiledCacheDir returns (creating it) the wazero compilation cache
// that tests share: the "wazero" folder of CacheDir. Every test binary's
// runtimes and servers keep compiled machine code there, across runs, so
// a module compiles once per machine rather than once per test (seconds
// each for a multi-MB Go module, many more under -race).
func CompiledCacheDir() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "wazero")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("wasmbuild: create compilation cache folder: %w", err)
	}
	return dir, nil
}

// cacheDir returns (creating it) the folder holding built modules.
func cacheDir(root string) (string, error) {
	dir := os.Getenv("SLUICE_WASM_CACHE")
	if dir == "" {
		if uc, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(uc, "sluice", "wasm")
		} else {
			dir = filepath.Join(root, ".sluice", "cache", "wasm")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("wasmbuild: create cache folder: %w", err)
	}
	return dir, nil
}

// sourceHash hashes everything the build depends on.
func sourceHash(ctx context.Context, root, dir string, mode Mode) (string, error) {
	gv, err := toolchainVersion(ctx)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "wasmbuild v1\x00%s\x00%s\x00", gv, mode)
	for _, d := range []string{dir, filepath.Join(root, "sdk")} {
		if err := hashTree(h, root, d); err != nil {
			return "", err
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(h, root, filepath.Join(root, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashTree(h interface{ Write([]byte) (int, error) }, root, dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("hash sources: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := hashFile(h, root, f); err != nil {
			return err
		}
	}
	return nil
}

func hashFile(h interface{ Write([]byte) (int, error) }, root, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("hash sources: %w", err)
	}
	rel, _ := filepath.Rel(root, path)
	fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
	h.Write(b)
	return nil
}

// toolchainVersion returns the version of the go command on PATH.
func toolchainVersion(ctx context.Context) (string, error) {
	goVersionOnce.Do(func() {
		out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
		if err != nil {
			goVersionErr = fmt.Errorf("run go env GOVERSION: %w", err)
			return
		}
		goVersion = strings.TrimSpace(string(out))
	})
	return goVersion, goVersionErr
}

// TreeCacheDir returns the path of a sub-folder of CacheDir named after
// name and this source tree: for build tools that trust file times and
// recorded paths (cargo's target folder), whose state two worktrees must
// not share (one would take the other's build for its own).
func TreeCacheDir(name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	cache, err := cacheDir(root)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(cache, name+"-"+hex.EncodeToString(sum[:4])), nil
}
