package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// Hook is a webhook hook as an apply declares it, with the secrets read
// from the environment variables the manifest names and source
// triggers.SourceManifest: the shape the HTTP API creates one from.
type Hook = wire.CreateHookRequest

// HookInfo is a listed hook: its secrets are never shown, only counted.
type HookInfo = wire.HookInfo

// TopicInfo is a listed topic with its subscriptions and who made each
// (source "api" or "manifest").
type TopicInfo = wire.Topic

// Target is where Apply makes a manifest real, for one account: the
// database directly (DBTarget) or the HTTP API (APITarget). Each method
// is one step of the apply.
type Target interface {
	// State reads what the account holds (Messages left empty).
	State(ctx context.Context) (State, error)
	// QueueMessages counts what deleting a queue would lose: its
	// messages and dead letters.
	QueueMessages(ctx context.Context, name string) (int64, error)
	// SetApp records that app owns the resource kind (KindQueue,
	// KindFunction, KindTrigger or KindHook) name.
	SetApp(ctx context.Context, kind, name, app string) error
	// ApplyQueue creates the queue, or sets the settings q declares;
	// create says the plan found no such queue.
	ApplyQueue(ctx context.Context, name string, q manifest.Queue, create bool) error
	// DeleteQueue deletes a queue with its messages.
	DeleteQueue(ctx context.Context, name string) error
	// Deploy deploys module and cfg as the function's next version and
	// moves its live alias (functions.Registry.Deploy semantics).
	Deploy(ctx context.Context, name string, module []byte, cfg functions.Config) (version int, created, aliasMoved bool, err error)
	// DeleteFunction deletes a function with its versions.
	DeleteFunction(ctx context.Context, name string) error
	// PutTrigger creates or replaces a trigger and reports whether it
	// changed; DeleteTrigger removes one (a missing one is not an error).
	PutTrigger(ctx context.Context, t triggers.Trigger) (changed bool, err error)
	DeleteTrigger(ctx context.Context, name string) error
	// PutHook creates or replaces a hook; DeleteHook removes one.
	PutHook(ctx context.Context, h Hook) (created bool, err error)
	DeleteHook(ctx context.Context, name string) error
	// CreateTopic creates a topic; Subscribe subscribes a queue without
	// a filter, owned by the manifest; Unsubscribe removes a
	// subscription.
	CreateTopic(ctx context.Context, name string) error
	Subscribe(ctx context.Context, topic, queue string) error
	Unsubscribe(ctx context.Context, topic, queue string) error
}

// Options tune an Apply or a Delete.
type Options struct {
	// DryRun computes and returns the plan and changes nothing.
	DryRun bool
	// Force deletes queues that still hold messages; without it a plan
	// deleting one is refused with a *DataLossError.
	Force bool
	// OnPlan, when set, is called with the plan before it is applied
	// (and on a dry run), so that it can be shown as it is applied.
	OnPlan func(Plan)
}

// DataLossError refuses a plan that deletes queues still holding
// messages, without Options.Force.
type DataLossError struct {
	App string
	// Queues maps each such queue to its messages and dead letters.
	Queues map[string]int64
}

func (e *DataLossError) Error() string {
	var parts []string
	var total int64
	for _, q := range sortedKeys(e.Queues) {
		parts = append(parts, fmt.Sprintf("%s (%d)", q, e.Queues[q]))
		total += e.Queues[q]
	}
	return fmt.Sprintf("app %s: deleting queue %s would lose %d messages (ready, delayed, in flight and dead letters); nothing was changed: use --force (force=true) to delete them anyway, or drain the queues first",
		e.App, strings.Join(parts, ", "), total)
}

// AppName is the app a manifest deploys: its `app:`, else the name of the
// folder it was read from (characters outside A-Z a-z 0-9 _ - replaced by
// -), else "default".
func AppName(m *manifest.Manifest) string {
	if m.App != "" {
		return m.App
	}
	if m.Dir != "" {
		base := filepath.Base(m.Dir)
		name := strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, base)
		if len(name) > 80 {
			name = name[:80]
		}
		if pgqueue.ValidName(name) && strings.Trim(name, "-") != "" {
			return name
		}
	}
	return "default"
}

// desiredApp is what a manifest declares, in the shapes a plan compares
// and the targets apply.
type desiredApp struct {
	want     Desired
	queues   map[string]manifest.Queue
	hooks    map[string]Hook
	triggers map[string]triggers.Trigger
	funcs    map[string]functions.Config
	modules  map[string][]byte
}

