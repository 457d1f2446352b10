package deploy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
)

// hookSecretEnv names a variable holding a webhook secret for the hooks
// the tests' manifests declare.
const hookSecretEnv = "SLUICE_DEPLOY_TEST_HOOK_SECRET"

// Not t.Setenv: the tests are parallel, and the name is theirs.
func init() { os.Setenv(hookSecretEnv, "s3cret-s3cret-s3cret") }

// parseManifest parses a manifest whose paths are relative to examples/.
func parseManifest(t *testing.T, text string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	m.Dir = filepath.Join(root, "examples")
	return m
}

// writeManifest writes a manifest with a trap.wasm beside it and reads it.
func writeManifest(t *testing.T, dir, yaml string) *manifest.Manifest {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "trap.wasm"), wasmbuild.Handwritten("trap"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// applyDB applies m to account on srv's database, building its Go
// packages as the CLI does.
func applyDB(ctx context.Context, srv *clienttest.Server, account string, m *manifest.Manifest) ([]string, error) {
	p, err := srv.Apply(ctx, account, m, deploy.ManifestModules(m, wasmbuild.BuildDir, wasmbuild.RunCommand), deploy.Options{})
	return changed(p), err
}

// applyAPI applies m through the HTTP API as c.
func applyAPI(ctx context.Context, c *client.Client, m *manifest.Manifest) ([]string, error) {
	p, err := deploy.Apply(ctx, deploy.APITarget(c), c.Account(), m, deploy.ManifestModules(m, nil, nil), deploy.Options{})
	return changed(p), err
}

// changed lists the steps of p that change something.
func changed(p deploy.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		if s.Action != deploy.ActionUnchanged {
			out = append(out, s.String())
		}
	}
	return out
}

func changeList(cs []string) string { return strings.Join(cs, "; ") }

