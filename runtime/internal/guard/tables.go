package guard

import (
	"fmt"
)

// TableEntryBytes is what the host holds per table entry: wazero keeps a
// table as a slice of pointer-sized references, allocated in full when the
// module is instantiated or the table grows.
const TableEntryBytes = 8

// TableError refuses a module whose tables cannot fit their budget, or that
// imports a table.
type TableError struct {
	// Table is the index of the table at fault; Entries its initial size
	// and Total the initial sizes of all the module's tables up to it.
	Table   uint32
	Entries uint64
	Total   uint64
	// Import is "module"."name" when the table is imported.
	Import string
}

func (e *TableError) Error() string {
	if e.Import != "" {
		return fmt.Sprintf("table %d is imported (%s); the host provides no table", e.Table, e.Import)
	}
	return fmt.Sprintf("table %d declares %d entries at start (%d in all tables up to it)", e.Table, e.Entries, e.Total)
}

// CapTables bounds what a module's tables can hold: at most budget entries
// in all, initial sizes and growth (table.grow, which wazero honours up to
// a table's maximum) together. It refuses, with a *TableError, a module
// importing a table or whose tables' initial sizes add up to more than
// budget; otherwise it lowers the maximum of each table (setting one where
// none is declared) to its initial size plus an equal share of what the
// budget leaves. A module whose code holds no table.grow cannot grow a
// table (the host grows none), so each of its tables gets its initial size
// as maximum instead: the result is then the same whatever the budget, and
// so is the code compiled from it, which the runtime shares between the
// functions and memory limits that load the same module. It returns wasm
// itself when no maximum needs lowering.
func CapTables(wasm []byte, budget uint64) ([]byte, error) {
	m, err := parseModule(wasm)
	if err != nil {
		return nil, err
	}
	if m.importedTable != "" {
		return nil, &TableError{Import: m.importedTable}
	}
	at, code := -1, -1
	for i, sec := range m.sections {
		switch sec.id {
		case 4:
			at = i
		case 10:
			code = i
		}
	}
	if at < 0 {
		return wasm, nil
	}
	tableSec := m.sections[at].content
	tables, err := parseTables(tableSec)
	if err != nil {
		return nil, err
	}
	var total uint64
	for i, t := range tables {
		total += uint64(t.min)
		if total > budget {
			return nil, &TableError{Table: uint32(i), Entries: uint64(t.min), Total: total}
		}
	}
	share := (budget - total) / uint64(len(tables))
	grows := false
	if code >= 0 {
		if grows, err = usesFC(m.sections[code].content, 15); err != nil { // table.grow
			return nil, err
		}
	}
	if !grows {
		share = 0
	}
	changed := false
	for i := range tables {
		t := &tables[i]
		limit := uint64(t.min) + share
		if !t.hasMax || uint64(t.max) > limit {
			t.max, t.hasMax, changed = uint32(min(limit, 1<<32-1)), true, true
		}
	}
	if !changed {
		return wasm, nil
	}
	sec := appendU32(nil, uint32(len(tables)))
	for _, t := range tables {
		sec = append(sec, t.prefix...)
		sec = append(sec, 0x01)
		sec = appendU32(sec, t.min)
		sec = appendU32(sec, t.max)
		sec = append(sec, t.suffix...)
	}
	out := make([]byte, 0, len(wasm)+len(tables)*5)
	out = append(out, wasm[:8]...)
	for i, s := range m.sections {
		if i == at {
			s.content = sec
		}
		out = appendSection(out, s.id, s.content)
	}
	return out, nil
}

// table is one entry of the table section: the bytes before its limits
// (reference type, and the 0x40 0x00 of a table with an initializer),
// its limits, and the bytes after them (the initializer).
type table struct {
	prefix, suffix []byte
	min, max       uint32
	hasMax         bool
}

func parseTables(content []byte) ([]table, error) {
	r := reader{b: content}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	tables := make([]table, 0, min(n, 1024))
	for i := uint32(0); i < n; i++ {
		start := r.off
		b, err := r.byte()
		if err != nil {
			return nil, err
		}
		init := b == 0x40
		if init {
			if _, err := r.byte(); err != nil { // reserved 0x00
				return nil, err
			}
			if b, err = r.byte(); err != nil {
				return nil, err
			}
		}
		if b == 0x63 || b == 0x64 { // (ref null? heaptype)
			if err := r.skipLEB(5); err != nil {
				return nil, err
			}
		}
		t := table{prefix: content[start:r.off]}
		flags, err := r.byte()
		if err != nil {
			return nil, err
		}
		if flags > 1 {
			return nil, fmt.Errorf("%w: table %d limits flags %#x", ErrMalformed, i, flags)
		}
		if t.min, err = r.u32(); err != nil {
			return nil, err
		}
		if t.hasMax = flags == 1; t.hasMax {
			if t.max, err = r.u32(); err != nil {
				return nil, err
			}
		}
		start = r.off
		if init {
			if err := skipConstExpr(&r); err != nil {
				return nil, fmt.Errorf("table %d initializer: %w", i, err)
			}
		}
		t.suffix = content[start:r.off]
		tables = append(tables, t)
	}
	if r.off != len(content) {
		return nil, fmt.Errorf("%w: %d stray bytes after the table section's tables", ErrMalformed, len(content)-r.off)
	}
	return tables, nil
}

// skipConstExpr skips a constant expression up to its end.
func skipConstExpr(r *reader) error {
	for {
		op, err := r.byte()
		if err != nil {
			return err
		}
		switch op {
		case 0x0b: // end
			return nil
		case 0x41: // i32.const
			err = r.skipLEB(5)
		case 0x42: // i64.const
			err = r.skipLEB(10)
		case 0x43: // f32.const
			_, err = r.bytes(4)
		case 0x44: // f64.const
			_, err = r.bytes(8)
		case 0x23, 0xd2: // global.get, ref.func
			_, err = r.u32()
		case 0xd0: // ref.null heaptype
			err = r.skipLEB(5)
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		default:
			return fmt.Errorf("%w: opcode %#x in a constant expression", ErrMalformed, op)
		}
		if err != nil {
			return err
		}
	}
}
