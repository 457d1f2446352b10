package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

const hostile = "runtime/testdata/hostile"

func do(action string) runtime.Invocation { return batch(`{"do":"`+action+`"}`, `{}`) }

// stopLimit is how long an invocation with timeout may take, from its
// start to its failure, when the process's threads waited cpuWaited for a
// CPU meanwhile: a quarter of the timeout past it, plus that wait. On an
// idle machine the wait is near zero and the bound is the promise; on a
// busy one the time the machine withheld is not the runtime's lateness.
func stopLimit(timeout, cpuWaited time.Duration) time.Duration {
	return timeout*5/4 + cpuWaited
}

// cpuWait returns how long the threads of this process have waited on a
// run queue so far (Linux's /proc/self/task/*/schedstat; 0 where it is not
// available, which leaves stopLimit strict).
func cpuWait() time.Duration {
	paths, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var total int64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				total += ns
			}
		}
	}
	return time.Duration(total)
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"loop", "sleep"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			modes(t, func(t *testing.T, mode wasmbuild.Mode) {
				rt, _ := newRuntime(t)
				const timeout = time.Second
				f := load(t, rt, hostile, mode, runtime.FunctionConfig{Timeout: timeout})
				if mode == wasmbuild.Reactor { // start the instance first
					invoke(t, f, do("ack"))
				}
				start, waited := time.Now(), cpuWait()
				res := invoke(t, f, do(action))
				elapsed, waited := time.Since(start), cpuWait()-waited
				wantFailure(t, res, runtime.FailureTimeout, "longer than 1s")
				if limit := stopLimit(timeout, waited); elapsed > limit {
					t.Fatalf("timed out after %s, want within %s (the process waited %s for a CPU meanwhile)", elapsed, limit, waited)
				}
				if s := f.Stats(); s.Instances != 0 {
					t.Fatalf("Stats after a timeout = %+v, want the instance discarded", s)
				}
			})
		})
	}
}

// TestTimeoutHandwritten stops hand-written modules that never call the
// host: a loop-free call tree (on the context-checked engine) and an empty
// loop in a module importing sched_yield (fuel-checked).
func TestTimeoutHandwritten(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"recursion", "spin"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt, _ := newRuntime(t)
			// The same timeout and bound as TestTimeout's: a new function
			// runs confined, on a thread of lowered priority, which a busy
			// machine may leave waiting (stopLimit counts that wait).
			const timeout = time.Second
			f := loadBytes(t, rt, wasmbuild.Handwritten(name), runtime.FunctionConfig{Name: name, Timeout: timeout})
			start, waited := time.Now(), cpuWait()
			wantFailure(t, invoke(t, f, batch(`1`)), runtime.FailureTimeout, "longer than 1s")
			elapsed, waited := time.Since(start), cpuWait()-waited
			if limit := stopLimit(timeout, waited); elapsed > limit {
				t.Fatalf("stopped after %s, want within %s (the process waited %s for a CPU meanwhile)", elapsed, limit, waited)
			}
		})
	}
}

func TestCallerCancel(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := load(t, rt, hostile, wasmbuild.Reactor, runtime.FunctionConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := f.Invoke(ctx, do("loop"))
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, res, runtime.FailureCanceled, "canceled")
	if _, err := f.Invoke(ctx, do("ack")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Invoke with a done context: %v, want context.Canceled", err)
	}
}

// Recursing without end traps at the call-depth limit, saying so, long
// before the engine's own stack limit; the function still works after.
func TestCallDepthLimit(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		// A memory limit high enough that the recursion's Go stack in
		// linear memory is not what stops it.
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{MemoryMiB: 256, Timeout: 20 * time.Second})
		for range 2 {
			res := invoke(t, f, do("recurse"))
			wantFailure(t, res, runtime.FailureTrap, "call stack exhausted: more than 10000 nested calls")
		}
		if res := invoke(t, f, do("ack")); !res.OK() {
			t.Fatalf("after the recursion: %v", res.Failure)
		}
	})
}

