package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/triggers/webhook"
)

func (e *env) hook(account, hook, body string, headers map[string]string) *response {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.ts.URL+"/hooks/"+account+"/"+hook, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return e.send("", req)
}

func TestGitHubWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("gh-events")
	const secret = "It's a Secret to Everybody"
	var created map[string]any
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"gh","queue":"gh-events","verify":"github","secrets":["`+secret+`"]}`).expect(201).decode(&created)
	if created["secret_count"] != 1.0 || strings.Contains(string(e.do(tok, "GET", "/v1/accounts/"+acct+"/hooks", "").expect(200).body), secret) {
		t.Fatalf("created %v; or the list shows the secret", created)
	}

	body := `{"ref":"refs/heads/main"}`
	h := map[string]string{"X-Hub-Signature-256": webhook.SignGitHub(secret, []byte(body)), "X-GitHub-Delivery": "d-1", "X-GitHub-Event": "push"}
	var first struct{ Sequence int64 }
	e.hook(acct, "gh", body, h).expect(202).decode(&first)

	// A replay is 200 with the first sequence and enqueues nothing.
	var replay struct {
		Duplicate bool
		Sequence  int64
	}
	e.hook(acct, "gh", body, h).expect(200).decode(&replay)
	if !replay.Duplicate || replay.Sequence != first.Sequence {
		t.Fatalf("replay %+v, first %d", replay, first.Sequence)
	}

	// Forged: a wrong signature, a missing one, a body changed after signing.
	forged := map[string]string{"X-Hub-Signature-256": webhook.SignGitHub("guess", []byte(body)), "X-GitHub-Delivery": "d-2"}
	e.hook(acct, "gh", body, forged).expectError(401, "invalid_signature")
	e.hook(acct, "gh", body, map[string]string{"X-GitHub-Delivery": "d-3"}).expectError(401, "invalid_signature")
	e.hook(acct, "gh", `{"ref":"refs/heads/evil"}`, h).expectError(401, "invalid_signature")
	// Unknown hook or account; body too large; too deep.
	e.hook(acct, "nope", body, h).expectError(404, "not_found")
	e.hook("../../etc", "gh", body, h).expectError(400, "invalid_argument")
	big := `{"x":"` + strings.Repeat("a", 1<<20) + `"}`
	e.hook(acct, "gh", big, map[string]string{"X-Hub-Signature-256": webhook.SignGitHub(secret, []byte(big)), "X-GitHub-Delivery": "d-4"}).expectError(413, "body_too_large")
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	e.hook(acct, "gh", deep, map[string]string{"X-Hub-Signature-256": webhook.SignGitHub(secret, []byte(deep)), "X-GitHub-Delivery": "d-5"}).expectError(400, "invalid_json")

	msgs := e.do(tok, "GET", "/"+acct+"/gh-events/messages", "").expect(200).messages()
	if len(msgs) != 1 || msgs[0].Sequence != first.Sequence {
		t.Fatalf("queue holds %+v", msgs)
	}
	var env webhook.Envelope
	if err := json.Unmarshal(msgs[0].Body, &env); err != nil {
		t.Fatal(err)
	}
	if env.Hook != "gh" || env.DeliveryID != "d-1" || env.Headers["x-github-event"] != "push" || string(env.Body) != body {
		t.Fatalf("envelope %+v", env)
	}

	e.do(tok, "DELETE", "/v1/accounts/"+acct+"/hooks/gh", "").expect(204)
	e.hook(acct, "gh", body, h).expectError(404, "not_found")
}

func TestStandardWebhookExpiredAndConcurrentReplays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("std")
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"svix","queue":"std","verify":"standard","secrets":["`+secret+`"]}`).expect(201)
	body := `{"type":"invoice.paid"}`
	sign := func(id string, ts time.Time) map[string]string {
		sig, err := webhook.SignStandard(secret, id, ts, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"webhook-id": id, "webhook-timestamp": itoa(ts.Unix()), "webhook-signature": sig}
	}
	// Expired (and early) timestamps are 401 even when the signature is right.
	e.hook(acct, "svix", body, sign("msg_old", time.Now().Add(-time.Hour))).expectError(401, "invalid_signature")
	e.hook(acct, "svix", body, sign("msg_early", time.Now().Add(time.Hour))).expectError(401, "invalid_signature")

	// Ten concurrent deliveries of one id: one enqueue, nine duplicates.
	h := sign("msg_1", time.Now())
	var wg sync.WaitGroup
	statuses := make(chan int, 10)
	for range 10 {
		wg.Go(func() { statuses <- e.hook(acct, "svix", body, h).status })
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[202] != 1 || count[200] != 9 {
		t.Fatalf("statuses %v, want one 202 and nine 200", count)
	}
	if n := len(e.do(tok, "GET", "/"+acct+"/std/messages", "").expect(200).messages()); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
}

