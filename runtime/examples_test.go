package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/runtime"
)

func TestEcho(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, logs := newRuntime(t)
		f := load(t, rt, "echo", mode, runtime.FunctionConfig{Name: "echo", Version: 7})
		want := map[wasmbuild.Mode]runtime.Kind{wasmbuild.Command: runtime.Command, wasmbuild.Reactor: runtime.Reactor}[mode]
		if f.Kind() != want {
			t.Fatalf("Kind = %s, want %s", f.Kind(), want)
		}
		for round := range 3 { // a reactor instance serves every round
			res := invoke(t, f, batch(`{"n":1}`, `"two"`, `[3]`))
			if !res.OK() || res.Count(runtime.Acked) != 3 {
				t.Fatalf("round %d: result %+v failure %v, want all acked", round, res.Messages, res.Failure)
			}
		}
		var echoed int
		for _, ev := range logs.events(t) {
			if ev["message"] != "echo" {
				continue
			}
			echoed++
			if ev["function"] != "echo" || ev["version"] != float64(7) || ev["invocation"] != "inv-1" || ev["trigger"] != "queue:tests" || ev["level"] != "info" {
				t.Fatalf("log event %v lacks the function, version, invocation or trigger tags", ev)
			}
		}
		if echoed != 9 {
			t.Fatalf("%d echo events, want 9", echoed)
		}
		if mode == wasmbuild.Reactor {
			if s := f.Stats(); s.Instances != 1 || s.Idle != 1 {
				t.Fatalf("Stats = %+v, want one pooled instance reused", s)
			}
		}
	})
}

func TestFlakyFailsSomeMessages(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, mode wasmbuild.Mode) {
		rt, _ := newRuntime(t)
		f := load(t, rt, "flaky", mode, runtime.FunctionConfig{Env: map[string]string{"FLAKY_RETRY_SECONDS": "5"}})
		inv := batch(`{"fail_until_attempt":2}`, `{}`, `{"fail_until_attempt":3}`)
		res := invoke(t, f, inv)
		if res.Failure != nil {
			t.Fatal(res.Failure)
		}
		got := []runtime.Outcome{res.Messages[0].Outcome, res.Messages[1].Outcome, res.Messages[2].Outcome}
		if got[0] != runtime.Retry || got[1] != runtime.Acked || got[2] != runtime.Retry {
			t.Fatalf("outcomes = %v, want [retry acked retry]", got)
		}
		if m := res.Messages[0]; m.RetryAfter != 5*time.Second || !strings.Contains(m.Error, "attempt 1 of 2") {
			t.Fatalf("message 1 = %+v, want a 5s retry naming the attempt", m)
		}
		for i := range inv.Messages {
			inv.Messages[i].Attempt = 2
		}
		res = invoke(t, f, inv)
		if res.Count(runtime.Acked) != 2 || res.Messages[2].Outcome != runtime.Retry {
			t.Fatalf("second attempt: %+v, want only message 3 retried", res.Messages)
		}
	})
}

func TestPoison(t *testing.T) {
	t.Parallel()
	for _, permanent := range []bool{false, true} {
		env := map[string]string{}
		want := runtime.Retry
		if permanent {
			env["POISON_PERMANENT"] = "1"
			want = runtime.Permanent
		}
		rt, _ := newRuntime(t)
		f := load(t, rt, "poison", wasmbuild.Reactor, runtime.FunctionConfig{Env: env})
		res := invoke(t, f, batch(`1`, `2`))
		if res.Failure != nil || res.Count(want) != 2 {
			t.Fatalf("permanent=%v: %+v (%v), want both %s", permanent, res.Messages, res.Failure, want)
		}
	}
}

