package main

import (
	"testing"

	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// newServer is clienttest.New with the compilation cache every test
// server shares (as the servers of one host would), so a deployed Go
// module compiles once per machine, not once per test.
func newServer(t testing.TB) *clienttest.Server {
	t.Helper()
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return clienttest.NewWith(t, clienttest.Options{CompiledCacheDir: dir})
}

// compiledCacheDir is that shared compilation cache, for `sluice invoke
// --cache-dir`.
func compiledCacheDir(t testing.TB) string {
	t.Helper()
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
