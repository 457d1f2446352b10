package guard

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/sluicehq/sluice/internal/wasmbuild"
)

func TestAddEntryChecks(t *testing.T) {
	t.Parallel()
	in := wasmbuild.Handwritten("recursion")
	out, n, err := AddEntryChecks(in)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(out) != len(in)+2*len(entryCheck) {
		t.Fatalf("changed %d bodies, %d -> %d bytes; want 2 bodies, +%d bytes", n, len(in), len(out), 2*len(entryCheck))
	}
	if !bytes.Contains(out, append([]byte{0x00}, entryCheck...)) { // no locals, then the check
		t.Fatal("entry check not found after an empty local list")
	}
	// The result is still a valid module, and rewriting it again is a no-op.
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, out); err != nil {
		t.Fatalf("rewritten module does not compile: %v", err)
	}
	again, n, err := AddEntryChecks(out)
	if err != nil || n != 0 || !bytes.Equal(again, out) {
		t.Fatalf("second rewrite changed %d bodies (err %v)", n, err)
	}
}

func TestAddEntryChecksRejectsMalformed(t *testing.T) {
	t.Parallel()
	good := wasmbuild.Handwritten("recursion")
	for name, in := range map[string][]byte{
		"empty":     nil,
		"no magic":  []byte("not wasm at all"),
		"truncated": good[:len(good)-3],
		"bad size":  append(append([]byte{}, good[:8]...), 0x0a, 0xff, 0xff, 0xff, 0xff, 0x7f),
	} {
		if _, _, err := AddEntryChecks(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzAddEntryChecks(f *testing.F) {
	for _, name := range []string{"recursion", "unknown-import", "no-entry", "trap"} {
		f.Add(wasmbuild.Handwritten(name))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, n, err := AddEntryChecks(in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if n < 0 || len(out) < 8 {
			t.Fatalf("changed %d bodies into %d bytes", n, len(out))
		}
		// Idempotent: every body now starts with a loop.
		if _, n2, err := AddEntryChecks(out); err != nil || n2 != 0 {
			t.Fatalf("second pass changed %d bodies, error %v", n2, err)
		}
	})
}

func TestAddFuelChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The interpreter validates as strictly as the compiler, much faster.
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	for _, name := range []string{"echo", "runtime/testdata/hostile"} {
		for _, mode := range []wasmbuild.Mode{wasmbuild.Command, wasmbuild.Reactor} {
			in := wasmbuild.MustRead(t, name, mode)
			out, fuel, err := AddFuelChecks(in, 1000, 5000)
			if err != nil {
				t.Fatalf("%s %s: %v", name, mode, err)
			}
			if fuel.Sites < 2000 {
				t.Fatalf("%s %s: only %d sites", name, mode, fuel.Sites)
			}
			// Go's functions return at most one value: all are counted.
			if fuel.Counted < 1000 || fuel.DepthGlobal != fuel.Global+1 {
				t.Fatalf("%s %s: %d functions count their depth in global %d (fuel in %d)", name, mode, fuel.Counted, fuel.DepthGlobal, fuel.Global)
			}
			if _, err := r.CompileModule(ctx, out); err != nil {
				t.Fatalf("%s %s: rewritten module does not compile: %v", name, mode, err)
			}
		}
	}
	if _, _, err := AddFuelChecks(wasmbuild.Handwritten("recursion"), 1000, 0); !errors.Is(err, ErrNoYield) {
		t.Fatalf("module without sched_yield: %v, want ErrNoYield", err)
	}
}

func FuzzAddFuelChecks(f *testing.F) {
	for _, name := range []string{"recursion", "unknown-import", "no-entry", "trap", "spin", "multivalue"} {
		f.Add(wasmbuild.Handwritten(name))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _, err := AddFuelChecks(in, 100, 50)
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNoYield) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// TestAddFuelChecksMultiValue counts the calls of functions returning two
// values: their wrapper blocks use a type ()->(results), an existing one
// or one added to the type section, and a runaway recursion through them
// traps at the depth limit.
func TestAddFuelChecksMultiValue(t *testing.T) {
	t.Parallel()
	const maxDepth = 100
	out, fuel, err := AddFuelChecks(wasmbuild.Handwritten("multivalue"), 1000, maxDepth)
	if err != nil {
		t.Fatal(err)
	}
	if fuel.Counted != 3 {
		t.Fatalf("%d functions count their depth, want 3 (_start, two, rec)", fuel.Counted)
	}
	// two's type ()->(i32, i32) serves its own block; rec's (i32)->(i32,
	// i64) needs a new ()->(i32, i64).
	m, err := parseModule(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.types) != 5 || len(m.types[4].params) != 0 || !bytes.Equal(m.types[4].results, []byte{0x7f, 0x7e}) {
		t.Fatalf("types after the rewrite: %+v, want the 4 of the module and ()->(i32, i64)", m.types)
	}

	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().
		WithFunc(func() int32 { return 0 }).Export(YieldName).Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = r.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName("multivalue").WithStartFunctions())
	if err != nil {
		t.Fatalf("rewritten module does not instantiate: %v", err)
	}
	mod := r.Module("multivalue")
	_, err = mod.ExportedFunction("_start").Call(ctx)
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("runaway recursion: %v, want the depth limit's unreachable trap", err)
	}
	if depth := int32(mod.ExportedGlobal(DepthExport).Get()); depth != maxDepth+1 {
		t.Fatalf("depth counter %d at the trap, want %d", depth, maxDepth+1)
	}
}
