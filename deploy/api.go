package deploy

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/triggers"
)

// APITarget returns the Target that applies to c's account through the
// HTTP API (the key needs mq:admin and functions:deploy). What it creates
// is owned by the app being deployed (GET .../deploy/state reads who owns
// what, PUT .../apps/{app}/{kind}s/{name} records it).
func APITarget(c *client.Client) Target {
	return apiTarget{c: c}
}

// APITargetWithProgress is APITarget calling progress with each status
// the server reports while it deploys a function ("compiling", then
// "ready" or "failed"; see client.DeployOptions.Progress).
func APITargetWithProgress(c *client.Client, progress func(function, status string)) Target {
	return apiTarget{c: c, progress: progress}
}

// apiTarget is a Target over the HTTP API.
type apiTarget struct {
	c        *client.Client
	progress func(function, status string)
}

// ApplyQueue creates the queue the plan found missing, or sets the
// settings q declares of one it found, without reading it first (a GET
// counts its messages, a scan under the server's bound on such reads).
// A queue created or deleted since the plan is set or created instead.
func (t apiTarget) ApplyQueue(ctx context.Context, name string, q manifest.Queue, create bool) error {
	want := client.QueueSettings{
		VisibilityTimeoutSeconds: q.VisibilityTimeoutSeconds, MaxReceiveCount: q.MaxReceiveCount,
		DelaySeconds: q.DelaySeconds, RetentionSeconds: q.RetentionSeconds,
		MaxMessageBytes: q.MaxMessageBytes, DedupWindowSeconds: q.DedupWindowSeconds,
		DeadLetterQueue: q.DeadLetterQueue, Fifo: q.Fifo,
	}
	if create {
		_, err := t.c.Queues.Create(ctx, name, want)
		if !errors.Is(err, client.ErrQueueExists) {
			return err
		}
	}
	_, err := t.c.Queues.Update(ctx, name, want)
	if client.IsNotFound(err) {
		_, err = t.c.Queues.Create(ctx, name, want)
	}
	return err
}

func (t apiTarget) Deploy(ctx context.Context, name string, module []byte, cfg functions.Config) (int, bool, bool, error) {
	o := client.DeployOptions{
		MemoryMB: cfg.MemoryMiB, TimeoutMS: int(cfg.Timeout.Milliseconds()), Env: cfg.Env, Alias: functions.DefaultAlias,
		Emits: cfg.Capabilities.Emits, AllowedOutboundHosts: cfg.Capabilities.AllowedOutboundHosts, Stores: cfg.Capabilities.Stores,
	}
	if t.progress != nil {
		o.Progress = func(status string) { t.progress(name, status) }
	}
	d, err := t.c.Functions.Deploy(ctx, name, module, o)
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

func (t apiTarget) DeleteTrigger(ctx context.Context, name string) error {
	if err := t.c.Triggers.Delete(ctx, name); err != nil && !client.IsNotFound(err) {
		return err
	}
	return nil
}

func (t apiTarget) PutHook(ctx context.Context, h Hook) (bool, error) {
	return t.c.Hooks.Create(ctx, client.Hook{Name: h.Name, Queue: h.Queue, Verify: h.Verify, Secrets: h.Secrets, Source: h.Source})
}

func (t apiTarget) DeleteHook(ctx context.Context, name string) error {
	if err := t.c.Hooks.Delete(ctx, name); err != nil && !client.IsNotFound(err) {
		return err
	}
	return nil
}

func (t apiTarget) State(ctx context.Context) (State, error) {
	w, err := t.c.Apps.State(ctx)
	if err != nil {
		return State{}, err
	}
	return stateFromWire(w), nil
}

func (t apiTarget) QueueMessages(ctx context.Context, name string) (int64, error) {
	q, err := t.c.Queues.Get(ctx, name)
	if err != nil {
		return 0, err
	}
	if q.Stats == nil {
		return 0, nil
	}
	return q.Stats.Ready + q.Stats.Delayed + q.Stats.Inflight + q.Stats.DLQ, nil
}

func (t apiTarget) SetApp(ctx context.Context, kind, name, app string) error {
	return t.c.Apps.SetOwner(ctx, app, kind, name)
}

func (t apiTarget) DeleteQueue(ctx context.Context, name string) error {
	if err := t.c.Queues.Delete(ctx, name); err != nil && !client.IsNotFound(err) {
		return err
	}
	return nil
}

func (t apiTarget) DeleteFunction(ctx context.Context, name string) error {
	if err := t.c.Functions.Delete(ctx, name); err != nil && !client.IsNotFound(err) {
		return err
	}
	return nil
}

func (t apiTarget) CreateTopic(ctx context.Context, name string) error {
	_, err := t.c.Topics.Create(ctx, name)
	return err
}

func (t apiTarget) Subscribe(ctx context.Context, topic, queue string) error {
	_, err := t.c.Topics.Subscribe(ctx, topic, queue, client.SubscribeOptions{Source: triggers.SourceManifest})
	return err
}

func (t apiTarget) Unsubscribe(ctx context.Context, topic, queue string) error {
	return t.c.Topics.Unsubscribe(ctx, topic, queue)
}
