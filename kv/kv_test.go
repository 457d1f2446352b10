package kv_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
)

const acct = pgqueue.DefaultAccount

func newStores(t *testing.T) (*kv.Stores, func(sql string, args ...any) pgx.Row) {
	t.Helper()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations, kv.Migrations)
	s, err := kv.New(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	return s, func(sql string, args ...any) pgx.Row {
		return pool.QueryRow(context.Background(), fmt.Sprintf(sql, pgx.Identifier{schema}.Sanitize()), args...)
	}
}

func TestGetSetDelete(t *testing.T) {
	t.Parallel()
	s, row := newStores(t)
	ctx := context.Background()
	if _, found, err := s.Get(ctx, acct, "sessions", []byte("u1")); found || err != nil {
		t.Fatalf("get absent: %v %v", found, err)
	}
	if err := s.Set(ctx, acct, "sessions", []byte("u1"), []byte("tok"), 0); err != nil {
		t.Fatal(err)
	}
	v, found, err := s.Get(ctx, acct, "sessions", []byte("u1"))
	if !found || err != nil || string(v) != "tok" {
		t.Fatalf("get: %q %v %v", v, found, err)
	}
	if _, found, _ := s.Get(ctx, acct, "other", []byte("u1")); found {
		t.Error("a key is visible in another store")
	}
	var text string
	if err := row("SELECT value_text FROM %s.kv WHERE store = 'sessions' AND key_text = 'u1'").Scan(&text); err != nil || text != "tok" {
		t.Errorf("view kv: %q %v", text, err)
	}
	if ok, err := s.Delete(ctx, acct, "sessions", []byte("u1")); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := s.Delete(ctx, acct, "sessions", []byte("u1")); ok || err != nil {
		t.Fatalf("delete again: %v %v", ok, err)
	}
	for _, bad := range []error{
		s.Set(ctx, acct, "bad name", []byte("k"), nil, 0),
		s.Set(ctx, acct, "s", nil, nil, 0),
		s.Set(ctx, acct, "s", []byte("k"), make([]byte, kv.MaxValueBytes+1), 0),
		s.Set(ctx, acct, "s", []byte("k"), nil, -time.Second),
	} {
		if !errors.Is(bad, kv.ErrInvalid) {
			t.Errorf("want ErrInvalid, got %v", bad)
		}
	}
}

