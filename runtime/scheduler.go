package runtime

import (
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// Scheduling of guest code. Compiled guest code cannot be preempted by
// signal; fuel-checked modules call the host's sched_yield every
// fuelPeriod steps, and that is where the host takes turns:
//
//   - every yieldsPerTick calls (about a quarter of a million guest steps,
//     well under a millisecond) the guest gives up its P with Gosched;
//   - an invocation that has run longer than longAfter must hold one of
//     the runtime's long slots to go on, and there is one fewer long slot
//     than Ps: long-running guests (spinning, or merely heavy) share all but
//     one core, so short invocations of healthy functions keep a core to
//     themselves. A long guest hands its slot on every longTurnTicks ticks,
//     so long guests take turns; while one waits, its timeout runs on;
//   - a function that has not yet completed a batch, or one of whose
//     invocations ended at its timeout, memory or output limit within
//     confineFor, is confined: its invocations run in a long slot from
//     their start, instantiation included. Code that is new, or has shown
//     it spins, floods or balloons, cannot take the healthy functions'
//     core even for the longAfter at the start of each invocation (with
//     many such invocations at once, those add up);
//   - a guest sleeping hands its long slot on until it wakes;
//   - on Linux, when the process may put thread priorities back (root or
//     CAP_SYS_NICE), a guest holding a long slot runs on a thread of nice
//     10, so the kernel also prefers the process's other threads (and so
//     the healthy functions' work) when the cores are busy. Nice acts
//     only among the threads of one kernel scheduling group (with
//     autogroup, one session; else one cgroup), not against a Postgres
//     on the same machine: Config.LongGuestCgroup names a cgroup the
//     thread then runs in, which the operator marks idle or gives a low
//     weight.
const (
	yieldsPerTick = 64
	longAfter     = 20 * time.Millisecond
	longTurnTicks = 16
	confineFor    = time.Minute
)

// yield implements the guest's sched_yield: it stops the guest once its
// invocation must stop, by unwinding it with an exit error, and takes turns
// with other goroutines as described above.
func (in *instance) yield() {
	io := in.io
	if io == nil {
		return
	}
	select {
	case <-io.done:
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	default:
	}
	if in.yields++; in.yields%yieldsPerTick != 0 {
		return
	}
	switch {
	case io.holding:
		if io.ticks++; io.ticks%longTurnTicks == 0 {
			io.releaseLongSlot() // hand the slot on, then queue for it again
			in.takeLongSlot()
		} else {
			goruntime.Gosched()
		}
	case io.long != nil && time.Since(io.started) > longAfter:
		in.takeLongSlot()
	default:
		goruntime.Gosched()
	}
}

// takeLongSlot waits for a long slot, or unwinds the guest if its
// invocation must stop meanwhile.
func (in *instance) takeLongSlot() {
	if !in.io.takeLongSlot() {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
}

// longSlots are the runtime's long slots: one token per long-running
// invocation allowed to run at once, one fewer than GOMAXPROCS (at least
// one), so one core stays free for short invocations (see yield).
type longSlots struct {
	tokens chan struct{}
	// cgroup, when not nil, is where the thread of a guest holding a
	// slot runs (Config.LongGuestCgroup).
	cgroup *threadCgroup
}

// newLongSlots returns the long slots of a runtime, whose threads run in
// cgroupDir while they hold one, if not "" (Config.LongGuestCgroup).
func newLongSlots(cgroupDir string) (*longSlots, error) {
	s := &longSlots{tokens: make(chan struct{}, max(1, goruntime.GOMAXPROCS(0)-1))}
	if cgroupDir == "" {
		return s, nil
	}
	cg, err := openThreadCgroup(cgroupDir)
	if err == nil {
		if err = probeCgroup(cg); err != nil {
			_ = cg.close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: long guest cgroup %s: %w", cgroupDir, err)
	}
	s.cgroup = cg
	return s, nil
}

// close closes the cgroup's files, if any.
func (s *longSlots) close() error {
	if s.cgroup == nil {
		return nil
	}
	return s.cgroup.close()
}

// takeLongSlot waits for a long slot; it reports false, without one, if
// the invocation must stop first.
func (io *invocationIO) takeLongSlot() bool {
	select {
	case io.long.tokens <- struct{}{}:
		io.holding = true
		io.lowered = lowerPriority(io.long.cgroup)
		return true
	case <-io.done:
		return false
	}
}

// releaseLongSlot gives back the long slot an invocation holds, if any.
func (io *invocationIO) releaseLongSlot() {
	if io.holding {
		if io.lowered {
			restorePriority(io.long.cgroup)
			io.lowered = false
		}
		<-io.long.tokens
		io.holding = false
	}
}

// sleep implements the guest's clock sleeps, cut short when the invocation
// is stopped so a sleeping guest cannot outlive its timeout.
func (in *instance) sleep(ns int64) {
	var done <-chan struct{}
	if in.io != nil {
		done = in.io.done
		if in.io.holding { // sleeping takes no core: let another long guest run
			in.io.releaseLongSlot()
			defer in.takeLongSlot()
		}
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// confined reports whether an invocation starting at now must run in a
// long slot from its start (see yield).
func (f *Function) confined(now time.Time) bool {
	at := f.overranAt.Load()
	return !f.completed.Load() || at != 0 && now.Sub(time.Unix(0, at)) < confineFor
}
