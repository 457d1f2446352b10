package manifest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/triggers"
)

const good = `
queues:
  emails: {visibility_timeout_seconds: 45, max_receive_count: 3}
  reports: {}
functions:
  send-email:
    wasm: build/send-email.wasm
    memory_mb: 32
    timeout: 10s
    env: {SMTP_HOST: mail.internal}
  report:
    build: ./examples/cron-report
    reactor: true
triggers:
  - {queue: emails, function: send-email, batch_size: 25, batch_window: 200ms, concurrency: 4, ack_policy: reject_on_error}
  - {queue: emails, dlq: true, function: report}
  - {cron: "*/10 * * * * *", timezone: Europe/Paris, function: report}
  - {cron: "@every 1m", enqueue: {queue: reports, body: {kind: digest, n: 2}}}
hooks:
  github: {queue: emails, verify: github, secret_env: GITHUB_SECRET}
  open: {queue: emails, verify: none}
`

func TestParseFillsDefaults(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := *m.Queues["emails"].MaxReceiveCount; got != 3 {
		t.Errorf("emails max_receive_count = %d, want 3", got)
	}
	if m.Queues["reports"].VisibilityTimeoutSeconds != nil {
		t.Error("reports visibility timeout set, want unset (queue default)")
	}
	se := m.Functions["send-email"]
	if se.MemoryMiB != 32 || time.Duration(se.Timeout) != 10*time.Second || se.Env["SMTP_HOST"] != "mail.internal" {
		t.Errorf("send-email = %+v", se)
	}
	rep := m.Functions["report"]
	if rep.MemoryMiB != functions.DefaultMemoryMiB || time.Duration(rep.Timeout) != functions.DefaultTimeout ||
		rep.Reactor == nil || !*rep.Reactor || rep.Build.Package != "./examples/cron-report" {
		t.Errorf("report defaults = %+v", rep)
	}
	tr := m.Triggers[0]
	if tr.BatchSize != 25 || time.Duration(tr.BatchWindow) != 200*time.Millisecond || tr.Concurrency != 4 ||
		tr.AckPolicy != triggers.AckPolicyRejectOnError || tr.Alias != "live" {
		t.Errorf("trigger 1 = %+v", tr)
	}
	dlq := m.Triggers[1]
	if !dlq.DLQ || dlq.BatchSize != triggers.DefaultBatchSize || dlq.Concurrency != 1 || dlq.AckPolicy != triggers.AckPolicyAck {
		t.Errorf("dlq trigger defaults = %+v", dlq)
	}
	if got := string(m.Triggers[3].Enqueue.Body); got != `{"kind":"digest","n":2}` {
		t.Errorf("enqueue body = %s", got)
	}
	secrets, err := m.Hooks["github"].Secrets(func(k string) string { return map[string]string{"GITHUB_SECRET": "s3"}[k] })
	if err != nil || len(secrets) != 1 || secrets[0] != "s3" {
		t.Errorf("secrets = %v, %v", secrets, err)
	}
	if _, err := m.Hooks["github"].Secrets(func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), "GITHUB_SECRET") {
		t.Errorf("unset secret error = %v, want one naming GITHUB_SECRET", err)
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", "queues: {a: {visibility: 3}}", "field visibility not found"},
		{"bad queue name", "queues: {'a/b': {}}", `queue name "a/b": use 1-80 characters`},
		{"81-char name", "queues: {" + strings.Repeat("q", 81) + ": {}}", "use 1-80 characters"},
		{"no module", "functions: {f: {memory_mb: 3}}", "set wasm (a .wasm file) or build"},
		{"both modules", "functions: {f: {wasm: a.wasm, build: ./x}}", "either wasm or build"},
		{"build without output", "functions: {f: {build: {command: make}}}", "build needs both command"},
		{"build unknown key", "functions: {f: {build: {command: make, out: f.wasm}}}", `unknown key "out"`},
		{"build list", "functions: {f: {build: [make]}}", "build: a Go package folder"},
		{"reactor with command", "functions: {f: {build: {command: make, output: f.wasm}, reactor: true}}", "reactor is for Go packages"},
		{"memory", "functions: {f: {wasm: a.wasm, memory_mb: 5000}}", "memory_mb 5000 is out of range 1-4096"},
		{"timeout", "functions: {f: {wasm: a.wasm, timeout: 1h}}", "timeout 1h0m0s is over the maximum 15m0s"},
		{"negative duration", "functions: {f: {wasm: a.wasm, timeout: -1s}}", `duration "-1s"`},
		{"batch size 0 is default, 1001 is not", "triggers: [{queue: q, function: f, batch_size: 1001}]", "batch_size 1001 is out of range 1-1000"},
		{"negative batch", "triggers: [{queue: q, function: f, batch_size: -1}]", "batch_size -1 is out of range"},
		{"ack policy", "triggers: [{queue: q, function: f, ack_policy: maybe}]", `ack_policy "maybe": use ack, reject_on_error or ack_first`},
		{"queue and cron", "triggers: [{queue: q, cron: '@daily', function: f}]", "set queue or cron, not both"},
		{"neither", "triggers: [{function: f}]", "set queue (a queue trigger) or cron"},
		{"bad cron", "triggers: [{cron: '99 * * * *', function: f}]", `cron "99 * * * *"`},
		{"bad zone", "triggers: [{cron: '@daily', timezone: Mars/Base, function: f}]", `timezone "Mars/Base"`},
		{"cron without action", "triggers: [{cron: '@daily'}]", "set function (to invoke it) or enqueue"},
		{"cron batch", "triggers: [{cron: '@daily', function: f, batch_size: 5}]", "are for queue triggers"},
		{"hook scheme", "hooks: {h: {queue: q, verify: md5}}", `verify "md5": use one of standard, github, stripe, none`},
		{"hook secret", "hooks: {h: {queue: q, verify: stripe}}", "needs secret_env"},
		{"dead-letter queue itself", "queues: {q: {dead_letter_queue: q}}", "cannot be its own dead-letter queue"},
		{"dead-letter queue cycle", "queues: {a: {dead_letter_queue: b}, b: {dead_letter_queue: a}}", "dead_letter_queue b leads back to a"},
		{"dead-letter queue name", "queues: {a: {dead_letter_queue: 'x/y'}}", `queue name "x/y"`},
		{"topic name", "topics: {'a b': {subscribers: [q]}}", `topic name "a b"`},
		{"topic subscriber", "topics: {t: {subscribers: ['a/b']}}", `queue name "a/b"`},
		{"topic subscriber twice", "topics: {t: {subscribers: [q, q]}}", "queue q is listed twice"},
		{"topic key", "topics: {t: {subscriber: [q]}}", "subscriber"},
		{"queue setting range", "queues: {q: {visibility_timeout_seconds: 99999}}", "queue q: visibility_timeout_seconds 99999 is out of range 0-43200"},
		{"queue retention floor", "queues: {q: {retention_seconds: 1}}", "retention_seconds 1 is out of range 60-1209600"},
		{"enqueue unknown key", "triggers: [{cron: '@daily', enqueue: {queue: q, bdy: {a: 1}}}]", `enqueue: unknown key "bdy" (want queue and body)`},
		{"enqueue scalar", "triggers: [{cron: '@daily', enqueue: q}]", "enqueue: use {queue: NAME, body: ...}"},
		{"reactor with wasm", "functions: {f: {wasm: f.wasm, reactor: true}}", "reactor is for Go packages"},
		{"trigger name reserved", "triggers: [{name: invoke, queue: q, function: f}]", `name: invalid trigger name "invoke"`},
		{"trigger name characters", "triggers: [{name: 'bad name!', queue: q, function: f}]", "use 1-200 characters"},
		{"trigger names twice", "triggers: [{name: t, queue: q, function: f}, {name: t, queue: r, function: g}]", "trigger 2: its name t is trigger 1's too"},
		{"derived names twice", "triggers: [{queue: q, function: f}, {queue: q, function: f, batch_size: 5}]", "is trigger 1's too"},
		{"backoff initial over the default max", "triggers: [{queue: q, function: f, backoff: {initial: 10m}}]", "backoff max 5m0s is below initial 10m0s"},
		{"backoff max under the default initial", "triggers: [{queue: q, function: f, backoff: {max: 100ms}}]", "backoff max 100ms is below initial 1s"},
		{"backoff over 12h", "triggers: [{queue: q, function: f, backoff: {initial: 1s, max: 13h}}]", "use at most 12h0m0s"},
		{"timezone on a queue trigger", "triggers: [{queue: q, function: f, timezone: UTC}]", "timezone is for cron triggers"},
		{"cron window", "triggers: [{cron: '@daily', function: f, batch_window: 1s}]", "are for queue triggers"},
		{"cron backoff", "triggers: [{cron: '@daily', function: f, backoff: {initial: 2s}}]", "are for queue triggers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := manifest.Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%s) error = %v, want it to contain %q", tc.yaml, err, tc.want)
			}
		})
	}
}

