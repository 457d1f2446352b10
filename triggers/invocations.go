package triggers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/namedsql"
)

// DefaultInvocationRetention is how long the engine keeps invocation
// records unless Config.InvocationRetention says otherwise.
const DefaultInvocationRetention = 7 * 24 * time.Hour

// Invocation is one row of the invocation log: one batch (or cron tick)
// a function ran.
type Invocation struct {
	ID       int64
	Account  string
	Function string
	Version  int
	// TriggerID is nil for an invocation no trigger started.
	TriggerID *int64
	// Trigger is the name the invocation was recorded under: the
	// trigger's name (kept after the trigger is deleted), or
	// InvokeTrigger. InvocationFilter.Trigger takes it back.
	Trigger     string
	TriggerType string
	Source      string
	BatchSize   int
	StartedAt   time.Time
	// DurationMS is the run time in milliseconds, as recorded.
	DurationMS float64
	// Outcome is success, partial_failure or failure.
	Outcome     string
	FailureKind string
	Error       string
	Acked       int
	Retried     int
	Dead        int
	// Emitted counts the messages the invocation emitted (sent or
	// published) in the transaction that settled it.
	Emitted    int
	MessageIDs []int64
	Stderr     string
	// HTTP counts the calls the invocation made through the outbound
	// HTTP host import (Function ABI v1.1).
	HTTP HTTPCalls
	// Seq is the record's position in the log, in the order records were
	// written (what Follow pages by).
	Seq int64
	// Settled is set when the invocation ended long enough ago that every
	// record with a smaller Seq is in the log too (Follow only).
	Settled bool
	// EmittedMessages are the messages it emitted, in output order; List
	// reads them only when InvocationFilter.ID picks one invocation.
	EmittedMessages []EmittedMessage
}

// EmittedMessage is one message an invocation emitted, sent in the
// transaction that settled it: to Queue as message Sequence, or published
// to Topic as Copies copies; For is the batch message it was for ("" when
// it was for the batch).
type EmittedMessage struct {
	Queue    string
	Sequence int64
	Topic    string
	Copies   int
	For      string
}

// HTTPCalls counts an invocation's outbound HTTP calls: requests that
// reached the network, calls that failed or were refused, and the bytes of
// request and response bodies.
type HTTPCalls struct {
	Requests, Errors         int
	BytesSent, BytesReceived int64
}

// InvocationFilter selects invocations of an account; a zero field does
// not filter.
type InvocationFilter struct {
	// Function, Outcome and Trigger (the trigger's name) match exactly.
	Function, Outcome, Trigger string
	// Since and Until bound StartedAt: Since <= StartedAt < Until.
	Since, Until *time.Time
	// BeforeID keeps the invocations with a smaller id (paging).
	BeforeID int64
	// ID picks one invocation.
	ID int64
	// Limit caps how many are returned (0: 50).
	Limit int
}

// InvocationSummary is what After reads of an invocation.
type InvocationSummary struct {
	// Seq is the record's position in the log (see Invocation.Seq).
	Seq int64
	// ID is the invocation's id.
	ID         int64
	Account    string
	Function   string
	Outcome    string
	DurationMS float64
	// HTTPRequests, HTTPErrors and HTTPBytes (sent and received) count
	// the invocation's outbound HTTP calls.
	HTTPRequests, HTTPErrors int
	HTTPBytes                int64
	// Settled is set when the invocation ended long enough ago that every
	// invocation with a smaller id is in the log too.
	Settled bool
}

// InvocationLog reads the invocation log the Engine writes. It is safe for
// concurrent use.
type InvocationLog struct {
	pool *pgxpool.Pool
	q    namedsql.Statements
}

// Invocations returns the invocation log of the store's schema.
func (s *Store) Invocations() *InvocationLog { return &InvocationLog{pool: s.pool, q: s.q} }

