package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
)

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

func changeList(cs []Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return strings.Join(out, "; ")
}

// Applying a manifest creates what it declares; applying it again changes
// nothing; editing it changes just the edited parts, and what left it is
// removed.
func TestApplyIsDeclarativeAndIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	// Not t.Setenv: the test is parallel, and the name is its own.
	os.Setenv("APPLY_TEST_SECRET", "s3cret-s3cret-s3cret")
	t.Cleanup(func() { os.Unsetenv("APPLY_TEST_SECRET") })
	account := newAccount()
	if err := e.srv.Queue().CreateAccount(ctx, account, "apply test"); err != nil {
		t.Fatal(err)
	}
	const v1 = `
queues:
  orders: {max_receive_count: 3}
functions:
  echo: {build: ./echo, reactor: true, env: {V: "1"}}
triggers:
  - {queue: orders, function: echo, batch_size: 5}
  - {cron: "@every 1h", enqueue: {queue: orders, body: {tick: true}}}
hooks:
  gh: {queue: orders, verify: github, secret_env: APPLY_TEST_SECRET}
`
	changes, err := e.srv.Apply(ctx, account, parseManifest(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"queue orders: created", "function echo: deployed (version 1, live → 1)",
		"trigger queue:orders:echo: applied", "hook gh: created"}
	got := changeList(changes)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("first apply: changes %q lack %q", got, w)
		}
	}
	if len(changes) != 5 { // plus the cron trigger
		t.Errorf("first apply: %d changes (%s), want 5", len(changes), got)
	}

	again, err := e.srv.Apply(ctx, account, parseManifest(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("second apply changed %s, want nothing", changeList(again))
	}

	v2 := strings.NewReplacer(`V: "1"`, `V: "2"`, "max_receive_count: 3", "max_receive_count: 4").Replace(v1)
	v2 = v2[:strings.Index(v2, "  - {cron:")] + v2[strings.Index(v2, "hooks:"):]
	changes, err = e.srv.Apply(ctx, account, parseManifest(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	got = changeList(changes)
	for _, w := range []string{"queue orders: updated", "function echo: deployed (version 2, live → 2)", ": removed (no longer in the manifest)"} {
		if !strings.Contains(got, w) {
			t.Errorf("edited apply: changes %q lack %q", got, w)
		}
	}
	q, err := e.srv.Queue().GetQueue(ctx, account, "orders")
	if err != nil || q.Settings.MaxReceiveCount != 4 {
		t.Errorf("orders after edit = %+v, %v; want max receive count 4", q.Settings, err)
	}
	ts, err := e.srv.Triggers().List(ctx, account)
	if err != nil || len(ts) != 1 {
		t.Errorf("triggers after edit = %d, %v; want 1", len(ts), err)
	}
}

func TestApplyRejectsWhatTheDatabaseRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	m := parseManifest(t, "queues:\n  q: {visibility_timeout_seconds: 99999}\n")
	_, err := e.srv.Apply(ctx, pgqueue.DefaultAccount, m)
	if err == nil || !strings.Contains(err.Error(), "visibility_timeout_seconds") {
		t.Errorf("apply out-of-range queue setting: err = %v, want one naming visibility_timeout_seconds", err)
	}
	m = parseManifest(t, "functions:\n  f: {build: ../../outside}\n")
	if _, err := e.srv.Apply(ctx, pgqueue.DefaultAccount, m); err == nil || !strings.Contains(err.Error(), "outside the Sluice module") {
		t.Errorf("apply a build outside the module: err = %v", err)
	}
}
