package triggers_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/triggers"
)

// lines returns the JSON log lines written so far.
func (s *syncBuffer) lines() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader([]byte(s.String())))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// withLogs makes an engine (and its runtime) log everything to w.
func withLogs(t *testing.T, w *syncBuffer) func(*triggers.Config) {
	return func(cfg *triggers.Config) {
		rt, err := runtime.New(context.Background(), runtime.Config{CompilationCacheDir: cacheDir(), Logger: zerolog.New(w)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Close(context.Background()) })
		cfg.Runtime, cfg.Logger = rt, zerolog.New(w).Level(zerolog.DebugLevel)
	}
}

// Outcomes: all succeeded is success, some failed partial_failure, all
// failed failure (kind item_failures); a whole-batch failure is failure
// with the runtime's kind. Every id a log line names is the id of an
// invocation record, and every trigger name a log line or a record shows
// is taken back by the trigger filter.
func TestOutcomesIDsAndTriggerNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	e.deploy("noop", "noop", functions.Config{})
	e.deploy("flaky", "flaky", functions.Config{Env: map[string]string{"FLAKY_RETRY_SECONDS": "3600"}})
	e.deploy("poison", "poison", functions.Config{Env: map[string]string{"POISON_PERMANENT": "1"}})
	e.deploy("slow", "slow", functions.Config{Timeout: 200 * time.Millisecond, Env: map[string]string{"SLOW_DURATION": "5s"}})
	for _, q := range []string{"ok", "some", "all", "slow"} {
		e.createQueue(q, pgqueue.Settings{MaxReceiveCount: 1})
	}
	e.putTrigger(triggers.Trigger{Queue: "ok", Function: "noop", BatchSize: 10, BatchWindow: 300 * time.Millisecond})
	e.putTrigger(triggers.Trigger{Queue: "some", Function: "flaky", BatchSize: 10, BatchWindow: 300 * time.Millisecond})
	e.putTrigger(triggers.Trigger{Name: "poisoned", Queue: "all", Function: "poison", BatchSize: 10, BatchWindow: 300 * time.Millisecond})
	e.putTrigger(triggers.Trigger{Queue: "slow", Function: "slow", BatchSize: 1})
	e.putTrigger(triggers.Trigger{Kind: triggers.KindCron, Function: "noop", CronSpec: "@every 1s"})
	var logs syncBuffer
	e.startEngine(withLogs(t, &logs))
	e.send("ok", `{"n":1}`, `{"n":2}`)
	e.send("some", `{"n":1}`, `{"fail_until_attempt":2}`)
	e.send("all", `{"n":1}`, `{"n":2}`)
	e.send("slow", `{}`)

	e.waitFor("five kinds of invocation", 60*time.Second, func() bool {
		return e.scalar(`SELECT count(DISTINCT trigger) FROM {{schema}}.invocations`) == 5
	})
	log := e.triggers.Invocations()
	for _, c := range []struct{ trigger, outcome, kind string }{
		{"queue:ok:noop", triggers.OutcomeSuccess, ""},
		{"queue:some:flaky", triggers.OutcomePartialFailure, triggers.FailureItems},
		{"poisoned", triggers.OutcomeFailure, triggers.FailureItems},
		{"queue:slow:slow", triggers.OutcomeFailure, string(runtime.FailureTimeout)},
	} {
		invs, err := log.List(ctx, acct, triggers.InvocationFilter{Trigger: c.trigger})
		if err != nil || len(invs) == 0 {
			t.Fatalf("invocations of %s: %+v %v", c.trigger, invs, err)
		}
		v := invs[len(invs)-1]
		if v.Trigger != c.trigger || v.Outcome != c.outcome || v.FailureKind != c.kind {
			t.Errorf("%s: trigger %q outcome %q kind %q, want %q %q", c.trigger, v.Trigger, v.Outcome, v.FailureKind, c.outcome, c.kind)
		}
	}
	// The cron trigger's name has one prefix and is taken back as is.
	ts, err := e.triggers.List(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		invs, err := log.List(ctx, acct, triggers.InvocationFilter{Trigger: tr.Name})
		if err != nil || len(invs) == 0 {
			t.Errorf("trigger %s: the filter finds no invocation (%v)", tr.Name, err)
		}
		for _, v := range invs {
			if v.Trigger != tr.Name {
				t.Errorf("filter %s returned trigger %s", tr.Name, v.Trigger)
			}
		}
		if tr.Kind == triggers.KindCron && bytes.Count([]byte(tr.Name), []byte("cron:")) != 1 {
			t.Errorf("cron trigger name %q", tr.Name)
		}
	}

	// Every log line naming an invocation names a record, and its trigger
	// field is that record's trigger, which the filter takes back.
	e.waitFor("a function log line", 30*time.Second, func() bool {
		for _, l := range logs.lines() {
			if l["message"] == "processed" {
				return true
			}
		}
		return false
	})
	checked, guest := 0, 0
	for _, l := range logs.lines() {
		raw, ok := l["invocation"].(string)
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			t.Fatalf("log line invocation %q is not an invocation id: %v", raw, l)
		}
		invs, err := log.List(ctx, acct, triggers.InvocationFilter{ID: id})
		if err != nil || len(invs) != 1 {
			t.Fatalf("log line %v: invocation %d not found (%v)", l, id, err)
		}
		if name, ok := l["trigger"].(string); ok {
			if name != invs[0].Trigger {
				t.Errorf("log line %v: trigger %q, the record says %q", l, name, invs[0].Trigger)
			}
			back, err := log.List(ctx, acct, triggers.InvocationFilter{Trigger: name, ID: id})
			if err != nil || len(back) != 1 {
				t.Errorf("trigger %q of log line %v not taken back by the filter", name, l)
			}
		}
		if l["message"] == "processed" {
			guest++
		}
		checked++
	}
	if checked == 0 || guest == 0 {
		t.Fatalf("no log line named an invocation (%d checked, %d from the function)", checked, guest)
	}
}