// So does a recursion through functions returning several values, which
// the Go toolchain never emits but other compilers do.
func TestCallDepthLimitMultiValue(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := loadBytes(t, rt, wasmbuild.Handwritten("multivalue"), runtime.FunctionConfig{Name: "multivalue", Timeout: 20 * time.Second})
	for range 2 {
		wantFailure(t, invoke(t, f, batch(`1`)), runtime.FailureTrap, "call stack exhausted: more than 10000 nested calls")
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"membomb"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			modes(t, func(t *testing.T, mode wasmbuild.Mode) {
				rt, _ := newRuntime(t)
				f := load(t, rt, hostile, mode, runtime.FunctionConfig{MemoryMiB: 32, Timeout: 20 * time.Second})
				for range 3 {
					res := invoke(t, f, do(action))
					wantFailure(t, res, runtime.FailureMemoryLimit, "32 MiB")
				}
				// The host never backed an instance with more than the
				// limit, and freed every failed instance's memory.
				s := f.Stats()
				if s.MaxInstanceMemoryBytes > 32<<20 || s.MaxInstanceMemoryBytes < 16<<20 {
					t.Fatalf("largest instance held %d bytes, want between 16 MiB and the 32 MiB limit", s.MaxInstanceMemoryBytes)
				}
				if s.MemoryBytes != 0 || s.Instances != 0 {
					t.Fatalf("Stats after the bombs = %+v, want no memory held", s)
				}
				// The function still works afterwards.
				if res := invoke(t, f, do("ack")); !res.OK() {
					t.Fatalf("after the bombs: %v", res.Failure)
				}
			})
		})
	}
}

// The instances of one account's functions hold at most
// Config.GuestMemoryPerAccount together (or the account's own
// FunctionConfig.AccountGuestMemory), and those of the whole runtime at
// most Config.GuestMemory: a guest growing past either is refused, fails
// naming it, and gives its memory back; another account's guest meets
// only its own limit. (The timeouts only catch a hang: a bomb's host
// copies are slow under the race detector.)
func TestGuestMemoryBudgets(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Minute
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntimeWith(t, runtime.Config{GuestMemory: 32 << 20, GuestMemoryPerAccount: 16 << 20})
		tenant := load(t, rt, hostile, mode, runtime.FunctionConfig{Account: "tenant", MemoryMiB: 64, Timeout: timeout})
		neighbour := load(t, rt, hostile, mode, runtime.FunctionConfig{Account: "neighbour", MemoryMiB: 12, Timeout: timeout})
		operator := load(t, rt, hostile, mode, runtime.FunctionConfig{MemoryMiB: 64, Timeout: timeout})
		wantFailure(t, invoke(t, tenant, do("membomb")), runtime.FailureMemoryLimit, "past the 16 MiB that its account's instances may hold together")
		if s := tenant.Stats(); s.MaxInstanceMemoryBytes > 16<<20 || s.MemoryBytes != 0 {
			t.Fatalf("tenant's Stats = %+v, want no instance over the 16 MiB budget and none left holding memory", s)
		}
		wantFailure(t, invoke(t, neighbour, do("membomb")), runtime.FailureMemoryLimit, "more than its 12 MiB")
		wantFailure(t, invoke(t, operator, do("membomb")), runtime.FailureMemoryLimit, "past the 32 MiB that this runtime's instances may hold together")
		for _, f := range []*runtime.Function{tenant, neighbour, operator} {
			if res := invoke(t, f, do("ack")); !res.OK() {
				t.Fatalf("%s after the bombs: %v", f.Config().Account, res.Failure)
			}
		}
	})
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntimeWith(t, runtime.Config{GuestMemoryPerAccount: 1 << 20})
		// An instance whose initial memory does not fit fails at start.
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{Account: "tenant", Timeout: timeout})
		wantFailure(t, invoke(t, f, do("ack")), runtime.FailureMemoryLimit, "past the 1 MiB that its account's instances may hold together")
		// An account's own limit takes the place of the runtime's.
		own := load(t, rt, hostile, mode, runtime.FunctionConfig{Account: "own", AccountGuestMemory: 20 << 20, MemoryMiB: 64, Timeout: timeout})
		wantFailure(t, invoke(t, own, do("membomb")), runtime.FailureMemoryLimit, "past the 20 MiB that its account's instances may hold together")
		if res := invoke(t, own, do("ack")); !res.OK() {
			t.Fatalf("after the bomb: %v", res.Failure)
		}
	})
}

// hold returns an invocation that makes an instance keep mib MiB.
func hold(mib int) runtime.Invocation { return batch(fmt.Sprintf(`{"do":"hold","mib":%d}`, mib)) }

