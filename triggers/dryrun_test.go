package triggers_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/kv"
	"github.com/sluicehq/sluice/triggers"
)

// TestInvokeDryRunHasNoSideEffects: a dry-run invoke's key-value writes
// are seen by the run's own reads and leave the stores unchanged, and its
// HTTP calls are refused before they are sent (errno denied, saying why);
// the same invoke without dry_run writes and calls.
func TestInvokeDryRunHasNoSideEffects(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, kv.Migrations)
	ctx := t.Context()
	stores, err := kv.New(e.pool, e.schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := stores.Set(ctx, acct, "s", []byte("seen"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		_, _ = w.Write([]byte("hello"))
	}))
	t.Cleanup(up.Close)
	e.deploy("runtime/testdata/hostcalls", "fn", functions.Config{Capabilities: functions.Capabilities{
		Stores: []string{"s"}, AllowedOutboundHosts: []string{"http://127.0.0.1:*"}}})
	eng := e.startEngine(func(c *triggers.Config) { c.KV = stores })

	run := func(dryRun bool, ops ...string) []string {
		t.Helper()
		req := triggers.InvokeRequest{Account: acct, Function: "fn", DryRun: dryRun}
		for _, o := range ops {
			req.Messages = append(req.Messages, triggers.InvokeMessage{Body: json.RawMessage(o)})
		}
		res, err := eng.Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(res.Messages))
		for i, m := range res.Messages {
			out[i] = m.Error
		}
		return out
	}
	got := run(true,
		`{"op":"get","store":"s","key":"seen"}`,
		`{"op":"set","store":"s","key":"new","value":"x"}`,
		`{"op":"get","store":"s","key":"new"}`,
		`{"op":"incr","store":"s","key":"seen","delta":2}`,
		`{"op":"cas","store":"s","key":"new","old":"x","value":"y"}`,
		`{"op":"get","store":"s","key":"new"}`,
		`{"op":"delete","store":"s","key":"seen"}`,
		`{"op":"get","store":"s","key":"seen"}`,
		`{"op":"http","url":"`+up.URL+`/"}`,
	)
	want := []string{"ok 1", "ok", "ok x", "ok 3", "ok", "ok y", "ok", "error not found:", "error denied:"}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("dry run op %d: %q, want %q", i+1, got[i], want[i])
		}
	}
	if !strings.Contains(got[8], "dry run") {
		t.Errorf("the refused call %q does not say why", got[8])
	}
	if v, ok, err := stores.Get(ctx, acct, "s", []byte("seen")); err != nil || !ok || string(v) != "1" {
		t.Errorf("after the dry run, seen = %q %v %v; want 1, untouched", v, ok, err)
	}
	if _, ok, _ := stores.Get(ctx, acct, "s", []byte("new")); ok {
		t.Error("the dry run's write reached the store")
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the dry run sent %d HTTP requests", n)
	}

	got = run(false, `{"op":"set","store":"s","key":"new","value":"x"}`, `{"op":"http","url":"`+up.URL+`/"}`)
	if got[0] != "ok" || got[1] != "ok 200 hello" {
		t.Fatalf("the same without dry run: %q", got)
	}
	if v, ok, _ := stores.Get(ctx, acct, "s", []byte("new")); !ok || string(v) != "x" || calls.Load() != 1 {
		t.Errorf("without dry run: new = %q (%v), %d calls; want x and 1", v, ok, calls.Load())
	}
}
