package triggers

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// AckPolicy says when a queue trigger deletes the messages it delivers.
type AckPolicy string

// Ack policies of a queue trigger.
const (
	// AckPolicyAck acks a message when the function succeeds on it and
	// retries it (counting toward the queue's receive limit) when it
	// fails. The default.
	AckPolicyAck AckPolicy = "ack"
	// AckPolicyRejectOnError moves a failed message to the DLQ at once.
	AckPolicyRejectOnError AckPolicy = "reject_on_error"
	// AckPolicyAckFirst deletes each message when it is received: at most
	// once, never retried.
	AckPolicyAckFirst AckPolicy = "ack_first"
)

// AckPolicies are the valid ack policies, default first.
var AckPolicies = []AckPolicy{AckPolicyAck, AckPolicyRejectOnError, AckPolicyAckFirst}

// ParseAckPolicy returns the policy named s; "" is the default, AckPolicyAck.
func ParseAckPolicy(s string) (AckPolicy, error) {
	if s == "" {
		return AckPolicyAck, nil
	}
	for _, p := range AckPolicies {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("ack_policy %q: use ack, reject_on_error or ack_first", truncate(s, 40))
}

// Bounds and defaults of a queue trigger's settings.
const (
	MinBatchSize, MaxBatchSize, DefaultBatchSize       = 1, 1000, 10
	MinConcurrency, MaxConcurrency, DefaultConcurrency = 1, 256, 1
	MaxBatchWindow                                     = 60 * time.Second
)

// Defaults of a trigger's retry backoff: the delay starts at
// DefaultBackoffInitial and doubles per attempt up to DefaultBackoffMax.
const (
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 5 * time.Minute
	// MaxBackoff bounds both (the triggers table holds them to it).
	MaxBackoff = 12 * time.Hour
)

// cronParser parses the cron specs a cron trigger accepts: five fields, or
// six with leading seconds, and descriptors such as @every 1m or @daily.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a cron trigger's spec: five fields, or six with
// leading seconds, and descriptors such as @every 1m or @daily.
func ParseSchedule(spec string) (cron.Schedule, error) {
	sched, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w (use 5 fields, 6 with seconds first, or @every/@hourly/@daily)", truncate(spec, 90), err)
	}
	return sched, nil
}

// truncate shortens s to at most n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
