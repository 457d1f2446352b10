// Package guard rewrites a WebAssembly module so that every function call
// can be interrupted.
//
// wazero (with WithCloseOnContextDone) checks whether a module was closed
// at each loop header, by calling into Go. A function that never loops
// but calls others, such as a loop-free exponential call tree, can run for
// hours without such a check; worse, while it runs the Go runtime cannot
// stop the world for a collection, so the whole host process stalls. Guard
// inserts an empty block "loop end" at the start of every function body
// that does not already begin with a loop, so every call passes a check.
// Function, type and global indices are untouched; only code offsets move
// (custom debug sections that refer to them are dropped).
//
// Both rewrites also join runs of nearby active data segments into one,
// which initialises memory the same way: Go's linker emits tens of
// thousands of small segments, and wazero allocates for each segment at
// every instantiation.
package guard

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

var (
	magic      = []byte{0x00, 0x61, 0x73, 0x6d}
	entryCheck = []byte{0x03, 0x40, 0x0b} // loop (empty block type) end
)

// ErrMalformed marks input that is not a well-formed module.
var ErrMalformed = errors.New("malformed module")

// AddEntryChecks returns a copy of wasm with a loop header at the start of
// every function body, and how many bodies it changed. It also joins the
// module's data segments where that initialises memory the same way (see
// MaxDataGap).
func AddEntryChecks(wasm []byte) ([]byte, int, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], magic) {
		return nil, 0, fmt.Errorf("%w: no wasm header", ErrMalformed)
	}
	out := make([]byte, 0, len(wasm)+len(wasm)/50)
	out = append(out, wasm[:8]...)
	changed := 0
	var merged *mergedData
	if m, err := parseModule(wasm); err == nil {
		merged = mergeData(m)
	}
	r := reader{b: wasm, off: 8}
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return nil, 0, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, 0, err
		}
		content, err := r.bytes(int(size))
		if err != nil {
			return nil, 0, err
		}
		switch id {
		case 0: // custom: keep all but DWARF, whose code offsets would be stale
			name := reader{b: content}
			if n, err := name.u32(); err == nil {
				if s, err := name.bytes(int(n)); err == nil && strings.HasPrefix(string(s), ".debug_") {
					continue
				}
			}
		case 10:
			var n int
			content, n, err = rewriteCode(content)
			if err != nil {
				return nil, 0, err
			}
			changed += n
		case 11, 12:
			content = merged.section(id, content)
		}
		out = append(out, id)
		out = appendU32(out, uint32(len(content)))
		out = append(out, content...)
	}
	return out, changed, nil
}

// rewriteCode rewrites the code section's content.
func rewriteCode(sec []byte) ([]byte, int, error) {
	bodies, err := readBodies(sec)
	if err != nil {
		return nil, 0, err
	}
	out := make([]byte, 0, len(sec)+int(bodies.count)*len(entryCheck))
	out = appendU32(out, bodies.count)
	changed := 0
	for i := range bodies.count {
		body, err := bodies.next(i)
		if err != nil {
			return nil, 0, err
		}
		br := reader{b: body}
		if err := br.skipLocals(); err != nil {
			return nil, 0, fmt.Errorf("function body %d: %w", i, err)
		}
		if br.off < len(body) && body[br.off] == entryCheck[0] {
			out = appendU32(out, uint32(len(body)))
			out = append(out, body...)
			continue
		}
		out = appendU32(out, uint32(len(body)+len(entryCheck)))
		out = append(out, body[:br.off]...)
		out = append(out, entryCheck...)
		out = append(out, body[br.off:]...)
		changed++
	}
	if err := bodies.end(); err != nil {
		return nil, 0, err
	}
	return out, changed, nil
}

// codeBodies reads the function bodies of a code section's content in
// order: count of them, each taken by next, and end checks that nothing
// follows the last.
type codeBodies struct {
	r     reader
	count uint32
}

// readBodies starts reading the code section's content sec.
func readBodies(sec []byte) (*codeBodies, error) {
	b := &codeBodies{r: reader{b: sec}}
	var err error
	b.count, err = b.r.u32()
	return b, err
}

// next returns body i, the next one.
func (b *codeBodies) next(i uint32) ([]byte, error) {
	size, err := b.r.u32()
	if err != nil {
		return nil, err
	}
	body, err := b.r.bytes(int(size))
	if err != nil {
		return nil, fmt.Errorf("function body %d: %w", i, err)
	}
	return body, nil
}

// end fails when bytes follow the last body.
func (b *codeBodies) end() error {
	if b.r.off != len(b.r.b) {
		return fmt.Errorf("%w: %d stray bytes after the code section's bodies", ErrMalformed, len(b.r.b)-b.r.off)
	}
	return nil
}

type reader struct {
	b   []byte
	off int
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, fmt.Errorf("%w: unexpected end at byte %d", ErrMalformed, r.off)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, fmt.Errorf("%w: %d bytes wanted at byte %d, %d left", ErrMalformed, n, r.off, len(r.b)-r.off)
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s, nil
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift == 28 && c > 0x0f {
			return 0, fmt.Errorf("%w: LEB128 overflow at byte %d", ErrMalformed, r.off-1)
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: LEB128 too long at byte %d", ErrMalformed, r.off)
}

func appendU32(dst []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}
