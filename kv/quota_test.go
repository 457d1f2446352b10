package kv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/kv"
)

// TestQuota: an account's stores together hold at most its quota of
// entries and bytes; a write past it is refused with ErrQuota, naming what
// the stores hold and the quota, and changes nothing; a write that grows
// nothing passes at the quota; deleting makes room.
func TestQuota(t *testing.T) {
	t.Parallel()
	plain, _ := newStores(t)
	quota := kv.Quota{Entries: 3, Bytes: 100}
	s := plain.WithQuota(func(context.Context, string) (kv.Quota, error) { return quota, nil })
	ctx := context.Background()
	k := func(i int) []byte { return []byte(fmt.Sprintf("k%d", i)) }

	for i := range 3 {
		if err := s.Set(ctx, acct, fmt.Sprintf("store%d", i%2), k(i), []byte("v"), 0); err != nil {
			t.Fatalf("set %d within the quota: %v", i, err)
		}
	}
	if u, err := s.Usage(ctx, acct); err != nil || u != (kv.Quota{Entries: 3, Bytes: 9}) {
		t.Fatalf("usage after 3 entries of 3 bytes: %+v, %v", u, err)
	}
	writes := map[string]func() error{
		"set": func() error { return s.Set(ctx, acct, "store0", k(9), []byte("v"), 0) },
		"increment": func() error {
			_, err := s.Increment(ctx, acct, "store0", k(9), 1)
			return err
		},
		"compare-and-set of an absent key": func() error {
			_, err := s.CompareAndSet(ctx, acct, "store0", k(9), nil, []byte("v"), 0)
			return err
		},
	}
	for what, write := range writes {
		err := write()
		if !errors.Is(err, kv.ErrQuota) {
			t.Fatalf("a 4th entry by %s: %v, want ErrQuota", what, err)
		}
		for _, want := range []string{"store store0", "hold 3 entries and 9 bytes", "quota is 3 entries and 100 bytes", "delete keys"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", what, err, want)
			}
		}
	}
	if _, found, _ := s.Get(ctx, acct, "store0", k(9)); found {
		t.Fatal("a refused write stored its key")
	}
	// At the quota, what grows nothing passes: the same value again, and
	// a compare-and-set to a value no larger.
	if err := s.Set(ctx, acct, "store0", k(0), []byte("w"), 0); err != nil {
		t.Fatalf("overwrite at the entries quota: %v", err)
	}
	if ok, err := s.CompareAndSet(ctx, acct, "store0", k(0), []byte("w"), []byte("x"), 0); !ok || err != nil {
		t.Fatalf("compare-and-set at the entries quota: %v %v", ok, err)
	}
	if ok, err := s.CompareAndSet(ctx, acct, "store0", k(0), []byte("other"), []byte("y"), 0); ok || err != nil {
		t.Fatalf("compare-and-set of another value at the quota: %v %v, want false and no error", ok, err)
	}
	// Bytes: growing a value past 100 bytes is refused, within them not.
	if err := s.Set(ctx, acct, "store0", k(0), []byte(strings.Repeat("x", 95)), 0); !errors.Is(err, kv.ErrQuota) {
		t.Fatalf("a value taking the account to 103 bytes: %v, want ErrQuota", err)
	}
	if err := s.Set(ctx, acct, "store0", k(0), []byte(strings.Repeat("x", 92)), 0); err != nil {
		t.Fatalf("a value taking the account to exactly 100 bytes: %v", err)
	}
	if u, _ := s.Usage(ctx, acct); u != (kv.Quota{Entries: 3, Bytes: 100}) {
		t.Fatalf("usage at the quota: %+v", u)
	}
	// Deleting makes room; the quota is of the account, across stores.
	if ok, err := s.Delete(ctx, acct, "store1", k(1)); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if err := s.Set(ctx, acct, "store1", k(7), []byte("v"), 0); err != nil {
		t.Fatalf("set into the room a delete made: %v", err)
	}
	// An increment counts its value as 20 bytes: 100 - 3 + 22 is over.
	if _, err := s.Increment(ctx, acct, "store1", k(7), 1); !errors.Is(err, kv.ErrQuota) {
		t.Fatalf("increment at the bytes quota: %v, want ErrQuota", err)
	}
	// A lowered quota refuses growth but lets the account shrink.
	quota = kv.Quota{Entries: 1}
	if err := s.Set(ctx, acct, "store0", k(0), []byte("small"), 0); err != nil {
		t.Fatalf("shrinking a value under a lowered quota: %v", err)
	}
	if err := s.Set(ctx, acct, "store0", k(0), []byte("larger value"), 0); !errors.Is(err, kv.ErrQuota) {
		t.Fatalf("growing a value under a lowered quota: %v, want ErrQuota", err)
	}
	// Stores without a quota are not limited.
	for i := range 5 {
		if err := plain.Set(ctx, acct, "store2", k(i), []byte("v"), 0); err != nil {
			t.Fatalf("set without a quota: %v", err)
		}
	}
}

