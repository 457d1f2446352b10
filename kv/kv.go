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
	// ErrQuota: the write would take the account's stores past its Quota.
	ErrQuota = errors.New("quota exceeded")
)

// Quota bounds what all the stores of one account hold together: entries,
// and bytes of keys plus values (expired entries count until swept; an
// increment counts its value as 20 bytes). Zero means no limit. A write
// that grows nothing (an existing key given a value no larger) always
// passes, so an account over a lowered quota can still shrink.
type Quota struct {
	Entries int64
	Bytes   int64
}

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
	pool  *pgxpool.Pool
	q     namedsql.Statements
	quota func(ctx context.Context, account string) (Quota, error)
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

// WithQuota returns the same stores, refusing with ErrQuota a write that
// would take an account past quota(account). The quota is checked in the
// statement that writes and holds for writes at once on any number of
// connections: near its quota (within max_connections entries, or that
// many entries of the largest size), an account's writes that can grow
// its stores check one at a time, each waiting for the one before to
// commit; further from it they do not wait (kv migration 003).
func (s *Stores) WithQuota(quota func(ctx context.Context, account string) (Quota, error)) *Stores {
	c := *s
	c.quota = quota
	return &c
}

// Usage returns what the stores of account hold together: entries, and
// bytes of keys plus values, expired entries included until swept.
func (s *Stores) Usage(ctx context.Context, account string) (Quota, error) {
	var u Quota
	if err := s.pool.QueryRow(ctx, s.q.Get("usage"), account).Scan(&u.Entries, &u.Bytes); err != nil {
		return Quota{}, fmt.Errorf("kv: usage of account %s: %w", account, err)
	}
	return u, nil
}

// quotaOf returns account's quota (zero without WithQuota).
func (s *Stores) quotaOf(ctx context.Context, account string) (Quota, error) {
	if s.quota == nil {
		return Quota{}, nil
	}
	q, err := s.quota(ctx, account)
	if err != nil {
		return Quota{}, fmt.Errorf("kv: quota of account %s: %w", account, err)
	}
	return q, nil
}

// overQuota is the error of a write to store refused for account's quota q.
func (s *Stores) overQuota(ctx context.Context, account, store string, q Quota) error {
	u, err := s.Usage(ctx, account)
	if err != nil {
		return err
	}
	return fmt.Errorf("kv: %w: write to store %s: account %s's stores hold %d entries and %d bytes (keys plus values), and its quota is %s; delete keys, or ask the operator to raise the quota",
		ErrQuota, store, account, u.Entries, u.Bytes, q)
}

// String names the quota's bounds, for errors.
func (q Quota) String() string {
	part := func(n int64, what string) string {
		if n == 0 {
			return "any number of " + what
		}
		return fmt.Sprintf("%d %s", n, what)
	}
	return part(q.Entries, "entries") + " and " + part(q.Bytes, "bytes")
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
	q, err := s.quotaOf(ctx, account)
	if err != nil {
		return err
	}
	var ok bool
	err = s.pool.QueryRow(ctx, s.q.Get("set"), account, store, key, nonNil(value), ttlMS(ttl), q.Entries, q.Bytes).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.overQuota(ctx, account, store, q)
	}
	if err != nil {
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
	q, err := s.quotaOf(ctx, account)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.pool.QueryRow(ctx, s.q.Get("increment"), account, store, key, delta, q.Entries, q.Bytes).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, s.overQuota(ctx, account, store, q)
	}
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
	q, err := s.quotaOf(ctx, account)
	if err != nil {
		return false, err
	}
	var row pgx.Row
	if old == nil {
		row = s.pool.QueryRow(ctx, s.q.Get("insert_if_absent"), account, store, key, nonNil(value), ttlMS(ttl), q.Entries, q.Bytes)
	} else {
		row = s.pool.QueryRow(ctx, s.q.Get("compare_and_set"), account, store, key, old, nonNil(value), ttlMS(ttl), q.Entries, q.Bytes)
	}
	var ok bool
	err = row.Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		// Not set: another value (or, with old nil, a live key), or the quota.
		if q == (Quota{}) {
			return false, nil
		}
		var within bool
		if err := s.pool.QueryRow(ctx, s.q.Get("within_quota"), account, store, key, int64(len(key)+len(value)),
			q.Entries, q.Bytes).Scan(&within); err != nil {
			return false, fmt.Errorf("kv: compare-and-set in store %s of account %s: %w", store, account, err)
		}
		if !within {
			return false, s.overQuota(ctx, account, store, q)
		}
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
