package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sluicehq/sluice/runtime/internal/guard"
)

// ErrClosed is returned by calls on a closed Runtime or Function.
var ErrClosed = errors.New("runtime: closed")

// Config configures a Runtime. The zero value is usable.
type Config struct {
	// CompilationCacheDir, when set, keeps compiled machine code on disk
	// there, so another Runtime (or process) loading the same module skips
	// compilation. Empty means an in-memory cache for this Runtime only.
	CompilationCacheDir string
	// Logger receives function logs (one event per stderr line) and host
	// events. The zero Logger discards them.
	Logger zerolog.Logger
	// LongGuestCgroup, when set, is a cgroup directory (Linux; v1's cpu
	// hierarchy, or a threaded cgroup on v2) into which the runtime moves
	// the thread of a guest that has run past its first 20 ms, or whose
	// function is confined, for as long as it runs so, and back out
	// afterwards. Mark it idle (cpu.idle 1) or give it a low weight and
	// such guests take only the CPU that the rest of the machine, a
	// Postgres beside Sluice included, leaves: a thread's nice value acts
	// only within its own scheduling group. New fails when the process
	// cannot move a thread into it and back (it needs write access to
	// both cgroups' thread files: root, or a delegated cgroup).
	LongGuestCgroup string
	// DenyPrivateOutbound refuses every function's HTTP calls to loopback,
	// private and shared (100.64.0.0/10) addresses, even to a host its
	// allowed_outbound_hosts names literally. Set it where tenants deploy
	// functions, so that none reaches the operator's network (a metrics
	// listener, internal services). Off, a literal entry such as
	// http://127.0.0.1:* reaches that address, as local development needs.
	// Link-local and cloud metadata addresses (169.254.169.254) are
	// refused either way.
	DenyPrivateOutbound bool
	// PrivateOutboundNetworks are the loopback, private or shared
	// networks that functions may still reach under DenyPrivateOutbound,
	// at hosts their allowed_outbound_hosts name literally (a name that
	// resolves into one, or an address in one): the operator's own
	// services a function is meant to call, such as 10.1.2.0/24, rather
	// than the whole network. A connection that reaches a special address
	// outside them is refused as before; metadata addresses stay refused
	// inside them. New fails when DenyPrivateOutbound is off (every
	// special address listed literally is reachable then) or a prefix is
	// not valid.
	PrivateOutboundNetworks []netip.Prefix
	// NAT64Prefixes are the NAT64 translation prefixes of the network the
	// runtime runs in, when it uses its own (RFC 6052: an IPv6 prefix of
	// length /32, /40, /48, /56, /64 or /96, e.g. 2001:db8:64::/96). A
	// function's connection to an address in one is checked as the IPv4
	// address inside it, as one in the well-known prefix 64:ff9b::/96
	// always is; without it, such an address is checked as the IPv6
	// address it is, and may so reach a private or metadata IPv4 address
	// through the gateway. (In the local-use prefix 64:ff9b:1::/48 every
	// place an IPv4 address may sit is checked unless the network's prefix
	// is named here.) New fails on a prefix of another length.
	NAT64Prefixes []netip.Prefix
	// GuestMemory bounds the linear memory that every instance of the
	// runtime holds at once, in bytes. A guest whose memory.grow would
	// take the total past it is refused, as at its own MemoryMiB, and
	// fails with FailureMemoryLimit if it then exits or traps; an instance
	// whose initial memory does not fit fails at start. 0 means three
	// quarters of the memory the process may use (the least of its
	// cgroup's limit and the machine's memory); negative, no bound.
	GuestMemory int64
	// GuestMemoryPerAccount bounds, in the same way, the linear memory
	// that the instances of the functions loaded with one
	// FunctionConfig.Account hold at once, in bytes, so that one tenant's
	// functions cannot take the whole of GuestMemory. 0 means no bound
	// per account. Idle instances (reactors in the pool, commands started
	// ahead of their batch) hold theirs too, until a batch needs the room:
	// a budget that would refuse a growth or a start first closes the idle
	// instances counted in it, reactors idle longest first, then commands
	// started ahead, as many as the room takes (the runtime's budget any
	// account's, an account's budget its own).
	GuestMemoryPerAccount int64
}