// newDesired is what m declares, with each function's module (built, or
// only its SHA-256 in shas when planning without modules) and each hook's
// secrets from secrets.
func newDesired(account string, m *manifest.Manifest, built map[string][]byte, shas map[string]string, secrets func(name string, h manifest.Hook) ([]string, error)) (*desiredApp, error) {
	d := &desiredApp{
		want: Desired{Queues: map[string]map[string]string{}, Functions: map[string]map[string]string{},
			Triggers: map[string]map[string]string{}, Hooks: map[string]map[string]string{}, Topics: map[string][]string{}},
		queues: m.Queues, hooks: map[string]Hook{}, triggers: map[string]triggers.Trigger{},
		funcs: map[string]functions.Config{}, modules: built,
	}
	for name, q := range m.Queues {
		d.want.Queues[name] = QueueFields(q)
	}
	for name, t := range m.Topics {
		d.want.Topics[name] = t.Subscribers
	}
	for _, name := range sortedKeys(m.Hooks) {
		mh := m.Hooks[name]
		secrets, err := secrets(name, mh)
		if err != nil {
			return nil, fmt.Errorf("hook %s: %w", name, err)
		}
		d.hooks[name] = Hook{Name: name, Queue: mh.Queue, Verify: mh.Verify, Secrets: secrets, Source: triggers.SourceManifest}
		d.want.Hooks[name] = HookFields(mh.Queue, mh.Verify, len(secrets))
	}
	for name, f := range m.Functions {
		cfg := functions.Config{
			MemoryMiB: f.MemoryMiB, Timeout: time.Duration(f.Timeout), Env: f.Env,
			Capabilities: functions.Capabilities{Emits: f.Emits, AllowedOutboundHosts: f.AllowedOutboundHosts, Stores: f.Stores},
		}
		d.funcs[name] = cfg
		sha, ok := shas[name]
		if !ok {
			sum := sha256.Sum256(built[name])
			sha = hex.EncodeToString(sum[:])
		}
		d.want.Functions[name] = FunctionFields(sha, cfg)
	}
	for _, mt := range m.Triggers {
		t := mt.Spec(account)
		d.triggers[t.Name] = t
		d.want.Triggers[t.Name] = TriggerFields(t)
	}
	return d, nil
}

// Apply makes the target's account hold what the manifest declares for
// its app (AppName): it computes the plan (ComputePlan) against the
// account's state, refuses it when it declares resources of another app
// (*ClashError) or deletes queues holding messages without opts.Force
// (*DataLossError), and applies it unless opts.DryRun: creates or updates
// the app's queues, subscribes its topics' queues, declares its webhook
// hooks, deploys its functions (a new version only when module or config
// changed) and puts its triggers, then deletes the app's triggers, hooks,
// functions and queues the manifest no longer declares. Resources of other
// apps and those made by hand (no app) are never changed; one the
// manifest names that has no app is adopted. Hook secrets are read from
// the environment variables the manifest names. Applying the same
// manifest again changes nothing.
//
// Every module is fetched (built) before anything is planned, so a build
// that fails changes nothing. The plan is returned with any error, so a
// caller can tell how far it got.
func Apply(ctx context.Context, target Target, account string, m *manifest.Manifest, modules Modules, opts Options) (Plan, error) {
	app := AppName(m)
	if !pgqueue.ValidName(app) {
		return Plan{App: app}, fmt.Errorf("app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", app)
	}
	built := make(map[string][]byte, len(m.Functions))
	for _, name := range slices.Sorted(maps.Keys(m.Functions)) {
		module, err := modules(ctx, name)
		if err != nil {
			return Plan{App: app}, err
		}
		built[name] = module
	}
	d, err := newDesired(account, m, built, nil, envSecrets)
	if err != nil {
		return Plan{App: app}, err
	}
	return run(ctx, target, app, d, opts)
}

// envSecrets reads a hook's secrets from the environment variables the
// manifest names.
func envSecrets(_ string, h manifest.Hook) ([]string, error) { return h.Secrets(os.Getenv) }

