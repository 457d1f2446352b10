package guard

import (
	"cmp"
	"fmt"
	"slices"
)

// MaxDataGap is the longest run of zero bytes between two active data
// segments that the rewrites fill in to join the segments into one.
//
// Go's linker starts a new segment at every run of 8 or more zero bytes,
// so a Go module has tens of thousands of segments, and wazero allocates
// while evaluating each one's offset at every instantiation. Most of the
// gaps in Go's modules are 8 to 32 bytes long: filling those (about 690
// KB for the noop module, less the segment headers that go) is the cost
// of any real reduction, and a bound of 256 bytes already joins the noop
// module's 38,486 segments into 3; 4 KiB would join them into 1 for 2.5 KB
// more. The bound is kept small because every joined gap is carried in
// the module: a module of 1-byte segments spaced MaxDataGap apart grows
// by about MaxDataGap/8 times its data section (never beyond its initial
// memory, which every segment must fit in for the rewrite to apply).
const MaxDataGap = 256

// dataSegment is an active segment of memory 0 at a constant offset.
type dataSegment struct {
	offset uint32
	init   []byte
}

// mergeData returns the content of the data section (id 11) and of the
// data count section (id 12) of m with each run of active segments that
// are at most MaxDataGap bytes apart joined into one, the gaps filled with
// zeros. A fresh memory is all zeros, so this initialises it the same way
// as long as the module defines its memory (an imported one may hold other
// bytes in the gaps), every segment is active on memory 0 at an i32.const
// offset, no two segments overlap (so none overwrites another, and the
// order they are applied in does not matter), every segment ends within the
// memory's initial size (so none traps), and no code refers to segments by
// index (memory.init, data.drop). Otherwise, or when nothing would be
// joined, it returns nil: the sections are to be left as they are.
func mergeData(m *module) *mergedData {
	var memory, code, dataSec []byte
	hasCount, hasData := false, false
	for _, s := range m.sections {
		switch s.id {
		case 5:
			memory = s.content
		case 10:
			code = s.content
		case 11:
			dataSec, hasData = s.content, true
		case 12:
			hasCount = true
		}
	}
	if !hasData || m.importsMemory || memory == nil {
		return nil
	}
	size, ok := initialMemory(memory)
	if !ok {
		return nil
	}
	segs, ok := constSegments(dataSec, size)
	if !ok {
		return nil
	}
	// Validation (the spec's, and wazero's) refuses memory.init and
	// data.drop in a module without a data count section, and the rewrite
	// adds none: only with one is the code read (about 20 ms for a Go
	// module, which has none).
	if hasCount && code != nil {
		if uses, err := usesDataIndex(code); err != nil || uses {
			return nil
		}
	}
	// Segments that do not overlap write disjoint bytes, so the order in
	// which they are applied does not matter: Go's linker, for one, lists
	// its sections' segments out of address order.
	slices.SortStableFunc(segs, func(a, b dataSegment) int { return cmp.Compare(a.offset, b.offset) })
	var runs []int        // the index in segs of each joined segment's first
	var total, end uint64 // the joined segments' bytes; where the last one ends
	for i, s := range segs {
		start := uint64(s.offset)
		switch {
		case i > 0 && start < end:
			return nil // overlap: the order matters
		case i == 0 || start-end > MaxDataGap:
			runs = append(runs, i)
		default:
			total += start - end
		}
		total += uint64(len(s.init))
		end = start + uint64(len(s.init))
	}
	if len(runs) == len(segs) {
		return nil
	}
	data := appendU32(make([]byte, 0, total+uint64(len(runs))*16), uint32(len(runs)))
	for r, first := range runs {
		next := len(segs)
		if r+1 < len(runs) {
			next = runs[r+1]
		}
		run := segs[first:next]
		last := run[len(run)-1]
		data = append(data, 0x00, 0x41) // active on memory 0, i32.const
		data = appendS32(data, int32(run[0].offset))
		data = append(data, 0x0b)
		data = appendU32(data, uint32(uint64(last.offset)+uint64(len(last.init))-uint64(run[0].offset)))
		at := run[0].offset
		for _, s := range run {
			data = append(data, make([]byte, s.offset-at)...)
			data = append(data, s.init...)
			at = s.offset + uint32(len(s.init))
		}
	}
	return &mergedData{data: data, count: appendU32(nil, uint32(len(runs)))}
}

