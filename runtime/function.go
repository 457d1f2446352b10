package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sluicehq/sluice/runtime/internal/abi"
	"github.com/sluicehq/sluice/runtime/internal/guard"
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

// Function is a loaded module ready to run batches. It is safe for
// concurrent use.
type Function struct {
	rt      *Runtime
	code    *compiledModule
	cfg     FunctionConfig
	kind    Kind
	log     zerolog.Logger
	modCfg  wazero.ModuleConfig
	limit   uint64 // memory limit in bytes
	mem     memAccount
	slots   chan struct{} // one token per instance that may be alive
	closing chan struct{} // closed by Close
	// completed is set by the first invocation that ends without a
	// failure; overranAt is when an invocation last ended at the timeout,
	// memory or output limit (Unix nanoseconds, 0 if never). See confined.
	completed atomic.Bool
	overranAt atomic.Int64

	mu     sync.Mutex
	closed bool
	idle   []*instance // reactor instances ready for reuse, most recent last
	live   int         // instances alive (idle or running)
}

// instance is one module instance and the state its host callbacks use.
type instance struct {
	mod     api.Module
	mem     *limitedMemory
	reactor bool
	alloc   api.Function
	handle  api.Function
	stack   [2]uint64
	io      *invocationIO // the current invocation's, nil between batches
	yields  uint32        // sched_yield calls, counted to take turns
}

// Scheduling of guest code. Compiled guest code cannot be preempted by
// signal; fuel-checked modules call the host's sched_yield every
// fuelPeriod steps, and that is where the host takes turns:
//
//   - every yieldsPerTick calls (about a quarter of a million guest steps,
//     well under a millisecond) the guest gives up its P with Gosched;
//   - an invocation that has run longer than longAfter must hold one of
//     the runtime's long slots to go on, and there is one fewer long slot
//     than Ps: long-running guests (spinning, or merely heavy) share all but
//     one core, so short invocations of healthy functions keep a core to
//     themselves. A long guest hands its slot on every longTurnTicks ticks,
//     so long guests take turns; while one waits, its timeout runs on;
//   - a function that has not yet completed a batch, or one of whose
//     invocations ended at its timeout, memory or output limit within
//     confineFor, is confined: its invocations run in a long slot from
//     their start, instantiation included. Code that is new, or has shown
//     it spins, floods or balloons, cannot take the healthy functions'
//     core even for the longAfter at the start of each invocation (with
//     many such invocations at once, those add up);
//   - a guest sleeping hands its long slot on until it wakes;
//   - on Linux, when the process may put thread priorities back (root or
//     CAP_SYS_NICE), a guest holding a long slot runs on a thread of nice
//     10, so the kernel also prefers the process's other threads (and so
//     the healthy functions' work) when the cores are busy.
const (
	yieldsPerTick = 64
	longAfter     = 20 * time.Millisecond
	longTurnTicks = 16
	confineFor    = time.Minute
)

// yield implements the guest's sched_yield: it stops the guest once its
// invocation must stop, by unwinding it with an exit error, and takes turns
// with other goroutines as described above.
func (in *instance) yield() {
	io := in.io
	if io == nil {
		return
	}
	select {
	case <-io.done:
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	default:
	}
	if in.yields++; in.yields%yieldsPerTick != 0 {
		return
	}
	switch {
	case io.holding:
		if io.ticks++; io.ticks%longTurnTicks == 0 {
			io.releaseLongSlot() // hand the slot on, then queue for it again
			in.takeLongSlot()
		} else {
			goruntime.Gosched()
		}
	case io.long != nil && time.Since(io.started) > longAfter:
		in.takeLongSlot()
	default:
		goruntime.Gosched()
	}
}

