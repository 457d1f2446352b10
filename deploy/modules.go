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

// Builder compiles the Go main package in folder dir (in any Go module on
// disk) to a WebAssembly module for wasip1: a reactor when *reactor is
// true, a command when false, and when reactor is nil a reactor exactly
// if the package imports the Sluice SDK.
type Builder func(ctx context.Context, dir string, reactor *bool) ([]byte, error)

// Runner runs a manifest's build command (sh -c command) in folder dir
// and returns the module it wrote to output (an absolute path).
type Runner func(ctx context.Context, dir, command, output string) ([]byte, error)

// ManifestModules returns the modules m declares: the .wasm file of a
// function's `wasm:`, the Go package of its `build: ./dir` compiled by
// build, or the output of its `build: {command, output}` run by run.
// With a nil build or run, a function needing it is an error.
func ManifestModules(m *manifest.Manifest, build Builder, run Runner) Modules {
	return func(ctx context.Context, name string) ([]byte, error) {
		f, ok := m.Functions[name]
		if !ok {
			return nil, fmt.Errorf("manifest: no function %q", name)
		}
		switch b := f.Build; {
		case b.Package != "":
			if build == nil {
				return nil, fmt.Errorf("function %s: build %s: no Go builder here: build it (GOOS=wasip1 GOARCH=wasm go build) and deploy it with wasm:", name, b.Package)
			}
			module, err := build(ctx, m.Path(b.Package), f.Reactor)
			if err != nil {
				return nil, fmt.Errorf("function %s: build %s: %w", name, b.Package, err)
			}
			return module, nil
		case b.Command != "":
			if run == nil {
				return nil, fmt.Errorf("function %s: build %q: no command runner here: run it yourself and deploy %s with wasm:", name, b.Command, b.Output)
			}
			module, err := run(ctx, m.Path("."), b.Command, m.Path(b.Output))
			if err != nil {
				return nil, fmt.Errorf("function %s: build %q: %w", name, b.Command, err)
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
