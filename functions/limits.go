package functions

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// Bounds and defaults of a function's limits (Config.MemoryMiB and
// Config.Timeout).
const (
	MinMemoryMiB, MaxMemoryMiB, DefaultMemoryMiB = 1, 4096, 64
	MaxTimeout, DefaultTimeout                   = 15 * time.Minute, 30 * time.Second
)

// MaxEmitPatterns bounds the emits patterns of one function.
const MaxEmitPatterns = 100

// CheckEmitPattern says whether p is a valid emits pattern: a queue or
// topic name (1-80 of A-Za-z0-9_-) that may hold the wildcards * (any
// run of characters), ? (one) and [...] classes of path.Match, such as
// "orders-*" or "audit".
func CheckEmitPattern(p string) error {
	if len(p) == 0 || len(p) > 80 {
		return fmt.Errorf("emits pattern %q: use 1 to 80 characters", p)
	}
	if strings.ContainsAny(p, "/\\") {
		return fmt.Errorf("emits pattern %q: a queue or topic name holds no / or \\", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("emits pattern %q: %w", p, err)
	}
	return nil
}
