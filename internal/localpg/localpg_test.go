package localpg_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/localpg"
)

// TestStartStop starts a private cluster, queries it with psql over its
// socket, starts it again (a no-op) and stops it twice (the second a no-op).
func TestStartStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := clusterParent(t)

	c, err := localpg.Start(ctx, dir+"/pg", localpg.Options{})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })

	out, err := exec.CommandContext(ctx, "psql", c.URL(), "-Atc", "select current_setting('fsync')").CombinedOutput()
	if err != nil {
		t.Fatalf("psql %s: %v: %s", c.URL(), err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "off" {
		t.Errorf("fsync = %q, want off for a non-durable cluster", got)
	}

	again, err := localpg.Start(ctx, dir+"/pg", localpg.Options{})
	if err != nil {
		t.Fatalf("second start of a running cluster: %v", err)
	}
	if again.URL() != c.URL() {
		t.Errorf("URL changed between starts: %q then %q", c.URL(), again.URL())
	}
	for i := 0; i < 2; i++ {
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("stop #%d: %v", i+1, err)
		}
	}
	if err := exec.CommandContext(ctx, "psql", c.URL(), "-Atc", "select 1").Run(); err == nil {
		t.Error("psql still connects after stop")
	}
}

func TestLongFolderGetsShortSocket(t *testing.T) {
	t.Parallel()
	long := "/tmp/" + strings.Repeat("x", 120)
	c, err := localpg.Open(long)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.URL(), "xxxxxxxx") {
		t.Errorf("socket folder of %q is inside it (too long for a Unix socket): %s", long, c.URL())
	}
}

// As root the server runs as postgres, which cannot reach a folder under a
// private parent: such a cluster is kept under the temp folder instead.
// (Run as another user, the folder is used as given.)
func TestPrivateParentMovesClusterWhenRoot(t *testing.T) {
	t.Parallel()
	parent, err := os.MkdirTemp("", "localpg-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := localpg.Open(parent + "/pg")
	if err != nil {
		t.Fatal(err)
	}
	moved := !strings.HasPrefix(c.Dir(), parent)
	if root := os.Geteuid() == 0; moved != root {
		t.Errorf("cluster folder %s for %s/pg: moved = %v, want %v (running as root: %v)", c.Dir(), parent, moved, root, root)
	}
}

// clusterParent returns a temp folder, removed when the test ends, that a
// cluster may live in: the server may run as another user (postgres, when
// we are root), so the folder lets others in.
func clusterParent(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "localpg-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
