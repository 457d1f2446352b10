package guard

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// The differential tests check both rewriters on many modules: a valid
// module in gives a valid module out, and the rewritten module computes
// what the original does (same results, same traps) on generated inputs.

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// choices draws a module's random decisions from a byte string (a fuzz
// input, or bytes from a seeded generator); past its end every choice is 0,
// which always picks the smallest option, so generation ends.
type choices struct {
	b []byte
}

func (c *choices) n(k int) int {
	if k <= 1 || len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % k
}

func (c *choices) u64() uint64 {
	var buf [8]byte
	n := copy(buf[:], c.b)
	c.b = c.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

// genFunc is one generated function's signature.
type genFunc struct {
	params []api.ValueType
	result api.ValueType
}

// gen generates a module: functions of i32/i64 parameters returning one
// i32 or i64, built from arithmetic, comparisons, conversions, selects,
// ifs, blocks with branches, early returns, calls to earlier functions
// and counted loops. Division may trap; nothing else does. The module
// imports sched_yield (so the fuel rewrite applies) and exports each
// function as f0, f1, ...
type gen struct {
	c      *choices
	funcs  []genFunc
	self   int             // the function being generated
	locals []api.ValueType // params, then declared locals
	nparam int
}

func generate(c *choices) ([]byte, []genFunc) {
	g := &gen{c: c}
	n := 1 + c.n(5)
	for range n {
		f := genFunc{result: valType(c)}
		for range c.n(4) {
			f.params = append(f.params, valType(c))
		}
		g.funcs = append(g.funcs, f)
	}
	var typeSec, funcSec, exportSec, codeSec []byte
	typeSec = appendU32(typeSec, uint32(n+1))
	typeSec = append(typeSec, 0x60, 0x00, 0x01, i32) // sched_yield: () -> i32
	funcSec = appendU32(funcSec, uint32(n))
	exportSec = appendU32(exportSec, uint32(n))
	codeSec = appendU32(codeSec, uint32(n))
	for i, f := range g.funcs {
		typeSec = append(typeSec, 0x60)
		typeSec = appendU32(typeSec, uint32(len(f.params)))
		typeSec = append(typeSec, f.params...)
		typeSec = append(typeSec, 0x01, f.result)
		funcSec = appendU32(funcSec, uint32(i+1))
		name := fmt.Sprintf("f%d", i)
		exportSec = appendU32(exportSec, uint32(len(name)))
		exportSec = append(exportSec, name...)
		exportSec = append(exportSec, 0x00)
		exportSec = appendU32(exportSec, uint32(i+1))
		body := g.body(i)
		codeSec = appendU32(codeSec, uint32(len(body)))
		codeSec = append(codeSec, body...)
	}
	var importSec []byte
	importSec = appendU32(importSec, 1)
	importSec = appendU32(importSec, uint32(len(YieldModule)))
	importSec = append(importSec, YieldModule...)
	importSec = appendU32(importSec, uint32(len(YieldName)))
	importSec = append(importSec, YieldName...)
	importSec = append(importSec, 0x00, 0x00)

	out := append([]byte{}, magic...)
	out = append(out, 0x01, 0x00, 0x00, 0x00)
	out = appendSection(out, 1, typeSec)
	out = appendSection(out, 2, importSec)
	out = appendSection(out, 3, funcSec)
	out = appendSection(out, 7, exportSec)
	out = appendSection(out, 10, codeSec)
	return out, g.funcs
}

func valType(c *choices) api.ValueType {
	if c.n(2) == 0 {
		return i32
	}
	return i64
}

// body generates function i's body: its locals, then its code.
func (g *gen) body(i int) []byte {
	g.self = i
	f := g.funcs[i]
	g.locals = append(g.locals[:0], f.params...)
	g.nparam = len(f.params)
	// Scratch locals every function may read: one of each type.
	g.locals = append(g.locals, i32, i64)
	code := g.expr(f.result, 5)
	var out []byte
	extra := g.locals[g.nparam:]
	out = appendU32(out, uint32(len(extra)))
	for _, t := range extra {
		out = append(out, 0x01, t)
	}
	out = append(out, code...)
	return append(out, 0x0b)
}

func (g *gen) newLocal(t api.ValueType) uint32 {
	g.locals = append(g.locals, t)
	return uint32(len(g.locals) - 1)
}

func (g *gen) constant(t api.ValueType) []byte {
	edge := []int64{0, 1, -1, 2, 31, 32, 63, 64, -1 << 31, 1<<31 - 1, -1 << 63, 1<<63 - 1}
	var v int64
	if g.c.n(2) == 0 {
		v = edge[g.c.n(len(edge))]
	} else {
		v = int64(g.c.u64())
	}
	if t == i32 {
		return appendS32([]byte{0x41}, int32(v))
	}
	return appendS64([]byte{0x42}, v)
}

func appendS64(dst []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}

// leaf is a constant or a local of type t.
func (g *gen) leaf(t api.ValueType) []byte {
	var of []uint32
	for i, lt := range g.locals {
		if lt == t {
			of = append(of, uint32(i))
		}
	}
	if len(of) == 0 || g.c.n(3) == 0 {
		return g.constant(t)
	}
	return appendU32([]byte{0x20}, of[g.c.n(len(of))])
}

// Binary operators by type: result = operand type.
var (
	binops = map[api.ValueType][]byte{
		i32: {0x6a, 0x6b, 0x6c, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78},
		i64: {0x7c, 0x7d, 0x7e, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a},
	}
	divops = map[api.ValueType][]byte{ // may trap
		i32: {0x6d, 0x6e, 0x6f, 0x70},
		i64: {0x7f, 0x80, 0x81, 0x82},
	}
	unops  = map[api.ValueType][]byte{i32: {0x67, 0x68, 0x69}, i64: {0x79, 0x7a, 0x7b}}
	cmpops = map[api.ValueType][]byte{ // result i32
		i32: {0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f},
		i64: {0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a},
	}
)

func other(t api.ValueType) api.ValueType {
	if t == i32 {
		return i64
	}
	return i32
}

// expr generates code leaving one value of type t, nesting at most depth.
func (g *gen) expr(t api.ValueType, depth int) []byte {
	if depth <= 0 {
		return g.leaf(t)
	}
	d := depth - 1
	var out []byte
	cat := func(parts ...[]byte) []byte {
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	switch g.c.n(14) {
	case 0, 1:
		return g.leaf(t)
	case 2, 3:
		ops := binops[t]
		return cat(g.expr(t, d), g.expr(t, d), []byte{ops[g.c.n(len(ops))]})
	case 4:
		ops := divops[t]
		return cat(g.expr(t, d), g.expr(t, d), []byte{ops[g.c.n(len(ops))]})
	case 5:
		ops := unops[t]
		return cat(g.expr(t, d), []byte{ops[g.c.n(len(ops))]})
	case 6: // a comparison or eqz, as t
		ot := valType(g.c)
		var b []byte
		if g.c.n(4) == 0 {
			b = cat(g.expr(ot, d), []byte{map[api.ValueType]byte{i32: 0x45, i64: 0x50}[ot]})
		} else {
			ops := cmpops[ot]
			b = cat(g.expr(ot, d), g.expr(ot, d), []byte{ops[g.c.n(len(ops))]})
		}
		if t == i64 {
			b = append(b, 0xad) // i64.extend_i32_u
		}
		return b
	case 7: // a conversion from the other type
		if t == i32 {
			return cat(g.expr(i64, d), []byte{0xa7}) // i32.wrap_i64
		}
		return cat(g.expr(i32, d), []byte{[]byte{0xac, 0xad}[g.c.n(2)]}) // i64.extend_i32_s/u
	case 8: // select
		return cat(g.expr(t, d), g.expr(t, d), g.expr(i32, d), []byte{0x1b})
	case 9: // if (result t) ... else ... end
		return cat(g.expr(i32, d), []byte{0x04, t}, g.expr(t, d), []byte{0x05}, g.expr(t, d), []byte{0x0b})
	case 10: // block (result t) x; cond; br_if 0; drop; y end
		return cat([]byte{0x02, t}, g.expr(t, d), g.expr(i32, d), []byte{0x0d, 0x00, 0x1a}, g.expr(t, d), []byte{0x0b})
	case 11: // an early return: if cond then result; return end; x
		r := g.funcs[g.self].result
		return cat(g.expr(i32, d), []byte{0x04, 0x40}, g.expr(r, d), []byte{0x0f, 0x0b}, g.expr(t, d))
	case 12: // a call to an earlier function
		if g.self == 0 {
			return g.leaf(t)
		}
		j := g.c.n(g.self)
		callee := g.funcs[j]
		for _, p := range callee.params {
			out = append(out, g.expr(p, d)...)
		}
		out = append(out, 0x10)
		out = appendU32(out, uint32(j+1))
		switch {
		case callee.result == t:
		case t == i32:
			out = append(out, 0xa7)
		default:
			out = append(out, 0xad)
		}
		return out
	default: // a loop counted up to k, accumulating into acc
		k := int32(1 + g.c.n(6))
		c, acc := g.newLocal(i32), g.newLocal(t)
		out = cat([]byte{0x41, 0x00, 0x21}, appendU32(nil, c)) // c = 0
		out = cat(g.expr(t, d), []byte{0x21}, appendU32(nil, acc))
		out = cat([]byte{0x02, 0x40, 0x03, 0x40}) // block loop
		out = cat([]byte{0x20}, appendU32(nil, c), appendS32([]byte{0x41}, k), []byte{0x4f, 0x0d, 0x01})
		out = cat(g.expr(t, d), []byte{0x21}, appendU32(nil, acc))
		out = cat([]byte{0x20}, appendU32(nil, c), []byte{0x41, 0x01, 0x6a, 0x21}, appendU32(nil, c))
		out = cat([]byte{0x0c, 0x00, 0x0b, 0x0b}) // br 0 end end
		return cat([]byte{0x20}, appendU32(nil, acc))
	}
}

// variant is one way of running the generated modules: the original, or
// one of the rewrites.
type variant struct {
	name    string
	rewrite func([]byte) ([]byte, error)
	r       wazero.Runtime
}

// newVariants returns the original and both rewrites, the fuel rewrite with
// the given call-depth limit.
func newVariants(t testing.TB, maxDepth uint32) []*variant {
	ctx := context.Background()
	vs := []*variant{
		{name: "original", rewrite: func(b []byte) ([]byte, error) { return b, nil }},
		{name: "entry checks", rewrite: func(b []byte) ([]byte, error) {
			out, _, err := AddEntryChecks(b)
			return out, err
		}},
		{name: "fuel checks", rewrite: func(b []byte) ([]byte, error) {
			out, _, err := AddFuelChecks(b, 3, maxDepth) // a small period: many yields
			return out, err
		}},
	}
	for _, v := range vs {
		v.r = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, v.r); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = v.r.Close(ctx) })
	}
	return vs
}

