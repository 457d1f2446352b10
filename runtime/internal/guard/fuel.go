package guard

import (
	"fmt"
)

// Fuel describes a module rewritten by AddFuelChecks.
type Fuel struct {
	// Global is the index of the added mutable i32 global holding the
	// countdown.
	Global uint32
	// Sites is how many checks were inserted.
	Sites int
	// DepthGlobal is the index of the added mutable i32 global counting
	// nested calls, exported as DepthExport; Counted is how many functions
	// count themselves in it (0 when call depth is not limited).
	DepthGlobal uint32
	Counted     int
}

// DepthExport is the name under which AddFuelChecks exports its call-depth
// counter, so the host can tell a trap of the depth limit from others.
const DepthExport = "sluice_call_depth"

// The WASI function a fuel check calls when its countdown runs out: the
// host's implementation decides whether the guest may continue.
const (
	YieldModule = "wasi_snapshot_preview1"
	YieldName   = "sched_yield"
)

// ErrNoYield means the module does not import the yield function, so
// AddFuelChecks cannot be used on it.
var ErrNoYield = fmt.Errorf("module does not import %s.%s", YieldModule, YieldName)

// AddFuelChecks returns a copy of wasm in which every function entry and
// every loop header counts down a new global, and every period-th time
// calls the module's own import of wasi_snapshot_preview1.sched_yield
// (dropping its result) after resetting the count. The host's sched_yield
// then runs Go code often enough for the Go scheduler and garbage collector
// to make progress, and can stop the guest (by panicking with an exit
// error) when its deadline has passed, without leaving compiled code on
// every iteration the way wazero's WithCloseOnContextDone does. A module
// that does not import sched_yield gets ErrNoYield.
//
// With maxDepth > 0, every function also counts itself in a second global
// while it runs, and traps with unreachable when more than maxDepth calls
// are nested. (A function returning several values needs a type with those
// results and no parameters for its wrapper block: one is added to the
// type section where none exists. Only such functions in a module whose
// types this package cannot all read go uncounted.) The engine's own limit
// on a guest's native call stack is in the hundreds of MiB, and wazero
// grows that stack by copying it and fixing up every frame in one pass the
// Go scheduler cannot preempt: a guest recursing without end would hold its
// thread, and a garbage collection waiting for it, for tens of
// milliseconds at each doubling. The counter is exported as DepthExport.
//
// Like AddEntryChecks, it also joins the module's data segments where that
// initialises memory the same way (see MaxDataGap).
func AddFuelChecks(wasm []byte, period, maxDepth uint32) ([]byte, Fuel, error) {
	m, err := parseModule(wasm)
	if err != nil {
		return nil, Fuel{}, err
	}
	if !m.hasYield {
		return nil, Fuel{}, ErrNoYield
	}
	if period == 0 || period > 1<<30 {
		return nil, Fuel{}, fmt.Errorf("fuel period %d out of range", period)
	}
	if maxDepth >= 1<<31 {
		return nil, Fuel{}, fmt.Errorf("call depth limit %d out of range", maxDepth)
	}
	g := m.importedGlobals + m.definedGlobals
	check := fuelCheck(g, m.yieldIndex, period)
	var depth *depthGuard
	if maxDepth > 0 {
		depth = newDepthGuard(g+1, maxDepth, m)
	}

	var out []byte
	out = append(out, wasm[:8]...)
	sites := 0
	wroteGlobals := false
	newGlobal := []byte{0x7f, 0x01, 0x41} // i32, mutable, i32.const period
	newGlobal = appendS32(newGlobal, int32(period))
	newGlobal = append(newGlobal, 0x0b)
	newGlobals := uint32(1)
	var newExport []byte
	if depth != nil {
		newGlobal = append(newGlobal, 0x7f, 0x01, 0x41, 0x00, 0x0b) // i32, mutable, 0
		newGlobals++
		newExport = appendU32(nil, uint32(len(DepthExport)))
		newExport = append(newExport, DepthExport...)
		newExport = append(newExport, 0x03) // a global
		newExport = appendU32(newExport, depth.global)
	}
	wroteExport := depth == nil
	counted := 0
	merged := mergeData(m)
	for _, s := range m.sections {
		if !wroteGlobals && s.id != 0 && order(s.id) > order(6) {
			out = appendSection(out, 6, append(appendU32(nil, newGlobals), newGlobal...))
			wroteGlobals = true
		}
		if !wroteExport && !m.hasExports && s.id != 0 && order(s.id) > order(7) {
			out = appendSection(out, 7, append(appendU32(nil, 1), newExport...))
			wroteExport = true
		}
		content := s.content
		switch s.id {
		case 6:
			content = extendVector(content, newGlobals, newGlobal)
			wroteGlobals = true
		case 7:
			if !wroteExport {
				content = extendVector(content, 1, newExport)
				wroteExport = true
			}
		case 1:
			if depth != nil && depth.addedTypes > 0 {
				content = extendVector(content, depth.addedTypes, depth.newTypes)
			}
		case 10:
			var n int
			content, n, counted, err = fuelCode(content, check, depth)
			if err != nil {
				return nil, Fuel{}, err
			}
			sites += n
		case 11, 12:
			content = merged.section(s.id, content)
		case 0:
			if isDebugSection(content) {
				continue
			}
		}
		out = appendSection(out, s.id, content)
	}
	if !wroteGlobals {
		out = appendSection(out, 6, append(appendU32(nil, newGlobals), newGlobal...))
	}
	if !wroteExport {
		out = appendSection(out, 7, append(appendU32(nil, 1), newExport...))
	}
	fuel := Fuel{Global: g, Sites: sites}
	if depth != nil {
		fuel.DepthGlobal, fuel.Counted = depth.global, counted
	}
	return out, fuel, nil
}

