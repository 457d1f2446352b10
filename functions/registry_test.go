package functions_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/pgqueue"
)

// module returns a minimal valid WASM binary (header only) made distinct
// by a custom section carrying tag.
func module(tag string) []byte {
	m := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	// custom section: id 0, size, name length, name
	m = append(m, 0x00, byte(1+len(tag)), byte(len(tag)))
	return append(m, tag...)
}

func newRegistry(t *testing.T, validate functions.ValidateFunc) *functions.Registry {
	t.Helper()
	pool, schema := pgtest.Schema(t, pgqueue.Migrations, functions.Migrations)
	r, err := functions.NewRegistry(pool, schema, validate)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var cfg = functions.Config{MemoryMiB: 64, Timeout: 5 * time.Second, Env: map[string]string{"A": "1"}}

const acct = pgqueue.DefaultAccount

func TestDeployIsIdempotentAndVersioned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)

	d1, err := r.Deploy(ctx, acct, "echo", module("v1"), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d1.Created || !d1.AliasMoved || d1.Version.Number != 1 {
		t.Fatalf("first deploy = %+v, want version 1 created and alias moved", d1)
	}
	again, err := r.Deploy(ctx, acct, "echo", module("v1"), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.AliasMoved || again.Version.Number != 1 || again.Version.SHA256 != d1.Version.SHA256 {
		t.Fatalf("repeat deploy = %+v, want nothing changed", again)
	}
	// A config change alone is a new version.
	cfg2 := cfg
	cfg2.Env = map[string]string{"A": "2"}
	d2, err := r.Deploy(ctx, acct, "echo", module("v1"), cfg2, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d2.Created || d2.Version.Number != 2 {
		t.Fatalf("config change = %+v, want version 2", d2)
	}
	live, err := r.Resolve(ctx, acct, "echo", "live")
	if err != nil {
		t.Fatal(err)
	}
	if live.Number != 2 || live.Env["A"] != "2" || live.Timeout != 5*time.Second || live.MemoryMiB != 64 {
		t.Errorf("live = %+v, want version 2 with its config", live)
	}
	vs, err := r.Versions(ctx, acct, "echo")
	if err != nil || len(vs) != 2 || vs[0].Number != 1 || vs[1].Number != 2 {
		t.Fatalf("versions = %+v, %v", vs, err)
	}
	// The module is stored once for both versions.
	mod, err := r.Module(ctx, live.SHA256)
	if err != nil || string(mod) != string(module("v1")) {
		t.Errorf("module = %q, %v", mod, err)
	}
}

func TestRollbackAndAliases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)
	if _, err := r.Deploy(ctx, acct, "f", module("a"), cfg, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rollback(ctx, acct, "f", ""); !errors.Is(err, functions.ErrNoRollback) {
		t.Errorf("rollback with one version: err = %v, want ErrNoRollback", err)
	}
	if _, err := r.Deploy(ctx, acct, "f", module("b"), cfg, ""); err != nil {
		t.Fatal(err)
	}
	to, err := r.Rollback(ctx, acct, "f", "live")
	if err != nil || to != 1 {
		t.Fatalf("rollback = %d, %v; want 1", to, err)
	}
	if v, _ := r.Resolve(ctx, acct, "f", ""); v.Number != 1 {
		t.Errorf("live after rollback = %d, want 1", v.Number)
	}
	// Redeploying version 2's module moves live forward without a new version.
	d, err := r.Deploy(ctx, acct, "f", module("b"), cfg, "")
	if err != nil || d.Created || !d.AliasMoved || d.Version.Number != 2 {
		t.Fatalf("redeploy after rollback = %+v, %v", d, err)
	}
	if err := r.SetAlias(ctx, acct, "f", "canary", 1); err != nil {
		t.Fatal(err)
	}
	if err := r.SetAlias(ctx, acct, "f", "canary", 9); !errors.Is(err, functions.ErrNotFound) {
		t.Errorf("alias to missing version: err = %v, want ErrNotFound", err)
	}
	fns, err := r.List(ctx, acct)
	if err != nil || len(fns) != 1 || fns[0].Aliases["canary"] != 1 || fns[0].Aliases["live"] != 2 || fns[0].LatestVersion != 2 {
		t.Fatalf("list = %+v, %v", fns, err)
	}
	// live went 1, 2, back to 1, forward to 2: a rollback would take it to
	// 1; canary has never moved.
	if rb := fns[0].RollbackTo; len(rb) != 1 || rb["live"] != 1 {
		t.Errorf("RollbackTo = %v, want live back to 1 only", rb)
	}
}

func TestDeployRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, func(_ context.Context, m []byte, _ functions.Config) error {
		if strings.Contains(string(m), "bad") {
			return errors.New(`module imports "env"."evil", which the host does not provide`)
		}
		return nil
	})
	for _, tc := range []struct {
		name   string
		fn     string
		module []byte
		cfg    functions.Config
		kind   error
		want   string
	}{
		{"bad name", "a/b", module("x"), cfg, functions.ErrInvalidName, `function name "a/b"`},
		{"not wasm", "f", []byte("hello world"), cfg, functions.ErrInvalidModule, "not a WebAssembly binary"},
		{"validator", "f", module("bad"), cfg, functions.ErrInvalidModule, `"env"."evil"`},
		{"memory", "f", module("x"), functions.Config{MemoryMiB: 0, Timeout: time.Second}, functions.ErrInvalidConfig, "memory 0 MiB is out of range 1-4096"},
		{"timeout", "f", module("x"), functions.Config{MemoryMiB: 1, Timeout: time.Hour}, functions.ErrInvalidConfig, "timeout 1h0m0s is out of range"},
	} {
		_, err := r.Deploy(ctx, acct, tc.fn, tc.module, tc.cfg, "")
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %v containing %q", tc.name, err, tc.kind, tc.want)
		}
	}
	if fns, _ := r.List(ctx, acct); len(fns) != 0 {
		t.Errorf("rejected deploys left functions behind: %+v", fns)
	}
	if _, err := r.Resolve(ctx, acct, "nope", ""); !errors.Is(err, functions.ErrNotFound) {
		t.Errorf("resolve unknown: %v", err)
	}
}

