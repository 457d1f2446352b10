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
	// blockTypes holds, per type in the type section, the block type of a
	// block with the same results and no parameters (0x40 for none, the
	// value type for one), or -1 when there is none (several results, or
	// a type this decoder does not read).
	blockTypes []int
	funcTypes  []uint32 // the type index of each defined function
	hasExports bool
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
			if m.blockTypes, err = parseTypes(content); err != nil {
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

// parseTypes reads the type section into block types (see module). From
// the first type it cannot read on (not a plain function type, or a typed
// reference of several bytes), every type is -1.
func parseTypes(content []byte) ([]int, error) {
	r := reader{b: content}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, n)
	for range n {
		bt, ok, err := readBlockType(&r)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		out = append(out, bt)
	}
	for len(out) < int(n) {
		out = append(out, -1)
	}
	return out, nil
}

// readBlockType reads one function type and returns the block type of its
// results (-1 for several); ok is false for a type it cannot read on.
func readBlockType(r *reader) (bt int, ok bool, err error) {
	form, err := r.byte()
	if err != nil || form != 0x60 {
		return 0, false, err
	}
	var results []byte
	for range 2 { // parameters, then results
		k, err := r.u32()
		if err != nil {
			return 0, false, err
		}
		if results, err = r.bytes(int(k)); err != nil {
			return 0, false, err
		}
		for _, v := range results {
			if !isSimpleValType(v) {
				return 0, false, nil
			}
		}
	}
	switch len(results) {
	case 0:
		return 0x40, true, nil
	case 1:
		return int(results[0]), true, nil
	}
	return -1, true, nil
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
			if _, err := r.byte(); err != nil {
				return err
			}
			if err := skipLimits(&r); err != nil {
				return err
			}
		case 2: // memory: limits
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
