package guard

import (
	"bytes"
	"context"
	"errors"
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
	in := mod(tables)
	out, err := CapTables(in, 100)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseModule(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseTables(m.sections[0].content)
	if err != nil {
		t.Fatal(err)
	}
	// 83 entries left, 27 each.
	for i, want := range [][2]uint32{{10, 37}, {5, 5}, {2, 29}} {
		if g := got[i]; !g.hasMax || g.min != want[0] || g.max != want[1] {
			t.Errorf("table %d: %+v, want min %d max %d", i, g, want[0], want[1])
		}
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, out); err != nil {
		t.Fatalf("capped module does not compile: %v", err)
	}
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