// extendVector returns a copy of a section's content, a vector, with k
// more entries (encoded in entries) at its end.
func extendVector(content []byte, k uint32, entries []byte) []byte {
	r := reader{b: content}
	n, _ := r.u32()
	out := appendU32(make([]byte, 0, len(content)+len(entries)+5), n+k)
	out = append(out, content[r.off:]...)
	return append(out, entries...)
}

// fuelCheck is the code inserted at each site:
//
//	global.get g; i32.const 1; i32.sub; global.set g
//	global.get g; i32.eqz
//	if; i32.const period; global.set g; call yield; drop; end
func fuelCheck(g, yield, period uint32) []byte {
	var b []byte
	b = append(b, 0x23)
	b = appendU32(b, g)
	b = append(b, 0x41, 0x01, 0x6b, 0x24)
	b = appendU32(b, g)
	b = append(b, 0x23)
	b = appendU32(b, g)
	b = append(b, 0x45, 0x04, 0x40, 0x41)
	b = appendS32(b, int32(period))
	b = append(b, 0x24)
	b = appendU32(b, g)
	b = append(b, 0x10)
	b = appendU32(b, yield)
	return append(b, 0x1a, 0x0b)
}

// depthGuard describes the call-depth counting AddFuelChecks adds.
type depthGuard struct {
	global uint32
	m      *module
	enter  []byte // see newDepthGuard; the block type goes last
	leave  []byte
	// blockTypes holds, per type index, the encoded block type of a block
	// with that type's results and no parameters (nil if not counted).
	blockTypes [][]byte
	// newTypes holds the encoded types ()->(results) to append to the type
	// section for the blocks of functions returning several values.
	newTypes   []byte
	addedTypes uint32
}

// newDepthGuard builds the code of the call-depth counting in global:
//
// at the start of a counted function (then its block type)
//
//	global.get d; i32.const 1; i32.add; global.set d
//	global.get d; i32.const max; i32.gt_u; if; unreachable; end
//	block  (wraps the body, so every way out passes leave)
//
// and on the way out
//
//	global.get d; i32.const 1; i32.sub; global.set d
func newDepthGuard(global, max uint32, m *module) *depthGuard {
	d := &depthGuard{global: global, m: m}
	b := append([]byte{0x23}, appendU32(nil, global)...)
	b = append(b, 0x41, 0x01, 0x6a, 0x24)
	b = appendU32(b, global)
	b = append(b, 0x23)
	b = appendU32(b, global)
	b = append(b, 0x41)
	b = appendS32(b, int32(max))
	d.enter = append(b, 0x4b, 0x04, 0x40, 0x00, 0x0b, 0x02)
	b = append([]byte{0x23}, appendU32(nil, global)...)
	b = append(b, 0x41, 0x01, 0x6b, 0x24)
	d.leave = appendU32(b, global)
	d.blockTypes = make([][]byte, len(m.types))
	noParams := map[string]uint32{} // results -> index of the first type ()->(results)
	for i, t := range m.types {
		if _, ok := noParams[string(t.results)]; !ok && len(t.params) == 0 {
			noParams[string(t.results)] = uint32(i)
		}
	}
	for i, t := range m.types {
		switch len(t.results) {
		case 0:
			d.blockTypes[i] = []byte{0x40}
		case 1:
			d.blockTypes[i] = t.results[:1]
		default:
			// A type index (a non-negative s33): that of a type with
			// these results and no parameters, added if there is none.
			// Indices past a type this package cannot read are unknown.
			at, ok := noParams[string(t.results)]
			if !ok && m.typesPartial {
				continue
			}
			if !ok {
				at = uint32(len(m.types)) + d.addedTypes
				noParams[string(t.results)] = at
				d.newTypes = append(d.newTypes, 0x60, 0x00)
				d.newTypes = appendU32(d.newTypes, uint32(len(t.results)))
				d.newTypes = append(d.newTypes, t.results...)
				d.addedTypes++
			}
			d.blockTypes[i] = appendS32(nil, int32(at))
		}
	}
	return d
}

