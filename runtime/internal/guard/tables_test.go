package guard

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
)

func TestCapTables(t *testing.T) {
	t.Parallel()
	header := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	mod := func(sections ...[]byte) []byte {
		out := append([]byte{}, header...)
		for _, s := range sections {
			out = appendSection(out, s[0], s[1:])
		}
		return out
	}
	// Tables: 10 entries without a maximum; 5 with maximum 5; a table of
	// 2 with maximum 1000 and an initializer (ref.null func).
	tables := []byte{4, 3, 0x70, 0x00, 10, 0x70, 0x01, 5, 5, 0x40, 0x00, 0x70, 0x01, 2, 0xe8, 0x07, 0xd0, 0x70, 0x0b}
	// One function of type () -> (), whose body is given.
	withCode := func(body ...byte) [][]byte {
		return [][]byte{{1, 1, 0x60, 0, 0}, {3, 1, 0}, tables, append([]byte{10, 1, byte(len(body))}, body...)}
	}
	// ref.null func; i32.const 1; table.grow 0; drop; end
	grow := withCode(0x00, 0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x1a, 0x0b)
	// i32.const 0; table.size 0; drop; drop; end
	noGrow := withCode(0x00, 0x41, 0x00, 0xfc, 0x10, 0x00, 0x1a, 0x1a, 0x0b)
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	capped := func(in []byte, budget uint64, want [][2]uint32) []byte {
		t.Helper()
		out, err := CapTables(in, budget)
		if err != nil {
			t.Fatal(err)
		}
		m, err := parseModule(out)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(m.sections, func(s section) bool { return s.id == 4 })
		got, err := parseTables(m.sections[i].content)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range want {
			if g := got[i]; !g.hasMax || g.min != want[0] || g.max != want[1] {
				t.Errorf("budget %d, table %d: %+v, want min %d max %d", budget, i, g, want[0], want[1])
			}
		}
		if _, err := r.CompileModule(ctx, out); err != nil {
			t.Fatalf("capped module does not compile: %v", err)
		}
		return out
	}
	// A module that grows tables: 83 entries left, 27 each.
	in := mod(grow...)
	out := capped(in, 100, [][2]uint32{{10, 37}, {5, 5}, {2, 29}})
	// One that cannot (no table.grow; no code at all): each table's
	// maximum is its initial size, whatever the budget.
	fixed := capped(mod(noGrow...), 100, [][2]uint32{{10, 10}, {5, 5}, {2, 2}})
	if other := capped(mod(noGrow...), 5000, [][2]uint32{{10, 10}, {5, 5}, {2, 2}}); !bytes.Equal(other, fixed) {
		t.Error("a module without table.grow capped differently for another budget")
	}
	capped(mod(tables), 100, [][2]uint32{{10, 10}, {5, 5}, {2, 2}})
	// Within budget and all maxima low enough: the same bytes.
	if again, err := CapTables(out, 100); err != nil || !bytes.Equal(again, out) || &again[0] != &out[0] {
		t.Fatalf("second pass: err %v, changed %v", err, !bytes.Equal(again, out))
	}
	// Initial sizes over the budget.
	var te *TableError
	if _, err := CapTables(in, 14); !errors.As(err, &te) || te.Table != 1 || te.Entries != 5 || te.Total != 15 {
		t.Fatalf("over budget: %v, want table 1 named", err)
	}
	// An imported table.
	imp := []byte{2, 1, 1, 'e', 1, 't', 0x01, 0x70, 0x00, 0x01}
	if _, err := CapTables(mod(imp), 100); !errors.As(err, &te) || te.Import != `"e"."t"` {
		t.Fatalf("imported table: %v", err)
	}
	if _, err := CapTables(mod([]byte{4, 1, 0x70, 0x05, 1}), 100); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad limits flags: %v, want ErrMalformed", err)
	}
}
