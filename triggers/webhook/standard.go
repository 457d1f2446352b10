package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names and secret prefix.
const (
	headerStandardID        = "Webhook-Id"
	headerStandardTimestamp = "Webhook-Timestamp"
	headerStandardSignature = "Webhook-Signature"
	standardSecretPrefix    = "whsec_"
)

// verifyStandard verifies a Standard Webhooks request.
func (v *Verifier) verifyStandard(h http.Header, body []byte, now time.Time) (Delivery, error) {
	sigHeader := strings.Join(h.Values(headerStandardSignature), " ")
	if strings.TrimSpace(sigHeader) == "" {
		return Delivery{}, errorf(ErrMissingSignature, "missing webhook-signature header; expected \"v1,<base64 HMAC-SHA256>\" entries separated by spaces")
	}
	id := h.Get(headerStandardID)
	if id == "" {
		return Delivery{}, errorf(ErrMissingDeliveryID, "missing webhook-id header; Standard Webhooks signs it and uses it as the delivery id")
	}
	tsHeader := h.Get(headerStandardTimestamp)
	if tsHeader == "" {
		return Delivery{}, errorf(ErrMissingSignature, "missing webhook-timestamp header; expected unix seconds, signed with the body")
	}
	ts, err := parseTimestamp("webhook-timestamp", tsHeader)
	if err != nil {
		return Delivery{}, err
	}

	var sigs [][]byte
	entries := strings.Fields(sigHeader)
	for _, e := range entries {
		b64, ok := strings.CutPrefix(e, "v1,")
		if !ok {
			continue // another version (v1a, v2...): not ours to check
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(sig) != sha256.Size {
			continue
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return Delivery{}, errorf(ErrMalformedSignature, "webhook-signature has %d entries and none is \"v1,<base64 of 32 bytes>\"", len(entries))
	}
	for _, key := range v.keys {
		mac := standardMAC(key, id, tsHeader, body)
		for _, sig := range sigs {
			if hmac.Equal(mac, sig) {
				if err := checkTolerance("webhook-timestamp", ts, now, v.tolerance); err != nil {
					return Delivery{}, err
				}
				return Delivery{Scheme: SchemeStandard, ID: id}, nil
			}
		}
	}
	return Delivery{}, errorf(ErrSignatureMismatch, "none of the %d v1 signatures in webhook-signature matches webhook-id, webhook-timestamp and the %d-byte body under the %d configured secrets", len(sigs), len(body), len(v.keys))
}

// standardMAC is HMAC-SHA256 of "{id}.{timestamp}.{body}".
func standardMAC(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// SignStandard returns the webhook-signature header value ("v1,<base64>")
// for a Standard Webhooks delivery with the given id, timestamp (sent as
// unix seconds in webhook-timestamp) and body, signed with secret
// (interpreted as by [NewVerifier]). To sign with several secrets, join the
// values with a space.
func SignStandard(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(SchemeStandard, secret)
	if err != nil {
		return "", err
	}
	mac := standardMAC(key, id, strconv.FormatInt(ts.Unix(), 10), body)
	return "v1," + base64.StdEncoding.EncodeToString(mac), nil
}