// List returns the account's invocations that f selects, newest (highest
// id) first.
func (l *InvocationLog) List(ctx context.Context, account string, f InvocationFilter) ([]Invocation, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	rows, err := l.pool.Query(ctx, l.q.Get("list_invocations"), account, nullIfEmpty(f.Function), nullIfEmpty(f.Outcome),
		f.Since, f.Until, nullIfEmpty(f.Trigger), nullIfZero(f.BeforeID), nullIfZero(f.ID), limit, 0)
	if err != nil {
		return nil, fmt.Errorf("triggers: list invocations (account %s): %w", account, err)
	}
	out, err := pgx.CollectRows(rows, scanInvocation)
	if err != nil {
		return nil, fmt.Errorf("triggers: list invocations (account %s): %w", account, err)
	}
	if f.ID != 0 && len(out) == 1 && out[0].Emitted > 0 {
		if out[0].EmittedMessages, err = l.emittedMessages(ctx, account, f.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// emittedMessages reads the messages invocation id emitted.
func (l *InvocationLog) emittedMessages(ctx context.Context, account string, id int64) ([]EmittedMessage, error) {
	var raw []byte
	if err := l.pool.QueryRow(ctx, l.q.Get("invocation_emitted_messages"), account, id).Scan(&raw); err != nil {
		return nil, fmt.Errorf("triggers: emitted messages of invocation %d: %w", id, err)
	}
	var list []emittedMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("triggers: emitted messages of invocation %d: %w", id, err)
	}
	out := make([]EmittedMessage, len(list))
	for i, m := range list {
		out[i] = EmittedMessage{Queue: m.Queue, Topic: m.Topic, For: m.For}
		if m.Sequence != nil {
			out[i].Sequence = *m.Sequence
		}
		if m.Copies != nil {
			out[i].Copies = *m.Copies
		}
	}
	return out, nil
}

func scanInvocation(row pgx.CollectableRow) (Invocation, error) {
	var v Invocation
	err := row.Scan(&v.ID, &v.Account, &v.Function, &v.Version, &v.TriggerID, &v.Trigger, &v.TriggerType, &v.Source,
		&v.BatchSize, &v.StartedAt, &v.DurationMS, &v.Outcome, &v.FailureKind, &v.Error, &v.Acked, &v.Retried,
		&v.Dead, &v.Emitted, &v.MessageIDs, &v.Stderr,
		&v.HTTP.Requests, &v.HTTP.Errors, &v.HTTP.BytesSent, &v.HTTP.BytesReceived, &v.Seq, &v.Settled)
	return v, err
}

// Follow returns up to f.Limit (0: 50) of the account's invocations that f
// selects (BeforeID aside) with a Seq above afterSeq, in the order their
// records were written. settle is how long after an invocation ends its
// record is surely written, along with every record of a smaller Seq (see
// Invocation.Settled): a follower re-reads from the last settled Seq and
// skips the ids it has seen.
func (l *InvocationLog) Follow(ctx context.Context, account string, afterSeq int64, settle time.Duration, f InvocationFilter) ([]Invocation, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	rows, err := l.pool.Query(ctx, l.q.Get("follow_invocations"), account, nullIfEmpty(f.Function), nullIfEmpty(f.Outcome),
		f.Since, f.Until, nullIfEmpty(f.Trigger), afterSeq, nullIfZero(f.ID), limit, settle.Seconds())
	if err != nil {
		return nil, fmt.Errorf("triggers: follow invocations (account %s): %w", account, err)
	}
	out, err := pgx.CollectRows(rows, scanInvocation)
	if err != nil {
		return nil, fmt.Errorf("triggers: follow invocations (account %s): %w", account, err)
	}
	return out, nil
}

// SeqSince returns where a follower of the account's invocations started
// at or after since starts: the Seq before the first such record written
// (LastSeq when there is none).
func (l *InvocationLog) SeqSince(ctx context.Context, account string, since time.Time) (int64, error) {
	var seq int64
	if err := l.pool.QueryRow(ctx, l.q.Get("log_seq_since"), account, since).Scan(&seq); err != nil {
		return 0, fmt.Errorf("triggers: invocation log position since %s (account %s): %w", since.Format(time.RFC3339), account, err)
	}
	return seq, nil
}

// LastSeq returns the Seq of the last record written (0 for an empty
// log): where a follower that wants only new records starts.
func (l *InvocationLog) LastSeq(ctx context.Context) (int64, error) {
	var seq int64
	if err := l.pool.QueryRow(ctx, l.q.Get("last_log_seq")).Scan(&seq); err != nil {
		return 0, fmt.Errorf("triggers: last invocation log position: %w", err)
	}
	return seq, nil
}

// After returns up to limit invocations of every account with a Seq
// above id, by Seq. settle is how long after an invocation ends its record
// is surely written, along with every record of a smaller id (see
// InvocationSummary.Settled).
func (l *InvocationLog) After(ctx context.Context, id int64, limit int, settle time.Duration) ([]InvocationSummary, error) {
	rows, err := l.pool.Query(ctx, l.q.Get("invocations_after"), id, limit, settle.Seconds())
	if err != nil {
		return nil, fmt.Errorf("triggers: invocations after id %d: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (InvocationSummary, error) {
		var s InvocationSummary
		err := row.Scan(&s.Seq, &s.ID, &s.Account, &s.Function, &s.Outcome, &s.DurationMS, &s.HTTPRequests, &s.HTTPErrors,
			&s.HTTPBytes, &s.Settled)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("triggers: invocations after id %d: %w", id, err)
	}
	return out, nil
}

func nullIfZero(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}
