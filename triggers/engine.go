package triggers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/namedsql"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
)

// Config wires an Engine to the rest of Sluice.
type Config struct {
	Pool     *pgxpool.Pool
	Schema   string
	Queue    *pgqueue.Client
	Listener *pgqueue.Listener // optional: wake-ups on new messages
	Registry *functions.Registry
	Runtime  *runtime.Runtime
	// KV serves the key-value stores functions open (Function ABI v1.1);
	// optional: without it, a function that lists stores fails to load.
	KV     *kv.Stores
	Logger zerolog.Logger
	// AccountGuestMemory, when set, says how many bytes of linear memory
	// an account's instances may hold at once
	// (runtime.FunctionConfig.AccountGuestMemory), read when one of its
	// functions is loaded; 0 leaves the runtime's bound per account.
	AccountGuestMemory func(ctx context.Context, account string) (int64, error)

	// ReloadInterval is how often triggers and aliases are re-read, so
	// deploys take effect without a restart (default 1s).
	ReloadInterval time.Duration
	// PollMin and PollMax bound how often an idle queue is polled when no
	// wake-up arrives (defaults 100ms and 5s): NOTIFY wake-ups cover new
	// sends, each dispatcher wakes itself when a retry it scheduled comes
	// due, and polling covers the rest (delayed sends, leases of crashed
	// processes expiring).
	PollMin, PollMax time.Duration
	// InvocationRetention bounds how long invocation records are kept
	// (default DefaultInvocationRetention).
	InvocationRetention time.Duration
	// Node names this process in cron claims (default host:pid).
	Node string
	// OnBatch, when set, is called after each queue batch is settled, on
	// a goroutine that settles the trigger's batches (there may be several
	// at once): keep it quick. Metrics and benchmarks use it.
	OnBatch func(BatchEvent)
}

// BatchEvent describes one batch a queue trigger ran.
type BatchEvent struct {
	Account, Trigger, Queue, Function string
	Version                           int
	// Claimed is when the batch's messages had been received and the
	// batch was queued for a worker (process clock): from a message's
	// CreatedAt to Claimed is its way through the database (the send and
	// its commit, the wake-up, the claim; with a batch window, the wait
	// for the batch to fill), from Claimed to Started the wait for a
	// worker.
	Claimed time.Time
	// Started is when the function was invoked (process clock).
	Started  time.Time
	Duration time.Duration
	// Startup is the part of Duration before the function first read its
	// batch (runtime.Result.Startup): Started plus Startup is when the
	// function began on the batch.
	Startup time.Duration
	// Outcome is success, partial_failure or failure.
	Outcome              string
	Acked, Retried, Dead int
	// Emitted counts the messages the batch emitted (sent or published).
	Emitted int
	// CreatedAt holds each message's send time (database clock), so
	// Started plus Startup minus it is the message's send-to-function
	// latency.
	CreatedAt []time.Time
}

// Engine runs every enabled trigger: queue dispatchers and cron schedules,
// following changes in the database. Several engines (processes) may run
// against one database; they share the work.
type Engine struct {
	cfg Config
	log zerolog.Logger
	q   namedsql.Statements

	// runCtx is cancelled when Stop's grace period ends: running batches
	// are then cut short and their leases released.
	runCtx    context.Context
	runCancel context.CancelFunc

	mu       sync.Mutex
	started  bool
	stopping bool
	loopDone chan struct{}
	stopLoop context.CancelFunc
	// what runs each trigger, by trigger id, and the runKey it runs with
	runners map[int64]runner
	runKeys map[int64]string
	retired []runner // replaced runners still finishing their batches
	// notStarted: when "trigger not started" was last logged, by trigger id
	notStarted map[int64]time.Time
	loaded     map[string]*loadedFunction

	ids invocationIDs
}

// runner runs one trigger: a queue or DLQ dispatcher, or a cron schedule.
type runner interface {
	// stop makes it stop taking work; what runs goes on until done.
	stop()
	done() <-chan struct{}
	function() *runtime.Function
}

type loadedFunction struct {
	fn   *runtime.Function
	used bool
}

