package runtime

import (
	"context"
	"slices"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// instance is one module instance and the state its host callbacks use.
type instance struct {
	mod     api.Module
	mem     *limitedMemory
	reactor bool
	alloc   api.Function
	handle  api.Function
	stack   [2]uint64
	io      *invocationIO   // the current invocation's, nil between batches
	yields  uint32          // sched_yield calls, counted to take turns
	ahead   *startedCommand // set when started ahead of its batch
	// idleSince is when a reactor instance last went back to the pool
	// (guarded by its function's mu).
	idleSince time.Time
}

// await waits, in an instance started ahead, for its batch (see
// startedCommand.await); other instances have theirs.
func (in *instance) await() {
	if in.ahead != nil {
		in.ahead.await()
	}
}

// newInstance returns an instance not yet started, for iio, whose linear
// memory is capped at the function's limit and counted in its totals and
// budgets.
func (f *Function) newInstance(iio *invocationIO, reactor bool) *instance {
	return &instance{reactor: reactor, io: iio, mem: &limitedMemory{limit: f.limit, acct: &f.mem, budgets: f.budgets}}
}

// memoryContext makes instantiation under ctx back the instance's memory
// with inst.mem.
func (f *Function) memoryContext(ctx context.Context, inst *instance) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(
		func(_, _ uint64) experimental.LinearMemory { return inst.mem }))
}

// getInstance takes an idle reactor instance or starts a new one.
func (f *Function) getInstance(ctx context.Context, iio *invocationIO) (*instance, error) {
	f.mu.Lock()
	if n := len(f.idle); n > 0 {
		inst := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		inst.mem.newBatch()
		return inst, nil
	}
	f.live++
	f.mu.Unlock()
	inst := f.newInstance(iio, true)
	if err := f.admit(inst); err != nil {
		f.countLive(-1)
		return inst, err
	}
	mod, err := f.code.wr.InstantiateModule(f.memoryContext(ctx, inst), f.code.cm, f.modCfg.
		WithStdout(stdoutWriter{inst}).
		WithStderr(stderrWriter{inst}).
		WithNanosleep(inst.sleep).
		WithOsyield(inst.yield))
	if err == nil && mod.IsClosed() {
		err = &abiError{"module exited during _initialize"}
	}
	if err == nil && inst.mem.overStart {
		err = inst.mem.startError()
	}
	if err != nil {
		inst.closeModule(context.Background(), mod)
		f.countLive(-1)
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
		inst.idleSince = time.Now()
		f.idle = append(f.idle, inst)
		f.mu.Unlock()
		return
	}
	f.live--
	f.mu.Unlock()
	inst.closeModule(context.Background(), inst.mod)
}

// takeIdle removes inst from the idle instances, counting it out, and
// reports whether it was there (another batch may have taken it).
func (f *Function) takeIdle(inst *instance) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.idle, inst)
	if i < 0 {
		return false
	}
	f.idle = slices.Delete(f.idle, i, i+1)
	f.live--
	return true
}

// closeInstances frees the idle instances.
func (f *Function) closeInstances(ctx context.Context) {
	f.mu.Lock()
	idle := f.idle
	f.idle = nil
	f.live -= len(idle)
	f.mu.Unlock()
	for _, inst := range idle {
		inst.closeModule(ctx, inst.mod)
	}
}

// admit refuses to start inst when its initial memory would take one of
// its budgets past the limit, idle instances closed to make room (unless
// inst is itself a command started ahead: see limitedMemory.speculative),
// before any of its code runs (a command runs its whole batch within its
// instantiation). Instances started at once may still pass together;
// Reallocate counts what they take anyway, and their instances fail right
// after instantiation.
func (f *Function) admit(inst *instance) error {
	if b := f.budgets.over(f.initialMemory, !inst.mem.speculative); b != nil {
		inst.mem.refuseStart(b)
		return inst.mem.startError()
	}
	return nil
}

// closeModule closes mod, in's module (nil when instantiation made none),
// and frees in's memory, which wazero does not on every path (a failed
// instantiation, a close that finds the module closed already): no
// budget keeps its reservation.
func (in *instance) closeModule(ctx context.Context, mod api.Module) {
	if mod != nil {
		_ = mod.Close(ctx)
	}
	in.mem.Free()
}
