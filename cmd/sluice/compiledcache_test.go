package main

import (
	"testing"

	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// compiledCacheDir is the compilation cache every test server shares
// (clienttest.NewShared), for `sluice invoke --cache-dir`.
func compiledCacheDir(t testing.TB) string {
	t.Helper()
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