// The router takes envelopes as the webhook ingestion builds them
// (triggers/webhook: lower-case allow-listed headers, string values) and
// emits each routed delivery's payload to a queue per event.
func TestWebhookRouter(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := load(t, rt, "webhook-router", wasmbuild.Command, runtime.FunctionConfig{})
	res := invoke(t, f, batch(
		`{"hook":"gh","delivery_id":"d1","method":"POST","path":"/hooks/acme/gh","headers":{"content-type":"application/json","x-github-delivery":"d1","x-github-event":"push"},"body":{"ref":"main"}}`,
		`{"hook":"stripe","delivery_id":"evt_1","method":"POST","path":"/hooks/acme/stripe","headers":{"content-type":"application/json"},"body":{"id":"evt_1","object":"event","type":"invoice.paid"}}`,
		`{"hook":"gh","delivery_id":"d3","method":"POST","path":"/hooks/acme/gh","headers":{"x-github-event":"ping"},"body":{"zen":"hi"}}`,
		`{"hook":"gh","delivery_id":"d4","method":"POST","path":"/hooks/acme/gh","headers":{"x-github-event":"star"},"body":{}}`,
		`{"hook":"bin","delivery_id":"","method":"POST","path":"/hooks/acme/bin","headers":{},"body_base64":"AAEC"}`,
		`"not an envelope"`,
	))
	want := []runtime.Outcome{runtime.Acked, runtime.Acked, runtime.Acked, runtime.Permanent, runtime.Permanent, runtime.Permanent}
	for i, m := range res.Messages {
		if m.Outcome != want[i] {
			t.Fatalf("message %s = %+v, want %s", m.ID, m, want[i])
		}
	}
	if len(res.Emits) != 2 {
		t.Fatalf("emits = %+v, want the push and the invoice", res.Emits)
	}
	if e := res.Emits[0]; e.Queue != "github-push" || e.For != res.Messages[0].ID || string(e.Body) != `{"ref":"main"}` ||
		e.DedupKey != "gh:d1" || !strings.Contains(string(e.Headers), `"webhook-delivery-id":"d1"`) {
		t.Errorf("emit[0] = %+v (headers %s)", e, e.Headers)
	}
	if e := res.Emits[1]; e.Queue != "stripe-invoice-paid" || e.For != res.Messages[1].ID || e.DedupKey != "stripe:evt_1" {
		t.Errorf("emit[1] = %+v", e)
	}
}

func TestCronReport(t *testing.T) {
	t.Parallel()
	rt, logs := newRuntime(t)
	f := load(t, rt, "cron-report", wasmbuild.Reactor, runtime.FunctionConfig{})
	inv := batch(`{"schedule":"*/5 * * * *","scheduled_time":"2026-11-30T12:00:00Z"}`, `{"schedule":""}`)
	inv.Trigger = runtime.Trigger{Type: "cron", Source: "nightly"}
	res := invoke(t, f, inv)
	if res.Messages[0].Outcome != runtime.Acked || res.Messages[1].Outcome != runtime.Permanent {
		t.Fatalf("outcomes %+v", res.Messages)
	}
	var found bool
	for _, ev := range logs.events(t) {
		if ev["message"] == "report" && ev["schedule"] == "*/5 * * * *" && ev["source"] == "nightly" && ev["trigger"] == "cron:nightly" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no report event in %v", logs.events(t))
	}
}

// TestReactorMemoryIsStable runs many batches through one pooled instance:
// its linear memory settles instead of growing with every batch.
func TestReactorMemoryIsStable(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	f := load(t, rt, "noop", wasmbuild.Reactor, runtime.FunctionConfig{PoolSize: 1})
	bodies := make([]string, 100)
	for i := range bodies {
		bodies[i] = `{"order":1,"email":"someone@example.com","note":"` + strings.Repeat("x", 200) + `"}`
	}
	inv := batch(bodies...)
	var warm int64
	for i := range 300 {
		if res := invoke(t, f, inv); !res.OK() {
			t.Fatal(res.Failure)
		}
		if i == 20 {
			warm = f.Stats().MemoryBytes
		}
	}
	if s := f.Stats(); s.Instances != 1 || s.MemoryBytes > 2*warm {
		t.Fatalf("after 300 batches: %+v; %d bytes after 20 batches", s, warm)
	}
}
