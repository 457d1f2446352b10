package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// HookStore is the webhook hook API DBTarget needs, for any account.
type HookStore interface {
	// PutHook creates or replaces the hook h.Name of account and reports
	// whether it was created.
	PutHook(ctx context.Context, account string, h Hook) (created bool, err error)
	// ListHooks lists the hooks of account.
	ListHooks(ctx context.Context, account string) ([]HookInfo, error)
	// DeleteHook removes a hook of account.
	DeleteHook(ctx context.Context, account, name string) error
	// SetHookApp records the app that owns a hook; HookApps lists the
	// app of every hook of account, by name ("" = none).
	SetHookApp(ctx context.Context, account, name, app string) error
	HookApps(ctx context.Context, account string) (map[string]string, error)
}

// Stores are the Go APIs a DBTarget works through, all on one database.
type Stores struct {
	Queue    *pgqueue.Client     // queues and topics
	Registry *functions.Registry // function versions and aliases
	Triggers *triggers.Store     // triggers
	// Hooks holds the webhook hooks: the server's hook API (Server.Apply)
	// or triggers.HookStore with the server's checks (OpenDB).
	Hooks HookStore
}

// DBTarget returns the Target that applies to account through s, straight
// to the database.
func DBTarget(account string, s Stores) Target {
	return &dbTarget{s: s, account: account}
}

// dbTarget applies a manifest to one account of a database.
type dbTarget struct {
	s       Stores
	account string
}

func (t *dbTarget) ApplyQueue(ctx context.Context, name string, q manifest.Queue, _ bool) error {
	cur, err := t.s.Queue.GetQueue(ctx, t.account, name)
	if errors.Is(err, pgqueue.ErrQueueNotFound) {
		_, err := t.s.Queue.CreateQueue(ctx, t.account, name, queueSettings(pgqueue.DefaultSettings(), q))
		return err
	}
	if err != nil {
		return err
	}
	if want := queueSettings(cur.Settings, q); want != cur.Settings {
		_, err = t.s.Queue.UpdateQueue(ctx, t.account, name, want)
	}
	return err
}

func (t *dbTarget) Deploy(ctx context.Context, name string, module []byte, cfg functions.Config) (int, bool, bool, error) {
	d, err := t.s.Registry.Deploy(ctx, t.account, name, module, cfg, "")
	return d.Version.Number, d.Created, d.AliasMoved, err
}

func (t *dbTarget) PutTrigger(ctx context.Context, tr triggers.Trigger) (bool, error) {
	return t.s.Triggers.Put(ctx, tr)
}

func (t *dbTarget) DeleteTrigger(ctx context.Context, name string) error {
	if err := t.s.Triggers.Delete(ctx, t.account, name); err != nil && !errors.Is(err, triggers.ErrNotFound) {
		return err
	}
	return nil
}

func (t *dbTarget) PutHook(ctx context.Context, h Hook) (bool, error) {
	return t.s.Hooks.PutHook(ctx, t.account, h)
}

func (t *dbTarget) DeleteHook(ctx context.Context, name string) error {
	return t.s.Hooks.DeleteHook(ctx, t.account, name)
}

func (t *dbTarget) topics(ctx context.Context) ([]TopicInfo, error) {
	ts, err := t.s.Queue.ListTopics(ctx, t.account)
	out := make([]TopicInfo, len(ts))
	for i, tp := range ts {
		out[i] = TopicInfo{Name: tp.Name, CreatedAt: tp.CreatedAt, Subscriptions: make([]wire.Subscription, len(tp.Subscriptions))}
		for j, s := range tp.Subscriptions {
			out[i].Subscriptions[j] = wire.Subscription{Queue: s.Queue, Filter: s.Filter, Source: s.Source}
		}
	}
	return out, err
}

