package server

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/functions"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
	"github.com/sluicehq/sluice/triggers"
	"github.com/sluicehq/sluice/wire"
)

// tenancyFixture is an account with resources inside and outside the
// queues orders*, and one key of each shape.
type tenancyFixture struct {
	acct string
	// tokens and ids by key shape
	tok, id map[string]string
	// invocation ids by trigger name ("" for none)
	inv map[string]int64
}

// keyShapes are the keys TestQueueLimitedKeys tries every route with.
var keyShapes = []struct {
	name           string
	scopes, queues []string
}{
	{"full", []string{ScopeAllMQ, ScopeDeploy}, nil},
	{"orders-admin", []string{ScopeAdmin}, []string{"orders*"}},
	{"orders-all", []string{ScopeAllMQ}, []string{"orders*"}},
	{"send-only", []string{ScopeSend}, nil},
	{"orders-admin-2", []string{ScopeAdmin}, []string{"orders*"}}, // a victim of revokes
}

func (e *env) tenancyFixture() tenancyFixture {
	e.t.Helper()
	ctx := context.Background()
	f := tenancyFixture{acct: newAccount(), tok: map[string]string{}, id: map[string]string{}, inv: map[string]int64{}}
	for _, k := range keyShapes {
		f.tok[k.name] = e.key(f.acct, k.scopes, k.queues...)
		f.id[k.name] = f.tok[k.name][:23]
	}
	for _, q := range []string{"orders-1", "other"} {
		if _, err := e.srv.queue.CreateQueue(ctx, f.acct, q, pgqueue.Settings{}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.deployTrap(f.acct, "f")
	for _, tr := range []triggers.Trigger{
		{Name: "t-orders", Kind: triggers.KindQueue, Function: "f", Queue: "orders-1"},
		{Name: "t-other", Kind: triggers.KindQueue, Function: "f", Queue: "other"},
		{Name: "t-cron", Kind: triggers.KindCron, Function: "f", CronSpec: "0 0 1 1 *", Timezone: "UTC"},
	} {
		tr.Account, tr.Alias, tr.Enabled, tr.Source = f.acct, "live", false, triggers.SourceAPI
		tr.AckPolicy, tr.BatchSize, tr.Concurrency, tr.LeaseExtension = triggers.AckPolicyAck, 10, 1, true
		if _, err := e.srv.triggers.Put(ctx, tr); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, h := range []Hook{{Name: "h-orders", Queue: "orders-1", Verify: "none"}, {Name: "h-other", Queue: "other", Verify: "none"}} {
		if _, err := e.srv.PutHook(ctx, f.acct, h); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, trig := range []string{"t-orders", "t-other", ""} {
		var id int64
		if err := e.srv.pool.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s.invocations (account, function, version, trigger_id,
			trigger_type, source, batch_size, started_at, duration_ms, outcome, stderr)
			VALUES ($1, 'f', 1, (SELECT id FROM %[1]s.triggers WHERE account = $1 AND name = $2), 'queue', 'x', 1, now(), 1, 'failure', 'secret stderr')
			RETURNING id`, e.srv.cfg.Schema), f.acct, trig).Scan(&id); err != nil {
			e.t.Fatal(err)
		}
		f.inv[trig] = id
	}
	return f
}

// TestQueueLimitedKeys tries every management route that touches a
// queue-bound resource with every key shape: a key may read, change or
// delete a resource only if every queue it touches (before and after)
// matches the key's patterns, and revoke only keys it covers.
func TestQueueLimitedKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type want map[string]int // key shape → status; missing: 403
	v := "/v1/accounts/{acct}"
	cases := []struct {
		name, method, path, body string
		want                     want
	}{
		{"redirect other's trigger", "PUT", v + "/triggers/t-other", `{"kind":"queue","queue":"orders-1","function":"f"}`, want{"full": 200}},
		{"update own trigger", "PUT", v + "/triggers/t-orders", `{"kind":"queue","queue":"orders-1","function":"f","enabled":false}`, want{"full": 200, "orders-admin": 200, "orders-all": 200}},
		{"move own trigger out", "PUT", v + "/triggers/t-orders", `{"kind":"queue","queue":"other","function":"f","enabled":false}`, want{"full": 200}},
		{"new trigger", "PUT", v + "/triggers/t-new", `{"kind":"queue","queue":"orders-1","function":"f","enabled":false}`, want{"full": 200, "orders-admin": 200, "orders-all": 200}},
		{"new account-wide cron", "PUT", v + "/triggers/t-new", `{"kind":"cron","cron_spec":"0 0 1 1 *","function":"f","enabled":false}`, want{"full": 200}},
		{"overwrite cron", "PUT", v + "/triggers/t-cron", `{"kind":"cron","cron_spec":"0 0 1 1 *","queue":"orders-1","enqueue_body":{},"enabled":false}`, want{"full": 200}},
		{"delete other's trigger", "DELETE", v + "/triggers/t-other", "", want{"full": 204}},
		{"delete own trigger", "DELETE", v + "/triggers/t-orders", "", want{"full": 204, "orders-admin": 204, "orders-all": 204}},
		{"delete cron", "DELETE", v + "/triggers/t-cron", "", want{"full": 204}},
		{"redirect other's hook", "POST", v + "/hooks", `{"name":"h-other","queue":"orders-1","verify":"none"}`, want{"full": 200}},
		{"update own hook", "POST", v + "/hooks", `{"name":"h-orders","queue":"orders-1","verify":"none"}`, want{"full": 200, "orders-admin": 200, "orders-all": 200}},
		{"delete other's hook", "DELETE", v + "/hooks/h-other", "", want{"full": 204}},
		{"delete own hook", "DELETE", v + "/hooks/h-orders", "", want{"full": 204, "orders-admin": 204, "orders-all": 204}},
		{"revoke full key", "DELETE", v + "/keys/{full}", "", want{"full": 204}},
		{"revoke send-only key (wider queues)", "DELETE", v + "/keys/{send-only}", "", want{"full": 204}},
		{"revoke a peer", "DELETE", v + "/keys/{orders-admin-2}", "", want{"full": 204, "orders-admin": 204, "orders-all": 204}},
		{"revoke a wider-scoped peer", "DELETE", v + "/keys/{orders-all}", "", want{"full": 204, "orders-all": 204}},
		{"other's invocation", "GET", v + "/invocations/{inv:t-other}", "", want{"full": 200, "orders-admin": 404, "orders-all": 404}},
		{"own invocation", "GET", v + "/invocations/{inv:t-orders}", "", want{"full": 200, "orders-admin": 200, "orders-all": 200}},
		{"account-wide invocation", "GET", v + "/invocations/{inv:}", "", want{"full": 200, "orders-admin": 404, "orders-all": 404}},
		{"other queue", "GET", v + "/queues/other", "", want{"full": 200}},
		{"delete other queue", "DELETE", v + "/queues/other", "", want{"full": 204}},
		{"own queue", "PATCH", v + "/queues/orders-1", `{"max_receive_count":3}`, want{"full": 200, "orders-admin": 200, "orders-all": 200}},
		{"send to other", "POST", "/{acct}/other/messages", `{}`, want{"full": 201, "send-only": 201}},
		{"send to own", "POST", "/{acct}/orders-1/messages", `{}`, want{"full": 201, "send-only": 201, "orders-all": 201}},
		// Apps span the account: only keys for every queue, with mq:admin
		// (and functions:deploy to read deploy state or change anything).
		{"list apps", "GET", v + "/apps", "", want{"full": 200}},
		{"show an app", "GET", v + "/apps/nothing", "", want{"full": 404}},
		{"deploy state", "GET", v + "/deploy/state", "", want{"full": 200}},
		{"claim own queue for an app", "PUT", v + "/apps/shop/queues/orders-1", "", want{"full": 204}},
		{"delete an app", "DELETE", v + "/apps/nothing?dry_run=true", "", want{"full": 404}},
		{"plan an app", "POST", v + "/apps/shop/plan", `{"manifest":"queues: {orders-2: {}}"}`, want{"full": 200}},
		{"delete a function", "DELETE", v + "/functions/f", "", want{"full": 204}},
	}
	for _, tc := range cases {
		for _, k := range keyShapes[:4] {
			t.Run(tc.name+"/"+k.name, func(t *testing.T) {
				t.Parallel()
				sub := *e
				sub.t = t
				f := sub.tenancyFixture()
				path := f.expand(tc.path)
				status := tc.want[k.name]
				if status == 0 {
					status = 403
				}
				res := sub.do(f.tok[k.name], tc.method, path, tc.body)
				res.expect(status)
			})
		}
	}

	// Lists show only what the key may read.
	f := e.tenancyFixture()
	names := func(tok, what string) []string {
		t.Helper()
		res := e.do(tok, "GET", "/v1/accounts/"+f.acct+"/"+what, "").expect(200)
		var out []string
		switch what {
		case "triggers":
			var l wire.TriggerList
			res.decode(&l)
			for _, x := range l.Triggers {
				out = append(out, x.Name)
			}
		case "hooks":
			var l wire.HookList
			res.decode(&l)
			for _, x := range l.Hooks {
				out = append(out, x.Name)
			}
		case "keys":
			var l wire.KeyList
			res.decode(&l)
			for _, x := range l.Keys {
				for name, id := range f.id {
					if id == x.ID {
						out = append(out, name)
					}
				}
			}
		case "invocations":
			var l wire.InvocationList
			res.decode(&l)
			for _, x := range l.Invocations {
				out = append(out, fmt.Sprint(x.ID))
			}
		}
		sort.Strings(out)
		return out
	}
	for _, tc := range []struct {
		key, what string
		want      []string
	}{
		{"full", "triggers", []string{"t-cron", "t-orders", "t-other"}},
		{"orders-admin", "triggers", []string{"t-orders"}},
		{"full", "hooks", []string{"h-orders", "h-other"}},
		{"orders-admin", "hooks", []string{"h-orders"}},
		{"full", "keys", []string{"full", "orders-admin", "orders-admin-2", "orders-all", "send-only"}},
		{"orders-admin", "keys", []string{"orders-admin", "orders-admin-2", "orders-all"}},
		{"full", "invocations", sortedIDs(f.inv[""], f.inv["t-orders"], f.inv["t-other"])},
		{"orders-admin", "invocations", sortedIDs(f.inv["t-orders"])},
		{"orders-all", "invocations", sortedIDs(f.inv["t-orders"])},
	} {
		if got := names(f.tok[tc.key], tc.what); !slices.Equal(got, tc.want) {
			t.Errorf("%s lists %s %v, want %v", tc.key, tc.what, got, tc.want)
		}
	}
	// A page of invocations for a limited key is filled from older ones.
	res := e.do(f.tok["orders-admin"], "GET", "/v1/accounts/"+f.acct+"/invocations?limit=1", "").expect(200)
	var l wire.InvocationList
	res.decode(&l)
	if len(l.Invocations) != 1 || l.Invocations[0].ID != f.inv["t-orders"] {
		t.Errorf("limit=1 for orders-admin: %+v", l.Invocations)
	}
}

func sortedIDs(ids ...int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	sort.Strings(out)
	return out
}

// expand fills in {acct}, {<key shape>} (its id) and {inv:<trigger>}.
func (f tenancyFixture) expand(p string) string {
	out := ""
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			return out + p
		}
		j := strings.IndexByte(p[i:], '}') + i
		name := p[i+1 : j]
		switch {
		case name == "acct":
			out += p[:i] + f.acct
		case strings.HasPrefix(name, "inv:"):
			out += p[:i] + fmt.Sprint(f.inv[name[4:]])
		default:
			out += p[:i] + f.id[name]
		}
		p = p[j+1:]
	}
}

// deployTrap deploys a small module as function name of account.
func (e *env) deployTrap(account, name string) {
	e.t.Helper()
	if _, err := e.srv.registry.Deploy(context.Background(), account, name, wasmbuild.Handwritten("trap"),
		functions.Config{MemoryMiB: 16, Timeout: functions.DefaultTimeout}, ""); err != nil {
		e.t.Fatal(err)
	}
}

// TestTriggerOfMissingFunction: a trigger whose function does not exist
// is refused (400 naming the function) instead of failing every reload.
func TestTriggerOfMissingFunction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	msg := e.do(tok, "PUT", "/v1/accounts/"+acct+"/triggers/t", `{"kind":"queue","queue":"q","function":"ghost"}`).expectError(400, "invalid_argument")
	if !strings.Contains(msg, `"ghost"`) {
		t.Fatalf("message %q does not name the function", msg)
	}
	e.do(tok, "PUT", "/v1/accounts/"+acct+"/triggers/t", `{"kind":"cron","cron_spec":"* * * * *","function":"ghost"}`).expectError(400, "invalid_argument")
	e.deployTrap(acct, "ghost")
	e.do(tok, "PUT", "/v1/accounts/"+acct+"/triggers/t", `{"kind":"queue","queue":"q","function":"ghost","enabled":false}`).expect(200)
	// A cron trigger that only enqueues names no function.
	e.do(tok, "PUT", "/v1/accounts/"+acct+"/triggers/c", `{"kind":"cron","cron_spec":"0 0 1 1 *","queue":"q","enqueue_body":{}}`).expect(200)
}

// A key limited to some queues stays off what serves the whole account,
// whatever its scopes: functions (deploy, alias, rollback, delete), the
// metrics of every queue, cron triggers that invoke a function (even when
// they name a queue), and triggers running a function that acts past the
// trigger's queue: one that may emit (what it emits could reach queues
// beyond the key's patterns), write stores or call HTTP hosts.
func TestQueueLimitedKeysStayOffAccountWideResources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.tenancyFixture()
	limited := e.key(f.acct, []string{ScopeAdmin, ScopeDeploy, ScopeMetrics}, "orders*")
	full := e.key(f.acct, []string{ScopeAdmin, ScopeDeploy, ScopeMetrics})
	v := "/v1/accounts/" + f.acct
	trap := wasmbuild.Handwritten("trap")
	wantForbidden := func(res *response, what string) {
		t.Helper()
		if msg := res.expectError(403, "forbidden"); !strings.Contains(msg, "limited to queues orders*") {
			t.Errorf("%s: %q, want it to name the key's queues", what, msg)
		}
	}
	wantForbidden(e.deploy(limited, f.acct, "f", "", trap), "deploy")
	wantForbidden(e.do(limited, "PUT", v+"/functions/f/aliases/live", `{"version":1}`), "set alias")
	wantForbidden(e.do(limited, "POST", v+"/functions/f/rollback", `{"alias":"live"}`), "rollback")
	wantForbidden(e.do(limited, "DELETE", v+"/functions/f", ""), "delete function")
	wantForbidden(e.do(limited, "GET", "/metrics", ""), "metrics")
	e.do(full, "GET", "/metrics", "").expect(200)
	e.do(limited, "GET", v+"/functions/f", "").expect(200) // reading stays open

	// A cron trigger that invokes a function takes no queue, from any key.
	for _, tok := range []string{full, limited} {
		e.do(tok, "PUT", v+"/triggers/t-sneak", `{"kind":"cron","cron_spec":"0 0 1 1 *","function":"f","queue":"orders-1","enabled":false}`).
			expectError(400, "invalid_argument")
	}

	// A cron trigger that enqueues to the key's queue runs no function:
	// the limited key puts it and switches it on and off.
	e.do(limited, "PUT", v+"/triggers/t-tick", `{"kind":"cron","cron_spec":"0 0 1 1 *","queue":"orders-1","enqueue_body":{"tick":true},"enabled":false}`).expect(200)
	e.do(limited, "POST", v+"/triggers/t-tick/enable", "").expect(200)
	e.do(limited, "POST", v+"/triggers/t-tick/disable", "").expect(200)

	// A function that may emit is wired by keys for every queue only.
	e.deploy(full, f.acct, "g", "?emits=other", trap).expect(201)
	put := func(tok, fn string) *response {
		return e.do(tok, "PUT", v+"/triggers/t-g", `{"kind":"queue","queue":"orders-1","function":"`+fn+`","enabled":false}`)
	}
	if msg := put(limited, "g").expectError(403, "forbidden"); !strings.Contains(msg, "function g version 1, which may emit to other") {
		t.Errorf("limited key wiring an emitting function: %q", msg)
	}
	put(full, "g").expect(200)
	// Nor switched on by them: the trigger the full key wired stays off
	// for the limited key, which may still switch it off.
	if msg := e.do(limited, "POST", v+"/triggers/t-g/enable", "").expectError(403, "forbidden"); !strings.Contains(msg, "function g version 1, which may emit to other") {
		t.Errorf("limited key enabling a trigger of an emitting function: %q", msg)
	}
	e.do(limited, "POST", v+"/triggers/t-g/disable", "").expect(200)
	e.do(full, "POST", v+"/triggers/t-g/enable", "").expect(200)
	put(limited, "f").expect(200) // f emits nothing
	e.do(limited, "POST", v+"/triggers/t-g/enable", "").expect(200)

	// Nor one that writes the account's stores or calls HTTP hosts: the
	// limited key's invoke of it would be a dry run, doing neither.
	e.deploy(full, f.acct, "s", "?store=ledger", trap).expect(201)
	e.deploy(full, f.acct, "h", "?allowed_outbound_host=https://api.example.com", trap).expect(201)
	e.deploy(full, f.acct, "all", "?emits=other&store=ledger&allowed_outbound_host=https://api.example.com", trap).expect(201)
	for fn, effect := range map[string]string{
		"s":   "function s version 1, which may write stores ledger",
		"h":   "function h version 1, which may call https://api.example.com",
		"all": "function all version 1, which may emit to other and may write stores ledger and may call https://api.example.com",
	} {
		if msg := put(limited, fn).expectError(403, "forbidden"); !strings.Contains(msg, effect) {
			t.Errorf("limited key wiring function %s: %q, want it to say %q", fn, msg, effect)
		}
		put(full, fn).expect(200)
		e.do(limited, "POST", v+"/triggers/t-g/disable", "").expect(200)
		if msg := e.do(limited, "POST", v+"/triggers/t-g/enable", "").expectError(403, "forbidden"); !strings.Contains(msg, effect) {
			t.Errorf("limited key enabling a trigger of function %s: %q, want it to say %q", fn, msg, effect)
		}
	}
}
