package runtime

import (
	"context"
	"errors"
	"time"
)

// KV is the key-value service behind the kv_* host functions, provided by
// the caller (package kv over Postgres) and already bound to the
// function's account. Keys and values are bytes; store is one of the
// function's Stores. Implementations must be safe for concurrent use.
type KV interface {
	// Get returns the value of key, or found false.
	Get(ctx context.Context, store string, key []byte) (value []byte, found bool, err error)
	// Set stores value at key, expiring after ttl (0: never).
	Set(ctx context.Context, store string, key, value []byte, ttl time.Duration) error
	// Delete removes key and reports whether it existed.
	Delete(ctx context.Context, store string, key []byte) (bool, error)
	// Increment adds delta to the decimal integer at key (absent: 0),
	// keeping its expiry, and returns the new value. A value that is not
	// an integer fails with an error wrapping ErrKVInvalid.
	Increment(ctx context.Context, store string, key []byte, delta int64) (int64, error)
	// CompareAndSet sets key to value, expiring after ttl (0: never), only
	// if it holds old (old nil: only if key is absent), and reports
	// whether it did.
	CompareAndSet(ctx context.Context, store string, key, old, value []byte, ttl time.Duration) (bool, error)
}

// ErrKVInvalid marks a KV call refused for its arguments (such as
// incrementing a value that is not an integer).
var ErrKVInvalid = errors.New("invalid")

// ErrKVLimit marks a KV write refused because the function's account is
// at its key-value quota; the guest gets errno limit.
var ErrKVLimit = errors.New("limit")

// Key-value bounds.
const (
	// MaxKVKeyBytes caps a key.
	MaxKVKeyBytes = 1024
	// DefaultMaxKVValueBytes caps a value unless FunctionConfig says less.
	DefaultMaxKVValueBytes = 1 << 20
	// MaxKVTTL is the longest expiry a guest may set.
	MaxKVTTL = 10 * 365 * 24 * time.Hour
)
