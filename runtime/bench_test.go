package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime/internal/abi"
)

func benchRuntime(b testing.TB, cacheDir string) *Runtime {
	b.Helper()
	rt, err := New(context.Background(), Config{CompilationCacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func benchLoad(b testing.TB, rt *Runtime, name string, mode wasmbuild.Mode, cfg FunctionConfig) *Function {
	b.Helper()
	cfg.Name = name
	f, err := rt.Load(context.Background(), wasmbuild.MustRead(b, name, mode), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// smallBatch is n messages with ~60-byte bodies.
func smallBatch(n int) Invocation {
	inv := Invocation{ID: "bench", Trigger: Trigger{Type: "queue", Source: "bench"}}
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range n {
		inv.Messages = append(inv.Messages, Message{
			ID: strconv.Itoa(1000 + i), Attempt: 1, CreatedAt: created,
			Body: json.RawMessage(`{"order":` + strconv.Itoa(i) + `,"email":"someone@example.com"}`),
		})
	}
	return inv
}

// BenchmarkCompile loads a standard-Go module (echo, ~3.5 MB) into a fresh
// Runtime: cold compiles it, cache-hit finds it in the on-disk
// compilation cache. loaded loads it into a Runtime where another Function
// holds it already (an engine's reload, a deploy's check of a module that
// runs), and closes the new Function.
func BenchmarkCompile(b *testing.B) {
	wasm := wasmbuild.MustRead(b, "echo", wasmbuild.Reactor)
	ctx := context.Background()
	run := func(b *testing.B, dir string) {
		for b.Loop() {
			rt, err := New(ctx, Config{CompilationCacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := rt.Load(ctx, wasm, FunctionConfig{Name: "echo"}); err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
	}
	b.Run("cold", func(b *testing.B) { run(b, "") })
	b.Run("cache-hit", func(b *testing.B) {
		dir := b.TempDir()
		rt, err := New(ctx, Config{CompilationCacheDir: dir}) // warm the cache
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rt.Load(ctx, wasm, FunctionConfig{Name: "echo"}); err != nil {
			b.Fatal(err)
		}
		rt.Close(ctx)
		run(b, dir)
	})
	b.Run("loaded", func(b *testing.B) {
		rt, err := New(ctx, Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		if _, err := rt.Load(ctx, wasm, FunctionConfig{Name: "echo"}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			f, err := rt.Load(ctx, wasm, FunctionConfig{Name: "echo"})
			if err != nil {
				b.Fatal(err)
			}
			f.Close(ctx)
		}
	})
}

// BenchmarkInvoke runs the noop function (SDK, encoding/json) on batches of
// small messages, end to end through Function.Invoke.
func BenchmarkInvoke(b *testing.B) {
	for _, mode := range []wasmbuild.Mode{wasmbuild.Reactor, wasmbuild.Command} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/batch=%d", mode, n), func(b *testing.B) {
				rt := benchRuntime(b, benchCacheDir(b))
				f := benchLoad(b, rt, "noop", mode, FunctionConfig{PoolSize: 1})
				inv := smallBatch(n)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					res, err := f.Invoke(ctx, inv)
					if err != nil || res.Failure != nil {
						b.Fatal(err, res.Failure)
					}
				}
			})
		}
	}
}

// BenchmarkCommandPaced runs the noop command on batches of 1 and 10 with
// a pause between invocations, as a trigger at a modest rate does: each
// batch finds its instance started ahead (see Function.Invoke). ns/op is
// one Invoke; startup-µs is Result.Startup, the part of it before the
// guest read its batch.
func BenchmarkCommandPaced(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			rt := benchRuntime(b, benchCacheDir(b))
			f := benchLoad(b, rt, "noop", wasmbuild.Command, FunctionConfig{PoolSize: 1})
			inv := smallBatch(n)
			ctx := context.Background()
			var startup time.Duration
			for b.Loop() {
				b.StopTimer()
				time.Sleep(5 * time.Millisecond) // the pause, in which the next instance starts
				b.StartTimer()
				res, err := f.Invoke(ctx, inv)
				if err != nil || res.Failure != nil {
					b.Fatal(err, res.Failure)
				}
				startup += res.Startup
			}
			b.ReportMetric(float64(startup.Microseconds())/float64(b.N), "startup-µs")
		})
	}
}

// BenchmarkReactorUnguarded is BenchmarkInvoke/reactor/batch=100 without
// the entry checks of package guard, to show what they cost.
func BenchmarkReactorUnguarded(b *testing.B) {
	guardEntries = false
	defer func() { guardEntries = true }()
	rt := benchRuntime(b, "")
	f := benchLoad(b, rt, "noop", wasmbuild.Reactor, FunctionConfig{PoolSize: 1})
	inv := smallBatch(100)
	b.ReportAllocs()
	for b.Loop() {
		if res, err := f.Invoke(context.Background(), inv); err != nil || res.Failure != nil {
			b.Fatal(err, res.Failure)
		}
	}
}

// BenchmarkHostSide measures the host's own work per batch of 100 small
// messages, without running any guest code: encoding the input, parsing an
// output failing one message, and mapping it onto the batch.
func BenchmarkHostSide(b *testing.B) {
	inv := smallBatch(100)
	out := []byte(`{"batchItemFailures":[{"itemIdentifier":"1042","retryAfterSeconds":30,"error":"smtp 451"}]}`)
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = appendInput(buf[:0], "noop", 1, &inv)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, f := outcomes(&inv, out); f != nil {
			b.Fatal(f)
		}
	}
	b.ReportMetric(float64(len(buf)), "input-bytes")
}

