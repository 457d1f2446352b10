package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sluicehq/sluice/runtime/internal/guard"
)

// ErrClosed is returned by calls on a closed Runtime or Function.
var ErrClosed = errors.New("runtime: closed")

// Config configures a Runtime. The zero value is usable.
type Config struct {
	// CompilationCacheDir, when set, keeps compiled machine code on disk
	// there, so another Runtime (or process) loading the same module skips
	// compilation. Empty means an in-memory cache for this Runtime only.
	CompilationCacheDir string
	// Logger receives function logs (one event per stderr line) and host
	// events. The zero Logger discards them.
	Logger zerolog.Logger
}

// Runtime hosts WebAssembly functions: one wazero runtime and compilation
// cache shared by every Function loaded into it. It is safe for concurrent
// use.
type Runtime struct {
	wr    wazero.Runtime
	cache wazero.CompilationCache
	log   zerolog.Logger
	// host lists the functions the host provides, by import module, name.
	host map[string]map[string]api.FunctionDefinition

	mu        sync.Mutex
	closed    bool
	compiled  map[[32]byte]*compiledModule
	functions map[*Function]struct{}
}

// compiledModule is a module compiled once and shared by the Functions
// loaded from the same bytes.
type compiledModule struct {
	ready chan struct{} // closed once cm or err is set
	cm    wazero.CompiledModule
	err   error
	refs  int
	sum   [32]byte
	hash  string
}

// New returns a Runtime. Close it to free its compiled code.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	var cache wazero.CompilationCache
	if cfg.CompilationCacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CompilationCacheDir)
		if err != nil {
			return nil, fmt.Errorf("runtime: compilation cache %s: %w", cfg.CompilationCacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(true)
	wr := wazero.NewRuntimeWithConfig(ctx, rc)
	wasi, err := wasi_snapshot_preview1.Instantiate(ctx, wr)
	if err != nil {
		_ = wr.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("runtime: instantiate wasi: %w", err)
	}
	defs := wasi.(api.Module).ExportedFunctionDefinitions()
	return &Runtime{
		wr:        wr,
		cache:     cache,
		log:       cfg.Logger,
		host:      map[string]map[string]api.FunctionDefinition{wasi_snapshot_preview1.ModuleName: defs},
		compiled:  map[[32]byte]*compiledModule{},
		functions: map[*Function]struct{}{},
	}, nil
}

// compile returns the compiled module for wasm, compiling it on first use;
// concurrent loads of the same bytes wait for one compilation. The caller
// owns one reference and must release it.
func (r *Runtime) compile(ctx context.Context, wasm []byte) (*compiledModule, error) {
	sum := sha256.Sum256(wasm)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	c, ok := r.compiled[sum]
	if !ok {
		c = &compiledModule{ready: make(chan struct{}), sum: sum, hash: hex.EncodeToString(sum[:])}
		r.compiled[sum] = c
	}
	c.refs++
	r.mu.Unlock()
	if !ok {
		c.cm, c.err = r.compileGuarded(ctx, wasm)
		if c.err != nil {
			c.err = fmt.Errorf("compile module %s: %w", c.hash[:12], c.err)
		}
		close(c.ready)
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		r.release(ctx, sum, c)
		return nil, ctx.Err()
	}
	if c.err != nil {
		err := c.err
		r.release(ctx, sum, c)
		return nil, err
	}
	return c, nil
}

// compileGuarded compiles wasm after guard.AddEntryChecks, so a timeout
// or cancellation stops even loop-free code (see package guard).
func (r *Runtime) compileGuarded(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	guarded, _, err := guard.AddEntryChecks(wasm)
	if err != nil {
		return nil, err
	}
	return r.wr.CompileModule(ctx, guarded)
}

// release drops one reference to a compiled module, freeing it with the
// last.
func (r *Runtime) release(ctx context.Context, sum [32]byte, c *compiledModule) {
	r.mu.Lock()
	c.refs--
	last := c.refs == 0
	if last && r.compiled[sum] == c {
		delete(r.compiled, sum)
	}
	r.mu.Unlock()
	if last {
		<-c.ready
		if c.cm != nil {
			_ = c.cm.Close(ctx)
		}
	}
}

// Close closes every Function loaded into the Runtime (instances still
// running are stopped) and frees the compiled code. It is idempotent.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	fns := make([]*Function, 0, len(r.functions))
	for f := range r.functions {
		fns = append(fns, f)
	}
	r.mu.Unlock()
	for _, f := range fns {
		f.closeInstances(ctx)
	}
	err := r.wr.Close(ctx)
	if cerr := r.cache.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("runtime: close: %w", err)
	}
	return nil
}
