package deploy

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/functions/manifest"
)

// Modules returns the WebAssembly module of a function, by its name in
// the manifest being applied.
type Modules func(ctx context.Context, function string) ([]byte, error)

// Builder compiles the Go main package in folder dir to a WebAssembly
// module for wasip1: a reactor when reactor is set, else a command.
type Builder func(ctx context.Context, dir string, reactor bool) ([]byte, error)

// ManifestModules returns the modules m declares: the .wasm file of a
// function's `wasm:`, or the package of its `build:` compiled by build.
// With a nil build, a function with `build:` is an error.
func ManifestModules(m *manifest.Manifest, build Builder) Modules {
	return func(ctx context.Context, name string) ([]byte, error) {
		f, ok := m.Functions[name]
		if !ok {
			return nil, fmt.Errorf("manifest: no function %q", name)
		}
		if f.Build != "" {
			if build == nil {
				return nil, fmt.Errorf("function %s: build %s: no Go builder here: build it (GOOS=wasip1 GOARCH=wasm go build) and deploy it with wasm:", name, f.Build)
			}
			module, err := build(ctx, m.Path(f.Build), f.Reactor)
			if err != nil {
				return nil, fmt.Errorf("function %s: build %s: %w", name, f.Build, err)
			}
			return module, nil
		}
		module, err := os.ReadFile(m.Path(f.Wasm))
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", name, err)
		}
		return module, nil
	}
}
