package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/wire"
)

func TestQueueManagement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("")
	base := "/v1/accounts/" + acct + "/queues"

	var q wire.Queue
	e.do(tok, "POST", base, `{"name":"orders","visibility_timeout_seconds":0,"max_receive_count":3,"dedup_window_seconds":0}`).expect(201).decode(&q)
	if q.Name != "orders" || q.VisibilityTimeoutSeconds != 0 || q.MaxReceiveCount != 3 || q.DedupWindowSeconds != 0 ||
		q.RetentionSeconds != 345600 || q.MaxMessageBytes != 262144 || q.CreatedAt.IsZero() {
		t.Fatalf("created %+v", q)
	}
	e.do(tok, "POST", base, `{"name":"audit"}`).expect(201)
	e.do(tok, "POST", "/"+acct+"/orders/messages", `[1,2]`).expect(201)

	var list struct{ Queues []wire.Queue }
	e.do(tok, "GET", base, "").expect(200).decode(&list)
	if len(list.Queues) != 2 || list.Queues[0].Name != "audit" || list.Queues[0].Stats != nil {
		t.Fatalf("list %+v", list.Queues)
	}
	e.do(tok, "GET", base+"?live=true", "").expect(200).decode(&list)
	if list.Queues[1].Stats == nil || list.Queues[1].Stats.Ready != 2 || list.Queues[0].Stats == nil {
		t.Fatalf("live list %+v", list.Queues)
	}
	// A page's live counts are those of its own queues.
	e.do(tok, "GET", base+"?live=true&limit=1&after=audit", "").expect(200).decode(&list)
	if len(list.Queues) != 1 || list.Queues[0].Name != "orders" || list.Queues[0].Stats == nil || list.Queues[0].Stats.Ready != 2 {
		t.Fatalf("live page after audit %+v", list.Queues)
	}

	e.do(tok, "PATCH", base+"/orders", `{"max_receive_count":7}`).expect(200).decode(&q)
	if q.MaxReceiveCount != 7 || q.VisibilityTimeoutSeconds != 0 || !q.UpdatedAt.After(q.CreatedAt) {
		t.Fatalf("updated %+v", q)
	}
	e.do(tok, "GET", base+"/orders", "").expect(200).decode(&q)
	if q.MaxReceiveCount != 7 || q.Stats == nil || q.Stats.Ready != 2 {
		t.Fatalf("get %+v %+v", q, q.Stats)
	}
	e.do(tok, "DELETE", base+"/orders", "").expect(204)
	e.do(tok, "GET", base+"/orders", "").expectError(404, "queue_not_found")
	e.do(tok, "DELETE", base+"/orders", "").expectError(404, "queue_not_found")
	e.do(tok, "POST", "/"+acct+"/orders/messages", `{}`).expectError(404, "queue_not_found")
}

func (e *env) deploy(token, account, name, query string, module []byte) *response {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.ts.URL+"/v1/accounts/"+account+"/functions/"+name+"/versions"+query, bytes.NewReader(module))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/wasm")
	return e.send(token, req)
}