// NewEngine returns an Engine; call Start.
func NewEngine(cfg Config) (*Engine, error) {
	if cfg.Pool == nil || cfg.Queue == nil || cfg.Registry == nil || cfg.Runtime == nil {
		return nil, errors.New("triggers: new engine: Pool, Queue, Registry and Runtime are required")
	}
	if cfg.ReloadInterval <= 0 {
		cfg.ReloadInterval = time.Second
	}
	if cfg.PollMin <= 0 {
		cfg.PollMin = 100 * time.Millisecond
	}
	if cfg.PollMax < cfg.PollMin {
		cfg.PollMax = max(5*time.Second, cfg.PollMin)
	}
	if cfg.InvocationRetention <= 0 {
		cfg.InvocationRetention = DefaultInvocationRetention
	}
	if cfg.Node == "" {
		host, _ := os.Hostname()
		cfg.Node = host + ":" + strconv.Itoa(os.Getpid())
	}
	if cfg.Schema == "" {
		cfg.Schema = cfg.Queue.Schema()
	}
	q, err := namedsql.Parse(queriesSQL, cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("triggers: new engine: %w", err)
	}
	e := &Engine{
		cfg: cfg, log: cfg.Logger, q: q,
		runners: map[int64]runner{}, runKeys: map[int64]string{}, loaded: map[string]*loadedFunction{}, notStarted: map[int64]time.Time{},
	}
	e.runCtx, e.runCancel = context.WithCancel(context.Background())
	return e, nil
}

// Start loads the triggers and starts running them. It fails if the first
// load fails (e.g. the schema is not migrated).
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("triggers: engine already started")
	}
	if err := e.reloadLocked(ctx); err != nil {
		return err
	}
	e.started = true
	loopCtx, cancel := context.WithCancel(context.Background())
	e.stopLoop, e.loopDone = cancel, make(chan struct{})
	go e.loop(loopCtx)
	return nil
}

func (e *Engine) loop(ctx context.Context) {
	defer close(e.loopDone)
	t := time.NewTicker(e.cfg.ReloadInterval)
	defer t.Stop()
	lastPrune := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.mu.Lock()
		if err := e.reloadLocked(ctx); err != nil && ctx.Err() == nil {
			e.log.Error().Err(err).Msg("reloading triggers failed; keeping the current ones")
		}
		e.mu.Unlock()
		if time.Since(lastPrune) > time.Minute {
			lastPrune = time.Now()
			e.prune(ctx)
		}
	}
}

// prune bounds the invocation log and the cron claims.
func (e *Engine) prune(ctx context.Context) {
	if _, err := e.cfg.Pool.Exec(ctx, e.q.Get("prune_invocations"), e.cfg.InvocationRetention.Seconds()); err != nil && ctx.Err() == nil {
		e.log.Warn().Err(err).Msg("pruning invocations failed")
	}
	if _, err := e.cfg.Pool.Exec(ctx, e.q.Get("prune_ticks")); err != nil && ctx.Err() == nil {
		e.log.Warn().Err(err).Msg("pruning cron ticks failed")
	}
}

// reloadLocked reads the enabled triggers and starts, replaces or stops
// what runs so it matches them.
func (e *Engine) reloadLocked(ctx context.Context) error {
	if e.stopping {
		return nil
	}
	list, err := e.activeTriggers(ctx)
	if err != nil {
		return err
	}
	for _, lf := range e.loaded {
		lf.used = false
	}
	seen := map[int64]bool{}
	for _, a := range list {
		seen[a.ID] = true
		key := a.runKey()
		if e.runKeys[a.ID] == key {
			e.markUsed(a)
			continue
		}
		e.stopTrigger(a.ID)
		if err := e.startTrigger(ctx, a); err != nil {
			// Retried at every reload: logged once a minute per trigger.
			if time.Since(e.notStarted[a.ID]) >= time.Minute {
				e.notStarted[a.ID] = time.Now()
				e.log.Error().Err(err).Str("trigger", a.Name).Msg("trigger not started (logged once a minute while it lasts)")
			}
			continue
		}
		delete(e.notStarted, a.ID)
		e.runKeys[a.ID] = key
	}
	for id := range e.runKeys {
		if !seen[id] {
			e.stopTrigger(id)
		}
	}
	maps.DeleteFunc(e.notStarted, func(id int64, _ time.Time) bool { return !seen[id] })
	e.retired = slices.DeleteFunc(e.retired, finished)
	// Close functions no trigger uses any more once no batch runs on them.
	for key, lf := range e.loaded {
		if !lf.used && !e.running(lf.fn) {
			delete(e.loaded, key)
			_ = lf.fn.Close(ctx)
		}
	}
	return nil
}

