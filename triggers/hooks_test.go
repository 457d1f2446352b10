package triggers_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/pgqueue/migrate"
	"github.com/sluicehq/sluice/triggers"
)

// serverMigrations is the server's migration line, read from its folder:
// its first migration creates the hooks tables (see RATIONALE.md).
var serverMigrations = migrate.NewLine("server", os.DirFS("../server"), "migrations")

// newHookStore returns a HookStore on a fresh schema with every line
// applied and a queue "events", and its queue client.
func newHookStore(t *testing.T) (*triggers.HookStore, *pgqueue.Client) {
	t.Helper()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations, functions.Migrations, triggers.Migrations, serverMigrations)
	qc, err := pgqueue.New(pool, pgqueue.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qc.CreateQueue(t.Context(), acct, "events", pgqueue.Settings{}); err != nil {
		t.Fatal(err)
	}
	hs, err := triggers.NewHookStore(qc)
	if err != nil {
		t.Fatal(err)
	}
	return hs, qc
}

func TestHookStore(t *testing.T) {
	t.Parallel()
	hs, _ := newHookStore(t)
	ctx := t.Context()
	created, err := hs.Put(ctx, triggers.Hook{Account: acct, Name: "gh", Queue: "events", Verify: "github", Secrets: []string{"s1", "s2"}})
	if err != nil || !created {
		t.Fatalf("Put = %v, %v; want created", created, err)
	}
	h, now, err := hs.Get(ctx, acct, "gh")
	if err != nil || h.Queue != "events" || h.Verify != "github" || len(h.Secrets) != 2 || h.Secrets[1] != "s2" ||
		h.SecretCount != 2 || h.Source != triggers.SourceAPI || h.CreatedAt.IsZero() || time.Since(now).Abs() > time.Minute {
		t.Fatalf("Get = %+v, %v, %v", h, now, err)
	}
	if created, err := hs.Put(ctx, triggers.Hook{Account: acct, Name: "gh", Queue: "other", Verify: "none", Source: triggers.SourceManifest}); err != nil || created {
		t.Fatalf("Put again = %v, %v; want replaced", created, err)
	}
	if _, err := hs.Put(ctx, triggers.Hook{Account: acct, Name: "a", Queue: "events", Verify: "standard", Secrets: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	list, err := hs.List(ctx, acct)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "gh" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if gh := list[1]; gh.Queue != "other" || gh.Verify != "none" || gh.Secrets != nil || gh.SecretCount != 0 ||
		gh.Source != triggers.SourceManifest || !gh.UpdatedAt.After(gh.CreatedAt) {
		t.Fatalf("listed %+v", gh)
	}
	if list[0].Secrets != nil || list[0].SecretCount != 1 {
		t.Fatalf("List shows secrets: %+v", list[0])
	}
	if list, err := hs.List(ctx, "000000000077"); err != nil || len(list) != 0 {
		t.Fatalf("List of another account = %+v, %v", list, err)
	}
	if _, err := hs.Put(ctx, triggers.Hook{Account: acct, Name: "bad", Queue: "events", Verify: "sha1"}); err == nil {
		t.Fatal("Put accepted a verify scheme the table refuses")
	}

	var he *triggers.HookError
	if _, err := hs.Put(ctx, triggers.Hook{Account: acct, Name: "many", Queue: "events", Verify: "github", Secrets: make([]string, 11)}); !errors.As(err, &he) || he.Field != "secrets" {
		t.Fatalf("Put with 11 secrets: %v, want a *HookError about secrets", err)
	}
	if _, _, err := hs.Get(ctx, acct, "many"); !errors.Is(err, triggers.ErrHookNotFound) {
		t.Fatalf("a refused hook was stored: Get = %v", err)
	}

	if err := hs.Delete(ctx, acct, "gh"); err != nil {
		t.Fatal(err)
	}
	if err := hs.Delete(ctx, acct, "gh"); !errors.Is(err, triggers.ErrHookNotFound) {
		t.Fatalf("second Delete: %v, want ErrHookNotFound", err)
	}
	if _, _, err := hs.Get(ctx, acct, "gh"); !errors.Is(err, triggers.ErrHookNotFound) {
		t.Fatalf("Get deleted: %v, want ErrHookNotFound", err)
	}
}

func TestHookStoreDeliver(t *testing.T) {
	t.Parallel()
	hs, qc := newHookStore(t)
	ctx := t.Context()
	seq, dup, err := hs.Deliver(ctx, acct, "gh", "events", "d-1", []byte(`{"n":1}`))
	if err != nil || dup || seq == 0 {
		t.Fatalf("Deliver = %d, %v, %v", seq, dup, err)
	}
	again, dup, err := hs.Deliver(ctx, acct, "gh", "events", "d-1", []byte(`{"n":1}`))
	if err != nil || !dup || again != seq {
		t.Fatalf("replay = %d, %v, %v; want the first sequence %d as a duplicate", again, dup, err, seq)
	}
	// The same id of another hook is another delivery; no id is never
	// deduplicated.
	for _, d := range []struct{ hook, id string }{{"stripe", "d-1"}, {"gh", ""}, {"gh", ""}} {
		if _, dup, err := hs.Deliver(ctx, acct, d.hook, "events", d.id, []byte(`{}`)); err != nil || dup {
			t.Fatalf("Deliver(%s, %q) = %v, %v", d.hook, d.id, dup, err)
		}
	}
	if _, _, err := hs.Deliver(ctx, acct, "gh", "missing", "d-9", []byte(`{}`)); !errors.Is(err, pgqueue.ErrQueueNotFound) {
		t.Fatalf("Deliver to a missing queue: %v, want ErrQueueNotFound", err)
	}
	// Concurrent replays enqueue once.
	var wg sync.WaitGroup
	seqs := make([]int64, 8)
	errs := make([]error, 8)
	for i := range seqs {
		wg.Go(func() { seqs[i], _, errs[i] = hs.Deliver(ctx, acct, "gh", "events", "d-2", []byte(`{"n":2}`)) })
	}
	wg.Wait()
	for i := range seqs {
		if errs[i] != nil || seqs[i] != seqs[0] {
			t.Fatalf("concurrent replays: sequences %v, errors %v", seqs, errs)
		}
	}
	st, err := qc.Stats(ctx, acct, "events")
	if err != nil || st.Total != 5 {
		t.Fatalf("stats %+v, %v; want 5 messages", st, err)
	}
}

func TestHookStorePruneDeliveries(t *testing.T) {
	t.Parallel()
	hs, qc := newHookStore(t)
	ctx := t.Context()
	for _, id := range []string{"old", "new"} {
		if _, _, err := hs.Deliver(ctx, acct, "gh", "events", id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := qc.Pool().Exec(ctx, fmt.Sprintf(`UPDATE %s.webhook_deliveries SET received_at = now() - interval '8 days' WHERE delivery_id = 'old'`,
		pgx.Identifier{qc.Schema()}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	n, err := hs.PruneDeliveries(ctx, triggers.DeliveryRetention)
	if err != nil || n != 1 {
		t.Fatalf("PruneDeliveries = %d, %v; want 1", n, err)
	}
	// A forgotten id is delivered again; a remembered one is not.
	if _, dup, err := hs.Deliver(ctx, acct, "gh", "events", "old", []byte(`{}`)); err != nil || dup {
		t.Fatalf("pruned id: dup %v, %v", dup, err)
	}
	if _, dup, err := hs.Deliver(ctx, acct, "gh", "events", "new", []byte(`{}`)); err != nil || !dup {
		t.Fatalf("kept id: dup %v, %v", dup, err)
	}
}

func TestNewHookStoreNeedsAClient(t *testing.T) {
	t.Parallel()
	if _, err := triggers.NewHookStore(nil); err == nil {
		t.Fatal("NewHookStore(nil) succeeded")
	}
}

// Check refuses each field it checks with a *HookError naming the field
// and saying what is allowed.
func TestHookCheck(t *testing.T) {
	t.Parallel()
	ok := triggers.Hook{Name: "gh", Queue: "events", Verify: "github", Secrets: []string{"s1"}}
	if err := ok.Check(); err != nil {
		t.Fatalf("Check(%+v) = %v", ok, err)
	}
	for _, tc := range []struct {
		edit  func(*triggers.Hook)
		field string
		msg   string
	}{
		{func(h *triggers.Hook) { h.Name = "a b" }, "name", `invalid hook name "a b": use 1-80 characters from A-Z a-z 0-9 _ -`},
		{func(h *triggers.Hook) { h.Queue = "" }, "queue", `invalid queue name "": use 1-80 characters from A-Z a-z 0-9 _ -`},
		{func(h *triggers.Hook) { h.Verify = "sha1" }, "verify", `invalid verify "sha1": use standard, github, stripe or none`},
		{func(h *triggers.Hook) { h.Secrets = make([]string, 11) }, "secrets", "11 secrets: use at most 10"},
		{func(h *triggers.Hook) { h.Secrets = nil }, "secrets", "hook gh: scheme github needs at least one secret"},
		{func(h *triggers.Hook) { h.Verify = "none" }, "secrets", "hook gh: scheme none verifies nothing and takes no secrets; got 1"},
		{func(h *triggers.Hook) { h.Source = "cli" }, "source", `invalid source "cli": use api or manifest`},
	} {
		h := ok
		tc.edit(&h)
		var he *triggers.HookError
		if err := h.Check(); !errors.As(err, &he) || he.Field != tc.field || he.Message != tc.msg || err.Error() != tc.msg {
			t.Errorf("Check(%+v) = %v; want a *HookError on %s: %s", h, err, tc.field, tc.msg)
		}
	}
	for _, src := range []string{"", triggers.SourceAPI, triggers.SourceManifest} {
		h := ok
		h.Source = src
		if err := h.Check(); err != nil {
			t.Errorf("Check with source %q = %v", src, err)
		}
	}
}
