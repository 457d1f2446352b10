package pgqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// Settings are a queue's tunables. In CreateQueue a zero field means the
// default shown; UpdateQueue applies every field as given (read the queue,
// change what you need, write it back).
type Settings struct {
	// VisibilityTimeout is the default lease of a received message (30s,
	// 0 to 12h, whole seconds).
	VisibilityTimeout time.Duration
	// MaxReceiveCount is how many times a message may be delivered before
	// it moves to the DLQ (5, 1 to 1000).
	MaxReceiveCount int
	// Delay is the minimum delay of every message sent (0, 0 to 12h).
	Delay time.Duration
	// Retention is how long a message or dead letter is kept (4 days, 1
	// minute to 14 days).
	Retention time.Duration
	// MaxMessageBytes bounds the size of a body as JSON text (256 KiB, 1 to
	// 1 MiB).
	MaxMessageBytes int
	// DedupWindow is how long a deduplication key is remembered (5 minutes,
	// 0 to 24h).
	DedupWindow time.Duration
	// RequireReceipt refuses (ErrInvalidArgument) to delete or ack a
	// leased message without the receipt of its lease (false). An Ack of
	// several messages with one such message among them acks none.
	RequireReceipt bool
	// DeadLetterQueue names another queue of the account that receives
	// this queue's dead letters as new messages (an SQS redrive policy);
	// "" keeps them in the dead-letter table (receive-dlq, redrive).
	DeadLetterQueue string
	// Fifo requires a group on every message sent (ErrInvalidArgument
	// otherwise), as an SQS FIFO queue does (false). Groups work on any
	// queue; see NewMessage.Group.
	Fifo bool
}

// OptionRange is the range of values the queue core accepts for a numeric
// queue option.
type OptionRange struct{ Min, Max int64 }

// OptionRanges are the numeric queue options (create_queue's and
// update_queue's option names, which the HTTP API and manifests use too)
// and their ranges, as the SQL API checks them (TestOptionRanges holds the
// two together).
var OptionRanges = map[string]OptionRange{
	"visibility_timeout_seconds": {0, 43200},
	"max_receive_count":          {1, 1000},
	"delay_seconds":              {0, 43200},
	"retention_seconds":          {60, 1209600},
	"max_message_bytes":          {1, 1048576},
	"dedup_window_seconds":       {0, 86400},
}

// DefaultSettings returns the settings a queue gets when created with a
// zero Settings.
func DefaultSettings() Settings {
	return Settings{
		VisibilityTimeout: 30 * time.Second,
		MaxReceiveCount:   5,
		Retention:         96 * time.Hour,
		MaxMessageBytes:   262144,
		DedupWindow:       5 * time.Minute,
	}
}