// Capabilities are part of a version's config: stored, read back, and a
// change to them alone is a new version.
func TestCapabilitiesAreVersioned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)
	withCaps := cfg
	withCaps.Capabilities = functions.Capabilities{Emits: []string{"orders-*", "audit"},
		AllowedOutboundHosts: []string{"https://api.example.com"}, Stores: []string{"sessions"}}
	d1, err := r.Deploy(ctx, acct, "router", module("r"), withCaps, "")
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Resolve(ctx, acct, "router", "")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Capabilities.Equal(withCaps.Capabilities) {
		t.Fatalf("capabilities read back = %+v, want %+v", v.Capabilities, withCaps.Capabilities)
	}
	again, err := r.Deploy(ctx, acct, "router", module("r"), withCaps, "")
	if err != nil || again.Created {
		t.Fatalf("repeat deploy = %+v, %v; want nothing created", again, err)
	}
	fewer := withCaps
	fewer.Capabilities.Emits = []string{"audit"}
	d2, err := r.Deploy(ctx, acct, "router", module("r"), fewer, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d2.Created || d2.Version.Number != d1.Version.Number+1 {
		t.Fatalf("deploy with other emits = %+v, want a new version", d2)
	}
	none, err := r.Deploy(ctx, acct, "plain", module("p"), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := none.Version.Capabilities; len(got.Emits)+len(got.AllowedOutboundHosts)+len(got.Stores) != 0 {
		t.Fatalf("a function deployed without capabilities has %+v, want none", got)
	}
}

// ResolveAll answers many refs in one statement and leaves out refs with
// no such function or alias.
func TestResolveAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)
	if _, err := r.Deploy(ctx, acct, "a", module("a"), cfg, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Deploy(ctx, acct, "b", module("b"), cfg, "canary"); err != nil {
		t.Fatal(err)
	}
	got, err := r.ResolveAll(ctx, []functions.Ref{
		{Account: acct, Function: "a"}, {Account: acct, Function: "b", Alias: "canary"},
		{Account: acct, Function: "b"}, {Account: acct, Function: "missing"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("resolved %d refs (%v), want 2 (a@live and b@canary)", len(got), got)
	}
	if v := got[functions.Ref{Account: acct, Function: "a", Alias: "live"}]; v.Number != 1 || v.Function != "a" || v.Timeout != cfg.Timeout {
		t.Errorf("a@live = %+v, want version 1 of a", v)
	}
	if v := got[functions.Ref{Account: acct, Function: "b", Alias: "canary"}]; v.Number != 1 || v.SHA256 == "" {
		t.Errorf("b@canary = %+v, want version 1 of b", v)
	}
}

// TestDeployWithinLimits: DeployWithin and CheckLimits refuse, with
// ErrLimit and storing nothing, a new function beyond the functions limit
// and a new module beyond the module bytes; new versions of a function,
// and modules already stored, pass.
func TestDeployWithinLimits(t *testing.T) {
	t.Parallel()
	r := newRegistry(t, nil)
	ctx := context.Background()
	a, b := module("a"), module("b")
	l := functions.Limits{Functions: 1, ModuleBytes: int64(len(a)) + 2}
	if _, err := r.DeployWithin(ctx, l, acct, "f", a, cfg, ""); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{r.CheckLimits(ctx, l, acct, "g", a), func() error {
		_, err := r.DeployWithin(ctx, l, acct, "g", a, cfg, "")
		return err
	}()} {
		if !errors.Is(err, functions.ErrLimit) || !strings.Contains(err.Error(), "limit of 1 functions") {
			t.Errorf("a second function: %v, want ErrLimit naming the limit of 1", err)
		}
	}
	if _, err := r.DeployWithin(ctx, l, acct, "f", b, cfg, ""); !errors.Is(err, functions.ErrLimit) ||
		!strings.Contains(err.Error(), fmt.Sprintf("stores %d bytes of modules", len(a))) {
		t.Errorf("a module past the bytes limit: %v, want ErrLimit saying what is stored", err)
	}
	if _, err := r.DeployWithin(ctx, l, acct, "f", a, functions.Config{MemoryMiB: 32, Timeout: cfg.Timeout}, ""); err != nil {
		t.Errorf("a new version of the stored module: %v", err)
	}
	if fs, err := r.List(ctx, acct); err != nil || len(fs) != 1 {
		t.Errorf("functions after the refusals: %v %v, want f alone", fs, err)
	}
}

// TestDeleteRemovesUnusedModules: deleting a function deletes the modules
// no other version uses (so that deleting and deploying again cannot
// store modules past the account's limit), and keeps the ones still in
// use; a deploy storing a module while another function's delete removes
// it keeps it.
func TestDeleteRemovesUnusedModules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)
	deploy := func(name, tag string) functions.Deployment {
		t.Helper()
		d, err := r.Deploy(ctx, acct, name, module(tag), cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	stored := func(d functions.Deployment) bool {
		t.Helper()
		_, err := r.Module(ctx, d.Version.SHA256)
		if err != nil && !errors.Is(err, functions.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	shared := deploy("a", "shared")
	deploy("b", "shared")
	onlyB := deploy("b", "only-b")
	if err := r.Delete(ctx, acct, "b"); err != nil {
		t.Fatal(err)
	}
	if !stored(shared) || stored(onlyB) {
		t.Errorf("after deleting b: shared module stored %v (want true, a uses it), b's own %v (want false)", stored(shared), stored(onlyB))
	}
	if err := r.Delete(ctx, acct, "a"); err != nil {
		t.Fatal(err)
	}
	if stored(shared) {
		t.Error("after deleting a too: the shared module is still stored")
	}
	if err := r.Delete(ctx, acct, "a"); !errors.Is(err, functions.ErrNotFound) {
		t.Errorf("deleting a again: %v, want ErrNotFound", err)
	}

	// A delete racing a deploy of the same module by another function:
	// neither fails, and the deployed version's module stays.
	for i := range 30 {
		tag := fmt.Sprintf("race-%d", i)
		deploy("x", tag)
		errs := make(chan error, 2)
		var kept functions.Deployment
		go func() { errs <- r.Delete(ctx, acct, "x") }()
		go func() {
			var err error
			kept, err = r.Deploy(ctx, acct, "y", module(tag), cfg, "")
			errs <- err
		}()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if !stored(kept) {
			t.Fatalf("round %d: y's live version %d has lost its module", i, kept.Version.Number)
		}
	}
}

// TestVersionsAndAliasesBounded: a function keeps its newest KeepVersions
// versions and the ones its aliases point at or roll back to (older ones
// go with the modules no other version uses), at most MaxAliases aliases,
// and at most MaxConfigBytes of env and capabilities a version.
func TestVersionsAndAliasesBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegistry(t, nil)
	deploy := func(tag string, i int) functions.Deployment {
		t.Helper()
		c := cfg
		c.Env = map[string]string{"I": strconv.Itoa(i)}
		d, err := r.Deploy(ctx, acct, "f", module(tag), c, "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := deploy("first", 1)
	deploy("pinned", 2)
	if err := r.SetAlias(ctx, acct, "f", "pinned", 2); err != nil {
		t.Fatal(err)
	}
	last := functions.KeepVersions + 5
	for i := 3; i <= last; i++ {
		deploy("later", i)
	}
	vs, err := r.Versions(ctx, acct, "f")
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for _, v := range vs {
		numbers = append(numbers, v.Number)
	}
	want := []int{2}
	for n := last - functions.KeepVersions + 1; n <= last; n++ {
		want = append(want, n)
	}
	if !slices.Equal(numbers, want) {
		t.Errorf("versions kept = %v, want 2 (pinned) and the newest %d: %v", numbers, functions.KeepVersions, want)
	}
	if _, err := r.Module(ctx, first.Version.SHA256); !errors.Is(err, functions.ErrNotFound) {
		t.Errorf("module of the deleted version 1: %v, want ErrNotFound", err)
	}
	if back, err := r.Rollback(ctx, acct, "f", "live"); err != nil || back != last-1 {
		t.Errorf("rollback of live = %d, %v; want %d", back, err, last-1)
	}

	for i := 2; i < functions.MaxAliases; i++ { // live and pinned exist
		if err := r.SetAlias(ctx, acct, "f", "a"+strconv.Itoa(i), last); err != nil {
			t.Fatal(err)
		}
	}
	err = r.SetAlias(ctx, acct, "f", "one-more", last)
	if !errors.Is(err, functions.ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("has %d aliases", functions.MaxAliases)) {
		t.Errorf("alias %d: %v, want ErrLimit naming the count", functions.MaxAliases+1, err)
	}
	if err := r.SetAlias(ctx, acct, "f", "pinned", last); err != nil {
		t.Errorf("moving an existing alias at the limit: %v", err)
	}

	big := cfg
	big.Env = map[string]string{"BIG": strings.Repeat("x", functions.MaxConfigBytes)}
	if _, err := r.Deploy(ctx, acct, "f", module("big"), big, ""); !errors.Is(err, functions.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), fmt.Sprintf("at most %d are kept", functions.MaxConfigBytes)) {
		t.Errorf("deploy with %d bytes of env: %v, want ErrInvalidConfig naming the bound", functions.MaxConfigBytes, err)
	}
}
