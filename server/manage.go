package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// toQueueJSON is a queue's settings on the wire.
func toQueueJSON(q pgqueue.Queue) wire.Queue {
	sec := func(d time.Duration) int { return int(d / time.Second) }
	return wire.Queue{Name: q.Name, VisibilityTimeoutSeconds: sec(q.Settings.VisibilityTimeout),
		MaxReceiveCount: q.Settings.MaxReceiveCount, DelaySeconds: sec(q.Settings.Delay),
		RetentionSeconds: sec(q.Settings.Retention), MaxMessageBytes: q.Settings.MaxMessageBytes,
		DedupWindowSeconds: sec(q.Settings.DedupWindow), RequireReceipt: q.Settings.RequireReceipt,
		DeadLetterQueue: q.Settings.DeadLetterQueue, Fifo: q.Settings.Fifo,
		CreatedAt: q.CreatedAt.UTC(), UpdatedAt: q.UpdatedAt.UTC()}
}

// toStatsJSON is a queue's live counts on the wire.
func toStatsJSON(s pgqueue.Stats) *wire.QueueStats {
	return &wire.QueueStats{Ready: s.Ready, Inflight: s.Inflight, Delayed: s.Delayed, DLQ: s.DLQ,
		OldestReadyAgeSeconds: s.OldestReadyAge.Seconds(), GroupedWaiting: s.GroupedWaiting,
		Groups: s.Groups, GroupsInflight: s.GroupsInflight, GroupsBlocked: s.GroupsBlocked, Bytes: s.Bytes, DLQBytes: s.DLQBytes}
}

// countApart is the largest page of queues whose live counts are taken
// queue by queue (pgqueue.Client.StatsOf, ~0.15 ms a queue beside what
// its messages cost), when the page does not hold all the account's
// queues; a larger page, or the whole list, is counted in one statement
// over every message of the account (ListStats: 0.4-0.8 s for 1M messages).
// BENCHMARKS.md, "Live counts of a page of queues".
const countApart = 100

// maxStatsReads bounds the reads that count queues' messages (a queue's
// stats, a page's live counts, an app's queues, an app's plan or delete)
// a process runs at once, of which one account runs a quarter: each
// scans its queues' messages (about 0.25 s for 1,000,000 messages;
// BENCHMARKS.md). A read beyond waits up to statsWait for a slot.
const (
	maxStatsReads = 8
	statsWait     = 5 * time.Second
)

// holdStatsRead takes one of the stats read slots for account, waiting up
// to statsWait, or answers 429 with Retry-After; the caller gives it back
// with the returned func once the messages are counted.
func (a *api) holdStatsRead(ctx context.Context, account string) (give func(), err error) {
	return a.statsReads.holdFor(ctx, account, statsWait,
		"this account counts the messages of its queues (stats, app plans) %d times at once, the most it may on this server: retry in a second",
		"the messages of queues are being counted (stats, app plans) %d times at once on this server: retry in a second")
}

// liveStats returns the counts of the queues of page by name; the account
// has total queues. It holds a stats read slot while it reads.
func (a *api) liveStats(ctx context.Context, account string, page []wire.Queue, total int) (map[string]*wire.QueueStats, error) {
	give, err := a.holdStatsRead(ctx, account)
	if err != nil {
		return nil, err
	}
	defer give()
	var counted []pgqueue.QueueStats
	if len(page) <= countApart && len(page) < total {
		names := make([]string, len(page))
		for i, q := range page {
			names[i] = q.Name
		}
		counted, err = a.s.queue.StatsOf(ctx, account, names)
	} else {
		counted, err = a.s.queue.ListStats(ctx, account)
	}
	if err != nil {
		return nil, err
	}
	stats := make(map[string]*wire.QueueStats, len(counted))
	for _, st := range counted {
		stats[st.Queue] = toStatsJSON(st.Stats)
	}
	return stats, nil
}

func (a *api) listQueues(w http.ResponseWriter, r *http.Request, c *call) error {
	live, err := queryBool(r, "live")
	if err != nil {
		return err
	}
	limit, after, err := listPage(r)
	if err != nil {
		return err
	}
	queues, err := a.s.queue.ListQueues(r.Context(), c.account)
	if err != nil {
		return err
	}
	qs := []wire.Queue{}
	for _, q := range queues {
		if c.key.allowsQueue(q.Name) {
			qs = append(qs, toQueueJSON(q))
		}
	}
	qs, next := pageByName(qs, func(q wire.Queue) string { return q.Name }, limit, after)
	if live {
		stats, err := a.liveStats(r.Context(), c.account, qs, len(queues))
		if err != nil {
			return err
		}
		for i := range qs {
			qs[i].Stats = stats[qs[i].Name]
			if qs[i].Stats == nil {
				qs[i].Stats = &wire.QueueStats{}
			}
		}
	}
	writeJSON(w, http.StatusOK, wire.QueueList{Queues: qs, Next: next})
	return nil
}