// BenchmarkCommandPhases splits a command-mode invocation into its parts,
// for the empty Go program (runtime/testdata/empty: Go runtime only) and
// the noop SDK function (adds encoding/json, reflect, the SDK):
// instantiate is wazero alone (no start function); run is a whole
// invocation (instantiate, Go runtime start, read stdin, decode the batch,
// exit).
func BenchmarkCommandPhases(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"runtime/testdata/empty", "noop"} {
		short := name[strings.LastIndexByte(name, '/')+1:]
		b.Run("instantiate/"+short, func(b *testing.B) {
			rt := benchRuntime(b, benchCacheDir(b))
			f := benchLoad(b, rt, name, wasmbuild.Command, FunctionConfig{})
			cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions()
			for b.Loop() {
				inst := &instance{mem: &limitedMemory{limit: f.limit}}
				mod, err := f.code.wr.InstantiateModule(f.memoryContext(ctx, inst), f.code.cm, cfg)
				if err != nil {
					b.Fatal(err)
				}
				mod.Close(ctx)
			}
		})
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("run/%s/batch=%d", short, n), func(b *testing.B) {
				rt := benchRuntime(b, benchCacheDir(b))
				f := benchLoad(b, rt, name, wasmbuild.Command, FunctionConfig{})
				inv := smallBatch(n)
				for b.Loop() {
					if res, err := f.Invoke(ctx, inv); err != nil || res.Failure != nil {
						b.Fatal(err, res.Failure)
					}
				}
			})
		}
	}
}

// BenchmarkPooledInstanceMemory starts 8 reactor instances of the noop
// function and reports the linear memory and Go heap each one holds.
func BenchmarkPooledInstanceMemory(b *testing.B) {
	const n = 8
	for b.Loop() {
		rt := benchRuntime(b, benchCacheDir(b))
		f := benchLoad(b, rt, "noop", wasmbuild.Reactor, FunctionConfig{PoolSize: n})
		inv := smallBatch(10)
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				f.Invoke(context.Background(), inv)
			}()
		}
		close(start)
		wg.Wait()
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		s := f.Stats()
		b.ReportMetric(float64(s.MemoryBytes)/float64(s.Instances), "linear-bytes/instance")
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(s.Instances), "heap-bytes/instance")
		b.ReportMetric(float64(s.Instances), "instances")
		rt.Close(context.Background())
	}
}

// BenchmarkParseOutput parses an output failing 10 messages.
func BenchmarkParseOutput(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"batchItemFailures":[`)
	for i := range 10 {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"itemIdentifier":"%d","retryAfterSeconds":30,"error":"smtp 451"}`, 1000+i)
	}
	buf.WriteString(`]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := abi.ParseOutput(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCacheDir(b *testing.B) string {
	dir, err := wasmbuild.CacheDir()
	if err != nil {
		b.Fatal(err)
	}
	return dir + "/wazero"
}
