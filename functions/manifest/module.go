package manifest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// ReadModule returns the WebAssembly module of the named function: the
// .wasm file of `wasm:`, or the package of `build:` compiled for wasip1
// (command or reactor). `build:` compiles only packages of the Sluice module
// itself (its examples); other functions deploy a .wasm with `wasm:`.
func (m *Manifest) ReadModule(ctx context.Context, name string) ([]byte, error) {
	f, ok := m.Functions[name]
	if !ok {
		return nil, fmt.Errorf("manifest: no function %q", name)
	}
	path := m.Path(f.Wasm)
	if f.Build != "" {
		pkg, err := modulePackage(m.Path(f.Build))
		if err != nil {
			return nil, fmt.Errorf("function %s: build %s: %w", name, f.Build, err)
		}
		mode := wasmbuild.Command
		if f.Reactor {
			mode = wasmbuild.Reactor
		}
		if path, err = wasmbuild.Build(ctx, pkg, mode); err != nil {
			return nil, fmt.Errorf("function %s: build %s: %w", name, f.Build, err)
		}
	}
	module, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", name, err)
	}
	return module, nil
}

// modulePackage turns a package folder into the module-relative path
// wasmbuild takes.
func modulePackage(dir string) (string, error) {
	root, err := wasmbuild.Root()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the Sluice module %s: build it yourself (GOOS=wasip1 GOARCH=wasm go build) and deploy it with wasm:", dir, root)
	}
	return filepath.ToSlash(rel), nil
}
