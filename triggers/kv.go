package triggers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
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

// dryRunKV serves the kv_* calls of a dry-run invoke: reads see the
// account's stores and the run's own writes, and the writes stay in the run
// and are dropped with it. Expiries are not kept: a run lasts less than
// any the guest can set matters for. The writes kept are bounded
// (maxDryRunEntries, maxDryRunBytes), since they live in the server's
// memory and no account quota counts them: a write past the bounds fails
// with runtime.ErrKVLimit (errno limit).
type dryRunKV struct {
	base runtime.KV
	mu   sync.Mutex
	// writes holds the run's writes by store and key; a nil value is a
	// delete. bytes is the size of their keys and values.
	writes map[string][]byte
	bytes  int
}

// The bounds of one dry run's writes: distinct keys written (deletes
// included), and bytes of store names, keys and values.
const (
	maxDryRunEntries = 10_000
	maxDryRunBytes   = 16 << 20
)

// put keeps a write of the run, within its bounds; the caller holds mu.
func (d *dryRunKV) put(store string, key, value []byte) error {
	k := dryRunKey(store, key)
	old, had := d.writes[k]
	size := d.bytes + len(value)
	if had {
		size -= len(old)
	} else {
		size += len(k)
	}
	if !had && len(d.writes) >= maxDryRunEntries || size > maxDryRunBytes {
		return fmt.Errorf("%w: a dry run keeps at most %d keys and %d bytes of writes (it has %d keys, %d bytes)",
			runtime.ErrKVLimit, maxDryRunEntries, maxDryRunBytes, len(d.writes), d.bytes)
	}
	d.writes[k], d.bytes = value, size
	return nil
}

func newDryRunKV(base runtime.KV) *dryRunKV {
	return &dryRunKV{base: base, writes: map[string][]byte{}}
}

func dryRunKey(store string, key []byte) string { return store + "\x00" + string(key) }

// get reads through the run's writes; the caller holds mu.
func (d *dryRunKV) get(ctx context.Context, store string, key []byte) ([]byte, bool, error) {
	if v, ok := d.writes[dryRunKey(store, key)]; ok {
		return v, v != nil, nil
	}
	return d.base.Get(ctx, store, key)
}

func (d *dryRunKV) Get(ctx context.Context, store string, key []byte) ([]byte, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok, err := d.get(ctx, store, key)
	return bytes.Clone(v), ok, err
}

func (d *dryRunKV) Set(_ context.Context, store string, key, value []byte, _ time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.put(store, key, append([]byte{}, value...))
}

func (d *dryRunKV) Delete(ctx context.Context, store string, key []byte) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok, err := d.get(ctx, store, key)
	if err != nil {
		return false, err
	}
	if err := d.put(store, key, nil); err != nil {
		return false, err
	}
	return ok, nil
}

func (d *dryRunKV) Increment(ctx context.Context, store string, key []byte, delta int64) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok, err := d.get(ctx, store, key)
	if err != nil {
		return 0, err
	}
	var n int64
	if ok {
		if n, err = strconv.ParseInt(string(v), 10, 64); err != nil {
			return 0, fmt.Errorf("%w: increment key in store %s: the value is not a 64-bit decimal integer", runtime.ErrKVInvalid, store)
		}
	}
	if delta > 0 && n > math.MaxInt64-delta || delta < 0 && n < math.MinInt64-delta {
		return 0, fmt.Errorf("%w: increment key in store %s: the value would overflow", runtime.ErrKVInvalid, store)
	}
	n += delta
	if err := d.put(store, key, strconv.AppendInt(nil, n, 10)); err != nil {
		return 0, err
	}
	return n, nil
}

func (d *dryRunKV) CompareAndSet(ctx context.Context, store string, key, old, value []byte, _ time.Duration) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok, err := d.get(ctx, store, key)
	if err != nil {
		return false, err
	}
	if old == nil && ok || old != nil && (!ok || !bytes.Equal(cur, old)) {
		return false, nil
	}
	if err := d.put(store, key, append([]byte{}, value...)); err != nil {
		return false, err
	}
	return true, nil
}
