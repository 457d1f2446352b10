package wire_test

import (
	"os/exec"
	"strings"
	"testing"
)

// goList runs `go list` with args in the module and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(string(out))
}

// The client must not pull in the server's dependencies through wire:
// neither pgx nor wazero.
func TestClientAndWireDeps(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"github.com/sluicehq/sluice/client", "github.com/sluicehq/sluice/wire"} {
		deps := goList(t, "-deps", pkg)
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s: no packages", pkg)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/jackc/") || strings.HasPrefix(d, "github.com/tetratelabs/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}

// wire is a leaf: it imports the standard library only.
func TestWireImportsOnlyStd(t *testing.T) {
	t.Parallel()
	got := goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/sluicehq/sluice/wire")
	if len(got) != 1 || got[0] != "github.com/sluicehq/sluice/wire" {
		t.Errorf("wire depends on non-standard packages: %v", got)
	}
}