// blockType returns the encoded block type standing for defined function
// i's results, or nil if its calls are not counted.
func (d *depthGuard) blockType(i uint32) []byte {
	if d == nil || int(i) >= len(d.m.funcTypes) {
		return nil
	}
	t := d.m.funcTypes[i]
	if int(t) >= len(d.blockTypes) {
		return nil
	}
	return d.blockTypes[t]
}

// fuelCode inserts check at the start of every body and after every loop
// instruction, and the call-depth counting of depth (if not nil) in the
// functions whose results allow it.
func fuelCode(sec []byte, check []byte, depth *depthGuard) ([]byte, int, int, error) {
	bodies, err := readBodies(sec)
	if err != nil {
		return nil, 0, 0, err
	}
	out := make([]byte, 0, len(sec)+len(sec)/8)
	out = appendU32(out, bodies.count)
	sites, counted := 0, 0
	var body []byte
	for i := range bodies.count {
		var n int
		in, err := bodies.next(i)
		if err != nil {
			return nil, 0, 0, err
		}
		bt := depth.blockType(i)
		body, n, err = fuelBody(body[:0], in, check, depth, bt)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("function body %d: %w", i, err)
		}
		if bt != nil {
			counted++
		}
		sites += n
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if err := bodies.end(); err != nil {
		return nil, 0, 0, err
	}
	return out, sites, counted, nil
}

// fuelBody rewrites one function body. With bt not nil the body is wrapped in
// a block of type bt between depth's enter and leave: branches to the
// function's own label now end that block (label indices inside are
// unchanged), each return becomes a branch to it, and a tail call leaves
// first.
func fuelBody(dst, body, check []byte, depth *depthGuard, bt []byte) ([]byte, int, error) {
	br := reader{b: body}
	if err := br.skipLocals(); err != nil {
		return nil, 0, err
	}
	counted := bt != nil
	dst = append(dst, body[:br.off]...)
	if counted {
		dst = append(dst, depth.enter...)
		dst = append(dst, bt...)
	}
	dst = append(dst, check...)
	sites := 1
	copied := br.off
	nest := 0 // blocks open inside the body
	for br.off < len(body) {
		at := br.off
		op, err := br.byte()
		if err != nil {
			return nil, 0, err
		}
		if err := skipImmediates(&br, op); err != nil {
			return nil, 0, err
		}
		switch {
		case op == 0x03: // loop: check at the head of every iteration
			nest++
			dst = append(dst, body[copied:br.off]...)
			dst = append(dst, check...)
			copied = br.off
			sites++
		case op == 0x02 || op == 0x04 || op == 0x06: // block, if, try
			nest++
		case op == 0x0b && nest > 0, op == 0x18: // end of a block, delegate
			nest--
		case !counted:
		case op == 0x0b: // the function's end: close the wrapper, leave
			if br.off != len(body) {
				return nil, 0, fmt.Errorf("%w: code after the body's end", ErrMalformed)
			}
			dst = append(dst, body[copied:at]...)
			dst = append(dst, 0x0b)
			dst = append(dst, depth.leave...)
			copied = at
		case op == 0x0f: // return: branch to the wrapper instead
			dst = append(dst, body[copied:at]...)
			dst = append(dst, 0x0c)
			dst = appendU32(dst, uint32(nest))
			copied = br.off
		case op == 0x12 || op == 0x13 || op == 0x15: // tail calls leave first
			dst = append(dst, body[copied:at]...)
			dst = append(dst, depth.leave...)
			copied = at
		}
	}
	dst = append(dst, body[copied:]...)
	if len(body) == 0 || body[len(body)-1] != 0x0b {
		return nil, 0, fmt.Errorf("%w: body does not end with end", ErrMalformed)
	}
	return dst, sites, nil
}
