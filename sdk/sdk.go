package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Handler processes one batch and reports the messages that failed; every
// message it does not list is acked.
type Handler func(ctx Context, b Batch) Result

// Batch is one invocation's input: the messages and where they came from.
type Batch struct {
	// Version is the ABI version, 1.
	Version int `json:"version"`
	// Function names the function and version being run.
	Function Function `json:"function"`
	// Trigger says what produced the batch.
	Trigger Trigger `json:"trigger"`
	// Messages are the batch's messages, in delivery order.
	Messages []Message `json:"messages"`
}

// Function identifies the deployed function being invoked.
type Function struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// Trigger describes the source of a batch.
type Trigger struct {
	// Type is "queue" (webhooks feed queues), "dlq", "cron" or "invoke".
	Type string `json:"type"`
	// Source is the queue, or the cron trigger's name; for an invoke, what
	// was invoked ("version 3", "alias live"; "local" for sluice invoke).
	Source string `json:"source"`
}

// Message is one message of a batch.
type Message struct {
	// ID identifies the message within the batch; report failures with it.
	ID string `json:"id"`
	// Attempt is 1 on the first delivery and grows with every retry.
	Attempt int `json:"attempt"`
	// CreatedAt is when the message was sent.
	CreatedAt time.Time `json:"created_at"`
	// Headers holds the message's JSON headers (null when it has none).
	Headers json.RawMessage `json:"headers"`
	// Body is the message's JSON body.
	Body json.RawMessage `json:"body"`
}

// Decode unmarshals the message body into v.
func (m Message) Decode(v any) error {
	if err := json.Unmarshal(m.Body, v); err != nil {
		return fmt.Errorf("decode message %s: %w", m.ID, err)
	}
	return nil
}

// DecodeHeaders unmarshals the message headers into v.
func (m Message) DecodeHeaders(v any) error {
	if len(m.Headers) == 0 {
		return nil
	}
	if err := json.Unmarshal(m.Headers, v); err != nil {
		return fmt.Errorf("decode headers of message %s: %w", m.ID, err)
	}
	return nil
}

// Result lists the messages of a batch that failed and the messages the
// batch emits. The zero Result acks the whole batch and emits nothing.
type Result struct {
	// Failures are the failed messages; a message listed twice keeps its
	// last entry.
	Failures []Failure
	// Emits are the messages to send when the batch settles (ABI v1.1),
	// in the same transaction as its acks. Add them with Emit and
	// EmitTopic.
	Emits []Emit
}

// Emit is a message to send to a queue (Queue) or publish to a topic
// (Topic) when the batch settles. The function's manifest must allow the
// target (emits: [pattern, ...]); otherwise the whole batch fails with
// invalid_output.
type Emit struct {
	// Queue or Topic names the target: set exactly one.
	Queue, Topic string
	// Body is the message body, marshaled with encoding/json (a
	// json.RawMessage is sent as is).
	Body any
	// Headers are the message's headers (optional).
	Headers map[string]string
	// Delay keeps a queue message delayed (whole seconds, rounded up).
	Delay time.Duration
	// DedupKey makes a repeat send to the queue within its dedup window a
	// no-op.
	DedupKey string
	// Group puts a queue message into an ordered group (1 to 128
	// characters): a group's messages are delivered in order, one at a
	// time. Required by a fifo queue.
	Group string
	// For is the ID of the batch message the emit belongs to: it is sent
	// only if that message succeeds. Without it, the emit is sent when the
	// batch settles without failing as a whole.
	For string
}

// Emit adds a message to send when the batch settles, e.g.
// res.Emit(sdk.Emit{Queue: "shipped", Body: order, For: m.ID}).
func (r *Result) Emit(e Emit) { r.Emits = append(r.Emits, e) }

// EmitTopic adds a message to publish to topic when the message with ID
// forID succeeds ("" when the batch settles without failing as a whole).
func (r *Result) EmitTopic(topic string, body any, forID string) {
	r.Emits = append(r.Emits, Emit{Topic: topic, Body: body, For: forID})
}

// Failure reports one failed message.
type Failure struct {
	// ID is the message's ID.
	ID string
	// RetryAfter delays the next delivery (whole seconds; 0 retries now).
	RetryAfter time.Duration
	// Permanent moves the message to the dead-letter queue at once.
	Permanent bool
	// Err says why; it is logged and kept with a dead message.
	Err error
}

