package runtime

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/runtime/internal/abi"
)

// Invocation is one batch to run.
type Invocation struct {
	// ID identifies the invocation in logs: the engine passes the id of
	// the invocation record, so a log line's id can be looked up.
	ID string
	// Trigger says what produced the batch.
	Trigger Trigger
	// Messages are the batch; their IDs must be unique and non-empty.
	Messages []Message
}

// Trigger describes where a batch came from.
type Trigger struct {
	// Type is "queue" (webhooks feed queues), "dlq", "cron" or "invoke".
	Type string
	// Source names the queue (of a queue or dlq trigger), the cron trigger,
	// or for an invoke what was invoked ("version 3", "alias live").
	Source string
	// Name is the name of the trigger as logs show it (the guest does not
	// see it); when empty, log lines show Type:Source.
	Name string
}

// Message is one message of a batch.
type Message struct {
	// ID identifies the message in the function's output (for a queue
	// message, its sequence in decimal).
	ID string
	// Attempt is the delivery count, 1 on the first delivery.
	Attempt int
	// CreatedAt is when the message was sent.
	CreatedAt time.Time
	// Headers are the message's JSON headers; nil encodes as null.
	Headers json.RawMessage
	// Body is the message's JSON body; nil encodes as null.
	Body json.RawMessage
}

// appendInput appends the ABI v1 input document for inv to dst. It fails
// when a message has no ID, a duplicate ID or headers or a body that are
// not valid JSON.
func appendInput(dst []byte, name string, version int, inv *Invocation) ([]byte, error) {
	dst = append(dst, `{"version":1,"function":{"name":`...)
	dst = abi.AppendString(dst, name)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(version), 10)
	dst = append(dst, `},"trigger":{"type":`...)
	dst = abi.AppendString(dst, inv.Trigger.Type)
	dst = append(dst, `,"source":`...)
	dst = abi.AppendString(dst, inv.Trigger.Source)
	dst = append(dst, `},"messages":[`...)
	for i := range inv.Messages {
		m := &inv.Messages[i]
		if m.ID == "" {
			return nil, fmt.Errorf("message %d of invocation %s has no id", i, inv.ID)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = abi.AppendString(dst, m.ID)
		dst = append(dst, `,"attempt":`...)
		dst = strconv.AppendInt(dst, int64(m.Attempt), 10)
		dst = append(dst, `,"created_at":"`...)
		dst = m.CreatedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, `","headers":`...)
		var err error
		if dst, err = appendRaw(dst, m.Headers); err != nil {
			return nil, fmt.Errorf("headers of message %s: %w", m.ID, err)
		}
		dst = append(dst, `,"body":`...)
		if dst, err = appendRaw(dst, m.Body); err != nil {
			return nil, fmt.Errorf("body of message %s: %w", m.ID, err)
		}
		dst = append(dst, '}')
	}
	if err := uniqueIDs(inv); err != nil {
		return nil, err
	}
	return append(dst, "]}"...), nil
}

// appendRaw appends a JSON value, null for an empty one.
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("not valid JSON: %s", abi.Snippet(raw))
	}
	return append(dst, raw...), nil
}

// uniqueIDs checks that no two messages share an ID (quadratic below 16
// messages, where a map costs more).
func uniqueIDs(inv *Invocation) error {
	ms := inv.Messages
	if len(ms) < 16 {
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				if ms[i].ID == ms[j].ID {
					return fmt.Errorf("message id %s appears twice in invocation %s", ms[i].ID, inv.ID)
				}
			}
		}
		return nil
	}
	seen := make(map[string]struct{}, len(ms))
	for i := range ms {
		if _, dup := seen[ms[i].ID]; dup {
			return fmt.Errorf("message id %s appears twice in invocation %s", ms[i].ID, inv.ID)
		}
		seen[ms[i].ID] = struct{}{}
	}
	return nil
}