// Queue describes a queue.
type Queue struct {
	ID        int64
	Account   string
	Name      string
	Settings  Settings
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (s Settings) withDefaults() Settings {
	d := DefaultSettings()
	if s.VisibilityTimeout == 0 {
		s.VisibilityTimeout = d.VisibilityTimeout
	}
	if s.MaxReceiveCount == 0 {
		s.MaxReceiveCount = d.MaxReceiveCount
	}
	if s.Retention == 0 {
		s.Retention = d.Retention
	}
	if s.MaxMessageBytes == 0 {
		s.MaxMessageBytes = d.MaxMessageBytes
	}
	if s.DedupWindow == 0 {
		s.DedupWindow = d.DedupWindow
	}
	return s
}

// options renders settings as the SQL API's options object; the SQL side
// validates the ranges.
func (s Settings) options() ([]byte, error) {
	for _, d := range []struct {
		what string
		v    time.Duration
	}{{"visibility timeout", s.VisibilityTimeout}, {"delay", s.Delay}, {"retention", s.Retention}, {"dedup window", s.DedupWindow}} {
		if d.v < 0 {
			return nil, newError(ErrInvalidArgument, "invalid %s %v: use a non-negative duration", d.what, d.v)
		}
	}
	var dlq any // null: the dead-letter table
	if s.DeadLetterQueue != "" {
		dlq = s.DeadLetterQueue
	}
	return json.Marshal(map[string]any{
		"visibility_timeout_seconds": seconds(s.VisibilityTimeout),
		"max_receive_count":          s.MaxReceiveCount,
		"delay_seconds":              seconds(s.Delay),
		"retention_seconds":          seconds(s.Retention),
		"max_message_bytes":          s.MaxMessageBytes,
		"dedup_window_seconds":       seconds(s.DedupWindow),
		"dead_letter_queue":          dlq,
		"fifo":                       s.Fifo,
	})
}

func scanQueue(row pgx.Row) (Queue, error) {
	var q Queue
	var vis, delay, ret, dedup int32
	var maxRecv, maxBytes int32
	var dlq *string
	err := row.Scan(&q.ID, &q.Account, &q.Name, &vis, &maxRecv, &delay, &ret, &maxBytes, &dedup, &q.CreatedAt, &q.UpdatedAt,
		&q.Settings.RequireReceipt, &dlq, &q.Settings.Fifo)
	q.Settings = Settings{
		RequireReceipt:    q.Settings.RequireReceipt,
		Fifo:              q.Settings.Fifo,
		VisibilityTimeout: time.Duration(vis) * time.Second,
		MaxReceiveCount:   int(maxRecv),
		Delay:             time.Duration(delay) * time.Second,
		Retention:         time.Duration(ret) * time.Second,
		MaxMessageBytes:   int(maxBytes),
		DedupWindow:       time.Duration(dedup) * time.Second,
	}
	if dlq != nil {
		q.Settings.DeadLetterQueue = *dlq
	}
	return q, err
}

// CreateAccount adds an account: number is 12 digits, name is free text.
func (c *Client) CreateAccount(ctx context.Context, number, name string) error {
	_, err := c.pool.Exec(ctx, c.q.get("create_account"), number, name)
	return convertError("create account "+number, err)
}

// EnsureAccountTx adds account number (12 digits, no name) inside the
// caller's transaction (or any DB) unless it exists; an account that
// exists is left as it is.
func (c *Client) EnsureAccountTx(ctx context.Context, tx DB, number string) error {
	_, err := tx.Exec(ctx, c.q.get("ensure_account"), number)
	return convertError("ensure account "+number, err)
}

// CreateQueue creates queue name in account. Zero settings take their
// defaults (see Settings). It fails with ErrQueueExists, ErrInvalidName,
// ErrAccountNotFound or ErrInvalidArgument.
func (c *Client) CreateQueue(ctx context.Context, account, name string, s Settings) (Queue, error) {
	opts, err := s.withDefaults().options()
	if err != nil {
		return Queue{}, err
	}
	q, err := scanQueue(c.pool.QueryRow(ctx, c.q.get("create_queue"), account, name, opts))
	if err == nil && s.RequireReceipt {
		return c.SetRequireReceipt(ctx, account, name, true)
	}
	return q, convertError("create queue "+quote(name), err)
}

// SetRequireReceipt turns the queue's RequireReceipt on or off and
// returns the queue. It fails with ErrQueueNotFound.
func (c *Client) SetRequireReceipt(ctx context.Context, account, name string, on bool) (Queue, error) {
	if _, err := c.pool.Exec(ctx, c.q.get("set_require_receipt"), account, name, on); err != nil {
		return Queue{}, convertError("set require_receipt of queue "+quote(name), err)
	}
	return c.GetQueue(ctx, account, name)
}

// QueueOptions are queue settings keyed as the SQL API's options object
// names them (visibility_timeout_seconds, max_receive_count,
// delay_seconds, retention_seconds, max_message_bytes,
// dedup_window_seconds: whole seconds and counts, as integers;
// dead_letter_queue: a queue name, or nil or "" for the dead-letter
// table). A key left out keeps its default (create) or its current value
// (update). The SQL API checks the names, types and ranges and fails with
// ErrInvalidArgument.
type QueueOptions map[string]any

// CreateQueueWithOptions creates queue name in account with the options
// given; unlike CreateQueue, a given zero stays zero. It fails like
// CreateQueue.
func (c *Client) CreateQueueWithOptions(ctx context.Context, account, name string, opts QueueOptions) (Queue, error) {
	q, err := scanQueue(c.pool.QueryRow(ctx, c.q.get("create_queue"), account, name, opts.json()))
	return q, convertError("create queue "+quote(name), err)
}

// PatchQueue changes the options given of a queue, keeps the others, and
// returns the updated queue. It fails with ErrQueueNotFound or
// ErrInvalidArgument.
func (c *Client) PatchQueue(ctx context.Context, account, name string, opts QueueOptions) (Queue, error) {
	q, err := scanQueue(c.pool.QueryRow(ctx, c.q.get("update_queue"), account, name, opts.json()))
	return q, convertError("update queue "+quote(name), err)
}

// json renders the options object; nil options are an empty object.
func (o QueueOptions) json() []byte {
	if o == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(map[string]any(o))
	if err != nil {
		// Integers, strings and nil always marshal.
		panic(fmt.Sprintf("pgqueue: marshal queue options: %v", err))
	}
	return b
}

// UpdateQueue replaces the settings of a queue with s (all fields) and
// returns the updated queue.
func (c *Client) UpdateQueue(ctx context.Context, account, name string, s Settings) (Queue, error) {
	opts, err := s.options()
	if err != nil {
		return Queue{}, err
	}
	q, err := scanQueue(c.pool.QueryRow(ctx, c.q.get("update_queue"), account, name, opts))
	if err == nil && q.Settings.RequireReceipt != s.RequireReceipt {
		return c.SetRequireReceipt(ctx, account, name, s.RequireReceipt)
	}
	return q, convertError("update queue "+quote(name), err)
}

// GetQueue returns a queue, or ErrQueueNotFound.
func (c *Client) GetQueue(ctx context.Context, account, name string) (Queue, error) {
	q, err := scanQueue(c.pool.QueryRow(ctx, c.q.get("get_queue"), account, name))
	if errors.Is(err, pgx.ErrNoRows) {
		if nerr := checkName("queue", name); nerr != nil {
			return Queue{}, nerr
		}
		return Queue{}, newError(ErrQueueNotFound, "queue %s not found in account %s", quote(name), account)
	}
	return q, convertError("get queue "+quote(name), err)
}

// QueueRef names a queue in an account.
type QueueRef struct {
	Account, Name string
}

// GetQueues returns many queues in one statement, by ref; refs of queues
// that do not exist are absent from the result.
func (c *Client) GetQueues(ctx context.Context, refs []QueueRef) (map[QueueRef]Queue, error) {
	accounts, names := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		accounts[i], names[i] = r.Account, r.Name
	}
	rows, err := c.pool.Query(ctx, c.q.get("get_queues"), accounts, names)
	if err != nil {
		return nil, convertError(fmt.Sprintf("get %d queues", len(refs)), err)
	}
	qs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Queue, error) { return scanQueue(r) })
	if err != nil {
		return nil, convertError(fmt.Sprintf("get %d queues", len(refs)), err)
	}
	out := make(map[QueueRef]Queue, len(qs))
	for _, q := range qs {
		out[QueueRef{Account: q.Account, Name: q.Name}] = q
	}
	return out, nil
}