// takeLongSlot waits for a long slot, or unwinds the guest if its
// invocation must stop meanwhile.
func (in *instance) takeLongSlot() {
	if !in.io.takeLongSlot() {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
}

// takeLongSlot waits for a long slot; it reports false, without one, if
// the invocation must stop first.
func (io *invocationIO) takeLongSlot() bool {
	select {
	case io.long <- struct{}{}:
		io.holding = true
		io.lowered = lowerPriority()
		return true
	case <-io.done:
		return false
	}
}

// releaseLongSlot gives back the long slot an invocation holds, if any.
func (io *invocationIO) releaseLongSlot() {
	if io.holding {
		if io.lowered {
			restorePriority()
			io.lowered = false
		}
		<-io.long
		io.holding = false
	}
}

// sleep implements the guest's clock sleeps, cut short when the invocation
// is stopped so a sleeping guest cannot outlive its timeout.
func (in *instance) sleep(ns int64) {
	var done <-chan struct{}
	if in.io != nil {
		done = in.io.done
		if in.io.holding { // sleeping takes no core: let another long guest run
			in.io.releaseLongSlot()
			defer in.takeLongSlot()
		}
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// Load compiles wasm (once per distinct module, by SHA-256) and prepares it
// to run with cfg. It fails when the module imports anything the host does
// not provide, exports neither a command's nor a reactor's entry points, or
// needs more memory at start than cfg allows; the error names the culprit.
func (r *Runtime) Load(ctx context.Context, wasm []byte, cfg FunctionConfig) (*Function, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("load function %s v%d: %w", cfg.Name, cfg.Version, err)
	}
	code, err := r.compile(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("load function %s v%d: %w", cfg.Name, cfg.Version, err)
	}
	limit := uint64(cfg.MemoryMiB) << 20
	kind, err := r.inspect(code.cm, limit)
	if err != nil {
		r.release(ctx, code)
		return nil, fmt.Errorf("load function %s v%d (module %s): %w", cfg.Name, cfg.Version, code.hash[:12], err)
	}
	mc := wazero.NewModuleConfig().
		WithName("").
		WithArgs(cfg.Name).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mc = mc.WithEnv(k, cfg.Env[k])
	}
	if kind == Reactor {
		mc = mc.WithStartFunctions("_initialize")
	}
	f := &Function{
		rt:      r,
		code:    code,
		cfg:     cfg,
		kind:    kind,
		log:     r.log.With().Str("function", cfg.Name).Int("version", cfg.Version).Logger(),
		modCfg:  mc,
		limit:   limit,
		slots:   make(chan struct{}, cfg.PoolSize),
		closing: make(chan struct{}),
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.release(ctx, code)
		return nil, ErrClosed
	}
	r.functions[f] = struct{}{}
	r.mu.Unlock()
	return f, nil
}

// inspect checks a module against the ABI and returns its kind.
func (r *Runtime) inspect(cm wazero.CompiledModule, limit uint64) (Kind, error) {
	for _, d := range cm.ImportedFunctions() {
		mod, name, _ := d.Import()
		hd, ok := r.host[mod][name]
		if !ok {
			return 0, fmt.Errorf("unknown import %q.%q (the host provides only wasi_snapshot_preview1 functions)", mod, name)
		}
		if !sameSignature(d, hd) {
			return 0, fmt.Errorf("import %q.%q has signature %s, the host's is %s", mod, name, signature(d), signature(hd))
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		return 0, fmt.Errorf("unknown import %q.%q (the host provides no memory)", mod, name)
	}
	for name, m := range cm.ExportedMemories() {
		if need := uint64(m.Min()) << 16; need > limit {
			return 0, fmt.Errorf("memory %q needs %d MiB at start, over the %d MiB limit", name, (need+1<<20-1)>>20, limit>>20)
		}
	}
	exports := cm.ExportedFunctions()
	_, hasStart := exports["_start"]
	_, hasInit := exports["_initialize"]
	alloc, hasAlloc := exports["sluice_alloc"]
	handle, hasHandle := exports["sluice_handle"]
	if hasInit && (hasAlloc || hasHandle || !hasStart) {
		var missing []string
		if !hasAlloc {
			missing = append(missing, "sluice_alloc")
		}
		if !hasHandle {
			missing = append(missing, "sluice_handle")
		}
		if _, ok := cm.ExportedMemories()["memory"]; !ok {
			missing = append(missing, "memory")
		}
		if len(missing) > 0 {
			return 0, fmt.Errorf("reactor module (exports _initialize) lacks export %s (build it with the sluice sdk)", strings.Join(missing, ", "))
		}
		if s := signature(alloc); s != "(i32) -> (i32)" {
			return 0, fmt.Errorf("export sluice_alloc has signature %s, want (i32) -> (i32)", s)
		}
		if s := signature(handle); s != "(i32, i32) -> (i64)" {
			return 0, fmt.Errorf("export sluice_handle has signature %s, want (i32, i32) -> (i64)", s)
		}
		return Reactor, nil
	}
	if hasStart {
		return Command, nil
	}
	return 0, errors.New("module exports neither _start (command) nor _initialize, sluice_alloc and sluice_handle (reactor)")
}

func sameSignature(a, b api.FunctionDefinition) bool {
	return bytes.Equal(a.ParamTypes(), b.ParamTypes()) && bytes.Equal(a.ResultTypes(), b.ResultTypes())
}

func signature(d api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return "(" + names(d.ParamTypes()) + ") -> (" + names(d.ResultTypes()) + ")"
}

// Kind returns how the function's module is run.
func (f *Function) Kind() Kind { return f.kind }

// Config returns the function's configuration, defaults applied.
func (f *Function) Config() FunctionConfig { return f.cfg }

// Stats describes a function's instances.
type Stats struct {
	// Instances are alive (running a batch or idle in the pool).
	Instances int
	// Idle instances wait in the pool (reactors only).
	Idle int
	// MemoryBytes is the host memory backing the linear memories of the
	// function's instances.
	MemoryBytes int64
	// MaxInstanceMemoryBytes is the most linear memory one instance has
	// held; it never exceeds MemoryMiB.
	MaxInstanceMemoryBytes int64
	// Confined: the function's invocations run with the long-running
	// guests from their start (see Function.Invoke).
	Confined bool
}

// Stats returns the function's current instance counts.
func (f *Function) Stats() Stats {
	st := Stats{MemoryBytes: f.mem.live.Load(), MaxInstanceMemoryBytes: f.mem.peak.Load(), Confined: f.confined(time.Now())}
	f.mu.Lock()
	defer f.mu.Unlock()
	st.Instances, st.Idle = f.live, len(f.idle)
	return st
}

var (
	errTimeout        = errors.New("timeout")
	errOutputTooLarge = errors.New("output too large")
	errRuntimeClosed  = errors.New("runtime closed")
)

var inputPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Invoke runs one batch and returns the outcome of every message. Guest
// misbehaviour (exit, trap, timeout, limits, bad output) is reported in
// Result.Failure; the error is for host problems only: a closed function,
// a context done before the batch started, or an invalid Invocation
// (missing or duplicate message ids, headers or body not valid JSON).
//
// A function is confined until one of its invocations completes without a
// failure, and again for a minute after one ends at its timeout, memory or
// output limit: its invocations then run with the long-running guests, on
// all but one of the process's cores, from their start (Stats.Confined).
// Healthy functions are confined only until their first batch completes.
func (f *Function) Invoke(ctx context.Context, inv Invocation) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("invoke %s v%d invocation %s: %w", f.cfg.Name, f.cfg.Version, inv.ID, err)
	}
	bufp := inputPool.Get().(*[]byte)
	input, err := appendInput((*bufp)[:0], f.cfg.Name, f.cfg.Version, &inv)
	if err != nil {
		inputPool.Put(bufp)
		return Result{}, fmt.Errorf("invoke %s v%d: %w", f.cfg.Name, f.cfg.Version, err)
	}
	defer func() {
		if cap(input) <= 1<<20 {
			*bufp = input[:0]
			inputPool.Put(bufp)
		}
	}()
	select {
	case f.slots <- struct{}{}:
	case <-f.closing:
		return Result{}, fmt.Errorf("invoke %s v%d invocation %s: %w", f.cfg.Name, f.cfg.Version, inv.ID, ErrClosed)
	case <-ctx.Done():
		return Result{}, fmt.Errorf("invoke %s v%d invocation %s: waiting for an instance: %w", f.cfg.Name, f.cfg.Version, inv.ID, ctx.Err())
	}
	defer func() { <-f.slots }()
	if !f.rt.enter() {
		return Result{}, fmt.Errorf("invoke %s v%d invocation %s: %w", f.cfg.Name, f.cfg.Version, inv.ID, ErrClosed)
	}
	defer f.rt.running.Done()

	start := time.Now()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(f.rt.base, func() { cancel(errRuntimeClosed) })
	defer stop()
	tctx, tcancel := context.WithTimeoutCause(cctx, f.cfg.Timeout, errTimeout)
	defer tcancel()
	iio := &invocationIO{
		stdoutCap:  f.cfg.MaxStdoutBytes,
		onOverflow: func() { cancel(errOutputTooLarge) },
		done:       tctx.Done(),
		started:    start,
		long:       f.rt.long,
		stderr: stderrSink{
			base:   &f.log,
			invID:  inv.ID,
			limit:  f.cfg.MaxStderrBytes,
			stream: "stderr",
		},
	}
	if inv.Trigger.Type != "" {
		iio.stderr.trigger = inv.Trigger.Type + ":" + inv.Trigger.Source
	}

	var (
		out    []byte
		runErr error
		inst   *instance
	)
	switch {
	case f.confined(start) && !iio.takeLongSlot():
		runErr = context.Cause(tctx) // timed out waiting for its turn
	case f.kind == Command:
		inst, out, runErr = f.runCommand(tctx, iio, input)
	default:
		inst, out, runErr = f.runReactor(tctx, iio, input)
	}
	iio.releaseLongSlot()
	failure := f.classify(tctx, runErr, inst, iio)
	switch {
	case failure == nil:
		if !f.completed.Load() {
			f.completed.Store(true)
		}
	case failure.Kind.overran():
		f.overranAt.Store(time.Now().UnixNano())
	}
	if f.kind == Reactor && inst != nil {
		inst.io = nil
		f.putInstance(inst, failure == nil)
	}
	res := Result{Duration: time.Since(start), Stderr: iio.stderr.finish()}
	if failure == nil {
		res.Messages, failure = outcomes(&inv, out)
	}
	if failure != nil {
		res.Failure = failure
		res.Messages = make([]MessageResult, len(inv.Messages))
		for i := range inv.Messages {
			res.Messages[i] = MessageResult{ID: inv.Messages[i].ID, Outcome: Retry, Error: failure.Message}
		}
	}
	return res, nil
}