func TestTTLAndSweep(t *testing.T) {
	t.Parallel()
	s, row := newStores(t)
	ctx := context.Background()
	// The short key must be read until its TTL has passed and not after.
	// It expires between before+ttl and after+ttl (the Set's transaction
	// ran in between), so a slow machine cannot make either check fail.
	const ttl = time.Second
	before := time.Now()
	if err := s.Set(ctx, acct, "s", []byte("short"), []byte("x"), ttl); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if err := s.Set(ctx, acct, "s", []byte("long"), []byte("y"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Get(ctx, acct, "s", []byte("short")); !found && time.Since(before) < ttl {
		t.Fatal("short-lived key gone before its TTL")
	}
	time.Sleep(time.Until(after.Add(ttl + 10*time.Millisecond)))
	if _, found, _ := s.Get(ctx, acct, "s", []byte("short")); found {
		t.Error("expired key still read")
	}
	if ok, _ := s.CompareAndSet(ctx, acct, "s", []byte("short"), []byte("x"), []byte("z"), 0); ok {
		t.Error("compare-and-set matched an expired value")
	}
	if n, err := s.Increment(ctx, acct, "s", []byte("short"), 5); err != nil || n != 5 {
		t.Errorf("increment of an expired key: %d %v, want 5", n, err)
	}
	if err := s.Set(ctx, acct, "s", []byte("gone"), []byte("x"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	n, err := s.Sweep(ctx)
	if err != nil || n != 1 {
		t.Errorf("sweep: %d %v, want 1", n, err)
	}
	var left int
	if err := row("SELECT count(*) FROM %s.kv_entries").Scan(&left); err != nil || left != 2 {
		t.Errorf("entries left %d %v, want 2 (long, short incremented)", left, err)
	}
	es, err := s.List(ctx, acct, "s", nil, nil, 0)
	if err != nil || len(es) != 2 || es[0].ExpiresAt.IsZero() || !es[1].ExpiresAt.IsZero() {
		t.Errorf("list: %+v %v", es, err)
	}
}

func TestIncrementConcurrently(t *testing.T) {
	t.Parallel()
	s, _ := newStores(t)
	ctx := context.Background()
	const workers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := s.Increment(ctx, acct, "counts", []byte("n"), 1); err != nil {
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
	v, _, _ := s.Get(ctx, acct, "counts", []byte("n"))
	if string(v) != strconv.Itoa(workers*each) {
		t.Errorf("counter %s, want %d", v, workers*each)
	}
	if err := s.Set(ctx, acct, "counts", []byte("word"), []byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Increment(ctx, acct, "counts", []byte("word"), 1); !errors.Is(err, kv.ErrInvalid) {
		t.Errorf("increment a word: %v, want ErrInvalid", err)
	}
}

// Many goroutines increment through compare-and-set loops: no update is
// lost, and exactly one insert-if-absent wins.
func TestCompareAndSetConcurrently(t *testing.T) {
	t.Parallel()
	s, _ := newStores(t)
	ctx := context.Background()
	const workers, each = 8, 10
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		inserts int
		failed  error
	)
	for range workers {
		wg.Go(func() {
			if ok, err := s.CompareAndSet(ctx, acct, "cas", []byte("first"), nil, []byte("me"), 0); err == nil && ok {
				mu.Lock()
				inserts++
				mu.Unlock()
			}
			for range each {
				for {
					cur, found, err := s.Get(ctx, acct, "cas", []byte("n"))
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
					n, old := 0, []byte(nil)
					if found {
						n, _ = strconv.Atoi(string(cur))
						old = cur
					}
					ok, err := s.CompareAndSet(ctx, acct, "cas", []byte("n"), old, []byte(strconv.Itoa(n+1)), 0)
					if err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
					if ok {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	v, _, _ := s.Get(ctx, acct, "cas", []byte("n"))
	if string(v) != strconv.Itoa(workers*each) || inserts != 1 {
		t.Errorf("counter %s (want %d), inserts %d (want 1)", v, workers*each, inserts)
	}
}

func TestListPrefix(t *testing.T) {
	t.Parallel()
	s, _ := newStores(t)
	ctx := context.Background()
	for _, k := range []string{"a/1", "a/2", "a/3", "b/1"} {
		if err := s.Set(ctx, acct, "l", []byte(k), []byte("v"+k), 0); err != nil {
			t.Fatal(err)
		}
	}
	es, err := s.List(ctx, acct, "l", []byte("a/"), nil, 2)
	if err != nil || len(es) != 2 || string(es[0].Key) != "a/1" || string(es[1].Value) != "va/2" {
		t.Fatalf("first page: %+v %v", es, err)
	}
	es, err = s.List(ctx, acct, "l", []byte("a/"), es[1].Key, 2)
	if err != nil || len(es) != 1 || string(es[0].Key) != "a/3" {
		t.Fatalf("second page: %+v %v", es, err)
	}
}

// TestMigrationsDownAndUp: the key-value line's migrations revert, newest
// first, leaving none of its tables or functions, and apply again.
func TestMigrationsDownAndUp(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations, kv.Migrations)
	ctx := context.Background()
	if err := migrate.Down(ctx, pool, schema, kv.Migrations); err != nil {
		t.Fatalf("down: %v", err)
	}
	var left []string
	rows, err := pool.Query(ctx, `SELECT relname FROM pg_class WHERE relnamespace = $1::regnamespace AND relname LIKE 'kv%'
	                              UNION ALL SELECT proname FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'kv%'`, schema)
	if err == nil {
		left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(left) > 0 {
		t.Fatalf("left after down: %v (%v)", left, err)
	}
	if err := migrate.Up(ctx, pool, schema, pgqueue.Migrations, kv.Migrations); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	s, err := kv.New(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	s = s.WithQuota(func(context.Context, string) (kv.Quota, error) { return kv.Quota{Entries: 1}, nil })
	if err := s.Set(ctx, acct, "s", []byte("k"), []byte("v"), 0); err != nil {
		t.Fatalf("set after up: %v", err)
	}
}
