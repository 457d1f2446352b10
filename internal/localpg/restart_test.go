package localpg_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/localpg"
)

// TestRestart stops a durable cluster the way a crash would (Crash) and in
// fast mode (Stop), and starts it again: a committed row survives both, the
// settings stay, and the server process is a new one each time.
func TestRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := clusterParent(t)
	c, err := localpg.Start(ctx, dir+"/pg", localpg.Options{Durable: true})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	psql := func(sql string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "psql", c.URL(), "-Atc", sql).CombinedOutput()
		if err != nil {
			t.Fatalf("psql %q: %v: %s", sql, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	psql("CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	pid := psql("SELECT pg_postmaster_start_time()")
	for _, immediate := range []bool{true, false} {
		stop := c.Stop
		if immediate {
			stop = c.Crash
		}
		if err := stop(ctx); err != nil {
			t.Fatalf("stop (immediate %v): %v", immediate, err)
		}
		if err := c.Start(ctx, localpg.Options{Durable: true}); err != nil {
			t.Fatalf("start again (immediate %v): %v", immediate, err)
		}
		if got := psql("SELECT v FROM kept"); got != "42" {
			t.Errorf("after restart (immediate %v): kept = %q, want 42", immediate, got)
		}
		if got := psql("SHOW fsync"); got != "on" {
			t.Errorf("after restart (immediate %v): fsync = %q, want the durable setting kept", immediate, got)
		}
		now := psql("SELECT pg_postmaster_start_time()")
		if now == pid {
			t.Errorf("restart (immediate %v) did not restart the server", immediate)
		}
		pid = now
	}
}
