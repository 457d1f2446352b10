package deploy_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The domain packages stay small and never build code: none of them
// depends on a YAML library, the manifest reader, this package, the Go
// toolchain wrapper (internal/wasmbuild) or os/exec, and only triggers
// (which parses cron specs) depends on the cron library. The server may
// apply manifests but never builds one. Test imports do not count.
func TestDepsOfDomainPackages(t *testing.T) {
	t.Parallel()
	const mod = "github.com/sluicehq/sluice/"
	noBuild := []string{mod + "internal/wasmbuild", "os/exec"}
	domain := slices.Concat([]string{"yaml", mod + "functions/manifest", mod + "deploy"}, noBuild)
	noCron := slices.Concat(domain, []string{"github.com/robfig/cron"})
	for pkg, forbidden := range map[string][]string{
		"triggers":  domain,
		"functions": noCron,
		"runtime":   noCron,
		"pgqueue":   noCron,
		"server":    {mod + "internal/wasmbuild"},
	} {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", pkg, err)
			}
			for dep := range strings.FieldsSeq(string(out)) {
				for _, f := range forbidden {
					if strings.Contains(dep, f) {
						t.Errorf("%s depends on %s (matching %q)", pkg, dep, f)
					}
				}
			}
		})
	}
}
