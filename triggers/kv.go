package triggers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/runtime"
)

// accountKV serves a function's kv_* host calls from the key-value stores
// of its account.
type accountKV struct {
	s       *kv.Stores
	account string
}

var _ runtime.KV = accountKV{}

func kvErr(err error) error {
	if errors.Is(err, kv.ErrInvalid) {
		return fmt.Errorf("%w: %w", runtime.ErrKVInvalid, err)
	}
	if errors.Is(err, kv.ErrQuota) {
		return fmt.Errorf("%w: %w", runtime.ErrKVLimit, err)
	}
	return err
}

func (a accountKV) Get(ctx context.Context, store string, key []byte) ([]byte, bool, error) {
	v, ok, err := a.s.Get(ctx, a.account, store, key)
	return v, ok, kvErr(err)
}

func (a accountKV) Set(ctx context.Context, store string, key, value []byte, ttl time.Duration) error {
	return kvErr(a.s.Set(ctx, a.account, store, key, value, ttl))
}

func (a accountKV) Delete(ctx context.Context, store string, key []byte) (bool, error) {
	ok, err := a.s.Delete(ctx, a.account, store, key)
	return ok, kvErr(err)
}

func (a accountKV) Increment(ctx context.Context, store string, key []byte, delta int64) (int64, error) {
	n, err := a.s.Increment(ctx, a.account, store, key, delta)
	return n, kvErr(err)
}

func (a accountKV) CompareAndSet(ctx context.Context, store string, key, old, value []byte, ttl time.Duration) (bool, error) {
	ok, err := a.s.CompareAndSet(ctx, a.account, store, key, old, value, ttl)
	return ok, kvErr(err)
}

// AccountKV returns the runtime.KV that serves a function's kv_* host
// calls from the stores of account in s (what the engine gives each
// function; `sluice invoke` and tests use it too).
func AccountKV(s *kv.Stores, account string) runtime.KV { return accountKV{s: s, account: account} }