// mergedData holds the new contents of the data and data count sections.
type mergedData struct {
	data, count []byte
}

// section returns what section id's content becomes: d's for the data and
// data count sections, content itself for all others or when d is nil.
func (d *mergedData) section(id byte, content []byte) []byte {
	switch {
	case d == nil:
	case id == 11:
		return d.data
	case id == 12:
		return d.count
	}
	return content
}

// initialMemory returns the initial size in bytes of the first memory a
// memory section defines; ok is false unless it is a plain 32-bit memory
// (not shared, not 64-bit).
func initialMemory(content []byte) (size uint64, ok bool) {
	r := reader{b: content}
	n, err := r.u32()
	if err != nil || n == 0 {
		return 0, false
	}
	flags, err := r.byte()
	if err != nil || flags > 1 {
		return 0, false
	}
	pages, err := r.u32()
	if err != nil {
		return 0, false
	}
	return uint64(pages) << 16, true
}

// constSegments reads a data section whose segments are all active on
// memory 0 at i32.const offsets, each ending within size bytes; ok is
// false for any other.
func constSegments(content []byte, size uint64) (segs []dataSegment, ok bool) {
	r := reader{b: content}
	n, err := r.u32()
	if err != nil {
		return nil, false
	}
	segs = make([]dataSegment, 0, min(n, 1<<16))
	for range n {
		mode, err := r.u32()
		if err != nil {
			return nil, false
		}
		switch mode {
		case 0: // active, memory 0
		case 2: // active, explicit memory
			if mem, err := r.u32(); err != nil || mem != 0 {
				return nil, false
			}
		default: // passive, or unknown
			return nil, false
		}
		if op, err := r.byte(); err != nil || op != 0x41 {
			return nil, false
		}
		offset, err := r.s32()
		if err != nil {
			return nil, false
		}
		if op, err := r.byte(); err != nil || op != 0x0b {
			return nil, false
		}
		l, err := r.u32()
		if err != nil {
			return nil, false
		}
		init, err := r.bytes(int(l))
		if err != nil {
			return nil, false
		}
		if uint64(uint32(offset))+uint64(l) > size {
			return nil, false
		}
		segs = append(segs, dataSegment{uint32(offset), init})
	}
	return segs, r.off == len(content)
}

// usesDataIndex reports whether any function body in a code section's
// content holds memory.init or data.drop.
func usesDataIndex(code []byte) (bool, error) {
	return usesFC(code, 8, 9)
}

// usesFC reports whether any function body in a code section's content
// holds an instruction of prefix 0xfc with one of the sub-opcodes subs.
func usesFC(code []byte, subs ...uint32) (bool, error) {
	bodies, err := readBodies(code)
	if err != nil {
		return false, err
	}
	for i := range bodies.count {
		body, err := bodies.next(i)
		if err != nil {
			return false, err
		}
		br := reader{b: body}
		if err := br.skipLocals(); err != nil {
			return false, fmt.Errorf("function body %d: %w", i, err)
		}
		for br.off < len(body) {
			op, err := br.byte()
			if err != nil {
				return false, err
			}
			if op == 0xfc {
				sub := reader{b: body, off: br.off}
				if s, err := sub.u32(); err == nil && slices.Contains(subs, s) {
					return true, nil
				}
			}
			if err := skipImmediates(&br, op); err != nil {
				return false, fmt.Errorf("function body %d: %w", i, err)
			}
		}
	}
	return false, nil
}

// s32 reads a signed LEB128 of at most 5 bytes.
func (r *reader) s32() (int32, error) {
	var v int64
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			if v < -1<<31 || v >= 1<<31 {
				return 0, fmt.Errorf("%w: signed LEB128 out of range at byte %d", ErrMalformed, r.off-1)
			}
			return int32(v), nil
		}
	}
	return 0, fmt.Errorf("%w: LEB128 too long at byte %d", ErrMalformed, r.off)
}

// skipLocals skips a function body's local declarations: a count, then
// (n, value type) pairs.
func (r *reader) skipLocals() error {
	groups, err := r.u32()
	if err != nil {
		return err
	}
	for g := uint32(0); g < groups; g++ {
		if _, err := r.u32(); err != nil {
			return err
		}
		if _, err := r.byte(); err != nil {
			return err
		}
	}
	return nil
}