// Idle instances give way to a batch that needs memory: a budget that
// refuses a growth or a start first closes the idle instances counted in
// it, reactors idle longest first, then commands started ahead, and only
// those it must. The runtime's budget closes any account's; an account's
// budget only its own.
func TestIdleInstancesMakeRoom(t *testing.T) {
	t.Parallel()
	// Each instance keeps 8 MiB, about 11 MiB of linear memory with the Go
	// runtime's own; the 16 MiB limit caps the margin an instance's memory
	// takes besides, so what is left beside two idle instances (half of
	// one) cannot hold a third.
	const mib = 8
	cfg := runtime.FunctionConfig{MemoryMiB: 16, Timeout: 2 * time.Minute}
	loadFor := func(rt *runtime.Runtime, account string) *runtime.Function {
		c := cfg
		c.Account = account
		return load(t, rt, hostile, wasmbuild.Reactor, c)
	}
	holdIn := func(f *runtime.Function) {
		t.Helper()
		if res := invoke(t, f, hold(mib)); !res.OK() {
			t.Fatalf("%s holding %d MiB: %v", f.Config().Account, mib, res.Failure)
		}
	}
	wantIdle := func(f *runtime.Function, n int) {
		t.Helper()
		if s := f.Stats(); s.Idle != n || n == 0 && s.MemoryBytes != 0 {
			t.Fatalf("%s's instances: %+v, want %d idle", f.Config().Account, s, n)
		}
	}
	// What an idle instance keeps, measured unbounded.
	rt, _ := newRuntime(t)
	sizer := loadFor(rt, "")
	holdIn(sizer)
	held := sizer.Stats().MemoryBytes
	room := 2*held + held/2 // two such instances, not three

	t.Run("runtime", func(t *testing.T) {
		t.Parallel()
		rt, _ := newRuntimeWith(t, runtime.Config{GuestMemory: room})
		p, q, r := loadFor(rt, "p"), loadFor(rt, "q"), loadFor(rt, "r")
		holdIn(p)
		holdIn(q)
		holdIn(r) // closes p's instance, idle longest, in another account
		wantIdle(p, 0)
		wantIdle(q, 1)
		wantIdle(r, 1)
	})
	t.Run("account", func(t *testing.T) {
		t.Parallel()
		rt, _ := newRuntimeWith(t, runtime.Config{GuestMemoryPerAccount: room})
		y := loadFor(rt, "y")
		x1, x2, x3 := loadFor(rt, "x"), loadFor(rt, "x"), loadFor(rt, "x")
		holdIn(y)
		holdIn(x1)
		holdIn(x2)
		holdIn(x3) // closes x1's instance, not y's, idle longer but not x's
		wantIdle(y, 1)
		wantIdle(x1, 0)
		wantIdle(x2, 1)
		wantIdle(x3, 1)
	})
	// A command started ahead of its batch gives way too: with room for
	// one and a half instances of the command, another function's batch
	// runs beside it only once it is discarded.
	t.Run("started ahead", func(t *testing.T) {
		t.Parallel()
		seasoned := func(rt *runtime.Runtime) *runtime.Function {
			f := load(t, rt, hostile, wasmbuild.Command, cfg)
			for range 2 { // the second success starts the next instance ahead
				if res := invoke(t, f, do("ack")); !res.OK() {
					t.Fatalf("ack: %v", res.Failure)
				}
			}
			waitStartedAhead(t, f)
			return f
		}
		rt, _ := newRuntime(t)
		started := seasoned(rt).Stats().MemoryBytes
		rt, _ = newRuntimeWith(t, runtime.Config{GuestMemory: started + started/2})
		c := seasoned(rt)
		d := load(t, rt, hostile, wasmbuild.Command, cfg)
		if res := invoke(t, d, do("ack")); !res.OK() {
			t.Fatalf("another command beside one started ahead: %v", res.Failure)
		}
		wantIdle(c, 0)
		if res := invoke(t, c, do("ack")); !res.OK() {
			t.Fatalf("the command whose started instance was discarded: %v", res.Failure)
		}
	})
}

