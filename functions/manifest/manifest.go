// Package manifest reads an app manifest, `sluice.yaml`: the queues,
// functions, triggers, webhook hooks and topics of one application, declared so that
// `sluice deploy` can apply them idempotently.
//
//	app: shop                # default: the manifest's folder name
//	queues:
//	  emails: {visibility_timeout_seconds: 30, max_receive_count: 5}
//	functions:
//	  send-email:
//	    wasm: build/send-email.wasm    # or build: ./echo (a Go package, built for wasip1),
//	                                   # or build: {command: make, output: fn.wasm}
//	    memory_mb: 64
//	    timeout: 10s
//	    env: {SMTP_HOST: mail.internal}
//	    allowed_outbound_hosts: ["https://api.example.com"]  # outbound HTTP (none by default)
//	    stores: [sessions]                                   # key-value stores it may open
//	triggers:
//	  - {queue: emails, function: send-email, batch_size: 10, concurrency: 2}
//	  - {cron: "0 */5 * * * *", function: report}
//	  - {cron: "@every 1m", enqueue: {queue: emails, body: {kind: digest}}}
//	hooks:
//	  github: {queue: emails, verify: github, secret_env: GITHUB_WEBHOOK_SECRET}
//	topics:
//	  orders: {subscribers: [emails]}
//
// Parse checks everything that can be checked without a database: names,
// ranges, references between sections, cron specs and time zones. Unknown
// keys are errors, so a typo never silently does nothing.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

// Webhook signature schemes of a hook.
var verifySchemes = []string{"standard", "github", "stripe", "none"}

// Manifest is a parsed and checked sluice.yaml.
type Manifest struct {
	// App names the app the manifest deploys: a deploy creates, updates
	// and removes only that app's resources. Unset, deploy uses the name
	// of the manifest's folder (see deploy.AppName).
	App       string              `yaml:"app"`
	Queues    map[string]Queue    `yaml:"queues"`
	Functions map[string]Function `yaml:"functions"`
	Triggers  []Trigger           `yaml:"triggers"`
	Hooks     map[string]Hook     `yaml:"hooks"`
	Topics    map[string]Topic    `yaml:"topics"`

	// Dir is the folder the manifest was read from; relative paths in it
	// are resolved against it.
	Dir string `yaml:"-"`
}

// Queue declares a queue's settings; unset ones keep the queue defaults.
// Parse checks them against the queue core's ranges (pgqueue.OptionRanges).
type Queue struct {
	VisibilityTimeoutSeconds *int `yaml:"visibility_timeout_seconds" json:"visibility_timeout_seconds,omitempty"`
	MaxReceiveCount          *int `yaml:"max_receive_count" json:"max_receive_count,omitempty"`
	DelaySeconds             *int `yaml:"delay_seconds" json:"delay_seconds,omitempty"`
	RetentionSeconds         *int `yaml:"retention_seconds" json:"retention_seconds,omitempty"`
	MaxMessageBytes          *int `yaml:"max_message_bytes" json:"max_message_bytes,omitempty"`
	DedupWindowSeconds       *int `yaml:"dedup_window_seconds" json:"dedup_window_seconds,omitempty"`
	// DeadLetterQueue names another queue that receives this queue's dead
	// letters as messages ("": back to the dead-letter table).
	DeadLetterQueue *string `yaml:"dead_letter_queue" json:"dead_letter_queue,omitempty"`
	// Fifo requires a group on every message sent: the queue delivers each
	// group's messages in order, one at a time (docs/ordered.md).
	Fifo *bool `yaml:"fifo" json:"fifo,omitempty"`
}

