package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/triggers/webhook"
)

// newRequest is a request to path carrying every sensitive header a hook
// might see, plus the given ones.
func newRequest(path string, kv ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, nil)
	for k, v := range map[string]string{
		"Authorization":       "Bearer token-must-not-leak",
		"Proxy-Authorization": "Basic bXVzdC1ub3QtbGVhaw==",
		"Cookie":              "session=must-not-leak",
		"Webhook-Signature":   "v1,c2lnbmF0dXJl",
		"X-Hub-Signature-256": "sha256=00",
		"X-Hub-Signature":     "sha1=00",
		"Stripe-Signature":    "t=1,v1=00",
		"X-Forwarded-For":     "10.0.0.1",
	} {
		r.Header.Set(k, v)
	}
	for i := 0; i < len(kv); i += 2 {
		r.Header.Add(kv[i], kv[i+1])
	}
	return r
}

func TestNewEnvelope(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		req      *http.Request
		body     string
		delivery webhook.Delivery
		want     string
	}{
		{
			name: "github JSON",
			req: newRequest("/hooks/acme/gh?token=secret-in-query",
				"Content-Type", "application/json", "User-Agent", "GitHub-Hookshot/044aadd",
				"X-GitHub-Delivery", "d-1", "X-GitHub-Event", "push", "X-GitHub-Hook-ID", "42",
				"webhook-id", "not for github"),
			body:     `{ "ref" : "refs/heads/main", "html": "<a>&amp;</a>" }`,
			delivery: webhook.Delivery{Scheme: webhook.SchemeGitHub, ID: "d-1", Event: "push"},
			want:     `{"hook":"gh","delivery_id":"d-1","method":"POST","path":"/hooks/acme/gh","headers":{"content-type":"application/json","user-agent":"GitHub-Hookshot/044aadd","x-github-delivery":"d-1","x-github-event":"push","x-github-hook-id":"42"},"body":{"ref":"refs/heads/main","html":"\u003ca\u003e\u0026amp;\u003c/a\u003e"}}`,
		},
		{
			name:     "standard form body",
			req:      newRequest("/hooks/acme/std", "Content-Type", "application/x-www-form-urlencoded", "webhook-id", "msg_1", "webhook-timestamp", "1700000000"),
			body:     "a=1&b=2",
			delivery: webhook.Delivery{Scheme: webhook.SchemeStandard, ID: "msg_1"},
			want:     `{"hook":"std","delivery_id":"msg_1","method":"POST","path":"/hooks/acme/std","headers":{"content-type":"application/x-www-form-urlencoded","webhook-id":"msg_1","webhook-timestamp":"1700000000"},"body_base64":"YT0xJmI9Mg=="}`,
		},
		{
			name:     "JSON scalar with text content type is still JSON",
			req:      newRequest("/hooks/a/b", "Content-Type", "text/plain"),
			body:     `"hello"`,
			delivery: webhook.Delivery{Scheme: webhook.SchemeNone},
			want:     `{"hook":"b","delivery_id":"","method":"POST","path":"/hooks/a/b","headers":{"content-type":"text/plain"},"body":"hello"}`,
		},
		{
			name:     "null body",
			req:      newRequest("/hooks/a/b"),
			body:     "null",
			delivery: webhook.Delivery{Scheme: webhook.SchemeNone},
			want:     `{"hook":"b","delivery_id":"","method":"POST","path":"/hooks/a/b","headers":{},"body":null}`,
		},
		{
			name:     "empty body",
			req:      newRequest("/hooks/a/b"),
			body:     "",
			delivery: webhook.Delivery{Scheme: webhook.SchemeNone, ID: "k"},
			want:     `{"hook":"b","delivery_id":"k","method":"POST","path":"/hooks/a/b","headers":{},"body_base64":""}`,
		},
		{
			name:     "invalid UTF-8 in a JSON string goes base64",
			req:      newRequest("/hooks/a/b", "Content-Type", "application/json"),
			body:     "\"\xff\"",
			delivery: webhook.Delivery{Scheme: webhook.SchemeStripe, ID: "evt"},
			want:     `{"hook":"b","delivery_id":"evt","method":"POST","path":"/hooks/a/b","headers":{"content-type":"application/json"},"body_base64":"Iv8i"}`,
		},
		{
			name:     "none keeps idempotency-key, repeated headers joined",
			req:      newRequest("/hooks/a/b", "Idempotency-Key", "k1", "User-Agent", "one", "User-Agent", "two"),
			body:     `[1, 2]`,
			delivery: webhook.Delivery{Scheme: webhook.SchemeNone, ID: "k1"},
			want:     `{"hook":"b","delivery_id":"k1","method":"POST","path":"/hooks/a/b","headers":{"idempotency-key":"k1","user-agent":"one, two"},"body":[1,2]}`,
		},
		{
			name:     "64 levels deep is allowed",
			req:      newRequest("/hooks/a/b"),
			body:     strings.Repeat("[", 64) + strings.Repeat("]", 64),
			delivery: webhook.Delivery{Scheme: webhook.SchemeNone},
			want:     `{"hook":"b","delivery_id":"","method":"POST","path":"/hooks/a/b","headers":{},"body":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		},
		{
			name:     "brackets inside strings do not count",
			req:      newRequest("/hooks/a/b"),
			body:     `{"s":"` + strings.Repeat(`[{\"`, 100) + `"}`,
			delivery: webhook.Delivery{Scheme: webhook.SchemeNone},
			want:     `{"hook":"b","delivery_id":"","method":"POST","path":"/hooks/a/b","headers":{},"body":{"s":"` + strings.Repeat(`[{\"`, 100) + `"}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, err := webhook.NewEnvelope(tc.req.URL.Path[strings.LastIndex(tc.req.URL.Path, "/")+1:], tc.req, []byte(tc.body), tc.delivery)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("envelope JSON\n got %s\nwant %s", got, tc.want)
			}
			for _, leak := range []string{"must-not-leak", "bXVzdC1ub3QtbGVhaw", "c2lnbmF0dXJl", "sha256=", "sha1=", "t=1,v1", "10.0.0.1", "secret-in-query"} {
				if strings.Contains(string(got), leak) {
					t.Errorf("envelope leaks %q", leak)
				}
			}
			var back webhook.Envelope
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(got) {
				t.Errorf("round trip changed the JSON:\n got %s\nwant %s", again, got)
			}
			if !bytes.Equal(back.RawBody, env.RawBody) || !reflect.DeepEqual(back.Headers, env.Headers) {
				t.Errorf("round trip: got %+v; want %+v", back, env)
			}
		})
	}
}

