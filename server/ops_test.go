package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/wire"
)

// deployExample builds an example (reactor) and deploys it as name.
func deployExample(t *testing.T, srv *Server, account, example, name string, env map[string]string) {
	t.Helper()
	path, err := wasmbuild.Build(t.Context(), example, wasmbuild.Reactor)
	if err != nil {
		t.Fatal(err)
	}
	module, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Registry().Deploy(t.Context(), account, name, module, functions.Config{MemoryMiB: 64, Timeout: 10 * time.Second, Env: env}, ""); err != nil {
		t.Fatal(err)
	}
}

// Triggers over HTTP: get, enable, disable, delete, each refused to a key
// without mq:admin and hidden from a key of other queues.
func TestTriggerRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("jobs")
	deployExample(t, e.srv, acct, "noop", "noop", nil)
	base := "/v1/accounts/" + acct + "/triggers/"
	e.do(tok, "PUT", base+"work", `{"kind":"queue","queue":"jobs","function":"noop"}`).expect(200)

	var ti wire.TriggerInfo
	e.do(tok, "GET", base+"work", "").expect(200).decode(&ti)
	if ti.Name != "work" || !ti.Enabled || ti.Queue != "jobs" || ti.Function != "noop" || ti.BatchSize != 10 {
		t.Fatalf("get: %+v", ti)
	}
	var res wire.SetTriggerEnabledResult
	e.do(tok, "POST", base+"work/disable", "").expect(200).decode(&res)
	if res.Enabled || !res.Changed {
		t.Fatalf("disable: %+v", res)
	}
	e.do(tok, "POST", base+"work/disable", "").expect(200).decode(&res)
	if res.Changed {
		t.Fatalf("disable again: %+v", res)
	}
	e.do(tok, "GET", base+"work", "").expect(200).decode(&ti)
	if ti.Enabled {
		t.Fatalf("get after disable: %+v", ti)
	}
	e.do(tok, "POST", base+"work/enable", "").expect(200).decode(&res)
	if !res.Enabled || !res.Changed {
		t.Fatalf("enable: %+v", res)
	}

	sender := e.key(acct, []string{ScopeSend, ScopeInvoke, ScopeDeploy})
	for _, r := range [][2]string{{"GET", "work"}, {"POST", "work/enable"}, {"POST", "work/disable"}, {"DELETE", "work"}} {
		e.do(sender, r[0], base+r[1], "").expectError(403, "forbidden")
	}
	other := e.key(acct, []string{ScopeAdmin}, "other-*")
	e.do(other, "GET", base+"work", "").expectError(404, "not_found")
	e.do(other, "POST", base+"work/disable", "").expectError(403, "forbidden")
	e.do(tok, "GET", base+"nope", "").expectError(404, "not_found")
	e.do(tok, "POST", base+"nope/enable", "").expectError(404, "not_found")
	e.do(tok, "PUT", base+"invoke", `{"kind":"queue","queue":"jobs","function":"noop"}`).expectError(400, "invalid_name")
	e.do(tok, "DELETE", base+"work", "").expect(204)
	e.do(tok, "GET", base+"work", "").expectError(404, "not_found")
	// Another account sees none of it.
	acct2, tok2 := e.admin("")
	_ = acct2
	e.do(tok2, "GET", base+"work", "").expectError(403, "forbidden")
}