// activeTriggers reads the enabled triggers and what each runs now: the
// version its function's alias points at (zero when there is none) and,
// for a queue trigger, the queue's lease settings (zero when the queue is
// gone). Each table is read by the package that owns it.
func (e *Engine) activeTriggers(ctx context.Context) ([]*active, error) {
	rows, err := e.cfg.Pool.Query(ctx, e.q.Get("active_triggers"))
	if err != nil {
		return nil, fmt.Errorf("triggers: load: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*active, error) {
		a := &active{}
		err := row.Scan(a.fields()...)
		a.fromMillis()
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("triggers: load: %w", err)
	}
	var fns []functions.Ref
	var queues []pgqueue.QueueRef
	for _, a := range list {
		if a.Function != "" {
			fns = append(fns, functions.Ref{Account: a.Account, Function: a.Function, Alias: a.Alias})
		}
		if a.Kind == KindQueue && a.Queue != "" {
			queues = append(queues, pgqueue.QueueRef{Account: a.Account, Name: a.Queue})
		}
	}
	versions, err := e.cfg.Registry.ResolveAll(ctx, fns)
	if err != nil {
		return nil, fmt.Errorf("triggers: load: %w", err)
	}
	settings, err := e.cfg.Queue.GetQueues(ctx, queues)
	if err != nil {
		return nil, fmt.Errorf("triggers: load: %w", err)
	}
	for _, a := range list {
		if v, ok := versions[functions.Ref{Account: a.Account, Function: a.Function, Alias: a.Alias}]; ok {
			a.version, a.sha256, a.memoryMiB, a.timeout, a.env = v.Number, v.SHA256, v.MemoryMiB, v.Timeout, v.Env
			a.capabilities = v.Capabilities
		}
		if q, ok := settings[pgqueue.QueueRef{Account: a.Account, Name: a.Queue}]; ok && a.Kind == KindQueue {
			a.visibility, a.maxReceiveCount = q.Settings.VisibilityTimeout, q.Settings.MaxReceiveCount
		}
	}
	return list, nil
}

func finished(r runner) bool {
	select {
	case <-r.done():
		return true
	default:
		return false
	}
}

// running reports whether a replaced runner may still be using fn.
func (e *Engine) running(fn *runtime.Function) bool {
	for _, r := range e.retired {
		if r.function() == fn {
			return true
		}
	}
	return false
}

func functionKey(a *active) string {
	return a.Account + "|" + a.sha256 + "|" + strconv.Itoa(a.memoryMiB) + "|" + a.timeout.String() + "|" + a.Function +
		"|" + strconv.Itoa(a.version) + "|" + fmt.Sprint(sortedEnv(a.env)) + "|" + fmt.Sprint(a.capabilities.AllowedOutboundHosts, a.capabilities.Stores)
}

func sortedEnv(env map[string]string) []string {
	keys := slices.Sorted(maps.Keys(env))
	out := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, k, env[k])
	}
	return out
}

func (e *Engine) markUsed(a *active) {
	if lf := e.loaded[functionKey(a)]; lf != nil {
		lf.used = true
	}
}

// function returns the loaded function a trigger runs, loading it once.
func (e *Engine) function(ctx context.Context, a *active) (*runtime.Function, error) {
	if a.version == 0 {
		return nil, fmt.Errorf("function %s has no version under alias %s", a.Function, a.Alias)
	}
	key := functionKey(a)
	if lf := e.loaded[key]; lf != nil {
		lf.used = true
		return lf.fn, nil
	}
	fn, err := e.load(ctx, a)
	if err != nil {
		return nil, err
	}
	e.loaded[key] = &loadedFunction{fn: fn, used: true}
	return fn, nil
}

