package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/triggers"
)

// deployViaAPI is `sluice deploy` without DATABASE_URL: it applies the
// manifest file through the HTTP API as the logged-in key (which needs
// mq:admin and functions:deploy). account overrides the login's when set.
func deployViaAPI(ctx context.Context, file, account string, w io.Writer) error {
	cfg, err := client.LoadConfig("")
	if err != nil {
		return err
	}
	if cfg.Endpoint == "" || cfg.Key == "" {
		return usageErrorf("DATABASE_URL is not set and the CLI is not logged in: set DATABASE_URL to deploy to the database, or run `sluice login` to deploy through the API")
	}
	if account != "" {
		cfg.Account = account
	}
	c, err := cfg.Client(client.WithUserAgent("sluice-cli/" + version))
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	m, err := manifest.ReadFile(file)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "deploying through %s (account %s)\n", c.Endpoint(), c.Account())
	changes, err := applyViaAPI(ctx, c, m)
	return printChanges(w, changes, err)
}

// printChanges prints what an apply changed, then its error.
func printChanges(w io.Writer, changes []server.Change, err error) error {
	for _, c := range changes {
		fmt.Fprintln(w, c)
	}
	if err == nil && len(changes) == 0 {
		fmt.Fprintln(w, "no changes")
	}
	return err
}

// applyViaAPI makes the client's account match m, as server.Apply does
// on the database: queues, hooks, functions (built here), triggers, and
// removes the manifest-owned triggers and hooks that left it. What it
// creates is marked as owned by the manifest (source "manifest").
func applyViaAPI(ctx context.Context, c *client.Client, m *manifest.Manifest) ([]server.Change, error) {
	var changes []server.Change
	add := func(ch *server.Change, err error) error {
		if ch != nil {
			changes = append(changes, *ch)
		}
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(m.Queues)) {
		if err := add(applyQueueViaAPI(ctx, c, name, m.Queues[name])); err != nil {
			return changes, err
		}
	}
	hookChanges, err := applyHooksViaAPI(ctx, c, m)
	changes = append(changes, hookChanges...)
	if err != nil {
		return changes, err
	}
	for _, name := range slices.Sorted(maps.Keys(m.Functions)) {
		if err := add(applyFunctionViaAPI(ctx, c, name, m)); err != nil {
			return changes, err
		}
	}
	keep := map[string]bool{}
	for _, mt := range m.Triggers {
		t := triggers.FromManifest(c.Account(), mt)
		keep[t.Name] = true
		changed, err := c.Triggers.Put(ctx, client.Trigger{
			Name: t.Name, Kind: t.Kind, Function: t.Function, Alias: t.Alias, Queue: t.Queue, DLQ: t.DLQ,
			BatchSize: t.BatchSize, BatchWindowMS: t.BatchWindow.Milliseconds(), Concurrency: t.Concurrency,
			AckPolicy: t.AckPolicy, BackoffInitialMS: t.BackoffInitial.Milliseconds(), BackoffMaxMS: t.BackoffMax.Milliseconds(),
			LeaseExtension: client.Bool(t.LeaseExtension), CronSpec: t.CronSpec, Timezone: t.Timezone,
			EnqueueBody: t.EnqueueBody, Enabled: client.Bool(t.Enabled), Source: triggers.SourceManifest,
		})
		if err != nil {
			return changes, fmt.Errorf("trigger %s: %w", t.Name, err)
		}
		if changed {
			changes = append(changes, server.Change{Kind: "trigger", Name: t.Name, Action: "applied"})
		}
	}
	existing, err := c.Triggers.List(ctx)
	if err != nil {
		return changes, err
	}
	for _, t := range existing {
		if t.Source == triggers.SourceManifest && !keep[t.Name] {
			if err := c.Triggers.Delete(ctx, t.Name); err != nil && !client.IsNotFound(err) {
				return changes, err
			}
			changes = append(changes, server.Change{Kind: "trigger", Name: t.Name, Action: "removed", Detail: "no longer in the manifest"})
		}
	}
	return changes, nil
}

