//go:build !linux

package runtime

import (
	"errors"
	"runtime"
)

// lowerPriority does nothing off Linux, where thread priorities are not
// changed (see priority_linux.go).
func lowerPriority(*threadCgroup) bool { return false }

// restorePriority is never called off Linux.
func restorePriority(*threadCgroup) {}

// threadCgroup is Linux's; off Linux it is never opened.
type threadCgroup struct{}

func openThreadCgroup(string) (*threadCgroup, error) {
	return nil, errors.New("cgroups exist on Linux only, not on " + runtime.GOOS)
}

func (*threadCgroup) close() error { return nil }

func probeCgroup(*threadCgroup) error { return nil }