// confined reports whether an invocation starting at now must run in a
// long slot from its start (see yield).
func (f *Function) confined(now time.Time) bool {
	at := f.overranAt.Load()
	return !f.completed.Load() || at != 0 && now.Sub(time.Unix(0, at)) < confineFor
}

// runCommand runs a fresh instance of a command module on input.
func (f *Function) runCommand(ctx context.Context, iio *invocationIO, input []byte) (*instance, []byte, error) {
	inst := &instance{io: iio, mem: &limitedMemory{limit: f.limit, acct: &f.mem}}
	f.mu.Lock()
	f.live++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.live--
		f.mu.Unlock()
	}()
	mod, err := f.code.wr.InstantiateModule(f.memoryContext(ctx, inst), f.code.cm, f.modCfg.
		WithStdin(bytes.NewReader(input)).
		WithStdout(stdoutWriter{inst}).
		WithStderr(stderrWriter{inst}).
		WithNanosleep(inst.sleep).
		WithOsyield(inst.yield))
	if mod != nil {
		_ = mod.Close(context.Background())
		inst.mod = mod // closed; classify may still read its globals
	}
	return inst, iio.stdout, err
}

// memoryContext makes instantiation under ctx back the instance's memory
// with inst.mem.
func (f *Function) memoryContext(ctx context.Context, inst *instance) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(
		func(_, _ uint64) experimental.LinearMemory { return inst.mem }))
}

