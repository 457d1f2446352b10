package functions_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/functions"
)

// A function records the app that owns it ("" when deployed by hand).
func TestFunctionApps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)
	for _, name := range []string{"f", "g"} {
		if _, err := r.Deploy(ctx, acct, name, module(name), cfg, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetApp(ctx, acct, "f", "shop"); err != nil {
		t.Fatal(err)
	}
	apps, err := r.Apps(ctx, acct)
	if err != nil || len(apps) != 2 || apps["f"] != "shop" || apps["g"] != "" {
		t.Errorf("function apps = %v, %v", apps, err)
	}
	if err := r.SetApp(ctx, acct, "missing", "shop"); !errors.Is(err, functions.ErrNotFound) {
		t.Errorf("set app of a missing function: %v", err)
	}
	if err := r.SetApp(ctx, acct, "f", "a/b"); !errors.Is(err, functions.ErrInvalidName) {
		t.Errorf("set an invalid app name: %v", err)
	}
}

// PlanDeploy says what Deploy then does, and stores nothing.
func TestPlanDeploy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)
	sha := func(m []byte) string { s := sha256.Sum256(m); return hex.EncodeToString(s[:]) }
	check := func(what string, m []byte, c functions.Config) {
		t.Helper()
		before, _ := r.Versions(ctx, acct, "f")
		plan, err := r.PlanDeploy(ctx, acct, "f", sha(m), c, "")
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := r.Versions(ctx, acct, "f"); len(after) != len(before) {
			t.Fatalf("%s: PlanDeploy stored a version (%d, then %d)", what, len(before), len(after))
		}
		d, err := r.Deploy(ctx, acct, "f", m, c, "")
		if err != nil {
			t.Fatal(err)
		}
		if plan.Version.Number != d.Version.Number || plan.Created != d.Created || plan.AliasMoved != d.AliasMoved || plan.Version.SHA256 != d.Version.SHA256 {
			t.Errorf("%s: planned %+v, deploy did version %d created %v moved %v", what, plan, d.Version.Number, d.Created, d.AliasMoved)
		}
	}
	check("new function", module("a"), cfg)
	check("same again", module("a"), cfg)
	bigger := cfg
	bigger.MemoryMiB = 128
	check("new config", module("a"), bigger)
	check("new module", module("b"), bigger)
	if err := r.SetAlias(ctx, acct, "f", functions.DefaultAlias, 1); err != nil {
		t.Fatal(err)
	}
	check("alias elsewhere, latest again", module("b"), bigger)
	if _, err := r.PlanDeploy(ctx, acct, "f", "zz", cfg, ""); !errors.Is(err, functions.ErrInvalidModule) {
		t.Errorf("plan with a bad digest: %v", err)
	}
}
