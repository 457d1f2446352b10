package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sluicehq/sluice/wire"
)

// QueuesService manages the queues of the client's account (scope
// mq:admin to change them, mq:receive to read them).
type QueuesService struct{ c *Client }

// Queue is a queue's settings, with its counts in Stats: from Get, and
// from List with Live.
type Queue = wire.Queue

// QueueStats counts a queue's messages.
type QueueStats = wire.QueueStats

// QueueSettings are the settings to create a queue with or to change; nil
// fields keep the default (create) or the current value (update). Int
// makes the pointers. The fields, their ranges and defaults are
// wire.QueueSettings's; Check refuses a value out of range.
type QueueSettings wire.QueueSettings

// Int returns a pointer to v, for QueueSettings.
func Int(v int) *int { return &v }

// String returns a pointer to v, for QueueSettings.DeadLetterQueue ("":
// back to the dead-letter table).
func String(v string) *string { return &v }

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
	body := wire.CreateQueueRequest{Name: name, QueueSettings: wire.QueueSettings(settings)}
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
	err := s.c.do(ctx, request{method: http.MethodPatch, path: s.c.managePath("queues", name), body: wire.QueueSettings(settings)}, &out)
	return out, err
}

// Delete deletes queue name with its messages and dead letters. A queue
// that another queue names as its dead_letter_queue is not deleted
// (ErrQueueInUse).
func (s *QueuesService) Delete(ctx context.Context, name string) error {
	if err := checkName("queue", name); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: s.c.managePath("queues", name)}, nil)
}

// MaxStatsMinutes is the longest window of MinuteStats (24 hours).
const MaxStatsMinutes = 1440

// MinuteStats is one minute of a queue's statistics: the messages sent,
// acked and moved to the DLQ in the minute, and the depths sampled in it
// (nil when no sample was taken).
type MinuteStats = wire.MinuteStats

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
