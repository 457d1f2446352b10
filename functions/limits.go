package functions

import "time"

// Bounds and defaults of a function's limits (Config.MemoryMiB and
// Config.Timeout).
const (
	MinMemoryMiB, MaxMemoryMiB, DefaultMemoryMiB = 1, 4096, 64
	MaxTimeout, DefaultTimeout                   = 15 * time.Minute, 30 * time.Second
)
