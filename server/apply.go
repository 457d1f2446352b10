package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// Change is one thing an Apply changed, e.g. "queue emails: created".
type Change struct {
	Kind   string // queue, function, trigger
	Name   string
	Action string // created, updated, deployed, alias moved, removed
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

// Apply makes account match the manifest: creates or updates its queues,
// deploys its functions (a new version only when module or config
// changed), and creates, updates or removes the triggers and webhook hooks
// it declares (removing only manifest-owned ones that left the manifest).
// Hook secrets are read from the environment variables the manifest names.
// Applying the same manifest again changes nothing and returns no changes.
func (s *Server) Apply(ctx context.Context, account string, m *manifest.Manifest) ([]Change, error) {
	var changes []Change
	for _, name := range sortedKeys(m.Queues) {
		c, err := s.applyQueue(ctx, account, name, m.Queues[name])
		if err != nil {
			return changes, err
		}
		if c != nil {
			changes = append(changes, *c)
		}
	}
	for _, name := range sortedKeys(m.Functions) {
		c, err := s.applyFunction(ctx, account, name, m, m.Functions[name])
		if err != nil {
			return changes, err
		}
		if c != nil {
			changes = append(changes, *c)
		}
	}
	keep := map[string]bool{}
	for _, mt := range m.Triggers {
		t := triggers.FromManifest(account, mt)
		keep[t.Name] = true
		changed, err := s.Triggers.Put(ctx, t)
		if err != nil {
			return changes, err
		}
		if changed {
			changes = append(changes, Change{Kind: "trigger", Name: t.Name, Action: "applied"})
		}
	}
	hookChanges, err := s.applyHooks(ctx, account, m)
	changes = append(changes, hookChanges...)
	if err != nil {
		return changes, err
	}
	existing, err := s.Triggers.List(ctx, account)
	if err != nil {
		return changes, err
	}
	for _, t := range existing {
		if t.Source == triggers.SourceManifest && !keep[t.Name] {
			if err := s.Triggers.Delete(ctx, account, t.Name); err != nil && !errors.Is(err, triggers.ErrNotFound) {
				return changes, err
			}
			changes = append(changes, Change{Kind: "trigger", Name: t.Name, Action: "removed", Detail: "no longer in the manifest"})
		}
	}
	return changes, nil
}

func (s *Server) applyHooks(ctx context.Context, account string, m *manifest.Manifest) ([]Change, error) {
	before, err := s.ListHooks(ctx, account)
	if err != nil {
		return nil, err
	}
	old := map[string]HookInfo{}
	for _, h := range before {
		old[h.Name] = h
	}
	var changes []Change
	for _, name := range sortedKeys(m.Hooks) {
		mh := m.Hooks[name]
		secrets, err := mh.Secrets(os.Getenv)
		if err != nil {
			return changes, fmt.Errorf("hook %s: %w", name, err)
		}
		created, err := s.PutHook(ctx, account, Hook{Name: name, Queue: mh.Queue, Verify: mh.Verify,
			Secrets: secrets, Source: triggers.SourceManifest})
		if err != nil {
			return changes, err
		}
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
			if err := s.DeleteHook(ctx, account, h.Name); err != nil {
				return changes, err
			}
			changes = append(changes, Change{Kind: "hook", Name: h.Name, Action: "removed", Detail: "no longer in the manifest"})
		}
	}
	return changes, nil
}

func (s *Server) applyQueue(ctx context.Context, account, name string, q manifest.Queue) (*Change, error) {
	overlay := func(base pgqueue.Settings) pgqueue.Settings {
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
		return base
	}
	cur, err := s.Queue.GetQueue(ctx, account, name)
	if errors.Is(err, pgqueue.ErrQueueNotFound) {
		if _, err := s.Queue.CreateQueue(ctx, account, name, overlay(pgqueue.DefaultSettings())); err != nil {
			return nil, err
		}
		return &Change{Kind: "queue", Name: name, Action: "created"}, nil
	}
	if err != nil {
		return nil, err
	}
	want := overlay(cur.Settings)
	if want == cur.Settings {
		return nil, nil
	}
	if _, err := s.Queue.UpdateQueue(ctx, account, name, want); err != nil {
		return nil, err
	}
	return &Change{Kind: "queue", Name: name, Action: "updated"}, nil
}

func (s *Server) applyFunction(ctx context.Context, account, name string, m *manifest.Manifest, f manifest.Function) (*Change, error) {
	module, err := m.ReadModule(ctx, name)
	if err != nil {
		return nil, err
	}
	d, err := s.Registry.Deploy(ctx, account, name, module, functions.Config{
		MemoryMiB: f.MemoryMiB, Timeout: time.Duration(f.Timeout), Env: f.Env,
	}, "")
	if err != nil {
		return nil, err
	}
	switch {
	case d.Created:
		return &Change{Kind: "function", Name: name, Action: "deployed",
			Detail: fmt.Sprintf("version %d, %s → %d", d.Version.Number, functions.DefaultAlias, d.Version.Number)}, nil
	case d.AliasMoved:
		return &Change{Kind: "function", Name: name, Action: "alias moved",
			Detail: fmt.Sprintf("%s → %d", functions.DefaultAlias, d.Version.Number)}, nil
	}
	return nil, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
