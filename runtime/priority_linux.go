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
// on a thread of its own, which it ends whatever happens.
var canRenice = sync.OnceValue(func() bool {
	ok := make(chan bool)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tid := syscall.Gettid()
		ok <- syscall.Setpriority(syscall.PRIO_PROCESS, tid, longNice) == nil &&
			syscall.Setpriority(syscall.PRIO_PROCESS, tid, 0) == nil
	}()
	return <-ok
})

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
// long guest. The thread ends with the probe.
func probeCgroup(cg *threadCgroup) error {
	errc := make(chan error)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tid := syscall.Gettid()
		err := cg.enter(tid)
		if err == nil {
			err = cg.leave(tid)
		}
		errc <- err
	}()
	return <-errc
}
