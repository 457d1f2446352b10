package wire

import (
	"encoding/json"
	"time"
)

// Message is a message as received or peeked.
type Message struct {
	Sequence int64           `json:"sequence"`
	Body     json.RawMessage `json:"body"`
	// Headers is a JSON object, or null.
	Headers      json.RawMessage `json:"headers"`
	CreatedAt    time.Time       `json:"created_at"`
	ReceiveCount int             `json:"receive_count"`
	VisibleAt    time.Time       `json:"visible_at"`
	// Receipt is the lease token of a received message ("" when peeked);
	// pass it to a delete or a visibility change to fence a stale lease.
	Receipt string `json:"receipt,omitempty"`
	// Group is the message's ordered group; left out when it has none.
	Group string `json:"group,omitempty"`
}

// DeadLetter is a message in a dead-letter queue.
type DeadLetter struct {
	Sequence     int64           `json:"sequence"`
	Body         json.RawMessage `json:"body"`
	Headers      json.RawMessage `json:"headers"`
	CreatedAt    time.Time       `json:"created_at"`
	ReceiveCount int             `json:"receive_count"`
	FailedAt     time.Time       `json:"failed_at"`
	// Reason says why it died, e.g. max_receive_count or permanent.
	Reason    string `json:"reason"`
	LastError string `json:"last_error"`
	// Group is the message's ordered group; left out when it has none.
	Group string `json:"group,omitempty"`
}

// MessageList answers a receive or a peek. A peek's Next, when set, is
// the after of the next page: more messages may follow (the page is
// full, or reached the bytes a page holds); a page without it is the last.
type MessageList struct {
	Messages []Message `json:"messages"`
	Next     int64     `json:"next,omitempty"`
}

// DeadLetterList answers a read of a dead-letter queue; Next as in
// MessageList.
type DeadLetterList struct {
	Messages []DeadLetter `json:"messages"`
	Next     int64        `json:"next,omitempty"`
}

// SendResult answers the send of one message (a JSON object body).
type SendResult struct {
	Sequence int64 `json:"sequence"`
}

// SendBatchResult answers the send of a batch (a JSON array body): the
// sequences in the batch's order.
type SendBatchResult struct {
	Sequences []int64 `json:"sequences"`
}

// SendEntry is one message of a SendEntriesRequest with its own options;
// zero options take the queue's defaults.
type SendEntry struct {
	// Body is the message body, any JSON value but null (required).
	Body json.RawMessage `json:"body"`
	// Headers are the message's attributes, string values only.
	Headers map[string]string `json:"headers,omitempty"`
	// DelaySeconds keeps the message invisible that long (0 to 43200).
	DelaySeconds int `json:"delay_seconds,omitempty"`
	// ExpiresInSeconds is the message's time to live (1 to 1209600; 0:
	// none): it is never delivered after it.
	ExpiresInSeconds int `json:"expires_in_seconds,omitempty"`
	// DedupKey makes a repeat send with the same key within the queue's
	// dedup window return the first sequence (1 to 128 characters).
	DedupKey string `json:"dedup_key,omitempty"`
	// Group puts the message into an ordered group (1 to 128 characters):
	// a group's messages are delivered in order, one at a time.
	Group string `json:"group,omitempty"`
}

// SendEntriesRequest is the body of a send of entries (1 to 1000), each
// with its own options; it is answered with a SendBatchResult.
type SendEntriesRequest struct {
	Entries []SendEntry `json:"entries"`
}

// ReceiveRequest is the body of a receive; zero fields take the server's
// defaults.
type ReceiveRequest struct {
	// Delete deletes the messages in the statement that receives them
	// (at most once); they come back without a receipt.
	Delete bool `json:"delete,omitempty"`
	// MaxMessages is how many messages to claim at most (1 to 10).
	MaxMessages int `json:"max_messages"`
	// VisibilityTimeoutSeconds is the lease (0: the queue's).
	VisibilityTimeoutSeconds int `json:"visibility_timeout_seconds,omitempty"`
	// WaitSeconds long-polls that long for a first message (0 to 20).
	WaitSeconds int `json:"wait_seconds,omitempty"`
}

// VisibilityRequest is the body of a visibility change.
type VisibilityRequest struct {
	// Receipt, when set, fences the change to that lease.
	Receipt string `json:"receipt,omitempty"`
	// Seconds until the message is visible again (0: now).
	Seconds int `json:"seconds"`
}

// PurgeResult answers a purge of a queue or of its DLQ.
type PurgeResult struct {
	Purged int64 `json:"purged"`
}

// RedriveRequest is the body of a redrive: either MaxMessages (0: all) or
// Sequences, not both.
type RedriveRequest struct {
	MaxMessages int     `json:"max_messages,omitempty"`
	Sequences   []int64 `json:"sequences,omitempty"`
}

// RedriveResult answers a redrive: how many dead letters moved.
type RedriveResult struct {
	Redriven int64 `json:"redriven"`
}
