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
// thread's priority; it reports whether it did (restorePriority undoes it).
func lowerPriority() bool {
	if !canRenice() {
		return false
	}
	goruntime.LockOSThread()
	if syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), longNice) != nil {
		goruntime.UnlockOSThread()
		return false
	}
	return true
}

// restorePriority undoes lowerPriority. Should the kernel refuse, the
// goroutine stays pinned to its low-priority thread rather than hand it
// back to the scheduler for other goroutines.
func restorePriority() {
	if syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 0) == nil {
		goruntime.UnlockOSThread()
	}
}
