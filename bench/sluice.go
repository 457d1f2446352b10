package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/citus"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

const account = pgqueue.DefaultAccount

// migrateSluice applies Sluice's migrations to schema and, onCitus,
// distributes its tables (what `sluice migrate --citus` does).
func migrateSluice(ctx context.Context, pool *pgxpool.Pool, schema string, onCitus bool) error {
	lines := []migrate.Line{pgqueue.Migrations, functions.Migrations, triggers.Migrations}
	if err := migrate.Up(ctx, pool, schema, lines...); err != nil {
		return err
	}
	if onCitus {
		return citus.Distribute(ctx, pool, schema, lines...)
	}
	return nil
}

// guests are the functions the Sluice systems drain through, by system
// name: the Go noop example as a reactor and as a command, and the C and
// Rust triage examples as commands (a command module in a language with no
// runtime to start; each parses its batch and acks every message of the
// bench's). Build the C and Rust ones' toolchains with scripts/toolchains.
var guests = map[string]func(context.Context) ([]byte, error){
	"sluice-reactor":      goNoop(wasmbuild.Reactor),
	"sluice-command":      goNoop(wasmbuild.Command),
	"sluice-command-c":    buildScript("c-triage", "MODE=command"),
	"sluice-command-rust": buildScript("rust-triage"),
}

// goNoop builds the Go noop example in mode.
func goNoop(mode wasmbuild.Mode) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		path, err := wasmbuild.Build(ctx, "noop", mode)
		if err != nil {
			return nil, err
		}
		return os.ReadFile(path)
	}
}

// buildScript builds examples/<dir> with its build.sh, env (NAME=value
// words) added to its environment, through wasmbuild.RunCommand (what
// `sluice deploy` runs a manifest's build command with).
func buildScript(dir string, env ...string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		root, err := wasmbuild.Root()
		if err != nil {
			return nil, err
		}
		// Cargo keeps its build state there between runs (the examples'
		// tests share it).
		target, err := wasmbuild.TreeCacheDir(dir + "-target")
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			return nil, err
		}
		out := filepath.Join(target, "bench.wasm")
		command := strings.Join(append(env, "CARGO_TARGET_DIR="+quote(target), "./build.sh", quote(out)), " ")
		module, err := wasmbuild.RunCommand(ctx, filepath.Join(root, "examples", dir), command, out)
		if err != nil {
			return nil, fmt.Errorf("build examples/%s (scripts/toolchains installs its toolchain): %w", dir, err)
		}
		return module, nil
	}
}

