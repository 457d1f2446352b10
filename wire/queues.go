package wire

import "time"

// Queue is a queue's settings, with its counts when asked for.
type Queue struct {
	Name                     string `json:"name"`
	VisibilityTimeoutSeconds int    `json:"visibility_timeout_seconds"`
	MaxReceiveCount          int    `json:"max_receive_count"`
	DelaySeconds             int    `json:"delay_seconds"`
	RetentionSeconds         int    `json:"retention_seconds"`
	MaxMessageBytes          int    `json:"max_message_bytes"`
	DedupWindowSeconds       int    `json:"dedup_window_seconds"`
	// RequireReceipt: a leased message is deleted only with its receipt.
	// Left out when false.
	RequireReceipt bool `json:"require_receipt,omitempty"`
	// DeadLetterQueue names the queue that receives this queue's dead
	// letters as messages; "" (left out) when they go to its DLQ table.
	DeadLetterQueue string `json:"dead_letter_queue,omitempty"`
	// Fifo: every message sent needs a group. Left out when false.
	Fifo      bool      `json:"fifo,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Stats holds the counts: on a get, and in a list asked for live.
	Stats *QueueStats `json:"stats,omitempty"`
}

// QueueStats counts a queue's messages.
type QueueStats struct {
	Ready                 int64   `json:"ready"`
	Inflight              int64   `json:"inflight"`
	Delayed               int64   `json:"delayed"`
	DLQ                   int64   `json:"dlq"`
	OldestReadyAgeSeconds float64 `json:"oldest_ready_age_seconds"`
	// GroupedWaiting counts messages waiting behind their group's head.
	GroupedWaiting int64 `json:"grouped_waiting,omitempty"`
	// Groups counts groups with messages; GroupsInflight those whose head
	// is leased; GroupsBlocked those held back by a head that failed at
	// least once. Left out when zero.
	Groups         int64 `json:"groups,omitempty"`
	GroupsInflight int64 `json:"groups_inflight,omitempty"`
	GroupsBlocked  int64 `json:"groups_blocked,omitempty"`
	// Bytes and DLQBytes are the size of the bodies and headers of the
	// queue's messages and of its dead letters as stored: what counts
	// against the account's limit of message bytes.
	Bytes    int64 `json:"bytes"`
	DLQBytes int64 `json:"dlq_bytes"`
}

// QueueList answers a list of queues.
type QueueList struct {
	Queues []Queue `json:"queues"`
	// Next, when set, is the after of the next page; absent on the last page.
	Next string `json:"next,omitempty"`
}

// QueueSettings are the settings a queue is created with or changed to
// (the body of a PATCH); nil fields keep the default (create) or the
// current value (update).
type QueueSettings struct {
	// VisibilityTimeoutSeconds is the default lease (0 to 43200; 30).
	VisibilityTimeoutSeconds *int `json:"visibility_timeout_seconds,omitempty"`
	// MaxReceiveCount is how many deliveries before the DLQ (1 to 1000; 5).
	MaxReceiveCount *int `json:"max_receive_count,omitempty"`
	// DelaySeconds delays every message sent (0 to 43200; 0).
	DelaySeconds *int `json:"delay_seconds,omitempty"`
	// RetentionSeconds is how long messages are kept (60 to 1209600; 345600).
	RetentionSeconds *int `json:"retention_seconds,omitempty"`
	// MaxMessageBytes bounds a body's JSON size (1 to 1048576; 262144).
	MaxMessageBytes *int `json:"max_message_bytes,omitempty"`
	// DedupWindowSeconds is how long a dedup key counts (0 to 86400; 300).
	DedupWindowSeconds *int `json:"dedup_window_seconds,omitempty"`
	// DeadLetterQueue names another queue of the account that receives
	// this queue's dead letters as new messages; "" sends them to the
	// queue's dead-letter table again (the default).
	DeadLetterQueue *string `json:"dead_letter_queue,omitempty"`
	// Fifo requires a group on every message sent (false).
	Fifo *bool `json:"fifo,omitempty"`
}

// CreateQueueRequest is the body of a queue's creation.
type CreateQueueRequest struct {
	Name string `json:"name"`
	QueueSettings
}

// MinuteStats is one minute of a queue's statistics.
type MinuteStats struct {
	// Minute is the start of the minute (UTC).
	Minute time.Time `json:"minute"`
	// Sends, Acks and DLQMoves count the messages sent, deleted after
	// being received and moved to the DLQ in the minute. Sends and acks
	// made with the SQL functions from other database sessions are not
	// counted (see docs/http-api.md).
	Sends    int64 `json:"sends"`
	Acks     int64 `json:"acks"`
	DLQMoves int64 `json:"dlq_moves"`
	// Ready, Inflight, Delayed and DLQ are the depth sampled in the
	// minute, nil when no sample was taken.
	Ready    *int64 `json:"ready"`
	Inflight *int64 `json:"inflight"`
	Delayed  *int64 `json:"delayed"`
	DLQ      *int64 `json:"dlq"`
}

// MinuteStatsList answers a queue's statistics: one entry per minute,
// oldest first.
type MinuteStatsList struct {
	Minutes []MinuteStats `json:"minutes"`
	Queue   string        `json:"queue"`
}
