package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// headerStripeSignature carries Stripe's timestamp and signatures.
const headerStripeSignature = "Stripe-Signature"

// verifyStripe verifies a Stripe request.
func (v *Verifier) verifyStripe(h http.Header, body []byte, now time.Time) (Delivery, error) {
	value := h.Get(headerStripeSignature)
	if value == "" {
		return Delivery{}, errorf(ErrMissingSignature, "missing Stripe-Signature header; expected \"t=<unix seconds>,v1=<hex HMAC-SHA256>\"")
	}
	var (
		tsText string
		sigs   [][]byte
		fields = strings.Split(value, ",")
	)
	for _, f := range fields {
		k, val, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return Delivery{}, errorf(ErrMalformedSignature, "Stripe-Signature has an element without '='; expected comma-separated key=value pairs")
		}
		switch k {
		case "t":
			if tsText != "" {
				return Delivery{}, errorf(ErrMalformedSignature, "Stripe-Signature has more than one t= element")
			}
			if val == "" {
				return Delivery{}, errorf(ErrMalformedSignature, "Stripe-Signature has an empty t= element; expected unix seconds")
			}
			tsText = val
		case "v1":
			sig, err := hex.DecodeString(val)
			if err != nil || len(sig) != sha256.Size {
				continue
			}
			sigs = append(sigs, sig)
		}
	}
	if tsText == "" {
		return Delivery{}, errorf(ErrMalformedSignature, "Stripe-Signature has no t= element; expected \"t=<unix seconds>,v1=<hex>\"")
	}
	ts, err := parseTimestamp("Stripe-Signature t", tsText)
	if err != nil {
		return Delivery{}, err
	}
	if len(sigs) == 0 {
		return Delivery{}, errorf(ErrMalformedSignature, "Stripe-Signature has no v1= element of 64 hex digits among its %d elements", len(fields))
	}
	matched := false
	for _, key := range v.keys {
		mac := stripeMAC(key, tsText, body)
		for _, sig := range sigs {
			if hmac.Equal(mac, sig) {
				matched = true
				break
			}
		}
		if matched {
			break
		}
	}
	if !matched {
		return Delivery{}, errorf(ErrSignatureMismatch, "none of the %d v1 signatures in Stripe-Signature matches t and the %d-byte body under the %d configured secrets", len(sigs), len(body), len(v.keys))
	}
	if err := checkTolerance("Stripe-Signature t", ts, now, v.tolerance); err != nil {
		return Delivery{}, err
	}
	var event struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	// A field of the wrong type is skipped with an UnmarshalTypeError and
	// the rest still decoded: a non-string id then reads as missing.
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(body, &event); err != nil && !errors.As(err, &typeErr) {
		return Delivery{}, errorf(ErrMissingDeliveryID, "Stripe event body is not JSON (%v); expected an event object with a string \"id\"", err)
	}
	if event.ID == "" {
		return Delivery{}, errorf(ErrMissingDeliveryID, "Stripe event body has no non-empty string \"id\"; expected an event object with an id such as \"evt_...\"")
	}
	id, typ := event.ID, event.Type
	return Delivery{Scheme: SchemeStripe, ID: id, Event: typ}, nil
}

// stripeMAC is HMAC-SHA256 of "{t}.{body}".
func stripeMAC(key []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// SignStripe returns the Stripe-Signature header value
// ("t=<unix>,v1=<hex>") for body signed with secret at ts.
func SignStripe(secret string, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(stripeMAC([]byte(secret), t, body))
}
