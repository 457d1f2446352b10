package runtime

import (
	"encoding/json"
	"fmt"
	"time"
)

// Outcome is what happens to one message after an invocation.
type Outcome int

const (
	// Acked: the message was processed; delete it.
	Acked Outcome = iota
	// Retry: deliver the message again after MessageResult.RetryAfter
	// (counting toward the queue's receive limit). When the whole batch
	// failed, RetryAfter is 0 and the caller picks the backoff.
	Retry
	// Permanent: move the message to the dead-letter queue now.
	Permanent
)

// String returns "acked", "retry" or "permanent".
func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Retry:
		return "retry"
	case Permanent:
		return "permanent"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// MessageResult is the outcome of one message.
type MessageResult struct {
	// ID is the message's Invocation ID.
	ID string
	// Outcome says what to do with the message.
	Outcome Outcome
	// RetryAfter is the delay the function asked for (whole seconds).
	RetryAfter time.Duration
	// Error is why the message failed ("" when acked): the function's text
	// for a per-message failure, the batch failure's message otherwise.
	Error string
}

// FailureKind classifies a whole-batch failure.
type FailureKind string

// The whole-batch failure kinds. Each fails every message of the batch.
const (
	// FailureExit: the module exited with a non-zero status (a Go panic
	// exits with 2).
	FailureExit FailureKind = "exit_code"
	// FailureTrap: the module trapped (unreachable, out-of-bounds access,
	// stack exhausted, ...).
	FailureTrap FailureKind = "trap"
	// FailureTimeout: the batch ran past the function's timeout.
	FailureTimeout FailureKind = "timeout"
	// FailureCanceled: the caller's context ended while the batch ran.
	FailureCanceled FailureKind = "canceled"
	// FailureMemoryLimit: the module failed after being refused memory
	// beyond its limit.
	FailureMemoryLimit FailureKind = "memory_limit"
	// FailureOutputTooLarge: the output exceeded the function's stdout cap.
	FailureOutputTooLarge FailureKind = "output_too_large"
	// FailureInvalidOutput: the output is not valid ABI output JSON.
	FailureInvalidOutput FailureKind = "invalid_output"
	// FailureUnknownItem: the output names an itemIdentifier that is not
	// in the batch.
	FailureUnknownItem FailureKind = "unknown_item"
)

// overran reports whether a failure of this kind means the guest ran into
// a resource limit (time, memory or output), which confines its function
// for a while (see Function.Invoke).
func (k FailureKind) overran() bool {
	return k == FailureTimeout || k == FailureMemoryLimit || k == FailureOutputTooLarge
}

// BatchFailure describes why a whole batch failed.
type BatchFailure struct {
	// Kind classifies the failure.
	Kind FailureKind
	// ExitCode is the module's exit status for FailureExit (else 0).
	ExitCode uint32
	// Message is one line fit for a log and a dead-letter row, such as
	// "exit_code: exited with status 2: panic: boom".
	Message string
}

// Error returns the failure's message.
func (f *BatchFailure) Error() string { return f.Message }

// Result is the outcome of one invocation.
type Result struct {
	// Messages holds one entry per input message, in input order.
	Messages []MessageResult
	// Failure is set when the whole batch failed; every message is then
	// marked Retry with RetryAfter 0.
	Failure *BatchFailure
	// Duration is the wall-clock time of the invocation, from taking an
	// instance to reading its output.
	Duration time.Duration
	// Startup is the part of Duration before the guest first read its
	// batch: waiting for a long slot (a confined function), instantiation
	// and _initialize for a new reactor instance, instantiation and the
	// language runtime's start for a fresh command instance; next to
	// nothing for a pooled reactor or a command started ahead (see
	// Function.Invoke). Zero if the guest never read its batch.
	Startup time.Duration
	// Stderr is what the function wrote to stderr, capped at the function's
	// MaxStderrBytes (a marker line notes any dropped bytes).
	Stderr []byte
	// Emits are the messages the output asks to send when the batch
	// settles (ABI v1.1), in output order; nil when Failure is set. Their
	// shape is checked here; whether the function may send them (its
	// capabilities, the targets' existence and limits) is the caller's.
	Emits []Emit
	// Host counts the invocation's host calls (HTTP, key-value).
	Host HostStats
}

// Emit is one message a function asks to send: to Queue, or published to
// Topic (exactly one is set).
type Emit struct {
	Queue, Topic string
	// Body is the message body (any JSON value); Headers a JSON object or
	// nil.
	Body, Headers json.RawMessage
	// Delay keeps a queue message delayed (whole seconds).
	Delay time.Duration
	// DedupKey, when set, makes a repeat send within the queue's dedup
	// window a no-op.
	DedupKey string
	// Group, when set, puts a queue message into an ordered group.
	Group string
	// For is the id of the batch message the emit belongs to: it is sent
	// only if that message succeeds. "" sends it whenever the batch settles
	// without a whole-batch failure.
	For string
}

// Target names where e goes: "queue NAME" or "topic NAME".
func (e Emit) Target() string {
	if e.Topic != "" {
		return "topic " + e.Topic
	}
	return "queue " + e.Queue
}

// OK reports whether the batch ran to completion and every message was
// acked.
func (r Result) OK() bool {
	if r.Failure != nil {
		return false
	}
	for _, m := range r.Messages {
		if m.Outcome != Acked {
			return false
		}
	}
	return true
}

// Count returns how many messages have outcome o.
func (r Result) Count(o Outcome) int {
	n := 0
	for _, m := range r.Messages {
		if m.Outcome == o {
			n++
		}
	}
	return n
}