// PlanManifest computes the plan of deploying m (as AppName(m)) to the
// target's account, and applies nothing: what a dry run of Apply
// returns, for a caller that has no modules or hook secrets, only their
// fingerprints. moduleSHA256 gives each function's module as the hex
// SHA-256 (every function needs one), hookSecrets the number of secrets
// of each hook (0 when absent). opts.DryRun is implied; without
// opts.Force, a plan deleting queues that hold messages is returned with
// a *DataLossError.
func PlanManifest(ctx context.Context, target Target, account string, m *manifest.Manifest, moduleSHA256 map[string]string, hookSecrets map[string]int, opts Options) (Plan, error) {
	app := AppName(m)
	if !pgqueue.ValidName(app) {
		return Plan{App: app}, fmt.Errorf("app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", app)
	}
	shas := map[string]string{}
	for _, name := range sortedKeys(m.Functions) {
		sha := strings.ToLower(moduleSHA256[name])
		if b, err := hex.DecodeString(sha); err != nil || len(b) != sha256.Size {
			return Plan{App: app}, fmt.Errorf("function %s: module sha256 %q: want the 64 hex digits of the module's SHA-256", name, moduleSHA256[name])
		}
		shas[name] = sha
	}
	d, err := newDesired(account, m, nil, shas, func(name string, _ manifest.Hook) ([]string, error) {
		return make([]string, hookSecrets[name]), nil
	})
	if err != nil {
		return Plan{App: app}, err
	}
	opts.DryRun = true
	return run(ctx, target, app, d, opts)
}

// Delete removes every resource of app from the target's account (the
// plan of an empty manifest of that app), with the same rules as Apply:
// queues holding messages only with opts.Force, nothing on a dry run.
func Delete(ctx context.Context, target Target, app string, opts Options) (Plan, error) {
	if !pgqueue.ValidName(app) {
		return Plan{App: app}, fmt.Errorf("app name %q: use 1-80 characters from A-Z a-z 0-9 _ -", app)
	}
	d, err := newDesired("", &manifest.Manifest{}, nil, nil, envSecrets)
	if err != nil {
		return Plan{App: app}, err
	}
	return run(ctx, target, app, d, opts)
}

func run(ctx context.Context, target Target, app string, d *desiredApp, opts Options) (Plan, error) {
	cur, err := target.State(ctx)
	if err != nil {
		return Plan{App: app}, err
	}
	cur.Messages = map[string]int64{}
	for name, q := range cur.Queues {
		if _, declared := d.want.Queues[name]; q.App == app && !declared {
			n, err := target.QueueMessages(ctx, name)
			if err != nil {
				return Plan{App: app}, fmt.Errorf("queue %s: %w", name, err)
			}
			cur.Messages[name] = n
		}
	}
	plan, err := ComputePlan(app, cur, d.want)
	if err != nil {
		return Plan{App: app}, err
	}
	if opts.OnPlan != nil {
		opts.OnPlan(plan)
	}
	loss := &DataLossError{App: app, Queues: map[string]int64{}}
	for _, s := range plan.Steps {
		if s.Kind == KindQueue && s.Action == ActionDelete && s.Messages > 0 {
			loss.Queues[s.Name] = s.Messages
		}
	}
	if len(loss.Queues) > 0 && !opts.Force {
		return plan, loss
	}
	if opts.DryRun {
		return plan, nil
	}
	return plan, execute(ctx, target, app, plan, d, cur)
}

