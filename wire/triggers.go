package wire

import (
	"encoding/json"
	"time"
)

// Trigger runs a function on batches of a queue (or its DLQ), or on a cron
// schedule; Kind is "queue" or "cron". It is the body of a PUT of a
// trigger, where zero fields take the server's defaults, and what a
// client holds of a listed one (the listing is TriggerInfo, with the same
// JSON names).
type Trigger struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Function string `json:"function,omitempty"`
	Alias    string `json:"alias,omitempty"`

	Queue            string `json:"queue,omitempty"`
	DLQ              bool   `json:"dlq,omitempty"`
	BatchSize        int    `json:"batch_size,omitempty"`
	BatchWindowMS    int64  `json:"batch_window_ms,omitempty"`
	Concurrency      int    `json:"concurrency,omitempty"`
	AckPolicy        string `json:"ack_policy,omitempty"`
	BackoffInitialMS int64  `json:"backoff_initial_ms,omitempty"`
	BackoffMaxMS     int64  `json:"backoff_max_ms,omitempty"`
	// LeaseExtension keeps extending the leases of a running batch (nil:
	// true).
	LeaseExtension *bool `json:"lease_extension,omitempty"`

	CronSpec string `json:"cron_spec,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	// EnqueueBody, for a cron trigger, is sent to Queue at each tick
	// instead of invoking a function.
	EnqueueBody json.RawMessage `json:"enqueue_body,omitempty"`

	// Enabled runs the trigger (nil: true).
	Enabled *bool `json:"enabled,omitempty"`
	// Source is who owns it: "api" (the default) or "manifest".
	Source string `json:"source,omitempty"`
	// UpdatedAt is set by the server in a listing; a PUT must leave it
	// zero.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// TriggerInfo is a trigger as the server lists it, every setting written.
type TriggerInfo struct {
	Name             string          `json:"name"`
	Kind             string          `json:"kind"`
	Function         string          `json:"function,omitempty"`
	Alias            string          `json:"alias,omitempty"`
	Queue            string          `json:"queue,omitempty"`
	DLQ              bool            `json:"dlq"`
	BatchSize        int             `json:"batch_size"`
	BatchWindowMS    int64           `json:"batch_window_ms"`
	Concurrency      int             `json:"concurrency"`
	AckPolicy        string          `json:"ack_policy,omitempty"`
	BackoffInitialMS int64           `json:"backoff_initial_ms"`
	BackoffMaxMS     int64           `json:"backoff_max_ms"`
	LeaseExtension   bool            `json:"lease_extension"`
	CronSpec         string          `json:"cron_spec,omitempty"`
	Timezone         string          `json:"timezone,omitempty"`
	EnqueueBody      json.RawMessage `json:"enqueue_body,omitempty"`
	Enabled          bool            `json:"enabled"`
	Source           string          `json:"source"`
	UpdatedAt        time.Time       `json:"updated_at"`
}

// TriggerList answers a list of triggers.
type TriggerList struct {
	Triggers []TriggerInfo `json:"triggers"`
	// Next, when set, is the after of the next page; absent on the last page.
	Next string `json:"next,omitempty"`
}

// PutTriggerResult answers a PUT of a trigger: whether anything changed.
type PutTriggerResult struct {
	Changed bool   `json:"changed"`
	Name    string `json:"name"`
}

// Invocation is one run of a function on one batch.
type Invocation struct {
	ID       int64  `json:"id"`
	Function string `json:"function"`
	Version  int    `json:"version"`
	// TriggerID is the trigger's id, nil for an invocation no trigger
	// made.
	TriggerID *int64 `json:"trigger_id"`
	// Trigger is the name the invocation was recorded under: the
	// trigger's name (kept after the trigger is deleted), or "invoke" for
	// a call of the invoke API. The trigger= filter takes it back.
	Trigger     string    `json:"trigger"`
	TriggerType string    `json:"trigger_type"`
	Source      string    `json:"source"`
	BatchSize   int       `json:"batch_size"`
	StartedAt   time.Time `json:"started_at"`
	DurationMS  float64   `json:"duration_ms"`
	// Outcome is success, partial_failure or failure.
	Outcome     string `json:"outcome"`
	FailureKind string `json:"failure_kind,omitempty"`
	Error       string `json:"error,omitempty"`
	Acked       int    `json:"acked"`
	Retried     int    `json:"retried"`
	Dead        int    `json:"dead"`
	// Emitted counts the messages the invocation emitted (ABI v1.1), sent
	// in the transaction that settled it.
	Emitted    int     `json:"emitted"`
	MessageIDs []int64 `json:"message_ids"`
	Stderr     string  `json:"stderr,omitempty"`
	// HTTPRequests, HTTPErrors, HTTPBytesSent and HTTPBytesReceived count
	// the invocation's calls through the outbound HTTP host import (ABI
	// v1.1); left out when zero.
	HTTPRequests      int   `json:"http_requests,omitempty"`
	HTTPErrors        int   `json:"http_errors,omitempty"`
	HTTPBytesSent     int64 `json:"http_bytes_sent,omitempty"`
	HTTPBytesReceived int64 `json:"http_bytes_received,omitempty"`
	// Emits are the messages the invocation emitted, in output order; only
	// GET of one invocation has them (absent from lists and when none).
	Emits []EmittedMessage `json:"emits,omitempty"`
}

// EmittedMessage is one message an invocation emitted: sent to Queue as
// message Sequence, or published to Topic as Copies copies; For is the id
// of the batch message it was for (absent: for the batch).
type EmittedMessage struct {
	Queue    string `json:"queue,omitempty"`
	Sequence *int64 `json:"sequence,omitempty"`
	Topic    string `json:"topic,omitempty"`
	Copies   *int   `json:"copies,omitempty"`
	For      string `json:"for,omitempty"`
}

// InvocationList answers a list of invocations, newest first.
type InvocationList struct {
	Invocations []Invocation `json:"invocations"`
	// Next, when set, is the before_id of the next page; absent on the last page.
	Next string `json:"next,omitempty"`
}

// SetTriggerEnabledResult answers POST .../triggers/{name}/enable and
// .../disable: the trigger's state now and whether the call changed it.
type SetTriggerEnabledResult struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	Changed bool   `json:"changed"`
}
