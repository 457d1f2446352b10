package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
	"github.com/sluicehq/sluice/pgqueue"
)

// These tests run the client against a real server (clienttest: a fresh
// schema on TEST_DATABASE_URL and the server's HTTP API).

// eventually polls cond until it holds or 15 s pass (background work:
// the sweeper, the dispatcher, the invocation recorder).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "orders", client.QueueSettings{}))

	s1 := must[int64](t)(c.MQ.Send(ctx, "orders", map[string]any{"id": 1}))
	batch := must[[]int64](t)(c.MQ.SendBatch(ctx, "orders", []any{json.RawMessage(`{"id":2}`), "three"}))
	s4 := must[int64](t)(c.MQ.Send(ctx, "orders", []int{4, 4}))
	if len(batch) != 2 || batch[0] <= s1 || batch[1] <= batch[0] || s4 <= batch[1] {
		t.Fatalf("sequences %d %v %d not increasing", s1, batch, s4)
	}
	dedup := client.SendOptions{DedupKey: "order-5"}
	s5 := must[int64](t)(c.MQ.Send(ctx, "orders", map[string]int{"id": 5}, dedup))
	if again := must[int64](t)(c.MQ.Send(ctx, "orders", map[string]int{"id": 5}, dedup)); again != s5 {
		t.Errorf("dedup send: sequence %d, want the first one %d", again, s5)
	}

	peeked := must[[]client.Message](t)(c.MQ.Peek(ctx, "orders", 0))
	if len(peeked) != 5 || peeked[0].Receipt != "" {
		t.Fatalf("peek: %d messages, first receipt %q", len(peeked), peeked[0].Receipt)
	}
	if string(peeked[3].Body) != "[4,4]" {
		t.Errorf("array body arrived as %s", peeked[3].Body)
	}

	got := must[[]client.Message](t)(c.MQ.Receive(ctx, "orders", client.ReceiveOptions{MaxMessages: 2}))
	if len(got) != 2 || got[0].Sequence != s1 || got[0].Receipt == "" || got[0].ReceiveCount != 1 {
		t.Fatalf("receive: %+v", got)
	}
	if string(got[0].Body) != `{"id":1}` || got[1].Sequence != batch[0] {
		t.Errorf("receive bodies: %s, %d", got[0].Body, got[1].Sequence)
	}
	if err := c.MQ.Delete(ctx, "orders", s1, got[0].Receipt); err != nil {
		t.Fatal(err)
	}
	if err := c.MQ.Delete(ctx, "orders", s1, ""); !client.IsNotFound(err) || !errors.Is(err, client.ErrMessageNotFound) {
		t.Errorf("delete twice: %v, want a 404 message_not_found", err)
	}

	del := must[[]client.Message](t)(c.MQ.Receive(ctx, "orders", client.ReceiveOptions{MaxMessages: 10, Delete: true}))
	// batch[0] is still leased; batch[1], s4 and s5 are ready.
	if len(del) != 3 || del[0].Sequence != batch[1] || del[2].Sequence != s5 {
		t.Fatalf("receive with delete: %+v", del)
	}
	if n := must[int64](t)(c.MQ.Purge(ctx, "orders")); n != 1 {
		t.Errorf("purge: %d, want 1 (the leased message)", n)
	}
	if left := must[[]client.Message](t)(c.MQ.Peek(ctx, "orders", 100)); len(left) != 0 {
		t.Errorf("after purge: %d messages", len(left))
	}
}