// A trigger disabled while an engine runs stops taking batches; enabled
// again, it runs them.
func TestSetEnabledReachesRunningEngine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	e.deploy("noop", "noop", functions.Config{})
	e.createQueue("jobs", pgqueue.Settings{})
	e.putTrigger(triggers.Trigger{Name: "jobs", Queue: "jobs", Function: "noop"})
	e.startEngine()
	sent := time.Now()
	e.send("jobs", `{}`)
	e.waitFor("the first message to run", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.invocations`) == 1
	})
	firstRun := time.Since(sent)
	changed, err := e.triggers.SetEnabled(ctx, acct, "jobs", false)
	if err != nil || !changed {
		t.Fatalf("disable: %v %v", changed, err)
	}
	if changed, err := e.triggers.SetEnabled(ctx, acct, "jobs", false); err != nil || changed {
		t.Fatalf("disable again: %v %v", changed, err)
	}
	if tr, err := e.triggers.Get(ctx, acct, "jobs"); err != nil || tr.Enabled {
		t.Fatalf("get after disable: %+v %v", tr, err)
	}
	// The engine reloads every 200ms: after five reloads the trigger is
	// stopped; a message sent then stays for at least three times what
	// running the first one took (the machine's pace).
	time.Sleep(time.Second)
	e.send("jobs", `{}`)
	time.Sleep(max(time.Second, 3*firstRun))
	if n := e.scalar(`SELECT count(*) FROM {{schema}}.messages`); n != 1 {
		t.Fatalf("a disabled trigger ran: %d messages left, want 1", n)
	}
	if _, err := e.triggers.SetEnabled(ctx, acct, "jobs", true); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the enabled trigger to run the message", 30*time.Second, func() bool {
		return e.scalar(`SELECT count(*) FROM {{schema}}.messages`) == 0
	})
	if _, err := e.triggers.SetEnabled(ctx, acct, "nope", true); !errors.Is(err, triggers.ErrNotFound) {
		t.Fatalf("enable a missing trigger: %v", err)
	}
	if _, err := e.triggers.Put(ctx, triggers.Trigger{Account: acct, Name: triggers.InvokeTrigger, Kind: triggers.KindQueue, Queue: "jobs", Function: "noop"}); !errors.Is(err, triggers.ErrInvalidName) {
		t.Fatalf("a trigger named invoke: %v", err)
	}
}

// Invoke runs a deployed version by alias or number and records it under
// trigger invoke with the id it returns.
func TestInvoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	e.deploy("noop", "fn", functions.Config{})
	e.deploy("flaky", "fn", functions.Config{Env: map[string]string{"FLAKY_RETRY_SECONDS": "5"}})
	eng := e.startEngine()

	res, err := eng.Invoke(ctx, triggers.InvokeRequest{Account: acct, Function: "fn", Messages: []triggers.InvokeMessage{
		{Body: json.RawMessage(`{"n":1}`)}, {Body: json.RawMessage(`{"fail_until_attempt":2}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 2 || res.Outcome != triggers.OutcomePartialFailure || len(res.Messages) != 2 ||
		res.Messages[0].Outcome != runtime.Acked || res.Messages[1].Outcome != runtime.Retry || res.Messages[1].RetryAfter != 5*time.Second {
		t.Fatalf("invoke live: %+v", res)
	}
	if !bytes.Contains([]byte(res.Stderr), []byte("processed")) {
		t.Errorf("stderr %q lacks the function's log line", res.Stderr)
	}
	invs, err := e.triggers.Invocations().List(ctx, acct, triggers.InvocationFilter{ID: res.ID, Trigger: triggers.InvokeTrigger})
	if err != nil || len(invs) != 1 || invs[0].Version != 2 || invs[0].Outcome != res.Outcome || invs[0].TriggerID != nil ||
		invs[0].TriggerType != "invoke" || invs[0].Source != "alias live" || invs[0].Acked != 1 || invs[0].Retried != 1 {
		t.Fatalf("recorded invocation %+v %v", invs, err)
	}

	res, err = eng.Invoke(ctx, triggers.InvokeRequest{Account: acct, Function: "fn", Version: 1, Messages: []triggers.InvokeMessage{{Body: json.RawMessage(`{"fail_until_attempt":2}`)}}})
	if err != nil || res.Version != 1 || res.Outcome != triggers.OutcomeSuccess {
		t.Fatalf("invoke version 1 (noop): %+v %v", res, err)
	}
	for _, bad := range []triggers.InvokeRequest{
		{Function: "fn"},
		{Function: "fn", Alias: "live", Version: 1, Messages: []triggers.InvokeMessage{{}}},
		{Function: "fn", Messages: make([]triggers.InvokeMessage, triggers.MaxInvokeMessages+1)},
		{Function: "fn", Messages: []triggers.InvokeMessage{{Body: json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), triggers.MaxInvokeBodyBytes)) + `"`)}}},
	} {
		bad.Account = acct
		if _, err := eng.Invoke(ctx, bad); !errors.Is(err, triggers.ErrInvalidInvoke) {
			t.Errorf("invoke %d messages alias %q version %d: %v, want ErrInvalidInvoke", len(bad.Messages), bad.Alias, bad.Version, err)
		}
	}
	if _, err := eng.Invoke(ctx, triggers.InvokeRequest{Account: acct, Function: "fn", Version: 9, Messages: []triggers.InvokeMessage{{}}}); !errors.Is(err, functions.ErrNotFound) {
		t.Errorf("invoke a missing version: %v", err)
	}
}

