package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// cpuHierarchy is where cgroup v1's cpu controller is mounted on the
// machines the suite runs on (the test needs root to make a cgroup there).
const cpuHierarchy = "/sys/fs/cgroup/cpu"

// TestLongGuestCgroup runs a spinning guest with Config.LongGuestCgroup:
// its thread is in that cgroup while it runs and back in the process's
// own afterwards.
func TestLongGuestCgroup(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(cpuHierarchy, fmt.Sprintf("sluice-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("needs a cgroup of its own in cgroup v1's cpu hierarchy (root): %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove the test's cgroup: %v", err)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{CompilationCacheDir: compileCacheDir(t), LongGuestCgroup: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	// A function that has not completed a batch runs in a long slot from
	// the start of its batch.
	f := load(t, rt, hostile, wasmbuild.Command, runtime.FunctionConfig{Timeout: 500 * time.Millisecond})
	done := make(chan runtime.Result)
	go func() { done <- invoke(t, f, do("loop")) }()
	var seen []string
	var res runtime.Result
	for res.Failure == nil {
		select {
		case res = <-done:
		case <-time.After(time.Millisecond):
			if tids := threadsIn(t, dir); len(tids) > 0 {
				seen = tids
			}
		}
	}
	wantFailure(t, res, runtime.FailureTimeout, "longer than")
	if len(seen) != 1 {
		t.Fatalf("threads in the long guest cgroup while the guest spun: %q, want its one", seen)
	}
	if tids := threadsIn(t, dir); len(tids) != 0 {
		t.Fatalf("threads left in the long guest cgroup after the batch: %q", tids)
	}
	// The thread, if it still exists, is back in the process's cgroup.
	own := cpuCgroup(t, "/proc/self/cgroup")
	if _, err := os.Stat("/proc/self/task/" + seen[0]); err == nil {
		if got := cpuCgroup(t, "/proc/self/task/"+seen[0]+"/cgroup"); got != own {
			t.Fatalf("guest thread %s in cpu cgroup %s after the batch, want the process's %s", seen[0], got, own)
		}
	}
}

// TestLongGuestCgroupRefused names what is wrong with a cgroup the
// runtime cannot use.
func TestLongGuestCgroupRefused(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing")
	for dir, want := range map[string]string{
		t.TempDir(): "is not in a cgroup filesystem",
		missing:     "no such file or directory",
	} {
		_, err := runtime.New(context.Background(), runtime.Config{LongGuestCgroup: dir})
		if err == nil || !strings.Contains(err.Error(), "long guest cgroup "+dir) || !strings.Contains(err.Error(), want) {
			t.Errorf("New with LongGuestCgroup %s: %v, want an error naming it and %q", dir, err, want)
		}
	}
}

// threadsIn lists the thread ids in a v1 cgroup.
func threadsIn(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// cpuCgroup returns the cpu controller's cgroup in a /proc cgroup file.
func cpuCgroup(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",cpu,") {
			return parts[2]
		}
	}
	t.Fatalf("%s: no cpu controller line", path)
	return ""
}