// execute applies a plan: creates and updates in dependency order
// (queues, topics, hooks, functions, triggers), then deletes in reverse.
func execute(ctx context.Context, target Target, app string, plan Plan, d *desiredApp, cur State) error {
	steps := map[string]Step{}
	for _, s := range plan.Steps {
		steps[s.Kind+"/"+s.Name] = s
	}
	// claim records that app owns what a step created or adopted.
	claim := func(s Step) error {
		adopt := slices.ContainsFunc(s.Changes, func(c FieldChange) bool { return c.Field == "app" })
		if s.Action != ActionCreate && !adopt {
			return nil
		}
		if err := target.SetApp(ctx, s.Kind, s.Name, app); err != nil {
			return fmt.Errorf("%s %s: %w", s.Kind, s.Name, err)
		}
		return nil
	}
	dlqOf := func(name string) string {
		if dlq := d.queues[name].DeadLetterQueue; dlq != nil {
			return *dlq
		}
		return ""
	}
	for _, name := range dlqFirst(slices.Sorted(maps.Keys(d.queues)), dlqOf) {
		s := steps[KindQueue+"/"+name]
		if s.Action == ActionUnchanged {
			continue
		}
		// A queue the app only adopts keeps its settings: only its owner
		// is recorded (a change of settings can cost a pass over its
		// messages).
		adoptOnly := s.Action == ActionUpdate && !slices.ContainsFunc(s.Changes, func(c FieldChange) bool { return c.Field != "app" })
		if !adoptOnly {
			if err := target.ApplyQueue(ctx, name, d.queues[name], s.Action == ActionCreate); err != nil {
				return fmt.Errorf("queue %s: %w", name, err)
			}
		}
		if err := claim(s); err != nil {
			return err
		}
	}
	for _, s := range plan.Steps {
		if s.Kind != KindTopic || s.Action == ActionUnchanged {
			continue
		}
		if s.Action == ActionCreate {
			if err := target.CreateTopic(ctx, s.Name); err != nil {
				return fmt.Errorf("topic %s: %w", s.Name, err)
			}
		}
		for _, q := range s.subscribe {
			if err := target.Subscribe(ctx, s.Name, q); err != nil {
				return fmt.Errorf("topic %s: subscribe queue %s: %w", s.Name, q, err)
			}
		}
		for _, q := range s.unsubscribe {
			if err := target.Unsubscribe(ctx, s.Name, q); err != nil {
				return fmt.Errorf("topic %s: unsubscribe queue %s: %w", s.Name, q, err)
			}
		}
	}
	// Hooks are put even when unchanged: their secrets are never read
	// back, so a rotation that keeps their number shows in no plan.
	for _, name := range sortedKeys(d.hooks) {
		if _, err := target.PutHook(ctx, d.hooks[name]); err != nil {
			return fmt.Errorf("hook %s: %w", name, err)
		}
		if err := claim(steps[KindHook+"/"+name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(d.funcs) {
		s := steps[KindFunction+"/"+name]
		if s.Action == ActionUnchanged {
			continue
		}
		if _, _, _, err := target.Deploy(ctx, name, d.modules[name], d.funcs[name]); err != nil {
			return fmt.Errorf("function %s: %w", name, err)
		}
		if err := claim(s); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(d.triggers) {
		s := steps[KindTrigger+"/"+name]
		if s.Action == ActionUnchanged {
			continue
		}
		if _, err := target.PutTrigger(ctx, d.triggers[name]); err != nil {
			return fmt.Errorf("trigger %s: %w", name, err)
		}
		if err := claim(s); err != nil {
			return err
		}
	}
	var deadQueues []string
	for _, kind := range []string{KindTrigger, KindHook, KindFunction, KindQueue} {
		for _, s := range plan.Steps {
			if s.Kind != kind || s.Action != ActionDelete {
				continue
			}
			var err error
			switch kind {
			case KindTrigger:
				err = target.DeleteTrigger(ctx, s.Name)
			case KindHook:
				err = target.DeleteHook(ctx, s.Name)
			case KindFunction:
				err = target.DeleteFunction(ctx, s.Name)
			case KindQueue:
				deadQueues = append(deadQueues, s.Name)
			}
			if err != nil {
				return fmt.Errorf("%s %s: delete: %w", kind, s.Name, err)
			}
		}
	}
	// A queue goes before the queue it names as its dead_letter_queue: the
	// queue core refuses to delete a dead_letter_queue still in use.
	deadQueues = dlqFirst(deadQueues, func(q string) string { return cur.Queues[q].Fields["dead_letter_queue"] })
	slices.Reverse(deadQueues)
	for _, q := range deadQueues {
		if err := target.DeleteQueue(ctx, q); err != nil {
			return fmt.Errorf("queue %s: delete: %w", q, err)
		}
	}
	return nil
}

// dlqFirst lists names in their order, except that a queue named as
// another's dead_letter_queue (dlqOf) comes before it: the order to create
// them in, so that a dead_letter_queue exists when its users are created,
// and, reversed, the order to delete them in. (The manifest and the queue
// core refuse cycles.)
func dlqFirst(names []string, dlqOf func(name string) string) []string {
	listed := make(map[string]bool, len(names))
	for _, name := range names {
		listed[name] = true
	}
	out := make([]string, 0, len(names))
	done := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if done[name] {
			return
		}
		done[name] = true
		if dlq := dlqOf(name); listed[dlq] {
			visit(dlq)
		}
		out = append(out, name)
	}
	for _, name := range names {
		visit(name)
	}
	return out
}

// queueSettings returns base with the settings q declares laid over it.
func queueSettings(base pgqueue.Settings, q manifest.Queue) pgqueue.Settings {
	secs := func(p *int, d *time.Duration) {
		if p != nil {
			*d = time.Duration(*p) * time.Second
		}
	}
	secs(q.VisibilityTimeoutSeconds, &base.VisibilityTimeout)
	secs(q.DelaySeconds, &base.Delay)
	secs(q.RetentionSeconds, &base.Retention)
	secs(q.DedupWindowSeconds, &base.DedupWindow)
	if q.MaxReceiveCount != nil {
		base.MaxReceiveCount = *q.MaxReceiveCount
	}
	if q.MaxMessageBytes != nil {
		base.MaxMessageBytes = *q.MaxMessageBytes
	}
	if q.DeadLetterQueue != nil {
		base.DeadLetterQueue = *q.DeadLetterQueue
	}
	if q.Fifo != nil {
		base.Fifo = *q.Fifo
	}
	return base
}