// Runtime hosts WebAssembly functions: wazero runtimes and compilation
// caches shared by every Function loaded into it. It is safe for
// concurrent use.
type Runtime struct {
	// fuel runs modules rewritten by guard.AddFuelChecks (every module
	// importing sched_yield, as every Go module does): they stop themselves
	// through the host's sched_yield, so wazero need not check on every
	// loop iteration. ctx runs every other module with wazero's
	// WithCloseOnContextDone, after guard.AddEntryChecks.
	fuel, ctx engine
	log       zerolog.Logger
	// network holds the outbound rules of every function: Config's
	// DenyPrivateOutbound, PrivateOutboundNetworks and NAT64Prefixes.
	network networkRules
	// host lists the functions the host provides, by import module, name.
	host hostDefs
	// base is canceled by Close, stopping every running batch; running
	// counts them so Close can wait before freeing the engines.
	base       context.Context
	cancelBase context.CancelFunc
	running    sync.WaitGroup

	// long are the long slots (see instance.yield).
	long *longSlots
	// guestMemory is Config.GuestMemory's budget; perAccount the limit of
	// each budget in accounts (Config.GuestMemoryPerAccount).
	guestMemory *memoryBudget
	perAccount  int64

	mu        sync.Mutex
	closed    bool
	compiled  map[moduleKey]*compiledModule
	functions map[*Function]struct{}
	accounts  map[string]*memoryBudget
}

// engine is one wazero runtime with its cache and WASI host module.
type engine struct {
	wr    wazero.Runtime
	cache wazero.CompilationCache
}

// hostDefs are the functions a module may import, by module and name.
type hostDefs = map[string]map[string]api.FunctionDefinition

func newEngine(ctx context.Context, dir string, closeOnDone bool) (engine, hostDefs, error) {
	var cache wazero.CompilationCache
	if dir != "" {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return engine{}, nil, fmt.Errorf("runtime: compilation cache %s: %w", dir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	wr := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(closeOnDone))
	wasi, err := wasi_snapshot_preview1.Instantiate(ctx, wr)
	if err != nil {
		_ = wr.Close(ctx)
		_ = cache.Close(ctx)
		return engine{}, nil, fmt.Errorf("runtime: instantiate wasi: %w", err)
	}
	host, err := instantiateHost(ctx, wr)
	if err != nil {
		_ = wr.Close(ctx)
		_ = cache.Close(ctx)
		return engine{}, nil, fmt.Errorf("runtime: instantiate host module: %w", err)
	}
	return engine{wr: wr, cache: cache}, hostDefs{
		wasi_snapshot_preview1.ModuleName: wasi.(api.Module).ExportedFunctionDefinitions(),
		HostModule:                        host.ExportedFunctionDefinitions(),
	}, nil
}

func (e engine) close(ctx context.Context) error {
	err := e.wr.Close(ctx)
	if cerr := e.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// compiledModule is a module compiled once and shared by the Functions
// loaded from the same bytes.
type compiledModule struct {
	ready chan struct{} // closed once cm or err is set
	cm    wazero.CompiledModule
	wr    wazero.Runtime // the engine that compiled it
	fuel  bool           // compiled with fuel checks
	err   error
	refs  int
	key   moduleKey
	hash  string // of the module as given, in hex
}

// moduleKey names what a compiledModule was compiled from: the module as
// given to Load (its SHA-256) and the memory limit its tables were capped
// by (see capTables), so that loading the same module again finds it
// without rewriting it.
type moduleKey struct {
	sum   [32]byte
	limit uint64
}

// New returns a Runtime. Close it to free its compiled code.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	network, err := newNetworkRules(cfg)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	long, err := newLongSlots(cfg.LongGuestCgroup)
	if err != nil {
		return nil, err
	}
	var fuelDir, ctxDir string
	if d := cfg.CompilationCacheDir; d != "" {
		fuelDir, ctxDir = filepath.Join(d, "fuel"), filepath.Join(d, "ctx")
	}
	fuel, host, err := newEngine(ctx, fuelDir, false)
	if err != nil {
		_ = long.close()
		return nil, err
	}
	ctxEngine, _, err := newEngine(ctx, ctxDir, true)
	if err != nil {
		_ = fuel.close(ctx)
		_ = long.close()
		return nil, err
	}
	guestMemory := cfg.GuestMemory
	if guestMemory == 0 {
		guestMemory = defaultGuestMemory()
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Runtime{
		perAccount: cfg.GuestMemoryPerAccount,
		accounts:   map[string]*memoryBudget{},
		base:       base,
		cancelBase: cancel,
		fuel:       fuel,
		ctx:        ctxEngine,
		log:        cfg.Logger,
		network:    network,
		host:       host,
		compiled:   map[moduleKey]*compiledModule{},
		functions:  map[*Function]struct{}{},
		long:       long,
	}
	r.guestMemory = r.newBudget(guestMemory, "this runtime's instances")
	return r, nil
}

// compile returns the compiled module for wasm with its tables capped by
// limit (capTables), rewriting and compiling it on first use; concurrent
// loads of the same bytes wait for one compilation. The caller owns one
// reference and must release it.
func (r *Runtime) compile(ctx context.Context, wasm []byte, limit uint64) (*compiledModule, error) {
	key := moduleKey{sum: sha256.Sum256(wasm), limit: limit}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	c, ok := r.compiled[key]
	if !ok {
		c = &compiledModule{ready: make(chan struct{}), key: key, hash: hex.EncodeToString(key.sum[:])}
		r.compiled[key] = c
	}
	c.refs++
	r.mu.Unlock()
	if !ok {
		var capped []byte
		if capped, c.err = capTables(wasm, limit); c.err == nil {
			if c.err = r.compileRecovered(ctx, c, capped); c.err != nil {
				c.err = fmt.Errorf("compile module %s: %w", c.hash[:12], c.err)
			}
		}
		if c.err != nil {
			r.mu.Lock()
			if r.compiled[key] == c { // the next load of these bytes tries afresh
				delete(r.compiled, key)
			}
			r.mu.Unlock()
		}
		close(c.ready)
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		r.release(ctx, c)
		return nil, ctx.Err()
	}
	if c.err != nil {
		err := c.err
		r.release(ctx, c)
		return nil, err
	}
	return c, nil
}

// fuelPeriod is how many function entries and loop iterations a guest runs
// between calls to the host's sched_yield. At a few nanoseconds each, a
// period takes tens of microseconds: that bounds how late a timeout stops
// a guest and how long the guest can hold up the Go garbage collector.
const fuelPeriod = 4096

// maxCallDepth is how many calls a fuel-checked guest may nest before it
// traps (see guard.AddFuelChecks for why the host limits it).
const maxCallDepth = 10_000

// guardEntries is switched off only by benchmarks measuring the cost of
// the guards.
var guardEntries = true

// compileRecovered is compileGuarded, turning a panic into an error: a
// malformed module can make wazero's validator panic (an index out of
// range), and the panic must neither escape Load nor leave c unready.
func (r *Runtime) compileRecovered(ctx context.Context, c *compiledModule, wasm []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if c.cm != nil {
				_ = c.cm.Close(ctx)
			}
			c.cm, c.wr, c.fuel = nil, nil, false
			err = fmt.Errorf("invalid module: the compiler failed on it: %v", p)
			r.log.Warn().Str("module", c.hash[:12]).Interface("panic", p).Msg("compiler panicked on a module")
		}
	}()
	return r.compileGuarded(ctx, c, wasm)
}

