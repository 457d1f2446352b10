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

// TestLongGuestCgroup runs a spinning guest with Config.LongGuestCgroup
// on cgroup v1's cpu hierarchy: its thread is in that cgroup while it
// runs and back in the process's own afterwards.
func TestLongGuestCgroup(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(cpuHierarchy, fmt.Sprintf("sluice-test-%d", os.Getpid()))
	makeCgroup(t, dir, "in cgroup v1's cpu hierarchy")
	if err := os.WriteFile(filepath.Join(dir, "cpu.idle"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	wantBackHome(t, spinInCgroup(t, dir, "tasks"), "cpu")
}

// TestLongGuestCgroupV2 does the same with a threaded child of the
// process's cgroup on cgroup v2 (cgroup.threads). Where v2 has no cpu
// controller (this project's machines bind it to v1) the thread's share
// of the CPU is not changed; the moves in and out are what is tested.
func TestLongGuestCgroupV2(t *testing.T) {
	t.Parallel()
	mount := cgroup2Mount(t)
	dir := filepath.Join(mount, ownCgroup(t, "/proc/self/cgroup", ""), fmt.Sprintf("sluice-test-v2-%d", os.Getpid()))
	makeCgroup(t, dir, "under the process's cgroup v2")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.type"), []byte("threaded"), 0); err != nil {
		t.Skipf("cannot make %s threaded (a parent with domain controllers enabled refuses): %v", dir, err)
	}
	wantBackHome(t, spinInCgroup(t, dir, "cgroup.threads"), "")
}

// makeCgroup makes the cgroup dir, removed when the test ends, or skips
// the test where the process may not (it needs root), saying where.
func makeCgroup(t *testing.T, dir, where string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("needs a cgroup of its own %s (root): %v", where, err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove the test's cgroup: %v", err)
		}
	})
}

// wantBackHome fails the test unless thread tid, if it still exists, is
// in the process's cgroup of controller's hierarchy ("" for v2's).
func wantBackHome(t *testing.T, tid, controller string) {
	t.Helper()
	own := ownCgroup(t, "/proc/self/cgroup", controller)
	if _, err := os.Stat("/proc/self/task/" + tid); err == nil {
		if got := ownCgroup(t, "/proc/self/task/"+tid+"/cgroup", controller); got != own {
			t.Fatalf("guest thread %s in cgroup %s (controller %q) after the batch, want the process's %s", tid, got, controller, own)
		}
	}
}

// spinInCgroup runs a guest that spins until its timeout on a runtime
// with LongGuestCgroup dir, checks that exactly one thread was in dir
// (listed in its file threads) meanwhile and none after, and returns
// that thread's id.
func spinInCgroup(t *testing.T, dir, threads string) string {
	t.Helper()
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
			if tids := threadsIn(t, filepath.Join(dir, threads)); len(tids) > 0 {
				seen = tids
			}
		}
	}
	wantFailure(t, res, runtime.FailureTimeout, "longer than")
	if len(seen) != 1 {
		t.Fatalf("threads in the long guest cgroup while the guest spun: %q, want its one", seen)
	}
	if tids := threadsIn(t, filepath.Join(dir, threads)); len(tids) != 0 {
		t.Fatalf("threads left in the long guest cgroup after the batch: %q", tids)
	}
	return seen[0]
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

// threadsIn lists the thread ids in a cgroup's thread file.
func threadsIn(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// ownCgroup returns the cgroup of a /proc cgroup file's hierarchy that
// holds controller, or v2's ("0::path") for "".
func ownCgroup(t *testing.T, path, controller string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" ||
			controller != "" && strings.Contains(","+parts[1]+",", ","+controller+",") {
			return parts[2]
		}
	}
	t.Fatalf("%s: no line for controller %q", path, controller)
	return ""
}

// cgroup2Mount returns where cgroup v2 is mounted.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "cgroup2" {
			return f[1]
		}
	}
	t.Skip("cgroup v2 is not mounted")
	return ""
}