func applyQueueViaAPI(ctx context.Context, c *client.Client, name string, q manifest.Queue) (*server.Change, error) {
	want := client.QueueSettings{
		VisibilityTimeoutSeconds: q.VisibilityTimeoutSeconds, MaxReceiveCount: q.MaxReceiveCount,
		DelaySeconds: q.DelaySeconds, RetentionSeconds: q.RetentionSeconds,
		MaxMessageBytes: q.MaxMessageBytes, DedupWindowSeconds: q.DedupWindowSeconds,
	}
	cur, err := c.Queues.Get(ctx, name)
	if client.IsNotFound(err) {
		if _, err := c.Queues.Create(ctx, name, want); err != nil {
			return nil, fmt.Errorf("queue %s: %w", name, err)
		}
		return &server.Change{Kind: "queue", Name: name, Action: "created"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", name, err)
	}
	differs := func(p *int, v int) bool { return p != nil && *p != v }
	if !differs(want.VisibilityTimeoutSeconds, cur.VisibilityTimeoutSeconds) && !differs(want.MaxReceiveCount, cur.MaxReceiveCount) &&
		!differs(want.DelaySeconds, cur.DelaySeconds) && !differs(want.RetentionSeconds, cur.RetentionSeconds) &&
		!differs(want.MaxMessageBytes, cur.MaxMessageBytes) && !differs(want.DedupWindowSeconds, cur.DedupWindowSeconds) {
		return nil, nil
	}
	if _, err := c.Queues.Update(ctx, name, want); err != nil {
		return nil, fmt.Errorf("queue %s: %w", name, err)
	}
	return &server.Change{Kind: "queue", Name: name, Action: "updated"}, nil
}

func applyHooksViaAPI(ctx context.Context, c *client.Client, m *manifest.Manifest) ([]server.Change, error) {
	before, err := c.Hooks.List(ctx)
	if err != nil {
		return nil, err
	}
	old := map[string]client.Hook{}
	for _, h := range before {
		old[h.Name] = h
	}
	var changes []server.Change
	for _, name := range slices.Sorted(maps.Keys(m.Hooks)) {
		mh := m.Hooks[name]
		secrets, err := mh.Secrets(os.Getenv)
		if err != nil {
			return changes, fmt.Errorf("hook %s: %w", name, err)
		}
		created, err := c.Hooks.Create(ctx, client.Hook{Name: name, Queue: mh.Queue, Verify: mh.Verify, Secrets: secrets, Source: triggers.SourceManifest})
		if err != nil {
			return changes, fmt.Errorf("hook %s: %w", name, err)
		}
		prev := old[name]
		switch {
		case created:
			changes = append(changes, server.Change{Kind: "hook", Name: name, Action: "created"})
		case prev.Queue != mh.Queue || prev.Verify != mh.Verify || prev.SecretCount != len(secrets) || prev.Source != triggers.SourceManifest:
			changes = append(changes, server.Change{Kind: "hook", Name: name, Action: "updated"})
		}
	}
	for _, h := range before {
		if _, keep := m.Hooks[h.Name]; !keep && h.Source == triggers.SourceManifest {
			if err := c.Hooks.Delete(ctx, h.Name); err != nil && !client.IsNotFound(err) {
				return changes, err
			}
			changes = append(changes, server.Change{Kind: "hook", Name: h.Name, Action: "removed", Detail: "no longer in the manifest"})
		}
	}
	return changes, nil
}

func applyFunctionViaAPI(ctx context.Context, c *client.Client, name string, m *manifest.Manifest) (*server.Change, error) {
	f := m.Functions[name]
	module, err := m.ReadModule(ctx, name)
	if err != nil {
		return nil, err
	}
	d, err := c.Functions.Deploy(ctx, name, module, client.DeployOptions{
		MemoryMB: f.MemoryMiB, TimeoutMS: int(time.Duration(f.Timeout).Milliseconds()), Env: f.Env, Alias: functions.DefaultAlias,
	})
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", name, err)
	}
	switch {
	case d.Created:
		return &server.Change{Kind: "function", Name: name, Action: "deployed",
			Detail: fmt.Sprintf("version %d, %s → %d", d.Version, functions.DefaultAlias, d.Version)}, nil
	case d.AliasMoved:
		return &server.Change{Kind: "function", Name: name, Action: "alias moved",
			Detail: fmt.Sprintf("%s → %d", functions.DefaultAlias, d.Version)}, nil
	}
	return nil, nil
}

// flagIfSet returns the value of flag name when it was given, else "".
func flagIfSet(fs *flag.FlagSet, name string) string {
	v := ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			v = f.Value.String()
		}
	})
	return v
}
