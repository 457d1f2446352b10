package guard

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// activeSeg encodes an active segment of memory 0 at offset.
func activeSeg(offset int32, init string) []byte {
	b := appendS32([]byte{0x00, 0x41}, offset)
	b = append(b, 0x0b)
	b = appendU32(b, uint32(len(init)))
	return append(b, init...)
}

// passiveSeg encodes a passive segment.
func passiveSeg(init string) []byte {
	b := appendU32([]byte{0x01}, uint32(len(init)))
	return append(b, init...)
}

// dataModule is a module with one memory of the given pages (imported
// when imported is set), exported as "memory" when defined, and the given
// data segments. With count set it has a data count section; with
// initData set a function holds memory.init of segment 0 (and then the
// count section is there, as validation requires).
type dataModule struct {
	pages            uint32
	imported, count  bool
	initData, global bool
	segs             [][]byte
}

func (d dataModule) build() []byte {
	out := append([]byte{}, magic...)
	out = append(out, 0x01, 0x00, 0x00, 0x00)
	limits := appendU32([]byte{0x00}, d.pages)
	if d.initData {
		out = appendSection(out, 1, []byte{0x01, 0x60, 0x00, 0x00})
	}
	if d.imported {
		imp := appendU32(nil, 1)
		imp = append(imp, 0x03, 'e', 'n', 'v', 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02)
		out = appendSection(out, 2, append(imp, limits...))
	}
	if d.initData {
		out = appendSection(out, 3, []byte{0x01, 0x00})
	}
	if !d.imported {
		out = appendSection(out, 5, append([]byte{0x01}, limits...))
	}
	if d.global {
		out = appendSection(out, 6, []byte{0x01, 0x7f, 0x00, 0x41, 0x10, 0x0b}) // immutable i32 16
	}
	if !d.imported {
		out = appendSection(out, 7, []byte{0x01, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00})
	}
	if d.count || d.initData {
		out = appendSection(out, 12, appendU32(nil, uint32(len(d.segs))))
	}
	if d.initData {
		body := []byte{0x00, 0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x08, 0x00, 0x00, 0x0b}
		out = appendSection(out, 10, append([]byte{0x01, byte(len(body))}, body...))
	}
	data := appendU32(nil, uint32(len(d.segs)))
	for _, s := range d.segs {
		data = append(data, s...)
	}
	return appendSection(out, 11, data)
}

// sectionOf returns the content of wasm's section id, or nil.
func sectionOf(t *testing.T, wasm []byte, id byte) []byte {
	t.Helper()
	m, err := parseModule(wasm)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, s := range m.sections {
		if s.id == id {
			return s.content
		}
	}
	return nil
}

// segmentCount is how many data segments wasm declares.
func segmentCount(t *testing.T, wasm []byte) uint32 {
	t.Helper()
	r := reader{b: sectionOf(t, wasm, 11)}
	n, err := r.u32()
	if err != nil {
		return 0
	}
	return n
}

// initialMemoryOf instantiates wasm without running its start functions
// and returns its memory's contents, or the instantiation's error.
func initialMemoryOf(t *testing.T, r wazero.Runtime, wasm []byte) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	cm, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	defer cm.Close(ctx)
	m, err := r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, err
	}
	defer m.Close(ctx)
	mem, ok := m.Memory().Read(0, m.Memory().Size())
	if !ok {
		t.Fatal("memory not readable")
	}
	return bytes.Clone(mem), nil
}

