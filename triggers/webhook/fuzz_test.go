package webhook_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/triggers/webhook"
)

var errKinds = []error{
	webhook.ErrUnknownScheme, webhook.ErrInvalidSecret, webhook.ErrMissingSignature,
	webhook.ErrMalformedSignature, webhook.ErrSignatureMismatch, webhook.ErrTimestampOutOfTolerance,
	webhook.ErrMissingDeliveryID, webhook.ErrBodyTooDeep,
}

// checkErr fails unless err wraps exactly one error kind and its message
// starts with "webhook: " and does not contain secret.
func checkErr(t *testing.T, err error, secret string) {
	t.Helper()
	n := 0
	for _, k := range errKinds {
		if errors.Is(err, k) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("error %q wraps %d error kinds; want 1", err, n)
	}
	if !strings.HasPrefix(err.Error(), "webhook: ") || strings.Contains(err.Error(), secret) {
		t.Fatalf("error %q: bad prefix or echoes the secret", err)
	}
}

const fuzzSecret = "whsec_ZnV6ei1zZWNyZXQtZm9yLXRoZS10ZXN0cw=="

var fuzzKey, _ = base64.StdEncoding.DecodeString(strings.TrimPrefix(fuzzSecret, "whsec_"))

func FuzzVerifyStandard(f *testing.F) {
	f.Add("msg_1", "1700000000", "", []byte(`{"a":1}`), int64(1700000000))
	f.Add("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1a,xx", []byte(`{"test": 2432232314}`), int64(1614265330))
	f.Add("id", "0001700000000", "v1,AAAA v2,BBBB", []byte{}, int64(1700000301))
	f.Add("", "", "v1,", []byte("x"), int64(0))
	f.Add("i d", "-1", "   ", []byte("\x00"), int64(-5))
	v, err := webhook.NewVerifier(webhook.SchemeStandard, fuzzSecret)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, ts, sigHeader string, body []byte, now int64) {
		clock := time.Unix(now, 0)
		h := header("webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sigHeader)
		d, err := v.Verify(h, body, clock)
		if err != nil {
			checkErr(t, err, fuzzSecret)
		} else {
			// Success must mean a genuine signature and a fresh timestamp.
			want := "v1," + base64.StdEncoding.EncodeToString(hmacSHA256(fuzzKey, id, ".", ts, ".", string(body)))
			if !strings.Contains(sigHeader, want) {
				t.Fatalf("accepted signature header %q; genuine is %q", sigHeader, want)
			}
			n, perr := strconv.ParseInt(ts, 10, 64)
			if perr != nil || n < now-300 || n > now+300 || d.ID != id {
				t.Fatalf("accepted ts %q at now %d, delivery %+v", ts, now, d)
			}
		}
		// Whatever was fuzzed, a request signed with the secret verifies,
		// and fails once the body changes.
		if id == "" || now < 0 || now > 1e15 {
			return
		}
		sig, err := webhook.SignStandard(fuzzSecret, id, clock, body)
		if err != nil {
			t.Fatal(err)
		}
		h = header("webhook-id", id, "webhook-timestamp", strconv.FormatInt(now, 10), "webhook-signature", sigHeader+" "+sig)
		if d, err := v.Verify(h, body, clock); err != nil || d.ID != id {
			t.Fatalf("own signature: %+v, %v", d, err)
		}
		if _, err := v.Verify(h, append(bytes.Clone(body), 'x'), clock); !errors.Is(err, webhook.ErrSignatureMismatch) {
			t.Fatalf("tampered body: err = %v", err)
		}
	})
}

func FuzzVerifyGitHub(f *testing.F) {
	const secret = "It's a Secret to Everybody"
	f.Add("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", []byte("Hello, World!"), "d-1")
	f.Add("sha256=", []byte{}, "")
	f.Add("sha1=abc", []byte("x"), "d")
	f.Add(" sha256=ZZ ", []byte("{}"), "d")
	v, err := webhook.NewVerifier(webhook.SchemeGitHub, secret)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sig string, body []byte, delivery string) {
		h := header("X-Hub-Signature-256", sig, "X-GitHub-Delivery", delivery, "X-GitHub-Event", "push")
		d, err := v.Verify(h, body, time.Time{})
		if err != nil {
			checkErr(t, err, secret)
		} else {
			want := hex.EncodeToString(hmacSHA256([]byte(secret), string(body)))
			if !strings.EqualFold(strings.TrimSpace(sig), "sha256="+want) || d.ID != delivery || delivery == "" {
				t.Fatalf("accepted %q for body %q (genuine %s), delivery %+v", sig, body, want, d)
			}
		}
		if delivery == "" {
			return
		}
		h.Set("X-Hub-Signature-256", webhook.SignGitHub(secret, body))
		if d, err := v.Verify(h, body, time.Time{}); err != nil || d.ID != delivery || d.Event != "push" {
			t.Fatalf("own signature: %+v, %v", d, err)
		}
	})
}

