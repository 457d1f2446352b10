package server

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// queueJSON is a queue's settings, with its stats when asked.
type queueJSON struct {
	Name                     string     `json:"name"`
	VisibilityTimeoutSeconds int        `json:"visibility_timeout_seconds"`
	MaxReceiveCount          int        `json:"max_receive_count"`
	DelaySeconds             int        `json:"delay_seconds"`
	RetentionSeconds         int        `json:"retention_seconds"`
	MaxMessageBytes          int        `json:"max_message_bytes"`
	DedupWindowSeconds       int        `json:"dedup_window_seconds"`
	CreatedAt                time.Time  `json:"created_at"`
	UpdatedAt                time.Time  `json:"updated_at"`
	Stats                    *statsJSON `json:"stats,omitempty"`
}

type statsJSON struct {
	Ready                 int64   `json:"ready"`
	Inflight              int64   `json:"inflight"`
	Delayed               int64   `json:"delayed"`
	DLQ                   int64   `json:"dlq"`
	OldestReadyAgeSeconds float64 `json:"oldest_ready_age_seconds"`
}

func toQueueJSON(q pgqueue.Queue) queueJSON {
	sec := func(d time.Duration) int { return int(d / time.Second) }
	return queueJSON{Name: q.Name, VisibilityTimeoutSeconds: sec(q.Settings.VisibilityTimeout),
		MaxReceiveCount: q.Settings.MaxReceiveCount, DelaySeconds: sec(q.Settings.Delay),
		RetentionSeconds: sec(q.Settings.Retention), MaxMessageBytes: q.Settings.MaxMessageBytes,
		DedupWindowSeconds: sec(q.Settings.DedupWindow), CreatedAt: q.CreatedAt.UTC(), UpdatedAt: q.UpdatedAt.UTC()}
}

func toStatsJSON(s pgqueue.Stats) *statsJSON {
	return &statsJSON{Ready: s.Ready, Inflight: s.Inflight, Delayed: s.Delayed, DLQ: s.DLQ,
		OldestReadyAgeSeconds: s.OldestReadyAge.Seconds()}
}

func (a *api) listQueues(w http.ResponseWriter, r *http.Request, c *call) error {
	live, err := queryBool(r, "live")
	if err != nil {
		return err
	}
	queues, err := a.s.queue.ListQueues(r.Context(), c.account)
	if err != nil {
		return err
	}
	qs := []queueJSON{}
	for _, q := range queues {
		if c.key.allowsQueue(q.Name) {
			qs = append(qs, toQueueJSON(q))
		}
	}
	if live {
		all, err := a.s.queue.ListStats(r.Context(), c.account)
		if err != nil {
			return err
		}
		stats := make(map[string]*statsJSON, len(all))
		for _, st := range all {
			stats[st.Queue] = toStatsJSON(st.Stats)
		}
		for i := range qs {
			qs[i].Stats = stats[qs[i].Name]
			if qs[i].Stats == nil {
				qs[i].Stats = &statsJSON{}
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string][]queueJSON{"queues": qs})
	return nil
}

// queueOptions are the settings a create or update may give.
var queueOptions = []string{"visibility_timeout_seconds", "max_receive_count", "delay_seconds",
	"retention_seconds", "max_message_bytes", "dedup_window_seconds"}

// decodeQueueOptions parses a create (withName) or update body into the
// queue's name and the SQL API's options. The SQL API checks the ranges;
// here every value must be an integer.
func decodeQueueOptions(body []byte, withName bool) (string, pgqueue.QueueOptions, error) {
	if err := checkJSON(body); err != nil {
		return "", nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return "", nil, badRequest("request body: expected a JSON object of queue settings")
	}
	var name string
	if raw, ok := fields["name"]; ok {
		if !withName {
			return "", nil, badRequest("a queue cannot be renamed: leave name out")
		}
		if err := json.Unmarshal(raw, &name); err != nil {
			return "", nil, badRequest("field name: expected a JSON string")
		}
		delete(fields, "name")
	} else if withName {
		return "", nil, badRequest("missing name: give the queue's name, 1-80 characters from A-Z a-z 0-9 _ -")
	}
	opts := pgqueue.QueueOptions{}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(queueOptions, k) {
			return "", nil, badRequest("unknown field %q: use name, %s", truncate(k, 40), strings.Join(queueOptions, ", "))
		}
		v, err := integer(k, string(fields[k]), -1<<31, 1<<31-1)
		if err != nil {
			return "", nil, err
		}
		opts[k] = v
	}
	return name, opts, nil
}

