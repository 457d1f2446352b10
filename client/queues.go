package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// QueuesService manages the queues of the client's account (scope
// mq:admin to change them, mq:receive to read them).
type QueuesService struct{ c *Client }

// Queue is a queue's settings, with its counts when asked for.
type Queue struct {
	Name                     string    `json:"name"`
	VisibilityTimeoutSeconds int       `json:"visibility_timeout_seconds"`
	MaxReceiveCount          int       `json:"max_receive_count"`
	DelaySeconds             int       `json:"delay_seconds"`
	RetentionSeconds         int       `json:"retention_seconds"`
	MaxMessageBytes          int       `json:"max_message_bytes"`
	DedupWindowSeconds       int       `json:"dedup_window_seconds"`
	CreatedAt                time.Time `json:"created_at"`
	UpdatedAt                time.Time `json:"updated_at"`
	// Stats holds the counts: from Get, and from List with Live.
	Stats *QueueStats `json:"stats,omitempty"`
}

// QueueStats counts a queue's messages.
type QueueStats struct {
	Ready                 int64   `json:"ready"`
	Inflight              int64   `json:"inflight"`
	Delayed               int64   `json:"delayed"`
	DLQ                   int64   `json:"dlq"`
	OldestReadyAgeSeconds float64 `json:"oldest_ready_age_seconds"`
}

// QueueSettings are the settings to create a queue with or to change; nil
// fields keep the default (create) or the current value (update). Int
// makes the pointers.
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
}

// Int returns a pointer to v, for QueueSettings.
func Int(v int) *int { return &v }

// Check refuses a setting out of its range (the server checks again).
func (s QueueSettings) Check() error {
	for _, f := range []struct {
		name   string
		v      *int
		lo, hi int
	}{
		{"visibility_timeout_seconds", s.VisibilityTimeoutSeconds, 0, MaxVisibilitySeconds},
		{"max_receive_count", s.MaxReceiveCount, 1, 1000},
		{"delay_seconds", s.DelaySeconds, 0, MaxDelaySeconds},
		{"retention_seconds", s.RetentionSeconds, 60, 1209600},
		{"max_message_bytes", s.MaxMessageBytes, 1, 1 << 20},
		{"dedup_window_seconds", s.DedupWindowSeconds, 0, 86400},
	} {
		if f.v == nil {
			continue
		}
		if err := checkRange(f.name, *f.v, f.lo, f.hi); err != nil {
			return err
		}
	}
	return nil
}

// ListQueuesOptions tune Queues.List.
type ListQueuesOptions struct {
	// Live adds each queue's counts (costs a count per queue).
	Live bool
}

// List returns the account's queues by name.
func (s *QueuesService) List(ctx context.Context, opts ...ListQueuesOptions) ([]Queue, error) {
	var q url.Values
	if lastOf(opts).Live {
		q = url.Values{"live": {"true"}}
	}
	return listOf[Queue](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("queues"), query: q}, "queues")
}

// Get returns queue's settings and counts.
func (s *QueuesService) Get(ctx context.Context, name string) (Queue, error) {
	var out Queue
	if err := checkName("queue", name); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodGet, path: s.c.managePath("queues", name)}, &out)
	return out, err
}

// Create creates queue name with settings (ErrQueueExists when it exists).
func (s *QueuesService) Create(ctx context.Context, name string, settings QueueSettings) (Queue, error) {
	var out Queue
	if err := checkName("queue", name); err != nil {
		return out, err
	}
	if err := settings.Check(); err != nil {
		return out, err
	}
	body := struct {
		Name string `json:"name"`
		QueueSettings
	}{name, settings}
	err := s.c.do(ctx, request{method: http.MethodPost, path: s.c.managePath("queues"), body: body}, &out)
	return out, err
}

// Update changes the settings of queue name that are set in settings and
// returns the queue as it now is.
func (s *QueuesService) Update(ctx context.Context, name string, settings QueueSettings) (Queue, error) {
	var out Queue
	if err := checkName("queue", name); err != nil {
		return out, err
	}
	if err := settings.Check(); err != nil {
		return out, err
	}
	err := s.c.do(ctx, request{method: http.MethodPatch, path: s.c.managePath("queues", name), body: settings}, &out)
	return out, err
}

// Delete deletes queue name with its messages and dead letters.
func (s *QueuesService) Delete(ctx context.Context, name string) error {
	if err := checkName("queue", name); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("queues", name)}, nil)
}

// MaxStatsMinutes is the longest window of MinuteStats (24 hours).
const MaxStatsMinutes = 1440

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

// MinuteStats returns the last minutes (1 to 1440; 0 means 60) of queue's
// statistics, one entry per minute, oldest first; the last is the current,
// unfinished minute.
func (s *QueuesService) MinuteStats(ctx context.Context, name string, minutes int) ([]MinuteStats, error) {
	if err := checkName("queue", name); err != nil {
		return nil, err
	}
	var q url.Values
	if minutes != 0 {
		if err := checkRange("minutes", minutes, 1, MaxStatsMinutes); err != nil {
			return nil, err
		}
		q = url.Values{"minutes": {strconv.Itoa(minutes)}}
	}
	return listOf[MinuteStats](ctx, s.c, request{method: http.MethodGet, path: s.c.managePath("queues", name, "stats"), query: q}, "minutes")
}