// No instance keeps its reservation after it ended, however it ended: a
// trap, an instantiation that failed after its memory was allocated, a
// memory bomb. With room for one instance's memory at a time, each later
// start still fits.
func TestGuestMemoryBudgetsAreGivenBack(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntimeWith(t, runtime.Config{GuestMemory: 3 << 20})
	baddata := loadBytes(t, rt, wasmbuild.Handwritten("baddata"), runtime.FunctionConfig{Name: "baddata", MemoryMiB: 2})
	trap := loadBytes(t, rt, wasmbuild.Handwritten("trap"), runtime.FunctionConfig{Name: "trap", MemoryMiB: 2})
	for i := range 10 {
		res := invoke(t, baddata, batch(`{}`))
		if res.Failure == nil || res.Failure.Kind == runtime.FailureMemoryLimit {
			t.Fatalf("bad data segment, run %d: %+v, want a failure other than memory_limit", i, res.Failure)
		}
		wantFailure(t, invoke(t, trap, batch(`{}`)), runtime.FailureTrap, "unreachable")
	}
}

// A memory that starts empty meets its limit when it first grows (its
// first growth is not its initial allocation, which the host cannot
// refuse).
func TestEmptyInitialMemoryKeepsItsLimit(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := loadBytes(t, rt, wasmbuild.Handwritten("growzero"), runtime.FunctionConfig{Name: "growzero", MemoryMiB: 1})
	wantFailure(t, invoke(t, f, batch(`{}`)), runtime.FailureMemoryLimit, "more than its 1 MiB")
	if s := f.Stats(); s.MaxInstanceMemoryBytes > 1<<20 {
		t.Fatalf("an instance held %d bytes under a 1 MiB limit", s.MaxInstanceMemoryBytes)
	}
}

func TestOutputTooLarge(t *testing.T) {
	t.Parallel()
	t.Run("stdout", func(t *testing.T) {
		t.Parallel()
		rt, _ := newRuntime(t)
		// The guest writes forever; the cap, not the timeout, must stop it.
		f := load(t, rt, hostile, wasmbuild.Command, runtime.FunctionConfig{Timeout: 30 * time.Second, MaxStdoutBytes: 256 << 10})
		res := invoke(t, f, do("stdout"))
		wantFailure(t, res, runtime.FailureOutputTooLarge, "262144-byte limit")
	})
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{})
		res := invoke(t, f, do("bigresult"))
		wantFailure(t, res, runtime.FailureOutputTooLarge, "1048576-byte limit")
	})
}

func TestBadOutput(t *testing.T) {
	t.Parallel()
	t.Run("invalid json", func(t *testing.T) {
		t.Parallel()
		rt, _ := newRuntime(t)
		f := load(t, rt, hostile, wasmbuild.Command, runtime.FunctionConfig{})
		wantFailure(t, invoke(t, f, do("badjson")), runtime.FailureInvalidOutput, "unexpected end of JSON")
	})
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{})
		wantFailure(t, invoke(t, f, do("unknown")), runtime.FailureUnknownItem, `"no-such-id"`)
	})
}

func TestExitAndPanic(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{})
		res := invoke(t, f, do("exit"))
		wantFailure(t, res, runtime.FailureExit, "status 3")
		if res.Failure.ExitCode != 3 {
			t.Fatalf("ExitCode = %d, want 3", res.Failure.ExitCode)
		}
		// A Go panic exits with status 2 in a command; in a reactor the Go
		// runtime ends it with a trap. Either way the panic line is quoted.
		res = invoke(t, f, do("panic"))
		if mode == wasmbuild.Command {
			wantFailure(t, res, runtime.FailureExit, "status 2: panic: hostile: boom")
		} else {
			wantFailure(t, res, runtime.FailureTrap, "unreachable: panic: hostile: boom")
		}
	})
}

func TestTrap(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{PoolSize: 2})
		wantFailure(t, invoke(t, f, do("trap")), runtime.FailureTrap, "out of bounds memory access")
	})
	t.Run("handwritten", func(t *testing.T) {
		t.Parallel()
		rt, _ := newRuntime(t)
		f := loadBytes(t, rt, wasmbuild.Handwritten("trap"), runtime.FunctionConfig{Name: "trap"})
		wantFailure(t, invoke(t, f, batch(`1`)), runtime.FailureTrap, "unreachable")
	})
}

