package triggers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/triggers"
)

// Triggers and hooks record the app that owns them ("" when made by hand).
func TestTriggerAndHookApps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hs, qc := newHookStore(t)
	st, err := triggers.NewStore(qc.Pool(), qc.Schema())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"t1", "t2"} {
		if _, err := st.Put(ctx, triggers.Trigger{Account: acct, Name: name, Kind: triggers.KindCron, Queue: "events",
			CronSpec: "@every 1h", EnqueueBody: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetApp(ctx, acct, "t1", "shop"); err != nil {
		t.Fatal(err)
	}
	if apps, err := st.Apps(ctx, acct); err != nil || len(apps) != 2 || apps["t1"] != "shop" || apps["t2"] != "" {
		t.Errorf("trigger apps = %v, %v", apps, err)
	}
	// Put leaves the app as it is.
	if _, err := st.Put(ctx, triggers.Trigger{Account: acct, Name: "t1", Kind: triggers.KindCron, Queue: "events",
		CronSpec: "@every 2h", EnqueueBody: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if apps, _ := st.Apps(ctx, acct); apps["t1"] != "shop" {
		t.Errorf("a put changed the trigger's app to %q", apps["t1"])
	}
	if err := st.SetApp(ctx, acct, "missing", "shop"); !errors.Is(err, triggers.ErrNotFound) {
		t.Errorf("set app of a missing trigger: %v", err)
	}
	if err := st.SetApp(ctx, acct, "t1", "bad app"); err == nil {
		t.Error("an invalid app name was accepted")
	}

	if _, err := hs.Put(ctx, triggers.Hook{Account: acct, Name: "gh", Queue: "events", Verify: "none"}); err != nil {
		t.Fatal(err)
	}
	if err := hs.SetApp(ctx, acct, "gh", "shop"); err != nil {
		t.Fatal(err)
	}
	if apps, err := hs.Apps(ctx, acct); err != nil || len(apps) != 1 || apps["gh"] != "shop" {
		t.Errorf("hook apps = %v, %v", apps, err)
	}
	if err := hs.SetApp(ctx, acct, "missing", "shop"); !errors.Is(err, triggers.ErrHookNotFound) {
		t.Errorf("set app of a missing hook: %v", err)
	}
}
