package main

import (
	"context"
	"flag"
	"fmt"
	"io"

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

// applyViaAPI makes the client's account match m, with the same steps as
// a database apply (server.ApplyTo), each done through the HTTP API.
func applyViaAPI(ctx context.Context, c *client.Client, m *manifest.Manifest) ([]server.Change, error) {
	return server.ApplyTo(ctx, apiTarget{c}, c.Account(), m)
}

// apiTarget is a server.Target over the HTTP API. What it creates is owned
// by the manifest (source "manifest"), so a later deploy removes what left
// the manifest.
type apiTarget struct{ c *client.Client }

func (t apiTarget) ApplyQueue(ctx context.Context, name string, q manifest.Queue) (string, error) {
	want := client.QueueSettings{
		VisibilityTimeoutSeconds: q.VisibilityTimeoutSeconds, MaxReceiveCount: q.MaxReceiveCount,
		DelaySeconds: q.DelaySeconds, RetentionSeconds: q.RetentionSeconds,
		MaxMessageBytes: q.MaxMessageBytes, DedupWindowSeconds: q.DedupWindowSeconds,
	}
	cur, err := t.c.Queues.Get(ctx, name)
	if client.IsNotFound(err) {
		_, err := t.c.Queues.Create(ctx, name, want)
		return "created", err
	}
	if err != nil {
		return "", err
	}
	differs := func(p *int, v int) bool { return p != nil && *p != v }
	if !differs(want.VisibilityTimeoutSeconds, cur.VisibilityTimeoutSeconds) && !differs(want.MaxReceiveCount, cur.MaxReceiveCount) &&
		!differs(want.DelaySeconds, cur.DelaySeconds) && !differs(want.RetentionSeconds, cur.RetentionSeconds) &&
		!differs(want.MaxMessageBytes, cur.MaxMessageBytes) && !differs(want.DedupWindowSeconds, cur.DedupWindowSeconds) {
		return "", nil
	}
	_, err = t.c.Queues.Update(ctx, name, want)
	return "updated", err
}

func (t apiTarget) Deploy(ctx context.Context, name string, module []byte, cfg functions.Config) (int, bool, bool, error) {
	d, err := t.c.Functions.Deploy(ctx, name, module, client.DeployOptions{
		MemoryMB: cfg.MemoryMiB, TimeoutMS: int(cfg.Timeout.Milliseconds()), Env: cfg.Env, Alias: functions.DefaultAlias,
	})
	return d.Version, d.Created, d.AliasMoved, err
}

func (t apiTarget) PutTrigger(ctx context.Context, tr triggers.Trigger) (bool, error) {
	return t.c.Triggers.Put(ctx, client.Trigger{
		Name: tr.Name, Kind: tr.Kind, Function: tr.Function, Alias: tr.Alias, Queue: tr.Queue, DLQ: tr.DLQ,
		BatchSize: tr.BatchSize, BatchWindowMS: tr.BatchWindow.Milliseconds(), Concurrency: tr.Concurrency,
		AckPolicy: string(tr.AckPolicy), BackoffInitialMS: tr.BackoffInitial.Milliseconds(), BackoffMaxMS: tr.BackoffMax.Milliseconds(),
		LeaseExtension: client.Bool(tr.LeaseExtension), CronSpec: tr.CronSpec, Timezone: tr.Timezone,
		EnqueueBody: tr.EnqueueBody, Enabled: client.Bool(tr.Enabled), Source: triggers.SourceManifest,
	})
}

func (t apiTarget) Triggers(ctx context.Context) ([]server.Owned, error) {
	ts, err := t.c.Triggers.List(ctx)
	out := make([]server.Owned, len(ts))
	for i, tr := range ts {
		out[i] = server.Owned{Name: tr.Name, Source: tr.Source}
	}
	return out, err
}

func (t apiTarget) DeleteTrigger(ctx context.Context, name string) error {
	if err := t.c.Triggers.Delete(ctx, name); err != nil && !client.IsNotFound(err) {
		return err
	}
	return nil
}

func (t apiTarget) PutHook(ctx context.Context, h server.Hook) (bool, error) {
	return t.c.Hooks.Create(ctx, client.Hook{Name: h.Name, Queue: h.Queue, Verify: h.Verify, Secrets: h.Secrets, Source: h.Source})
}

func (t apiTarget) Hooks(ctx context.Context) ([]server.HookInfo, error) {
	hs, err := t.c.Hooks.List(ctx)
	out := make([]server.HookInfo, len(hs))
	for i, h := range hs {
		out[i] = server.HookInfo{Name: h.Name, Queue: h.Queue, Verify: h.Verify, SecretCount: h.SecretCount, Source: h.Source}
	}
	return out, err
}

func (t apiTarget) DeleteHook(ctx context.Context, name string) error {
	if err := t.c.Hooks.Delete(ctx, name); err != nil && !client.IsNotFound(err) {
		return err
	}
	return nil
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