// POST .../invoke runs a version by alias or number, answers each
// message's outcome and stderr, records the invocation under trigger
// invoke, and needs scope functions:invoke.
func TestInvokeRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("")
	deployExample(t, e.srv, acct, "noop", "fn", nil)
	deployExample(t, e.srv, acct, "flaky", "fn", map[string]string{"FLAKY_RETRY_SECONDS": "7"})
	path := "/v1/accounts/" + acct + "/functions/fn/invoke"
	inv := e.key(acct, []string{ScopeInvoke})

	e.do(tok, "POST", path, `{"bodies":[{}]}`).expectError(403, "forbidden") // mq:* and deploy do not invoke
	var res wire.InvokeResult
	e.do(inv, "POST", path, `{"bodies":[{"n":1},{"fail_until_attempt":2}]}`).expect(200).decode(&res)
	if res.Version != 2 || res.Outcome != "partial_failure" || res.FailureKind != "item_failures" || len(res.Messages) != 2 ||
		res.Messages[0].Outcome != "acked" || res.Messages[1].Outcome != "retry" || res.Messages[1].RetryAfterSeconds != 7 ||
		!strings.Contains(res.Stderr, "processed") || res.InvocationID == 0 {
		t.Fatalf("invoke live: %+v", res)
	}
	var v wire.Invocation
	e.do(tok, "GET", fmt.Sprintf("/v1/accounts/%s/invocations/%d", acct, res.InvocationID), "").expect(200).decode(&v)
	if v.Trigger != "invoke" || v.TriggerType != "invoke" || v.TriggerID != nil || v.Version != 2 || v.Outcome != "partial_failure" {
		t.Fatalf("recorded: %+v", v)
	}
	var list wire.InvocationList
	e.do(tok, "GET", "/v1/accounts/"+acct+"/invocations?trigger=invoke", "").expect(200).decode(&list)
	if len(list.Invocations) != 1 || list.Invocations[0].ID != res.InvocationID {
		t.Fatalf("list trigger=invoke: %+v", list)
	}

	e.do(inv, "POST", path, `{"version":1,"messages":[{"body":{"fail_until_attempt":2},"headers":{"k":"v"}}]}`).expect(200).decode(&res)
	if res.Version != 1 || res.Outcome != "success" {
		t.Fatalf("invoke version 1: %+v", res)
	}
	e.do(inv, "POST", path, `{"alias":"live","bodies":[{"fail_until_attempt":9}]}`).expect(200).decode(&res)
	if res.Outcome != "failure" || res.FailureKind != "item_failures" {
		t.Fatalf("invoke failing every message: %+v", res)
	}

	limited := e.key(acct, []string{ScopeInvoke}, "orders-*")
	e.do(limited, "POST", path, `{"bodies":[{}]}`).expectError(403, "forbidden")
	e.do(limited, "POST", path, `{"bodies":[{}],"dry_run":true}`).expect(200).decode(&res)
	if !res.DryRun || res.Outcome != "success" {
		t.Fatalf("dry run: %+v", res)
	}
	many := "[" + strings.Repeat("{},", 100) + "{}]"
	e.do(inv, "POST", path, `{"bodies":`+many+`}`).expectError(400, "invalid_argument")
	e.do(inv, "POST", path, `{"bodies":[]}`).expectError(400, "invalid_argument")
	e.do(inv, "POST", path, `{"alias":"live","version":1,"bodies":[{}]}`).expectError(400, "invalid_argument")
	e.do(inv, "POST", path, `{"bodies":[{}],"messages":[{"body":{}}]}`).expectError(400, "invalid_argument")
	big := `{"bodies":["` + strings.Repeat("x", 300<<10) + `"]}`
	e.do(inv, "POST", path, big).expectError(400, "invalid_argument")
	e.do(inv, "POST", path, `{"version":9,"bodies":[{}]}`).expectError(404, "not_found")
	e.do(inv, "POST", "/v1/accounts/"+acct+"/functions/nope/invoke", `{"bodies":[{}]}`).expectError(404, "not_found")
}