func FuzzVerifyStripe(f *testing.F) {
	const secret = "whsec_stripe_test_secret"
	f.Add("t=1700000000,v1=fb22ffbfe8f82e398afe03ad6d385a59a0083f46bbd8b0ffad81467124cf7673", []byte(`{"id":"evt_1","type":"charge.succeeded"}`), "evt_1", int64(1700000000))
	f.Add("t=1,t=2", []byte("{}"), "", int64(1))
	f.Add(",,=,v1=", []byte("null"), "e", int64(0))
	f.Add("t=99999999999999999999,v1=00", []byte("[]"), "x", int64(-1))
	v, err := webhook.NewVerifier(webhook.SchemeStripe, secret)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sigHeader string, body []byte, id string, now int64) {
		clock := time.Unix(now, 0)
		d, err := v.Verify(header("Stripe-Signature", sigHeader), body, clock)
		if err != nil {
			checkErr(t, err, secret)
		} else if d.ID == "" {
			t.Fatalf("accepted %q with an empty delivery id", sigHeader)
		}
		if now < 0 || now > 1e15 {
			return
		}
		event, _ := json.Marshal(map[string]string{"id": id, "type": "t"})
		h := header("Stripe-Signature", webhook.SignStripe(secret, clock, event))
		d, err = v.Verify(h, event, clock)
		switch {
		case id == "" && !errors.Is(err, webhook.ErrMissingDeliveryID):
			t.Fatalf("empty id: err = %v", err)
		case id != "" && (err != nil || d.ID != viaJSON(id) || d.Event != "t"):
			t.Fatalf("own signature: %+v, %v", d, err)
		}
	})
}

func FuzzEnvelope(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}]}`), "application/json", "gh")
	f.Add([]byte("a=1&b=2"), "application/x-www-form-urlencoded", "")
	f.Add([]byte(strings.Repeat("[", 65)+strings.Repeat("]", 65)), "", "deep")
	f.Add([]byte("\"\xff\""), "text/plain", "x")
	f.Add([]byte(" 1e999 "), "", "n")
	f.Add([]byte(`"<script>&"`), "", "html")
	f.Add([]byte{}, "", "")
	f.Add([]byte(" null "), "application/json", "")
	f.Fuzz(func(t *testing.T, body []byte, contentType, id string) {
		r := httptest.NewRequest(http.MethodPost, "/hooks/acct/h", nil)
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Authorization", "Bearer s3cr3t-token")
		r.Header.Set("Webhook-Signature", "v1,s3cr3t-sig")
		env, err := webhook.NewEnvelope("h", r, body, webhook.Delivery{Scheme: webhook.SchemeStandard, ID: id})
		if err != nil {
			checkErr(t, err, "s3cr3t")
			stdlibCanJudge := bytes.Count(body, []byte("["))+bytes.Count(body, []byte("{")) <= 10000
			if !errors.Is(err, webhook.ErrBodyTooDeep) || (stdlibCanJudge && !json.Valid(body)) {
				t.Fatalf("refused %q: %v", body, err)
			}
			return
		}
		out, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) || bytes.Contains(out, []byte("s3cr3t")) && !bytes.Contains(body, []byte("s3cr3t")) {
			t.Fatalf("bad envelope %s", out)
		}
		var wire map[string]json.RawMessage
		if err := json.Unmarshal(out, &wire); err != nil {
			t.Fatal(err)
		}
		_, hasBody := wire["body"]
		_, hasB64 := wire["body_base64"]
		if hasBody == hasB64 {
			t.Fatalf("envelope %s has body %v and body_base64 %v", out, hasBody, hasB64)
		}
		var back webhook.Envelope
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if back.DeliveryID != viaJSON(id) || back.Hook != "h" || back.Path != "/hooks/acct/h" {
			t.Fatalf("round trip: %+v", back)
		}
		if hasB64 {
			if !bytes.Equal(back.RawBody, body) {
				t.Fatalf("body_base64 round trip: %q != %q", back.RawBody, body)
			}
			return
		}
		if !reflect.DeepEqual(decode(t, back.Body), decode(t, body)) {
			t.Fatalf("embedded body %s differs from %q", back.Body, body)
		}
	})
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// viaJSON is s after a trip through encoding/json, which replaces each
// invalid UTF-8 byte with U+FFFD.
func viaJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}