// ListQueues returns the queues of an account, by name.
func (c *Client) ListQueues(ctx context.Context, account string) ([]Queue, error) {
	rows, err := c.pool.Query(ctx, c.q.get("list_queues"), account)
	if err != nil {
		return nil, convertError("list queues of account "+account, err)
	}
	qs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Queue, error) { return scanQueue(r) })
	return qs, convertError("list queues of account "+account, err)
}

// DeleteQueue deletes a queue with its messages, dead letters and
// subscriptions. It fails with ErrQueueNotFound when there is no such
// queue, and with ErrQueueInUse, naming them, while other queues name it as
// their dead_letter_queue.
func (c *Client) DeleteQueue(ctx context.Context, account, name string) error {
	var ok bool
	if err := c.pool.QueryRow(ctx, c.q.get("delete_queue"), account, name).Scan(&ok); err != nil {
		return convertError("delete queue "+quote(name), err)
	}
	if !ok {
		return newError(ErrQueueNotFound, "queue %s not found in account %s", quote(name), account)
	}
	return nil
}

// Stats are the counts of one queue at one moment.
type Stats struct {
	// Ready messages can be received now.
	Ready int64
	// Delayed messages have never been received and are not visible yet.
	Delayed int64
	// Inflight messages are leased (or waiting out a retry delay).
	Inflight int64
	// DLQ counts dead letters.
	DLQ int64
	// OldestReadyAge is the age of the oldest ready message.
	OldestReadyAge time.Duration
	// Total counts every message in the queue table (not the DLQ).
	Total int64
	// GroupedWaiting counts messages waiting behind the head of their
	// group (not receivable until the messages before them are gone).
	GroupedWaiting int64
	// Groups counts the groups that have messages.
	Groups int64
	// GroupsInflight counts groups whose head is leased.
	GroupsInflight int64
	// GroupsBlocked counts groups held back by a head that failed at least
	// once (delivered again, nacked or its lease expired) while more
	// messages wait behind it.
	GroupsBlocked int64
	// Bytes and DLQBytes are the size of the bodies and headers of the
	// queue's messages and of its dead letters, as stored (compressed
	// where Postgres compressed them): what counts against an account's
	// Options.StoredBytesLimit.
	Bytes, DLQBytes int64
}