// queueOptions are the settings a create or update may give: the fields
// of wire.QueueSettings, each checked to be an integer.
var queueOptions = []string{"visibility_timeout_seconds", "max_receive_count", "delay_seconds",
	"retention_seconds", "max_message_bytes", "dedup_window_seconds"}

// deadLetterQueueOption names the queue that receives a queue's dead
// letters: a queue name, or "" or null for the dead-letter table.
const deadLetterQueueOption = "dead_letter_queue"

// fifoOption makes every send to the queue need a group: true or false.
const fifoOption = "fifo"

// checkDeadLetterQueue refuses a dead-letter queue the key may not reach.
func checkDeadLetterQueue(c *call, opts pgqueue.QueueOptions) error {
	if dlq, ok := opts[deadLetterQueueOption].(string); ok && !c.key.allowsQueue(dlq) {
		return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s: dead_letter_queue %q is not among them", c.key.id, strings.Join(c.key.queues, ", "), dlq)
	}
	return nil
}

// deadLetterCycle hides, from a key limited to some queues, the queues
// through which the dead_letter_queue asked for leads back to queue: the
// queue core's message names them, and the key learns no names past its
// patterns.
func deadLetterCycle(c *call, queue string, opts pgqueue.QueueOptions, err error) error {
	dlq, _ := opts[deadLetterQueueOption].(string)
	if err == nil || c.key.allQueues() || !errors.Is(err, pgqueue.ErrInvalidArgument) || !strings.HasSuffix(err.Error(), ": a cycle") {
		return err
	}
	return badRequest("invalid dead_letter_queue %q: its dead letters go back to %q through the dead_letter_queue of queues past this key's: a cycle (a key for every queue is told which)", dlq, queue)
}

// decodeQueueOptions parses a create (withName) or update body into the
// queue's name, the SQL API's options and require_receipt (nil when not
// given). The SQL API checks the ranges; here every value must be an
// integer (require_receipt a boolean).
func decodeQueueOptions(body []byte, withName bool) (string, pgqueue.QueueOptions, *bool, error) {
	if err := checkJSON(body); err != nil {
		return "", nil, nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return "", nil, nil, badRequest("request body: expected a JSON object of queue settings")
	}
	var name string
	if raw, ok := fields["name"]; ok {
		if !withName {
			return "", nil, nil, badRequest("a queue cannot be renamed: leave name out")
		}
		if err := json.Unmarshal(raw, &name); err != nil {
			return "", nil, nil, badRequest("field name: expected a JSON string")
		}
		delete(fields, "name")
	} else if withName {
		return "", nil, nil, badRequest("missing name: give the queue's name, 1-80 characters from A-Z a-z 0-9 _ -")
	}
	var requireReceipt *bool
	if raw, ok := fields["require_receipt"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil || string(raw) == "null" {
			return "", nil, nil, badRequest("field require_receipt: expected true or false")
		}
		requireReceipt = &b
		delete(fields, "require_receipt")
	}
	opts := pgqueue.QueueOptions{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k == deadLetterQueueOption {
			var dlq *string
			if err := json.Unmarshal(fields[k], &dlq); err != nil {
				return "", nil, nil, badRequest("field dead_letter_queue: expected a queue name, or \"\" or null for the dead-letter table")
			}
			opts[k] = nil
			if dlq != nil && *dlq != "" {
				if err := checkQueueName(*dlq); err != nil {
					return "", nil, nil, err
				}
				opts[k] = *dlq
			}
			continue
		}
		if k == fifoOption {
			var on bool
			if err := json.Unmarshal(fields[k], &on); err != nil || string(fields[k]) == "null" {
				return "", nil, nil, badRequest("field fifo: expected true or false")
			}
			opts[k] = on
			continue
		}
		if !slices.Contains(queueOptions, k) {
			return "", nil, nil, badRequest("unknown field %q: use name, %s, require_receipt, %s, fifo", truncate(k, 40), strings.Join(queueOptions, ", "), deadLetterQueueOption)
		}
		lo, hi := int64(-1<<31), int64(1<<31-1)
		// A value that is no integer at all is refused naming the range
		// the queue core holds it to.
		if r, ok := pgqueue.OptionRanges[k]; ok {
			lo, hi = r.Min, r.Max
		}
		v, err := integer(k, string(fields[k]), lo, hi)
		if err != nil {
			return "", nil, nil, err
		}
		opts[k] = v
	}
	return name, opts, requireReceipt, nil
}