// outcome is what a call returned: its results, or its error's first line.
func outcome(res []uint64, err error) string {
	if err != nil {
		line, _, _ := strings.Cut(err.Error(), "\n")
		return "error: " + line
	}
	return fmt.Sprint(res)
}

// checkGenerated runs the functions of a module generated from data in the
// original and rewritten forms on inputs also drawn from data.
func checkGenerated(t *testing.T, vs []*variant, data []byte) (calls, traps, size int) {
	ctx := context.Background()
	c := &choices{b: data}
	wasm, funcs := generate(c)
	size = len(wasm)
	cms := make([]wazero.CompiledModule, len(vs))
	mods := make([]api.Module, len(vs))
	defer func() {
		for i := range vs {
			if mods[i] != nil {
				_ = mods[i].Close(ctx)
			}
			if cms[i] != nil {
				_ = cms[i].Close(ctx)
			}
		}
	}()
	// instantiate (re)starts every form: a trap leaves the call-depth
	// counter of the fuel rewrite raised, and the host never reuses an
	// instance that trapped. Successful calls share an instance, so a
	// counter that leaks on some way out of a function shows.
	instantiate := func() {
		for i := range vs {
			if mods[i] != nil {
				_ = mods[i].Close(ctx)
			}
			m, err := vs[i].r.InstantiateModule(ctx, cms[i], wazero.NewModuleConfig().WithName(""))
			if err != nil {
				t.Fatalf("%s: rewritten module does not instantiate: %v\nmodule %x", vs[i].name, err, wasm)
			}
			mods[i] = m
		}
	}
	for i, v := range vs {
		in, err := v.rewrite(wasm)
		if err != nil {
			t.Fatalf("%s: rewrite of a valid module: %v", v.name, err)
		}
		if cms[i], err = v.r.CompileModule(ctx, in); err != nil {
			t.Fatalf("%s: rewritten module does not compile: %v\nmodule %x", v.name, err, wasm)
		}
	}
	instantiate()
	edge := []uint64{0, 1, 1<<64 - 1, 1 << 31, 1<<31 - 1, 1 << 63, 2}
	for i, f := range funcs {
		name := fmt.Sprintf("f%d", i)
		for range 4 {
			args := make([]uint64, len(f.params))
			for j, p := range f.params {
				if c.n(2) == 0 {
					args[j] = edge[c.n(len(edge))]
				} else {
					args[j] = c.u64()
				}
				if p == i32 {
					args[j] = uint64(uint32(args[j]))
				}
			}
			want := outcome(mods[0].ExportedFunction(name).Call(ctx, args...))
			calls++
			for k, m := range mods[1:] {
				if got := outcome(m.ExportedFunction(name).Call(ctx, args...)); got != want {
					t.Fatalf("%s(%v): %s gives %s, the original %s\nmodule %x", name, args, vs[k+1].name, got, want, wasm)
				}
			}
			if strings.HasPrefix(want, "error: ") {
				traps++
				instantiate()
			}
		}
	}
	return calls, traps, size
}