// runReactor runs input through a pooled reactor instance.
func (f *Function) runReactor(ctx context.Context, iio *invocationIO, input []byte) (*instance, []byte, error) {
	inst, err := f.getInstance(ctx, iio)
	if err != nil {
		return inst, nil, err
	}
	inst.io = iio
	stack := inst.stack[:]
	stack[0] = uint64(len(input))
	if err := inst.alloc.CallWithStack(ctx, stack); err != nil {
		return inst, nil, err
	}
	ptr := uint32(stack[0])
	if !inst.mod.Memory().Write(ptr, input) {
		return inst, nil, &abiError{fmt.Sprintf("sluice_alloc(%d) returned %#x, outside memory", len(input), ptr)}
	}
	stack[0], stack[1] = uint64(ptr), uint64(len(input))
	if err := inst.handle.CallWithStack(ctx, stack); err != nil {
		return inst, nil, err
	}
	optr, olen := uint32(stack[0]>>32), uint32(stack[0])
	if olen == 0 {
		return inst, nil, nil
	}
	if int(olen) > f.cfg.MaxStdoutBytes {
		iio.overflow = true
		return inst, nil, nil
	}
	out, ok := inst.mod.Memory().Read(optr, olen)
	if !ok {
		return inst, nil, &abiError{fmt.Sprintf("sluice_handle returned output [%#x, +%d), outside memory", optr, olen)}
	}
	return inst, bytes.Clone(out), nil
}

