package webhook_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/triggers/webhook"
)

// benchBody is a 4 KiB-ish JSON webhook body.
var benchBody = []byte(`{"id":"evt_1","type":"push","items":[` + strings.Repeat(`{"name":"item","value":12345,"tags":["a","b"]},`, 80) + `{}]}`)

func BenchmarkVerify(b *testing.B) {
	now := time.Unix(1700000000, 0)
	std, _ := webhook.SignStandard("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=", "msg_1", now, benchBody)
	for _, bc := range []struct {
		scheme  webhook.Scheme
		secrets []string
		h       http.Header
	}{
		{webhook.SchemeStandard, []string{"whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ="}, header("webhook-id", "msg_1", "webhook-timestamp", strconv.FormatInt(now.Unix(), 10), "webhook-signature", std)},
		{webhook.SchemeGitHub, []string{"gh-secret"}, header("X-Hub-Signature-256", webhook.SignGitHub("gh-secret", benchBody), "X-GitHub-Delivery", "d-1", "X-GitHub-Event", "push")},
		{webhook.SchemeStripe, []string{"whsec_x"}, header("Stripe-Signature", webhook.SignStripe("whsec_x", now, benchBody))},
		{webhook.SchemeNone, nil, header("Idempotency-Key", "k")},
	} {
		b.Run(string(bc.scheme), func(b *testing.B) {
			v, err := webhook.NewVerifier(bc.scheme, bc.secrets...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(benchBody)))
			for b.Loop() {
				if _, err := v.Verify(bc.h, benchBody, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNewEnvelope(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, "/hooks/acct/gh", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", "push")
	r.Header.Set("X-GitHub-Delivery", "d-1")
	d := webhook.Delivery{Scheme: webhook.SchemeGitHub, ID: "d-1", Event: "push"}
	for _, bc := range []struct {
		name   string
		body   []byte
		direct bool // env.MarshalJSON() instead of json.Marshal(env)
	}{
		{"json", benchBody, false},
		{"json-direct", benchBody, true},
		{"binary", []byte(strings.Repeat("\x00\xff", 2048)), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				env, err := webhook.NewEnvelope("gh", r, bc.body, d)
				if err != nil {
					b.Fatal(err)
				}
				if bc.direct {
					_, err = env.MarshalJSON()
				} else {
					_, err = json.Marshal(env)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