// TestTrapDoesNotPoisonPool runs good and trapping batches concurrently on
// a small reactor pool: trapped instances are discarded, the others reused,
// and every good batch succeeds.
func TestTrapDoesNotPoisonPool(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := load(t, rt, hostile, wasmbuild.Reactor, runtime.FunctionConfig{PoolSize: 2})
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			action := "ack"
			if i%4 == 0 {
				action = "trap"
			}
			res, err := f.Invoke(context.Background(), do(action))
			switch {
			case err != nil:
				errs <- err.Error()
			case action == "ack" && !res.OK():
				errs <- "good batch failed: " + res.Failure.Message
			case action == "trap" && (res.Failure == nil || res.Failure.Kind != runtime.FailureTrap):
				errs <- "trap not reported"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if s := f.Stats(); s.Instances > 2 || s.Idle != s.Instances {
		t.Fatalf("Stats = %+v, want at most 2 idle instances", s)
	}
}

func TestStderrCap(t *testing.T) {
	t.Parallel()
	rt, logs := newRuntime(t)
	f := load(t, rt, hostile, wasmbuild.Reactor, runtime.FunctionConfig{MaxStderrBytes: 4096})
	res := invoke(t, f, do("stderr"))
	if !res.OK() {
		t.Fatal(res.Failure)
	}
	if len(res.Stderr) > 4096+200 || !strings.Contains(string(res.Stderr), "bytes dropped]") {
		t.Fatalf("stderr of %d bytes, ending %q: want at most 4 KiB plus a marker", len(res.Stderr), res.Stderr[max(0, len(res.Stderr)-100):])
	}
	var lines, markers int
	for _, ev := range logs.events(t) {
		if strings.HasPrefix(ev["message"].(string), "noise line") {
			lines++
		}
		if ev["dropped_bytes"] != nil {
			markers++
		}
	}
	if lines == 0 || lines > 4096/40 || markers != 1 {
		t.Fatalf("%d noise events and %d markers logged", lines, markers)
	}
}

func TestSandbox(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{Env: map[string]string{"ONLY": "this"}})
		res := invoke(t, f, do("env"))
		// The guest reports what it saw as its failure text.
		if got := res.Messages[0].Error; got != "env=ONLY=this fs=true dir=0/true clock=true rand=true" {
			t.Fatalf("guest saw %q, want only its env, no filesystem, the real clock and random bytes", got)
		}
	})
}

func TestConcurrentInvocations(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, "echo", mode, runtime.FunctionConfig{PoolSize: 8})
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				inv := batch(`{"i":1}`, `{"i":2}`)
				inv.ID = "inv-" + string(rune('a'+i%26))
				res, err := f.Invoke(context.Background(), inv)
				if err == nil && !res.OK() {
					err = res.Failure
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if s := f.Stats(); s.Instances > 8 {
			t.Fatalf("Stats = %+v, want at most PoolSize instances", s)
		}
	})
}

// TestRuntimeCloseStopsRunningBatch closes the runtime under a spinning
// batch: the batch fails as canceled instead of running to its timeout.
func TestRuntimeCloseStopsRunningBatch(t *testing.T) {
	t.Parallel()
	rt, err := runtime.New(context.Background(), runtime.Config{CompilationCacheDir: compileCacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	f := load(t, rt, hostile, wasmbuild.Reactor, runtime.FunctionConfig{Timeout: time.Minute})
	time.AfterFunc(300*time.Millisecond, func() { rt.Close(context.Background()) })
	res, err := f.Invoke(context.Background(), do("loop"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure == nil || res.Failure.Kind != runtime.FailureCanceled {
		t.Fatalf("failure %+v, want canceled", res.Failure)
	}
}

// TestSpoofedCancelExit: a guest exiting with the status wazero uses for a
// canceled context or a passed deadline (proc_exit(0xFFFFFFFF),
// proc_exit(0xEFFFFFFF)) fails with exit_code like any other status; only
// a real cancellation of the host's context counts as canceled.
func TestSpoofedCancelExit(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, hostile, mode, runtime.FunctionConfig{})
		for _, code := range []int32{-1, -268435457} { // 0xFFFFFFFF, 0xEFFFFFFF
			res := invoke(t, f, batch(fmt.Sprintf(`{"do":"exit","code":%d}`, code), `{}`))
			wantFailure(t, res, runtime.FailureExit, fmt.Sprintf("status %d", uint32(code)))
			if res.Failure.ExitCode != uint32(code) {
				t.Fatalf("ExitCode = %#x, want %#x", res.Failure.ExitCode, uint32(code))
			}
		}
		if res := invoke(t, f, do("ack")); !res.OK() {
			t.Fatalf("after the spoofed exits: %v", res.Failure)
		}
	})
}