func (a *api) createQueue(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	name, opts, requireReceipt, err := decodeQueueOptions(body, true)
	if err != nil {
		return err
	}
	if err := checkQueueName(name); err != nil {
		return err
	}
	if !c.key.allowsQueue(name) {
		return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s", c.key.id, strings.Join(c.key.queues, ", "))
	}
	if err := checkDeadLetterQueue(c, opts); err != nil {
		return err
	}
	var q pgqueue.Queue
	err = a.exclusive(r.Context(), c.account, func() error {
		existing, err := a.s.queue.ListQueues(r.Context(), c.account)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(existing, func(q pgqueue.Queue) bool { return q.Name == name }) {
			if err := a.checkLimit(r.Context(), c.account, "queues", len(existing)); err != nil {
				return err
			}
		}
		q, err = a.s.queue.CreateQueueWithOptions(r.Context(), c.account, name, opts)
		return deadLetterCycle(c, name, opts, err)
	})
	if err != nil {
		return err
	}
	if requireReceipt != nil && *requireReceipt {
		if q, err = a.s.queue.SetRequireReceipt(r.Context(), c.account, name, true); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusCreated, toQueueJSON(q))
	return nil
}

func (a *api) queueNotFound(c *call) error {
	return errorf(http.StatusNotFound, "queue_not_found", "queue %q not found in account %s", c.queue, c.account)
}

func (a *api) getQueue(w http.ResponseWriter, r *http.Request, c *call) error {
	queue, err := a.s.queue.GetQueue(r.Context(), c.account, c.queue)
	if errors.Is(err, pgqueue.ErrQueueNotFound) {
		return a.queueNotFound(c)
	}
	if err != nil {
		return err
	}
	q := toQueueJSON(queue)
	q.Stats = &wire.QueueStats{}
	give, err := a.holdStatsRead(r.Context(), c.account)
	if err != nil {
		return err
	}
	defer give()
	// A queue deleted since it was read has no stats: zeros.
	st, err := a.s.queue.Stats(r.Context(), c.account, c.queue)
	if err != nil && !errors.Is(err, pgqueue.ErrQueueNotFound) {
		return err
	}
	if err == nil {
		q.Stats = toStatsJSON(st)
	}
	writeJSON(w, http.StatusOK, q)
	return nil
}

func (a *api) updateQueue(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	_, opts, requireReceipt, err := decodeQueueOptions(body, false)
	if err != nil {
		return err
	}
	if err := checkDeadLetterQueue(c, opts); err != nil {
		return err
	}
	q, err := a.s.queue.PatchQueue(r.Context(), c.account, c.queue, opts)
	a.messageBytes.Delete(c.account + "/" + c.queue)
	if err != nil {
		return deadLetterCycle(c, c.queue, opts, err)
	}
	if requireReceipt != nil && *requireReceipt != q.Settings.RequireReceipt {
		if q, err = a.s.queue.SetRequireReceipt(r.Context(), c.account, c.queue, *requireReceipt); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, toQueueJSON(q))
	return nil
}

