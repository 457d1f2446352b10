package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/race"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/wire"
)

func (e *env) kvPut(token, account, store, key, value, query string) *response {
	e.t.Helper()
	req, err := http.NewRequest("PUT", e.ts.URL+"/v1/accounts/"+account+"/kv/"+store+"/keys/"+key+query, strings.NewReader(value))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	return e.send(token, req)
}

func TestKVRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := newAccount()
	all, read, write, mq := e.key(acct, []string{ScopeAllKV}), e.key(acct, []string{ScopeKVRead}),
		e.key(acct, []string{ScopeKVWrite}), e.key(acct, []string{ScopeAllMQ, ScopeDeploy})
	base := "/v1/accounts/" + acct + "/kv/sessions"

	e.kvPut(write, acct, "sessions", "user%2F1", "token-1", "?ttl_seconds=3600").expect(204)
	e.kvPut(all, acct, "sessions", "user%2F2", "token-2", "").expect(204)
	e.kvPut(all, acct, "sessions", "other", "x", "").expect(204)
	e.kvPut(read, acct, "sessions", "k", "v", "").expectError(403, "forbidden")
	e.kvPut(mq, acct, "sessions", "k", "v", "").expectError(403, "forbidden")
	e.kvPut(all, acct, "bad.name", "k", "v", "").expectError(400, "invalid_name")
	e.kvPut(all, acct, "sessions", "k", "v", "?ttl_seconds=-1").expect(400)

	var got wire.KVEntry
	e.do(read, "GET", base+"/keys/user%2F1", "").expect(200).decode(&got)
	if got.Key != "user/1" || got.Value == nil || *got.Value != "token-1" || got.ExpiresAt == nil ||
		time.Until(*got.ExpiresAt) < 59*time.Minute {
		t.Errorf("get: %+v", got)
	}
	e.do(write, "GET", base+"/keys/user%2F1", "").expectError(403, "forbidden")
	e.do(read, "GET", base+"/keys/nope", "").expectError(404, "not_found")

	var list wire.KVList
	e.do(read, "GET", base+"?prefix=user/&limit=1", "").expect(200).decode(&list)
	if len(list.Entries) != 1 || list.Entries[0].Key != "user/1" || list.Next != "user/1" {
		t.Fatalf("list page 1: %+v", list)
	}
	e.do(read, "GET", base+"?prefix=user/&limit=1&after="+list.Next, "").expect(200).decode(&list)
	if len(list.Entries) != 1 || list.Entries[0].Key != "user/2" {
		t.Fatalf("list page 2: %+v", list)
	}

	// A key that is not UTF-8 (a guest's keys are bytes) still pages on:
	// next_base64 carries it, as after_base64 (or percent-encoded as after).
	e.kvPut(all, acct, "sessions", "user%2F%FF", "bytes", "").expect(204)
	list = wire.KVList{}
	e.do(read, "GET", base+"?prefix=user/&limit=3", "").expect(200).decode(&list)
	if len(list.Entries) != 3 || list.Next != "" || list.NextBase64 != "dXNlci//" {
		t.Fatalf("list ending in a key that is not UTF-8: %+v", list)
	}
	e.kvPut(all, acct, "sessions", "user%2F%FF%FF", "more", "").expect(204)
	for _, after := range []string{"after_base64=" + url.QueryEscape(list.NextBase64), "after=user/%FF"} {
		list = wire.KVList{}
		e.do(read, "GET", base+"?prefix=user/&limit=3&"+after, "").expect(200).decode(&list)
		if len(list.Entries) != 1 || list.Entries[0].KeyBase64 != "dXNlci///w==" {
			t.Fatalf("the page after a key that is not UTF-8 (%s): %+v", after, list)
		}
	}
	msg := e.do(read, "GET", base+"?after_base64=%25", "").expectError(400, "invalid_argument")
	if !strings.Contains(msg, "invalid after_base64") {
		t.Errorf("a bad after_base64: %q", msg)
	}
	e.do(read, "GET", base+"?after=a&after_base64=YQ==", "").expectError(400, "invalid_argument")

	e.do(read, "DELETE", base+"/keys/other", "").expectError(403, "forbidden")
	e.do(write, "DELETE", base+"/keys/other", "").expect(204)
	e.do(write, "DELETE", base+"/keys/other", "").expectError(404, "not_found")

	// Another account sees nothing of these stores.
	acct2 := newAccount()
	e.do(e.key(acct2, []string{ScopeAllKV}), "GET", "/v1/accounts/"+acct2+"/kv/sessions/keys/user%2F2", "").expectError(404, "not_found")
	e.do(all, "GET", "/v1/accounts/"+acct2+"/kv/sessions/keys/user%2F2", "").expectError(403, "forbidden")
}

