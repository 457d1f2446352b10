package deploycmd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// `sluice deploy` goes through package deploy, never the server: this
// package, and the server's migration line and key store the CLI uses
// for `sluice migrate` and `sluice keys create --database`, do not depend
// on package server. Test imports do not count.
func TestDeployCommandDoesNotImportServer(t *testing.T) {
	t.Parallel()
	const mod = "github.com/sluicehq/sluice/"
	for _, pkg := range []string{"cmd/sluice/internal/deploycmd", "server/migrations", "server/keys"} {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", pkg, err)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 2 || deps[len(deps)-1] != mod+pkg {
				t.Fatalf("go list -deps %s listed %d packages, not ending with the package itself: %q", pkg, len(deps), out)
			}
			for _, dep := range deps {
				if dep == mod+"server" {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
			if pkg == "cmd/sluice/internal/deploycmd" && !contains(deps, mod+"deploy") {
				t.Errorf("%s does not depend on %sdeploy", pkg, mod)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