// compileGuarded compiles wasm with fuel checks when the module allows it,
// else with entry checks on the engine that checks its context, so a
// timeout or cancellation stops even loop-free code (see package guard).
func (r *Runtime) compileGuarded(ctx context.Context, c *compiledModule, wasm []byte) error {
	if !guardEntries {
		c.wr = r.ctx.wr
		cm, err := r.ctx.wr.CompileModule(ctx, wasm)
		c.cm = cm
		return err
	}
	if fueled, _, err := guard.AddFuelChecks(wasm, fuelPeriod, maxCallDepth); err == nil {
		if cm, err := r.fuel.wr.CompileModule(ctx, fueled); err == nil {
			c.cm, c.wr, c.fuel = cm, r.fuel.wr, true
			return nil
		}
		// A module the fuel rewrite cannot handle falls back below, where
		// compiling the original reports any real error.
	}
	guarded, _, err := guard.AddEntryChecks(wasm)
	if err != nil {
		return err
	}
	cm, err := r.ctx.wr.CompileModule(ctx, guarded)
	c.cm, c.wr = cm, r.ctx.wr
	return err
}

// release drops one reference to a compiled module, freeing it with the
// last.
func (r *Runtime) release(ctx context.Context, c *compiledModule) {
	r.mu.Lock()
	c.refs--
	last := c.refs == 0
	if last && r.compiled[c.key] == c {
		delete(r.compiled, c.key)
	}
	r.mu.Unlock()
	if last {
		<-c.ready
		if c.cm != nil {
			_ = c.cm.Close(ctx)
		}
	}
}

// enter registers a batch about to run; it reports false once the runtime
// is closed.
func (r *Runtime) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.running.Add(1)
	return true
}

// Close closes every Function loaded into the Runtime and frees the
// compiled code. Batches still running are stopped (they fail with
// FailureCanceled) and waited for until ctx is done. It is idempotent.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	fns := make([]*Function, 0, len(r.functions))
	for f := range r.functions {
		fns = append(fns, f)
	}
	r.mu.Unlock()
	r.cancelBase()
	waited := make(chan struct{})
	go func() {
		r.running.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done(): // close anyway; the batches still running fail
	}
	for _, f := range fns {
		f.closeInstances(ctx)
	}
	err := r.fuel.close(ctx)
	if cerr := r.ctx.close(ctx); err == nil {
		err = cerr
	}
	err = errors.Join(err, r.long.close())
	if err != nil {
		return fmt.Errorf("runtime: close: %w", err)
	}
	return nil
}