func TestMergeData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	gapped := [][]byte{
		activeSeg(0, "ab"),
		activeSeg(10, "cd"),               // 8 zero bytes after "ab"
		activeSeg(12+MaxDataGap, "ef"),    // exactly MaxDataGap after "cd": joined
		activeSeg(14+2*MaxDataGap+1, "g"), // one byte more: a new segment
	}
	for _, tc := range []struct {
		name string
		mod  dataModule
		want uint32 // segments after the rewrite; 0: the data section is unchanged
	}{
		{"gaps", dataModule{pages: 1, segs: gapped}, 2},
		{"empty segments", dataModule{pages: 1, segs: [][]byte{activeSeg(0, ""), activeSeg(0, "ab"), activeSeg(2, ""), activeSeg(5, "c")}}, 1},
		{"at the memory's end", dataModule{pages: 1, segs: [][]byte{activeSeg(0, "ab"), activeSeg(65534, "cd")}}, 2},
		{"data count", dataModule{pages: 1, count: true, segs: [][]byte{activeSeg(0, "ab"), activeSeg(100, "cd")}}, 1},
		{"explicit memory 0", dataModule{pages: 1, segs: [][]byte{
			append([]byte{0x02, 0x00}, activeSeg(0, "ab")[1:]...), activeSeg(4, "cd")}}, 1},
		{"overlap", dataModule{pages: 1, segs: [][]byte{activeSeg(0, "abcd"), activeSeg(2, "xy")}}, 0},
		{"same offset", dataModule{pages: 1, segs: [][]byte{activeSeg(0, "ab"), activeSeg(0, "xy")}}, 0},
		{"out of order", dataModule{pages: 1, segs: [][]byte{activeSeg(10, "cd"), activeSeg(0, "ab"), activeSeg(20, "ef")}}, 1},
		{"out of order, overlapping", dataModule{pages: 1, segs: [][]byte{activeSeg(10, "cd"), activeSeg(0, "ab"), activeSeg(8, "xyz")}}, 0},
		{"passive", dataModule{pages: 1, segs: [][]byte{activeSeg(0, "ab"), passiveSeg("cd"), activeSeg(10, "ef")}}, 0},
		{"non-constant offset", dataModule{pages: 1, global: true, segs: [][]byte{
			activeSeg(0, "ab"), {0x00, 0x23, 0x00, 0x0b, 0x02, 'c', 'd'}}}, 0}, // global.get 0
		{"past the initial memory", dataModule{pages: 1, segs: [][]byte{activeSeg(0, "ab"), activeSeg(65535, "cd")}}, 0},
		{"memory.init", dataModule{pages: 1, initData: true, segs: [][]byte{activeSeg(0, "ab"), activeSeg(4, "cd")}}, 0},
		{"imported memory", dataModule{pages: 1, imported: true, segs: [][]byte{activeSeg(0, "ab"), activeSeg(4, "cd")}}, 0},
	} {
		in := tc.mod.build()
		out, _, err := AddEntryChecks(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.want == 0 {
			if !bytes.Equal(sectionOf(t, out, 11), sectionOf(t, in, 11)) || !bytes.Equal(sectionOf(t, out, 12), sectionOf(t, in, 12)) {
				t.Errorf("%s: data sections changed", tc.name)
			}
		} else if got := segmentCount(t, out); got != tc.want {
			t.Errorf("%s: %d segments after the rewrite, want %d", tc.name, got, tc.want)
		}
		if c := sectionOf(t, out, 12); c != nil {
			if n := segmentCount(t, out); !bytes.Equal(c, appendU32(nil, n)) {
				t.Errorf("%s: data count section %x, %d segments", tc.name, c, n)
			}
		}
		if tc.mod.imported || tc.mod.global {
			continue // needs imports to instantiate; the data section is unchanged
		}
		want, wantErr := initialMemoryOf(t, r, in)
		got, gotErr := initialMemoryOf(t, r, out)
		if (wantErr == nil) != (gotErr == nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: rewritten memory differs (errors %v, original %v)", tc.name, gotErr, wantErr)
		}
	}
}

// TestMergeDataModules checks, on the toolchain corpus and the Go modules
// the runtime's tests build, that both rewrites leave the initial memory
// exactly as the original module's, and that a Go module's segments are
// joined into a few.
func TestMergeDataModules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		t.Fatal(err)
	}
	type module struct {
		name string
		wasm []byte
		goes bool // built by Go
	}
	var mods []module
	paths, err := filepath.Glob("testdata/*.wasm")
	if err != nil || len(paths) < 4 {
		t.Fatalf("toolchain corpus: %v, %v", paths, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, module{p, b, false})
	}
	for _, name := range []string{"noop", "runtime/testdata/hostile"} {
		for _, mode := range []wasmbuild.Mode{wasmbuild.Command, wasmbuild.Reactor} {
			mods = append(mods, module{name + " " + mode.String(), wasmbuild.MustRead(t, name, mode), true})
		}
	}
	for _, m := range mods {
		want, err := initialMemoryOf(t, r, m.wasm)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		entry, _, err := AddEntryChecks(m.wasm)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		rewritten := map[string][]byte{"entry checks": entry}
		fuel, _, err := AddFuelChecks(m.wasm, 1000, 5000)
		switch {
		case err == nil:
			rewritten["fuel checks"] = fuel
		case !errors.Is(err, ErrNoYield):
			t.Fatalf("%s: %v", m.name, err)
		}
		for how, out := range rewritten {
			got, err := initialMemoryOf(t, r, out)
			if err != nil {
				t.Fatalf("%s %s: %v", m.name, how, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: initial memory differs from the original's (%d bytes, %d)", m.name, how, len(got), len(want))
			}
		}
		before, after := segmentCount(t, m.wasm), segmentCount(t, entry)
		t.Logf("%s: %d data segments, %d after; %d bytes, %d after entry checks", m.name, before, after, len(m.wasm), len(entry))
		if m.goes && after > before/20 {
			t.Errorf("%s: %d data segments left of %d", m.name, after, before)
		}
	}
}

// BenchmarkMergeData measures what joining the data segments of the noop
// module (command build) costs at load.
func BenchmarkMergeData(b *testing.B) {
	m, err := parseModule(wasmbuild.MustRead(b, "noop", wasmbuild.Command))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if mergeData(m) == nil {
			b.Fatal("no segments joined")
		}
	}
}
