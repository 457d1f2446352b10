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
	// DefaultMaxHTTPRequests caps http_request calls per invocation.
	DefaultMaxHTTPRequests = 100
	// DefaultMaxHTTPResponseBytes caps one response body.
	DefaultMaxHTTPResponseBytes = 4 << 20
	// MaxHTTPResponseHeaderBytes caps one response's headers (status line
	// included), whatever the body's cap.
	MaxHTTPResponseHeaderBytes = 64 << 10
	// DefaultHTTPRequestTimeout caps one request (the batch's deadline
	// caps it too).
	DefaultHTTPRequestTimeout = 30 * time.Second
	// MaxMemoryMiB is the most a 32-bit WebAssembly memory can address.
	MaxMemoryMiB = 4096
)

// FunctionConfig configures a loaded function. Zero fields take the
// defaults above; PoolSize defaults to max(4, GOMAXPROCS).
type FunctionConfig struct {
	// Name and Version identify the function in its input and logs.
	Name    string
	Version int
	// Account, when set, is logged with every line of the function (a
	// function's name is its account's own), and its instances count
	// against the account's memory budget (Config.GuestMemoryPerAccount).
	Account string
	// AccountGuestMemory, when not 0 (and Account is set), bounds the
	// linear memory that Account's instances hold at once, in bytes, in
	// place of Config.GuestMemoryPerAccount: the account's own limit.
	// Each Load sets it for the whole account, so the functions of one
	// account should be loaded with the same value.
	AccountGuestMemory int64
	// Env is the whole environment the guest sees.
	Env map[string]string
	// MemoryMiB caps the module's linear memory.
	MemoryMiB int
	// Timeout caps the wall-clock time of one batch, instantiation
	// included (except for a command instance started ahead of its batch,
	// see Function.Invoke: its start is bounded by Timeout on its own).
	Timeout time.Duration
	// MaxStdoutBytes caps a batch's output; more fails the batch.
	MaxStdoutBytes int
	// MaxStderrBytes caps the stderr kept and logged per batch; the excess
	// is dropped with a marker.
	MaxStderrBytes int
	// PoolSize bounds the instances of the function alive at once, and so
	// its concurrent invocations; more invocations wait for a free one.
	PoolSize int

	// AllowedOutboundHosts are the URLs the guest may call with
	// http_request, in Spin's convention: "https://api.example.com",
	// "http://127.0.0.1:*", "https://*.example.com:8443". None by default.
	// A loopback, private or link-local address is reached only through a
	// host (name or address) listed exactly, never through a wildcard.
	AllowedOutboundHosts []string
	// MaxHTTPRequests caps http_request calls per invocation.
	MaxHTTPRequests int
	// MaxHTTPResponseBytes caps one response body.
	MaxHTTPResponseBytes int
	// HTTPRequestTimeout caps one request, redirects included; the
	// batch's deadline caps it too.
	HTTPRequestTimeout time.Duration
	// RefuseOutbound, when set, refuses every http_request the allow-list
	// lets through, before sending it, with errno denied and this reason
	// (a dry run: a call would be a side effect).
	RefuseOutbound string

	// Stores are the key-value stores the guest may open with kv_open;
	// KV serves them (required when Stores is not empty).
	Stores []string
	KV     KV
	// MaxKVValueBytes caps a value the guest stores.
	MaxKVValueBytes int
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
	if c.MaxHTTPRequests == 0 {
		c.MaxHTTPRequests = DefaultMaxHTTPRequests
	}
	if c.MaxHTTPResponseBytes == 0 {
		c.MaxHTTPResponseBytes = DefaultMaxHTTPResponseBytes
	}
	if c.HTTPRequestTimeout == 0 {
		c.HTTPRequestTimeout = DefaultHTTPRequestTimeout
	}
	if c.MaxKVValueBytes == 0 {
		c.MaxKVValueBytes = DefaultMaxKVValueBytes
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
	case c.MaxHTTPRequests < 0 || c.MaxHTTPResponseBytes < 0 || c.HTTPRequestTimeout < 0 || c.MaxKVValueBytes < 0:
		return c, errors.New("negative host call limit")
	case len(c.Stores) > 0 && c.KV == nil:
		return c, fmt.Errorf("stores %q listed but no KV service given", c.Stores)
	}
	return c, nil
}
