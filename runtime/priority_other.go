//go:build !linux

package runtime

// lowerPriority does nothing off Linux, where thread priorities are not
// changed (see priority_linux.go).
func lowerPriority() bool { return false }

// restorePriority is never called off Linux.
func restorePriority() {}
