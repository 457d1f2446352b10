package runtime_test

import (
	"context"
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
