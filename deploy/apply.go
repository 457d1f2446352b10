package deploy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// Change is one thing an Apply changed, e.g. "queue emails: created".
type Change struct {
	Kind   string // queue, topic, function, trigger, hook
	Name   string
	Action string // created, updated, applied, deployed, alias moved, removed, subscribed, unsubscribed
	Detail string
}

// String formats the change for people.
func (c Change) String() string {
	s := c.Kind + " " + c.Name + ": " + c.Action
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// Owned names a trigger or hook with who owns it (triggers.SourceAPI or
// triggers.SourceManifest).
type Owned struct {
	Name, Source string
}

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
	// ApplyQueue creates the queue, or updates the settings q declares
	// that differ, and says which it did ("created", "updated" or "").
	ApplyQueue(ctx context.Context, name string, q manifest.Queue) (action string, err error)
	// Deploy deploys module and cfg as the function's next version and
	// moves its live alias (functions.Registry.Deploy semantics).
	Deploy(ctx context.Context, name string, module []byte, cfg functions.Config) (version int, created, aliasMoved bool, err error)
	// PutTrigger creates or replaces a trigger and reports whether it
	// changed; Triggers lists them; DeleteTrigger removes one (a missing
	// one is not an error).
	PutTrigger(ctx context.Context, t triggers.Trigger) (changed bool, err error)
	Triggers(ctx context.Context) ([]Owned, error)
	DeleteTrigger(ctx context.Context, name string) error
	// PutHook creates or replaces a hook; Hooks lists them.
	PutHook(ctx context.Context, h Hook) (created bool, err error)
	Hooks(ctx context.Context) ([]HookInfo, error)
	DeleteHook(ctx context.Context, name string) error
	// Topics lists the topics with their subscriptions; CreateTopic
	// creates one; Subscribe subscribes a queue without a filter, owned
	// by the manifest; Unsubscribe removes a subscription.
	Topics(ctx context.Context) ([]TopicInfo, error)
	CreateTopic(ctx context.Context, name string) error
	Subscribe(ctx context.Context, topic, queue string) error
	Unsubscribe(ctx context.Context, topic, queue string) error
}

// Apply makes the target's account match the manifest: creates or
// updates its queues, creates its topics and subscribes their queues
// (removing subscriptions it made that the manifest no longer declares;
// topics themselves are never deleted), declares its webhook hooks, deploys its functions
// (with modules from modules; a new version only when module or config
// changed), and puts the triggers it declares; what the manifest owned and
// no longer declares (triggers and hooks with source "manifest") is
// removed. Hook secrets are read from the environment variables the
// manifest names. Applying the same manifest again changes nothing and
// returns no changes.
//
// Every module is fetched (built) before anything is applied, so a build
// that fails changes nothing. On a later error, the changes made so far
// are returned with it.
func Apply(ctx context.Context, target Target, account string, m *manifest.Manifest, modules Modules) ([]Change, error) {
	built := make(map[string][]byte, len(m.Functions))
	for _, name := range slices.Sorted(maps.Keys(m.Functions)) {
		module, err := modules(ctx, name)
		if err != nil {
			return nil, err
		}
		built[name] = module
	}
	var changes []Change
	for _, name := range queueOrder(m.Queues) {
		action, err := target.ApplyQueue(ctx, name, m.Queues[name])
		if err != nil {
			return changes, fmt.Errorf("queue %s: %w", name, err)
		}
		if action != "" {
			changes = append(changes, Change{Kind: "queue", Name: name, Action: action})
		}
	}
	topicChanges, err := applyTopics(ctx, target, m)
	changes = append(changes, topicChanges...)
	if err != nil {
		return changes, err
	}
	hookChanges, err := applyHooks(ctx, target, m)
	changes = append(changes, hookChanges...)
	if err != nil {
		return changes, err
	}
	for _, name := range slices.Sorted(maps.Keys(m.Functions)) {
		c, err := applyFunction(ctx, target, name, m.Functions[name], built[name])
		if err != nil {
			return changes, err
		}
		if c != nil {
			changes = append(changes, *c)
		}
	}
	keep := map[string]bool{}
	for _, mt := range m.Triggers {
		t := mt.Spec(account)
		keep[t.Name] = true
		changed, err := target.PutTrigger(ctx, t)
		if err != nil {
			return changes, fmt.Errorf("trigger %s: %w", t.Name, err)
		}
		if changed {
			changes = append(changes, Change{Kind: "trigger", Name: t.Name, Action: "applied"})
		}
	}
	existing, err := target.Triggers(ctx)
	if err != nil {
		return changes, err
	}
	for _, t := range existing {
		if t.Source == triggers.SourceManifest && !keep[t.Name] {
			if err := target.DeleteTrigger(ctx, t.Name); err != nil {
				return changes, fmt.Errorf("trigger %s: %w", t.Name, err)
			}
			changes = append(changes, Change{Kind: "trigger", Name: t.Name, Action: "removed", Detail: "no longer in the manifest"})
		}
	}
	return changes, nil
}