// abiError is a guest's breach of the reactor calling convention.
type abiError struct{ msg string }

func (e *abiError) Error() string { return e.msg }

// getInstance takes an idle reactor instance or starts a new one.
func (f *Function) getInstance(ctx context.Context, iio *invocationIO) (*instance, error) {
	f.mu.Lock()
	if n := len(f.idle); n > 0 {
		inst := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return inst, nil
	}
	f.live++
	f.mu.Unlock()
	inst := &instance{reactor: true, io: iio, mem: &limitedMemory{limit: f.limit, acct: &f.mem}}
	mod, err := f.code.wr.InstantiateModule(f.memoryContext(ctx, inst), f.code.cm, f.modCfg.
		WithStdout(stdoutWriter{inst}).
		WithStderr(stderrWriter{inst}).
		WithNanosleep(inst.sleep).
		WithOsyield(inst.yield))
	if err == nil && mod.IsClosed() {
		err = &abiError{"module exited during _initialize"}
	}
	if err == nil && inst.mem.overStart {
		err = &abiError{"initial memory over the limit"}
	}
	if err != nil {
		if mod != nil {
			_ = mod.Close(context.Background())
		}
		f.mu.Lock()
		f.live--
		f.mu.Unlock()
		return inst, err
	}
	inst.mod = mod
	inst.alloc = mod.ExportedFunction("sluice_alloc")
	inst.handle = mod.ExportedFunction("sluice_handle")
	return inst, nil
}

// putInstance returns a healthy reactor instance to the pool and discards
// any other.
func (f *Function) putInstance(inst *instance, healthy bool) {
	if inst.mod == nil { // never started; getInstance already counted it out
		return
	}
	f.mu.Lock()
	if healthy && !f.closed && !inst.mod.IsClosed() {
		f.idle = append(f.idle, inst)
		f.mu.Unlock()
		return
	}
	f.live--
	f.mu.Unlock()
	_ = inst.mod.Close(context.Background())
}

// classify turns how a run ended into a batch failure, nil for success.
func (f *Function) classify(ctx context.Context, err error, inst *instance, iio *invocationIO) *BatchFailure {
	memHit := inst != nil && inst.mem != nil && inst.mem.hit.Load()
	if iio.overflow {
		return &BatchFailure{Kind: FailureOutputTooLarge, Message: fmt.Sprintf("output_too_large: output over the %d-byte limit", f.cfg.MaxStdoutBytes)}
	}
	if err == nil {
		if memHit && inst.mem.overStart {
			return f.memoryFailure()
		}
		return nil
	}
	var abiErr *abiError
	if errors.As(err, &abiErr) {
		if memHit {
			return f.memoryFailure()
		}
		return &BatchFailure{Kind: FailureInvalidOutput, Message: "invalid_output: " + abiErr.msg}
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch code := exit.ExitCode(); code {
		case 0:
			if f.kind == Command {
				return nil
			}
			return &BatchFailure{Kind: FailureExit, Message: "exit_code: module exited with status 0 during sluice_handle"}
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			return f.contextFailure(ctx)
		default:
			if memHit {
				return f.memoryFailure()
			}
			msg := fmt.Sprintf("exit_code: module exited with status %d", code)
			if why := iio.stderr.reason(); why != "" {
				msg += ": " + why
			}
			return &BatchFailure{Kind: FailureExit, ExitCode: code, Message: msg}
		}
	}
	if ctx.Err() != nil {
		return f.contextFailure(ctx)
	}
	if memHit {
		return f.memoryFailure()
	}
	if callsTooDeep(inst) {
		return &BatchFailure{Kind: FailureTrap, Message: fmt.Sprintf("trap: call stack exhausted: more than %d nested calls", maxCallDepth)}
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	msg := "trap: " + abi.Truncate(line, 300)
	if why := iio.stderr.notable; why != "" { // a Go panic in a reactor ends in a trap
		msg += ": " + abi.Truncate(why, 300)
	}
	return &BatchFailure{Kind: FailureTrap, Message: msg}
}

// callsTooDeep reports whether inst trapped at the call-depth limit the
// fuel rewrite adds (guard.AddFuelChecks).
func callsTooDeep(inst *instance) bool {
	if inst == nil || inst.mod == nil {
		return false
	}
	g := inst.mod.ExportedGlobal(guard.DepthExport)
	return g != nil && uint32(g.Get()) > maxCallDepth
}

func (f *Function) memoryFailure() *BatchFailure {
	return &BatchFailure{Kind: FailureMemoryLimit, Message: fmt.Sprintf("memory_limit: module needed more than its %d MiB of memory", f.cfg.MemoryMiB)}
}

func (f *Function) contextFailure(ctx context.Context) *BatchFailure {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errOutputTooLarge):
		return &BatchFailure{Kind: FailureOutputTooLarge, Message: fmt.Sprintf("output_too_large: output over the %d-byte limit", f.cfg.MaxStdoutBytes)}
	case errors.Is(cause, errRuntimeClosed):
		return &BatchFailure{Kind: FailureCanceled, Message: "canceled: the runtime closed while the batch ran"}
	case errors.Is(cause, errTimeout):
		return &BatchFailure{Kind: FailureTimeout, Message: fmt.Sprintf("timeout: batch ran longer than %s", f.cfg.Timeout)}
	case errors.Is(cause, context.DeadlineExceeded):
		return &BatchFailure{Kind: FailureTimeout, Message: "timeout: the caller's deadline passed while the batch ran"}
	default:
		return &BatchFailure{Kind: FailureCanceled, Message: fmt.Sprintf("canceled: %v", cause)}
	}
}

