package deploy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/deploy"
	"github.com/sluicehq/sluice/functions/manifest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
)

// appManifest is a whole app named app: a queue, a function, a trigger
// and a hook, every name prefixed with the app's; extra is appended.
func appManifest(t *testing.T, dir, app, extra string) *manifest.Manifest {
	t.Helper()
	d := filepath.Join(dir, app)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return writeManifest(t, d, fmt.Sprintf(`
app: %[1]s
queues:
  %[1]s-in: {max_receive_count: 3}
functions:
  %[1]s-fn: {wasm: trap.wasm}
triggers:
  - {queue: %[1]s-in, function: %[1]s-fn}
hooks:
  %[1]s-hook: {queue: %[1]s-in, verify: github, secret_env: %[2]s}
%[3]s`, app, hookSecretEnv, extra))
}

// owners lists every resource of the account with its app, as
// "kind name app" lines, for comparing before and after.
func owners(t *testing.T, c *client.Client) string {
	t.Helper()
	st, err := c.Apps.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range st.Resources {
		out = append(out, r.Kind+" "+r.Name+" "+r.App+" "+fmt.Sprint(r.Fields))
	}
	return strings.Join(out, "\n")
}

// ownedBy keeps the lines of owners() of app.
func ownedBy(all, app string) string {
	var out []string
	for _, l := range strings.Split(all, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[2] == app {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Two apps deployed alternately, directly and through the API, never
// touch each other's queues, functions, triggers or hooks, and a queue
// made by hand survives every deploy.
func TestAppsNeverTouchEachOther(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"db", "api"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			srv := clienttest.New(t)
			c := srv.Client(t)
			dir := t.TempDir()
			if _, err := c.Queues.Create(ctx, "by-hand", client.QueueSettings{}); err != nil {
				t.Fatal(err)
			}
			apply := func(m *manifest.Manifest) []string {
				t.Helper()
				changes, err := applyVia(ctx, via, srv, c, m)
				if err != nil {
					t.Fatalf("apply %s: %v after %s", m.App, err, changeList(changes))
				}
				return changes
			}
			apply(appManifest(t, dir, "shop", ""))
			shop := ownedBy(owners(t, c), "shop")
			if strings.Count(shop, "\n") != 3 {
				t.Fatalf("shop owns:\n%s\nwant a queue, a function, a trigger and a hook", shop)
			}
			apply(appManifest(t, dir, "blog", ""))
			blog := ownedBy(owners(t, c), "blog")
			if got := ownedBy(owners(t, c), "shop"); got != shop {
				t.Errorf("deploying blog changed shop:\n%s\nwas:\n%s", got, shop)
			}
			// shop changes its queue and adds one; blog's stay as they were.
			changes := apply(writeManifest(t, filepath.Join(dir, "shop"), fmt.Sprintf(`
app: shop
queues:
  shop-in: {max_receive_count: 4}
  shop-more: {}
functions:
  shop-fn: {wasm: trap.wasm, memory_mb: 32}
triggers:
  - {queue: shop-in, function: shop-fn}
hooks:
  shop-hook: {queue: shop-in, verify: github, secret_env: %s}
`, hookSecretEnv)))
			if got := changeList(changes); got != "~ queue shop-in (update): max_receive_count 3 → 4; + queue shop-more (create); ~ function shop-fn (update): memory_mb 64 → 32" {
				t.Errorf("shop v2: %s", got)
			}
			if got := ownedBy(owners(t, c), "blog"); got != blog {
				t.Errorf("deploying shop changed blog:\n%s\nwas:\n%s", got, blog)
			}
			// An empty shop manifest removes all of shop, and nothing else.
			changes = apply(writeManifest(t, filepath.Join(dir, "shop"), "app: shop\n"))
			if len(changes) != 5 {
				t.Errorf("empty shop: %s; want its 2 queues, function, trigger and hook deleted", changeList(changes))
			}
			all := owners(t, c)
			if ownedBy(all, "shop") != "" || ownedBy(all, "blog") != blog || !strings.Contains(all, "queue by-hand  ") {
				t.Errorf("after removing shop:\n%s\nwant blog's as before and by-hand", all)
			}
			// A manifest of another app naming blog's queue is refused,
			// naming blog.
			_, err := applyVia(ctx, via, srv, c, writeManifest(t, filepath.Join(dir, "shop"), "app: shop\nqueues:\n  blog-in: {}\n"))
			if err == nil || !strings.Contains(err.Error(), "queue blog-in (app blog)") {
				t.Errorf("claiming blog's queue: %v, want an error naming app blog", err)
			}
			if ownedBy(owners(t, c), "blog") != blog {
				t.Errorf("a refused deploy changed blog")
			}
		})
	}
}

