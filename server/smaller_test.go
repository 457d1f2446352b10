package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/triggers/webhook"
	"github.com/sluicehq/sluice/wire"
)

// TestGitHubReplayUnderFreshDeliveryID: GitHub signs only the body, so a
// captured delivery replayed with a new X-GitHub-Delivery is still a
// duplicate: deliveries are deduplicated on the signature.
func TestGitHubReplayUnderFreshDeliveryID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("gh")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"gh","queue":"gh","verify":"github","secrets":["s3cret"]}`).expect(201)
	body := `{"action":"opened"}`
	sig := webhook.SignGitHub("s3cret", []byte(body))
	var first struct{ Sequence int64 }
	e.hook(acct, "gh", body, map[string]string{"X-Hub-Signature-256": sig, "X-GitHub-Delivery": "d-1"}).expect(202).decode(&first)
	var replay struct {
		Duplicate bool
		Sequence  int64
	}
	e.hook(acct, "gh", body, map[string]string{"X-Hub-Signature-256": sig[:7] + strings.ToUpper(sig[7:]), "X-GitHub-Delivery": "forged-2"}).
		expect(200).decode(&replay)
	if !replay.Duplicate || replay.Sequence != first.Sequence {
		t.Fatalf("replay under a fresh delivery id: %+v", replay)
	}
	if n := len(e.do(tok, "GET", "/"+acct+"/gh/messages", "").expect(200).messages()); n != 1 {
		t.Fatalf("%d messages enqueued, want 1", n)
	}
	// Another body is another delivery.
	other := `{"action":"closed"}`
	e.hook(acct, "gh", other, map[string]string{"X-Hub-Signature-256": webhook.SignGitHub("s3cret", []byte(other)), "X-GitHub-Delivery": "d-3"}).expect(202)
}

// TestWebhook401HidesSecretCount: a bad signature's 401 does not say how
// many secrets the hook has.
func TestWebhook401HidesSecretCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("q")
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"gh","queue":"q","verify":"github","secrets":["a1","b2","c3"]}`).expect(201)
	e.do(tok, "POST", "/v1/accounts/"+acct+"/hooks", `{"name":"std","queue":"q","verify":"standard","secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","whsec_c2Vjb25k","whsec_dGhpcmQ="]}`).expect(201)
	body := `{}`
	msg := e.hook(acct, "gh", body, map[string]string{"X-Hub-Signature-256": webhook.SignGitHub("guess", []byte(body)), "X-GitHub-Delivery": "d"}).
		expectError(401, "invalid_signature")
	h := map[string]string{"webhook-id": "m1", "webhook-timestamp": itoa(time.Now().Unix()), "webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}
	msg2 := e.hook(acct, "std", body, h).expectError(401, "invalid_signature")
	for _, m := range []string{msg, msg2} {
		if strings.Contains(m, "3") || strings.Contains(m, "secrets:") {
			t.Errorf("401 message reveals the secret count: %q", m)
		}
	}
}

// TestFractionalQueueOptionNamesRealRange: a fractional queue option is
// refused naming the option's own range, not int32's.
func TestFractionalQueueOptionNamesRealRange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("")
	msg := e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"x","delay_seconds":0.5}`).expectError(400, "invalid_argument")
	if !strings.Contains(msg, "0 to 43200") {
		t.Fatalf("message %q does not name delay_seconds' range 0 to 43200", msg)
	}
	msg = e.do(tok, "POST", "/v1/accounts/"+acct+"/queues", `{"name":"x","retention_seconds":99.9}`).expectError(400, "invalid_argument")
	if !strings.Contains(msg, "60 to 1209600") {
		t.Fatalf("message %q does not name retention_seconds' range", msg)
	}
}

// TestRequireReceipt: a queue with require_receipt refuses to delete a
// leased message without its receipt (a key with mq:delete cannot ack
// what another consumer holds); with the receipt, or once the message is
// not leased, the delete goes through. Off by default.
func TestRequireReceipt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct, tok := e.admin("open")
	v := "/v1/accounts/" + acct + "/queues"
	var q wire.Queue
	e.do(tok, "POST", v, `{"name":"strict","require_receipt":true}`).expect(201).decode(&q)
	if !q.RequireReceipt {
		t.Fatalf("created %+v", q)
	}
	for _, name := range []string{"open", "strict"} {
		e.do(tok, "POST", "/"+acct+"/"+name+"/messages", `[1,2]`).expect(201)
	}
	lease := func(name string) wire.Message {
		m := e.do(tok, "POST", "/"+acct+"/"+name+"/messages/receive", `{"visibility_timeout_seconds":600}`).expect(200).messages()
		if len(m) != 1 {
			t.Fatalf("receive from %s: %+v", name, m)
		}
		return m[0]
	}
	m := lease("open")
	e.do(tok, "DELETE", fmt.Sprintf("/%s/open/messages/%d", acct, m.Sequence), "").expect(204)
	m = lease("strict")
	e.do(tok, "DELETE", fmt.Sprintf("/%s/strict/messages/%d", acct, m.Sequence), "").expectError(400, "invalid_argument")
	e.do(tok, "DELETE", fmt.Sprintf("/%s/strict/messages/%d?receipt=%s", acct, m.Sequence, m.Receipt), "").expect(204)
	// A message not leased (never received) is deleted without a receipt.
	peek := e.do(tok, "GET", "/"+acct+"/strict/messages", "").expect(200).messages()
	e.do(tok, "DELETE", fmt.Sprintf("/%s/strict/messages/%d", acct, peek[0].Sequence), "").expect(204)
	// Turned off with a PATCH.
	q = wire.Queue{}
	e.do(tok, "PATCH", v+"/strict", `{"require_receipt":false}`).expect(200).decode(&q)
	if q.RequireReceipt {
		t.Fatalf("patched %+v", q)
	}
	e.do(tok, "PATCH", v+"/strict", `{"require_receipt":1}`).expectError(400, "invalid_argument")
}