// Stats returns the counts of a queue. It counts rows, so it costs time
// proportional to the queue's size.
func (c *Client) Stats(ctx context.Context, account, queue string) (Stats, error) {
	s, err := scanStats(c.pool.QueryRow(ctx, c.q.get("stats"), account, queue))
	if errors.Is(err, pgx.ErrNoRows) {
		if nerr := checkName("queue", queue); nerr != nil {
			return Stats{}, nerr
		}
		return Stats{}, newError(ErrQueueNotFound, "queue %s not found in account %s", quote(queue), account)
	}
	return s, convertError("stats of queue "+quote(queue), err)
}

// scanStats reads the row of the stats statement (one queue's counts).
func scanStats(row pgx.Row) (Stats, error) {
	var s Stats
	var age float64
	err := row.Scan(&s.Ready, &s.Delayed, &s.Inflight, &s.DLQ, &age, &s.Total,
		&s.GroupedWaiting, &s.Groups, &s.GroupsInflight, &s.GroupsBlocked, &s.Bytes, &s.DLQBytes)
	s.OldestReadyAge = ageDuration(age)
	return s, err
}

// QueueStats are the counts of one queue of one account.
type QueueStats struct {
	Account string
	Queue   string
	Stats
}

// ListStats returns the counts of every queue of account, by queue name.
// Like Stats it counts rows, so it costs time proportional to the
// account's messages.
func (c *Client) ListStats(ctx context.Context, account string) ([]QueueStats, error) {
	return c.queryStats(ctx, "stats of account "+account, "account_stats", account)
}

// StatsOf returns the counts of the named queues of account, in the order
// given, leaving out names that are not queues of account. Each queue is
// counted by itself (one statement each, sent together), so it costs the
// named queues' messages only, where ListStats counts every message of the
// account: a page of a long list of queues is cheap whatever the others
// hold.
func (c *Client) StatsOf(ctx context.Context, account string, queues []string) ([]QueueStats, error) {
	var b pgx.Batch
	for _, q := range queues {
		b.Queue(c.q.get("stats"), account, q)
	}
	out := make([]QueueStats, 0, len(queues))
	res := c.pool.SendBatch(ctx, &b)
	for _, q := range queues {
		s, err := scanStats(res.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			res.Close()
			return nil, convertError("stats of queue "+quote(q), err)
		}
		out = append(out, QueueStats{Account: account, Queue: q, Stats: s})
	}
	return out, convertError("stats of account "+account, res.Close())
}

// AllStats returns the counts of every queue of every account, by account
// and queue name. It counts every message of the schema.
func (c *Client) AllStats(ctx context.Context) ([]QueueStats, error) {
	return c.queryStats(ctx, "stats of schema "+c.schema, "all_stats")
}

func (c *Client) queryStats(ctx context.Context, op, stmt string, args ...any) ([]QueueStats, error) {
	rows, err := c.pool.Query(ctx, c.q.get(stmt), args...)
	if err != nil {
		return nil, convertError(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueStats, error) {
		var s QueueStats
		var age float64
		err := r.Scan(&s.Account, &s.Queue, &s.Ready, &s.Delayed, &s.Inflight, &s.DLQ, &age, &s.Total,
			&s.GroupedWaiting, &s.Groups, &s.GroupsInflight, &s.GroupsBlocked, &s.Bytes, &s.DLQBytes)
		s.OldestReadyAge = ageDuration(age)
		return s, err
	})
	return out, convertError(op, err)
}

// ageDuration converts the stats view's age in seconds (microsecond
// precision) to a duration, rounding to the nanosecond so that Seconds()
// gives the view's value back.
func ageDuration(seconds float64) time.Duration {
	return time.Duration(math.Round(seconds * float64(time.Second)))
}

// Sweep runs one sweep (see the sweep SQL function) and returns how many
// messages it moved to the DLQ or removed. The Sweeper calls it every
// second.
func (c *Client) Sweep(ctx context.Context) (int64, error) {
	var n int64
	err := c.pool.QueryRow(ctx, c.q.get("sweep")).Scan(&n)
	return n, convertError("sweep schema "+c.schema, err)
}