// TestUsageFollowsEveryWrite: after random sets, increments,
// compare-and-sets, deletes and sweeps of expired keys from several
// connections at once, the usage is exactly what the entries hold.
func TestUsageFollowsEveryWrite(t *testing.T) {
	t.Parallel()
	s, row := newStores(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for range 200 {
				key := []byte(fmt.Sprintf("k%d", rng.IntN(30)))
				var err error
				switch rng.IntN(5) {
				case 0:
					err = s.Set(ctx, acct, "s", key, []byte(strings.Repeat("v", rng.IntN(50))), 0)
				case 1:
					err = s.Set(ctx, acct, "s", key, []byte("short-lived"), time.Millisecond)
				case 2:
					_, err = s.Increment(ctx, acct, "n", key, 1)
				case 3:
					_, err = s.CompareAndSet(ctx, acct, "s", key, nil, []byte("new"), 0)
				case 4:
					_, err = s.Delete(ctx, acct, "s", key)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		var entries, bytes int64
		if err := row("SELECT count(*), coalesce(sum(octet_length(key) + octet_length(value)), 0) FROM %s.kv_entries").Scan(&entries, &bytes); err != nil {
			t.Fatal(err)
		}
		u, err := s.Usage(ctx, acct)
		if err != nil || u != (kv.Quota{Entries: entries, Bytes: bytes}) {
			t.Fatalf("%s: usage %+v, %v; the entries hold %d and %d bytes", when, u, err, entries, bytes)
		}
	}
	check("after the writes")
	time.Sleep(5 * time.Millisecond) // past the short-lived keys' 1 ms
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a sweep")
}

// TestQuotaHoldsUnderConcurrentWrites: writers on many connections at
// once, each adding new keys by set, increment and compare-and-set of an
// absent key (the bytes' case: sets and compare-and-sets, 10 bytes an
// entry), take an account's stores to its quota and not one entry or byte
// past it: the writes that pass are exactly the quota's room, the rest get
// ErrQuota. Near its quota an account's writes check one at a time; far
// from it (more room than max_connections writes of the largest entry
// could take) they do not wait for each other, and the last case starts
// there and writes past the point where they must.
func TestQuotaHoldsUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.Schema(t)
	var maxConnections int64
	if err := pool.QueryRow(context.Background(), "SELECT current_setting('max_connections')::bigint").Scan(&maxConnections); err != nil {
		t.Fatal(err)
	}
	for _, quota := range []kv.Quota{{Entries: 10}, {Bytes: 100}, {Entries: maxConnections + 10}} {
		t.Run(quota.String(), func(t *testing.T) {
			t.Parallel()
			plain, row := newStores(t)
			s := plain.WithQuota(func(context.Context, string) (kv.Quota, error) { return quota, nil })
			ctx := context.Background()
			writers := 8
			each := int(max(quota.Entries, quota.Bytes/10))/writers + 4
			start := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			passed := 0
			errs := make(chan error, writers*each)
			for w := range writers {
				wg.Go(func() {
					<-start
					for i := range each {
						// 10 bytes: a 4-byte key (i < 100 where the bytes
						// count) and a 6-byte value.
						key := []byte(fmt.Sprintf("%d.%02d", w, i))
						op := i % 3
						if quota.Bytes > 0 && op == 1 {
							op = 0 // an increment counts as 24 bytes
						}
						var err error
						switch op {
						case 0:
							err = s.Set(ctx, acct, "s", key, []byte("value!"), 0)
						case 1:
							_, err = s.Increment(ctx, acct, "s", key, 1)
						case 2:
							var ok bool
							ok, err = s.CompareAndSet(ctx, acct, "s", key, nil, []byte("value!"), 0)
							if err == nil && !ok {
								err = fmt.Errorf("compare-and-set of the absent key %s: not set, and no error", key)
							}
						}
						switch {
						case err == nil:
							mu.Lock()
							passed++
							mu.Unlock()
						case !errors.Is(err, kv.ErrQuota):
							errs <- err
						}
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			var entries, bytes int64
			if err := row("SELECT count(*), coalesce(sum(octet_length(key) + octet_length(value)), 0) FROM %s.kv_entries").Scan(&entries, &bytes); err != nil {
				t.Fatal(err)
			}
			if quota.Entries > 0 && (entries != quota.Entries || int64(passed) != quota.Entries) {
				t.Errorf("%d writes of a new key at once under a quota of %d entries: %d passed, the stores hold %d entries", writers*each, quota.Entries, passed, entries)
			}
			if quota.Bytes > 0 && (bytes != quota.Bytes || int64(passed) != quota.Bytes/10) {
				t.Errorf("%d writes of a new 10-byte entry at once under a quota of %d bytes: %d passed, the stores hold %d bytes", writers*each, quota.Bytes, passed, bytes)
			}
			if u, err := s.Usage(ctx, acct); err != nil || u != (kv.Quota{Entries: entries, Bytes: bytes}) {
				t.Errorf("usage %+v, %v; the entries hold %d and %d bytes", u, err, entries, bytes)
			}
		})
	}
}
