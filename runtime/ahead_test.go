package runtime_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

// startedAt runs the hostile guest's "started" action and returns when the
// instance that ran it started its Go runtime.
func startedAt(t *testing.T, f *runtime.Function) (time.Time, runtime.Result) {
	t.Helper()
	res := invoke(t, f, batch(`{"do":"started"}`))
	if res.Failure != nil {
		t.Fatalf("started: %v", res.Failure)
	}
	s, ok := strings.CutPrefix(res.Messages[0].Error, "started=")
	ns, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil {
		t.Fatalf("started: message error %q, want started=<unix ns>", res.Messages[0].Error)
	}
	return time.Unix(0, ns), res
}

// waitStartedAhead waits until the function has an instance started ahead
// and waiting for its batch. It needs no deadline of its own: a warm-up
// ends by the function's timeout, and the instance is then gone.
func waitStartedAhead(t *testing.T, f *runtime.Function) {
	t.Helper()
	for {
		switch s := f.Stats(); {
		case s.Idle == 1:
			return
		case s.Instances == 0:
			t.Fatalf("no instance started ahead: %+v", s)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCommandStartedAhead: after a batch of a command succeeds (not the
// function's first), its next instance is started ahead and runs the next
// batch; a confined function's batches start fresh instances.
func TestCommandStartedAhead(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := load(t, rt, hostile, wasmbuild.Command, runtime.FunctionConfig{MemoryMiB: 32, PoolSize: 2})

	// A new function is confined: its first batch starts its instance,
	// and so does its second (the first success starts nothing ahead).
	for i := range 2 {
		before := time.Now()
		at, res := startedAt(t, f)
		if at.Before(before) {
			t.Fatalf("batch %d: instance started %s before the batch, want a fresh one", i, before.Sub(at))
		}
		if res.Startup <= 0 || res.Startup > res.Duration {
			t.Fatalf("batch %d: Startup %s of Duration %s, want the instance's start in it", i, res.Startup, res.Duration)
		}
		if i == 0 {
			if s := f.Stats(); s.Instances != 0 {
				t.Fatalf("after the first batch: Stats = %+v, want nothing started ahead", s)
			}
		}
	}

	for i := range 3 {
		waitStartedAhead(t, f)
		if s := f.Stats(); s.Instances != 1 {
			t.Fatalf("batch %d: Stats = %+v, want the one instance started ahead alive", i, s)
		}
		before := time.Now()
		if at, _ := startedAt(t, f); !at.Before(before) {
			t.Fatalf("batch %d: instance started %s after the batch arrived, want one started ahead", i, at.Sub(before))
		}
	}

	// A memory failure confines the function: the instance started ahead
	// is discarded, and the batch after the failure starts its own.
	waitStartedAhead(t, f)
	wantFailure(t, invoke(t, f, batch(`{"do":"membomb"}`)), runtime.FailureMemoryLimit, "32 MiB")
	before := time.Now()
	if at, _ := startedAt(t, f); at.Before(before) {
		t.Fatalf("confined: instance started %s before the batch, want a fresh one", before.Sub(at))
	}
	if s := f.Stats(); s.Instances != 0 || s.Idle != 0 {
		t.Fatalf("confined: Stats = %+v, want no instance started ahead", s)
	}
}

// TestCommandStartedAheadEndsUnread: a command that exits without reading
// its batch cannot be started ahead (its run would not see the batch it
// reports on): its next batch runs in a fresh instance, and later batches
// start theirs when they arrive.
func TestCommandStartedAheadEndsUnread(t *testing.T) {
	t.Parallel()
	rt, logs := newRuntime(t)
	f := load(t, rt, "runtime/testdata/empty", wasmbuild.Command, runtime.FunctionConfig{})
	for i := range 4 {
		if res := invoke(t, f, batch(`{}`)); !res.OK() {
			t.Fatalf("batch %d: %+v %v", i, res.Messages, res.Failure)
		}
	}
	warned := 0
	for _, ev := range logs.events(t) {
		if strings.Contains(ev["message"].(string), "ended before it read its batch") {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("%d warnings about an instance started ahead that ended unread, want 1", warned)
	}
	if s := f.Stats(); s.Instances != 0 || s.Idle != 0 {
		t.Fatalf("Stats = %+v, want no instance started ahead", s)
	}
}

// TestCommandStartedAheadClose: closing a function (and its runtime) stops
// the instances started ahead; TestMain checks that none outlives it.
func TestCommandStartedAheadClose(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := load(t, rt, hostile, wasmbuild.Command, runtime.FunctionConfig{PoolSize: 3})
	startedAt(t, f)
	startedAt(t, f)
	waitStartedAhead(t, f)
	if err := f.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Instances != 0 || s.MemoryBytes != 0 {
		t.Fatalf("after Close: Stats = %+v, want no instance and no memory", s)
	}
}
