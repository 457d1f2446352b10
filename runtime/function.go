package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/tetratelabs/wazero"
)

// Function is a loaded module ready to run batches. It is safe for
// concurrent use.
type Function struct {
	rt     *Runtime
	code   *compiledModule
	cfg    FunctionConfig
	kind   Kind
	log    zerolog.Logger
	modCfg wazero.ModuleConfig
	limit  uint64 // memory limit in bytes
	// outbound enforces AllowedOutboundHosts for http_request.
	outbound *outboundPolicy
	mem      memAccount
	budgets  budgets // the instances' memory budgets
	// initialMemory is the bytes of linear memory an instance starts
	// with (its exported memory's minimum; 0 when it exports none).
	initialMemory int64
	slots         chan struct{} // one token per instance that may be alive
	closing       chan struct{} // closed by Close
	// completed is set by the first invocation that ends without a
	// failure; overranAt is when an invocation last ended at the timeout,
	// memory or output limit (Unix nanoseconds, 0 if never). See confined.
	completed atomic.Bool
	overranAt atomic.Int64
	// started holds command instances started ahead of their batch, each
	// with its slot (see startedCommand); nil for reactors.
	started      chan *startedCommand
	noStartAhead atomic.Bool  // set once a started instance ended unused
	waiting      atomic.Int32 // started instances waiting for their batch

	mu     sync.Mutex
	closed bool
	idle   []*instance // reactor instances ready for reuse, most recent last
	live   int         // instances alive (idle or running)
}

// Kind returns how the function's module is run.
func (f *Function) Kind() Kind { return f.kind }

// Config returns the function's configuration, defaults applied.
func (f *Function) Config() FunctionConfig { return f.cfg }

// Stats describes a function's instances.
type Stats struct {
	// Instances are alive (running a batch or idle in the pool).
	Instances int
	// Idle instances wait for a batch: reactors in the pool, commands
	// started ahead of their batch.
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
	st.Instances, st.Idle = f.live, len(f.idle)+int(f.waiting.Load())
	return st
}

