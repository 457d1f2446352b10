package runtime

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"time"
)

// Kind is how a module is run, detected from its exports.
type Kind int

const (
	// Command modules export _start: a fresh instance runs each batch,
	// reading it from stdin and writing the output to stdout.
	Command Kind = iota + 1
	// Reactor modules export _initialize, sluice_alloc and sluice_handle:
	// instances are initialised once, pooled and reused across batches.
	Reactor
)

// String returns "command" or "reactor".
func (k Kind) String() string {
	switch k {
	case Command:
		return "command"
	case Reactor:
		return "reactor"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Defaults applied by Load to zero FunctionConfig fields.
const (
	DefaultMemoryMiB      = 64
	DefaultTimeout        = 30 * time.Second
	DefaultMaxStdoutBytes = 1 << 20
	DefaultMaxStderrBytes = 64 << 10
	// MaxMemoryMiB is the most a 32-bit WebAssembly memory can address.
	MaxMemoryMiB = 4096
)

// FunctionConfig configures a loaded function. Zero fields take the
// defaults above; PoolSize defaults to max(4, GOMAXPROCS).
type FunctionConfig struct {
	// Name and Version identify the function in its input and logs.
	Name    string
	Version int
	// Env is the whole environment the guest sees.
	Env map[string]string
	// MemoryMiB caps the module's linear memory.
	MemoryMiB int
	// Timeout caps the wall-clock time of one batch, instantiation
	// included.
	Timeout time.Duration
	// MaxStdoutBytes caps a batch's output; more fails the batch.
	MaxStdoutBytes int
	// MaxStderrBytes caps the stderr kept and logged per batch; the excess
	// is dropped with a marker.
	MaxStderrBytes int
	// PoolSize bounds the instances of the function alive at once, and so
	// its concurrent invocations; more invocations wait for a free one.
	PoolSize int
}

func (c FunctionConfig) withDefaults() (FunctionConfig, error) {
	if c.MemoryMiB == 0 {
		c.MemoryMiB = DefaultMemoryMiB
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxStdoutBytes == 0 {
		c.MaxStdoutBytes = DefaultMaxStdoutBytes
	}
	if c.MaxStderrBytes == 0 {
		c.MaxStderrBytes = DefaultMaxStderrBytes
	}
	if c.PoolSize == 0 {
		c.PoolSize = max(4, goruntime.GOMAXPROCS(0))
	}
	switch {
	case c.MemoryMiB < 1 || c.MemoryMiB > MaxMemoryMiB:
		return c, fmt.Errorf("memory %d MiB out of range 1..%d", c.MemoryMiB, MaxMemoryMiB)
	case c.Timeout < 0:
		return c, fmt.Errorf("negative timeout %s", c.Timeout)
	case c.MaxStdoutBytes < 0 || c.MaxStderrBytes < 0:
		return c, errors.New("negative output cap")
	case c.PoolSize < 0:
		return c, fmt.Errorf("negative pool size %d", c.PoolSize)
	}
	return c, nil
}
