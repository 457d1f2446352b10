package triggers

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// TestDryRunKVBounded: a dry run keeps at most maxDryRunBytes and
// maxDryRunEntries of writes in the server's memory; past them a write
// fails with ErrKVLimit and changes nothing, while overwriting a key it
// holds, or reading, still works.
func TestDryRunKVBounded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations, kv.Migrations)
	stores, err := kv.New(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	base := AccountKV(stores, pgqueue.DefaultAccount)

	d := newDryRunKV(base)
	mib := bytes.Repeat([]byte("x"), 1<<20)
	var n int
	for ; n < 32; n++ {
		if err = d.Set(ctx, "s", []byte(fmt.Sprint(n)), mib, 0); err != nil {
			break
		}
	}
	if !errors.Is(err, runtime.ErrKVLimit) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes of writes", maxDryRunBytes)) {
		t.Fatalf("write %d of 1 MiB: %v, want ErrKVLimit naming the bound", n+1, err)
	}
	if n != maxDryRunBytes>>20-1 || d.bytes > maxDryRunBytes {
		t.Errorf("kept %d writes of 1 MiB, %d bytes; want %d, within %d", n, d.bytes, maxDryRunBytes>>20-1, maxDryRunBytes)
	}
	if _, ok, _ := d.Get(ctx, "s", []byte(fmt.Sprint(n))); ok {
		t.Errorf("the refused write %d is kept", n)
	}
	if err := d.Set(ctx, "s", []byte("0"), mib, 0); err != nil {
		t.Errorf("overwriting a key the run holds, at the bound: %v", err)
	}
	if v, ok, err := d.Get(ctx, "s", []byte("1")); err != nil || !ok || len(v) != 1<<20 {
		t.Errorf("read at the bound: %d bytes, %v, %v", len(v), ok, err)
	}

	d = newDryRunKV(base)
	for i := range maxDryRunEntries {
		if _, err := d.Increment(ctx, "s", []byte(fmt.Sprint(i)), 1); err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
	}
	if _, err := d.Delete(ctx, "s", []byte("new")); !errors.Is(err, runtime.ErrKVLimit) {
		t.Errorf("a delete of a new key past %d entries: %v, want ErrKVLimit", maxDryRunEntries, err)
	}
	if _, err := d.Increment(ctx, "s", []byte("0"), 1); err != nil {
		t.Errorf("incrementing a key the run holds, at the bound: %v", err)
	}
}
