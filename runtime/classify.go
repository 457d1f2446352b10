package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/sluicehq/sluice/runtime/internal/abi"
	"github.com/sluicehq/sluice/runtime/internal/guard"
)

// classify turns how a run ended into a batch failure, nil for success.
func (f *Function) classify(ctx context.Context, err error, inst *instance, iio *invocationIO) *BatchFailure {
	memHit := inst != nil && inst.mem != nil && inst.mem.hit.Load()
	if iio.overflow {
		return &BatchFailure{Kind: FailureOutputTooLarge, Message: fmt.Sprintf("output_too_large: output over the %d-byte limit", f.cfg.MaxStdoutBytes)}
	}
	if err == nil {
		if memHit && inst.mem.overStart {
			return f.memoryFailure(inst)
		}
		return nil
	}
	var abiErr *abiError
	if errors.As(err, &abiErr) {
		if memHit {
			return f.memoryFailure(inst)
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
			// wazero's statuses for a done context, but a guest can exit
			// with them too (proc_exit(0xFFFFFFFF)): only the context
			// itself says the run was stopped.
			if ctx.Err() != nil {
				return f.contextFailure(ctx)
			}
			fallthrough
		default:
			if memHit {
				return f.memoryFailure(inst)
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
		return f.memoryFailure(inst)
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

// memoryFailure is the failure of inst after it was refused memory, by its
// limit or by a budget (see memoryBudget).
func (f *Function) memoryFailure(inst *instance) *BatchFailure {
	if b := inst.mem.refused; b != nil {
		return &BatchFailure{Kind: FailureMemoryLimit, Message: "memory_limit: " + b.refusal()}
	}
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

// outcomes maps a successful run's output onto the batch's messages and
// returns the emits it asks for.
func outcomes(inv *Invocation, out []byte) ([]MessageResult, []Emit, *BatchFailure) {
	res := make([]MessageResult, len(inv.Messages))
	for i := range inv.Messages {
		res[i] = MessageResult{ID: inv.Messages[i].ID}
	}
	doc, err := abi.Parse(out)
	if err != nil {
		return nil, nil, &BatchFailure{Kind: FailureInvalidOutput, Message: "invalid_output: " + strings.TrimPrefix(err.Error(), abi.ErrInvalid.Error()+": ")}
	}
	fails := doc.Failures
	if len(fails) == 0 && len(doc.Emits) == 0 {
		return res, nil, nil
	}
	index := make(map[string]int, len(inv.Messages))
	for i := range inv.Messages {
		index[inv.Messages[i].ID] = i
	}
	var emits []Emit
	if len(doc.Emits) > 0 {
		emits = make([]Emit, len(doc.Emits))
		for i, e := range doc.Emits {
			if _, ok := index[e.For]; e.For != "" && !ok {
				return nil, nil, &BatchFailure{Kind: FailureInvalidOutput, Message: fmt.Sprintf("invalid_output: emit[%d] is for %q, which is not in the batch", i, abi.Truncate(e.For, 100))}
			}
			emits[i] = Emit{Queue: e.Queue, Topic: e.Topic, Body: e.Body, Headers: e.Headers,
				Delay: time.Duration(e.DelaySeconds) * time.Second, DedupKey: e.DedupKey, Group: e.Group, For: e.For}
		}
	}
	for _, fl := range fails {
		i, ok := index[fl.ID]
		if !ok {
			return nil, nil, &BatchFailure{Kind: FailureUnknownItem, Message: fmt.Sprintf("unknown_item: output names itemIdentifier %q, which is not in the batch", abi.Truncate(fl.ID, 100))}
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
	return res, emits, nil
}
