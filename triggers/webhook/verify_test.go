package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/triggers/webhook"
)

// The MAC helpers below compute signatures with crypto/hmac directly, not
// through the package, so the tests check the package against the
// specifications rather than against itself.

func hmacSHA256(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testClock is the verifiers' clock in these tests.
var testClock = time.Unix(1_700_000_000, 250_000_000) // a quarter second past a whole second

// verifyCase is one row of a scheme's table.
type verifyCase struct {
	name    string
	header  http.Header
	body    string
	now     time.Time // zero: testClock
	wantErr error     // nil: success
	wantID  string
	wantEv  string
	// wantMsg, when set, must appear in the error message.
	wantMsg string
}

func runVerifyCases(t *testing.T, v *webhook.Verifier, secrets []string, cases []verifyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := tc.now
			if now.IsZero() {
				now = testClock
			}
			d, err := v.Verify(tc.header, []byte(tc.body), now)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if d.ID != tc.wantID || d.Event != tc.wantEv || d.Scheme != v.Scheme() {
					t.Fatalf("Verify = %+v; want id %q event %q scheme %s", d, tc.wantID, tc.wantEv, v.Scheme())
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Verify error = %v; want errors.Is %v", err, tc.wantErr)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "webhook: ") {
				t.Errorf("error %q does not start with \"webhook: \"", msg)
			}
			if tc.wantMsg != "" && !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("error %q does not contain %q", msg, tc.wantMsg)
			}
			for _, s := range secrets {
				if strings.Contains(msg, s) {
					t.Errorf("error %q echoes a secret", msg)
				}
			}
			if d != (webhook.Delivery{}) {
				t.Errorf("Verify returned %+v with an error", d)
			}
		})
	}
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func with(h http.Header, kv ...string) http.Header {
	c := h.Clone()
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			c.Del(kv[i])
		} else {
			c.Set(kv[i], kv[i+1])
		}
	}
	return c
}

