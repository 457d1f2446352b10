package deploy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions/manifest"
)

// ManifestModules reads wasm: files and hands build: folders, resolved
// against the manifest, to the builder; without one, build: is an error.
func TestDeployManifestModules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.wasm"), []byte("\x00asm-f"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse([]byte("functions:\n  f: {wasm: f.wasm}\n  g: {build: ./g, reactor: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m.Dir = dir
	var built []string
	build := func(_ context.Context, pkg string, reactor *bool) ([]byte, error) {
		built = append(built, pkg)
		if reactor == nil || !*reactor {
			t.Errorf("build %s as a command, want a reactor", pkg)
		}
		return []byte("\x00asm-g"), nil
	}
	modules := deploy.ManifestModules(m, build, nil)
	if b, err := modules(ctx, "f"); err != nil || !bytes.Equal(b, []byte("\x00asm-f")) {
		t.Errorf("module f = %q, %v", b, err)
	}
	if b, err := modules(ctx, "g"); err != nil || !bytes.Equal(b, []byte("\x00asm-g")) {
		t.Errorf("module g = %q, %v", b, err)
	}
	if len(built) != 1 || built[0] != filepath.Join(dir, "g") {
		t.Errorf("built %q, want [%s]", built, filepath.Join(dir, "g"))
	}
	if _, err := modules(ctx, "h"); err == nil || !strings.Contains(err.Error(), `no function "h"`) {
		t.Errorf("module h: %v", err)
	}
	if _, err := deploy.ManifestModules(m, nil, nil)(ctx, "g"); err == nil || !strings.Contains(err.Error(), "function g: build ./g: no Go builder") {
		t.Errorf("module g without a builder: %v", err)
	}
}
