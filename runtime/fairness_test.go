package runtime_test

import (
	"context"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// Guests spinning until their timeout, more of them than the process has
// Ps, do not starve a short invocation of a healthy function. Compiled
// guest code cannot be preempted by signal, but fuel-checked guests call
// the host's sched_yield every few thousand steps, and the Go scheduler
// preempts them there.
func TestSpinningGuestsLeaveRoomForShortInvocations(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	spin := load(t, rt, "runtime/testdata/hostile", wasmbuild.Reactor, runtime.FunctionConfig{Timeout: 3 * time.Second, PoolSize: 4})
	noop := load(t, rt, "noop", wasmbuild.Reactor, runtime.FunctionConfig{PoolSize: 1})
	ctx := context.Background()
	if res, err := noop.Invoke(ctx, batch(`{}`)); err != nil || res.Failure != nil {
		t.Fatalf("warm-up: %v %v", err, res.Failure)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := spin.Invoke(ctx, batch(`{"do":"loop"}`))
			if err != nil || res.Failure == nil || res.Failure.Kind != runtime.FailureTimeout {
				t.Errorf("spinner: %v %+v, want a timeout", err, res.Failure)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the spinners are long-running now
	var worst time.Duration
	for range 20 {
		start := time.Now()
		res, err := noop.Invoke(ctx, batch(`{"n":1}`))
		if err != nil || res.Failure != nil {
			t.Fatalf("healthy invocation: %v %v", err, res.Failure)
		}
		worst = max(worst, time.Since(start))
	}
	wg.Wait()
	// Against a 3s spin, anything near a second means starvation; the
	// bound is loose because the machine running the tests is shared.
	if worst > 500*time.Millisecond {
		t.Errorf("slowest healthy invocation beside 4 spinners took %s, want well under a second", worst)
	}
	t.Logf("slowest healthy invocation beside 4 spinning guests: %s", worst)
}

// A function is confined until a batch of it completes, and again after
// one ran into a limit; a batch that fails otherwise (a trap) does neither.
func TestOverrunningFunctionIsConfined(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	// The timeout leaves room for a slow instantiation (race detector,
	// busy machine) before the batches that must complete.
	hostile := load(t, rt, "runtime/testdata/hostile", wasmbuild.Reactor, runtime.FunctionConfig{Timeout: 2 * time.Second, PoolSize: 2})
	ctx := context.Background()
	step := func(do string, wantConfined bool) {
		t.Helper()
		res, err := hostile.Invoke(ctx, batch(`{"do":"`+do+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := hostile.Stats().Confined; got != wantConfined {
			t.Fatalf("after %q (failure %+v): confined %v, want %v", do, res.Failure, got, wantConfined)
		}
	}
	if !hostile.Stats().Confined {
		t.Fatal("a function that has not completed a batch yet is not confined")
	}
	step("trap", true)  // failing is not completing
	step("ack", false)  // completed a batch
	step("trap", false) // a trap is not an overrun
	step("loop", true)  // a timeout confines it again
	step("ack", true)   // for a while, successes or not
}

// A confined guest that sleeps hands its long slot on while it sleeps: as
// many sleepers as there are long slots do not keep another confined
// invocation from running.
func TestSleepingGuestsHandTheirLongSlotOn(t *testing.T) {
	t.Parallel()
	slots := max(1, goruntime.GOMAXPROCS(0)-1)
	rt, _ := newRuntime(t)
	const sleep = 5 * time.Second // the sleepers' timeout
	hostile := load(t, rt, "runtime/testdata/hostile", wasmbuild.Reactor, runtime.FunctionConfig{Timeout: sleep, PoolSize: slots + 1})
	ctx := context.Background()
	if !hostile.Stats().Confined {
		t.Fatal("a function that has not completed a batch yet is not confined")
	}
	var wg sync.WaitGroup
	for range slots {
		wg.Go(func() {
			if res, err := hostile.Invoke(ctx, batch(`{"do":"sleep"}`)); err != nil || res.Failure == nil || res.Failure.Kind != runtime.FailureTimeout {
				t.Errorf("sleeper: %v %+v, want a timeout", err, res.Failure)
			}
		})
	}
	for hostile.Stats().Instances < slots { // the sleepers are instantiated,
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // and asleep
	start := time.Now()
	res, err := hostile.Invoke(ctx, batch(`{"do":"ack"}`))
	took := time.Since(start)
	wg.Wait()
	if err != nil || res.Failure != nil {
		t.Fatalf("confined batch beside %d sleepers: %v %+v (after %s), want success", slots, err, res.Failure, took)
	}
	if took > sleep/2 {
		t.Errorf("confined batch beside %d sleepers took %s: it waited for a sleeper's long slot", slots, took)
	}
}
