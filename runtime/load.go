package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sluicehq/sluice/runtime/internal/guard"
)

// Check tells whether the runtime accepts wasm (the imports it provides,
// the exports of a command or reactor, its tables within the limit) as a
// function with memoryMiB of memory, the limit it will be loaded with:
// the runtime caps a module's tables by that limit, so the check compiles
// what the triggers will run (and leaves it in the compilation cache).
// A deploy runs it before storing a version.
func (r *Runtime) Check(ctx context.Context, wasm []byte, memoryMiB int) error {
	fn, err := r.Load(ctx, wasm, FunctionConfig{Name: "deploy-check", Version: 1, MemoryMiB: memoryMiB})
	if err != nil {
		return err
	}
	return fn.Close(ctx)
}

// Load compiles wasm (once per distinct module and memory limit, by
// SHA-256, while a Function loaded from it is open) and prepares it
// to run with cfg. It fails when the module imports anything the host does
// not provide, exports neither a command's nor a reactor's entry points, or
// needs more memory at start than cfg allows, in its linear memory or its
// tables (see capTables); the error names the culprit.
func (r *Runtime) Load(ctx context.Context, wasm []byte, cfg FunctionConfig) (*Function, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("load function %s v%d: %w", cfg.Name, cfg.Version, err)
	}
	limit := uint64(cfg.MemoryMiB) << 20
	outbound, err := newOutboundPolicy(cfg.AllowedOutboundHosts, r.network)
	if err != nil {
		return nil, fmt.Errorf("load function %s v%d: %w", cfg.Name, cfg.Version, err)
	}
	code, err := r.compile(ctx, wasm, limit)
	if err != nil {
		return nil, fmt.Errorf("load function %s v%d: %w", cfg.Name, cfg.Version, err)
	}
	kind, err := r.inspect(code.cm, limit)
	if err != nil {
		r.release(ctx, code)
		return nil, fmt.Errorf("load function %s v%d (module %s): %w", cfg.Name, cfg.Version, code.hash[:12], err)
	}
	mc := wazero.NewModuleConfig().
		WithName("").
		WithArgs(cfg.Name).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mc = mc.WithEnv(k, cfg.Env[k])
	}
	if kind == Reactor {
		mc = mc.WithStartFunctions("_initialize")
	}
	f := &Function{
		rt:            r,
		code:          code,
		cfg:           cfg,
		kind:          kind,
		log:           functionLogger(r.log, cfg),
		modCfg:        mc,
		limit:         limit,
		budgets:       r.instanceBudgets(cfg),
		initialMemory: initialMemory(code.cm),
		outbound:      outbound,
		slots:         make(chan struct{}, cfg.PoolSize),
		closing:       make(chan struct{}),
	}
	if kind == Command {
		f.started = make(chan *startedCommand, cfg.PoolSize)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.release(ctx, code)
		return nil, ErrClosed
	}
	r.functions[f] = struct{}{}
	r.mu.Unlock()
	return f, nil
}

// capTables counts a module's tables against the memory limit: wazero
// holds every table entry in host memory (guard.TableEntryBytes each),
// outside the linear memory limitedMemory caps. The tables' initial sizes
// must fit the limit, and their maxima are lowered so that, grown as far
// as table.grow then allows, all of them together still do: a guest's
// tables and its linear memory each hold at most the limit.
func capTables(wasm []byte, limit uint64) ([]byte, error) {
	capped, err := guard.CapTables(wasm, limit/guard.TableEntryBytes)
	var te *guard.TableError
	switch {
	case errors.As(err, &te) && te.Import != "":
		return nil, fmt.Errorf("unknown import %s: the host provides no table", te.Import)
	case errors.As(err, &te):
		mib := func(entries uint64) uint64 { return (entries*guard.TableEntryBytes + 1<<20 - 1) >> 20 }
		if te.Total > te.Entries {
			return nil, fmt.Errorf("table %d needs %d MiB at start (%d entries; %d MiB with the tables before it), over the %d MiB limit",
				te.Table, mib(te.Entries), te.Entries, mib(te.Total), limit>>20)
		}
		return nil, fmt.Errorf("table %d needs %d MiB at start (%d entries), over the %d MiB limit", te.Table, mib(te.Entries), te.Entries, limit>>20)
	case err != nil:
		return nil, fmt.Errorf("compile module: invalid module: %w", err)
	}
	return capped, nil
}

// inspect checks a module against the ABI and returns its kind.
func (r *Runtime) inspect(cm wazero.CompiledModule, limit uint64) (Kind, error) {
	for _, d := range cm.ImportedFunctions() {
		mod, name, _ := d.Import()
		hd, ok := r.host[mod][name]
		if !ok {
			return 0, fmt.Errorf("unknown import %q.%q (the host provides wasi_snapshot_preview1 and sluice functions)", mod, name)
		}
		if !sameSignature(d, hd) {
			return 0, fmt.Errorf("import %q.%q has signature %s, the host's is %s", mod, name, signature(d), signature(hd))
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		return 0, fmt.Errorf("unknown import %q.%q (the host provides no memory)", mod, name)
	}
	for name, m := range cm.ExportedMemories() {
		if need := uint64(m.Min()) << 16; need > limit {
			return 0, fmt.Errorf("memory %q needs %d MiB at start, over the %d MiB limit", name, (need+1<<20-1)>>20, limit>>20)
		}
	}
	exports := cm.ExportedFunctions()
	_, hasStart := exports["_start"]
	_, hasInit := exports["_initialize"]
	alloc, hasAlloc := exports["sluice_alloc"]
	handle, hasHandle := exports["sluice_handle"]
	if hasInit && (hasAlloc || hasHandle || !hasStart) {
		var missing []string
		if !hasAlloc {
			missing = append(missing, "sluice_alloc")
		}
		if !hasHandle {
			missing = append(missing, "sluice_handle")
		}
		if _, ok := cm.ExportedMemories()["memory"]; !ok {
			missing = append(missing, "memory")
		}
		if len(missing) > 0 {
			return 0, fmt.Errorf("reactor module (exports _initialize) lacks export %s (build it with the sluice sdk)", strings.Join(missing, ", "))
		}
		if s := signature(alloc); s != "(i32) -> (i32)" {
			return 0, fmt.Errorf("export sluice_alloc has signature %s, want (i32) -> (i32)", s)
		}
		if s := signature(handle); s != "(i32, i32) -> (i64)" {
			return 0, fmt.Errorf("export sluice_handle has signature %s, want (i32, i32) -> (i64)", s)
		}
		return Reactor, nil
	}
	if hasStart {
		return Command, nil
	}
	return 0, errors.New("module exports neither _start (command) nor _initialize, sluice_alloc and sluice_handle (reactor)")
}

func sameSignature(a, b api.FunctionDefinition) bool {
	return bytes.Equal(a.ParamTypes(), b.ParamTypes()) && bytes.Equal(a.ResultTypes(), b.ResultTypes())
}

func signature(d api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return "(" + names(d.ParamTypes()) + ") -> (" + names(d.ResultTypes()) + ")"
}

// initialMemory is the bytes of linear memory an instance of cm starts
// with: its exported memory's minimum (inspect refuses imported ones).
func initialMemory(cm wazero.CompiledModule) int64 {
	var n int64
	for _, m := range cm.ExportedMemories() {
		n = max(n, int64(m.Min())<<16)
	}
	return n
}
