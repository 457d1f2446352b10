package webhook_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/triggers/webhook"
)

// A GitHub delivery verified and turned into the envelope a function
// receives.
func Example() {
	const secret = "It's a Secret to Everybody"
	body := []byte(`{"ref":"refs/heads/main","after":"9f1c"}`)

	r := httptest.NewRequest(http.MethodPost, "/hooks/acme/gh", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	r.Header.Set("X-GitHub-Event", "push")
	r.Header.Set("X-Hub-Signature-256", webhook.SignGitHub(secret, body))
	r.Header.Set("Authorization", "Bearer never-copied")

	v, err := webhook.NewVerifier(webhook.SchemeGitHub, secret)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, err := v.Verify(r.Header, body, time.Now())
	if err != nil {
		fmt.Println(err)
		return
	}
	env, err := webhook.NewEnvelope("gh", r, body, d)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(env, "", "  ")
	fmt.Println(d.Event)
	fmt.Println(string(out))
	// Output:
	// push
	// {
	//   "hook": "gh",
	//   "delivery_id": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
	//   "method": "POST",
	//   "path": "/hooks/acme/gh",
	//   "headers": {
	//     "content-type": "application/json",
	//     "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
	//     "x-github-event": "push"
	//   },
	//   "body": {
	//     "ref": "refs/heads/main",
	//     "after": "9f1c"
	//   }
	// }
}

// Verifying a Standard Webhooks request during a key rotation, with an
// injected clock, and branching on the kind of failure.
func ExampleVerifier_Verify() {
	const oldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const newSecret = "whsec_c2x1aWNlLWV4YW1wbGUtbmV3LWtleS0wMQ=="
	v, err := webhook.NewVerifier(webhook.SchemeStandard, newSecret, oldSecret)
	if err != nil {
		fmt.Println(err)
		return
	}
	body := []byte(`{"type":"user.created"}`)
	sent := time.Unix(1700000000, 0)
	sig, _ := webhook.SignStandard(oldSecret, "msg_1", sent, body)
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", strconv.FormatInt(sent.Unix(), 10))
	h.Set("webhook-signature", sig)

	d, err := v.Verify(h, body, sent.Add(30*time.Second))
	fmt.Println(d.ID, err)

	_, err = v.Verify(h, body, sent.Add(2*time.Hour))
	fmt.Println(errors.Is(err, webhook.ErrTimestampOutOfTolerance))
	fmt.Println(err)

	_, err = v.Verify(h, []byte(`{"type":"user.deleted"}`), sent)
	fmt.Println(errors.Is(err, webhook.ErrSignatureMismatch))
	// Output:
	// msg_1 <nil>
	// true
	// webhook: webhook-timestamp 1700000000 is 2h0m0s in the past; allowed skew is 5m0s
	// true
}

// Signing requests, as a test of the HTTP server or a client would.
func ExampleSignStripe() {
	body := []byte(`{"id":"evt_1","type":"charge.succeeded"}`)
	fmt.Println(webhook.SignStripe("whsec_stripe_test_secret", time.Unix(1700000000, 0), body))
	fmt.Println(webhook.SignGitHub("It's a Secret to Everybody", []byte("Hello, World!")))
	// Output:
	// t=1700000000,v1=fb22ffbfe8f82e398afe03ad6d385a59a0083f46bbd8b0ffad81467124cf7673
	// sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17
}
