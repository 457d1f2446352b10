package pgqueue

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/internal/ttlcache"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

// DefaultSchema is the schema the queue core lives in unless configured.
const DefaultSchema = "sluice"

// DefaultAccount is the account number the SQL API's short forms act on. It
// exists in every migrated schema.
const DefaultAccount = "000000000001"

// MaxWait is the longest a Receive may long-poll.
const MaxWait = 20 * time.Second

// Options configure a Client. The zero value is usable.
type Options struct {
	// Schema is the schema holding the migrated queue core; "" means
	// DefaultSchema.
	Schema string
	// Listener, when set (and started), wakes long-polling receives as soon
	// as a message arrives. It must use the same schema. Without it a
	// long-poll simply polls every PollInterval.
	Listener *Listener
	// PollInterval is how often a long-polling receive retries when no
	// wake-up arrives; 0 means 500ms. NOTIFY is only a hint, so this is the
	// fallback that bounds latency for delayed messages and missed hints.
	PollInterval time.Duration
	// SynchronousAcks makes Ack and Delete wait for their commit to reach
	// disk. By default they commit with synchronous_commit = off (in their
	// own transaction only): an ack lost to a database crash just means the
	// message is delivered again when its lease expires, which
	// at-least-once delivery allows, and acks cost half as much. Sends,
	// receives, nacks and DLQ moves are always synchronous.
	SynchronousAcks bool
	// NoCoalescing makes every call its own statement. By default
	// concurrent Send, SendBatch, Receive and Ack calls on the same queue
	// share statements and commits (see Client), which halves the database
	// CPU per message and raised throughput on the benchmarks
	// (BENCHMARKS.md).
	NoCoalescing bool
	// StoredBytesLimit, when set, bounds what each account's messages
	// take up: it returns account's limit of stored bytes (0 or less:
	// none), and sends and publishes (Send, SendBatch, Publish,
	// PublishBatch, their Tx forms and a Batch's) refuse with
	// ErrStoredBytesLimit to add to an account whose StoredBytes have
	// reached it. The stored bytes are those of the last depth sample,
	// which a Sweeper takes once a minute, read again every 5 seconds: an
	// account can pass its limit by what it sends before its next sample
	// is read. A sample older than 5 minutes (no Sweeper samples any
	// more) refuses nothing. The SQL API does not check the limit. An
	// error of the function fails the send, naming it.
	//
	// db is what the send runs on: the pool, or the caller's transaction.
	// Read what the limit needs on it, never on another connection of
	// the pool: a send inside a transaction holds one connection already,
	// and as many of them at once could wait for a second one for good.
	StoredBytesLimit func(ctx context.Context, db DB, account string) (int64, error)
}

// Client is the Go API of the queue core. It is safe for concurrent use.
// Every method takes the account number explicitly; use DefaultAccount for
// the account the SQL API's short forms use.
//
// Concurrent Send, SendBatch, Receive and Ack calls on the same queue are
// coalesced (unless Options.NoCoalescing): while two statements for the
// queue are in flight, later calls wait for one to finish and then go
// together in the next statement and commit. Each call still gets exactly
// its own results and errors. Sends with a dedup key, transactional sends
// and every other method are never coalesced.
type Client struct {
	pool     *pgxpool.Pool
	schema   string
	listener *Listener
	poll     time.Duration
	syncAcks bool
	q        queries
	ids      *idCache    // queue ids of the hot path (ids.go)
	co       *coalescers // nil with Options.NoCoalescing
	// counts holds sends and acks for the per-minute statistics while a
	// Sweeper runs on the client.
	counts minuteCounts
	// storedLimit is Options.StoredBytesLimit; stored caches the accounts'
	// StoredBytes for it.
	storedLimit func(ctx context.Context, db DB, account string) (int64, error)
	stored      *ttlcache.Cache[string, storedSample]
	// waiting, when set by tests, is called each time a long poll starts
	// waiting for a wake-up.
	waiting func()
}

// DB is what the transactional methods run on: a pgx.Tx, *pgx.Conn or
// *pgxpool.Pool.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// New returns a Client over pool. The schema must already be migrated
// (see Migrations).
func New(pool *pgxpool.Pool, opts Options) (*Client, error) {
	if pool == nil {
		return nil, errors.New("pgqueue: new client: pool is nil")
	}
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if err := migrate.ValidateSchema(schema); err != nil {
		return nil, fmt.Errorf("pgqueue: new client: %w", err)
	}
	if opts.Listener != nil && opts.Listener.schema != schema {
		return nil, fmt.Errorf("pgqueue: new client: listener is for schema %q, client for %q", opts.Listener.schema, schema)
	}
	if opts.PollInterval < 0 {
		return nil, fmt.Errorf("pgqueue: new client: poll interval %v: use a positive duration", opts.PollInterval)
	}
	poll := opts.PollInterval
	if poll == 0 {
		poll = 500 * time.Millisecond
	}
	c := &Client{pool: pool, schema: schema, listener: opts.Listener, poll: poll, syncAcks: opts.SynchronousAcks, q: loadQueries(schema),
		ids: newIDCache(maxCachedIDs), storedLimit: opts.StoredBytesLimit,
		stored: ttlcache.New[string, storedSample](storedBytesTTL, storedBytesCacheSize)}
	if !opts.NoCoalescing {
		c.initCoalescers()
	}
	return c, nil
}

// Schema returns the schema the client works in.
func (c *Client) Schema() string { return c.schema }

// Pool returns the pool the client runs on.
func (c *Client) Pool() *pgxpool.Pool { return c.pool }

//go:embed queries.sql
var queriesSQL string

// queries binds the statements of queries.sql to one schema.
type queries struct{ s namedsql.Statements }

func loadQueries(schema string) queries { return queries{namedsql.MustParse(queriesSQL, schema)} }

func (q queries) get(name string) string { return q.s.Get(name) }

// seconds converts a non-negative duration to whole seconds, rounding up.
func seconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// checkDuration rejects negative durations and durations longer than max.
func checkDuration(what string, d, max time.Duration) error {
	if d < 0 || d > max {
		return newError(ErrInvalidArgument, "invalid %s %v: use 0 to %v", what, d, max)
	}
	return nil
}

// rawOrNil returns nil for an empty raw JSON value so it is stored as NULL.
func rawOrNil(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	return string(r)
}