func TestStaleReceipt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "fence", client.QueueSettings{}))
	seq := must[int64](t)(c.MQ.Send(ctx, "fence", map[string]int{"n": 1}))
	first := must[[]client.Message](t)(c.MQ.Receive(ctx, "fence", client.ReceiveOptions{}))
	if err := c.MQ.ChangeVisibility(ctx, "fence", seq, 0, first[0].Receipt); err != nil {
		t.Fatal(err)
	}
	second := must[[]client.Message](t)(c.MQ.Receive(ctx, "fence", client.ReceiveOptions{}))
	if len(second) != 1 || second[0].Sequence != seq || second[0].Receipt == first[0].Receipt || second[0].ReceiveCount != 2 {
		t.Fatalf("receive again: %+v", second)
	}
	// The first lease's receipt is stale: refused, the newer lease intact.
	err := c.MQ.Delete(ctx, "fence", seq, first[0].Receipt)
	if !errors.Is(err, client.ErrStaleReceipt) || !client.IsConflict(err) {
		t.Fatalf("delete with a stale receipt: %v", err)
	}
	if err := c.MQ.ChangeVisibility(ctx, "fence", seq, 0, first[0].Receipt); !errors.Is(err, client.ErrStaleReceipt) {
		t.Errorf("change visibility with a stale receipt: %v", err)
	}
	if err := c.MQ.Delete(ctx, "fence", seq, second[0].Receipt); err != nil {
		t.Fatal(err)
	}
}

func TestLongPoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "jobs", client.QueueSettings{}))
	done := make(chan []client.Message, 1)
	errc := make(chan error, 1)
	go func() {
		m, err := c.MQ.Receive(ctx, "jobs", client.ReceiveOptions{WaitSeconds: 20})
		done <- m
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // let the receive start waiting; correctness does not depend on it
	seq := must[int64](t)(c.MQ.Send(ctx, "jobs", map[string]string{"job": "x"}))
	m := <-done
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m[0].Sequence != seq {
		t.Fatalf("long poll got %+v, want sequence %d", m, seq)
	}

	// Cancelling the context abandons a waiting receive.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := c.MQ.Receive(cctx, "jobs", client.ReceiveOptions{WaitSeconds: 20}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled receive: %v", err)
	}
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "mail", client.QueueSettings{MaxReceiveCount: client.Int(1)}))
	var seqs []int64
	for i := range 3 {
		seqs = append(seqs, must[int64](t)(c.MQ.Send(ctx, "mail", map[string]int{"n": i})))
	}
	got := must[[]client.Message](t)(c.MQ.Receive(ctx, "mail", client.ReceiveOptions{MaxMessages: 3, VisibilityTimeoutSeconds: 1}))
	if len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	// Their only delivery's lease expires; the sweeper moves them.
	var dead []client.DeadLetter
	eventually(t, "3 dead letters", func() bool {
		dead = must[[]client.DeadLetter](t)(c.MQ.ReceiveDLQ(ctx, "mail", 0))
		return len(dead) == 3
	})
	if dead[0].Sequence != seqs[0] || dead[0].Reason == "" || dead[0].FailedAt.IsZero() || dead[0].ReceiveCount != 1 {
		t.Errorf("dead letter: %+v", dead[0])
	}
	q := must[client.Queue](t)(c.Queues.Get(ctx, "mail"))
	if q.Stats == nil || q.Stats.DLQ != 3 || q.Stats.Ready != 0 {
		t.Errorf("stats: %+v", q.Stats)
	}
	if err := c.MQ.DeleteDLQ(ctx, "mail", seqs[0]); err != nil {
		t.Fatal(err)
	}
	if n := must[int64](t)(c.MQ.Redrive(ctx, "mail", 1)); n != 1 {
		t.Errorf("redrive 1: %d", n)
	}
	back := must[[]client.Message](t)(c.MQ.Receive(ctx, "mail", client.ReceiveOptions{MaxMessages: 10}))
	if len(back) != 1 || back[0].ReceiveCount != 1 {
		t.Errorf("redriven: %+v", back)
	}
	if n := must[int64](t)(c.MQ.PurgeDLQ(ctx, "mail")); n != 1 {
		t.Errorf("purge-dlq: %d, want 1", n)
	}
	if n := must[int64](t)(c.MQ.Redrive(ctx, "mail", 0)); n != 0 {
		t.Errorf("redrive of an empty DLQ: %d", n)
	}
}

func TestQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	q := must[client.Queue](t)(c.Queues.Create(ctx, "b-queue", client.QueueSettings{
		VisibilityTimeoutSeconds: client.Int(45), MaxReceiveCount: client.Int(3), DelaySeconds: client.Int(0),
		RetentionSeconds: client.Int(3600), MaxMessageBytes: client.Int(1024), DedupWindowSeconds: client.Int(60),
	}))
	if q.Name != "b-queue" || q.VisibilityTimeoutSeconds != 45 || q.MaxReceiveCount != 3 || q.RetentionSeconds != 3600 ||
		q.MaxMessageBytes != 1024 || q.DedupWindowSeconds != 60 || q.CreatedAt.IsZero() {
		t.Errorf("created %+v", q)
	}
	must[client.Queue](t)(c.Queues.Create(ctx, "a-queue", client.QueueSettings{}))
	if _, err := c.Queues.Create(ctx, "a-queue", client.QueueSettings{}); !errors.Is(err, client.ErrQueueExists) {
		t.Errorf("create twice: %v", err)
	}
	must[int64](t)(c.MQ.Send(ctx, "a-queue", 1))
	if _, err := c.MQ.Send(ctx, "b-queue", strings.Repeat("x", 2000)); !errors.Is(err, client.ErrMessageTooLarge) {
		t.Errorf("send over max_message_bytes: %v", err)
	}

	list := must[[]client.Queue](t)(c.Queues.List(ctx))
	if len(list) != 2 || list[0].Name != "a-queue" || list[1].Name != "b-queue" || list[0].Stats != nil {
		t.Fatalf("list: %+v", list)
	}
	live := must[[]client.Queue](t)(c.Queues.List(ctx, client.ListQueuesOptions{Live: true}))
	if live[0].Stats == nil || live[0].Stats.Ready != 1 {
		t.Errorf("live list: %+v", live[0].Stats)
	}

	u := must[client.Queue](t)(c.Queues.Update(ctx, "b-queue", client.QueueSettings{MaxReceiveCount: client.Int(9)}))
	if u.MaxReceiveCount != 9 || u.VisibilityTimeoutSeconds != 45 {
		t.Errorf("updated: %+v", u)
	}
	if err := c.Queues.Delete(ctx, "a-queue"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Queues.Get(ctx, "a-queue"); !errors.Is(err, client.ErrQueueNotFound) {
		t.Errorf("get deleted: %v", err)
	}
	if _, err := c.MQ.Send(ctx, "a-queue", 1); !errors.Is(err, client.ErrQueueNotFound) || !client.IsNotFound(err) {
		t.Errorf("send to a deleted queue: %v", err)
	}
}

func TestAccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.New(t)
	admin := srv.Client(t)
	must[client.Queue](t)(admin.Queues.Create(ctx, "orders-eu", client.QueueSettings{}))
	must[client.Queue](t)(admin.Queues.Create(ctx, "billing", client.QueueSettings{}))

	sender := srv.ClientFor(t, client.DefaultAccount, []string{"mq:send"}, []string{"orders-*"})
	must[int64](t)(sender.MQ.Send(ctx, "orders-eu", 1))
	if _, err := sender.MQ.Send(ctx, "billing", 1); !client.IsForbidden(err) || !errors.Is(err, client.ErrForbidden) {
		t.Errorf("send outside the key's queues: %v", err)
	}
	if _, err := sender.MQ.Receive(ctx, "orders-eu", client.ReceiveOptions{}); !client.IsForbidden(err) {
		t.Errorf("receive without mq:receive: %v", err)
	}

	// A key of another account on this account's URLs.
	foreign := client.Config{Endpoint: srv.URL, Key: srv.Key(t, "000000000002", clienttest.AllScopes, nil)}
	fc := must[*client.Client](t)(foreign.Client())
	if _, err := fc.Queues.List(ctx); !client.IsForbidden(err) {
		t.Errorf("another account's key: %v", err)
	}
	if _, err := fc.MQ.Send(ctx, "billing", 1); !client.IsForbidden(err) {
		t.Errorf("another account's key, data plane: %v", err)
	}

	// Keys: create, use, list, revoke.
	nk := must[client.NewKey](t)(admin.Keys.Create(ctx, client.KeyOptions{Scopes: []string{"mq:receive"}, Description: "reader"}))
	reader := must[*client.Client](t)(client.New(srv.URL, nk.ID, nk.Secret))
	must[[]client.Queue](t)(reader.Queues.List(ctx))
	keys := must[[]client.Key](t)(admin.Keys.List(ctx))
	found := false
	for _, k := range keys {
		if k.ID == nk.ID {
			found = k.Description == "reader" && len(k.Scopes) == 1 && k.RevokedAt == nil
		}
	}
	if !found {
		t.Errorf("new key not listed right: %+v", keys)
	}
	if err := admin.Keys.Revoke(ctx, nk.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Queues.List(ctx); !client.IsUnauthorized(err) {
		t.Errorf("revoked key: %v", err)
	}
	if err := admin.Keys.Revoke(ctx, "no-such-key"); !client.IsNotFound(err) {
		t.Errorf("revoke an unknown key: %v", err)
	}

	bad, err := client.New(srv.URL, "nokey", "nosecret")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Queues.List(ctx); !client.IsUnauthorized(err) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestFunctionsTriggersInvocations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	module := wasmbuild.Handwritten("trap") // a command whose _start traps

	d1 := must[client.Deployment](t)(c.Functions.Deploy(ctx, "trapper", module, client.DeployOptions{Alias: "live", MemoryMB: 16}))
	if d1.Version != 1 || !d1.Created || !d1.AliasMoved || len(d1.SHA256) != 64 {
		t.Fatalf("first deploy: %+v", d1)
	}
	same := must[client.Deployment](t)(c.Functions.Deploy(ctx, "trapper", module, client.DeployOptions{Alias: "live", MemoryMB: 16}))
	if same.Version != 1 || same.Created || same.AliasMoved {
		t.Errorf("same deploy again: %+v", same)
	}
	d2 := must[client.Deployment](t)(c.Functions.Deploy(ctx, "trapper", module, client.DeployOptions{
		Alias: "live", MemoryMB: 32, TimeoutMS: 2000, Env: map[string]string{"MODE": "strict"}}))
	if d2.Version != 2 || !d2.Created || !d2.AliasMoved {
		t.Fatalf("second deploy: %+v", d2)
	}
	fn := must[client.Function](t)(c.Functions.Get(ctx, "trapper"))
	if len(fn.Versions) != 2 || fn.Aliases["live"] != 2 || fn.RollbackTo["live"] != 1 {
		t.Fatalf("get: %+v, want live on 2 and rolling back to 1", fn)
	}
	v2 := fn.Versions[1]
	if v2.Version != 2 || v2.MemoryMB != 32 || v2.TimeoutMS != 2000 || v2.SizeBytes != len(module) || v2.Env["MODE"] == "" || v2.Env["MODE"] == "strict" {
		t.Errorf("version 2 (env values masked): %+v", v2)
	}
	if v := must[int](t)(c.Functions.Rollback(ctx, "trapper", "live")); v != 1 {
		t.Errorf("rollback to %d, want 1", v)
	}
	if err := c.Functions.SetAlias(ctx, "trapper", "canary", 2); err != nil {
		t.Fatal(err)
	}
	list := must[[]client.Function](t)(c.Functions.List(ctx))
	if len(list) != 1 || list[0].LatestVersion != 2 || list[0].Aliases["live"] != 1 || list[0].Aliases["canary"] != 2 {
		t.Errorf("list: %+v", list)
	} else if rb := list[0].RollbackTo; len(rb) != 1 || rb["live"] != 2 {
		t.Errorf("list: rollback_to %v, want live back to 2 (after its rollback) and nothing for the new canary", rb)
	}
	if _, err := c.Functions.Get(ctx, "nope"); !client.IsNotFound(err) {
		t.Errorf("get an unknown function: %v", err)
	}
	if _, err := c.Functions.Deploy(ctx, "broken", []byte("not wasm"), client.DeployOptions{}); !client.IsInvalid(err) {
		t.Errorf("deploy garbage: %v", err)
	}

	// A queue trigger runs the trapping function: a failed invocation.
	must[client.Queue](t)(c.Queues.Create(ctx, "work", client.QueueSettings{MaxReceiveCount: client.Int(1)}))
	changed := must[bool](t)(c.Triggers.Put(ctx, client.Trigger{Name: "work-trapper", Kind: "queue", Function: "trapper",
		Alias: "live", Queue: "work", BatchSize: 1}))
	if !changed {
		t.Error("put trigger: not changed")
	}
	trs := must[[]client.Trigger](t)(c.Triggers.List(ctx))
	if len(trs) != 1 || trs[0].Function != "trapper" || trs[0].Source != "api" || trs[0].Enabled == nil || !*trs[0].Enabled {
		t.Fatalf("triggers: %+v", trs)
	}
	// A listed trigger can be changed and put back.
	tr := trs[0]
	tr.Concurrency = 2
	if changed := must[bool](t)(c.Triggers.Put(ctx, tr)); !changed {
		t.Error("put a listed trigger back changed: not changed")
	}
	if again := must[bool](t)(c.Triggers.Put(ctx, tr)); again {
		t.Error("the same put twice: changed")
	}
	seq := must[int64](t)(c.MQ.Send(ctx, "work", map[string]int{"n": 1}))
	var invs []client.Invocation
	eventually(t, "a failed invocation", func() bool {
		invs = must[[]client.Invocation](t)(c.Invocations.List(ctx, client.InvocationsOptions{Function: "trapper", Outcome: "failure"}))
		return len(invs) > 0
	})
	if iv := invs[0]; iv.Version != 1 || iv.BatchSize != 1 || iv.StartedAt.IsZero() || len(iv.MessageIDs) != 1 || iv.MessageIDs[0] != seq {
		t.Errorf("invocation: %+v", iv)
	}
	if iv := invs[0]; iv.Trigger != "work-trapper" {
		t.Errorf("invocation's trigger %q, want work-trapper", iv.Trigger)
	}
	if got := must[client.Invocation](t)(c.Invocations.Get(ctx, invs[0].ID)); got.ID != invs[0].ID || got.Trigger != "work-trapper" || got.Error != invs[0].Error {
		t.Errorf("get invocation %d: %+v", invs[0].ID, got)
	}
	if _, err := c.Invocations.Get(ctx, invs[0].ID+1_000_000); !client.IsNotFound(err) {
		t.Errorf("get an unknown invocation: %v", err)
	}
	if got := must[[]client.Invocation](t)(c.Invocations.List(ctx, client.InvocationsOptions{Trigger: "work-trapper"})); len(got) != len(invs) {
		t.Errorf("by trigger: %d invocations, want %d", len(got), len(invs))
	}
	if got := must[[]client.Invocation](t)(c.Invocations.List(ctx, client.InvocationsOptions{Trigger: "other"})); len(got) != 0 {
		t.Errorf("by another trigger: %+v", got)
	}
	if got := must[[]client.Invocation](t)(c.Invocations.List(ctx, client.InvocationsOptions{BeforeID: invs[0].ID, Until: invs[0].StartedAt})); len(got) >= len(invs) {
		t.Errorf("before_id and until: %d invocations", len(got))
	}
	if ok := must[[]client.Invocation](t)(c.Invocations.List(ctx, client.InvocationsOptions{Outcome: "success"})); len(ok) != 0 {
		t.Errorf("successful invocations: %+v", ok)
	}
	if err := c.Triggers.Delete(ctx, "work-trapper"); err != nil {
		t.Fatal(err)
	}
	if trs := must[[]client.Trigger](t)(c.Triggers.List(ctx)); len(trs) != 0 {
		t.Errorf("after delete: %+v", trs)
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.New(t)
	c := srv.Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "events", client.QueueSettings{}))
	if created, err := c.Hooks.Create(ctx, client.Hook{Name: "gh", Queue: "events", Verify: "github", Secrets: []string{"s3cret"}}); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if created, err := c.Hooks.Create(ctx, client.Hook{Name: "gh", Queue: "events", Verify: "github", Secrets: []string{"new", "old"}}); err != nil || created {
		t.Fatalf("replace: %v %v", created, err)
	}
	if _, err := c.Hooks.Create(ctx, client.Hook{Name: "open", Queue: "events", Verify: "none"}); err != nil {
		t.Fatal(err)
	}
	hooks := must[[]client.Hook](t)(c.Hooks.List(ctx))
	if len(hooks) != 2 || hooks[0].Name != "gh" || hooks[0].SecretCount != 2 || len(hooks[0].Secrets) != 0 || hooks[0].Verify != "github" {
		t.Fatalf("hooks: %+v", hooks)
	}
	resp, err := http.Post(srv.URL+"/hooks/"+c.Account()+"/open", "application/json", strings.NewReader(`{"hello":"world"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook delivery: %s", resp.Status)
	}
	if m := must[[]client.Message](t)(c.MQ.Peek(ctx, "events", 0)); len(m) != 1 {
		t.Errorf("queue after a delivery: %d messages", len(m))
	}
	if err := c.Hooks.Delete(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	if err := c.Hooks.Delete(ctx, "open"); !client.IsNotFound(err) {
		t.Errorf("delete twice: %v", err)
	}
	if _, err := c.Hooks.Create(ctx, client.Hook{Name: "x", Queue: "missing", Verify: "none"}); !client.IsNotFound(err) {
		t.Errorf("hook on a missing queue: %v", err)
	}
}

func TestPagingAndRedriveSequences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "pages", client.QueueSettings{MaxReceiveCount: client.Int(1)}))
	bodies := make([]any, 10)
	for i := range bodies {
		bodies[i] = map[string]int{"n": i}
	}
	sent := append(must[[]int64](t)(c.MQ.SendBatch(ctx, "pages", bodies)), must[[]int64](t)(c.MQ.SendBatch(ctx, "pages", bodies[:5]))...)
	first := must[client.MessagePage](t)(c.MQ.PeekPage(ctx, "pages", 10))
	rest := must[client.MessagePage](t)(c.MQ.PeekPage(ctx, "pages", 10, client.PageOptions{After: first.Next}))
	if len(first.Messages) != 10 || first.Next != sent[9] || len(rest.Messages) != 5 || rest.Next != 0 ||
		rest.Messages[0].Sequence != sent[10] || rest.Messages[4].Sequence != sent[14] {
		t.Fatalf("pages of %d messages (next %d) and %d (next %d)", len(first.Messages), first.Next, len(rest.Messages), rest.Next)
	}
	must[[]client.Message](t)(c.MQ.Receive(ctx, "pages", client.ReceiveOptions{MaxMessages: 10, VisibilityTimeoutSeconds: 1}))
	must[[]client.Message](t)(c.MQ.Receive(ctx, "pages", client.ReceiveOptions{MaxMessages: 10, VisibilityTimeoutSeconds: 1}))
	eventually(t, "15 dead letters", func() bool {
		return len(must[[]client.DeadLetter](t)(c.MQ.ReceiveDLQ(ctx, "pages", 100))) == 15
	})
	dead := must[client.DeadLetterPage](t)(c.MQ.ReceiveDLQPage(ctx, "pages", 10, client.PageOptions{After: sent[9]}))
	if len(dead.Messages) != 5 || dead.Messages[0].Sequence != sent[10] || dead.Next != 0 {
		t.Fatalf("second DLQ page: %d dead letters, next %d", len(dead.Messages), dead.Next)
	}
	if n := must[int64](t)(c.MQ.RedriveSequences(ctx, "pages", []int64{sent[2], sent[12]})); n != 2 {
		t.Errorf("redrive 2 sequences: %d", n)
	}
	if n := must[int64](t)(c.MQ.RedriveSequences(ctx, "pages", []int64{sent[2]})); n != 0 {
		t.Errorf("redrive a sequence no longer dead: %d", n)
	}
	ready := must[[]client.Message](t)(c.MQ.Peek(ctx, "pages", 0))
	if len(ready) != 2 || ready[0].Sequence != sent[2] || ready[1].Sequence != sent[12] {
		t.Errorf("redriven: %+v", ready)
	}
	var ce *client.Error
	if _, err := c.MQ.RedriveSequences(ctx, "pages", []int64{1, 1}); !errors.As(err, &ce) || ce.Code != client.CodeInvalidArgument {
		t.Errorf("duplicate sequences: %v", err)
	}
}

func TestQueueMinuteStats(t *testing.T) {
	t.Parallel()
	if s := time.Now().Second(); s >= 55 { // keep the steps in one minute
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	ctx := context.Background()
	srv := clienttest.New(t)
	c := srv.Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "charted", client.QueueSettings{}))
	must[[]int64](t)(c.MQ.SendBatch(ctx, "charted", []any{1, 2}))
	must[[]client.Message](t)(c.MQ.Receive(ctx, "charted", client.ReceiveOptions{Delete: true}))
	// Store the server's counts now rather than at the next minute.
	if err := pgqueue.NewSweeper(srv.Queue(), pgqueue.SweeperOptions{}).RecordStats(ctx); err != nil {
		t.Fatal(err)
	}
	ms := must[[]client.MinuteStats](t)(c.Queues.MinuteStats(ctx, "charted", 3))
	if len(ms) != 3 || !ms[1].Minute.Equal(ms[0].Minute.Add(time.Minute)) || ms[0].Ready != nil {
		t.Fatalf("minute stats: %+v", ms)
	}
	if now := ms[2]; now.Sends != 2 || now.Acks != 1 || now.DLQMoves != 0 || now.Ready == nil || *now.Ready != 1 {
		t.Errorf("current minute: %+v", now)
	}
	if ms := must[[]client.MinuteStats](t)(c.Queues.MinuteStats(ctx, "charted", 0)); len(ms) != 60 {
		t.Errorf("default window: %d minutes", len(ms))
	}
	if _, err := c.Queues.MinuteStats(ctx, "missing", 5); !client.IsNotFound(err) {
		t.Errorf("unknown queue: %v", err)
	}
}

// Per-message options: headers, TTL and dedup keys on a send, entries
// with their own options, and receive with delete.
func TestMessageOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "jobs", client.QueueSettings{}))

	s1 := must[int64](t)(c.MQ.Send(ctx, "jobs", map[string]int{"n": 1}, client.SendOptions{Headers: map[string]string{"trace": "t1"}, TTLSeconds: 60}))
	seqs := must[[]int64](t)(c.MQ.SendEntries(ctx, "jobs", []client.SendEntry{
		{Body: json.RawMessage(`"two"`), Headers: map[string]string{"k": "v"}},
		{Body: json.RawMessage(`3`), DelaySeconds: 3600},
		{Body: json.RawMessage(`4`), DedupKey: "d"},
		{Body: json.RawMessage(`5`), DedupKey: "d"},
	}))
	if len(seqs) != 4 || seqs[0] <= s1 || seqs[3] != seqs[2] {
		t.Fatalf("entries sequences %v after %d", seqs, s1)
	}
	peeked := must[[]client.Message](t)(c.MQ.Peek(ctx, "jobs", 0))
	if len(peeked) != 3 || string(peeked[0].Headers) != `{"trace":"t1"}` || string(peeked[1].Headers) != `{"k":"v"}` {
		t.Fatalf("peek %+v", peeked)
	}
	got := must[[]client.Message](t)(c.MQ.Receive(ctx, "jobs", client.ReceiveOptions{MaxMessages: 10, Delete: true}))
	if len(got) != 3 || got[0].Receipt != "" || string(got[0].Headers) != `{"trace":"t1"}` {
		t.Fatalf("receive with delete %+v", got)
	}
	if left := must[[]client.Message](t)(c.MQ.Peek(ctx, "jobs", 0)); len(left) != 0 {
		t.Fatalf("%d left after receive with delete", len(left))
	}
	_, err := c.MQ.SendEntries(ctx, "jobs", []client.SendEntry{{Body: json.RawMessage(`1`), DedupKey: ""}, {Body: json.RawMessage(`{}`), ExpiresInSeconds: 1209601}})
	if !client.IsInvalid(err) || !strings.Contains(err.Error(), "1209601") {
		t.Fatalf("TTL out of range: %v", err)
	}
}

func TestTopics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := clienttest.New(t)
	c := srv.Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "billing", client.QueueSettings{}))
	must[client.Queue](t)(c.Queues.Create(ctx, "shipping", client.QueueSettings{}))
	if tp := must[client.Topic](t)(c.Topics.Create(ctx, "orders")); tp.Name != "orders" {
		t.Fatalf("created %+v", tp)
	}
	if _, err := c.Topics.Create(ctx, "orders"); !client.IsConflict(err) || !errors.Is(err, &client.Error{Code: client.CodeTopicExists}) {
		t.Fatalf("create twice: %v", err)
	}
	must[client.Topic](t)(c.Topics.Subscribe(ctx, "orders", "billing", client.SubscribeOptions{Filter: map[string]string{"type": "order"}}))
	tp := must[client.Topic](t)(c.Topics.Subscribe(ctx, "orders", "shipping"))
	if len(tp.Subscriptions) != 2 || tp.Subscriptions[0].Filter["type"] != "order" {
		t.Fatalf("subscribed %+v", tp)
	}
	if n := must[int](t)(c.Topics.Publish(ctx, "orders", map[string]int{"n": 1})); n != 1 {
		t.Fatalf("publish: %d", n)
	}
	if n := must[int](t)(c.Topics.Publish(ctx, "orders", "text", client.PublishOptions{DelaySeconds: 60})); n != 1 {
		t.Fatalf("publish a string: %d", n)
	}
	if n := must[[]int](t)(c.Topics.PublishBatch(ctx, "orders", []any{1, 2})); len(n) != 2 {
		t.Fatalf("publish batch: %v", n)
	}
	n := must[[]int](t)(c.Topics.PublishEntries(ctx, "orders", []client.PublishEntry{{Body: json.RawMessage(`{}`), Headers: json.RawMessage(`{"type":"order"}`)}}))
	if len(n) != 1 || n[0] != 2 {
		t.Fatalf("publish entries: %v", n)
	}
	if ts := must[[]client.Topic](t)(c.Topics.List(ctx)); len(ts) != 1 || len(ts[0].Subscriptions) != 2 {
		t.Fatalf("list: %+v", ts)
	}
	if _, err := c.Topics.Subscribe(ctx, "orders", "missing"); !errors.Is(err, &client.Error{Code: client.CodeQueueNotFound}) {
		t.Errorf("subscribe a missing queue: %v", err)
	}
	if _, err := c.Topics.Publish(ctx, "nope", map[string]int{}); !errors.Is(err, &client.Error{Code: client.CodeTopicNotFound}) {
		t.Errorf("publish to a missing topic: %v", err)
	}
	if err := c.Topics.Unsubscribe(ctx, "orders", "shipping"); err != nil {
		t.Fatal(err)
	}
	if tp := must[client.Topic](t)(c.Topics.Get(ctx, "orders")); len(tp.Subscriptions) != 1 {
		t.Fatalf("after unsubscribe: %+v", tp)
	}
	if err := c.Topics.Delete(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics.Get(ctx, "orders"); !client.IsNotFound(err) {
		t.Errorf("get deleted: %v", err)
	}
}

func TestDeadLetterQueueSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	must[client.Queue](t)(c.Queues.Create(ctx, "dead", client.QueueSettings{}))
	q := must[client.Queue](t)(c.Queues.Create(ctx, "work", client.QueueSettings{DeadLetterQueue: client.String("dead")}))
	if q.DeadLetterQueue != "dead" {
		t.Fatalf("created %+v", q)
	}
	if _, err := c.Queues.Update(ctx, "work", client.QueueSettings{DeadLetterQueue: client.String("missing")}); !client.IsInvalid(err) {
		t.Errorf("a missing dead-letter queue: %v", err)
	}
	if q := must[client.Queue](t)(c.Queues.Update(ctx, "work", client.QueueSettings{DeadLetterQueue: client.String("")})); q.DeadLetterQueue != "" {
		t.Errorf("cleared %+v", q)
	}
}

// A store listed page by page gives every key once, keys that are not
// UTF-8 included (a guest's keys are bytes): Next carries such a key too.
func TestKVListPagesEveryKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clienttest.New(t).Client(t)
	keys := []string{"a", "b\xff", "b\xff\xff", "c", "d\xfe"}
	for _, k := range keys {
		if err := c.KV.Set(ctx, "s", k, []byte("v"), 0); err != nil {
			t.Fatalf("set %q: %v", k, err)
		}
	}
	var got []string
	after := ""
	for range len(keys) + 1 {
		page := must[client.KVList](t)(c.KV.List(ctx, "s", "", after, 2))
		for _, e := range page.Entries {
			k, err := base64.StdEncoding.DecodeString(e.KeyBase64)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(k))
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if strings.Join(got, "|") != strings.Join(keys, "|") {
		t.Errorf("listed %q, want %q", got, keys)
	}
}