// reason returns the line of stderr that best explains a failed exit: the
// first panic or fatal error line, else the last line.
func (s *stderrSink) reason() string {
	if s.notable != "" {
		return abi.Truncate(s.notable, 300)
	}
	b := bytes.TrimRight(s.buf, "\r\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return abi.Truncate(string(b), 300)
}

// outcomes maps a successful run's output onto the batch's messages.
func outcomes(inv *Invocation, out []byte) ([]MessageResult, *BatchFailure) {
	res := make([]MessageResult, len(inv.Messages))
	for i := range inv.Messages {
		res[i] = MessageResult{ID: inv.Messages[i].ID}
	}
	fails, err := abi.ParseOutput(out)
	if err != nil {
		return nil, &BatchFailure{Kind: FailureInvalidOutput, Message: "invalid_output: " + strings.TrimPrefix(err.Error(), abi.ErrInvalid.Error()+": ")}
	}
	if len(fails) == 0 {
		return res, nil
	}
	index := make(map[string]int, len(inv.Messages))
	for i := range inv.Messages {
		index[inv.Messages[i].ID] = i
	}
	for _, fl := range fails {
		i, ok := index[fl.ID]
		if !ok {
			return nil, &BatchFailure{Kind: FailureUnknownItem, Message: fmt.Sprintf("unknown_item: output names itemIdentifier %q, which is not in the batch", abi.Truncate(fl.ID, 100))}
		}
		m := &res[i]
		if m.Outcome == Permanent { // a permanent failure wins over a retry
			continue
		}
		m.Error = fl.Error
		if m.Error == "" {
			m.Error = "failed without an error message"
		}
		if fl.Permanent {
			m.Outcome, m.RetryAfter = Permanent, 0
		} else {
			m.Outcome, m.RetryAfter = Retry, time.Duration(fl.RetryAfterSeconds)*time.Second
		}
	}
	return res, nil
}

// Close stops the function: new invocations fail with ErrClosed, idle
// instances are freed, and Close waits (until ctx is done) for running
// batches to finish before freeing the compiled code. It is idempotent.
func (f *Function) Close(ctx context.Context) error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.closing)
	f.mu.Unlock()
	f.closeInstances(ctx)
	for range cap(f.slots) {
		select {
		case f.slots <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("close function %s v%d: waiting for running batches: %w", f.cfg.Name, f.cfg.Version, ctx.Err())
		}
	}
	f.rt.mu.Lock()
	delete(f.rt.functions, f)
	f.rt.mu.Unlock()
	f.rt.release(ctx, f.code)
	return nil
}

// closeInstances frees the idle instances.
func (f *Function) closeInstances(ctx context.Context) {
	f.mu.Lock()
	idle := f.idle
	f.idle = nil
	f.live -= len(idle)
	f.mu.Unlock()
	for _, inst := range idle {
		_ = inst.mod.Close(ctx)
	}
}