func TestVerifyStandard(t *testing.T) {
	t.Parallel()
	oldKey := []byte("old-key-0123456789abcdefghij")
	newKey := []byte("new-key-ABCDEFGHIJKLMNOPQRST")
	oldSecret := "whsec_" + base64.StdEncoding.EncodeToString(oldKey)
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString(newKey)
	rawSecret := "a raw secret, not base64"
	v, err := webhook.NewVerifier(webhook.SchemeStandard, newSecret, oldSecret, rawSecret)
	if err != nil {
		t.Fatal(err)
	}

	const id, body = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", `{"type":"invoice.paid","data":{"n":1}}`
	ts := strconv.FormatInt(testClock.Unix(), 10)
	sig := func(key []byte, ts, body string) string {
		return "v1," + base64.StdEncoding.EncodeToString(hmacSHA256(key, id, ".", ts, ".", body))
	}
	signed := func(key []byte, ts string) http.Header {
		return header("webhook-id", id, "webhook-timestamp", ts, "webhook-signature", sig(key, ts, body))
	}
	at := func(d time.Duration) string { return strconv.FormatInt(testClock.Add(d).Unix(), 10) }
	good := signed(newKey, ts)
	bogus := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))

	runVerifyCases(t, v, []string{oldSecret, newSecret, rawSecret, string(oldKey), string(newKey)}, []verifyCase{
		{name: "valid", header: good, body: body, wantID: id},
		{name: "rotated: old secret", header: signed(oldKey, ts), body: body, wantID: id},
		{name: "raw secret used as bytes", header: signed([]byte(rawSecret), ts), body: body, wantID: id},
		{name: "several signatures, one valid", header: with(good, "webhook-signature", bogus+" v2,abc "+sig(oldKey, ts, body)+" v1a,xyz"), body: body, wantID: id},
		{name: "signature split over two header lines", header: func() http.Header {
			h := with(good, "webhook-signature", bogus)
			h.Add("webhook-signature", sig(newKey, ts, body))
			return h
		}(), body: body, wantID: id},
		{name: "wrong secret", header: signed([]byte("someone else"), ts), body: body, wantErr: webhook.ErrSignatureMismatch, wantMsg: "under the 3 configured secrets"},
		{name: "tampered body", header: good, body: body + " ", wantErr: webhook.ErrSignatureMismatch},
		{name: "tampered id", header: with(good, "webhook-id", id+"x"), body: body, wantErr: webhook.ErrSignatureMismatch},
		{name: "tampered timestamp", header: with(good, "webhook-timestamp", at(time.Second)), body: body, wantErr: webhook.ErrSignatureMismatch},
		{name: "missing signature", header: with(good, "webhook-signature", ""), body: body, wantErr: webhook.ErrMissingSignature, wantMsg: "missing webhook-signature header"},
		{name: "blank signature", header: with(good, "webhook-signature", "   "), body: body, wantErr: webhook.ErrMissingSignature},
		{name: "missing id", header: with(good, "webhook-id", ""), body: body, wantErr: webhook.ErrMissingDeliveryID, wantMsg: "webhook-id"},
		{name: "missing timestamp", header: with(good, "webhook-timestamp", ""), body: body, wantErr: webhook.ErrMissingSignature, wantMsg: "webhook-timestamp"},
		{name: "timestamp not a number", header: with(good, "webhook-timestamp", "yesterday"), body: body, wantErr: webhook.ErrMalformedSignature, wantMsg: `"yesterday" is not a unix timestamp`},
		{name: "timestamp negative", header: with(good, "webhook-timestamp", "-5"), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "timestamp in milliseconds overflowing", header: with(good, "webhook-timestamp", "99999999999999999999"), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "signature without version", header: with(good, "webhook-signature", strings.TrimPrefix(sig(newKey, ts, body), "v1,")), body: body, wantErr: webhook.ErrMalformedSignature, wantMsg: "none is \"v1,<base64 of 32 bytes>\""},
		{name: "signature not base64", header: with(good, "webhook-signature", "v1,!!!!"), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "signature too short", header: with(good, "webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 20))), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "only other versions", header: with(good, "webhook-signature", "v1a,"+base64.StdEncoding.EncodeToString(make([]byte, 64))), body: body, wantErr: webhook.ErrMalformedSignature},
		// testClock is x.25 s; timestamps are whole seconds compared with the
		// clock's whole second.
		{name: "5m in the past: inside", header: signed(newKey, at(-5*time.Minute)), body: body, wantID: id},
		{name: "5m1s in the past: outside", header: signed(newKey, at(-5*time.Minute-time.Second)), body: body, wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "webhook-timestamp 1699999699 is 5m1s in the past; allowed skew is 5m0s"},
		{name: "5m in the future: inside", header: signed(newKey, at(5*time.Minute)), body: body, wantID: id},
		{name: "5m1s in the future: outside", header: signed(newKey, at(5*time.Minute+time.Second)), body: body, wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "is 5m1s in the future"},
		{name: "2h in the past", header: signed(newKey, at(-2*time.Hour)), body: body, wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "webhook: webhook-timestamp 1699992800 is 2h0m0s in the past; allowed skew is 5m0s"},
		{name: "same second later: inside", header: signed(newKey, at(-5*time.Minute)), body: body, now: testClock.Add(700 * time.Millisecond), wantID: id},
		{name: "clock crossed into the next second: outside", header: signed(newKey, at(-5*time.Minute)), body: body, now: testClock.Add(800 * time.Millisecond), wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "5m1s in the past"},
		{name: "timestamp 0", header: signed(newKey, "0"), body: body, wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "in the past"},
		{name: "far future timestamp", header: signed(newKey, "999999999999999999"), body: body, wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "999999998299999999s in the future"},
		{name: "stale and wrong: mismatch wins", header: signed([]byte("nope"), at(-time.Hour)), body: body, wantErr: webhook.ErrSignatureMismatch},
		{name: "empty body", header: header("webhook-id", id, "webhook-timestamp", ts, "webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(hmacSHA256(newKey, id, ".", ts, "."))), body: "", wantID: id},
	})
}

// TestStandardSpecVector checks the example vector published with the
// Standard Webhooks specification (libraries/go/webhook_test.go,
// TestWebhookSign, in github.com/standard-webhooks/standard-webhooks).
func TestStandardSpecVector(t *testing.T) {
	t.Parallel()
	const (
		secret  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id      = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		ts      = 1614265330
		payload = `{"test": 2432232314}`
		want    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	got, err := webhook.SignStandard(secret, id, time.Unix(ts, 0), []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("SignStandard = %s; want %s", got, want)
	}
	// And the same MAC computed here by hand.
	mac := hmacSHA256(mustB64(t, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), id, ".", strconv.Itoa(ts), ".", payload)
	if "v1,"+base64.StdEncoding.EncodeToString(mac) != want {
		t.Fatal("hand-computed MAC differs from the spec vector")
	}
	v, err := webhook.NewVerifier(webhook.SchemeStandard, secret)
	if err != nil {
		t.Fatal(err)
	}
	h := header("webhook-id", id, "webhook-timestamp", strconv.Itoa(ts), "webhook-signature", want)
	d, err := v.Verify(h, []byte(payload), time.Unix(ts+10, 0))
	if err != nil || d.ID != id {
		t.Fatalf("Verify = %+v, %v", d, err)
	}
	// The spec's secret without its prefix is a raw key here, not base64.
	raw, err := webhook.NewVerifier(webhook.SchemeStandard, strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Verify(h, []byte(payload), time.Unix(ts, 0)); !errors.Is(err, webhook.ErrSignatureMismatch) {
		t.Fatalf("unprefixed secret: err = %v; want mismatch", err)
	}
}

func TestVerifyGitHub(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "It's a Secret to Everybody", "the previous secret"
	v, err := webhook.NewVerifier(webhook.SchemeGitHub, secret, oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	const body, delivery = "Hello, World!", "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	// GitHub's documented example ("Validating webhook deliveries").
	const published = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := webhook.SignGitHub(secret, []byte(body)); got != published {
		t.Fatalf("SignGitHub = %s; want %s", got, published)
	}
	sig := func(key, body string) string { return "sha256=" + hex.EncodeToString(hmacSHA256([]byte(key), body)) }
	good := header("X-Hub-Signature-256", published, "X-GitHub-Delivery", delivery, "X-GitHub-Event", "push")

	runVerifyCases(t, v, []string{secret, oldSecret}, []verifyCase{
		{name: "published vector", header: good, body: body, wantID: delivery, wantEv: "push"},
		{name: "rotated: old secret", header: with(good, "X-Hub-Signature-256", sig(oldSecret, body)), body: body, wantID: delivery, wantEv: "push"},
		{name: "upper-case hex", header: with(good, "X-Hub-Signature-256", "sha256="+strings.ToUpper(strings.TrimPrefix(published, "sha256="))), body: body, wantID: delivery, wantEv: "push"},
		{name: "no event header", header: with(good, "X-GitHub-Event", ""), body: body, wantID: delivery},
		{name: "wrong secret", header: with(good, "X-Hub-Signature-256", sig("guess", body)), body: body, wantErr: webhook.ErrSignatureMismatch, wantMsg: "13-byte body under the 2 configured secrets"},
		{name: "tampered body", header: good, body: "Hello, World?", wantErr: webhook.ErrSignatureMismatch},
		{name: "missing signature", header: with(good, "X-Hub-Signature-256", ""), body: body, wantErr: webhook.ErrMissingSignature, wantMsg: "X-Hub-Signature-256"},
		{name: "only SHA-1 signature", header: with(good, "X-Hub-Signature-256", "", "X-Hub-Signature", "sha1=0123"), body: body, wantErr: webhook.ErrMissingSignature, wantMsg: "SHA-1, is not accepted"},
		{name: "no sha256= prefix", header: with(good, "X-Hub-Signature-256", strings.TrimPrefix(published, "sha256=")), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "sha1= prefix", header: with(good, "X-Hub-Signature-256", "sha1="+strings.TrimPrefix(published, "sha256=")), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "odd hex", header: with(good, "X-Hub-Signature-256", published[:len(published)-1]), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "not hex", header: with(good, "X-Hub-Signature-256", "sha256="+strings.Repeat("zz", 32)), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "missing delivery id", header: with(good, "X-GitHub-Delivery", ""), body: body, wantErr: webhook.ErrMissingDeliveryID, wantMsg: "X-GitHub-Delivery"},
		{name: "missing delivery id and bad signature: mismatch first", header: with(good, "X-GitHub-Delivery", ""), body: "x", wantErr: webhook.ErrSignatureMismatch},
	})
}

func TestVerifyStripe(t *testing.T) {
	t.Parallel()
	const secret, oldSecret = "whsec_stripe_test_secret", "whsec_stripe_old_secret"
	v, err := webhook.NewVerifier(webhook.SchemeStripe, secret, oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"id":"evt_1","type":"charge.succeeded"}`
	// Computed with: printf '1700000000.{"id":"evt_1","type":"charge.succeeded"}' |
	//   openssl dgst -sha256 -hmac whsec_stripe_test_secret
	const vector = "t=1700000000,v1=fb22ffbfe8f82e398afe03ad6d385a59a0083f46bbd8b0ffad81467124cf7673"
	if got := webhook.SignStripe(secret, time.Unix(1700000000, 0), []byte(body)); got != vector {
		t.Fatalf("SignStripe = %s; want %s", got, vector)
	}
	v1 := func(key, ts, body string) string { return hex.EncodeToString(hmacSHA256([]byte(key), ts, ".", body)) }
	at := func(d time.Duration) string { return strconv.FormatInt(testClock.Add(d).Unix(), 10) }
	ts := at(0)
	sh := func(value string) http.Header { return header("Stripe-Signature", value) }
	good := sh("t=" + ts + ",v1=" + v1(secret, ts, body))

	runVerifyCases(t, v, []string{secret, oldSecret}, []verifyCase{
		{name: "openssl vector", header: sh(vector), body: body, wantID: "evt_1", wantEv: "charge.succeeded"},
		{name: "rotated: old secret", header: sh("t=" + ts + ",v1=" + v1(oldSecret, ts, body)), body: body, wantID: "evt_1", wantEv: "charge.succeeded"},
		{name: "two v1 and a v0, spaces", header: sh("t=" + ts + ", v1=" + v1("other", ts, body) + ", v1=" + v1(secret, ts, body) + ", v0=" + v1("x", ts, body)), body: body, wantID: "evt_1", wantEv: "charge.succeeded"},
		{name: "t after v1", header: sh("v1=" + v1(secret, ts, body) + ",t=" + ts), body: body, wantID: "evt_1", wantEv: "charge.succeeded"},
		{name: "wrong secret", header: sh("t=" + ts + ",v1=" + v1("guess", ts, body)), body: body, wantErr: webhook.ErrSignatureMismatch},
		{name: "tampered body", header: good, body: `{"id":"evt_2","type":"charge.succeeded"}`, wantErr: webhook.ErrSignatureMismatch},
		{name: "tampered t", header: sh("t=" + at(time.Second) + ",v1=" + v1(secret, ts, body)), body: body, wantErr: webhook.ErrSignatureMismatch},
		{name: "missing header", header: http.Header{}, body: body, wantErr: webhook.ErrMissingSignature, wantMsg: "Stripe-Signature"},
		{name: "no t", header: sh("v1=" + v1(secret, ts, body)), body: body, wantErr: webhook.ErrMalformedSignature, wantMsg: "no t= element"},
		{name: "two t", header: sh("t=" + ts + ",t=" + ts + ",v1=" + v1(secret, ts, body)), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "empty t", header: sh("t=,v1=" + v1(secret, ts, body)), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "t not a number", header: sh("t=soon,v1=" + v1(secret, "soon", body)), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "no v1", header: sh("t=" + ts + ",v0=" + v1(secret, ts, body)), body: body, wantErr: webhook.ErrMalformedSignature, wantMsg: "no v1= element"},
		{name: "v1 not hex", header: sh("t=" + ts + ",v1=xyz"), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "element without =", header: sh("t=" + ts + ",garbage"), body: body, wantErr: webhook.ErrMalformedSignature},
		{name: "5m in the past: inside", header: sh("t=" + at(-5*time.Minute) + ",v1=" + v1(secret, at(-5*time.Minute), body)), body: body, wantID: "evt_1", wantEv: "charge.succeeded"},
		{name: "5m1s in the past: outside", header: sh("t=" + at(-5*time.Minute-time.Second) + ",v1=" + v1(secret, at(-5*time.Minute-time.Second), body)), body: body, wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "Stripe-Signature t 1699999699 is 5m1s in the past; allowed skew is 5m0s"},
		{name: "5m in the future: inside", header: sh("t=" + at(5*time.Minute) + ",v1=" + v1(secret, at(5*time.Minute), body)), body: body, wantID: "evt_1", wantEv: "charge.succeeded"},
		{name: "5m1s in the future: outside", header: sh("t=" + at(5*time.Minute+time.Second) + ",v1=" + v1(secret, at(5*time.Minute+time.Second), body)), body: body, wantErr: webhook.ErrTimestampOutOfTolerance, wantMsg: "in the future"},
		{name: "body not JSON", header: sh("t=" + ts + ",v1=" + v1(secret, ts, "id=evt_1")), body: "id=evt_1", wantErr: webhook.ErrMissingDeliveryID, wantMsg: "body is not JSON"},
		{name: "body without id", header: sh("t=" + ts + ",v1=" + v1(secret, ts, `{"type":"x"}`)), body: `{"type":"x"}`, wantErr: webhook.ErrMissingDeliveryID, wantMsg: `no non-empty string "id"`},
		{name: "numeric id", header: sh("t=" + ts + ",v1=" + v1(secret, ts, `{"id":5}`)), body: `{"id":5}`, wantErr: webhook.ErrMissingDeliveryID},
		{name: "numeric type is ignored", header: sh("t=" + ts + ",v1=" + v1(secret, ts, `{"type":5,"id":"evt_5"}`)), body: `{"type":5,"id":"evt_5"}`, wantID: "evt_5"},
		{name: "body an array", header: sh("t=" + ts + ",v1=" + v1(secret, ts, `[1]`)), body: `[1]`, wantErr: webhook.ErrMissingDeliveryID},
	})
}

func TestVerifyNone(t *testing.T) {
	t.Parallel()
	v, err := webhook.NewVerifier(webhook.SchemeNone)
	if err != nil {
		t.Fatal(err)
	}
	runVerifyCases(t, v, nil, []verifyCase{
		{name: "nothing", header: http.Header{}, body: "anything"},
		{name: "idempotency key", header: header("Idempotency-Key", "k1", "webhook-id", "w1"), wantID: "k1"},
		{name: "webhook-id", header: header("webhook-id", "w1", "webhook-signature", "v1,junk"), wantID: "w1"},
	})
}

func TestVerifyTolerance(t *testing.T) {
	t.Parallel()
	v, err := webhook.NewVerifier(webhook.SchemeStripe, "s")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_9"}`)
	h := header("Stripe-Signature", webhook.SignStripe("s", testClock.Add(-time.Hour), body))
	if _, err := v.Verify(h, body, testClock); !errors.Is(err, webhook.ErrTimestampOutOfTolerance) {
		t.Fatalf("default tolerance: err = %v", err)
	}
	wide := v.WithTolerance(time.Hour)
	if _, err := wide.Verify(h, body, testClock); err != nil {
		t.Fatalf("1h tolerance: %v", err)
	}
	if _, err := v.Verify(h, body, testClock); err == nil {
		t.Fatal("WithTolerance changed the original verifier")
	}
	defer func() {
		if recover() == nil {
			t.Error("WithTolerance(0) did not panic")
		}
	}()
	v.WithTolerance(0)
}

func TestNewVerifier(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		scheme  webhook.Scheme
		secrets []string
		wantErr error
		wantMsg string
	}{
		{"standard ok", webhook.SchemeStandard, []string{"whsec_c2VjcmV0"}, nil, ""},
		{"standard unpadded base64", webhook.SchemeStandard, []string{"whsec_c2VjcmV0MQ"}, nil, ""},
		{"standard bad base64", webhook.SchemeStandard, []string{"whsec_c2VjcmV0", "whsec_!!not-base64!!"}, webhook.ErrInvalidSecret, "secret #2 of 2"},
		{"standard empty after prefix", webhook.SchemeStandard, []string{"whsec_"}, webhook.ErrInvalidSecret, "whsec_ prefix"},
		{"github no secrets", webhook.SchemeGitHub, nil, webhook.ErrInvalidSecret, "needs at least one secret"},
		{"stripe empty secret", webhook.SchemeStripe, []string{""}, webhook.ErrInvalidSecret, "empty"},
		{"stripe whsec not decoded", webhook.SchemeStripe, []string{"whsec_!!"}, nil, ""},
		{"none with secret", webhook.SchemeNone, []string{"s3cr3t"}, webhook.ErrInvalidSecret, "takes no secrets"},
		{"unknown", "gitlab", []string{"s"}, webhook.ErrUnknownScheme, `"gitlab"; expected one of standard, github, stripe, none`},
		{"empty scheme", "", nil, webhook.ErrUnknownScheme, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := webhook.NewVerifier(tc.scheme, tc.secrets...)
			if tc.wantErr == nil {
				if err != nil || v == nil {
					t.Fatalf("NewVerifier: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || v != nil {
				t.Fatalf("NewVerifier = %v, %v; want errors.Is %v", v, err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
			for _, s := range tc.secrets {
				if len(s) > 6 && strings.Contains(err.Error(), s) {
					t.Errorf("error %q echoes a secret", err)
				}
			}
		})
	}
}

func TestParseScheme(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"standard", "github", "stripe", "none"} {
		if got, err := webhook.ParseScheme(s); err != nil || string(got) != s {
			t.Errorf("ParseScheme(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := webhook.ParseScheme("GitHub"); !errors.Is(err, webhook.ErrUnknownScheme) {
		t.Errorf("ParseScheme(GitHub) err = %v", err)
	}
}

func TestZeroVerifier(t *testing.T) {
	t.Parallel()
	var v webhook.Verifier
	if _, err := v.Verify(http.Header{}, nil, testClock); !errors.Is(err, webhook.ErrUnknownScheme) {
		t.Fatalf("zero Verifier: err = %v", err)
	}
}

func TestSignStandardBadSecret(t *testing.T) {
	t.Parallel()
	if _, err := webhook.SignStandard("whsec_***", "id", testClock, nil); !errors.Is(err, webhook.ErrInvalidSecret) {
		t.Fatalf("err = %v", err)
	}
}
