package triggers

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

//go:embed citus.sql
var citusSQL string

// Migrations is the triggers' migration line; apply it after
// pgqueue.Migrations and functions.Migrations. Its Citus step (citus.sql)
// distributes the invocation log with the queues' messages, so that a
// batch's settlement and its record commit on one worker.
var Migrations = func() migrate.Line {
	l := migrate.NewLine("triggers", migrationFiles, "migrations")
	l.Citus = citusSQL
	return l
}()

//go:embed queries.sql
var queriesSQL string

// Kinds of trigger.
const (
	KindQueue = "queue"
	KindCron  = "cron"
)

// Sources of a trigger: who owns it.
const (
	SourceManifest = "manifest"
	SourceAPI      = "api"
)

// ErrNotFound is returned for a trigger that does not exist.
var ErrNotFound = errors.New("trigger not found")

// Trigger is what runs a function: batches from a queue (or its DLQ), or a
// cron schedule that invokes the function or enqueues a message.
type Trigger struct {
	ID      int64
	Account string
	// Name identifies the trigger within its account.
	Name     string
	Kind     string
	Function string
	Alias    string

	Queue          string
	DLQ            bool
	BatchSize      int
	BatchWindow    time.Duration
	Concurrency    int
	AckPolicy      AckPolicy
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// LeaseExtension keeps extending the leases of a running batch.
	LeaseExtension bool

	CronSpec string
	Timezone string
	// EnqueueBody, for a cron trigger, is sent to Queue at each tick
	// instead of invoking a function.
	EnqueueBody json.RawMessage

	Enabled   bool
	Source    string
	UpdatedAt time.Time
}

// DerivedName is the name a trigger gets when none is given (see
// names.go: the name is what every surface shows and filters take):
// queue:<queue>:<function>, dlq:<queue>:<function>, or
// cron:<function or queue>:<fnv hash of the spec>.
func (t Trigger) DerivedName() string {
	switch {
	case t.Kind == KindCron && t.Function != "":
		return fmt.Sprintf("cron:%s:%08x", t.Function, fnv32(t.CronSpec+"|"+t.Timezone))
	case t.Kind == KindCron:
		return fmt.Sprintf("cron:%s:%08x", t.Queue, fnv32(t.CronSpec+"|"+t.Timezone+"|"+string(t.EnqueueBody)))
	case t.DLQ:
		return "dlq:" + t.Queue + ":" + t.Function
	default:
		return "queue:" + t.Queue + ":" + t.Function
	}
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func (t *Trigger) applyDefaults() {
	if t.Alias == "" {
		t.Alias = "live"
	}
	if t.Kind == KindQueue {
		if t.BatchSize == 0 {
			t.BatchSize = DefaultBatchSize
		}
		if t.Concurrency == 0 {
			t.Concurrency = DefaultConcurrency
		}
		if t.AckPolicy == "" {
			t.AckPolicy = AckPolicyAck
		}
	} else if t.BatchSize == 0 {
		t.BatchSize, t.Concurrency, t.AckPolicy = 1, 1, AckPolicyAck
	}
	if t.BackoffInitial == 0 {
		t.BackoffInitial = DefaultBackoffInitial
	}
	if t.BackoffMax == 0 {
		t.BackoffMax = DefaultBackoffMax
	}
	if t.Timezone == "" {
		t.Timezone = "UTC"
	}
	if t.Source == "" {
		t.Source = SourceAPI
	}
}

// Store reads and writes triggers. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	q    namedsql.Statements
}

// NewStore returns a Store over the migrated schema.
func NewStore(pool *pgxpool.Pool, schema string) (*Store, error) {
	if err := migrate.ValidateSchema(schema); err != nil {
		return nil, fmt.Errorf("triggers: new store: %w", err)
	}
	return &Store{pool: pool, q: namedsql.MustParse(queriesSQL, schema)}, nil
}

// Put creates or updates the trigger named t.Name in t.Account, filling in
// defaults, and reports whether anything changed. Range checks are the
// database's (see migrations/001_triggers.up.sql) and the manifest's.
func (s *Store) Put(ctx context.Context, t Trigger) (changed bool, err error) {
	if err := ValidateName(t.Name); err != nil {
		return false, fmt.Errorf("triggers: put (account %s): %w", t.Account, err)
	}
	t.applyDefaults()
	var body any
	if len(t.EnqueueBody) > 0 {
		body = string(t.EnqueueBody)
	}
	var id int64
	err = s.pool.QueryRow(ctx, s.q.Get("put_trigger"), t.Account, t.Name, t.Kind, nullIfEmpty(t.Function),
		t.Alias, nullIfEmpty(t.Queue), t.DLQ, t.BatchSize, t.BatchWindow.Milliseconds(), t.Concurrency,
		t.AckPolicy, t.BackoffInitial.Milliseconds(), t.BackoffMax.Milliseconds(), t.LeaseExtension,
		nullIfEmpty(t.CronSpec), t.Timezone, body, t.Enabled, t.Source).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("triggers: put %s (account %s): %w", t.Name, t.Account, err)
	}
	return true, nil
}

// Delete removes a trigger.
func (s *Store) Delete(ctx context.Context, account, name string) error {
	tag, err := s.pool.Exec(ctx, s.q.Get("delete_trigger"), account, name)
	if err != nil {
		return fmt.Errorf("triggers: delete %s (account %s): %w", name, account, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("triggers: delete %s (account %s): %w", name, account, ErrNotFound)
	}
	return nil
}

// List returns the account's triggers by name.
func (s *Store) List(ctx context.Context, account string) ([]Trigger, error) {
	rows, err := s.pool.Query(ctx, s.q.Get("list_triggers"), account)
	if err != nil {
		return nil, fmt.Errorf("triggers: list (account %s): %w", account, err)
	}
	ts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Trigger, error) {
		var t Trigger
		err := row.Scan(t.fields()...)
		t.fromMillis()
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("triggers: list (account %s): %w", account, err)
	}
	return ts, nil
}

// scan targets shared by list_triggers and active_triggers; durations are
// read as milliseconds into the duration fields and fixed by fromMillis.
func (t *Trigger) fields() []any {
	return []any{&t.ID, &t.Account, &t.Name, &t.Kind, &t.Function, &t.Alias, &t.Queue, &t.DLQ,
		&t.BatchSize, (*int64)(&t.BatchWindow), &t.Concurrency, &t.AckPolicy,
		(*int64)(&t.BackoffInitial), (*int64)(&t.BackoffMax), &t.LeaseExtension, &t.CronSpec,
		&t.Timezone, &t.EnqueueBody, &t.Enabled, &t.Source, &t.UpdatedAt}
}

func (t *Trigger) fromMillis() {
	t.BatchWindow *= time.Millisecond
	t.BackoffInitial *= time.Millisecond
	t.BackoffMax *= time.Millisecond
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
