package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// The CLI tests run `sluice` in-process (run) against a real server, each
// test with its own server and config file.

// hookSecretEnv names a variable holding a webhook secret for hooks create
// (set once: tests run in parallel and may not use t.Setenv).
const hookSecretEnv = "SLUICE_CLI_TEST_HOOK_SECRET"

func init() { os.Setenv(hookSecretEnv, "whsec-test") }

// cli runs sluice with args and the test's config file.
type cli struct {
	t      *testing.T
	config string
	srv    *clienttest.Server
}

func newCLI(t *testing.T) *cli {
	srv := clienttest.NewShared(t)
	c := &cli{t: t, config: filepath.Join(t.TempDir(), "sluice", "config.json"), srv: srv}
	key := srv.Key(t, client.DefaultAccount, clienttest.AllScopes, nil)
	c.ok("login", "--endpoint", srv.URL, "--key", key)
	return c
}

// run runs sluice and returns its exit code, stdout and stderr.
func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	if len(args) > 0 && args[0] != "help" && args[0] != "version" {
		// The config flag goes after the sub-command (or the command for
		// the ones without sub-commands); flags may follow arguments.
		args = append(args, "--config", c.config)
	}
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// ok runs sluice, expects exit 0 and returns stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run(args...)
	if code != 0 {
		c.t.Fatalf("sluice %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// json runs sluice with --json and decodes its output into v.
func (c *cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("sluice %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fails runs sluice, expects exit code and stderr matching pattern.
func (c *cli) fails(code int, pattern string, args ...string) {
	c.t.Helper()
	got, out, errOut := c.run(args...)
	if got != code || !regexp.MustCompile(pattern).MatchString(errOut) {
		c.t.Errorf("sluice %s: exit %d, stderr %q (stdout %q); want exit %d, stderr matching %q",
			strings.Join(args, " "), got, errOut, out, code, pattern)
	}
}

func TestCLIMessages(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	if out := c.ok("queues", "create", "orders", "--max-receive-count", "3", "--visibility-timeout", "60"); !strings.Contains(out, "created queue orders") {
		t.Errorf("create: %s", out)
	}
	var q client.Queue
	c.json(&q, "queues", "get", "orders")
	if q.MaxReceiveCount != 3 || q.VisibilityTimeoutSeconds != 60 || q.Stats == nil {
		t.Errorf("get: %+v", q)
	}

	// Relaxed JSON, a batch, a file and stdin-free forms.
	var one struct{ Sequence int64 }
	c.json(&one, "mq", "send", "orders", "--body", "{hello:world,n:1}")
	var batch struct{ Sequences []int64 }
	c.json(&batch, "mq", "send", "orders", "--body", "[{id:1},{id:2}]")
	if one.Sequence < 1 || len(batch.Sequences) != 2 || batch.Sequences[0] <= one.Sequence {
		t.Fatalf("sequences %d %v", one.Sequence, batch.Sequences)
	}
	file := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(file, []byte(`{"from": "file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("mq", "send", "orders", "--body-file", file); !regexp.MustCompile(`^sent message \d+ to orders\n$`).MatchString(out) {
		t.Errorf("send from a file: %q", out)
	}
	if out := c.ok("mq", "send", "--body", "[[1,2]]", "orders"); !strings.Contains(out, "sent 1 message to orders") {
		t.Errorf("send one array body: %q", out)
	}

	out := c.ok("mq", "peek", "orders")
	for _, want := range []string{"SEQ", "RECEIVES", "BODY", `"hello":"world"`, `{"from":"file"}`, "[1,2]"} {
		if !strings.Contains(out, want) {
			t.Errorf("peek table lacks %q:\n%s", want, out)
		}
	}

	var got struct{ Messages []client.Message }
	c.json(&got, "mq", "receive", "orders", "--max-messages", "2", "--wait-seconds", "1")
	if len(got.Messages) != 2 || got.Messages[0].Sequence != one.Sequence || got.Messages[0].Receipt == "" {
		t.Fatalf("receive: %+v", got)
	}
	m := got.Messages[0]
	seq := strconv.FormatInt(m.Sequence, 10)
	c.fails(1, `409 stale_receipt`, "mq", "delete", "orders", seq, "--receipt", "6f1c2a4e-8f7b-4c1d-9e2a-3b4c5d6e7f80")
	if out := c.ok("mq", "delete", "orders", seq, "--receipt", m.Receipt); out != "deleted message "+seq+" of orders\n" {
		t.Errorf("delete: %q", out)
	}
	c.fails(1, `not found.*\(404 message_not_found\)`, "mq", "delete", "orders", seq)
	c.ok("mq", "visibility", "orders", strconv.FormatInt(got.Messages[1].Sequence, 10), "--seconds", "0")

	var del struct{ Messages []client.Message }
	c.json(&del, "mq", "receive", "orders", "--max-messages", "10", "--delete")
	if len(del.Messages) != 4 {
		t.Errorf("receive --delete: %d messages, want 4", len(del.Messages))
	}
	if out := c.ok("mq", "receive", "orders"); out != "no messages in orders\n" {
		t.Errorf("empty receive: %q", out)
	}
	c.ok("mq", "send", "orders", "--body", "{a:1}", "--delay-seconds", "600")
	var purged map[string]int64
	c.json(&purged, "mq", "purge", "orders")
	if purged["purged"] != 1 {
		t.Errorf("purge: %v", purged)
	}

	var list struct{ Queues []client.Queue }
	c.json(&list, "queues", "list", "--live")
	if len(list.Queues) != 1 || list.Queues[0].Stats == nil {
		t.Errorf("list --live: %+v", list)
	}
	if out := c.ok("queues", "list", "--live"); !strings.Contains(out, "OLDEST READY") || !strings.Contains(out, "orders") {
		t.Errorf("list --live table:\n%s", out)
	}
	if out := c.ok("queues", "update", "orders", "--max-receive-count", "7"); !regexp.MustCompile(`max receive count: +7\n`).MatchString(out) {
		t.Errorf("update:\n%s", out)
	}
	if out := c.ok("queues", "stats", "orders", "--minutes", "3"); !regexp.MustCompile(`^MINUTE \(UTC\) +SENDS +ACKS +DLQ MOVES +READY`).MatchString(out) || strings.Count(out, "\n") != 4 {
		t.Errorf("stats:\n%s", out)
	}
	var st struct {
		Queue   string
		Minutes []client.MinuteStats
	}
	c.json(&st, "queues", "stats", "orders", "--minutes", "2")
	if st.Queue != "orders" || len(st.Minutes) != 2 {
		t.Errorf("stats --json: %+v", st)
	}
	c.ok("queues", "delete", "orders")
	c.fails(1, `queue "orders" not found.*\(404 queue_not_found\)`, "queues", "get", "orders")
}

func TestCLIDeadLetters(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "mail", "--max-receive-count", "1")
	for range 4 {
		c.ok("mq", "send", "mail", "--body", "{to:ada}")
	}
	c.ok("mq", "receive", "mail", "--max-messages", "4", "--visibility-timeout", "1")
	var dead struct{ Messages []client.DeadLetter }
	deadline := time.Now().Add(15 * time.Second)
	for len(dead.Messages) < 4 { // the sweeper moves them once their leases expire
		if time.Now().After(deadline) {
			t.Fatalf("dead letters: %+v", dead)
		}
		time.Sleep(100 * time.Millisecond)
		c.json(&dead, "mq", "receive-dlq", "mail")
	}
	// A full page of one says how to ask for the next.
	if out := c.ok("mq", "receive-dlq", "mail", "--max-messages", "1"); !strings.Contains(out, "REASON") || strings.Count(out, "\n") != 3 ||
		!strings.Contains(out, "more may follow: sluice mq receive-dlq mail --max-messages 1 --after "+strconv.FormatInt(dead.Messages[0].Sequence, 10)+"\n") {
		t.Errorf("receive-dlq table:\n%s", out)
	}
	var page struct{ Messages []client.DeadLetter }
	c.json(&page, "mq", "receive-dlq", "mail", "--after", strconv.FormatInt(dead.Messages[0].Sequence, 10))
	if len(page.Messages) != 3 || page.Messages[0].Sequence != dead.Messages[1].Sequence {
		t.Errorf("receive-dlq --after: %+v", page.Messages)
	}
	seq2 := strconv.FormatInt(dead.Messages[2].Sequence, 10)
	if out := c.ok("mq", "redrive", "mail", "--sequences", seq2+",999999"); out != "redrove 1 dead letter back into mail\n" {
		t.Errorf("redrive --sequences: %q", out)
	}
	var peeked struct{ Messages []client.Message }
	c.json(&peeked, "mq", "peek", "mail", "--after", seq2)
	if len(peeked.Messages) != 0 {
		t.Errorf("peek --after %s: %+v", seq2, peeked.Messages)
	}
	c.json(&peeked, "mq", "peek", "mail", "--after", "0")
	if len(peeked.Messages) != 1 || peeked.Messages[0].Sequence != dead.Messages[2].Sequence {
		t.Errorf("peek --after 0: %+v", peeked.Messages)
	}
	c.ok("mq", "purge", "mail")
	c.ok("mq", "delete-dlq", "mail", strconv.FormatInt(dead.Messages[0].Sequence, 10))
	if out := c.ok("mq", "redrive", "mail", "--max-messages", "1"); out != "redrove 1 dead letter back into mail\n" {
		t.Errorf("redrive: %q", out)
	}
	var purged map[string]int64
	c.json(&purged, "mq", "purge-dlq", "mail")
	if purged["purged"] != 1 {
		t.Errorf("purge-dlq: %v", purged)
	}
}

func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "q")
	tests := []struct {
		args    []string
		pattern string
	}{
		{[]string{"mq", "fly"}, `unknown sub-command "fly"`},
		{[]string{"mq", "send"}, `missing QUEUE`},
		{[]string{"mq", "send", "q"}, `missing --body JSON or --body-file FILE`},
		{[]string{"mq", "send", "q", "--body", "{a:1}", "--body-file", "x"}, `not both`},
		{[]string{"mq", "send", "q", "--body", "{bad"}, `--body: relaxedjson: at byte \d+`},
		{[]string{"mq", "send", "q", "--body", "[]"}, `batch of 1 to 10 messages, got 0`},
		{[]string{"mq", "send", "q", "--body", "[1,2,3,4,5,6,7,8,9,10,11]"}, `got 11`},
		{[]string{"mq", "send", "q", "--body", "{a:1}", "--delay-seconds", "-1"}, `delay_seconds -1: must be 0 to 43200`},
		{[]string{"mq", "send", "../etc", "--body", "{a:1}"}, `queue name "../etc"`},
		{[]string{"mq", "send", "q", "extra", "--body", "{a:1}"}, `unexpected argument "extra"`},
		{[]string{"mq", "receive", "q", "--max-messages", "11"}, `max_messages 11: must be 1 to 10`},
		{[]string{"mq", "receive", "q", "--max-messages", "1.5"}, `invalid value "1.5" for flag -max-messages`},
		{[]string{"mq", "receive", "q", "--wait-seconds", "21"}, `wait_seconds 21: must be 0 to 20`},
		{[]string{"mq", "receive", "q", "--visibility-timeout", "0"}, `--visibility-timeout 0`},
		{[]string{"mq", "receive", "q", "--bogus"}, `flag provided but not defined: -bogus`},
		{[]string{"mq", "peek", "q", "--max-messages", "101"}, `max_messages 101: must be 1 to 100`},
		{[]string{"mq", "delete", "q", "0"}, `sequence "0": want a positive integer`},
		{[]string{"mq", "delete", "q", "abc"}, `sequence "abc"`},
		{[]string{"mq", "visibility", "q", "1"}, `missing --seconds`},
		{[]string{"mq", "redrive", "q", "--max-messages", "-3"}, `--max-messages -3`},
		{[]string{"mq", "redrive", "q", "--sequences", "1,x"}, `--sequences: "x" is not a sequence`},
		{[]string{"mq", "redrive", "q", "--sequences", "1", "--max-messages", "2"}, `--sequences or --max-messages, not both`},
		{[]string{"mq", "peek", "q", "--after", "-1"}, `--after -1`},
		{[]string{"queues", "create", "q2", "--max-receive-count", "0"}, `--max-receive-count 0: must be 1 to 1000`},
		{[]string{"queues", "create", "q2", "--retention-seconds", "99999999999"}, `invalid value|must be 60 to 1209600`},
		{[]string{"queues", "update", "q"}, `nothing to update`},
		{[]string{"queues", "stats", "q", "--minutes", "1441"}, `--minutes 1441: must be 1 to 1440`},
		{[]string{"invocations", "--outcome", "meh"}, `--outcome "meh"`},
		{[]string{"invocations", "--since", "-1m"}, `--since -1m0s: must be positive`},
		{[]string{"logs", "--outcome", "ok"}, `--outcome "ok": use success, partial_failure or failure`},
		{[]string{"logs", "--since", "-5s"}, `--since -5s: must be positive`},
		{[]string{"invocations", "--limit", "0"}, `--limit 0`},
		{[]string{"invocations", "--limit", "x"}, `invalid value "x" for flag -limit`},
		{[]string{"invocations", "--until", "noon"}, `--until "noon"`},
		{[]string{"invocations", "get", "x"}, `invocation id "x"`},
		{[]string{"invocations", "get"}, `missing ID`},
		{[]string{"keys", "create", "--scope", "mq:everything"}, `--scope "mq:everything"`},
		{[]string{"hooks", "create", "h", "--queue", "q"}, `missing --verify`},
		{[]string{"hooks", "create", "h", "--queue", "q", "--verify", "github"}, `needs --secret-env`},
		{[]string{"hooks", "create", "h", "--queue", "q", "--verify", "github", "--secret-env", "SLUICE_CLI_TEST_UNSET"}, `SLUICE_CLI_TEST_UNSET: the variable is unset`},
		{[]string{"functions", "set-alias", "f", "live", "zero"}, `version "zero"`},
		{[]string{"functions", "deploy", "f", "cli_test.go", "--memory-mb", "-1"}, `memory_mb -1: must be 1 to 4096`},
		{[]string{"queues", "get", "q", "--account", "12"}, `account "12": want 12 digits`},
	}
	for _, tt := range tests {
		c.fails(2, tt.pattern, tt.args...)
	}

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"mq"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "missing sub-command: use send, receive") {
		t.Errorf("mq: exit %d, %q", code, stderr.String())
	}
	// The server's own flags (no --config): refused before anything starts.
	for _, tt := range []struct{ args, want string }{
		{"serve --invocation-retention 30s", "--invocation-retention 30s: give at least 1m"},
		{"dev --invocation-retention -1h", "--invocation-retention -1h0m0s: give at least 1m"},
	} {
		stderr.Reset()
		if code := run(context.Background(), strings.Fields(tt.args), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("sluice %s: exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
	// Without a login or env, the verbs say how to log in.
	stderr.Reset()
	code := run(context.Background(), []string{"queues", "list", "--config", filepath.Join(t.TempDir(), "none.json")}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "sluice login") {
		t.Errorf("no login: exit %d, %q", code, stderr.String())
	}
	// Help is not an error.
	if code, out, _ := c.run("mq", "send", "-h"); code != 0 || !strings.Contains(out, "usage: sluice mq send QUEUE") || !strings.Contains(out, "-body-file") {
		t.Errorf("mq send -h: %d %q", code, out)
	}
	if code, out, _ := c.run("keys", "help"); code != 0 || !strings.Contains(out, "revoke ID") {
		t.Errorf("keys help: %d %q", code, out)
	}
	// sluice help CMD is CMD -h; logs and invocations describe the filter
	// flags they share.
	for _, cmd := range []string{"logs", "invocations"} {
		code, out, _ := c.run("help", cmd)
		for _, want := range []string{"usage: sluice " + cmd, "-function string", "-trigger name", "TRIGGER column", "-outcome string", "partial_failure", "-since duration"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("help %s: exit %d, output lacks %q:\n%s", cmd, code, want, out)
			}
		}
	}
}

func TestCLILogin(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewShared(t)
	config := filepath.Join(t.TempDir(), "config.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"login", "--endpoint", srv.URL, "--key", "nope:nope", "--config", config}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "refused the key") {
		t.Errorf("bad key: exit %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(config); !os.IsNotExist(err) {
		t.Errorf("a refused login wrote the config: %v", err)
	}
	stdout.Reset()
	key := srv.Key(t, "000000000009", []string{"mq:send"}, nil)
	code = run(context.Background(), []string{"login", "--endpoint", srv.URL + "/", "--key", key, "--account", "000000000009", "--config", config, "--json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("login with a send-only key: exit %d, %s", code, stderr.String())
	}
	var res map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res["account"] != "000000000009" || res["config"] != config {
		t.Errorf("login --json: %s (%v)", stdout.String(), err)
	}
	fi, err := os.Stat(config)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config: %v %v", fi, err)
	}
	cfg, _, err := client.ReadConfig(config)
	if err != nil || cfg.Endpoint != srv.URL || cfg.Key != key || cfg.Account != "000000000009" {
		t.Errorf("saved config %+v, %v", cfg, err)
	}
	// A refused key says what to check.
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := client.WriteConfig(bad, client.Config{Endpoint: srv.URL, Key: "sk_nope:nope"}); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	code = run(context.Background(), []string{"invocations", "--config", bad}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "(401 unauthorized); check the access key") {
		t.Errorf("unknown key: exit %d, %q", code, stderr.String())
	}
	// The saved key's account and scopes apply: it may not list queues.
	stderr.Reset()
	code = run(context.Background(), []string{"queues", "list", "--config", config}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "403 forbidden") {
		t.Errorf("send-only key listing queues: exit %d, %q", code, stderr.String())
	}
}

func TestKeyInDatabase(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewShared(t)
	k, err := createKeyInDatabase(context.Background(), os.Getenv(clienttest.EnvVar), srv.Schema, "000000000003",
		client.KeyOptions{Scopes: []string{"mq:admin"}, Description: "bootstrap"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL, k.ID, k.Secret, client.WithAccount("000000000003"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys.List(context.Background())
	if err != nil || len(keys) != 1 || keys[0].ID != k.ID || keys[0].Description != "bootstrap" {
		t.Errorf("keys of the bootstrap key's account: %+v, %v", keys, err)
	}
}

func TestCLIAdmin(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("queues", "create", "events")

	// Keys.
	var nk client.NewKey
	c.json(&nk, "keys", "create", "--scope", "mq:send,mq:receive", "--queues", "orders-*", "--description", "ci")
	if nk.ID == "" || nk.Secret == "" {
		t.Fatalf("keys create: %+v", nk)
	}
	if out := c.ok("keys", "list"); !strings.Contains(out, nk.ID) || !strings.Contains(out, "mq:send,mq:receive") || !strings.Contains(out, "orders-*") {
		t.Errorf("keys list:\n%s", out)
	}
	c.ok("keys", "revoke", nk.ID)
	var keys struct{ Keys []client.Key }
	c.json(&keys, "keys", "list")
	for _, k := range keys.Keys {
		if k.ID == nk.ID && k.RevokedAt == nil {
			t.Errorf("revoked key not marked: %+v", k)
		}
	}
	if out := c.ok("keys", "create"); !strings.Contains(out, "secret: ") || !strings.Contains(out, "export SLUICE_KEY=") {
		t.Errorf("keys create for people:\n%s", out)
	}

	// Hooks.
	if out := c.ok("hooks", "create", "gh", "--queue", "events", "--verify", "github", "--secret-env", hookSecretEnv); !strings.Contains(out, "/hooks/000000000001/gh") {
		t.Errorf("hooks create: %q", out)
	}
	var hooks struct{ Hooks []client.Hook }
	c.json(&hooks, "hooks", "list")
	if len(hooks.Hooks) != 1 || hooks.Hooks[0].SecretCount != 1 || hooks.Hooks[0].Verify != "github" {
		t.Errorf("hooks list: %+v", hooks)
	}
	c.ok("hooks", "delete", "gh")
	c.fails(1, `404`, "hooks", "delete", "gh")

	// Functions, via the API.
	if out := c.ok("functions", "list"); !strings.Contains(out, "no functions") {
		t.Errorf("functions list, empty: %q", out)
	}
	module := filepath.Join(t.TempDir(), "trap.wasm")
	if err := os.WriteFile(module, wasmbuild.Handwritten("trap"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("functions", "deploy", "trapper", module); !strings.Contains(out, "deployed version 1") || !strings.Contains(out, "alias live now points at version 1") {
		t.Errorf("deploy: %q", out)
	}
	c.ok("functions", "deploy", "trapper", module, "--memory-mb", "32", "--env", "MODE=x")
	if out := c.ok("functions", "get", "trapper"); !strings.Contains(out, "aliases: live=2, rollback to: live=1") || !strings.Contains(out, "32 MB") {
		t.Errorf("get:\n%s", out)
	}
	var rb map[string]any
	c.json(&rb, "functions", "rollback", "trapper")
	if rb["version"] != float64(1) {
		t.Errorf("rollback: %v", rb)
	}
	c.ok("functions", "set-alias", "trapper", "canary", "2")
	var fns struct{ Functions []client.Function }
	c.json(&fns, "functions", "list")
	if len(fns.Functions) != 1 || fns.Functions[0].Aliases["live"] != 1 || fns.Functions[0].Aliases["canary"] != 2 {
		t.Errorf("functions list: %+v", fns)
	}
	c.fails(1, `404`, "functions", "rollback", "nope")

	var invs struct{ Invocations []client.Invocation }
	c.json(&invs, "invocations", "--function", "trapper", "--since", "1h")
	if len(invs.Invocations) != 0 {
		t.Errorf("invocations: %+v", invs)
	}
	if out := c.ok("invocations"); out != "no invocations\n" {
		t.Errorf("invocations, empty: %q", out)
	}
	var id int64
	if err := c.srv.Queue().Pool().QueryRow(context.Background(), `INSERT INTO `+c.srv.Schema+`.invocations (account, function, version,
		trigger_type, source, batch_size, started_at, duration_ms, outcome, error, message_ids)
		VALUES ($1, 'trapper', 1, 'queue', 'jobs', 2, now(), 3.5, 'failure', 'trap', '{4,5}') RETURNING id`,
		client.DefaultAccount).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("invocations", "get", strconv.FormatInt(id, 10)); !regexp.MustCompile(`outcome: +failure\n(.|\n)*messages: +4 5\n(.|\n)*error: +trap\n`).MatchString(out) {
		t.Errorf("invocations get:\n%s", out)
	}
	c.json(&invs, "invocations", "--before-id", strconv.FormatInt(id, 10))
	if len(invs.Invocations) != 0 {
		t.Errorf("invocations --before-id: %+v", invs)
	}
	c.fails(1, `invocation \d+ not found.*\(404 not_found\)`, "invocations", "get", strconv.FormatInt(id+1, 10))
}

func TestKVCommands(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	if out := c.ok("kv", "set", "sessions", "user/1", "token-1", "--ttl", "1h"); !strings.Contains(out, "set user/1 in store sessions (expires in 1h0m0s)") {
		t.Errorf("set: %q", out)
	}
	c.ok("kv", "set", "sessions", "user/2", "token-2")
	c.ok("kv", "set", "sessions", "other", "x")
	if out := c.ok("kv", "get", "sessions", "user/1"); out != "token-1\n" {
		t.Errorf("get: %q", out)
	}
	out := c.ok("kv", "list", "sessions", "--prefix", "user/")
	if !strings.Contains(out, "user/1") || !strings.Contains(out, "token-2") || strings.Contains(out, "other") {
		t.Errorf("list: %q", out)
	}
	var l client.KVList
	c.json(&l, "kv", "list", "sessions")
	if len(l.Entries) != 3 || l.Entries[0].Key != "other" || l.Entries[1].ExpiresAt == nil || l.Entries[2].ExpiresAt != nil {
		t.Errorf("list --json: %+v", l)
	}
	// Pages: the table says how to get the next one.
	out = c.ok("kv", "list", "sessions", "--limit", "2")
	more := "more: sluice kv list sessions --limit 2 --after-base64 " + base64.StdEncoding.EncodeToString([]byte("user/1"))
	if !strings.Contains(out, "other") || !strings.Contains(out, more) {
		t.Errorf("list --limit 2: %q, want it to end with %q", out, more)
	}
	out = c.ok("kv", "list", "sessions", "--limit", "2", "--after-base64", base64.StdEncoding.EncodeToString([]byte("user/1")))
	if !strings.Contains(out, "user/2") || strings.Contains(out, "user/1") || strings.Contains(out, "more:") {
		t.Errorf("list --after-base64: %q", out)
	}
	if out := c.ok("kv", "list", "sessions", "--after", "user/1"); !strings.Contains(out, "user/2") || strings.Contains(out, "other") {
		t.Errorf("list --after: %q", out)
	}
	c.fails(2, "not both", "kv", "list", "sessions", "--after", "a", "--after-base64", "YQ==")
	c.ok("kv", "delete", "sessions", "other")
	c.fails(1, "not found", "kv", "get", "sessions", "other")
	c.fails(1, "not found", "kv", "delete", "sessions", "other")
	c.fails(2, "missing VALUE", "kv", "set", "sessions", "k")
	c.fails(2, "store name", "kv", "get", "bad.store", "k")
}

// sluice deploy prints the app and its plan (--dry-run changing nothing),
// refuses to drop a queue holding messages without --force, and sluice
// apps lists, shows and deletes apps.
func TestCLIAppsAndPlan(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trap.wasm"), wasmbuild.Handwritten("trap"), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "sluice.yaml")
	write := func(text string) {
		if err := os.WriteFile(manifest, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("queues:\n  orders: {}\n  spare: {}\nfunctions:\n  f: {wasm: trap.wasm}\ntriggers:\n  - {queue: orders, function: f}\n")
	out := c.ok("deploy", "-f", manifest, "--dry-run")
	for _, want := range []string{"app shop (the manifest's folder name", "plan (dry run", "+ queue orders (create)", "+ function f (create)",
		"app shop: 4 to create, 0 to update, 0 to delete, 0 unchanged", "nothing was changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	c.fails(1, `no app shop`, "apps", "show", "shop")
	out = c.ok("deploy", "-f", manifest)
	if !strings.Contains(out, "+ trigger queue:orders:f (create)") || !strings.Contains(out, "app shop deployed") {
		t.Errorf("deploy output:\n%s", out)
	}
	c.ok("mq", "send", "spare", "--body", `{"n": 1}`)
	c.ok("queues", "create", "by-hand")

	write("app: shop\nqueues:\n  orders: {visibility_timeout_seconds: 60}\nfunctions:\n  f: {wasm: trap.wasm}\ntriggers:\n  - {queue: orders, function: f}\n")
	c.fails(1, `deleting queue spare \(1\) would lose 1 messages.*--force`, "deploy", "-f", manifest)
	out = c.ok("deploy", "-f", manifest, "--dry-run", "--force")
	if !strings.Contains(out, "~ queue orders (update): visibility_timeout_seconds 30 → 60") || !strings.Contains(out, "- queue spare (delete): 1 messages lost") {
		t.Errorf("dry run with --force:\n%s", out)
	}

	var apps struct{ Apps []client.AppSummary }
	c.json(&apps, "apps", "list")
	if len(apps.Apps) != 1 || apps.Apps[0] != (client.AppSummary{Name: "shop", Queues: 2, Functions: 1, Triggers: 1}) {
		t.Errorf("apps list: %+v", apps.Apps)
	}
	if out := c.ok("apps", "list"); !strings.Contains(out, "shop") {
		t.Errorf("apps list:\n%s", out)
	}
	out = c.ok("apps", "show", "shop")
	for _, want := range []string{"queue", "orders", "spare", "function", "trigger", "queue:orders:f"} {
		if !strings.Contains(out, want) {
			t.Errorf("apps show lacks %q:\n%s", want, out)
		}
	}
	c.fails(1, `would lose 1 messages`, "apps", "delete", "shop")
	out = c.ok("apps", "delete", "shop", "--force")
	if !strings.Contains(out, "- queue spare (delete): 1 messages lost") || !strings.Contains(out, "deleted app shop") {
		t.Errorf("apps delete:\n%s", out)
	}
	if out := c.ok("apps", "list"); !strings.Contains(out, "no apps") {
		t.Errorf("apps list after delete:\n%s", out)
	}
	if out := c.ok("queues", "list"); !strings.Contains(out, "by-hand") || strings.Contains(out, "orders") {
		t.Errorf("queues after deleting the app: %s; want by-hand only", out)
	}
}

// `sluice help CMD` answers every command with its usage on stdout and
// exit 0, without a database, a login or a running server.
func TestHelpForEveryCommand(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"help", c.name}, &stdout, &stderr)
		if code != 0 || !strings.Contains(stdout.String(), "usage: sluice "+c.name) {
			t.Errorf("sluice help %s: exit %d, stdout %q, stderr %q", c.name, code, stdout.String(), stderr.String())
		}
	}
}