// queueOrder lists the manifest's queues by name, except that a queue
// named as another's dead_letter_queue comes before it, so that it exists
// when the other is created. (The manifest refuses cycles.)
func queueOrder(qs map[string]manifest.Queue) []string {
	var out []string
	done := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if done[name] {
			return
		}
		done[name] = true
		if dlq := qs[name].DeadLetterQueue; dlq != nil {
			if _, ok := qs[*dlq]; ok {
				visit(*dlq)
			}
		}
		out = append(out, name)
	}
	for _, name := range slices.Sorted(maps.Keys(qs)) {
		visit(name)
	}
	return out
}

func applyTopics(ctx context.Context, target Target, m *manifest.Manifest) ([]Change, error) {
	before, err := target.Topics(ctx)
	if err != nil {
		return nil, err
	}
	old := map[string]TopicInfo{}
	for _, t := range before {
		old[t.Name] = t
	}
	var changes []Change
	for _, name := range slices.Sorted(maps.Keys(m.Topics)) {
		cur, ok := old[name]
		if !ok {
			if err := target.CreateTopic(ctx, name); err != nil {
				return changes, fmt.Errorf("topic %s: %w", name, err)
			}
			changes = append(changes, Change{Kind: "topic", Name: name, Action: "created"})
		}
		have := map[string]wire.Subscription{}
		for _, s := range cur.Subscriptions {
			have[s.Queue] = s
		}
		for _, q := range m.Topics[name].Subscribers {
			if s, ok := have[q]; ok && s.Source == triggers.SourceManifest && len(s.Filter) == 0 {
				continue
			}
			if err := target.Subscribe(ctx, name, q); err != nil {
				return changes, fmt.Errorf("topic %s: subscribe queue %s: %w", name, q, err)
			}
			changes = append(changes, Change{Kind: "topic", Name: name, Action: "subscribed", Detail: "queue " + q})
		}
	}
	for _, t := range before {
		declared := map[string]bool{}
		for _, q := range m.Topics[t.Name].Subscribers {
			declared[q] = true
		}
		for _, s := range t.Subscriptions {
			if s.Source != triggers.SourceManifest || declared[s.Queue] {
				continue
			}
			if err := target.Unsubscribe(ctx, t.Name, s.Queue); err != nil {
				return changes, fmt.Errorf("topic %s: unsubscribe queue %s: %w", t.Name, s.Queue, err)
			}
			changes = append(changes, Change{Kind: "topic", Name: t.Name, Action: "unsubscribed",
				Detail: "queue " + s.Queue + " no longer in the manifest"})
		}
	}
	return changes, nil
}

func applyHooks(ctx context.Context, target Target, m *manifest.Manifest) ([]Change, error) {
	before, err := target.Hooks(ctx)
	if err != nil {
		return nil, err
	}
	old := map[string]HookInfo{}
	for _, h := range before {
		old[h.Name] = h
	}
	var changes []Change
	for _, name := range slices.Sorted(maps.Keys(m.Hooks)) {
		mh := m.Hooks[name]
		secrets, err := mh.Secrets(os.Getenv)
		if err != nil {
			return changes, fmt.Errorf("hook %s: %w", name, err)
		}
		created, err := target.PutHook(ctx, Hook{Name: name, Queue: mh.Queue, Verify: mh.Verify,
			Secrets: secrets, Source: triggers.SourceManifest})
		if err != nil {
			return changes, fmt.Errorf("hook %s: %w", name, err)
		}
		// Secrets are never listed, so a rotation that keeps their number
		// is applied but not reported.
		prev := old[name]
		switch {
		case created:
			changes = append(changes, Change{Kind: "hook", Name: name, Action: "created"})
		case prev.Queue != mh.Queue || prev.Verify != mh.Verify || prev.SecretCount != len(secrets) || prev.Source != triggers.SourceManifest:
			changes = append(changes, Change{Kind: "hook", Name: name, Action: "updated"})
		}
	}
	for _, h := range before {
		if _, keep := m.Hooks[h.Name]; !keep && h.Source == triggers.SourceManifest {
			if err := target.DeleteHook(ctx, h.Name); err != nil {
				return changes, fmt.Errorf("hook %s: %w", h.Name, err)
			}
			changes = append(changes, Change{Kind: "hook", Name: h.Name, Action: "removed", Detail: "no longer in the manifest"})
		}
	}
	return changes, nil
}

func applyFunction(ctx context.Context, target Target, name string, f manifest.Function, module []byte) (*Change, error) {
	version, created, moved, err := target.Deploy(ctx, name, module, functions.Config{
		MemoryMiB: f.MemoryMiB, Timeout: time.Duration(f.Timeout), Env: f.Env,
		Capabilities: functions.Capabilities{Emits: f.Emits, AllowedOutboundHosts: f.AllowedOutboundHosts, Stores: f.Stores},
	})
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", name, err)
	}
	switch {
	case created:
		return &Change{Kind: "function", Name: name, Action: "deployed",
			Detail: fmt.Sprintf("version %d, %s → %d", version, functions.DefaultAlias, version)}, nil
	case moved:
		return &Change{Kind: "function", Name: name, Action: "alias moved",
			Detail: fmt.Sprintf("%s → %d", functions.DefaultAlias, version)}, nil
	}
	return nil, nil
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