// load loads the version a resolved to into the runtime (uncached: the
// caller closes it).
func (e *Engine) load(ctx context.Context, a *active) (*runtime.Function, error) {
	module, err := e.cfg.Registry.Module(ctx, a.sha256)
	if err != nil {
		return nil, err
	}
	rc := runtime.FunctionConfig{
		Name: a.Function, Version: a.version, Account: a.Account, Env: a.env, MemoryMiB: a.memoryMiB, Timeout: a.timeout,
		PoolSize: max(4, a.Concurrency), AllowedOutboundHosts: a.capabilities.AllowedOutboundHosts,
	}
	if e.cfg.AccountGuestMemory != nil {
		if rc.AccountGuestMemory, err = e.cfg.AccountGuestMemory(ctx, a.Account); err != nil {
			return nil, fmt.Errorf("load %s version %d: the account's guest memory: %w", a.Function, a.version, err)
		}
	}
	if len(a.capabilities.Stores) > 0 {
		if e.cfg.KV == nil {
			return nil, fmt.Errorf("function %s version %d lists stores %q but the engine has no key-value stores", a.Function, a.version, a.capabilities.Stores)
		}
		rc.Stores, rc.KV = a.capabilities.Stores, accountKV{e.cfg.KV, a.Account}
		if a.dryRun {
			rc.KV = newDryRunKV(rc.KV)
		}
	}
	if a.dryRun {
		rc.RefuseOutbound = "not sent: a dry run makes no outbound calls"
	}
	fn, err := e.cfg.Runtime.Load(ctx, module, rc)
	if err != nil {
		return nil, fmt.Errorf("load %s version %d: %w", a.Function, a.version, err)
	}
	return fn, nil
}

func (e *Engine) startTrigger(ctx context.Context, a *active) error {
	var fn *runtime.Function
	if a.Function != "" {
		var err error
		if fn, err = e.function(ctx, a); err != nil {
			return err
		}
	}
	switch {
	case a.Kind == KindQueue && a.maxReceiveCount == 0:
		return fmt.Errorf("queue %s does not exist", a.Queue)
	case a.Kind == KindQueue && a.DLQ:
		e.runners[a.ID] = e.startDLQDispatcher(a, fn)
	case a.Kind == KindQueue:
		e.runners[a.ID] = e.startDispatcher(a, fn)
	case a.Kind == KindCron:
		c, err := e.startCron(a, fn)
		if err != nil {
			return err
		}
		e.runners[a.ID] = c
	default:
		return fmt.Errorf("unknown trigger kind %q", a.Kind)
	}
	e.log.Info().Str("trigger", a.Name).Str("function", a.Function).Int("version", a.version).Msg("trigger running")
	return nil
}

func (e *Engine) stopTrigger(id int64) {
	if r := e.runners[id]; r != nil {
		r.stop()
		e.retired = append(e.retired, r)
		delete(e.runners, id)
	}
	delete(e.runKeys, id)
}

// Stop stops claiming work, lets running batches finish until ctx is done,
// then cancels what still runs (releasing its leases). Calling Stop again returns at once.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	if !e.started || e.stopping {
		e.mu.Unlock()
		return nil
	}
	e.stopping = true
	e.stopLoop()
	e.mu.Unlock()
	<-e.loopDone

	e.mu.Lock()
	all := append([]runner{}, e.retired...)
	for id, r := range e.runners {
		all = append(all, r)
		delete(e.runners, id)
	}
	e.mu.Unlock()
	graceful := true
	for _, r := range all {
		r.stop()
	}
	for _, r := range all {
		select {
		case <-r.done():
			continue
		case <-ctx.Done():
			graceful = false
		}
		break
	}
	// Cut short what is still running; its leases are released.
	e.runCancel()
	for _, r := range all {
		<-r.done()
	}
	for _, lf := range e.loaded {
		_ = lf.fn.Close(context.Background())
	}
	if !graceful {
		return fmt.Errorf("triggers: stop: grace period ended with batches running: %w", ctx.Err())
	}
	return nil
}