func TestFunctionManagement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := newAccount()
	tok := e.key(acct, []string{ScopeDeploy})
	module := wasmbuild.Handwritten("trap")

	var d struct {
		Version    int    `json:"version"`
		Created    bool   `json:"created"`
		AliasMoved bool   `json:"alias_moved"`
		SHA256     string `json:"sha256"`
	}
	e.deploy(tok, acct, "f", "?memory_mb=32&timeout_ms=1000&env=TOKEN=s3cret&env=MODE=x", module).expect(201).decode(&d)
	if d.Version != 1 || !d.Created || !d.AliasMoved || len(d.SHA256) != 64 {
		t.Fatalf("deploy 1: %+v", d)
	}
	e.deploy(tok, acct, "f", "?memory_mb=32&timeout_ms=1000&env=TOKEN=s3cret&env=MODE=x", module).expect(201).decode(&d)
	if d.Version != 1 || d.Created {
		t.Fatalf("same deploy again: %+v", d)
	}
	e.deploy(tok, acct, "f", "?memory_mb=64", module).expect(201).decode(&d)
	if d.Version != 2 || !d.Created {
		t.Fatalf("deploy 2: %+v", d)
	}

	var fn wire.Function
	e.do(tok, "GET", "/v1/accounts/"+acct+"/functions/f", "").expect(200).decode(&fn)
	if fn.LatestVersion != 2 || fn.Aliases["live"] != 2 || len(fn.Versions) != 2 ||
		fn.Versions[0].MemoryMB != 32 || fn.Versions[0].TimeoutMS != 1000 || fn.Versions[0].Env["TOKEN"] != "****" {
		t.Fatalf("function %+v", fn)
	}
	r := e.do(tok, "GET", "/v1/accounts/"+acct+"/functions/f", "")
	if strings.Contains(string(r.body), "s3cret") {
		t.Fatal("env value shown")
	}
	var rb struct{ Version int }
	e.do(tok, "POST", "/v1/accounts/"+acct+"/functions/f/rollback", "").expect(200).decode(&rb)
	if rb.Version != 1 {
		t.Fatalf("rolled back to %d", rb.Version)
	}
	e.do(tok, "PUT", "/v1/accounts/"+acct+"/functions/f/aliases/canary", `{"version":2}`).expect(204)
	e.do(tok, "PUT", "/v1/accounts/"+acct+"/functions/f/aliases/canary", `{"version":9}`).expectError(404, "not_found")
	var list struct{ Functions []wire.Function }
	e.do(tok, "GET", "/v1/accounts/"+acct+"/functions", "").expect(200).decode(&list)
	if len(list.Functions) != 1 || list.Functions[0].Aliases["canary"] != 2 || list.Functions[0].Aliases["live"] != 1 {
		t.Fatalf("functions %+v", list.Functions)
	}

	e.deploy(tok, acct, "g", "", wasmbuild.Handwritten("unknown-import")).expectError(400, "invalid_argument")
	e.deploy(tok, acct, "g", "", []byte("not wasm")).expectError(400, "invalid_argument")
	e.deploy(tok, acct, "g", "?memory_mb=0", module).expectError(400, "invalid_argument")
	e.deploy(tok, acct, "g", "?timeout_ms=1.5", module).expectError(400, "invalid_argument")
	e.deploy(tok, acct, "g", "?env=1BAD=x", module).expectError(400, "invalid_argument")
	e.deploy(tok, acct, "bad name", "", module).expectError(400, "invalid_name")
	// mq:* does not deploy.
	mq := e.key(acct, []string{ScopeAllMQ})
	e.deploy(mq, acct, "f", "", module).expectError(403, "forbidden")
}

