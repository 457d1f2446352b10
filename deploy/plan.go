package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// Actions of a plan step.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionDelete    = "delete"
	ActionUnchanged = "unchanged"
)

// Kinds of resource a plan step acts on, in the order Apply creates them.
const (
	KindQueue    = "queue"
	KindTopic    = "topic"
	KindHook     = "hook"
	KindFunction = "function"
	KindTrigger  = "trigger"
)

// FieldChange is one field a step changes, as text: "" for a field that
// was not set before (a create) or is no longer set.
type FieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Step is what a deploy does to one resource.
type Step struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Action string `json:"action"`
	// Changes are the fields a create sets or an update changes (old →
	// new), by field name.
	Changes []FieldChange `json:"changes,omitempty"`
	// Messages, for the delete of a queue, is what it would lose: every
	// message in it (ready, delayed, in flight) and its dead letters.
	Messages int64 `json:"messages,omitempty"`

	// For a topic: the queues to subscribe and to unsubscribe.
	subscribe, unsubscribe []string
}

// String formats the step for people: "+ queue emails", "~ function
// send-email: memory_mb 64 → 128", "- queue old: 12 messages lost".
func (s Step) String() string {
	sign := map[string]string{ActionCreate: "+", ActionUpdate: "~", ActionDelete: "-", ActionUnchanged: "="}[s.Action]
	out := fmt.Sprintf("%s %s %s (%s)", sign, s.Kind, s.Name, s.Action)
	var parts []string
	for _, c := range s.Changes {
		switch {
		case s.Action == ActionCreate:
			if c.New != "" && c.New != "{}" {
				parts = append(parts, c.Field+" "+c.New)
			}
		default:
			parts = append(parts, c.Field+" "+orNone(c.Old)+" → "+orNone(c.New))
		}
	}
	if s.Action == ActionDelete && s.Kind == KindQueue {
		parts = append(parts, fmt.Sprintf("%d messages lost", s.Messages))
	}
	if len(parts) > 0 {
		out += ": " + strings.Join(parts, ", ")
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Plan is what a deploy of one app does, step by step: every resource the
// manifest declares (created, updated or unchanged) and every resource of
// the app it no longer declares (deleted). Resources of other apps and
// those made by hand are never in it.
type Plan struct {
	App   string `json:"app"`
	Steps []Step `json:"steps"`
}

// Count returns how many steps have action.
func (p Plan) Count(action string) int {
	n := 0
	for _, s := range p.Steps {
		if s.Action == action {
			n++
		}
	}
	return n
}

// Changes reports whether the plan changes anything.
func (p Plan) Changes() bool { return p.Count(ActionUnchanged) < len(p.Steps) }

// Summary is the plan's counts: "2 to create, 1 to update, 0 to delete, 5 unchanged".
func (p Plan) Summary() string {
	return fmt.Sprintf("%d to create, %d to update, %d to delete, %d unchanged",
		p.Count(ActionCreate), p.Count(ActionUpdate), p.Count(ActionDelete), p.Count(ActionUnchanged))
}

// Print writes the plan for people, one step a line, then its summary.
func (p Plan) Print(w io.Writer) {
	for _, s := range p.Steps {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintf(w, "app %s: %s\n", p.App, p.Summary())
}

// Resource is one queue, function, trigger or hook of an account as a plan
// sees it: the app that owns it ("" = none: made by hand) and its fields
// as text.
type Resource struct {
	App    string
	Fields map[string]string
}

// State is what an account holds, as a plan sees it: every queue,
// function, trigger and hook by name, and the topics with their
// subscriptions. Messages, by queue, counts what deleting a queue would
// lose; a Target fills it only for the queues a plan deletes.
type State struct {
	Queues, Functions, Triggers, Hooks map[string]Resource
	Topics                             []TopicInfo
	Messages                           map[string]int64
}

// Desired is what an app's manifest declares, as a plan sees it: each
// resource's fields as text (a queue only its declared settings), and
// each topic's subscribers.
type Desired struct {
	Queues, Functions, Triggers, Hooks map[string]map[string]string
	Topics                             map[string][]string
}

// ClashError is a plan refused because the manifest declares resources
// another app owns.
type ClashError struct {
	App     string
	Clashes []string // "queue emails (app shop)"
}

func (e *ClashError) Error() string {
	return fmt.Sprintf("app %s declares resources of other apps: %s; rename them in the manifest, or remove them from their app (sluice apps delete APP, or deploy that app without them)",
		e.App, strings.Join(e.Clashes, ", "))
}

// ComputePlan is what deploying want as app does to an account holding
// cur. It is a pure function. A resource want declares is created when
// missing, updated when a declared field differs (or it has no app yet:
// a deploy adopts a resource made by hand that its manifest names), and
// unchanged otherwise; a resource of app that want no longer declares is
// deleted. Declaring a resource of another app is a *ClashError.
func ComputePlan(app string, cur State, want Desired) (Plan, error) {
	p := Plan{App: app}
	clash := &ClashError{App: app}
	kinds := []struct {
		kind string
		cur  map[string]Resource
		want map[string]map[string]string
	}{
		{KindQueue, cur.Queues, want.Queues}, {KindHook, cur.Hooks, want.Hooks},
		{KindFunction, cur.Functions, want.Functions}, {KindTrigger, cur.Triggers, want.Triggers},
	}
	for _, k := range kinds {
		for _, name := range sortedKeys(k.want) {
			fields := k.want[name]
			have, ok := k.cur[name]
			if !ok {
				s := Step{Kind: k.kind, Name: name, Action: ActionCreate}
				for _, f := range sortedKeys(fields) {
					s.Changes = append(s.Changes, FieldChange{Field: f, New: fields[f]})
				}
				p.Steps = append(p.Steps, s)
				continue
			}
			if have.App != "" && have.App != app {
				clash.Clashes = append(clash.Clashes, fmt.Sprintf("%s %s (app %s)", k.kind, name, have.App))
				continue
			}
			s := Step{Kind: k.kind, Name: name, Action: ActionUnchanged}
			if have.App == "" {
				s.Changes = append(s.Changes, FieldChange{Field: "app", Old: "", New: app})
			}
			for _, f := range sortedKeys(fields) {
				if old := have.Fields[f]; old != fields[f] {
					s.Changes = append(s.Changes, FieldChange{Field: f, Old: old, New: fields[f]})
				}
			}
			if len(s.Changes) > 0 {
				s.Action = ActionUpdate
			}
			p.Steps = append(p.Steps, s)
		}
		if k.kind == KindQueue {
			p.Steps = append(p.Steps, topicSteps(app, cur, want)...)
		}
	}
	if len(clash.Clashes) > 0 {
		return Plan{}, clash
	}
	for _, k := range kinds {
		for _, name := range sortedKeys(k.cur) {
			if _, declared := k.want[name]; declared || k.cur[name].App != app {
				continue
			}
			s := Step{Kind: k.kind, Name: name, Action: ActionDelete}
			if k.kind == KindQueue {
				s.Messages = cur.Messages[name]
			}
			p.Steps = append(p.Steps, s)
		}
	}
	if err := dlqStillInUse(cur, want, p.Steps); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// topicSteps plans the topics: a declared topic is created when missing,
// and its subscriptions made; a subscription the manifest made (source
// manifest, no filter) of a queue this app owns or declares and no longer
// declares is removed. Topics are never deleted, and subscriptions of
// other apps' queues or made by hand are never touched.
func topicSteps(app string, cur State, want Desired) []Step {
	ours := func(queue string) bool {
		_, declared := want.Queues[queue]
		return declared || cur.Queues[queue].App == app && app != ""
	}
	have := map[string]TopicInfo{}
	for _, t := range cur.Topics {
		have[t.Name] = t
	}
	names := map[string]bool{}
	for name := range want.Topics {
		names[name] = true
	}
	for _, t := range cur.Topics {
		for _, s := range t.Subscriptions {
			if s.Source == triggers.SourceManifest && ours(s.Queue) {
				names[t.Name] = true
			}
		}
	}
	var steps []Step
	for _, name := range slices.Sorted(maps.Keys(names)) {
		t, exists := have[name]
		declared := map[string]bool{}
		for _, q := range want.Topics[name] {
			declared[q] = true
		}
		var old []string
		owned := map[string]bool{}
		for _, s := range t.Subscriptions {
			if s.Source == triggers.SourceManifest && len(s.Filter) == 0 && (ours(s.Queue) || declared[s.Queue]) {
				old = append(old, s.Queue)
				owned[s.Queue] = true
			}
		}
		s := Step{Kind: KindTopic, Name: name, Action: ActionUnchanged}
		for _, q := range slices.Sorted(maps.Keys(declared)) {
			if !owned[q] {
				s.subscribe = append(s.subscribe, q)
			}
		}
		for _, q := range old {
			if !declared[q] {
				s.unsubscribe = append(s.unsubscribe, q)
			}
		}
		slices.Sort(old)
		newSubs := slices.Sorted(maps.Keys(declared))
		switch {
		case !exists:
			s.Action = ActionCreate
			s.Changes = []FieldChange{{Field: "subscribers", New: strings.Join(newSubs, ",")}}
		case len(s.subscribe) > 0 || len(s.unsubscribe) > 0:
			s.Action = ActionUpdate
			s.Changes = []FieldChange{{Field: "subscribers", Old: strings.Join(old, ","), New: strings.Join(newSubs, ",")}}
		}
		steps = append(steps, s)
	}
	return steps
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// The fields of each kind of resource as text, the same for what a
// manifest declares and what a Target reads, so that equal settings
// compare equal.

func itoa(n int) string { return strconv.Itoa(n) }

// QueueFields are the settings a manifest queue declares.
func QueueFields(q manifest.Queue) map[string]string {
	f := map[string]string{}
	set := func(name string, p *int) {
		if p != nil {
			f[name] = itoa(*p)
		}
	}
	set("visibility_timeout_seconds", q.VisibilityTimeoutSeconds)
	set("max_receive_count", q.MaxReceiveCount)
	set("delay_seconds", q.DelaySeconds)
	set("retention_seconds", q.RetentionSeconds)
	set("max_message_bytes", q.MaxMessageBytes)
	set("dedup_window_seconds", q.DedupWindowSeconds)
	if q.DeadLetterQueue != nil {
		f["dead_letter_queue"] = *q.DeadLetterQueue
	}
	if q.Fifo != nil {
		f["fifo"] = strconv.FormatBool(*q.Fifo)
	}
	return f
}

// queueFieldsOf is every setting of a stored queue, as QueueFields names them.
func queueFieldsOf(q wire.Queue) map[string]string {
	return map[string]string{
		"visibility_timeout_seconds": itoa(q.VisibilityTimeoutSeconds), "max_receive_count": itoa(q.MaxReceiveCount),
		"delay_seconds": itoa(q.DelaySeconds), "retention_seconds": itoa(q.RetentionSeconds),
		"max_message_bytes": itoa(q.MaxMessageBytes), "dedup_window_seconds": itoa(q.DedupWindowSeconds),
		"dead_letter_queue": q.DeadLetterQueue, "fifo": strconv.FormatBool(q.Fifo),
	}
}

// FunctionFields are a function version's module (its SHA-256, shortened)
// and config.
func FunctionFields(sha256Hex string, cfg functions.Config) map[string]string {
	// The env's names and a digest of its values: values may be secrets,
	// which a plan never shows (nor the HTTP API, which masks them).
	env := "{}"
	if len(cfg.Env) > 0 {
		b, _ := json.Marshal(cfg.Env) // sorted keys
		sum := sha256.Sum256(b)
		env = "{" + strings.Join(sortedKeys(cfg.Env), ",") + "}#" + hex.EncodeToString(sum[:4])
	}
	short := sha256Hex
	if len(short) > 12 {
		short = short[:12]
	}
	return map[string]string{
		"module": short, "memory_mb": itoa(cfg.MemoryMiB), "timeout": cfg.Timeout.String(), "env": env,
		"emits":                  strings.Join(cfg.Capabilities.Emits, ","),
		"allowed_outbound_hosts": strings.Join(cfg.Capabilities.AllowedOutboundHosts, ","),
		"stores":                 strings.Join(cfg.Capabilities.Stores, ","),
	}
}

// TriggerFields are a trigger's settings with the defaults filled in:
// those of its kind (a cron trigger has no batch settings).
func TriggerFields(t triggers.Trigger) map[string]string {
	t = t.WithDefaults()
	f := map[string]string{
		"kind": t.Kind, "function": t.Function, "alias": t.Alias, "queue": t.Queue,
		"enabled": strconv.FormatBool(t.Enabled), "source": t.Source,
	}
	if t.Kind == triggers.KindCron {
		f["cron"], f["timezone"], f["enqueue_body"] = t.CronSpec, t.Timezone, compactJSON(t.EnqueueBody)
		return f
	}
	f["dlq"] = strconv.FormatBool(t.DLQ)
	f["batch_size"], f["batch_window"], f["concurrency"] = itoa(t.BatchSize), t.BatchWindow.String(), itoa(t.Concurrency)
	f["ack_policy"], f["lease_extension"] = string(t.AckPolicy), strconv.FormatBool(t.LeaseExtension)
	f["backoff_initial"], f["backoff_max"] = t.BackoffInitial.String(), t.BackoffMax.String()
	return f
}

// compactJSON is raw without insignificant space, its keys in the order
// Postgres's jsonb keeps them, so that a body compares equal after a
// round trip through the database.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v) // sorts keys; jsonb's order differs but both sides pass through here
	return string(b)
}

// HookFields are a hook's queue, scheme and number of secrets (secrets
// are never read back, so a rotation keeping their number is applied
// without showing in a plan).
func HookFields(queue, verify string, secrets int) map[string]string {
	return map[string]string{"queue": queue, "verify": verify, "secrets": itoa(secrets)}
}

// dlqStillInUse refuses a plan that deletes a queue another queue would
// still name as its dead_letter_queue after the apply (a queue the plan
// keeps or creates, with the setting it keeps or the manifest gives it):
// the queue core refuses that delete (queue_in_use), and the apply would
// stop halfway, with the steps before it done.
func dlqStillInUse(cur State, want Desired, steps []Step) error {
	deleted := map[string]bool{}
	for _, s := range steps {
		if s.Kind == KindQueue && s.Action == ActionDelete {
			deleted[s.Name] = true
		}
	}
	if len(deleted) == 0 {
		return nil
	}
	names := map[string]bool{}
	for name := range cur.Queues {
		names[name] = true
	}
	for name := range want.Queues {
		names[name] = true
	}
	var uses []string
	for _, name := range sortedKeys(names) {
		if deleted[name] {
			continue
		}
		dlq := cur.Queues[name].Fields["dead_letter_queue"]
		if v, declared := want.Queues[name]["dead_letter_queue"]; declared {
			dlq = v
		}
		if deleted[dlq] {
			uses = append(uses, fmt.Sprintf("queue %s, which leaves the app, is the dead_letter_queue of queue %s", dlq, name))
		}
	}
	if len(uses) > 0 {
		return fmt.Errorf("deploy: %s: keep it in the manifest, or change or clear that setting first", strings.Join(uses, "; "))
	}
	return nil
}