// Function declares a function: where its module comes from and its limits.
type Function struct {
	// Wasm is the path of a compiled module (relative to the manifest).
	Wasm string `yaml:"wasm"`
	// Build says how the CLI builds the module at deploy time, instead of
	// Wasm: a Go main package, or a command writing a .wasm file. The
	// manifest only describes it: the CLI builds it (see
	// deploy.ManifestModules).
	Build Build `yaml:"build"`
	// Reactor builds a Go package as a reactor (-buildmode=c-shared) when
	// true, as a command when false; unset, a package importing the Sluice
	// SDK is built as a reactor and any other as a command.
	Reactor   *bool             `yaml:"reactor"`
	MemoryMiB int               `yaml:"memory_mb"`
	Timeout   Duration          `yaml:"timeout"`
	Env       map[string]string `yaml:"env"`
	// Emits are the patterns of the queues and topics the function may
	// emit messages to (Function ABI v1.1), such as [orders-*, audit];
	// none by default.
	Emits []string `yaml:"emits"`
	// AllowedOutboundHosts are the URLs the function may call over HTTP,
	// in Spin's convention ("https://api.example.com", "http://127.0.0.1:*");
	// none by default.
	AllowedOutboundHosts []string `yaml:"allowed_outbound_hosts"`
	// Stores are the account's key-value stores the function may open.
	Stores []string `yaml:"stores"`
}

// Build is the `build:` of a function: either a Go main package folder
// (`build: ./send-email`, any module on disk), built with GOOS=wasip1
// GOARCH=wasm in its own module, or a shell command run in the manifest's
// folder that writes the module to Output (`build: {command: make,
// output: fn.wasm}`), for any other language.
type Build struct {
	// Package is the Go main package folder, relative to the manifest.
	Package string `yaml:"-"`
	// Command is a shell command (sh -c) run in the manifest's folder.
	Command string `yaml:"command"`
	// Output is the module Command writes, relative to the manifest.
	Output string `yaml:"output"`
}

// IsZero reports whether no build is declared.
func (b Build) IsZero() bool { return b == Build{} }

// String is the build as written: the package folder or the command.
func (b Build) String() string {
	if b.Package != "" {
		return b.Package
	}
	return b.Command
}

// UnmarshalYAML implements yaml.Unmarshaler: a string is a Go package
// folder, a map a command and its output.
func (b *Build) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*b = Build{Package: n.Value}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: build: a Go package folder (build: ./fn) or {command: make, output: fn.wasm}", n.Line)
	}
	var raw struct {
		Command string `yaml:"command"`
		Output  string `yaml:"output"`
	}
	// Decode does not inherit the decoder's KnownFields: check keys here.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "command" && k != "output" {
			return fmt.Errorf("line %d: build: unknown key %q (want command and output)", n.Content[i].Line, k)
		}
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	*b = Build{Command: raw.Command, Output: raw.Output}
	return nil
}

// Trigger declares what runs a function: a queue (or its DLQ), or a cron
// schedule that invokes the function or enqueues a message.
type Trigger struct {
	// Name identifies the trigger; derived from what it connects when unset.
	Name     string `yaml:"name"`
	Function string `yaml:"function"`
	Alias    string `yaml:"alias"`

	Queue       string             `yaml:"queue"`
	DLQ         bool               `yaml:"dlq"`
	BatchSize   int                `yaml:"batch_size"`
	BatchWindow Duration           `yaml:"batch_window"`
	Concurrency int                `yaml:"concurrency"`
	AckPolicy   triggers.AckPolicy `yaml:"ack_policy"`
	// Backoff bounds the exponential retry delay of failed messages.
	Backoff Backoff `yaml:"backoff"`

	Cron     string   `yaml:"cron"`
	Timezone string   `yaml:"timezone"`
	Enqueue  *Enqueue `yaml:"enqueue"`
}

// Backoff is the retry delay of failed messages: Initial doubled per
// attempt up to Max, with jitter.
type Backoff struct {
	Initial Duration `yaml:"initial"`
	Max     Duration `yaml:"max"`
}

// Enqueue is what a cron trigger sends instead of invoking a function.
type Enqueue struct {
	Queue string          `yaml:"queue"`
	Body  json.RawMessage `yaml:"-"`
}

// Hook declares a webhook endpoint that turns requests into messages.
type Hook struct {
	Queue  string `yaml:"queue"`
	Verify string `yaml:"verify"`
	// SecretEnv names the environment variables holding the signing
	// secrets (several for rotation). Secrets never live in the manifest.
	SecretEnv stringList `yaml:"secret_env"`
}

// Topic declares a topic and the queues subscribed to it (without
// filters). Applying creates the topic if needed and subscribes the
// queues; a subscription the manifest made and no longer declares is
// removed. Topics are never deleted by an apply.
type Topic struct {
	Subscribers []string `yaml:"subscribers"`
}