func TestTriggersAndInvocations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("jobs")
	e.deployTrap(acct, "worker")
	base := "/v1/accounts/" + acct + "/triggers"
	var put struct {
		Name    string
		Changed bool
	}
	e.do(tok, "PUT", base+"/work", `{"kind":"queue","queue":"jobs","function":"worker","batch_size":5,"lease_extension":false}`).expect(200).decode(&put)
	if !put.Changed {
		t.Fatal("new trigger not changed")
	}
	e.do(tok, "PUT", base+"/work", `{"kind":"queue","queue":"jobs","function":"worker","batch_size":5,"lease_extension":false}`).expect(200).decode(&put)
	if put.Changed {
		t.Fatal("same trigger again changed")
	}
	e.do(tok, "PUT", base+"/tick", `{"kind":"cron","cron_spec":"*/5 * * * *","queue":"jobs","enqueue_body":{"tick":true},"timezone":"Europe/Paris"}`).expect(200)
	var list struct{ Triggers []wire.TriggerInfo }
	e.do(tok, "GET", base, "").expect(200).decode(&list)
	if len(list.Triggers) != 2 {
		t.Fatalf("triggers %+v", list.Triggers)
	}
	tick, work := list.Triggers[0], list.Triggers[1]
	if work.BatchSize != 5 || work.LeaseExtension || !work.Enabled || work.Source != "api" || work.Alias != "live" ||
		tick.Timezone != "Europe/Paris" || string(tick.EnqueueBody) != `{"tick":true}` {
		t.Fatalf("triggers %+v", list.Triggers)
	}
	e.do(tok, "DELETE", base+"/work", "").expect(204)
	e.do(tok, "DELETE", base+"/work", "").expectError(404, "not_found")

	// Invocations, as the engine records them.
	ctx := context.Background()
	for i, outcome := range []string{"success", "failure", "success"} {
		if _, err := e.srv.pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.invocations (account, function, version, trigger_type, source,
			batch_size, started_at, duration_ms, outcome, error) VALUES ($1, $2, 1, 'queue', 'jobs', 1, now() - $3 * interval '1 minute', 12.5, $4, $5)`,
			e.srv.cfg.Schema), acct, "worker", i, outcome, map[bool]string{true: "", false: "boom"}[outcome == "success"]); err != nil {
			t.Fatal(err)
		}
	}
	var inv struct{ Invocations []wire.Invocation }
	e.do(tok, "GET", "/v1/accounts/"+acct+"/invocations", "").expect(200).decode(&inv)
	if len(inv.Invocations) != 3 || inv.Invocations[0].ID <= inv.Invocations[1].ID {
		t.Fatalf("invocations %+v", inv.Invocations)
	}
	e.do(tok, "GET", "/v1/accounts/"+acct+"/invocations?outcome=failure&function=worker&limit=5", "").expect(200).decode(&inv)
	if len(inv.Invocations) != 1 || inv.Invocations[0].Error != "boom" {
		t.Fatalf("failures %+v", inv.Invocations)
	}
	e.do(tok, "GET", "/v1/accounts/"+acct+"/invocations?since=2999-01-01T00:00:00Z", "").expect(200).decode(&inv)
	if len(inv.Invocations) != 0 {
		t.Fatalf("future invocations %+v", inv.Invocations)
	}
	// Another account sees none of them.
	other, otherTok := e.admin("")
	e.do(otherTok, "GET", "/v1/accounts/"+other+"/invocations", "").expect(200).decode(&inv)
	if len(inv.Invocations) != 0 {
		t.Fatalf("other account sees %+v", inv.Invocations)
	}
}

func TestInvocationFiltersAndGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("jobs")
	e.deployTrap(acct, "worker")
	base := "/v1/accounts/" + acct
	for _, name := range []string{"a", "b"} {
		e.do(tok, "PUT", base+"/triggers/"+name, `{"kind":"queue","queue":"jobs","function":"worker","enabled":false}`).expect(200)
	}
	var ids [2]int64
	for i, name := range []string{"a", "b"} {
		if err := e.srv.pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT id FROM %s.triggers WHERE account = $1 AND name = $2`, e.srv.cfg.Schema),
			acct, name).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Six invocations, one a minute, oldest first: a, b, a, b, a, b.
	for i := range 6 {
		if _, err := e.srv.pool.Exec(t.Context(), fmt.Sprintf(`INSERT INTO %s.invocations (account, function, version, trigger_id,
			trigger_type, source, batch_size, started_at, duration_ms, outcome)
			VALUES ($1, 'worker', 1, $2, 'queue', 'jobs', 1, '2026-11-30T10:00:00Z'::timestamptz + $3 * interval '1 minute', 5, 'success')`,
			e.srv.cfg.Schema), acct, ids[i%2], i); err != nil {
			t.Fatal(err)
		}
	}
	list := func(query string) []wire.Invocation {
		t.Helper()
		var out struct{ Invocations []wire.Invocation }
		e.do(tok, "GET", base+"/invocations"+query, "").expect(200).decode(&out)
		return out.Invocations
	}
	all := list("")
	if len(all) != 6 || all[0].Trigger != "b" || all[1].Trigger != "a" || *all[0].TriggerID != ids[1] {
		t.Fatalf("invocations %+v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID {
			t.Fatalf("not newest first: %d then %d", all[i-1].ID, all[i].ID)
		}
	}
	if got := list("?trigger=a"); len(got) != 3 || got[0].Trigger != "a" || got[2].Trigger != "a" {
		t.Errorf("trigger=a: %+v", got)
	}
	if got := list("?trigger=nope"); len(got) != 0 {
		t.Errorf("trigger=nope: %+v", got)
	}
	// until is exclusive; since inclusive.
	if got := list("?since=2026-11-30T10:01:00Z&until=2026-11-30T10:03:00Z"); len(got) != 2 || got[0].ID != all[3].ID || got[1].ID != all[4].ID {
		t.Errorf("since/until: %+v", got)
	}
	// Paging with before_id, two at a time, visits each once.
	var paged []int64
	for q := "?limit=2"; ; {
		page := list(q)
		for _, v := range page {
			paged = append(paged, v.ID)
		}
		if len(page) < 2 {
			break
		}
		q = fmt.Sprintf("?limit=2&before_id=%d", page[len(page)-1].ID)
	}
	if len(paged) != 6 || paged[0] != all[0].ID || paged[5] != all[5].ID {
		t.Errorf("paged %v", paged)
	}
	if got := list(fmt.Sprintf("?before_id=%d&trigger=b", all[0].ID)); len(got) != 2 || got[0].ID != all[2].ID {
		t.Errorf("before_id with trigger: %+v", got)
	}
	for _, q := range []string{"?until=yesterday", "?before_id=0", "?before_id=x", "?since=2026-13-01T00:00:00Z"} {
		e.do(tok, "GET", base+"/invocations"+q, "").expectError(400, "invalid_argument")
	}

	// One invocation by id.
	var one wire.Invocation
	e.do(tok, "GET", fmt.Sprintf("%s/invocations/%d", base, all[1].ID), "").expect(200).decode(&one)
	if one.ID != all[1].ID || one.Trigger != "a" || one.Function != "worker" || one.StartedAt.IsZero() {
		t.Errorf("get: %+v", one)
	}
	e.do(tok, "GET", fmt.Sprintf("%s/invocations/%d", base, all[0].ID+1000), "").expectError(404, "not_found")
	e.do(tok, "GET", base+"/invocations/abc", "").expectError(400, "invalid_argument")
	other, otherTok := e.admin("")
	e.do(otherTok, "GET", fmt.Sprintf("/v1/accounts/%s/invocations/%d", other, all[1].ID), "").expectError(404, "not_found")

	// A deleted trigger's invocations keep their trigger_id and its name,
	// which the filter still takes.
	e.do(tok, "DELETE", base+"/triggers/a", "").expect(204)
	e.do(tok, "GET", fmt.Sprintf("%s/invocations/%d", base, all[1].ID), "").expect(200).decode(&one)
	if one.Trigger != "a" {
		t.Errorf("deleted trigger's name: %q, want a", one.Trigger)
	}
	var kept wire.InvocationList
	e.do(tok, "GET", base+"/invocations?trigger=a", "").expect(200).decode(&kept)
	if len(kept.Invocations) == 0 {
		t.Errorf("the filter lost the deleted trigger's invocations")
	}
}