func (a *api) createQueue(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	name, opts, err := decodeQueueOptions(body, true)
	if err != nil {
		return err
	}
	if err := checkQueueName(name); err != nil {
		return err
	}
	if !c.key.allowsQueue(name) {
		return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s", c.key.id, strings.Join(c.key.queues, ", "))
	}
	q, err := a.s.queue.CreateQueueWithOptions(r.Context(), c.account, name, opts)
	if err != nil {
		return err
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
	q.Stats = &statsJSON{}
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
	_, opts, err := decodeQueueOptions(body, false)
	if err != nil {
		return err
	}
	q, err := a.s.queue.PatchQueue(r.Context(), c.account, c.queue, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toQueueJSON(q))
	return nil
}

func (a *api) deleteQueue(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := a.s.queue.DeleteQueue(r.Context(), c.account, c.queue); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Functions.

type functionJSON struct {
	Name          string         `json:"name"`
	LatestVersion int            `json:"latest_version"`
	Aliases       map[string]int `json:"aliases"`
	RollbackTo    map[string]int `json:"rollback_to"`
	CreatedAt     time.Time      `json:"created_at"`
	Versions      []versionJSON  `json:"versions,omitempty"`
}

type versionJSON struct {
	Version   int               `json:"version"`
	SHA256    string            `json:"sha256"`
	SizeBytes int               `json:"size_bytes"`
	MemoryMiB int               `json:"memory_mb"`
	TimeoutMS int64             `json:"timeout_ms"`
	Env       map[string]string `json:"env"`
	CreatedAt time.Time         `json:"created_at"`
}

func toFunctionJSON(f functions.Function) functionJSON {
	if f.Aliases == nil {
		f.Aliases = map[string]int{}
	}
	if f.RollbackTo == nil {
		f.RollbackTo = map[string]int{}
	}
	return functionJSON{Name: f.Name, LatestVersion: f.LatestVersion, Aliases: f.Aliases, RollbackTo: f.RollbackTo, CreatedAt: f.CreatedAt.UTC()}
}

func (a *api) listFunctions(w http.ResponseWriter, r *http.Request, c *call) error {
	fs, err := a.s.registry.List(r.Context(), c.account)
	if err != nil {
		return err
	}
	out := make([]functionJSON, len(fs))
	for i, f := range fs {
		out[i] = toFunctionJSON(f)
	}
	writeJSON(w, http.StatusOK, map[string][]functionJSON{"functions": out})
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
	f.Versions = make([]versionJSON, len(vs))
	for i, v := range vs {
		env := map[string]string{}
		for k := range v.Env {
			env[k] = "****"
		}
		f.Versions[i] = versionJSON{Version: v.Number, SHA256: v.SHA256, SizeBytes: v.SizeBytes, MemoryMiB: v.MemoryMiB,
			TimeoutMS: v.Timeout.Milliseconds(), Env: env, CreatedAt: v.CreatedAt.UTC()}
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// decodeDeploy parses a deploy's query: memory_mb, timeout_ms, alias, env.
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
	cfg.MemoryMiB = manifest.DefaultMemoryMiB
	if mem != "" {
		n, err := integer("memory_mb", mem, manifest.MinMemoryMiB, manifest.MaxMemoryMiB)
		if err != nil {
			return cfg, "", err
		}
		cfg.MemoryMiB = int(n)
	}
	tms, err := one("timeout_ms")
	if err != nil {
		return cfg, "", err
	}
	cfg.Timeout = manifest.DefaultTimeout
	if tms != "" {
		n, err := integer("timeout_ms", tms, 1, manifest.MaxTimeout.Milliseconds())
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
	return cfg, alias, nil
}

func (a *api) deployFunction(w http.ResponseWriter, r *http.Request, c *call) error {
	cfg, alias, err := decodeDeploy(r.URL.Query())
	if err != nil {
		return err
	}
	module, err := readBody(w, r, "application/wasm", maxModuleBytes, false)
	if err != nil {
		return err
	}
	d, err := a.s.registry.Deploy(r.Context(), c.account, r.PathValue("name"), module, cfg, alias)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"version": d.Version.Number, "created": d.Created,
		"alias_moved": d.AliasMoved, "sha256": d.Version.SHA256})
	return nil
}

func (a *api) setAlias(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req struct {
		Version number `json:"version"`
	}
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
	body, err := readJSON(w, r, true)
	if err != nil {
		return err
	}
	var req struct {
		Alias string `json:"alias"`
	}
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
	writeJSON(w, http.StatusOK, map[string]int{"version": v})
	return nil
}

// Triggers.

// triggerJSON is a trigger as the API shows and takes it.
type triggerJSON struct {
	Name           string          `json:"name"`
	Kind           string          `json:"kind"`
	Function       string          `json:"function,omitempty"`
	Alias          string          `json:"alias,omitempty"`
	Queue          string          `json:"queue,omitempty"`
	DLQ            bool            `json:"dlq"`
	BatchSize      int             `json:"batch_size"`
	BatchWindowMS  int64           `json:"batch_window_ms"`
	Concurrency    int             `json:"concurrency"`
	AckPolicy      string          `json:"ack_policy,omitempty"`
	BackoffInitMS  int64           `json:"backoff_initial_ms"`
	BackoffMaxMS   int64           `json:"backoff_max_ms"`
	LeaseExtension bool            `json:"lease_extension"`
	CronSpec       string          `json:"cron_spec,omitempty"`
	Timezone       string          `json:"timezone,omitempty"`
	EnqueueBody    json.RawMessage `json:"enqueue_body,omitempty"`
	Enabled        bool            `json:"enabled"`
	Source         string          `json:"source"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

func toTriggerJSON(t triggers.Trigger) triggerJSON {
	return triggerJSON{Name: t.Name, Kind: t.Kind, Function: t.Function, Alias: t.Alias, Queue: t.Queue, DLQ: t.DLQ,
		BatchSize: t.BatchSize, BatchWindowMS: t.BatchWindow.Milliseconds(), Concurrency: t.Concurrency,
		AckPolicy: t.AckPolicy, BackoffInitMS: t.BackoffInitial.Milliseconds(), BackoffMaxMS: t.BackoffMax.Milliseconds(),
		LeaseExtension: t.LeaseExtension, CronSpec: t.CronSpec, Timezone: t.Timezone, EnqueueBody: t.EnqueueBody,
		Enabled: t.Enabled, Source: t.Source, UpdatedAt: t.UpdatedAt.UTC()}
}

func (a *api) listTriggers(w http.ResponseWriter, r *http.Request, c *call) error {
	ts, err := a.s.triggers.List(r.Context(), c.account)
	if err != nil {
		return err
	}
	out := make([]triggerJSON, len(ts))
	for i, t := range ts {
		out[i] = toTriggerJSON(t)
	}
	writeJSON(w, http.StatusOK, map[string][]triggerJSON{"triggers": out})
	return nil
}

// triggerRequest is a PUT trigger body; absent fields take defaults.
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

var triggerNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,200}$`)

// decodeTrigger checks a PUT trigger body for account and name.
func decodeTrigger(body []byte, account, name string) (triggers.Trigger, error) {
	var req triggerRequest
	t := triggers.Trigger{Account: account, Name: name, Source: triggers.SourceAPI}
	if !triggerNameRE.MatchString(name) {
		return t, errorf(http.StatusBadRequest, "invalid_name", "invalid trigger name %q: use 1-200 characters from A-Z a-z 0-9 _ . : @ -", truncate(name, 90))
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
	t.AckPolicy, t.CronSpec, t.Timezone = req.AckPolicy, req.CronSpec, req.Timezone
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
		if _, err := manifest.CronParser.Parse(t.CronSpec); err != nil {
			return t, badRequest("invalid cron_spec %q: %v", truncate(t.CronSpec, 90), err)
		}
		if t.EnqueueBody != nil && t.Queue == "" {
			return t, badRequest("a cron trigger with enqueue_body needs queue")
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
	if t.AckPolicy == "" {
		t.AckPolicy = "ack"
	}
	if !slices.Contains([]string{"ack", "reject_on_error", "ack_first"}, t.AckPolicy) {
		return t, badRequest("invalid ack_policy %q: use ack, reject_on_error or ack_first", truncate(t.AckPolicy, 40))
	}
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
	if t.Queue != "" && !c.key.allowsQueue(t.Queue) {
		return errorf(http.StatusForbidden, "forbidden", "access key %s is limited to queues %s", c.key.id, strings.Join(c.key.queues, ", "))
	}
	changed, err := a.s.triggers.Put(r.Context(), t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": t.Name, "changed": changed})
	return nil
}

func (a *api) deleteTrigger(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := a.s.triggers.Delete(r.Context(), c.account, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// minuteJSON is one minute of a queue's statistics.
type minuteJSON struct {
	Minute   time.Time `json:"minute"`
	Sends    int64     `json:"sends"`
	Acks     int64     `json:"acks"`
	DLQMoves int64     `json:"dlq_moves"`
	Ready    *int64    `json:"ready"`
	Inflight *int64    `json:"inflight"`
	Delayed  *int64    `json:"delayed"`
	DLQ      *int64    `json:"dlq"`
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
	out := make([]minuteJSON, len(ms))
	for i, m := range ms {
		out[i] = minuteJSON{Minute: m.Minute, Sends: m.Sends, Acks: m.Acks, DLQMoves: m.DLQMoves,
			Ready: m.Ready, Inflight: m.Inflight, Delayed: m.Delayed, DLQ: m.DLQ}
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": c.queue, "minutes": out})
	return nil
}

// Invocations.

type invocationJSON struct {
	ID        int64  `json:"id"`
	Function  string `json:"function"`
	Version   int    `json:"version"`
	TriggerID *int64 `json:"trigger_id"`
	// Trigger is the trigger's name, "" when the trigger is gone.
	Trigger     string    `json:"trigger"`
	TriggerType string    `json:"trigger_type"`
	Source      string    `json:"source"`
	BatchSize   int       `json:"batch_size"`
	StartedAt   time.Time `json:"started_at"`
	DurationMS  float64   `json:"duration_ms"`
	Outcome     string    `json:"outcome"`
	FailureKind string    `json:"failure_kind,omitempty"`
	Error       string    `json:"error,omitempty"`
	Acked       int       `json:"acked"`
	Retried     int       `json:"retried"`
	Dead        int       `json:"dead"`
	MessageIDs  []int64   `json:"message_ids"`
	Stderr      string    `json:"stderr,omitempty"`
}

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
	out, err := a.invocations(r.Context(), c.account, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string][]invocationJSON{"invocations": out})
	return nil
}

func (a *api) getInvocation(w http.ResponseWriter, r *http.Request, c *call) error {
	id, err := integer("id", r.PathValue("id"), 1, math.MaxInt64)
	if err != nil {
		return err
	}
	out, err := a.invocations(r.Context(), c.account, triggers.InvocationFilter{ID: id, Limit: 1})
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return errorf(http.StatusNotFound, "not_found", "invocation %d not found in account %s", id, c.account)
	}
	writeJSON(w, http.StatusOK, out[0])
	return nil
}

// invocations reads the account's invocation log, newest first.
func (a *api) invocations(ctx context.Context, account string, f triggers.InvocationFilter) ([]invocationJSON, error) {
	invs, err := a.s.invocations.List(ctx, account, f)
	if err != nil {
		return nil, err
	}
	out := make([]invocationJSON, len(invs))
	for i, v := range invs {
		out[i] = invocationJSON{ID: v.ID, Function: v.Function, Version: v.Version, TriggerID: v.TriggerID,
			Trigger: v.Trigger, TriggerType: v.TriggerType, Source: v.Source, BatchSize: v.BatchSize,
			StartedAt: v.StartedAt.UTC(), DurationMS: v.DurationMS, Outcome: v.Outcome, FailureKind: v.FailureKind,
			Error: v.Error, Acked: v.Acked, Retried: v.Retried, Dead: v.Dead, MessageIDs: v.MessageIDs, Stderr: v.Stderr}
	}
	return out, nil
}

// Keys.

func (a *api) listKeys(w http.ResponseWriter, r *http.Request, c *call) error {
	keys, err := a.s.ListKeys(r.Context(), c.account)
	if err != nil {
		return err
	}
	if keys == nil {
		keys = []Key{}
	}
	writeJSON(w, http.StatusOK, map[string][]Key{"keys": keys})
	return nil
}

func (a *api) createKey(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readJSON(w, r, false)
	if err != nil {
		return err
	}
	var req struct {
		Scopes      []string `json:"scopes"`
		Queues      []string `json:"queues"`
		Description string   `json:"description"`
	}
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
	id, secret, err := a.s.CreateKey(r.Context(), c.account, req.Scopes, req.Queues, req.Description)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]string{"id": id, "secret": secret})
	return nil
}

func (a *api) revokeKey(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := a.s.RevokeKey(r.Context(), c.account, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
