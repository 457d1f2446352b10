package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/runtime"
)

// Hand-assembled modules (WAT in the comments) whose tables would hold
// far more host memory than their memory_mb: wazero keeps 8 bytes per
// table entry, outside the linear memory the limit caps.

// bigTable: (module (table 50000000 funcref) (func (export "_start"))).
var bigTable = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: ()->()
	0x03, 0x02, 0x01, 0x00, // funcs: _start
	0x04, 0x07, 0x01, 0x70, 0x00, 0x80, 0xe1, 0xeb, 0x17, // table 50000000 funcref
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b,
}

// manyTables declares 16 tables of 2^27 entries (1 GiB each).
func manyTables() []byte {
	tables := []byte{0x10}
	for range 16 {
		tables = append(tables, 0x70, 0x00, 0x80, 0x80, 0x80, 0x40)
	}
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00}
	m = append(append(m, 0x04, byte(len(tables))), tables...)
	return append(m, 0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
		0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b)
}

// growTable starts with a one-entry table without a maximum and grows it
// at run time:
//
//	(table 1 funcref) (memory (export "memory") 1)
//	(func (export "_start")
//	  (if (i32.eq (table.grow 0 (ref.null func) (i32.const 100000)) (i32.const -1)) (then unreachable))
//	  (if (i32.ne (table.grow 0 (ref.null func) (i32.const 50000000)) (i32.const -1)) (then unreachable))
//	  (table.fill 0 (i32.const 0) (ref.null func) (table.size 0)))
//
// It succeeds when growing by 100,000 entries (800 KB) works and growing
// by 50,000,000 (400 MB) is refused.
var growTable = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60,
	0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x04, 0x04, 0x01, 0x70, 0x00, 0x01,
	0x05, 0x03, 0x01, 0x00, 0x01, 0x07, 0x13, 0x02, 0x06, 0x6d, 0x65, 0x6d,
	0x6f, 0x72, 0x79, 0x02, 0x00, 0x06, 0x5f, 0x73, 0x74, 0x61, 0x72, 0x74,
	0x00, 0x00, 0x0a, 0x2f, 0x01, 0x2d, 0x00, 0xd0, 0x70, 0x41, 0xa0, 0x8d,
	0x06, 0xfc, 0x0f, 0x00, 0x41, 0x7f, 0x46, 0x04, 0x40, 0x00, 0x0b, 0xd0,
	0x70, 0x41, 0x80, 0xe1, 0xeb, 0x17, 0xfc, 0x0f, 0x00, 0x41, 0x7f, 0x47,
	0x04, 0x40, 0x00, 0x0b, 0x41, 0x00, 0xd0, 0x70, 0xfc, 0x10, 0x00, 0xfc,
	0x11, 0x00, 0x0b,
}

// TestTablesCountAgainstMemoryLimit: tables whose initial size cannot fit
// memory_mb are refused at load, naming the table and the limit, and
// table.grow cannot take a table past it at run time.
func TestTablesCountAgainstMemoryLimit(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		wasm []byte
		mib  int
		want string
	}{
		{"50M-entry table", bigTable, 1, "table 0 needs 382 MiB at start (50000000 entries), over the 1 MiB limit"},
		{"16 tables of 2^27 entries", manyTables(), runtime.MaxMemoryMiB, "table 4 needs 1024 MiB at start (134217728 entries; 5120 MiB with the tables before it), over the 4096 MiB limit"},
	} {
		f, err := rt.Load(ctx, tc.wasm, runtime.FunctionConfig{Name: "tables", MemoryMiB: tc.mib})
		if f != nil {
			_ = f.Close(ctx)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// The runtime keeps a module compiled while a Function holds it, by its
	// bytes and its limit: the same bytes under a lower limit are capped
	// (here: refused) again, not found compiled for the higher one.
	loadBytes(t, rt, bigTable, runtime.FunctionConfig{Name: "tables", MemoryMiB: 512})
	if f, err := rt.Load(ctx, bigTable, runtime.FunctionConfig{Name: "tables", MemoryMiB: 1}); err == nil || !strings.Contains(err.Error(), "over the 1 MiB limit") {
		if f != nil {
			_ = f.Close(ctx)
		}
		t.Errorf("50M-entry table at 1 MiB while loaded at 512 MiB: Load error %v, want the table refused", err)
	}
	f := loadBytes(t, rt, growTable, runtime.FunctionConfig{Name: "grow", MemoryMiB: 1})
	for range 2 {
		if res := invoke(t, f, batch(`1`)); !res.OK() {
			t.Fatalf("growing the table: %v, want growth within the 1 MiB limit to work and past it to fail", res.Failure)
		}
	}
}