// dump is every row of every table of the schema, as JSON, table by table,
// but for the sampler's statistics (depth_samples, queue_minutes).
func dump(t *testing.T, srv *clienttest.Server) string {
	t.Helper()
	ctx := context.Background()
	pool := srv.Queue().Pool()
	rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`, srv.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, table := range tables {
		if table == "depth_samples" || table == "queue_minutes" {
			// The server's sampler writes these on its own clock (a row
			// per queue at each minute), whatever a deploy does.
			continue
		}
		q := fmt.Sprintf(`SELECT coalesce(string_agg(to_jsonb(t)::text, E'\n' ORDER BY to_jsonb(t)::text), '') FROM %s.%s t`,
			pgx.Identifier{srv.Schema}.Sanitize(), pgx.Identifier{table}.Sanitize())
		var rowsText string
		if err := pool.QueryRow(ctx, q).Scan(&rowsText); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s\n%s\n", table, rowsText)
	}
	return b.String()
}

// A dry run returns the plan and leaves every table byte-identical, even
// when the plan creates, updates and deletes (a non-empty queue, with
// --force) and adopts.
func TestDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.New(t)
	c := srv.Client(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "shop"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := writeManifest(t, filepath.Join(dir, "shop"), "app: shop\nqueues:\n  shop-in: {}\n  shop-old: {}\nfunctions:\n  shop-fn: {wasm: trap.wasm}\n")
	if _, err := applyDB(ctx, srv, c.Account(), m); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MQ.Send(ctx, "shop-old", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Queues.Create(ctx, "adopted", client.QueueSettings{}); err != nil {
		t.Fatal(err)
	}
	nextText := fmt.Sprintf(`
app: shop
queues:
  shop-in: {max_receive_count: 3}
  adopted: {}
functions:
  shop-fn: {wasm: trap.wasm, memory_mb: 32}
triggers:
  - {queue: shop-in, function: shop-fn}
hooks:
  shop-hook: {queue: shop-in, verify: github, secret_env: %s}
`, hookSecretEnv)
	next := writeManifest(t, filepath.Join(dir, "shop"), nextText)
	var first string
	for _, via := range []string{"db", "api", "plan endpoint"} {
		before := dump(t, srv)
		var plan deploy.Plan
		var err error
		switch via {
		case "plan endpoint":
			var wp client.DeployPlan
			sum := sha256.Sum256(wasmbuild.Handwritten("trap"))
			wp, err = c.Apps.Plan(ctx, "shop", client.PlanRequest{Manifest: nextText, Force: true,
				Modules: map[string]string{"shop-fn": hex.EncodeToString(sum[:])}, HookSecrets: map[string]int{"shop-hook": 1}})
			plan = deploy.PlanFromWire(wp)
		default:
			var target deploy.Target = srv.DeployTarget(c.Account())
			if via == "api" {
				target = deploy.APITarget(c)
			}
			plan, err = deploy.Apply(ctx, target, c.Account(), next, deploy.ManifestModules(next, nil, nil), deploy.Options{DryRun: true, Force: true})
		}
		if err != nil {
			t.Fatalf("%s: %v", via, err)
		}
		if plan.Count(deploy.ActionCreate) == 0 || plan.Count(deploy.ActionUpdate) == 0 || plan.Count(deploy.ActionDelete) == 0 {
			t.Errorf("%s: plan %s: want creates, updates and deletes", via, plan.Summary())
		}
		var text strings.Builder
		plan.Print(&text)
		if first == "" {
			first = text.String()
		} else if text.String() != first {
			t.Errorf("%s: plan\n%s\ndiffers from the database's:\n%s", via, text.String(), first)
		}
		if after := dump(t, srv); after != before {
			t.Errorf("%s: the dry run changed the database:\nbefore:\n%s\nafter:\n%s", via, before, after)
		}
	}
	// Without force, the plan endpoint refuses like a deploy, with the count.
	_, err := c.Apps.Plan(ctx, "shop", client.PlanRequest{Manifest: "app: shop\n", Modules: map[string]string{}})
	if !client.IsConflict(err) || !strings.Contains(err.Error(), "shop-old (1)") {
		t.Errorf("plan dropping a non-empty queue without force: %v; want a conflict counting 1 message", err)
	}
	// A function without its module's SHA-256 is a bad request.
	if _, err := c.Apps.Plan(ctx, "shop", client.PlanRequest{Manifest: nextText}); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("plan without module digests: %v", err)
	}
}

// Removing a queue that still holds messages is refused without Force,
// with the count, and changes nothing; with Force it goes.
func TestPruneNonEmptyQueueNeedsForce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.New(t)
	c := srv.Client(t)
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := applyDB(ctx, srv, c.Account(), writeManifest(t, dir, "queues:\n  full: {max_receive_count: 1}\n  empty: {}\n")); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.MQ.Send(ctx, "full", map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	// One message in flight, one ready, one dead: all count.
	if _, err := c.MQ.Receive(ctx, "full", client.ReceiveOptions{MaxMessages: 1, VisibilityTimeoutSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Queue().Send(ctx, c.Account(), "full", pgqueue.NewMessage{Body: []byte(`{"dead":true}`)}); err != nil {
		t.Fatal(err)
	}
	ms, err := srv.Queue().Receive(ctx, c.Account(), "full", pgqueue.ReceiveOptions{Max: 1})
	if err != nil || len(ms) != 1 {
		t.Fatalf("receive: %v, %v", ms, err)
	}
	if moved, err := srv.Queue().Fail(ctx, c.Account(), "full", []pgqueue.Failure{{Sequence: ms[0].Sequence, Receipt: ms[0].Receipt}}); err != nil || len(moved) != 1 {
		t.Fatalf("fail: %v, %v", moved, err)
	}
	n, err := srv.Queue().MessageCount(ctx, c.Account(), "full")
	if err != nil || n != 4 {
		t.Fatalf("message count = %d, %v; want 4", n, err)
	}
	m := writeManifest(t, dir, "queues:\n  new: {}\n")
	for _, via := range []string{"db", "api"} {
		_, err := applyVia(ctx, via, srv, c, m)
		var loss *deploy.DataLossError
		if !errors.As(err, &loss) || loss.Queues["full"] != 4 || !strings.Contains(err.Error(), "full (4)") || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("%s: prune of a non-empty queue: %v; want a refusal counting 4 messages and naming --force", via, err)
		}
		if _, ok := loss.Queues["empty"]; ok {
			t.Errorf("%s: the empty queue is counted as a loss: %v", via, err)
		}
		if _, err := c.Queues.Get(ctx, "new"); !client.IsNotFound(err) {
			t.Errorf("%s: a refused deploy created queue new: %v", via, err)
		}
	}
	p, err := srv.Apply(ctx, c.Account(), m, deploy.ManifestModules(m, nil, nil), deploy.Options{Force: true})
	if err != nil || p.Count(deploy.ActionDelete) != 2 {
		t.Fatalf("forced: %v, %s", err, p.Summary())
	}
	if _, err := c.Queues.Get(ctx, "full"); !client.IsNotFound(err) {
		t.Errorf("queue full after a forced deploy: %v", err)
	}
}