// generatedDepth is the call-depth limit of the fuel rewrite for generated
// modules: just above their deepest chain of calls (5 functions, each
// calling only earlier ones), so a counter that leaks shows.
const generatedDepth = 6

// TestRewriteDifferential checks 500 generated modules, deterministically
// (50 with -short): about a second, a few under -race.
func TestRewriteDifferential(t *testing.T) {
	t.Parallel()
	vs := newVariants(t, generatedDepth)
	seeds := 500
	if testing.Short() {
		seeds = 50
	}
	start := time.Now()
	var calls, traps, size int
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		data := make([]byte, 4096)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		c, tr, sz := checkGenerated(t, vs, data)
		calls, traps, size = calls+c, traps+tr, size+sz
	}
	// Most calls must compute something: a generator whose functions
	// nearly all trap would compare little.
	if traps*2 > calls {
		t.Errorf("%d of %d calls trapped", traps, calls)
	}
	t.Logf("%d generated modules (%d bytes on average) in %s: %d calls compared, %d trapped in all three forms",
		seeds, size/seeds, time.Since(start), calls, traps)
}

func FuzzRewriteDifferential(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{13, 3, 200, 1}, 64))
	vs := newVariants(f, generatedDepth)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkGenerated(t, vs, data)
	})
}

// TestRewriteToolchainModules runs modules built by real toolchains (the C,
// AssemblyScript and Rust examples, built by their build.sh; see
// testdata/README) in their original and rewritten forms: each rewrite
// must compile, and a command must write the same output and exit the same
// way; a reactor must initialise and answer sluice_handle the same way.
func TestRewriteToolchainModules(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("testdata/*.wasm")
	if err != nil || len(paths) < 4 {
		t.Fatalf("toolchain corpus: %v, %v", paths, err)
	}
	vs := newVariants(t, 10_000) // the runtime's limit
	input := []byte(`{"version":1,"function":{"name":"triage","version":1},"trigger":{"type":"queue","source":"q"},"messages":[` +
		`{"id":"1","attempt":1,"created_at":"2026-01-01T00:00:00Z","headers":{},"body":{"severity":"high","title":"db down"}},` +
		`{"id":"2","attempt":2,"created_at":"2026-01-01T00:00:00Z","headers":{},"body":{"severity":"low"}},` +
		`{"id":"3","attempt":1,"created_at":"2026-01-01T00:00:00Z","headers":{},"body":"not an object"}]}`)
	for _, path := range paths {
		wasm, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		for i, v := range vs {
			in, err := v.rewrite(wasm)
			if err != nil {
				t.Fatalf("%s %s: %v", path, v.name, err)
			}
			got := runToolchainModule(t, v.r, in, input)
			if i == 0 {
				want = got
				if !strings.Contains(got, "itemIdentifier") && !strings.Contains(got, "batchItemFailures") {
					t.Logf("%s: output %s", path, got)
				}
				continue
			}
			if got != want {
				t.Errorf("%s %s: %s, the original %s", path, v.name, got, want)
			}
		}
	}
}