// Applying a manifest creates what it declares; applying it again changes
// nothing; editing it changes just the edited parts, and what left it is
// removed.
func TestApplyIsDeclarativeAndIdempotent(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewShared(t)
	ctx := context.Background()
	account := fmt.Sprintf("%012d", rand.Int64N(1e12))
	if err := srv.Queue().CreateAccount(ctx, account, "apply test"); err != nil {
		t.Fatal(err)
	}
	v1 := fmt.Sprintf(`
queues:
  orders: {max_receive_count: 3}
functions:
  echo: {build: ./echo, reactor: true, env: {V: "1"}, emits: [orders]}
triggers:
  - {queue: orders, function: echo, batch_size: 5}
  - {cron: "@every 1h", enqueue: {queue: orders, body: {tick: true}}}
hooks:
  gh: {queue: orders, verify: github, secret_env: %s}
`, hookSecretEnv)
	changes, err := applyDB(ctx, srv, account, parseManifest(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"+ queue orders (create)", "+ function echo (create)",
		"+ trigger queue:orders:echo (create)", "+ hook gh (create)"}
	got := changeList(changes)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("first apply: changes %q lack %q", got, w)
		}
	}
	if len(changes) != 5 { // plus the cron trigger
		t.Errorf("first apply: %d changes (%s), want 5", len(changes), got)
	}

	if vs, err := srv.Registry().Versions(ctx, account, "echo"); err != nil || len(vs) != 1 || !slices.Equal(vs[0].Capabilities.Emits, []string{"orders"}) {
		t.Errorf("echo versions = %+v, %v; want one that may emit to orders", vs, err)
	}
	again, err := applyDB(ctx, srv, account, parseManifest(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("second apply changed %s, want nothing", changeList(again))
	}

	v2 := strings.NewReplacer(`V: "1"`, `V: "2"`, "max_receive_count: 3", "max_receive_count: 4").Replace(v1)
	v2 = v2[:strings.Index(v2, "  - {cron:")] + v2[strings.Index(v2, "hooks:"):]
	changes, err = applyDB(ctx, srv, account, parseManifest(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	got = changeList(changes)
	for _, w := range []string{"~ queue orders (update): max_receive_count 3 → 4", "~ function echo (update): env {V}#", " (delete)"} {
		if !strings.Contains(got, w) {
			t.Errorf("edited apply: changes %q lack %q", got, w)
		}
	}
	q, err := srv.Queue().GetQueue(ctx, account, "orders")
	if err != nil || q.Settings.MaxReceiveCount != 4 {
		t.Errorf("orders after edit = %+v, %v; want max receive count 4", q.Settings, err)
	}
	ts, err := srv.Triggers().List(ctx, account)
	if err != nil || len(ts) != 1 {
		t.Errorf("triggers after edit = %d, %v; want 1", len(ts), err)
	}
}

// A setting out of range is refused when the manifest is read, before
// anything is applied; one that reaches the database anyway (a Manifest
// built in Go) is refused there.
func TestApplyRejectsWhatTheDatabaseRefuses(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewShared(t)
	ctx := context.Background()
	if _, err := manifest.Parse([]byte("queues:\n  q: {visibility_timeout_seconds: 99999}\n")); err == nil ||
		!strings.Contains(err.Error(), "visibility_timeout_seconds 99999 is out of range 0-43200") {
		t.Errorf("parse out-of-range queue setting: err = %v, want one naming visibility_timeout_seconds and its range", err)
	}
	tooLong := 99999
	m := &manifest.Manifest{Queues: map[string]manifest.Queue{"q": {VisibilityTimeoutSeconds: &tooLong}}}
	_, err := applyDB(ctx, srv, pgqueue.DefaultAccount, m)
	if err == nil || !strings.Contains(err.Error(), "visibility_timeout_seconds") {
		t.Errorf("apply out-of-range queue setting: err = %v, want one naming visibility_timeout_seconds", err)
	}
}

// A deploy is all or nothing: every build runs before anything is
// applied, so a failed build (a command, or a Go package that does not
// compile) leaves the account as it was, queues included.
func TestApplyFailedBuildChangesNothing(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewShared(t)
	ctx := context.Background()
	c := srv.Client(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"broken/go.mod":  "module example.com/broken\n\ngo 1.24\n",
		"broken/main.go": "package main\n\nfunc main() { undefined() }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, fn, want string }{
		{"command", "{build: {command: 'echo no compiler >&2; exit 1', output: f.wasm}}", "no compiler"},
		{"go", "{build: ./broken}", "undefined"},
	} {
		m := writeManifest(t, dir, fmt.Sprintf(`
queues:
  atomic-%[1]s: {}
functions:
  a-trapper: {wasm: trap.wasm}
  z-%[1]s: %[2]s
triggers:
  - {queue: atomic-%[1]s, function: a-trapper}
`, tc.name, tc.fn))
		changes, err := applyDB(ctx, srv, pgqueue.DefaultAccount, m)
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(changes) != 0 {
			t.Errorf("%s: apply with a failing build = %v, %v; want no changes and an error with %q", tc.name, changeList(changes), err, tc.want)
		}
		if _, err := c.Queues.Get(ctx, "atomic-"+tc.name); !client.IsNotFound(err) {
			t.Errorf("%s: queue of a failed apply: %v, want not found", tc.name, err)
		}
		if _, err := c.Functions.Get(ctx, "a-trapper"); !client.IsNotFound(err) {
			t.Errorf("%s: function of a failed apply: %v, want not found", tc.name, err)
		}
	}
}

// queueCalls records the requests on one queue (a GET of
// .../queues/{name} counts its messages) and the creates of queues, as
// "METHOD path", and sends every request on.
type queueCalls struct {
	mu    sync.Mutex
	calls []string
}

func (r *queueCalls) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	if strings.Contains(p, "/apps/") { // an app's claim on a queue
		return http.DefaultTransport.RoundTrip(req)
	}
	if _, name, ok := strings.Cut(p, "/queues/"); ok && !strings.Contains(name, "/") || strings.HasSuffix(p, "/queues") && req.Method == http.MethodPost {
		r.mu.Lock()
		r.calls = append(r.calls, req.Method+" "+p)
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// take returns the calls recorded since the last take.
func (r *queueCalls) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

func TestApplyViaAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.NewShared(t)
	calls := &queueCalls{}
	c := srv.Client(t, client.WithHTTPClient(&http.Client{Transport: calls}))
	dir := t.TempDir()

	// An earlier deploy straight to the database left a manifest-owned
	// trigger and hook that the new manifest drops.
	old := writeManifest(t, dir, fmt.Sprintf(`
queues:
  jobs: {}
  old: {}
functions:
  trapper: {wasm: trap.wasm}
triggers:
  - {queue: old, function: trapper}
hooks:
  legacy: {queue: old, verify: github, secret_env: %s}
`, hookSecretEnv))
	if _, err := applyDB(ctx, srv, client.DefaultAccount, old); err != nil {
		t.Fatal(err)
	}

	m := writeManifest(t, dir, fmt.Sprintf(`
queues:
  jobs: {max_receive_count: 3}
  mail: {visibility_timeout_seconds: 60}
functions:
  trapper: {wasm: trap.wasm, memory_mb: 32, timeout: 2s, env: {MODE: x}, emits: [jobs, "mail-*"]}
triggers:
  - {queue: jobs, function: trapper, batch_size: 5, batch_window: 50ms, backoff: {initial: 1s, max: 5s}}
  - {cron: "@every 1h", enqueue: {queue: mail, body: {report: true}}}
hooks:
  gh: {queue: jobs, verify: github, secret_env: %s}
`, hookSecretEnv))
	changes, err := applyAPI(ctx, c, m)
	if err != nil {
		t.Fatalf("%v after:\n%s", err, changeList(changes))
	}
	// Queues are created and changed without reading them: a queue's
	// GET counts its messages, under the server's bound on such reads.
	// Only the queue the plan deletes is read, for the messages it holds.
	queues := "/v1/accounts/000000000001/queues"
	if got, want := calls.take(), []string{"GET " + queues + "/old", "PATCH " + queues + "/jobs", "POST " + queues, "DELETE " + queues + "/old"}; !slices.Equal(got, want) {
		t.Errorf("the apply's calls on queues: %q, want %q", got, want)
	}
	got := changeList(changes)
	for _, want := range []string{
		"~ queue jobs (update): max_receive_count 5 → 3", "+ queue mail (create)", "+ hook gh (create)",
		"~ function trapper (update): ", "+ trigger queue:jobs:trapper (create)",
		"- trigger queue:old:trapper (delete)", "- hook legacy (delete)", "- queue old (delete): 0 messages lost",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("changes lack %q:\n%s", want, got)
		}
	}
	q, err := c.Queues.Get(ctx, "jobs")
	if err != nil || q.MaxReceiveCount != 3 {
		t.Errorf("jobs: %+v %v", q, err)
	}
	if f, err := c.Functions.Get(ctx, "trapper"); err != nil || len(f.Versions) != 2 || !slices.Equal(f.Versions[1].Emits, []string{"jobs", "mail-*"}) {
		t.Errorf("trapper = %+v, %v; want its version 2 to emit to jobs and mail-*", f, err)
	}
	trs, err := c.Triggers.List(ctx)
	if err != nil || len(trs) != 2 {
		t.Fatalf("triggers: %+v %v", trs, err)
	}
	for _, tr := range trs {
		if tr.Kind == "queue" && (tr.BatchSize != 5 || tr.BatchWindowMS != 50 || tr.BackoffInitialMS != 1000 || tr.BackoffMaxMS != 5000) {
			t.Errorf("queue trigger: %+v", tr)
		}
		if tr.Kind == "cron" && (tr.CronSpec != "@every 1h" || tr.Queue != "mail" || string(tr.EnqueueBody) != `{"report":true}`) {
			t.Errorf("cron trigger: %+v", tr)
		}
	}

	// Applying the same manifest again changes nothing.
	again, err := applyAPI(ctx, c, m)
	if err != nil || len(again) != 0 {
		t.Errorf("second apply: %v\n%s", err, changeList(again))
	}
}

// allowed_outbound_hosts and stores reach the registry through both
// targets, and a change to them alone deploys a new version.
func TestApplyCarriesCapabilities(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewShared(t)
	ctx := context.Background()
	c := srv.Client(t)
	dir := t.TempDir()
	for i, caps := range []string{
		`allowed_outbound_hosts: ["http://127.0.0.1:*"], stores: [counts]`,
		`allowed_outbound_hosts: ["http://127.0.0.1:*", "https://api.example.com"], stores: [counts, sessions]`,
	} {
		m := writeManifest(t, dir, "functions:\n  f: {wasm: trap.wasm, "+caps+"}\n")
		var err error
		if i == 0 {
			_, err = applyDB(ctx, srv, c.Account(), m)
		} else {
			_, err = applyAPI(ctx, c, m)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	vs, err := srv.Registry().Versions(ctx, c.Account(), "f")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || strings.Join(vs[0].Capabilities.Stores, ",") != "counts" ||
		strings.Join(vs[1].Capabilities.AllowedOutboundHosts, ",") != "http://127.0.0.1:*,https://api.example.com" ||
		strings.Join(vs[1].Capabilities.Stores, ",") != "counts,sessions" {
		t.Errorf("versions: %+v", vs)
	}
}

// Turning fifo on (or off) for an existing queue is an update the plan
// shows and the apply makes, through the database and through the API.
func TestApplyChangesFifo(t *testing.T) {
	t.Parallel()
	srv := clienttest.NewShared(t)
	ctx := context.Background()
	c := srv.Client(t)
	for _, via := range []string{"db", "api"} {
		q := "fifo-" + via
		apply := func(text string) []string {
			t.Helper()
			m := parseManifest(t, text)
			m.App = "fifo-" + via
			var changes []string
			var err error
			if via == "db" {
				changes, err = applyDB(ctx, srv, c.Account(), m)
			} else {
				changes, err = applyAPI(ctx, c, m)
			}
			if err != nil {
				t.Fatalf("%s: apply %q: %v", via, text, err)
			}
			return changes
		}
		apply("queues: {" + q + ": {}}")
		for _, on := range []bool{true, false} {
			got := changeList(apply(fmt.Sprintf("queues: {%s: {fifo: %t}}", q, on)))
			if want := fmt.Sprintf("~ queue %s (update): fifo %t → %t", q, !on, on); !strings.Contains(got, want) {
				t.Errorf("%s: changes %q lack %q", via, got, want)
			}
			if stored, err := c.Queues.Get(ctx, q); err != nil || stored.Fifo != on {
				t.Errorf("%s: queue after the apply: fifo %v (%v), want %t", via, stored.Fifo, err, on)
			}
		}
	}
}

// A queue made by hand that a manifest names as it is joins the app with
// no write to its settings (a change of settings can cost a pass over its
// messages).
func TestApplyViaAPIAdoptsAQueueAsItIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.NewShared(t)
	calls := &queueCalls{}
	c := srv.Client(t, client.WithHTTPClient(&http.Client{Transport: calls}))
	if _, err := c.Queues.Create(ctx, "by-hand", client.QueueSettings{MaxReceiveCount: client.Int(7)}); err != nil {
		t.Fatal(err)
	}
	calls.take()
	m := writeManifest(t, t.TempDir(), "app: adopter\nqueues:\n  by-hand: {}\n  fresh: {}\n")
	changes, err := applyAPI(ctx, c, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := changeList(changes); !strings.Contains(got, "~ queue by-hand (update): app (none) → adopter") || !strings.Contains(got, "+ queue fresh (create)") {
		t.Errorf("changes:\n%s", got)
	}
	if got, want := calls.take(), []string{"POST /v1/accounts/000000000001/queues"}; !slices.Equal(got, want) {
		t.Errorf("the apply's calls on queues: %q, want %q", got, want)
	}
	if q, err := c.Queues.Get(ctx, "by-hand"); err != nil || q.MaxReceiveCount != 7 {
		t.Errorf("by-hand after the apply: %+v, %v; want its max_receive_count 7 kept", q, err)
	}
	if again, err := applyAPI(ctx, c, m); err != nil || len(again) != 0 {
		t.Errorf("second apply: %v\n%s", err, changeList(again))
	}
}

// A queue whose dead_letter_queue does not exist is refused, whether the
// apply creates it or changes it, with an error naming the missing queue.
func TestApplyViaAPIMissingDeadLetterQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.NewShared(t)
	c := srv.Client(t)
	dir := t.TempDir()
	if _, err := c.Queues.Create(ctx, "by-hand", client.QueueSettings{}); err != nil {
		t.Fatal(err)
	}
	for _, queue := range []string{"by-hand", "new"} {
		m := writeManifest(t, dir, "queues:\n  "+queue+": {dead_letter_queue: nowhere}\n")
		_, err := applyAPI(ctx, c, m)
		if err == nil || !strings.Contains(err.Error(), `invalid dead_letter_queue "nowhere"`) {
			t.Errorf("%s with a missing dead_letter_queue: %v, want an error naming it", queue, err)
		}
	}
}