// Duration is a time.Duration written as "1500ms", "10s", "2m".
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: duration %q: use a Go duration of 0 or more, such as 500ms, 10s or 2m", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = []string{n.Value}
		return nil
	}
	var s []string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = s
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping the body as JSON.
func (e *Enqueue) UnmarshalYAML(n *yaml.Node) error {
	var raw struct {
		Queue string `yaml:"queue"`
		Body  any    `yaml:"body"`
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: enqueue: use {queue: NAME, body: ...}", n.Line)
	}
	// Decode does not inherit the decoder's KnownFields: check keys here.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "queue" && k != "body" {
			return fmt.Errorf("line %d: enqueue: unknown key %q (want queue and body)", n.Content[i].Line, k)
		}
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	body, err := json.Marshal(raw.Body)
	if err != nil {
		return fmt.Errorf("line %d: enqueue body is not representable as JSON: %w", n.Line, err)
	}
	e.Queue, e.Body = raw.Queue, body
	return nil
}

// ReadFile reads and checks the manifest at path.
func ReadFile(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Dir, err = filepath.Abs(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return m, nil
}

// Parse decodes and checks a manifest, filling in defaults.
func Parse(data []byte) (*Manifest, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var m Manifest
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &m, nil
}

// check validates the manifest and fills in defaults; all problems found
// are reported together.
func (m *Manifest) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	validName := func(kind, name string) {
		if !pgqueue.ValidName(name) {
			bad("%s name %q: use 1-80 characters from A-Z a-z 0-9 _ -", kind, name)
		}
	}
	if m.App != "" {
		validName("app", m.App)
	}
	for _, name := range sortedKeys(m.Queues) {
		validName("queue", name)
		for option, v := range m.Queues[name].numeric() {
			if r := pgqueue.OptionRanges[option]; v != nil && (int64(*v) < r.Min || int64(*v) > r.Max) {
				bad("queue %s: %s %d is out of range %d-%d", name, option, *v, r.Min, r.Max)
			}
		}
		dlq := m.Queues[name].DeadLetterQueue
		if dlq == nil || *dlq == "" {
			continue
		}
		validName("queue", *dlq)
		// Follow the chain through the manifest's queues: it must not
		// come back to this one.
		for hop, seen := *dlq, 0; seen <= len(m.Queues); seen++ {
			if hop == name {
				bad("queue %s: dead_letter_queue %s leads back to %s: a queue cannot be its own dead-letter queue, directly or through others", name, *dlq, name)
				break
			}
			next := m.Queues[hop].DeadLetterQueue
			if next == nil || *next == "" {
				break
			}
			hop = *next
		}
	}
	for _, name := range sortedKeys(m.Functions) {
		validName("function", name)
		f := m.Functions[name]
		switch {
		case f.Wasm == "" && f.Build.IsZero():
			bad("function %s: set wasm (a .wasm file) or build (a Go package folder, or {command, output})", name)
		case f.Wasm != "" && !f.Build.IsZero():
			bad("function %s: set either wasm or build, not both", name)
		case f.Build.Package == "" && !f.Build.IsZero() && (f.Build.Command == "" || f.Build.Output == ""):
			bad("function %s: build needs both command (run in the manifest's folder) and output (the .wasm file it writes)", name)
		case f.Build.Package == "" && f.Reactor != nil:
			bad("function %s: reactor is for Go packages (build: ./folder); a build command or a wasm file is a reactor or a command by what it exports", name)
		}
		if f.MemoryMiB == 0 {
			f.MemoryMiB = functions.DefaultMemoryMiB
		}
		if f.MemoryMiB < functions.MinMemoryMiB || f.MemoryMiB > functions.MaxMemoryMiB {
			bad("function %s: memory_mb %d is out of range %d-%d", name, f.MemoryMiB, functions.MinMemoryMiB, functions.MaxMemoryMiB)
		}
		if f.Timeout == 0 {
			f.Timeout = Duration(functions.DefaultTimeout)
		}
		for _, h := range f.AllowedOutboundHosts {
			if err := runtime.ValidateOutboundHost(h); err != nil {
				bad("function %s: %v", name, err)
			}
		}
		for i, st := range f.Stores {
			if !pgqueue.ValidName(st) {
				bad("function %s: store name %q: use 1-80 characters from A-Z a-z 0-9 _ -", name, st)
			} else if slices.Contains(f.Stores[:i], st) {
				bad("function %s: store %s is listed twice", name, st)
			}
		}
		if time.Duration(f.Timeout) > functions.MaxTimeout {
			bad("function %s: timeout %s is over the maximum %s", name, time.Duration(f.Timeout), functions.MaxTimeout)
		}
		if len(f.Emits) > functions.MaxEmitPatterns {
			bad("function %s: %d emits patterns, over the limit of %d", name, len(f.Emits), functions.MaxEmitPatterns)
		}
		for _, p := range f.Emits {
			if err := functions.CheckEmitPattern(p); err != nil {
				bad("function %s: %v", name, err)
			}
		}
		m.Functions[name] = f
	}
	names := map[string]int{} // trigger name → its position, from 1
	for i := range m.Triggers {
		t := &m.Triggers[i]
		where := fmt.Sprintf("trigger %d", i+1)
		if t.Alias == "" {
			t.Alias = "live"
		}
		if t.Name != "" {
			if err := triggers.ValidateName(t.Name); err != nil {
				bad("%s: name: %v", where, err)
			}
		}
		if time.Duration(t.Backoff.Initial) > triggers.MaxBackoff || time.Duration(t.Backoff.Max) > triggers.MaxBackoff {
			bad("%s: backoff initial and max: use at most %s", where, triggers.MaxBackoff)
		}
		switch {
		case t.Queue != "" && t.Cron != "":
			bad("%s: set queue or cron, not both", where)
		case t.Queue != "":
			if t.Function == "" {
				bad("%s (queue %s): function is required", where, t.Queue)
			}
			validName("queue", t.Queue)
			if t.BatchSize == 0 {
				t.BatchSize = triggers.DefaultBatchSize
			}
			if t.BatchSize < triggers.MinBatchSize || t.BatchSize > triggers.MaxBatchSize {
				bad("%s (queue %s): batch_size %d is out of range %d-%d", where, t.Queue, t.BatchSize, triggers.MinBatchSize, triggers.MaxBatchSize)
			}
			if t.Concurrency == 0 {
				t.Concurrency = triggers.DefaultConcurrency
			}
			if t.Concurrency < triggers.MinConcurrency || t.Concurrency > triggers.MaxConcurrency {
				bad("%s (queue %s): concurrency %d is out of range %d-%d", where, t.Queue, t.Concurrency, triggers.MinConcurrency, triggers.MaxConcurrency)
			}
			if time.Duration(t.BatchWindow) > triggers.MaxBatchWindow {
				bad("%s (queue %s): batch_window %s is over the maximum %s", where, t.Queue, time.Duration(t.BatchWindow), triggers.MaxBatchWindow)
			}
			if p, err := triggers.ParseAckPolicy(string(t.AckPolicy)); err != nil {
				bad("%s (queue %s): %v", where, t.Queue, err)
			} else {
				t.AckPolicy = p
			}
			// Unset bounds take the defaults, so compare what will apply.
			initial, most := time.Duration(t.Backoff.Initial), time.Duration(t.Backoff.Max)
			if initial == 0 {
				initial = triggers.DefaultBackoffInitial
			}
			if most == 0 {
				most = triggers.DefaultBackoffMax
			}
			if most < initial {
				bad("%s (queue %s): backoff max %s is below initial %s (an unset one is its default: initial %s, max %s)",
					where, t.Queue, most, initial, triggers.DefaultBackoffInitial, triggers.DefaultBackoffMax)
			}
			if t.Timezone != "" {
				bad("%s (queue %s): timezone is for cron triggers", where, t.Queue)
			}
			if t.Enqueue != nil {
				bad("%s (queue %s): enqueue is for cron triggers", where, t.Queue)
			}
		case t.Cron != "":
			if _, err := triggers.ParseSchedule(t.Cron); err != nil {
				bad("%s: %v", where, err)
			}
			if t.Timezone != "" {
				if _, err := time.LoadLocation(t.Timezone); err != nil {
					bad("%s: timezone %q: use an IANA name such as UTC or Europe/Paris", where, t.Timezone)
				}
			}
			switch {
			case t.Enqueue == nil && t.Function == "":
				bad("%s (cron %s): set function (to invoke it) or enqueue (to send a message)", where, t.Cron)
			case t.Enqueue != nil && t.Function != "":
				bad("%s (cron %s): set function or enqueue, not both", where, t.Cron)
			case t.Enqueue != nil:
				validName("queue", t.Enqueue.Queue)
			}
			if t.DLQ || t.BatchSize != 0 || t.Concurrency != 0 || t.AckPolicy != "" || t.BatchWindow != 0 || t.Backoff != (Backoff{}) {
				bad("%s (cron %s): dlq, batch_size, batch_window, concurrency, ack_policy and backoff are for queue triggers", where, t.Cron)
			}
		default:
			bad("%s: set queue (a queue trigger) or cron (a schedule)", where)
			continue
		}
		// Two triggers of one name would be one trigger, the last one.
		name := t.Spec(pgqueue.DefaultAccount).Name
		if first, ok := names[name]; ok {
			bad("%s: its name %s is trigger %d's too: name one of them (name:)", where, name, first)
		} else {
			names[name] = i + 1
		}
	}
	for _, name := range sortedKeys(m.Hooks) {
		validName("hook", name)
		h := m.Hooks[name]
		validName("queue", h.Queue)
		if !slices.Contains(verifySchemes, h.Verify) {
			bad("hook %s: verify %q: use one of %s", name, h.Verify, strings.Join(verifySchemes, ", "))
		}
		if h.Verify != "none" && len(h.SecretEnv) == 0 {
			bad("hook %s: verify %s needs secret_env (the variable holding the signing secret)", name, h.Verify)
		}
	}
	for _, name := range sortedKeys(m.Topics) {
		validName("topic", name)
		seen := map[string]bool{}
		for _, q := range m.Topics[name].Subscribers {
			validName("queue", q)
			if seen[q] {
				bad("topic %s: queue %s is listed twice in subscribers", name, q)
			}
			seen[q] = true
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("manifest: %w", errors.Join(errs...))
	}
	return nil
}

// numeric are the queue's numeric settings by option name (nil: unset).
func (q Queue) numeric() map[string]*int {
	return map[string]*int{
		"visibility_timeout_seconds": q.VisibilityTimeoutSeconds, "max_receive_count": q.MaxReceiveCount,
		"delay_seconds": q.DelaySeconds, "retention_seconds": q.RetentionSeconds,
		"max_message_bytes": q.MaxMessageBytes, "dedup_window_seconds": q.DedupWindowSeconds,
	}
}

// Spec turns the manifest's trigger into a trigger of account, owned by
// the manifest (triggers.SourceManifest), with its derived name unless the
// manifest names it.
func (t Trigger) Spec(account string) triggers.Trigger {
	out := triggers.Trigger{
		Account: account, Function: t.Function, Alias: t.Alias, Queue: t.Queue, DLQ: t.DLQ,
		BatchSize: t.BatchSize, BatchWindow: time.Duration(t.BatchWindow), Concurrency: t.Concurrency,
		AckPolicy: t.AckPolicy, BackoffInitial: time.Duration(t.Backoff.Initial),
		BackoffMax: time.Duration(t.Backoff.Max), LeaseExtension: true,
		Enabled: true, Source: triggers.SourceManifest, Kind: triggers.KindQueue,
	}
	if t.Cron != "" {
		out.Kind, out.CronSpec, out.Timezone = triggers.KindCron, t.Cron, t.Timezone
		if t.Enqueue != nil {
			out.Queue, out.EnqueueBody = t.Enqueue.Queue, t.Enqueue.Body
		}
	}
	out.Name = t.Name
	if out.Name == "" {
		out.Name = out.DerivedName()
	}
	return out
}

// Secrets returns a hook's signing secrets from the environment, in the
// order declared; a declared variable that is unset or empty is an error.
func (h Hook) Secrets(getenv func(string) string) ([]string, error) {
	out := make([]string, 0, len(h.SecretEnv))
	for _, name := range h.SecretEnv {
		v := getenv(name)
		if v == "" {
			return nil, fmt.Errorf("manifest: hook secret variable %s is unset or empty", name)
		}
		out = append(out, v)
	}
	return out, nil
}

// Path resolves a path of the manifest against its folder.
func (m *Manifest) Path(p string) string {
	if filepath.IsAbs(p) || m.Dir == "" {
		return p
	}
	return filepath.Join(m.Dir, p)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
