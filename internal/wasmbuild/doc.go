// Package wasmbuild builds Sluice's example functions and test modules to
// WebAssembly for the CLI, and for tests and benchmarks anywhere in the
// module.
//
// Build compiles a Go main package of this repository (an example under
// examples/, or any folder such as runtime/testdata/hostile) with
// GOOS=wasip1 GOARCH=wasm, as a command or a reactor module, and caches the
// result by a hash of the package's files, the sdk/ folder, go.mod and the
// Go version, so an unchanged function is built once per machine. The cache
// lives in $SLUICE_WASM_CACHE when set, else in the user cache directory
// (…/sluice/wasm), else in .sluice/cache/wasm at the repository root. Builds
// write to a temporary file and rename it into place, so test binaries that
// build the same module at once never see a partial file.
//
// BuildDir builds a package folder instead of a name, in this module or in
// any Go module on disk (there with that module's own `go build`), and
// RunCommand runs a manifest's build command for other languages; they
// are the builder and runner the CLI hands package deploy for a
// manifest's `build:` functions (`sluice deploy`, `sluice dev`). Nothing
// that serves requests imports this package.
//
// The package also holds a few hand-assembled modules (see Handwritten)
// that the Go toolchain cannot produce, such as a loop-free call tree.
package wasmbuild
