package guard

import (
	"fmt"
	"strings"
)

// section is one raw section of a module.
type section struct {
	id      byte
	content []byte
}

// module is what the rewriters need to know about a module.
type module struct {
	sections        []section
	importedFuncs   uint32
	importedGlobals uint32
	definedGlobals  uint32
	hasYield        bool
	yieldIndex      uint32
	// types holds the type section's function types; it ends early, with
	// typesPartial set, at the first type this decoder does not read (not
	// a plain function type, or a typed reference of several bytes).
	types        []funcType
	typesPartial bool
	funcTypes    []uint32 // the type index of each defined function
	hasExports   bool
	// importedTable is "module"."name" of the first imported table.
	importedTable string
	// importsMemory is set when the module imports a memory.
	importsMemory bool
}

func parseModule(wasm []byte) (*module, error) {
	if len(wasm) < 8 || string(wasm[:4]) != string(magic) {
		return nil, fmt.Errorf("%w: no wasm header", ErrMalformed)
	}
	m := &module{}
	r := reader{b: wasm, off: 8}
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		content, err := r.bytes(int(size))
		if err != nil {
			return nil, err
		}
		m.sections = append(m.sections, section{id, content})
		switch id {
		case 1:
			if m.types, m.typesPartial, err = parseTypes(content); err != nil {
				return nil, err
			}
		case 3:
			cr := reader{b: content}
			n, err := cr.u32()
			if err != nil {
				return nil, err
			}
			for range n {
				t, err := cr.u32()
				if err != nil {
					return nil, err
				}
				m.funcTypes = append(m.funcTypes, t)
			}
		case 7:
			m.hasExports = true
		case 2:
			if err := m.parseImports(content); err != nil {
				return nil, err
			}
		case 6:
			cr := reader{b: content}
			if m.definedGlobals, err = cr.u32(); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// funcType is a function type whose value types are one byte each.
type funcType struct {
	params, results []byte
}

// parseTypes reads the type section's function types, up to the first it
// cannot read on; partial reports that it stopped there.
func parseTypes(content []byte) (types []funcType, partial bool, err error) {
	r := reader{b: content}
	n, err := r.u32()
	if err != nil {
		return nil, false, err
	}
	types = make([]funcType, 0, min(n, 1<<16))
	for range n {
		t, ok, err := readFuncType(&r)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return types, true, nil
		}
		types = append(types, t)
	}
	return types, false, nil
}

// readFuncType reads one function type; ok is false for a type it cannot
// read on.
func readFuncType(r *reader) (t funcType, ok bool, err error) {
	form, err := r.byte()
	if err != nil || form != 0x60 {
		return funcType{}, false, err
	}
	for _, list := range []*[]byte{&t.params, &t.results} {
		k, err := r.u32()
		if err != nil {
			return funcType{}, false, err
		}
		if *list, err = r.bytes(int(k)); err != nil {
			return funcType{}, false, err
		}
		for _, v := range *list {
			if !isSimpleValType(v) {
				return funcType{}, false, nil
			}
		}
	}
	return t, true, nil
}

// isSimpleValType reports whether v is a one-byte value type: a number,
// v128, funcref or externref.
func isSimpleValType(v byte) bool {
	return v >= 0x7b && v <= 0x7f || v == 0x70 || v == 0x6f
}

func (m *module) parseImports(content []byte) error {
	r := reader{b: content}
	n, err := r.u32()
	if err != nil {
		return err
	}
	name := func() (string, error) {
		l, err := r.u32()
		if err != nil {
			return "", err
		}
		b, err := r.bytes(int(l))
		return string(b), err
	}
	for i := uint32(0); i < n; i++ {
		mod, err := name()
		if err != nil {
			return err
		}
		field, err := name()
		if err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0: // function: type index
			if _, err := r.u32(); err != nil {
				return err
			}
			if mod == YieldModule && field == YieldName && !m.hasYield {
				m.hasYield, m.yieldIndex = true, m.importedFuncs
			}
			m.importedFuncs++
		case 1: // table: reftype, limits
			if m.importedTable == "" {
				m.importedTable = fmt.Sprintf("%q.%q", mod, field)
			}
			if _, err := r.byte(); err != nil {
				return err
			}
			if err := skipLimits(&r); err != nil {
				return err
			}
		case 2: // memory: limits
			m.importsMemory = true
			if err := skipLimits(&r); err != nil {
				return err
			}
		case 3: // global: valtype, mutability
			if _, err := r.bytes(2); err != nil {
				return err
			}
			m.importedGlobals++
		case 4: // tag: attribute, type index
			if _, err := r.byte(); err != nil {
				return err
			}
			if _, err := r.u32(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: import kind %#x", ErrMalformed, kind)
		}
	}
	return nil
}

func skipLimits(r *reader) error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 3 {
		return fmt.Errorf("%w: limits flags %#x", ErrMalformed, flags)
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags&1 != 0 {
		_, err = r.u32()
	}
	return err
}

// order ranks section ids in the order the binary format requires.
func order(id byte) int {
	switch id {
	case 13: // tag, between memory and global
		return 55
	case 12: // data count, before code
		return 95
	}
	return int(id) * 10
}

func isDebugSection(content []byte) bool {
	r := reader{b: content}
	n, err := r.u32()
	if err != nil {
		return false
	}
	s, err := r.bytes(int(n))
	return err == nil && strings.HasPrefix(string(s), ".debug_")
}

func appendSection(dst []byte, id byte, content []byte) []byte {
	dst = append(dst, id)
	dst = appendU32(dst, uint32(len(content)))
	return append(dst, content...)
}

func appendS32(dst []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if x == 0 && c&0x40 == 0 || x == -1 && c&0x40 != 0 {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}

// skipLEB skips a signed or unsigned LEB128 of at most max bytes.
func (r *reader) skipLEB(max int) error {
	for i := 0; i < max; i++ {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return fmt.Errorf("%w: LEB128 too long at byte %d", ErrMalformed, r.off)
}

// skipImmediates skips the immediates of instruction op.
func skipImmediates(r *reader, op byte) error {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if: block type
		return r.skipLEB(5) // 0x40, a value type, or an s33 type index
	case op == 0x0c || op == 0x0d: // br, br_if
		return r.skipLEB(5)
	case op == 0x0e: // br_table
		n, err := r.u32()
		if err != nil {
			return err
		}
		for i := uint32(0); i <= n; i++ {
			if err := r.skipLEB(5); err != nil {
				return err
			}
		}
		return nil
	case op == 0x10 || op == 0x12: // call, return_call
		return r.skipLEB(5)
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		if err := r.skipLEB(5); err != nil {
			return err
		}
		return r.skipLEB(5)
	case op == 0x06: // try: block type
		return r.skipLEB(5)
	case op == 0x07 || op == 0x08 || op == 0x09 || op == 0x18: // catch, throw, rethrow, delegate
		return r.skipLEB(5)
	case op == 0x1c: // select t*
		n, err := r.u32()
		if err != nil {
			return err
		}
		_, err = r.bytes(int(n))
		return err
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get/set
		return r.skipLEB(5)
	case op >= 0x28 && op <= 0x3e: // loads and stores: memarg
		if err := r.skipLEB(5); err != nil {
			return err
		}
		return r.skipLEB(10)
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		_, err := r.byte()
		return err
	case op == 0x41: // i32.const
		return r.skipLEB(5)
	case op == 0x42: // i64.const
		return r.skipLEB(10)
	case op == 0x43: // f32.const
		_, err := r.bytes(4)
		return err
	case op == 0x44: // f64.const
		_, err := r.bytes(8)
		return err
	case op == 0xd0: // ref.null
		_, err := r.byte()
		return err
	case op == 0xd2: // ref.func
		return r.skipLEB(5)
	case op == 0xfc:
		return skipFC(r)
	case op == 0xfd:
		return skipSIMD(r)
	case op == 0xfe:
		return skipAtomic(r)
	case op <= 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x19 || op == 0x1a || op == 0x1b ||
		op >= 0x45 && op <= 0xc4 || op == 0xd1:
		return nil // no immediates
	}
	return fmt.Errorf("%w: unknown opcode %#x at byte %d", ErrMalformed, op, r.off-1)
}

func skipFC(r *reader) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 7: // saturating truncations
		return nil
	case sub == 8: // memory.init: data index, memory
		if err := r.skipLEB(5); err != nil {
			return err
		}
		_, err := r.byte()
		return err
	case sub == 9, sub == 13, sub >= 15 && sub <= 17: // data.drop, elem.drop, table.grow/size/fill
		return r.skipLEB(5)
	case sub == 10: // memory.copy
		_, err := r.bytes(2)
		return err
	case sub == 11: // memory.fill
		_, err := r.byte()
		return err
	case sub == 12 || sub == 14: // table.init, table.copy
		if err := r.skipLEB(5); err != nil {
			return err
		}
		return r.skipLEB(5)
	}
	return fmt.Errorf("%w: unknown 0xfc sub-opcode %d", ErrMalformed, sub)
}

func skipSIMD(r *reader) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	memarg := func() error {
		if err := r.skipLEB(5); err != nil {
			return err
		}
		return r.skipLEB(10)
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores
		return memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		_, err := r.bytes(16)
		return err
	case sub >= 21 && sub <= 34: // extract/replace lane
		_, err := r.byte()
		return err
	case sub >= 84 && sub <= 91: // load/store lane
		if err := memarg(); err != nil {
			return err
		}
		_, err := r.byte()
		return err
	case sub <= 0x113:
		return nil
	}
	return fmt.Errorf("%w: unknown 0xfd sub-opcode %d", ErrMalformed, sub)
}

func skipAtomic(r *reader) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	if sub == 0x03 { // atomic.fence
		_, err := r.byte()
		return err
	}
	if sub > 0x4e {
		return fmt.Errorf("%w: unknown 0xfe sub-opcode %d", ErrMalformed, sub)
	}
	if err := r.skipLEB(5); err != nil {
		return err
	}
	return r.skipLEB(10)
}
