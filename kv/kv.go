package kv

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the key-value stores' migration line. Apply it after the
// queue core's (pgqueue.Migrations): its table references accounts.
var Migrations = migrate.NewLine("kv", migrationFiles, "migrations")

//go:embed queries.sql
var queriesSQL string

// Bounds of keys, values and expiries.
const (
	MaxKeyBytes   = 1024
	MaxValueBytes = 1 << 20
	MaxTTL        = 10 * 365 * 24 * time.Hour
	// MaxList caps the entries one List call returns.
	MaxList = 1000
)

// Errors callers branch on with errors.Is.
var (
	// ErrInvalid: a bad store name, key, value size or ttl, or an
	// increment of a value that is not a decimal integer.
	ErrInvalid = errors.New("invalid")
)

// Entry is one live key of a store.
type Entry struct {
	Key, Value []byte
	// ExpiresAt is zero when the key never expires.
	ExpiresAt time.Time
	UpdatedAt time.Time
}

// Stores are the key-value stores of every account on one database. It is
// safe for concurrent use.
type Stores struct {
	pool *pgxpool.Pool
	q    namedsql.Statements
}

// New returns the stores of the migrated schema.
func New(pool *pgxpool.Pool, schema string) (*Stores, error) {
	if err := migrate.ValidateSchema(schema); err != nil {
		return nil, fmt.Errorf("kv: new: %w", err)
	}
	return &Stores{pool: pool, q: namedsql.MustParse(queriesSQL, schema)}, nil
}

func check(store string, key []byte) error {
	if !pgqueue.ValidName(store) {
		return fmt.Errorf("kv: %w: store name %q: use 1-80 characters from A-Z a-z 0-9 _ -", ErrInvalid, store)
	}
	if len(key) == 0 || len(key) > MaxKeyBytes {
		return fmt.Errorf("kv: %w: key of %d bytes in store %s: use 1 to %d bytes", ErrInvalid, len(key), store, MaxKeyBytes)
	}
	return nil
}

func checkValue(store string, value []byte, ttl time.Duration) error {
	if len(value) > MaxValueBytes {
		return fmt.Errorf("kv: %w: value of %d bytes in store %s is over the limit of %d", ErrInvalid, len(value), store, MaxValueBytes)
	}
	if ttl < 0 || ttl > MaxTTL {
		return fmt.Errorf("kv: %w: ttl %s out of range 0 (none) to %s", ErrInvalid, ttl, MaxTTL)
	}
	return nil
}

// ttlMS rounds a positive ttl up to whole milliseconds.
func ttlMS(ttl time.Duration) int64 {
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}

// Get returns the value of key in store of account, or found false.
func (s *Stores) Get(ctx context.Context, account, store string, key []byte) ([]byte, bool, error) {
	if err := check(store, key); err != nil {
		return nil, false, err
	}
	var v []byte
	err := s.pool.QueryRow(ctx, s.q.Get("get"), account, store, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kv: get from store %s of account %s: %w", store, account, err)
	}
	return v, true, nil
}

// Set stores value at key, expiring after ttl (0: never).
func (s *Stores) Set(ctx context.Context, account, store string, key, value []byte, ttl time.Duration) error {
	if err := check(store, key); err != nil {
		return err
	}
	if err := checkValue(store, value, ttl); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, s.q.Get("set"), account, store, key, nonNil(value), ttlMS(ttl)); err != nil {
		return fmt.Errorf("kv: set in store %s of account %s: %w", store, account, err)
	}
	return nil
}

// Delete removes key and reports whether it existed (unexpired).
func (s *Stores) Delete(ctx context.Context, account, store string, key []byte) (bool, error) {
	if err := check(store, key); err != nil {
		return false, err
	}
	var live bool
	err := s.pool.QueryRow(ctx, s.q.Get("delete"), account, store, key).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kv: delete from store %s of account %s: %w", store, account, err)
	}
	return live, nil
}

// Increment adds delta to the decimal integer at key (absent or expired:
// 0), keeping its expiry, and returns the new value. A value that is not
// a 64-bit decimal integer, or an overflow, fails with ErrInvalid.
func (s *Stores) Increment(ctx context.Context, account, store string, key []byte, delta int64) (int64, error) {
	if err := check(store, key); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx, s.q.Get("increment"), account, store, key, delta).Scan(&n)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22")) { // data exceptions: not an integer, overflow, bad UTF-8
		return 0, fmt.Errorf("kv: %w: increment key in store %s: the value is not a 64-bit decimal integer or would overflow", ErrInvalid, store)
	}
	if err != nil {
		return 0, fmt.Errorf("kv: increment in store %s of account %s: %w", store, account, err)
	}
	return n, nil
}

// CompareAndSet sets key to value, expiring after ttl (0: never), only if
// it holds old (old nil: only if key is absent or expired), and reports
// whether it did.
func (s *Stores) CompareAndSet(ctx context.Context, account, store string, key, old, value []byte, ttl time.Duration) (bool, error) {
	if err := check(store, key); err != nil {
		return false, err
	}
	if err := checkValue(store, value, ttl); err != nil {
		return false, err
	}
	var row pgx.Row
	if old == nil {
		row = s.pool.QueryRow(ctx, s.q.Get("insert_if_absent"), account, store, key, nonNil(value), ttlMS(ttl))
	} else {
		row = s.pool.QueryRow(ctx, s.q.Get("compare_and_set"), account, store, key, old, nonNil(value), ttlMS(ttl))
	}
	var ok bool
	err := row.Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kv: compare-and-set in store %s of account %s: %w", store, account, err)
	}
	return true, nil
}

// List returns up to limit (at most MaxList; 0: 100) live entries of
// store whose keys start with prefix and sort after after, by key.
func (s *Stores) List(ctx context.Context, account, store string, prefix, after []byte, limit int) ([]Entry, error) {
	if !pgqueue.ValidName(store) {
		return nil, fmt.Errorf("kv: %w: store name %q: use 1-80 characters from A-Z a-z 0-9 _ -", ErrInvalid, store)
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, MaxList)
	rows, err := s.pool.Query(ctx, s.q.Get("list"), account, store, nonNil(prefix), nonNil(after), limit)
	if err != nil {
		return nil, fmt.Errorf("kv: list store %s of account %s: %w", store, account, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Entry, error) {
		var e Entry
		var exp *time.Time
		err := r.Scan(&e.Key, &e.Value, &exp, &e.UpdatedAt)
		if exp != nil {
			e.ExpiresAt = *exp
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("kv: list store %s of account %s: %w", store, account, err)
	}
	return out, nil
}

// Sweep deletes expired entries, up to 10,000 per call, and returns how
// many it deleted.
func (s *Stores) Sweep(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.q.Get("sweep"), 10_000)
	if err != nil {
		return 0, fmt.Errorf("kv: sweep: %w", err)
	}
	return tag.RowsAffected(), nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