// The deploy route carries allowed_outbound_host= and store=; a change to
// them alone makes a new version.
func TestDeployCapabilities(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := newAccount()
	tok := e.key(acct, []string{ScopeDeploy})
	module := wasmbuild.Handwritten("trap")
	e.deploy(tok, acct, "f", "", module).expect(201)
	e.deploy(tok, acct, "f", "?allowed_outbound_host=http://127.0.0.1:*&store=sessions&store=counts", module).expect(201)
	e.deploy(tok, acct, "f", "?allowed_outbound_host=api.example.com", module).expectError(400, "invalid_argument")
	e.deploy(tok, acct, "f", "?store=a&store=a", module).expect(400)
	e.deploy(tok, acct, "f", "?store=bad.name", module).expect(400)
	vs, err := e.srv.Registry().Versions(context.Background(), acct, "f")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || len(vs[0].Capabilities.Stores) != 0 ||
		strings.Join(vs[1].Capabilities.Stores, ",") != "sessions,counts" ||
		strings.Join(vs[1].Capabilities.AllowedOutboundHosts, ",") != "http://127.0.0.1:*" {
		t.Errorf("versions: %+v", vs)
	}
}

// End to end: a queue trigger runs examples/status-check, deployed with
// its capabilities through the HTTP route; it calls a real HTTP server on
// 127.0.0.1 and counts in the account's store, visible through the kv
// routes.
func TestFunctionCallsHTTPAndCountsInStore(t *testing.T) {
	t.Parallel()
	if race.Enabled {
		// The server compiles the 10 MB Go module itself (no shared
		// compilation cache), which takes minutes under the race
		// detector; package runtime tests the host imports under -race.
		t.Skip("compiles a Go module: scripts/test runs it without -race")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(up.Close)
	e := newEnv(t)
	e.srv.cfg.DeployWait = 10 * time.Minute // the deploy answers once compiled (201), however long that takes
	acct, tok := e.admin("checks")
	kvTok := e.key(acct, []string{ScopeAllKV})
	module := wasmbuild.MustRead(t, "status-check", wasmbuild.Reactor)
	e.deploy(tok, acct, "status-check", "?allowed_outbound_host=http://127.0.0.1:*&store=counts", module).expect(201)
	e.do(tok, "PUT", "/v1/accounts/"+acct+"/triggers/checks", `{"kind":"queue","queue":"checks","function":"status-check"}`).expect(200)
	e.do(tok, "POST", "/"+acct+"/checks/messages", fmt.Sprintf(`{"url":%q}`, up.URL+"/healthz")).expect(201)
	e.do(tok, "POST", "/"+acct+"/checks/messages", `{"url":"http://localhost:1/healthz"}`).expect(201) // denied: retried
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := e.do(kvTok, "GET", "/v1/accounts/"+acct+"/kv/counts/keys/status:200", "")
		if r.status == 200 {
			var got wire.KVEntry
			r.decode(&got)
			if got.Value == nil || *got.Value != "1" {
				t.Fatalf("status:200 = %+v, want 1", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no count after 2 minutes: %d %s", r.status, r.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var checks wire.KVEntry
	e.do(kvTok, "GET", "/v1/accounts/"+acct+"/kv/counts/keys/checks", "").expect(200).decode(&checks)
	if checks.Value == nil || *checks.Value != "1" {
		t.Errorf("checks = %+v, want 1 (the denied call counts nothing)", checks)
	}
	// The invocation log counts the calls (the allowed one reached the
	// network, the denied one is an error), and so does /metrics.
	var calls, errs int
	for deadline := time.Now().Add(time.Minute); calls < 1 || errs < 1; time.Sleep(200 * time.Millisecond) {
		var list wire.InvocationList
		e.do(tok, "GET", "/v1/accounts/"+acct+"/invocations?function=status-check", "").expect(200).decode(&list)
		calls, errs = 0, 0
		for _, inv := range list.Invocations {
			calls, errs = calls+inv.HTTPRequests, errs+inv.HTTPErrors
			if inv.HTTPRequests > 0 && inv.HTTPBytesReceived == 0 {
				t.Errorf("invocation %d made %d requests but received no bytes", inv.ID, inv.HTTPRequests)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("invocation log: %d HTTP requests and %d errors recorded, want at least 1 of each", calls, errs)
		}
	}
	metrics := string(e.do(e.key(acct, []string{ScopeMetrics}), "GET", "/metrics", "").expect(200).body)
	for _, name := range []string{"sluice_function_http_requests_total", "sluice_function_http_errors_total", "sluice_function_http_bytes_total"} {
		if !strings.Contains(metrics, name+`{account="`+acct+`",function="status-check"}`) {
			t.Errorf("/metrics has no %s for status-check", name)
		}
	}
}