// countLive adds n to the instances alive (Stats.Instances), for a change
// made outside a section that holds f.mu already.
func (f *Function) countLive(n int) {
	f.mu.Lock()
	f.live += n
	f.mu.Unlock()
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
//
// Once a batch of a command module succeeds, its function having
// succeeded before and not being confined, the function's next instance
// is started ahead of its batch: it instantiates and runs the guest up to
// its first read of stdin, first output or first host call, and waits
// there for the next Invoke, which so skips instantiation and the
// language runtime's start (Result.Startup). A started instance holds one
// of PoolSize instances.
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
	// Take a slot: a free one, or the one of a command instance started
	// ahead (f.started is nil for reactors).
	ahead := f.takeStarted()
	if ahead == nil {
		select {
		case f.slots <- struct{}{}:
		case ahead = <-f.started:
		case <-f.closing:
			return Result{}, fmt.Errorf("invoke %s v%d invocation %s: %w", f.cfg.Name, f.cfg.Version, inv.ID, ErrClosed)
		case <-ctx.Done():
			return Result{}, fmt.Errorf("invoke %s v%d invocation %s: waiting for an instance: %w", f.cfg.Name, f.cfg.Version, inv.ID, ctx.Err())
		}
	}
	passSlot := false // to the next instance started ahead
	defer func() {
		if !passSlot {
			<-f.slots
		}
	}()
	start := time.Now()
	// Only a function that has already succeeded before starts its next
	// instance ahead: one loaded for a single batch (sluice invoke, the
	// invoke API) is closed right after it.
	seasoned := f.completed.Load()
	confined := f.confined(start)
	if ahead != nil && confined {
		ahead.discard() // a confined batch starts in a long slot
		ahead = nil
	}
	if !f.rt.enter() {
		if ahead != nil {
			ahead.discard()
		}
		return Result{}, fmt.Errorf("invoke %s v%d invocation %s: %w", f.cfg.Name, f.cfg.Version, inv.ID, ErrClosed)
	}
	defer f.rt.running.Done()

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
	switch {
	case inv.Trigger.Name != "":
		iio.stderr.trigger = inv.Trigger.Name
	case inv.Trigger.Type != "":
		iio.stderr.trigger = inv.Trigger.Type + ":" + inv.Trigger.Source
	}

	hc := &hostCalls{f: f, io: iio}
	hctx := context.WithValue(tctx, hostKey{}, hc)
	var (
		out    []byte
		runErr error
		inst   *instance
	)
	switch {
	case confined && !iio.takeLongSlot():
		runErr = context.Cause(tctx) // timed out waiting for its turn
	case f.kind == Command:
		inst, out, runErr = f.runCommand(hctx, iio, hc, input, ahead)
	default:
		inst, out, runErr = f.runReactor(hctx, iio, input)
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
	switch {
	case f.kind == Reactor && inst != nil:
		inst.io = nil
		f.putInstance(inst, failure == nil)
	case f.kind == Command && failure == nil && seasoned && !f.confined(time.Now()):
		passSlot = f.startAhead()
	}
	res := Result{Duration: time.Since(start), Stderr: iio.stderr.finish(), Host: hc.stats}
	if !iio.begun.IsZero() {
		res.Startup = iio.begun.Sub(start)
	}
	if failure == nil {
		res.Messages, res.Emits, failure = outcomes(&inv, out)
	}
	if failure != nil {
		res.Failure, res.Emits = failure, nil
		res.Messages = make([]MessageResult, len(inv.Messages))
		for i := range inv.Messages {
			res.Messages[i] = MessageResult{ID: inv.Messages[i].ID, Outcome: Retry, Error: failure.Message}
		}
	}
	return res, nil
}

// runCommand runs input through the instance started ahead, if any, else
// through a fresh instance of the command module.
func (f *Function) runCommand(ctx context.Context, iio *invocationIO, hc *hostCalls, input []byte, ahead *startedCommand) (*instance, []byte, error) {
	if ahead != nil {
		ran, err := ahead.run(ctx, iio, hc, input)
		if ran {
			return ahead.inst, iio.stdout, err
		}
		if ctx.Err() == nil && !f.noStartAhead.Swap(true) {
			f.log.Warn().Msg("an instance started ahead ended before it read its batch; the function's batches now start their instance when they arrive")
		}
	}
	inst := f.newInstance(iio, false)
	f.countLive(1)
	defer f.countLive(-1)
	stdin := &batchInput{io: iio}
	stdin.Reset(input)
	return inst, iio.stdout, f.runStart(ctx, inst, stdin)
}

// runStart instantiates the command module as inst, reading stdin, which
// runs its _start to the end, and closes it.
func (f *Function) runStart(ctx context.Context, inst *instance, stdin io.Reader) error {
	if err := f.admit(inst); err != nil {
		return err
	}
	mod, err := f.code.wr.InstantiateModule(f.memoryContext(ctx, inst), f.code.cm, f.modCfg.
		WithStdin(stdin).
		WithStdout(stdoutWriter{inst}).
		WithStderr(stderrWriter{inst}).
		WithNanosleep(inst.sleep).
		WithOsyield(inst.yield))
	inst.closeModule(context.Background(), mod)
	if mod != nil {
		inst.mod = mod // closed; classify may still read its globals
	}
	return err
}

// runReactor runs input through a pooled reactor instance.
func (f *Function) runReactor(ctx context.Context, iio *invocationIO, input []byte) (*instance, []byte, error) {
	inst, err := f.getInstance(ctx, iio)
	if err != nil {
		return inst, nil, err
	}
	inst.io = iio
	iio.begun = time.Now()
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
	f.discardStarted()
	for range cap(f.slots) {
		select {
		case f.slots <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("close function %s v%d: waiting for running batches: %w", f.cfg.Name, f.cfg.Version, ctx.Err())
		}
	}
	f.outbound.close()
	f.rt.mu.Lock()
	delete(f.rt.functions, f)
	f.rt.mu.Unlock()
	f.rt.release(ctx, f.code)
	return nil
}