// Follow reads records in the order they were written, from a position,
// with the filters.
func TestInvocationLogFollow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	log := e.triggers.Invocations()
	start, err := log.LastSeq(ctx)
	if err != nil || start != 0 {
		t.Fatalf("LastSeq of an empty log: %d %v", start, err)
	}
	a := e.insertInvocation(acct, nil, "success", time.Now().Add(-time.Hour), 1)
	e.insertInvocation("000000000077", nil, "success", time.Now(), 1)
	b := e.insertInvocation(acct, nil, "failure", time.Now(), 1)
	got, err := log.Follow(ctx, acct, 0, 10*time.Second, triggers.InvocationFilter{})
	if err != nil || len(got) != 2 || got[0].ID != a || got[1].ID != b || !got[0].Settled || got[1].Settled || got[0].Seq >= got[1].Seq {
		t.Fatalf("Follow: %+v %v", got, err)
	}
	got, err = log.Follow(ctx, acct, got[0].Seq, 10*time.Second, triggers.InvocationFilter{Outcome: "failure"})
	if err != nil || len(got) != 1 || got[0].ID != b || got[0].Trigger != triggers.InvokeTrigger {
		t.Fatalf("Follow after: %+v %v", got, err)
	}
	if last, err := log.LastSeq(ctx); err != nil || last != got[0].Seq {
		t.Fatalf("LastSeq %d %v, want %d", last, err, got[0].Seq)
	}
	// SeqSince starts before the first record of the account started
	// since then; with none, at the end.
	all, err := log.Follow(ctx, acct, 0, 10*time.Second, triggers.InvocationFilter{})
	if err != nil || len(all) != 2 {
		t.Fatal(all, err)
	}
	if seq, err := log.SeqSince(ctx, acct, time.Now().Add(-time.Minute)); err != nil || seq != all[1].Seq-1 {
		t.Fatalf("SeqSince a minute ago: %d %v, want %d", seq, err, all[1].Seq-1)
	}
	if seq, err := log.SeqSince(ctx, acct, time.Now().Add(time.Hour)); err != nil || seq != all[1].Seq {
		t.Fatalf("SeqSince the future: %d %v, want the end %d", seq, err, all[1].Seq)
	}
}
