package deploycmd_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/cmd/sluice/internal/deploycmd"
	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
)

// `sluice deploy` with DATABASE_URL migrates a fresh schema and applies
// the manifest through package deploy's database target: the queue, the
// function (compiled before it is stored), its trigger and a hook all
// exist afterwards; a second deploy changes nothing; a hook whose queue
// is missing is refused as the server's API refuses it.
func TestToDatabase(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.Schema(t) // created empty: the deploy migrates it
	url := os.Getenv(pgtest.EnvVar)
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trap.wasm"), wasmbuild.Handwritten("trap"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Setenv("SLUICE_DEPLOYCMD_TEST_SECRET", "whsec-deploycmd")
	write := func(yaml string) string {
		path := filepath.Join(dir, "sluice.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write(`
queues:
  orders: {max_receive_count: 3}
functions:
  trapper: {wasm: trap.wasm, memory_mb: 16}
triggers:
  - {queue: orders, function: trapper}
hooks:
  gh: {queue: orders, verify: github, secret_env: SLUICE_DEPLOYCMD_TEST_SECRET}
`)
	var out bytes.Buffer
	if err := deploycmd.ToDatabase(ctx, path, url, schema, pgqueue.DefaultAccount, deploy.Options{}, &out); err != nil {
		t.Fatalf("deploy: %v\n%s", err, out.String())
	}
	for _, want := range []string{"trapper: reading trap.wasm… ", "trapper: storing and compiling", "live as version 1", "plan:", " deployed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("deploy output lacks %q:\n%s", want, out.String())
		}
	}

	queue, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if q, err := queue.GetQueue(ctx, pgqueue.DefaultAccount, "orders"); err != nil || q.Settings.MaxReceiveCount != 3 {
		t.Errorf("queue orders = %+v, %v; want max receive count 3", q, err)
	}
	registry, err := functions.NewRegistry(pool, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := registry.Versions(ctx, pgqueue.DefaultAccount, "trapper"); err != nil || len(vs) != 1 || vs[0].Config.MemoryMiB != 16 {
		t.Errorf("trapper versions = %+v, %v; want one with 16 MiB", vs, err)
	}
	store, err := triggers.NewStore(pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := store.List(ctx, pgqueue.DefaultAccount); err != nil || len(ts) != 1 || ts[0].Function != "trapper" {
		t.Errorf("triggers = %+v, %v; want the one on trapper", ts, err)
	}
	hooks, err := triggers.NewHookStore(queue)
	if err != nil {
		t.Fatal(err)
	}
	if hs, err := hooks.List(ctx, pgqueue.DefaultAccount); err != nil || len(hs) != 1 || hs[0].SecretCount != 1 {
		t.Errorf("hooks = %+v, %v; want gh with one secret", hs, err)
	}

	out.Reset()
	if err := deploycmd.ToDatabase(ctx, path, url, schema, pgqueue.DefaultAccount, deploy.Options{}, &out); err != nil || !strings.Contains(out.String(), "no changes") {
		t.Errorf("second deploy: %v\n%s\nwant no changes", err, out.String())
	}

	out.Reset()
	bad := write(`
queues:
  orders: {}
hooks:
  gh2: {queue: missing, verify: none}
`)
	err = deploycmd.ToDatabase(ctx, bad, url, schema, pgqueue.DefaultAccount, deploy.Options{}, &out)
	if err == nil || !strings.Contains(err.Error(), "hook gh2") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("deploying a hook on a missing queue: %v, want an error naming the hook and the queue", err)
	}
	if testing.Verbose() {
		t.Logf("hook on a missing queue: %v", err)
	}
}