func TestNewEnvelopeTooDeep(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		`{"a":` + strings.Repeat(`{"b":`, 64) + "1" + strings.Repeat("}", 65),
		strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
	} {
		_, err := webhook.NewEnvelope("deep", newRequest("/hooks/a/deep"), []byte(body), webhook.Delivery{Scheme: webhook.SchemeNone, ID: "d9"})
		if !errors.Is(err, webhook.ErrBodyTooDeep) {
			t.Fatalf("err = %v; want ErrBodyTooDeep", err)
		}
		if want := `webhook: JSON body of hook "deep" (delivery "d9") nests arrays and objects `; !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), " levels deep; expected at most 64") {
			t.Errorf("error %q; want %q...", err, want)
		}
	}
	// Deep but not JSON: sent as bytes, not refused.
	env, err := webhook.NewEnvelope("deep", newRequest("/hooks/a/deep"), []byte(strings.Repeat("[", 100)), webhook.Delivery{Scheme: webhook.SchemeNone})
	if err != nil || env.Body != nil || len(env.RawBody) != 100 {
		t.Fatalf("unbalanced brackets: env %+v, err %v", env, err)
	}
}

func TestNewEnvelopeCopiesBody(t *testing.T) {
	t.Parallel()
	for _, body := range [][]byte{[]byte(`{"a":1}`), []byte("not json")} {
		env, err := webhook.NewEnvelope("h", newRequest("/hooks/a/h"), body, webhook.Delivery{Scheme: webhook.SchemeNone})
		if err != nil {
			t.Fatal(err)
		}
		before, _ := json.Marshal(env)
		body[0] = 'X'
		after, _ := json.Marshal(env)
		if string(before) != string(after) {
			t.Fatalf("envelope shares the caller's body buffer")
		}
	}
}

func TestEnvelopeMarshalZero(t *testing.T) {
	t.Parallel()
	got, err := json.Marshal(webhook.Envelope{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"hook":"","delivery_id":"","method":"","path":"","headers":{},"body_base64":""}`; string(got) != want {
		t.Fatalf("got %s; want %s", got, want)
	}
}
