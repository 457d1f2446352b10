package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// Limits of one Invoke call.
const (
	// MaxInvokeMessages is how many messages one call may pass.
	MaxInvokeMessages = 100
	// MaxInvokeBodyBytes bounds each message's JSON body (and headers),
	// as a queue's default max_message_bytes bounds a sent message.
	MaxInvokeBodyBytes = 256 << 10
)

// ErrInvalidInvoke is wrapped by Invoke's errors about the request.
var ErrInvalidInvoke = errors.New("invalid invoke request")

// InvokeRequest runs a deployed function once on a batch, outside any
// trigger, the way a queue trigger would run it (Lambda's Invoke).
type InvokeRequest struct {
	Account, Function string
	// Alias picks the version (default "live"); Version, when set,
	// picks one directly. Set at most one.
	Alias   string
	Version int
	// Messages are the batch (1 to MaxInvokeMessages). Their ids in the
	// function's input are "1", "2", ... in order; each is attempt 1.
	Messages []InvokeMessage
	// DryRun runs the function without side effects: its emits are
	// returned, not sent; its key-value writes are seen by its own later
	// reads and then dropped (the stores are unchanged); its HTTP calls
	// are refused (errno denied) before they are sent. Without it, the
	// emits go out like a triggered run's: in the transaction that writes
	// the invocation record, those for failed messages dropped.
	DryRun bool
}

// InvokeMessage is one message of an InvokeRequest.
type InvokeMessage struct {
	// Body is any JSON value; Headers a JSON object or nil.
	Body, Headers json.RawMessage
}

// InvokeResult is what an Invoke did. The invocation is recorded (trigger
// InvokeTrigger) under ID, like any other.
type InvokeResult struct {
	ID       int64
	Function string
	Version  int
	// Outcome is success, partial_failure or failure; FailureKind and
	// Error say why it was not a success.
	Outcome, FailureKind, Error string
	// Messages has each message's outcome, in input order.
	Messages []runtime.MessageResult
	// Emits are what the function emitted (all of it, as it returned
	// them); Emitted counts those sent (0 for a dry run or a failure).
	Emits   []runtime.Emit
	Emitted int
	// Stderr is the function's captured stderr.
	Stderr   string
	Duration time.Duration
}

// Invoke runs a deployed function on one batch and records the invocation
// under trigger InvokeTrigger. Errors about the request wrap
// ErrInvalidInvoke; a missing function or version, functions.ErrNotFound.
// A function that fails is no error: the result says how it failed.
func (e *Engine) Invoke(ctx context.Context, req InvokeRequest) (InvokeResult, error) {
	var out InvokeResult
	if req.Alias != "" && req.Version != 0 {
		return out, fmt.Errorf("%w: give an alias or a version, not both", ErrInvalidInvoke)
	}
	if req.Version < 0 {
		return out, fmt.Errorf("%w: version %d: must be positive", ErrInvalidInvoke, req.Version)
	}
	if len(req.Messages) == 0 || len(req.Messages) > MaxInvokeMessages {
		return out, fmt.Errorf("%w: %d messages: pass 1 to %d", ErrInvalidInvoke, len(req.Messages), MaxInvokeMessages)
	}
	for i, m := range req.Messages {
		if n := len(m.Body) + len(m.Headers); n > MaxInvokeBodyBytes {
			return out, fmt.Errorf("%w: message %d is %d bytes: at most %d (body and headers)", ErrInvalidInvoke, i+1, n, MaxInvokeBodyBytes)
		}
		if len(m.Body) > 0 && !json.Valid(m.Body) || len(m.Headers) > 0 && !json.Valid(m.Headers) {
			return out, fmt.Errorf("%w: message %d: body and headers must be JSON", ErrInvalidInvoke, i+1)
		}
	}
	var v functions.Version
	var err error
	source := "version " + strconv.Itoa(req.Version)
	if req.Version > 0 {
		v, err = e.cfg.Registry.Version(ctx, req.Account, req.Function, req.Version)
	} else {
		if req.Alias == "" {
			req.Alias = functions.DefaultAlias
		}
		source = "alias " + req.Alias
		v, err = e.cfg.Registry.Resolve(ctx, req.Account, req.Function, req.Alias)
	}
	if err != nil {
		return out, err
	}
	a := &active{Trigger: Trigger{Account: req.Account, Function: req.Function, Concurrency: 1},
		version: v.Number, sha256: v.SHA256, memoryMiB: v.MemoryMiB, timeout: v.Timeout, env: v.Env, capabilities: v.Capabilities,
		dryRun: req.DryRun}
	fn, err := e.load(ctx, a)
	if err != nil {
		return out, err
	}
	defer fn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // nothing to do about it

	id, err := e.invocationID(ctx)
	if err != nil {
		return out, err
	}
	inv := runtime.Invocation{
		ID:       strconv.FormatInt(id, 10),
		Trigger:  runtime.Trigger{Type: InvokeTrigger, Source: source, Name: InvokeTrigger},
		Messages: make([]runtime.Message, len(req.Messages)),
	}
	ids := make([]int64, len(req.Messages))
	started := time.Now()
	for i, m := range req.Messages {
		ids[i] = int64(i + 1)
		inv.Messages[i] = runtime.Message{ID: strconv.Itoa(i + 1), Attempt: 1, CreatedAt: started, Headers: m.Headers, Body: m.Body}
	}
	res, err := fn.Invoke(ctx, inv)
	if err != nil {
		return out, fmt.Errorf("triggers: invoke %s version %d: %w", req.Function, v.Number, err)
	}
	if err := checkEmits(v.Capabilities.Emits, res.Emits); err != nil {
		res = failBatch(res, err.Error())
	}
	rec := invocationRecord{
		id: id, trigger: InvokeTrigger, account: req.Account, function: req.Function, version: v.Number,
		triggerType: InvokeTrigger, source: source, batchSize: len(req.Messages), startedAt: started, messageIDs: ids,
	}
	count := func(res runtime.Result) {
		rec.setResult(res)
		rec.acked, rec.retried = 0, 0
		for _, m := range res.Messages {
			if m.Outcome == runtime.Acked {
				rec.acked++
			} else {
				rec.retried++ // nothing is retried: counted as not done
			}
		}
	}
	count(res)
	emits := selectEmits(res, succeeded(res))
	if req.DryRun {
		emits = nil
	}
	err = e.commitOrRefuse(context.WithoutCancel(ctx), nil, emits, &rec, func(msg string) func(*pgqueue.Batch) {
		res = failBatch(res, msg)
		count(res)
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("triggers: invoke %s version %d: record the invocation: %w", req.Function, v.Number, err)
	}
	e.log.Debug().Str("invocation", inv.ID).Str("function", req.Function).Int("version", v.Number).
		Str("trigger", InvokeTrigger).Msg(rec.outcome)
	return InvokeResult{
		ID: id, Function: req.Function, Version: v.Number,
		Outcome: rec.outcome, FailureKind: rec.failureKind, Error: rec.err,
		Messages: res.Messages, Emits: res.Emits, Emitted: rec.emitted,
		Stderr: string(res.Stderr), Duration: res.Duration,
	}, nil
}
