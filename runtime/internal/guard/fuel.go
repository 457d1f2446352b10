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
}

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
func AddFuelChecks(wasm []byte, period uint32) ([]byte, Fuel, error) {
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
	g := m.importedGlobals + m.definedGlobals
	check := fuelCheck(g, m.yieldIndex, period)

	var out []byte
	out = append(out, wasm[:8]...)
	sites := 0
	wroteGlobals := false
	newGlobal := []byte{0x7f, 0x01, 0x41} // i32, mutable, i32.const period
	newGlobal = appendS32(newGlobal, int32(period))
	newGlobal = append(newGlobal, 0x0b)
	for _, s := range m.sections {
		if !wroteGlobals && s.id != 0 && order(s.id) > order(6) {
			out = appendSection(out, 6, append(appendU32(nil, 1), newGlobal...))
			wroteGlobals = true
		}
		content := s.content
		switch s.id {
		case 6:
			r := reader{b: content}
			n, _ := r.u32()
			content = append(appendU32(nil, n+1), content[r.off:]...)
			content = append(content, newGlobal...)
			wroteGlobals = true
		case 10:
			var n int
			content, n, err = fuelCode(content, check)
			if err != nil {
				return nil, Fuel{}, err
			}
			sites += n
		case 0:
			if isDebugSection(content) {
				continue
			}
		}
		out = appendSection(out, s.id, content)
	}
	if !wroteGlobals {
		out = appendSection(out, 6, append(appendU32(nil, 1), newGlobal...))
	}
	return out, Fuel{Global: g, Sites: sites}, nil
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

// fuelCode inserts check at the start of every body and after every loop
// instruction.
func fuelCode(sec []byte, check []byte) ([]byte, int, error) {
	r := reader{b: sec}
	count, err := r.u32()
	if err != nil {
		return nil, 0, err
	}
	out := make([]byte, 0, len(sec)+len(sec)/8)
	out = appendU32(out, count)
	sites := 0
	var body []byte
	for i := uint32(0); i < count; i++ {
		var n int
		size, err := r.u32()
		if err != nil {
			return nil, 0, err
		}
		in, err := r.bytes(int(size))
		if err != nil {
			return nil, 0, fmt.Errorf("function body %d: %w", i, err)
		}
		body, n, err = fuelBody(body[:0], in, check)
		if err != nil {
			return nil, 0, fmt.Errorf("function body %d: %w", i, err)
		}
		sites += n
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if r.off != len(sec) {
		return nil, 0, fmt.Errorf("%w: %d stray bytes after the code section's bodies", ErrMalformed, len(sec)-r.off)
	}
	return out, sites, nil
}

func fuelBody(dst, body, check []byte) ([]byte, int, error) {
	br := reader{b: body}
	groups, err := br.u32()
	if err != nil {
		return nil, 0, err
	}
	for g := uint32(0); g < groups; g++ {
		if _, err := br.u32(); err != nil {
			return nil, 0, err
		}
		if _, err := br.byte(); err != nil {
			return nil, 0, err
		}
	}
	dst = append(dst, body[:br.off]...)
	dst = append(dst, check...)
	sites := 1
	copied := br.off
	for br.off < len(body) {
		op, err := br.byte()
		if err != nil {
			return nil, 0, err
		}
		if err := skipImmediates(&br, op); err != nil {
			return nil, 0, err
		}
		if op == 0x03 { // loop: check at the head of every iteration
			dst = append(dst, body[copied:br.off]...)
			dst = append(dst, check...)
			copied = br.off
			sites++
		}
	}
	dst = append(dst, body[copied:]...)
	if len(body) == 0 || body[len(body)-1] != 0x0b {
		return nil, 0, fmt.Errorf("%w: body does not end with end", ErrMalformed)
	}
	return dst, sites, nil
}