func TestUnverifiedHookAndPutHook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("inbox")
	ctx := context.Background()
	created, err := e.srv.PutHook(ctx, acct, Hook{Name: "open", Queue: "inbox", Verify: "none", Source: "manifest"})
	if err != nil || !created {
		t.Fatalf("PutHook = %v, %v", created, err)
	}
	if created, err = e.srv.PutHook(ctx, acct, Hook{Name: "open", Queue: "inbox", Verify: "none"}); err != nil || created {
		t.Fatalf("PutHook again = %v, %v", created, err)
	}
	if _, err := e.srv.PutHook(ctx, acct, Hook{Name: "x", Queue: "inbox", Verify: "none", Secrets: []string{"s"}}); err == nil {
		t.Fatal("a secret for scheme none was accepted")
	}
	// No delivery id: every request is enqueued; with Idempotency-Key: once.
	e.hook(acct, "open", `plain text`, nil).expect(202)
	e.hook(acct, "open", `{}`, nil).expect(202)
	e.hook(acct, "open", `{}`, map[string]string{"Idempotency-Key": "k"}).expect(202)
	e.hook(acct, "open", `{}`, map[string]string{"Idempotency-Key": "k"}).expect(200)
	msgs := e.do(tok, "GET", "/"+acct+"/inbox/messages", "").expect(200).messages()
	if len(msgs) != 3 || !strings.Contains(string(msgs[0].Body), `"body_base64"`) {
		t.Fatalf("messages %+v", msgs)
	}
	hs, err := e.srv.ListHooks(ctx, acct)
	if err != nil || len(hs) != 1 || hs[0].Source != "api" || hs[0].Verify != "none" {
		t.Fatalf("ListHooks = %+v, %v", hs, err)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestStripeWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("payments")
	const secret = "whsec_stripe_test_secret"
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"stripe","queue":"payments","verify":"stripe","secrets":["old-secret","`+secret+`"]}`).expect(201)
	signed := func(body string) map[string]string {
		return map[string]string{"Stripe-Signature": webhook.SignStripe(secret, time.Now(), []byte(body))}
	}
	// The delivery id is the event's id: without one, 400 and nothing sent.
	e.hook(acct, "stripe", `{"type":"charge.succeeded"}`, signed(`{"type":"charge.succeeded"}`)).expectError(400, "invalid_argument")
	body := `{"id":"evt_1","type":"charge.succeeded"}`
	e.hook(acct, "stripe", body, signed(body)).expect(202)
	e.hook(acct, "stripe", body, signed(body)).expect(200)
	// Replaced with the old secret dropped: the new one still verifies, a
	// signature with the old one no longer does.
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"stripe","queue":"payments","verify":"stripe","secrets":["`+secret+`"]}`).expect(200)
	body2 := `{"id":"evt_2","type":"charge.succeeded"}`
	old := map[string]string{"Stripe-Signature": webhook.SignStripe("old-secret", time.Now(), []byte(body2))}
	e.hook(acct, "stripe", body2, old).expectError(401, "invalid_signature")
	e.hook(acct, "stripe", body2, signed(body2)).expect(202)
	if n := len(e.do(tok, "GET", "/"+acct+"/payments/messages", "").expect(200).messages()); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
}
