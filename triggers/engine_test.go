package triggers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

const acct = pgqueue.DefaultAccount

// env is one isolated Sluice installation: a fresh schema with the queue
// core, registry and triggers, and what a `sluice serve` process wires up.
type env struct {
	t        testing.TB
	pool     *pgxpool.Pool
	schema   string
	queue    *pgqueue.Client
	registry *functions.Registry
	triggers *triggers.Store
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t)
}

// newEnvWith is newEnv with the migrations of more lines (applied, as a
// server does, before the tables are distributed under make test-citus).
func newEnvWith(t testing.TB, more ...migrate.Line) *env {
	t.Helper()
	pool, schema := pgtest.Schema(t, append([]migrate.Line{pgqueue.Migrations, functions.Migrations, triggers.Migrations}, more...)...)
	qc, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := functions.NewRegistry(pool, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := triggers.NewStore(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, pool: pool, schema: schema, queue: qc, registry: reg, triggers: st}
}

// cacheDir is the compilation cache shared by every runtime of the test
// binary, as it is shared by the processes of one host; it is the one all
// test binaries share across runs, so each module compiles once per machine.
var cacheDir = sync.OnceValue(func() string {
	dir, err := wasmbuild.CompiledCacheDir()
	if err != nil {
		panic(err)
	}
	return dir
})

// startEngine starts one "process": its own listener, runtime and engine.
func (e *env) startEngine(opts ...func(*triggers.Config)) *triggers.Engine {
	e.t.Helper()
	ctx := context.Background()
	listener, err := pgqueue.NewListener(e.pool, pgqueue.ListenerOptions{Schema: e.schema})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := listener.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	qc, err := pgqueue.New(e.pool, pgqueue.Options{Schema: e.schema, Listener: listener})
	if err != nil {
		e.t.Fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{CompilationCacheDir: cacheDir()})
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := triggers.Config{
		Pool: e.pool, Schema: e.schema, Queue: qc, Listener: listener, Registry: e.registry, Runtime: rt,
		Logger:         zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.WarnLevel),
		ReloadInterval: 200 * time.Millisecond, PollMin: 20 * time.Millisecond, PollMax: 200 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	eng, err := triggers.NewEngine(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = eng.Stop(stopCtx)
		_ = listener.Stop(stopCtx)
		_ = rt.Close(stopCtx)
	})
	return eng
}

// deploy builds an example (reactor mode) and deploys it as name.
func (e *env) deploy(example, name string, cfg functions.Config) {
	e.t.Helper()
	ctx := context.Background()
	path, err := wasmbuild.Build(ctx, example, wasmbuild.Reactor)
	if err != nil {
		e.t.Fatal(err)
	}
	module, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	if cfg.MemoryMiB == 0 {
		cfg.MemoryMiB = 64
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if _, err := e.registry.Deploy(ctx, acct, name, module, cfg, ""); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) createQueue(name string, s pgqueue.Settings) {
	e.t.Helper()
	if _, err := e.queue.CreateQueue(context.Background(), acct, name, s); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) putTrigger(tr triggers.Trigger) {
	e.t.Helper()
	tr.Account = acct
	if tr.Kind == "" {
		tr.Kind = triggers.KindQueue
	}
	if tr.Name == "" {
		tr.Name = tr.DerivedName()
	}
	tr.Enabled, tr.LeaseExtension = true, true
	if _, err := e.triggers.Put(context.Background(), tr); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) send(queue string, bodies ...string) []int64 {
	e.t.Helper()
	var seqs []int64
	for len(bodies) > 0 {
		n := min(len(bodies), 1000)
		ms := make([]pgqueue.NewMessage, n)
		for i := range ms {
			ms[i] = pgqueue.NewMessage{Body: json.RawMessage(bodies[i])}
		}
		s, err := e.queue.SendBatch(context.Background(), acct, queue, ms)
		if err != nil {
			e.t.Fatal(err)
		}
		seqs = append(seqs, s...)
		bodies = bodies[n:]
	}
	return seqs
}

// scalar runs a one-value query with {{schema}} replaced.
func (e *env) scalar(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	q := strings.ReplaceAll(sql, "{{schema}}", pgx.Identifier{e.schema}.Sanitize())
	if err := e.pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func (e *env) waitFor(what string, within time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// batchBegun reports whether the engine has begun running a batch. A
// batch takes its invocation id from the log's identity as it begins to
// run, and then runs whatever else the engine does (triggers/ids.go). A
// claimed message's receive count is no such sign: a batch claimed but not
// yet running when the engine stops is given back.
func (e *env) batchBegun() bool {
	return e.scalar(`SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('{{schema}}.invocations', 'id')::regclass), 0)`) > 0
}

func bodies(n int, format string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}
