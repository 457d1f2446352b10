package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// maxEmitBytes caps the bodies and headers a batch emits in all.
const maxEmitBytes = 4 << 20

// checkEmits says whether a function whose capabilities allow emitting to
// the targets matching patterns may send emits: each target must match a
// pattern (path.Match: "orders-*", "audit"), and the bodies and headers
// must total at most maxEmitBytes (the runtime already caps their number).
// The error is the invalid_output message naming the target and the rule.
// Whether a queue exists and takes a message of that size, the database
// says when the emits are sent.
func checkEmits(patterns []string, emits []runtime.Emit) error {
	total := 0
	for i, e := range emits {
		if !allowed(patterns, e) {
			rule := "the function's manifest declares no emits"
			if len(patterns) > 0 {
				rule = "it matches none of the function's emits patterns " + strings.Join(patterns, ", ")
			}
			return fmt.Errorf("invalid_output: emit[%d] to %s is not allowed: %s", i, e.Target(), rule)
		}
		total += len(e.Body) + len(e.Headers)
		if total > maxEmitBytes {
			return fmt.Errorf("invalid_output: emit[%d] to %s is over the limit of %d bytes of emitted bodies and headers per batch", i, e.Target(), maxEmitBytes)
		}
	}
	return nil
}

func allowed(patterns []string, e runtime.Emit) bool {
	name := e.Queue + e.Topic
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// emitRefusal turns the queue core's refusal of an emit (the queue or
// topic does not exist, a message is too large, an argument is out of
// range, the account is at its stored bytes limit) into the
// invalid_output message the batch fails with; any other error gives "".
func emitRefusal(err error) string {
	qe, ok := pgqueue.AsError(err)
	if !ok {
		return ""
	}
	for _, kind := range []error{pgqueue.ErrQueueNotFound, pgqueue.ErrTopicNotFound, pgqueue.ErrMessageTooLarge, pgqueue.ErrInvalidArgument,
		pgqueue.ErrStoredBytesLimit} {
		if errors.Is(qe, kind) {
			return "invalid_output: emit refused: " + strings.TrimPrefix(qe.Message, "pgqueue: ")
		}
	}
	return ""
}

// selectEmits returns the emits that go out: none after a whole-batch
// failure; else those without For, and those For a message in succeeded.
func selectEmits(res runtime.Result, succeeded func(id string) bool) []runtime.Emit {
	if res.Failure != nil || len(res.Emits) == 0 {
		return nil
	}
	var out []runtime.Emit
	for _, e := range res.Emits {
		if e.For == "" || succeeded(e.For) {
			out = append(out, e)
		}
	}
	return out
}

// succeeded returns whether the message with an id of res succeeded.
func succeeded(res runtime.Result) func(id string) bool {
	out := make(map[string]bool, len(res.Messages))
	for _, m := range res.Messages {
		out[m.ID] = m.Outcome == runtime.Acked
	}
	return func(id string) bool { return out[id] }
}

// queueEmits adds emits to b: one send per queue (in emit order within
// it), one publish per topic emit.
func queueEmits(b *pgqueue.Batch, account string, emits []runtime.Emit) {
	var order []string
	byQueue := map[string][]pgqueue.NewMessage{}
	for _, e := range emits {
		if e.Topic != "" {
			b.Publish(account, e.Topic, e.Body, e.Headers, nil)
			continue
		}
		if _, ok := byQueue[e.Queue]; !ok {
			order = append(order, e.Queue)
		}
		byQueue[e.Queue] = append(byQueue[e.Queue], pgqueue.NewMessage{Body: e.Body, Headers: e.Headers,
			Delay: e.Delay, DedupKey: e.DedupKey, Group: e.Group})
	}
	for _, q := range order {
		b.Send(account, q, byQueue[q])
	}
}

// failBatch makes res a whole-batch invalid_output failure with message
// msg, as if the function's output had been refused by the runtime.
func failBatch(res runtime.Result, msg string) runtime.Result {
	res.Failure = &runtime.BatchFailure{Kind: runtime.FailureInvalidOutput, Message: msg}
	res.Emits = nil
	msgs := make([]runtime.MessageResult, len(res.Messages))
	for i, m := range res.Messages {
		msgs[i] = runtime.MessageResult{ID: m.ID, Outcome: runtime.Retry, Error: msg}
	}
	res.Messages = msgs
	return res
}

// recordArgs are the arguments of insert_invocation.
func (r *invocationRecord) args() []any {
	stderr, failureKind, errText := r.texts()
	ids := r.messageIDs
	if ids == nil {
		ids = []int64{}
	}
	var emits any // the emits sent, for emitted_messages: {"queue"|"topic", "for"}
	if len(r.emits) > 0 {
		list := make([]emittedMessage, len(r.emits))
		for i, e := range r.emits {
			list[i] = emittedMessage{Queue: e.Queue, Topic: e.Topic, For: e.For}
		}
		b, _ := json.Marshal(list) // plain strings: cannot fail
		emits = string(b)
	}
	return []any{r.id, r.account, r.function, r.version, nullIfZero(r.triggerID), r.triggerType, r.source,
		r.batchSize, r.startedAt, r.durationMS(), r.outcome,
		failureKind, errText, r.acked, r.retried, r.dead, r.emitted, ids, stderr,
		r.host.HTTPRequests, r.host.HTTPErrors, r.host.HTTPBytesSent, r.host.HTTPBytesReceived, r.trigger, emits, pgqueue.SentSetting}
}

// texts returns the record's nullable text columns as stored: stderr
// (capped, valid UTF-8 without NUL bytes), failure_kind and error, nil
// when empty.
func (r *invocationRecord) texts() (stderr, failureKind, errText *string) {
	if len(r.stderr) > 0 {
		// text columns take neither NUL bytes nor invalid UTF-8
		text := strings.ToValidUTF8(string(r.stderr[:min(len(r.stderr), maxRecordedStderr)]), "\uFFFD")
		text = strings.ReplaceAll(text, "\x00", "")
		stderr = &text
	}
	if r.failureKind != "" {
		failureKind = &r.failureKind
	}
	if r.err != "" {
		errText = &r.err
	}
	return stderr, failureKind, errText
}

// durationMS is the record's duration_ms.
func (r *invocationRecord) durationMS() float64 { return float64(r.duration.Microseconds()) / 1000 }

// emittedMessage is an element of the invocations table's
// emitted_messages: where one emit went and, once sent, its message.
type emittedMessage struct {
	Queue    string `json:"queue,omitempty"`
	Topic    string `json:"topic,omitempty"`
	Sequence *int64 `json:"sequence,omitempty"`
	Copies   *int   `json:"copies,omitempty"`
	For      string `json:"for,omitempty"`
}

// sentNotes is, for emits sent one by one, what the sends and publishes
// of a pgqueue.Batch after NoteSent note (see pgqueue.SentSetting).
type sentNotes struct {
	queues []string
	seqs   map[string][]int64
	topics []sentTopic
}

type sentTopic struct {
	Topic  string `json:"topic"`
	Copies int    `json:"copies"`
}

func (n *sentNotes) sent(queue string, seq int64) {
	if n.seqs == nil {
		n.seqs = map[string][]int64{}
	}
	if _, ok := n.seqs[queue]; !ok {
		n.queues = append(n.queues, queue)
	}
	n.seqs[queue] = append(n.seqs[queue], seq)
}

func (n *sentNotes) published(topic string, copies int) {
	n.topics = append(n.topics, sentTopic{topic, copies})
}

func (n *sentNotes) json() string {
	out := make([]any, 0, len(n.topics)+len(n.queues))
	for _, t := range n.topics {
		out = append(out, t)
	}
	for _, q := range n.queues {
		out = append(out, map[string]any{"queue": q, "sequences": n.seqs[q]})
	}
	b, _ := json.Marshal(out)
	return string(b)
}