// build: is a Go package folder (a string) or a command and its output
// (a map); reactor stays unset unless written.
func TestParseBuildForms(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse([]byte("functions:\n  a: {build: ./a}\n  b: {build: {command: make fn, output: out/fn.wasm}}\n  c: {build: ./c, reactor: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := m.Functions["a"]; a.Build != (manifest.Build{Package: "./a"}) || a.Reactor != nil {
		t.Errorf("a = %+v", a)
	}
	if b := m.Functions["b"]; b.Build != (manifest.Build{Command: "make fn", Output: "out/fn.wasm"}) || b.Build.String() != "make fn" {
		t.Errorf("b = %+v", b)
	}
	if c := m.Functions["c"]; c.Reactor == nil || *c.Reactor {
		t.Errorf("c.Reactor = %v, want false", c.Reactor)
	}
}

func TestParseReportsAllProblems(t *testing.T) {
	t.Parallel()
	_, err := manifest.Parse([]byte("functions: {f: {}, g: {wasm: x, memory_mb: 0}}\ntriggers: [{queue: q}]"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"function f: set wasm", "function is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestEmits(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse([]byte("functions:\n  router: {wasm: r.wasm, emits: [github-*, audit]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Functions["router"].Emits; len(got) != 2 || got[0] != "github-*" || got[1] != "audit" {
		t.Fatalf("emits = %v", got)
	}
	if _, err := manifest.Parse([]byte("functions:\n  router: {wasm: r.wasm, emits: [\"a[\"]}\n")); err == nil || !strings.Contains(err.Error(), `emits pattern "a["`) {
		t.Fatalf("a bad pattern: %v", err)
	}
}

func TestParseCapabilities(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse([]byte(`functions:
  f:
    wasm: f.wasm
    allowed_outbound_hosts: ["https://api.stripe.com", "http://127.0.0.1:*"]
    stores: [sessions, counts]
`))
	if err != nil {
		t.Fatal(err)
	}
	f := m.Functions["f"]
	if len(f.AllowedOutboundHosts) != 2 || f.AllowedOutboundHosts[1] != "http://127.0.0.1:*" || len(f.Stores) != 2 || f.Stores[0] != "sessions" {
		t.Errorf("capabilities: %+v", f)
	}
	_, err = manifest.Parse([]byte(`functions:
  f: {wasm: f.wasm, allowed_outbound_hosts: ["api.stripe.com"], stores: [a, a, "b c"]}
`))
	for _, want := range []string{`"api.stripe.com": no scheme`, "store a is listed twice", `store name "b c"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}