// quote quotes s as one word for sh.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// benchSluice drains c.n messages through the function module (see
// guests), then measures send-to-start latency at c.rate msg/s.
func benchSluice(ctx context.Context, pool *pgxpool.Pool, c config, module []byte) (result, error) {
	schema, drop := freshSchema(ctx, pool, "bench_sluice")
	defer drop()
	if err := migrateSluice(ctx, pool, schema, c.citus); err != nil {
		return result{}, err
	}
	qc, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		return result{}, err
	}
	reg, err := functions.NewRegistry(pool, schema, nil)
	if err != nil {
		return result{}, err
	}
	store, err := triggers.NewStore(pool, schema)
	if err != nil {
		return result{}, err
	}
	if _, err := reg.Deploy(ctx, account, "bench", module, functions.Config{MemoryMiB: memoryMiB, Timeout: 30 * time.Second}, ""); err != nil {
		return result{}, err
	}
	// The sweeper runs from the start, as in `sluice serve`, which sends
	// expired leases to DLQs and keeps the messages table vacuumed and its
	// statistics current while the backlog goes in and drains.
	sweeper := pgqueue.NewSweeper(qc, pgqueue.SweeperOptions{OnError: func(err error) { fmt.Fprintln(os.Stderr, "sweeper:", err) }})
	if err := sweeper.Start(ctx); err != nil {
		return result{}, err
	}
	defer sweeper.Stop(context.WithoutCancel(ctx))
	// The backlog goes in before any trigger exists.
	if err := makeQueues(ctx, qc, c); err != nil {
		return result{}, err
	}

	var pr probe
	listener, lqc, stopListener, err := listen(ctx, pool, schema)
	if err != nil {
		return result{}, err
	}
	defer stopListener()
	cacheDir, err := os.MkdirTemp("", "sluice-bench-cache-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(cacheDir)
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cacheDir})
	if err != nil {
		return result{}, err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	eng, err := triggers.NewEngine(triggers.Config{
		Pool: pool, Schema: schema, Queue: lqc, Listener: listener, Registry: reg, Runtime: rt,
		Logger: zerolog.New(os.Stderr).Level(zerolog.WarnLevel),
		OnBatch: func(ev triggers.BatchEvent) {
			if ev.Queue != "latency" {
				pr.observe(ev.Acked)
				return
			}
			lat := make([]time.Duration, len(ev.CreatedAt))
			claims := make([]time.Duration, len(ev.CreatedAt))
			for i, created := range ev.CreatedAt {
				lat[i] = ev.Started.Add(ev.Startup).Sub(created)
				claims[i] = ev.Claimed.Sub(created)
			}
			pr.observeClaims(claims...)
			pr.observe(0, lat...)
		},
	})
	if err != nil {
		return result{}, err
	}
	// Compile the module before the clock starts and keep it loaded while
	// the engine runs, as a serving process has its functions (a warm
	// process): the engine's own Load then finds it compiled, where it
	// would otherwise read it back from the compilation cache inside the
	// timed drain (~0.1 s of CPU, 5-8 % of a drain of 100,000 at batch
	// 1,000; BENCHMARKS.md).
	warm, err := rt.Load(ctx, module, runtime.FunctionConfig{Name: "bench", Version: 1, MemoryMiB: memoryMiB})
	if err != nil {
		return result{}, err
	}
	defer warm.Close(context.WithoutCancel(ctx))
	for _, t := range []triggers.Trigger{
		{Queue: "drain", BatchSize: c.batch, Concurrency: c.concurrency},
		{Queue: "latency", BatchSize: 10, Concurrency: c.concurrency},
	} {
		t.Account, t.Kind, t.Function, t.Enabled, t.LeaseExtension = account, triggers.KindQueue, "bench", true, true
		t.AckPolicy = triggers.AckPolicy(c.ackPolicy)
		t.Name = t.DerivedName()
		if _, err := store.Put(ctx, t); err != nil {
			return result{}, err
		}
	}
	defer eng.Stop(context.WithoutCancel(ctx))
	small := []pgqueue.NewMessage{{Body: benchBody}}
	return pr.run(ctx, c, func() error { return eng.Start(ctx) }, func() error {
		_, err := qc.SendBatch(ctx, account, "latency", small)
		return err
	})
}

// memoryMiB is the memory limit the bench deploys its functions with. The
// warm-up load uses it too: the runtime caps a module's tables by the
// limit, so a load with another limit would compile another module.
const memoryMiB = 64

// benchBody is the body of every message the Sluice systems send.
var benchBody = json.RawMessage(`{"n":1}`)

// makeQueues creates the queues "drain" and "latency" and sends c.n
// messages to "drain", in c.groups ordered groups when c.groups > 0.
func makeQueues(ctx context.Context, qc *pgqueue.Client, c config) error {
	for _, q := range []string{"drain", "latency"} {
		if _, err := qc.CreateQueue(ctx, account, q, pgqueue.Settings{}); err != nil {
			return err
		}
	}
	batch := make([]pgqueue.NewMessage, 1000)
	for i := range batch {
		batch[i] = pgqueue.NewMessage{Body: benchBody}
	}
	for sent := 0; sent < c.n; sent += len(batch) {
		if c.groups > 0 {
			for i := range batch {
				batch[i].Group = strconv.Itoa((sent + i) % c.groups)
			}
		}
		if _, err := qc.SendBatch(ctx, account, "drain", batch[:min(len(batch), c.n-sent)]); err != nil {
			return err
		}
	}
	return nil
}

// listen starts a Listener on schema and returns it with a queue client
// it wakes, and the func that stops it.
func listen(ctx context.Context, pool *pgxpool.Pool, schema string) (*pgqueue.Listener, *pgqueue.Client, func(), error) {
	listener, err := pgqueue.NewListener(pool, pgqueue.ListenerOptions{Schema: schema})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := listener.Start(ctx); err != nil {
		return nil, nil, nil, err
	}
	stop := func() { _ = listener.Stop(context.WithoutCancel(ctx)) }
	qc, err := pgqueue.New(pool, pgqueue.Options{Schema: schema, Listener: listener})
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return listener, qc, stop, nil
}
