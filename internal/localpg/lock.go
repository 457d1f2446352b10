package localpg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LockFile is the name of the lock file Lock takes in a folder.
const LockFile = "dev.lock"

// ErrLocked is returned by Lock when another process holds the folder.
var ErrLocked = errors.New("localpg: folder in use")

// Lock takes an exclusive lock (flock) on dir/dev.lock, creating dir when
// needed, and writes holder (e.g. "pid 123, http://127.0.0.1:8080") into
// it. When another process holds the lock it fails at once with
// ErrLocked and what that process wrote. The lock lasts until Release is
// called or the process ends, however it ends: the kernel drops it.
func Lock(dir, holder string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("localpg: lock %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localpg: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(b))
			if who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("%w: %s is held by %s (lock file %s)", ErrLocked, dir, who, path)
		}
		return nil, fmt.Errorf("localpg: lock %s: %w", path, err)
	}
	l := &DirLock{f: f}
	l.Update(holder)
	return l, nil
}

// DirLock is a folder held by Lock.
type DirLock struct{ f *os.File }

// Update rewrites who holds the folder, e.g. once the address is known.
func (l *DirLock) Update(holder string) {
	if err := l.f.Truncate(0); err == nil {
		_, _ = l.f.WriteAt([]byte(holder+"\n"), 0)
	}
}

// Release lets the folder go.
func (l *DirLock) Release() error {
	_ = l.f.Truncate(0)
	return l.f.Close() // closing drops the flock
}