func TestQueueMinuteStats(t *testing.T) {
	t.Parallel()
	if s := time.Now().Second(); s >= 55 { // keep the steps in one minute
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	e := newEnv(t)
	acct, tok := e.admin("orders")
	q := "/" + acct + "/orders"
	e.do(tok, "POST", q+"/messages", `[1, 2, 3]`).expect(201)
	e.do(tok, "POST", q+"/messages/receive", `{"delete": true}`).expect(200)
	if err := e.srv.sweeper.RecordStats(t.Context()); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Queue   string
		Minutes []map[string]any
	}
	e.do(tok, "GET", "/v1/accounts/"+acct+"/queues/orders/stats?minutes=5", "").expect(200).decode(&out)
	if out.Queue != "orders" || len(out.Minutes) != 5 {
		t.Fatalf("stats: %+v", out)
	}
	var prev time.Time
	for i, m := range out.Minutes {
		at, err := time.Parse(time.RFC3339, m["minute"].(string))
		if err != nil || at.Second() != 0 || i > 0 && !at.Equal(prev.Add(time.Minute)) {
			t.Fatalf("minute %d: %v after %v (%v)", i, m["minute"], prev, err)
		}
		prev = at
		if i < 4 && (m["sends"] != 0.0 || m["ready"] != nil || m["dlq"] != nil) {
			t.Errorf("minute %d before the queue: %v", i, m)
		}
	}
	want := map[string]any{"sends": 3.0, "acks": 1.0, "dlq_moves": 0.0, "ready": 2.0, "inflight": 0.0, "delayed": 0.0, "dlq": 0.0}
	for k, v := range want {
		if got := out.Minutes[4][k]; got != v {
			t.Errorf("current minute %s = %v, want %v (%v)", k, got, v, out.Minutes[4])
		}
	}
	e.do(tok, "GET", "/v1/accounts/"+acct+"/queues/orders/stats", "").expect(200).decode(&out)
	if len(out.Minutes) != 60 {
		t.Errorf("default window: %d minutes, want 60", len(out.Minutes))
	}
	for _, bad := range []string{"0", "1441", "x", "-5"} {
		msg := e.do(tok, "GET", "/v1/accounts/"+acct+"/queues/orders/stats?minutes="+bad, "").expectError(400, "invalid_argument")
		if !strings.Contains(msg, "1 to 1440") {
			t.Errorf("minutes=%s: %q", bad, msg)
		}
	}
	e.do(tok, "GET", "/v1/accounts/"+acct+"/queues/nope/stats", "").expectError(404, "queue_not_found")
}