// GET .../logs streams invocations with their stderr. A follower on one
// server sees an invocation another server (process) ran and recorded.
func TestLogsFollowAcrossServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, _ := e.admin("")
	deployExample(t, e.srv, acct, "flaky", "fn", nil)

	// A second server on the same database, as another node would be.
	ctx := context.Background()
	// It shares the host's compiled-code cache, as processes of one host do.
	srv2, err := Open(ctx, Config{DatabaseURL: os.Getenv(pgtest.EnvVar), Schema: e.srv.cfg.Schema, MaxConns: 4,
		CacheDir: e.srv.cfg.CacheDir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(srv2.Handler())
	t.Cleanup(func() { ts2.Close(); _ = srv2.Stop(context.Background()) })

	key := e.key(acct, []string{ScopeAdmin, ScopeInvoke})
	id, secret, _ := strings.Cut(key, ":")
	c1, err := client.New(e.ts.URL, id, secret, client.WithAccount(acct))
	if err != nil {
		t.Fatal(err)
	}
	// The first invoke compiles the module, which under -race on a busy
	// machine can outlast the client's default timeout.
	c2, err := client.New(ts2.URL, id, secret, client.WithAccount(acct), client.WithHTTPClient(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}

	before, err := c2.Functions.Invoke(ctx, "fn", client.InvokeOptions{Bodies: []json.RawMessage{json.RawMessage(`{"n":0}`)}})
	if err != nil {
		t.Fatal(err)
	}
	// Without follow: what is there, then the end.
	var got []client.LogEntry
	if err := c1.Logs.Stream(ctx, client.LogsOptions{Since: time.Now().Add(-time.Hour)}, func(le client.LogEntry) error {
		got = append(got, le)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != before.InvocationID || !strings.Contains(got[0].Stderr, "processed") || got[0].Trigger != "invoke" {
		t.Fatalf("logs: %+v", got)
	}

	// Following on server 1, from the entry seen (After), so what is
	// recorded next is sent however soon the stream connects.
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	entries := make(chan client.LogEntry, 10)
	done := make(chan error, 1)
	go func() {
		done <- c1.Logs.Stream(streamCtx, client.LogsOptions{Follow: true, Function: "fn", After: got[0].Seq}, func(le client.LogEntry) error {
			entries <- le
			return nil
		})
	}()
	started := time.Now()
	res, err := c2.Functions.Invoke(ctx, "fn", client.InvokeOptions{Bodies: []json.RawMessage{json.RawMessage(`{"n":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(started)
	// The follower polls every logsPoll: allow a few polls plus ten times
	// what the invocation took, on a loaded machine.
	deadline := 10*logsPoll + 10*took
	select {
	case le := <-entries:
		if le.ID != res.InvocationID || le.Function != "fn" || !strings.Contains(le.Stderr, "processed") || le.Seq == 0 {
			t.Fatalf("followed entry %+v, want invocation %d", le, res.InvocationID)
		}
	case err := <-done:
		t.Fatalf("stream ended: %v", err)
	case <-time.After(deadline):
		t.Fatalf("no log entry within %s of the invocation recorded by the other server", deadline)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("stream after cancel: %v", err)
	}

	// A key without mq:admin may not read logs.
	e.do(e.key(acct, []string{ScopeInvoke}), "GET", "/v1/accounts/"+acct+"/logs", "").expectError(403, "forbidden")
	e.do(key, "GET", "/v1/accounts/"+acct+"/logs?follow=maybe", "").expectError(400, "invalid_argument")
}

// The duration histogram's exemplars name invocations by their one id
// (OpenMetrics format).
func TestMetricsExemplarNamesInvocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, _ := e.admin("")
	var id int64
	if err := e.srv.pool.QueryRow(context.Background(), fmt.Sprintf(`INSERT INTO %s.invocations (account, function, version,
		trigger_type, source, batch_size, started_at, duration_ms, outcome)
		VALUES ($1, 'mailer', 1, 'queue', 'orders', 1, now(), 250, 'success') RETURNING id`, e.srv.cfg.Schema), acct).Scan(&id); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", e.ts.URL+"/metrics", nil)
	req.RequestURI = ""
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	text := string(e.send(e.key(acct, []string{ScopeMetrics}), req).expect(200).body)
	want := fmt.Sprintf(`# {invocation_id="%d"} 0.25`, id)
	if !strings.Contains(text, want) {
		t.Errorf("metrics lack the exemplar %s:\n%s", want, grep(text, "sluice_invocation_duration_seconds_bucket"))
	}
}