func (a *api) deleteQueue(w http.ResponseWriter, r *http.Request, c *call) error {
	a.messageBytes.Delete(c.account + "/" + c.queue)
	if err := a.s.queue.DeleteQueue(r.Context(), c.account, c.queue); err != nil {
		if errors.Is(err, pgqueue.ErrQueueInUse) && !c.key.allQueues() {
			// The queue core's message names the queues that use it; a
			// key limited to some queues learns no names past them.
			return errorf(http.StatusConflict, wire.CodeQueueInUse,
				"queue %q is the dead_letter_queue of other queues of account %s: their dead_letter_queue must change first (a key for every queue is told which)",
				c.queue, c.account)
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Functions.

func toFunctionJSON(f functions.Function) wire.Function {
	if f.Aliases == nil {
		f.Aliases = map[string]int{}
	}
	if f.RollbackTo == nil {
		f.RollbackTo = map[string]int{}
	}
	return wire.Function{Name: f.Name, LatestVersion: f.LatestVersion, Aliases: f.Aliases, RollbackTo: f.RollbackTo, CreatedAt: f.CreatedAt.UTC()}
}

func (a *api) listFunctions(w http.ResponseWriter, r *http.Request, c *call) error {
	limit, after, err := listPage(r)
	if err != nil {
		return err
	}
	fs, err := a.s.registry.List(r.Context(), c.account)
	if err != nil {
		return err
	}
	fs, next := pageByName(fs, func(f functions.Function) string { return f.Name }, limit, after)
	out := make([]wire.Function, len(fs))
	for i, f := range fs {
		out[i] = toFunctionJSON(f)
	}
	writeJSON(w, http.StatusOK, wire.FunctionList{Functions: out, Next: next})
	return nil
}

func (a *api) getFunction(w http.ResponseWriter, r *http.Request, c *call) error {
	name := r.PathValue("name")
	fs, err := a.s.registry.List(r.Context(), c.account)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(fs, func(f functions.Function) bool { return f.Name == name })
	if i < 0 {
		return errorf(http.StatusNotFound, "not_found", "function %q not found in account %s", truncate(name, 90), c.account)
	}
	vs, err := a.s.registry.Versions(r.Context(), c.account, name)
	if err != nil {
		return err
	}
	f := toFunctionJSON(fs[i])
	f.Versions = make([]wire.FunctionVersion, len(vs))
	for i, v := range vs {
		env := map[string]string{}
		for k := range v.Env {
			env[k] = "****"
		}
		f.Versions[i] = wire.FunctionVersion{Version: v.Number, SHA256: v.SHA256, SizeBytes: v.SizeBytes, MemoryMB: v.MemoryMiB,
			TimeoutMS: v.Timeout.Milliseconds(), Env: env, Emits: v.Capabilities.Emits, CreatedAt: v.CreatedAt.UTC()}
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// decodeDeploy parses a deploy's query: memory_mb, timeout_ms, alias, env,
// emits, and the repeatable allowed_outbound_host and store.
func decodeDeploy(query map[string][]string) (functions.Config, string, error) {
	var cfg functions.Config
	one := func(name string) (string, error) {
		v := query[name]
		if len(v) > 1 {
			return "", badRequest("query parameter %s is given %d times: give it once", name, len(v))
		}
		if len(v) == 0 {
			return "", nil
		}
		return v[0], nil
	}
	mem, err := one("memory_mb")
	if err != nil {
		return cfg, "", err
	}
	cfg.MemoryMiB = functions.DefaultMemoryMiB
	if mem != "" {
		n, err := integer("memory_mb", mem, functions.MinMemoryMiB, functions.MaxMemoryMiB)
		if err != nil {
			return cfg, "", err
		}
		cfg.MemoryMiB = int(n)
	}
	tms, err := one("timeout_ms")
	if err != nil {
		return cfg, "", err
	}
	cfg.Timeout = functions.DefaultTimeout
	if tms != "" {
		n, err := integer("timeout_ms", tms, 1, functions.MaxTimeout.Milliseconds())
		if err != nil {
			return cfg, "", err
		}
		cfg.Timeout = time.Duration(n) * time.Millisecond
	}
	alias, err := one("alias")
	if err != nil {
		return cfg, "", err
	}
	for _, kv := range query["env"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !envNameRE.MatchString(k) {
			return cfg, "", badRequest("invalid env %q: use env=NAME=value, NAME from A-Z a-z 0-9 _", truncate(kv, 60))
		}
		if cfg.Env == nil {
			cfg.Env = map[string]string{}
		}
		if _, dup := cfg.Env[k]; dup {
			return cfg, "", badRequest("env %s is given twice", k)
		}
		cfg.Env[k] = v
	}
	if ps := query["emits"]; len(ps) > 0 {
		if len(ps) > functions.MaxEmitPatterns {
			return cfg, "", badRequest("%d emits patterns, over the limit of %d", len(ps), functions.MaxEmitPatterns)
		}
		for _, p := range ps {
			if err := functions.CheckEmitPattern(p); err != nil {
				return cfg, "", badRequest("invalid %v", err)
			}
		}
		cfg.Capabilities.Emits = ps
	}
	for _, h := range query["allowed_outbound_host"] {
		if err := runtime.ValidateOutboundHost(h); err != nil {
			return cfg, "", badRequest("%v", err)
		}
		cfg.Capabilities.AllowedOutboundHosts = append(cfg.Capabilities.AllowedOutboundHosts, h)
	}
	for _, st := range query["store"] {
		if err := checkStore(st); err != nil {
			return cfg, "", err
		}
		if slices.Contains(cfg.Capabilities.Stores, st) {
			return cfg, "", badRequest("store %s is given twice", st)
		}
		cfg.Capabilities.Stores = append(cfg.Capabilities.Stores, st)
	}
	return cfg, alias, nil
}

func (a *api) setAlias(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.accountWide("functions serve"); err != nil {
		return err
	}
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req setAliasRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if !req.Version.set {
		return badRequest("missing version: give the version the alias points at")
	}
	v, err := req.Version.get("version", 1, 1<<31-1, 0)
	if err != nil {
		return err
	}
	if err := a.s.registry.SetAlias(r.Context(), c.account, r.PathValue("name"), r.PathValue("alias"), int(v)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) rollback(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.accountWide("functions serve"); err != nil {
		return err
	}
	body, err := readJSON(w, r, true)
	if err != nil {
		return err
	}
	var req wire.RollbackRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if req.Alias == "" {
		req.Alias = functions.DefaultAlias
	}
	v, err := a.s.registry.Rollback(r.Context(), c.account, r.PathValue("name"), req.Alias)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.RollbackResult{Version: v})
	return nil
}

// setAliasRequest is the body of an alias change (wire.SetAliasRequest),
// the version range-checked after decoding.
type setAliasRequest struct {
	Version number `json:"version"`
}

// Triggers.

func toTriggerJSON(t triggers.Trigger) wire.TriggerInfo {
	return wire.TriggerInfo{Name: t.Name, Kind: t.Kind, Function: t.Function, Alias: t.Alias, Queue: t.Queue, DLQ: t.DLQ,
		BatchSize: t.BatchSize, BatchWindowMS: t.BatchWindow.Milliseconds(), Concurrency: t.Concurrency,
		AckPolicy: string(t.AckPolicy), BackoffInitialMS: t.BackoffInitial.Milliseconds(), BackoffMaxMS: t.BackoffMax.Milliseconds(),
		LeaseExtension: t.LeaseExtension, CronSpec: t.CronSpec, Timezone: t.Timezone, EnqueueBody: t.EnqueueBody,
		Enabled: t.Enabled, Source: t.Source, UpdatedAt: t.UpdatedAt.UTC()}
}

func (a *api) listTriggers(w http.ResponseWriter, r *http.Request, c *call) error {
	limit, after, err := listPage(r)
	if err != nil {
		return err
	}
	ts, err := a.s.triggers.List(r.Context(), c.account)
	if err != nil {
		return err
	}
	out := make([]wire.TriggerInfo, 0, len(ts))
	for _, t := range ts {
		if c.key.allowsQueues(triggerQueues(t)) {
			out = append(out, toTriggerJSON(t))
		}
	}
	out, next := pageByName(out, func(t wire.TriggerInfo) string { return t.Name }, limit, after)
	writeJSON(w, http.StatusOK, wire.TriggerList{Triggers: out, Next: next})
	return nil
}

// triggerRequest is a PUT trigger body (wire.Trigger but for updated_at),
// each number range-checked after decoding; absent fields take defaults.
type triggerRequest struct {
	Name           string          `json:"name"`
	Kind           string          `json:"kind"`
	Function       string          `json:"function"`
	Alias          string          `json:"alias"`
	Queue          string          `json:"queue"`
	DLQ            bool            `json:"dlq"`
	BatchSize      number          `json:"batch_size"`
	BatchWindowMS  number          `json:"batch_window_ms"`
	Concurrency    number          `json:"concurrency"`
	AckPolicy      string          `json:"ack_policy"`
	BackoffInitMS  number          `json:"backoff_initial_ms"`
	BackoffMaxMS   number          `json:"backoff_max_ms"`
	LeaseExtension *bool           `json:"lease_extension"`
	CronSpec       string          `json:"cron_spec"`
	Timezone       string          `json:"timezone"`
	EnqueueBody    json.RawMessage `json:"enqueue_body"`
	Enabled        *bool           `json:"enabled"`
	// Source is who owns the trigger: "api" (the default) or "manifest"
	// (a manifest apply may remove it when it leaves the manifest).
	Source string `json:"source"`
}

// decodeTrigger checks a PUT trigger body for account and name.
func decodeTrigger(body []byte, account, name string) (triggers.Trigger, error) {
	var req triggerRequest
	t := triggers.Trigger{Account: account, Name: name, Source: triggers.SourceAPI}
	if err := triggers.ValidateName(name); err != nil {
		return t, errorf(http.StatusBadRequest, "invalid_name", "%v", err)
	}
	if err := checkJSON(body); err != nil {
		return t, err
	}
	if err := decodeJSON(body, &req); err != nil {
		return t, err
	}
	if req.Name != "" && req.Name != name {
		return t, badRequest("name %q in the body differs from %q in the URL", truncate(req.Name, 90), name)
	}
	switch req.Source {
	case "", triggers.SourceAPI:
	case triggers.SourceManifest:
		t.Source = triggers.SourceManifest
	default:
		return t, badRequest("invalid source %q: use api or manifest", truncate(req.Source, 40))
	}
	t.Kind, t.Function, t.Alias, t.Queue, t.DLQ = req.Kind, req.Function, req.Alias, req.Queue, req.DLQ
	t.AckPolicy, t.CronSpec, t.Timezone = triggers.AckPolicy(req.AckPolicy), req.CronSpec, req.Timezone
	if t.Alias == "" {
		t.Alias = functions.DefaultAlias
	}
	if len(req.EnqueueBody) > 0 && string(req.EnqueueBody) != "null" {
		t.EnqueueBody = req.EnqueueBody
	}
	// The first range error wins; later fields are not looked at.
	var err error
	field := func(n number, name string, min, max, def int64) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = n.get(name, min, max, def)
		return v
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	t.BatchSize = int(field(req.BatchSize, "batch_size", 1, 1000, 10))
	t.BatchWindow = ms(field(req.BatchWindowMS, "batch_window_ms", 0, 60000, 0))
	t.Concurrency = int(field(req.Concurrency, "concurrency", 1, 256, 1))
	t.BackoffInitial = ms(field(req.BackoffInitMS, "backoff_initial_ms", 0, 43200000, triggers.DefaultBackoffInitial.Milliseconds()))
	t.BackoffMax = ms(field(req.BackoffMaxMS, "backoff_max_ms", 0, 43200000, triggers.DefaultBackoffMax.Milliseconds()))
	if err != nil {
		return t, err
	}
	t.LeaseExtension = req.LeaseExtension == nil || *req.LeaseExtension
	t.Enabled = req.Enabled == nil || *req.Enabled
	switch t.Kind {
	case triggers.KindQueue:
		if t.Queue == "" || t.Function == "" {
			return t, badRequest("a queue trigger needs queue and function")
		}
		if t.CronSpec != "" || t.EnqueueBody != nil {
			return t, badRequest("a queue trigger takes no cron_spec or enqueue_body")
		}
	case triggers.KindCron:
		if t.CronSpec == "" || (t.Function == "") == (t.EnqueueBody == nil) {
			return t, badRequest("a cron trigger needs cron_spec and exactly one of function and enqueue_body (with queue)")
		}
		if _, err := triggers.ParseSchedule(t.CronSpec); err != nil {
			return t, badRequest("invalid cron_spec: %v", err)
		}
		if t.EnqueueBody != nil && t.Queue == "" {
			return t, badRequest("a cron trigger with enqueue_body needs queue")
		}
		if t.Function != "" && t.Queue != "" {
			return t, badRequest("a cron trigger that invokes a function takes no queue (queue is where enqueue_body is sent)")
		}
		if t.Timezone == "" {
			t.Timezone = "UTC"
		}
		if _, err := time.LoadLocation(t.Timezone); err != nil || strings.Contains(t.Timezone, "..") {
			return t, badRequest("invalid timezone %q: use an IANA name such as Europe/Paris", truncate(t.Timezone, 60))
		}
	default:
		return t, badRequest("invalid kind %q: use queue or cron", truncate(t.Kind, 40))
	}
	if t.Timezone == "" {
		t.Timezone = "UTC"
	}
	policy, err := triggers.ParseAckPolicy(string(t.AckPolicy))
	if err != nil {
		return t, badRequest("invalid %v", err)
	}
	t.AckPolicy = policy
	return t, nil
}

func (a *api) putTrigger(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	t, err := decodeTrigger(body, c.account, r.PathValue("name"))
	if err != nil {
		return err
	}
	if !c.key.allowsQueues(triggerQueues(t)) {
		return c.forbidQueues("trigger " + t.Name + "'s queue " + strconvQuote(t.Queue))
	}
	var changed bool
	err = a.exclusive(r.Context(), c.account, func() error {
		if old, found, err := a.findTrigger(r.Context(), c.account, t.Name); err != nil {
			return err
		} else if found && !c.key.allowsQueues(triggerQueues(old)) {
			return c.forbidQueues("trigger " + t.Name + ", which touches " + strconvQuote(old.Queue))
		} else if !found {
			ts, err := a.s.triggers.List(r.Context(), c.account)
			if err != nil {
				return err
			}
			if err := a.checkLimit(r.Context(), c.account, "triggers", len(ts)); err != nil {
				return err
			}
		}
		if t.Function != "" {
			// A trigger of a missing function would only fail at every reload.
			fs, err := a.s.registry.List(r.Context(), c.account)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(fs, func(f functions.Function) bool { return f.Name == t.Function }) {
				return badRequest("function %q does not exist in account %s: deploy it before its trigger", truncate(t.Function, 90), c.account)
			}
			if err := a.checkTriggerEffects(r, c, t); err != nil {
				return err
			}
		}
		changed, err = a.s.triggers.Put(r.Context(), t)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.PutTriggerResult{Name: t.Name, Changed: changed})
	return nil
}

// checkTriggerEffects refuses a key limited to some queues a trigger
// whose function (the version its alias points at) acts beyond the
// trigger's queue: one that may emit (what it emits could reach queues
// past the key's patterns, directly or through a topic), write the
// account's key-value stores or call HTTP hosts. Such a key's invoke runs
// only as a dry run, which does none of these (SECURITY.md); a trigger
// would run it for real on whatever the key sends. Keys for every queue
// wire any function.
func (a *api) checkTriggerEffects(r *http.Request, c *call, t triggers.Trigger) error {
	if c.key.allQueues() || t.Function == "" { // a cron trigger that enqueues runs no function
		return nil
	}
	v, err := a.s.registry.Resolve(r.Context(), c.account, t.Function, t.Alias)
	if err != nil {
		return err
	}
	var effects []string
	if caps := v.Capabilities; len(caps.Emits) > 0 {
		effects = append(effects, "may emit to "+strings.Join(caps.Emits, ", "))
	}
	if caps := v.Capabilities; len(caps.Stores) > 0 {
		effects = append(effects, "may write stores "+strings.Join(caps.Stores, ", "))
	}
	if caps := v.Capabilities; len(caps.AllowedOutboundHosts) > 0 {
		effects = append(effects, "may call "+strings.Join(caps.AllowedOutboundHosts, ", "))
	}
	if len(effects) > 0 {
		return c.forbidQueues("function " + t.Function + " version " + strconv.Itoa(v.Number) + ", which " +
			strings.Join(effects, " and ") + " (a key for every queue may wire it)")
	}
	return nil
}

func (a *api) deleteTrigger(w http.ResponseWriter, r *http.Request, c *call) error {
	name := r.PathValue("name")
	err := a.exclusive(r.Context(), c.account, func() error {
		if old, found, err := a.findTrigger(r.Context(), c.account, name); err != nil {
			return err
		} else if found && !c.key.allowsQueues(triggerQueues(old)) {
			return c.forbidQueues("trigger " + name + ", which touches " + strconvQuote(old.Queue))
		}
		return a.s.triggers.Delete(r.Context(), c.account, name)
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) queueMinuteStats(w http.ResponseWriter, r *http.Request, c *call) error {
	minutes, err := queryInt(r, "minutes", 1, pgqueue.MaxStatsMinutes, 60)
	if err != nil {
		return err
	}
	ms, err := a.s.queue.MinuteStats(r.Context(), c.account, c.queue, int(minutes))
	if err != nil {
		return err
	}
	out := make([]wire.MinuteStats, len(ms))
	for i, m := range ms {
		out[i] = wire.MinuteStats{Minute: m.Minute, Sends: m.Sends, Acks: m.Acks, DLQMoves: m.DLQMoves,
			Ready: m.Ready, Inflight: m.Inflight, Delayed: m.Delayed, DLQ: m.DLQ}
	}
	writeJSON(w, http.StatusOK, wire.MinuteStatsList{Queue: c.queue, Minutes: out})
	return nil
}

// Invocations.

// queryTime reads an RFC 3339 query parameter, nil if absent.
func queryTime(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, badRequest("invalid %s %q: use an RFC 3339 time such as 2026-11-30T12:00:00Z", name, truncate(v, 60))
	}
	return &t, nil
}

func (a *api) listInvocations(w http.ResponseWriter, r *http.Request, c *call) error {
	query := r.URL.Query()
	f := triggers.InvocationFilter{Function: query.Get("function"), Outcome: query.Get("outcome"), Trigger: query.Get("trigger")}
	limit, err := queryInt(r, "limit", 1, 1000, 50)
	if err != nil {
		return err
	}
	f.Limit = int(limit)
	if f.Outcome != "" && !slices.Contains([]string{"success", "partial_failure", "failure"}, f.Outcome) {
		return badRequest("invalid outcome %q: use success, partial_failure or failure", truncate(f.Outcome, 40))
	}
	if f.Since, err = queryTime(r, "since"); err != nil {
		return err
	}
	if f.Until, err = queryTime(r, "until"); err != nil {
		return err
	}
	if _, ok := query["before_id"]; ok {
		if f.BeforeID, err = queryInt(r, "before_id", 1, math.MaxInt64, 0); err != nil {
			return err
		}
	}
	out, err := a.visibleInvocations(r.Context(), c, f)
	if err != nil {
		return err
	}
	var last int64
	if len(out) > 0 {
		last = out[len(out)-1].ID
	}
	writeJSON(w, http.StatusOK, wire.InvocationList{Invocations: out, Next: nextInvocation(len(out), f.Limit, last)})
	return nil
}

func (a *api) getInvocation(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := integer("id", r.PathValue("id"), 1, math.MaxInt64)
	if err != nil {
		return err
	}
	out, err := a.visibleInvocations(r.Context(), c, triggers.InvocationFilter{ID: id, Limit: 1})
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return errorf(http.StatusNotFound, "not_found", "invocation %d not found in account %s", id, c.account)
	}
	writeJSON(w, http.StatusOK, out[0])
	return nil
}

// maxInvocationScans bounds the pages read to fill one page of
// invocations for a queue-limited key.
const maxInvocationScans = 10

// visibleInvocations reads the invocations f selects that the key may see
// (see allowsInvocation), newest first: for a queue-limited key it reads
// further pages (at most maxInvocationScans) to fill f.Limit.
func (a *api) visibleInvocations(ctx context.Context, c *call, f triggers.InvocationFilter) ([]wire.Invocation, error) {
	byTrigger, err := a.invocationQueues(ctx, c)
	if err != nil {
		return nil, err
	}
	if byTrigger == nil {
		return a.invocations(ctx, c.account, f)
	}
	out := []wire.Invocation{}
	for range maxInvocationScans {
		page, err := a.invocations(ctx, c.account, f)
		if err != nil {
			return nil, err
		}
		for _, v := range page {
			if c.allowsInvocation(v, byTrigger) && len(out) < f.Limit {
				out = append(out, v)
			}
		}
		if len(page) < f.Limit || len(out) >= f.Limit || f.ID != 0 {
			break
		}
		f.BeforeID = page[len(page)-1].ID
	}
	return out, nil
}

// invocations reads the account's invocation log, newest first.
func (a *api) invocations(ctx context.Context, account string, f triggers.InvocationFilter) ([]wire.Invocation, error) {
	invs, err := a.s.invocations.List(ctx, account, f)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Invocation, len(invs))
	for i, v := range invs {
		out[i] = toInvocationJSON(v)
	}
	return out, nil
}

// Keys.

func (a *api) listKeys(w http.ResponseWriter, r *http.Request, c *call) error {
	limit, after, err := listPage(r)
	if err != nil {
		return err
	}
	keys, err := a.s.ListKeys(r.Context(), c.account)
	if err != nil {
		return err
	}
	out := []Key{}
	for _, k := range keys {
		if c.key.coversPatterns(k.Queues) {
			out = append(out, k)
		}
	}
	out, next, err := pageByID(out, func(k Key) string { return k.ID }, limit, after)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.KeyList{Keys: out, Next: next})
	return nil
}

func (a *api) createKey(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req wire.CreateKeyRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if len(req.Queues) == 0 {
		req.Queues = []string{"*"}
	}
	if err := checkKeySpec(req.Scopes, req.Queues, req.Description); err != nil {
		return badRequest("%s", err.Error())
	}
	// A key can only hand out what it holds.
	for _, sc := range req.Scopes {
		if !c.key.allows(sc) {
			return errorf(http.StatusForbidden, "forbidden", "access key %s cannot grant scope %s, which it lacks", c.key.id, sc)
		}
	}
	if !slices.Contains(c.key.queues, "*") {
		for _, p := range req.Queues {
			if !slices.Contains(c.key.queues, p) {
				return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s and cannot grant %q", c.key.id, strings.Join(c.key.queues, ", "), p)
			}
		}
	}
	var id, secret string
	err = a.exclusive(r.Context(), c.account, func() error {
		if _, err := a.s.pool.Exec(r.Context(), a.q.Get("delete_old_revoked_keys"), c.account, revokedKeysDays); err != nil {
			return fmt.Errorf("server: delete old revoked keys of account %s: %w", c.account, err)
		}
		keys, err := a.s.ListKeys(r.Context(), c.account)
		if err != nil {
			return err
		}
		live := 0
		for _, k := range keys {
			if k.RevokedAt == nil {
				live++
			}
		}
		l, err := a.s.AccountLimits(r.Context(), c.account)
		if err != nil {
			return err
		}
		if live >= l.Keys {
			return limitExceeded(c.account, "keys", int64(l.Keys))
		}
		// Revoked keys are rows too: an account that creates and revokes keys
		// in a loop keeps at most revokedKeysFactor times its limit of them.
		if len(keys) >= revokedKeysFactor*l.Keys {
			return errorf(http.StatusForbidden, "limit_exceeded",
				"account %s holds %d keys, %d of them revoked in the last %d days, and may hold %d live and revoked together; revoked keys are deleted %d days after their revocation",
				c.account, len(keys), len(keys)-live, revokedKeysDays, revokedKeysFactor*l.Keys, revokedKeysDays)
		}
		id, secret, err = a.s.CreateKey(r.Context(), c.account, req.Scopes, req.Queues, req.Description)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, wire.NewKey{ID: id, Secret: secret})
	return nil
}

func (a *api) revokeKey(w http.ResponseWriter, r *http.Request, c *call) error {
	id := r.PathValue("id")
	keys, err := a.s.ListKeys(r.Context(), c.account)
	if err != nil {
		return err
	}
	// A key may revoke only keys that hold no more than it does.
	for _, k := range keys {
		if k.ID == id && !c.key.covers(k.Scopes, k.Queues) {
			return errorf(http.StatusForbidden, "forbidden", "access key %s may not revoke %s, which holds scopes or queues it lacks",
				c.key.id, id)
		}
	}
	if err := a.s.RevokeKey(r.Context(), c.account, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