// runToolchainModule runs a command's _start on input, or a reactor's
// sluice_handle, and describes what it did.
func runToolchainModule(t *testing.T, r wazero.Runtime, wasm, input []byte) string {
	ctx := context.Background()
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	defer cm.Close(ctx)
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().WithName("").WithStdout(&stdout).WithStderr(&stderr).WithStdin(bytes.NewReader(input))
	_, command := cm.ExportedFunctions()["_start"]
	if !command {
		cfg = cfg.WithStartFunctions("_initialize")
	}
	m, err := r.InstantiateModule(ctx, cm, cfg)
	if command {
		code := uint32(0)
		if ee, ok := err.(*sys.ExitError); ok {
			code, err = ee.ExitCode(), nil
		}
		if err != nil {
			t.Fatalf("instantiate: %v", err)
		}
		return fmt.Sprintf("exit %d stdout %q stderr %q", code, stdout.String(), stderr.String())
	}
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	defer m.Close(ctx)
	res, err := m.ExportedFunction("sluice_alloc").Call(ctx, uint64(len(input)))
	if err != nil {
		t.Fatalf("sluice_alloc: %v", err)
	}
	ptr := uint32(res[0])
	if !m.Memory().Write(ptr, input) {
		t.Fatalf("sluice_alloc returned %d, out of memory", ptr)
	}
	res, err = m.ExportedFunction("sluice_handle").Call(ctx, uint64(ptr), uint64(len(input)))
	if err != nil {
		return "error: " + err.Error()
	}
	// The result packs the output's pointer and length.
	out, _ := m.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	return fmt.Sprintf("handle %q stdout %q stderr %q", out, stdout.String(), stderr.String())
}