// Retry marks message id as failed, to be delivered again after the delay;
// every retry counts toward the queue's receive limit.
func (r *Result) Retry(id string, after time.Duration, err error) {
	r.Failures = append(r.Failures, Failure{ID: id, RetryAfter: after, Err: err})
}

// Permanent marks message id as failed for good: it moves to the
// dead-letter queue without further attempts.
func (r *Result) Permanent(id string, err error) {
	r.Failures = append(r.Failures, Failure{ID: id, Permanent: true, Err: err})
}

// Retry returns a Result failing one message with a retry delay.
func Retry(id string, after time.Duration, err error) Result {
	var r Result
	r.Retry(id, after, err)
	return r
}

// Permanent returns a Result failing one message permanently.
func Permanent(id string, err error) Result {
	var r Result
	r.Permanent(id, err)
	return r
}

// wireFailure is a Failure as the host reads it.
type wireFailure struct {
	ItemIdentifier    string `json:"itemIdentifier"`
	RetryAfterSeconds int64  `json:"retryAfterSeconds,omitempty"`
	Permanent         bool   `json:"permanent,omitempty"`
	Error             string `json:"error,omitempty"`
}

// wireEmit is an Emit as the host reads it.
type wireEmit struct {
	Queue        string            `json:"queue,omitempty"`
	Topic        string            `json:"topic,omitempty"`
	Body         any               `json:"body"`
	Headers      map[string]string `json:"headers,omitempty"`
	DelaySeconds int64             `json:"delay_seconds,omitempty"`
	DedupKey     string            `json:"dedup_key,omitempty"`
	Group        string            `json:"group,omitempty"`
	For          string            `json:"for,omitempty"`
}

// marshal encodes the result as ABI output; an empty result encodes to nil.
// An emit body that cannot be marshaled makes an output the host refuses
// (invalid_output), quoting the error.
func (r Result) marshal() []byte {
	if len(r.Failures) == 0 && len(r.Emits) == 0 {
		return nil
	}
	out := struct {
		BatchItemFailures []wireFailure `json:"batchItemFailures,omitempty"`
		Emit              []wireEmit    `json:"emit,omitempty"`
	}{BatchItemFailures: make([]wireFailure, 0, len(r.Failures))}
	for i, e := range r.Emits {
		w := wireEmit{Queue: e.Queue, Topic: e.Topic, Body: e.Body, Headers: e.Headers, DedupKey: e.DedupKey, Group: e.Group, For: e.For}
		if e.Delay > 0 {
			w.DelaySeconds = int64((e.Delay + time.Second - 1) / time.Second)
		}
		if _, err := json.Marshal(e.Body); err != nil {
			// Not JSON, so the host refuses it and quotes it.
			return fmt.Appendf(nil, "sdk: emit %d to %s%s: body: %v", i, e.Queue, e.Topic, err)
		}
		out.Emit = append(out.Emit, w)
	}
	for _, f := range r.Failures {
		w := wireFailure{ItemIdentifier: f.ID, Permanent: f.Permanent}
		if f.RetryAfter > 0 {
			w.RetryAfterSeconds = int64((f.RetryAfter + time.Second - 1) / time.Second)
		}
		if f.Err != nil {
			w.Error = f.Err.Error()
		}
		out.BatchItemFailures = append(out.BatchItemFailures, w)
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen: only strings, ints and bools
		panic(err)
	}
	return b
}

var (
	handler Handler
	// reactor is set while the SDK runs main in a reactor build, so Handle
	// only records the handler.
	reactor bool
)

// Handle registers h as the function's handler. In a command build it also
// reads the batch from stdin, runs h and writes the result to stdout before
// returning; a batch that cannot be read makes the process exit with
// status 1. In a reactor build it only records h.
func Handle(h Handler) {
	if h == nil {
		panic("sdk: Handle called with a nil handler")
	}
	handler = h
	if reactor {
		return
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		err = fmt.Errorf("read batch from stdin: %w", err)
	} else {
		var out []byte
		out, err = run(in)
		if err == nil && len(out) > 0 {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice sdk: %v\n", err)
		os.Exit(1)
	}
}

// run decodes a batch, runs the handler and encodes its result.
func run(in []byte) ([]byte, error) {
	if handler == nil {
		return nil, errors.New("no handler registered (call sdk.Handle)")
	}
	var b Batch
	if err := decodeBatch(in, &b); err != nil {
		return nil, fmt.Errorf("decode batch: %w", err)
	}
	ctx := Context{Function: b.Function, Trigger: b.Trigger}
	return handler(ctx, b).marshal(), nil
}
