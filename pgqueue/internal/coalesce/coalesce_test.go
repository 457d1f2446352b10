package coalesce_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/pgqueue/internal/coalesce"
)

// TestCoalescesConcurrentCalls runs in a synctest bubble: synctest.Wait
// returns once every request is blocked (the first in Run, the others
// waiting for it), however slow the machine.
func TestCoalescesConcurrentCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testCoalescesConcurrentCalls)
}

func testCoalescesConcurrentCalls(t *testing.T) {
	var runs, biggest atomic.Int64
	release := make(chan struct{})
	g := &coalesce.Group[int, int]{
		MaxInFlight: 1,
		Fits:        func(reqs []int, _ int) bool { return len(reqs) < 50 },
		Run: func(_ context.Context, key string, reqs []int) ([]int, error) {
			if runs.Add(1) == 1 {
				<-release // hold the first run so the others pile up
			}
			if int64(len(reqs)) > biggest.Load() {
				biggest.Store(int64(len(reqs)))
			}
			out := make([]int, len(reqs))
			for i, r := range reqs {
				if r < 0 {
					return nil, errors.New("negative")
				}
				out[i] = r * 2
			}
			return out, nil
		},
	}
	var wg sync.WaitGroup
	results := make([]int, 120)
	errs := make([]error, 120)
	wg.Go(func() { results[0], errs[0] = g.Do(context.Background(), "k", 0) })
	synctest.Wait()
	for i := 1; i < len(results); i++ {
		req := i
		if i == 77 {
			req = -1 // fails alone, not its whole execution
		}
		wg.Go(func() { results[i], errs[i] = g.Do(context.Background(), "k", req) })
	}
	synctest.Wait()
	close(release)
	wg.Wait()
	for i := range results {
		if i == 77 {
			if errs[i] == nil {
				t.Errorf("request 77 did not fail")
			}
			continue
		}
		if errs[i] != nil || results[i] != 2*i {
			t.Errorf("request %d: %d %v", i, results[i], errs[i])
		}
	}
	if biggest.Load() < 2 || biggest.Load() > 50 {
		t.Errorf("largest execution carried %d requests, want 2..50", biggest.Load())
	}
	if runs.Load() >= 120 {
		t.Errorf("%d runs for 120 requests: nothing was coalesced", runs.Load())
	}
}

func TestCancelledWaiterReturns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	g := &coalesce.Group[int, int]{
		MaxInFlight: 1,
		Run: func(_ context.Context, _ string, reqs []int) ([]int, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
			return reqs, nil
		},
	}
	go g.Do(context.Background(), "k", 1)
	// The first request runs (and holds k's one slot) before the second
	// comes: a sleep here let a slow machine run the cancelled request
	// first, which then waited on release for ever.
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Do(ctx, "k", 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	close(release)
	// Other keys never wait on k.
	g2 := &coalesce.Group[int, int]{Run: func(_ context.Context, _ string, reqs []int) ([]int, error) { return reqs, nil }}
	if v, err := g2.Do(context.Background(), "other", 3); err != nil || v != 3 {
		t.Fatalf("%d %v", v, err)
	}
}
