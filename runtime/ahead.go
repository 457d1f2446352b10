package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// Commands started ahead of their batch.
//
// A command instance pays for instantiation and for its language runtime's
// start (the Go runtime's; together most of a small batch's time)
// before it reads its batch. When a batch succeeds, its function having
// succeeded before and not being confined (see Function.Invoke), the slot
// it ran in starts the function's next instance at once, on a goroutine
// of its own: its _start runs until the guest first does something the
// batch could observe or that leaves the instance — reads stdin, writes
// stdout or stderr, calls the host — and waits there for the next batch
// (await). Until then the guest
// may only compute, read the clock and draw random numbers, so a batch run
// by an instance started ahead gets what a fresh one would: the same input,
// and its output, logs and host calls are its own. The warm-up counts
// toward no batch's timeout; it has one of its own (the function's
// timeout, until the guest waits), and a warm-up that spins takes turns in
// the long slots like a long batch.
//
// A started instance holds the slot (one of PoolSize) it will run in, so
// PoolSize still bounds the instances alive. One that ends before it waits
// for its batch (it read no input, or its warm-up timed out) is discarded,
// its batch runs in a fresh instance, and the function's later batches are
// no longer started ahead.

// errStartedAhead stops an instance started ahead that is not needed
// (its function closed, or turned confined).
var errStartedAhead = errors.New("instance started ahead discarded")

// startedCommand is a command instance whose _start runs ahead of its
// batch.
type startedCommand struct {
	f    *Function
	inst *instance
	warm *invocationIO // the warm-up's deadline and long-slot turns
	// cancel stops the instance: the warm-up, or the run once bound.
	cancel   context.CancelCauseFunc
	deadline *time.Timer // the warm-up's, stopped once the guest waits
	batch    chan boundBatch
	input    batchInput    // the batch, read through stdinReader
	hc       *hostCalls    // the batch's, set by await
	ended    chan struct{} // closed once _start returned and err is set
	err      error
}

// boundBatch is what await hands the guest.
type boundBatch struct {
	io    *invocationIO
	hc    *hostCalls
	input []byte
}

// startAhead starts an instance of the command for its next batch, in the
// slot the caller holds, and reports whether it did; when it did, the slot
// passes to the instance (f.started), else the caller keeps it.
func (f *Function) startAhead() bool {
	if f.noStartAhead.Load() || f.budgets.over(f.initialMemory, false) != nil || !f.rt.enter() {
		return false // (over a memory budget: the batch starts its own when it comes)
	}
	ctx, cancel := context.WithCancelCause(f.rt.base)
	s := &startedCommand{
		f:      f,
		warm:   &invocationIO{done: ctx.Done(), started: time.Now(), long: f.rt.long},
		cancel: cancel,
		batch:  make(chan boundBatch),
		ended:  make(chan struct{}),
	}
	s.inst = f.newInstance(s.warm, false)
	s.inst.ahead = s
	s.inst.mem.speculative = true
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		cancel(nil)
		f.rt.running.Done()
		return false
	}
	f.live++
	f.started <- s // never blocks: it holds one of cap(f.started) slots
	f.mu.Unlock()
	s.deadline = time.AfterFunc(f.cfg.Timeout, func() { cancel(errTimeout) })
	hctx := context.WithValue(ctx, hostKey{}, s)
	go func() {
		defer f.rt.running.Done()
		err := f.runStart(hctx, s.inst, stdinReader{s})
		s.inst.io.releaseLongSlot() // on this goroutine, which took it
		s.deadline.Stop()
		cancel(nil)
		f.countLive(-1)
		s.err = err
		close(s.ended)
	}()
	return true
}

// await, called by the guest's goroutine wherever the guest is about to
// touch its batch or the world, waits for the batch once. It unwinds the
// guest if the instance is stopped first.
func (s *startedCommand) await() {
	if s.inst.io != s.warm {
		return // bound
	}
	if !s.deadline.Stop() {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded)) // the warm-up timed out
	}
	s.warm.releaseLongSlot() // waiting takes no core
	s.f.waiting.Add(1)
	defer s.f.waiting.Add(-1)
	select {
	case b := <-s.batch:
		s.inst.io, s.hc = b.io, b.hc
		s.inst.mem.speculative = false
		s.input.io = b.io
		s.input.Reset(b.input)
	case <-s.warm.done:
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
}

// stdinReader is a started instance's stdin: its batch, once given.
type stdinReader struct{ s *startedCommand }

func (r stdinReader) Read(p []byte) (int, error) {
	r.s.await()
	return r.s.input.Read(p)
}

// run hands the instance its batch and waits for it to end. It reports
// false, having run nothing, when the instance ended before it waited for
// a batch; the caller then runs the batch in a fresh instance.
func (s *startedCommand) run(ctx context.Context, iio *invocationIO, hc *hostCalls, input []byte) (bool, error) {
	stop := context.AfterFunc(ctx, func() { s.cancel(context.Cause(ctx)) })
	defer stop()
	select {
	case s.batch <- boundBatch{io: iio, hc: hc, input: input}:
	case <-s.ended:
		return false, nil
	}
	<-s.ended
	return true, s.err
}

// discard stops an instance that will run no batch and waits for it to
// end.
func (s *startedCommand) discard() {
	s.cancel(errStartedAhead)
	<-s.ended
}

// takeStarted returns an instance started ahead, with its slot, or nil.
func (f *Function) takeStarted() *startedCommand {
	select {
	case s := <-f.started:
		return s
	default:
		return nil
	}
}

// discardStarted stops the instances started ahead and frees their slots.
func (f *Function) discardStarted() {
	for f.discardOneStarted() {
	}
}

// discardOneStarted stops an instance started ahead, if there is one, and
// frees its slot; it reports whether there was.
func (f *Function) discardOneStarted() bool {
	s := f.takeStarted()
	if s == nil {
		return false
	}
	s.discard()
	<-f.slots
	return true
}
