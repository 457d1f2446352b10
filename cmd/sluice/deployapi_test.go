package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/server"
)

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

func changeList(ch []server.Change) string {
	s := make([]string, len(ch))
	for i, c := range ch {
		s[i] = c.String()
	}
	return strings.Join(s, "\n")
}

func TestApplyViaAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.New(t)
	c := srv.Client(t)
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
	if _, err := srv.Apply(ctx, client.DefaultAccount, old); err != nil {
		t.Fatal(err)
	}

	m := writeManifest(t, dir, fmt.Sprintf(`
queues:
  jobs: {max_receive_count: 3}
  mail: {visibility_timeout_seconds: 60}
functions:
  trapper: {wasm: trap.wasm, memory_mb: 32, timeout: 2s, env: {MODE: x}}
triggers:
  - {queue: jobs, function: trapper, batch_size: 5, batch_window: 50ms, backoff: {initial: 1s, max: 5s}}
  - {cron: "@every 1h", enqueue: {queue: mail, body: {report: true}}}
hooks:
  gh: {queue: jobs, verify: github, secret_env: %s}
`, hookSecretEnv))
	changes, err := applyViaAPI(ctx, c, m)
	if err != nil {
		t.Fatalf("%v after:\n%s", err, changeList(changes))
	}
	got := changeList(changes)
	for _, want := range []string{
		"queue jobs: updated", "queue mail: created", "hook gh: created",
		"function trapper: deployed (version 2, live → 2)", "trigger queue:jobs:trapper: applied",
		"trigger queue:old:trapper: removed (no longer in the manifest)", "hook legacy: removed (no longer in the manifest)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("changes lack %q:\n%s", want, got)
		}
	}
	q, err := c.Queues.Get(ctx, "jobs")
	if err != nil || q.MaxReceiveCount != 3 {
		t.Errorf("jobs: %+v %v", q, err)
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
	again, err := applyViaAPI(ctx, c, m)
	if err != nil || len(again) != 0 {
		t.Errorf("second apply: %v\n%s", err, changeList(again))
	}
}
