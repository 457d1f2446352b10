package runtime

import (
	goruntime "runtime"
	"sync"
	"syscall"
)

// longNice is the nice value of a thread while it runs a guest in a long
// slot: the kernel then gives the process's other threads (the healthy
// functions', the database driver's) the CPU first when both want it.
const longNice = 10

// canRenice reports, once per process, whether a thread's nice value can
// be raised and put back: putting it back needs CAP_SYS_NICE (root, or a
// container granted it) or an RLIMIT_NICE that allows it. The probe runs
// on a thread of its own.
var canRenice = sync.OnceValue(func() bool {
	return onThreadOfItsOwn(func(tid int) bool {
		return syscall.Setpriority(syscall.PRIO_PROCESS, tid, longNice) == nil &&
			syscall.Setpriority(syscall.PRIO_PROCESS, tid, 0) == nil
	})
})

// onThreadOfItsOwn runs fn on a thread that no other goroutine runs on,
// which ends with fn whatever fn did to it, and returns fn's result.
func onThreadOfItsOwn[T any](fn func(tid int) T) T {
	result := make(chan T)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread ends with the goroutine
		result <- fn(syscall.Gettid())
	}()
	return <-result
}

// lowerPriority pins the calling goroutine to its thread and lowers the
// thread's claim on the CPU: nice longNice where the process may put it
// back, and into cg (the runtime's Config.LongGuestCgroup) when not nil.
// It reports whether it lowered anything (restorePriority undoes it).
func lowerPriority(cg *threadCgroup) bool {
	niced := canRenice()
	if !niced && cg == nil {
		return false
	}
	goruntime.LockOSThread()
	tid := syscall.Gettid()
	niced = niced && syscall.Setpriority(syscall.PRIO_PROCESS, tid, longNice) == nil
	moved := cg != nil && cg.enter(tid) == nil
	if !niced && !moved {
		goruntime.UnlockOSThread()
		return false
	}
	return true
}

// restorePriority undoes lowerPriority. Should the kernel refuse, the
// goroutine stays pinned to its lowered thread rather than hand it back
// to the scheduler for other goroutines.
func restorePriority(cg *threadCgroup) {
	tid := syscall.Gettid()
	ok := !canRenice() || syscall.Setpriority(syscall.PRIO_PROCESS, tid, 0) == nil
	if cg != nil && cg.leave(tid) != nil {
		ok = false
	}
	if ok {
		goruntime.UnlockOSThread()
	}
}

// probeCgroup moves a thread of its own into cg and back, so that a
// cgroup the process may not use is refused by New, not met by every
// long guest.
func probeCgroup(cg *threadCgroup) error {
	return onThreadOfItsOwn(func(tid int) error {
		if err := cg.enter(tid); err != nil {
			return err
		}
		return cg.leave(tid)
	})
}