func (t *dbTarget) State(ctx context.Context) (State, error) {
	st := State{Queues: map[string]Resource{}, Functions: map[string]Resource{}, Triggers: map[string]Resource{}, Hooks: map[string]Resource{}}
	qs, err := t.s.Queue.ListQueues(ctx, t.account)
	if err != nil {
		return st, err
	}
	qapps, err := t.s.Queue.QueueApps(ctx, t.account)
	if err != nil {
		return st, err
	}
	for _, q := range qs {
		s := q.Settings
		st.Queues[q.Name] = Resource{App: qapps[q.Name], Fields: queueFieldsOf(wire.Queue{
			VisibilityTimeoutSeconds: int(s.VisibilityTimeout.Seconds()), MaxReceiveCount: s.MaxReceiveCount,
			DelaySeconds: int(s.Delay.Seconds()), RetentionSeconds: int(s.Retention.Seconds()),
			MaxMessageBytes: s.MaxMessageBytes, DedupWindowSeconds: int(s.DedupWindow.Seconds()), DeadLetterQueue: s.DeadLetterQueue,
			Fifo: s.Fifo,
		})}
	}
	fs, err := t.s.Registry.List(ctx, t.account)
	if err != nil {
		return st, err
	}
	fapps, err := t.s.Registry.Apps(ctx, t.account)
	if err != nil {
		return st, err
	}
	refs := make([]functions.Ref, len(fs))
	for i, f := range fs {
		refs[i] = functions.Ref{Account: t.account, Function: f.Name, Alias: functions.DefaultAlias}
	}
	live, err := t.s.Registry.ResolveAll(ctx, refs)
	if err != nil {
		return st, err
	}
	for i, f := range fs {
		r := Resource{App: fapps[f.Name], Fields: map[string]string{}}
		if v, ok := live[refs[i]]; ok {
			r.Fields = FunctionFields(v.SHA256, v.Config)
		}
		st.Functions[f.Name] = r
	}
	ts, err := t.s.Triggers.List(ctx, t.account)
	if err != nil {
		return st, err
	}
	tapps, err := t.s.Triggers.Apps(ctx, t.account)
	if err != nil {
		return st, err
	}
	for _, tr := range ts {
		st.Triggers[tr.Name] = Resource{App: tapps[tr.Name], Fields: TriggerFields(tr)}
	}
	hs, err := t.s.Hooks.ListHooks(ctx, t.account)
	if err != nil {
		return st, err
	}
	happs, err := t.s.Hooks.HookApps(ctx, t.account)
	if err != nil {
		return st, err
	}
	for _, h := range hs {
		st.Hooks[h.Name] = Resource{App: happs[h.Name], Fields: HookFields(h.Queue, h.Verify, h.SecretCount)}
	}
	st.Topics, err = t.topics(ctx)
	return st, err
}

func (t *dbTarget) QueueMessages(ctx context.Context, name string) (int64, error) {
	return t.s.Queue.MessageCount(ctx, t.account, name)
}

func (t *dbTarget) SetApp(ctx context.Context, kind, name, app string) error {
	switch kind {
	case KindQueue:
		return t.s.Queue.SetQueueApp(ctx, t.account, name, app)
	case KindFunction:
		return t.s.Registry.SetApp(ctx, t.account, name, app)
	case KindTrigger:
		return t.s.Triggers.SetApp(ctx, t.account, name, app)
	case KindHook:
		return t.s.Hooks.SetHookApp(ctx, t.account, name, app)
	}
	return fmt.Errorf("set app of %s %s: unknown kind: use queue, function, trigger or hook", kind, name)
}

func (t *dbTarget) DeleteQueue(ctx context.Context, name string) error {
	return t.s.Queue.DeleteQueue(ctx, t.account, name)
}

func (t *dbTarget) DeleteFunction(ctx context.Context, name string) error {
	if err := t.s.Registry.Delete(ctx, t.account, name); err != nil && !errors.Is(err, functions.ErrNotFound) {
		return err
	}
	return nil
}

func (t *dbTarget) CreateTopic(ctx context.Context, name string) error {
	return t.s.Queue.CreateTopic(ctx, t.account, name)
}

func (t *dbTarget) Subscribe(ctx context.Context, topic, queue string) error {
	return t.s.Queue.SubscribeWith(ctx, t.account, topic, queue, pgqueue.SubscribeOptions{Source: pgqueue.SourceManifest})
}

func (t *dbTarget) Unsubscribe(ctx context.Context, topic, queue string) error {
	return t.s.Queue.Unsubscribe(ctx, t.account, topic, queue)
}
