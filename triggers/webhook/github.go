package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// GitHub header names.
const (
	headerGitHubSignature = "X-Hub-Signature-256"
	headerGitHubDelivery  = "X-Github-Delivery"
	headerGitHubEvent     = "X-Github-Event"
)

// verifyGitHub verifies a GitHub request.
func (v *Verifier) verifyGitHub(h http.Header, body []byte) (Delivery, error) {
	value := h.Get(headerGitHubSignature)
	if value == "" {
		if h.Get("X-Hub-Signature") != "" {
			return Delivery{}, errorf(ErrMissingSignature, "missing X-Hub-Signature-256 header (X-Hub-Signature, SHA-1, is not accepted); expected \"sha256=<hex HMAC-SHA256>\"")
		}
		return Delivery{}, errorf(ErrMissingSignature, "missing X-Hub-Signature-256 header; expected \"sha256=<hex HMAC-SHA256>\"")
	}
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(value), "sha256=")
	sig, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(sig) != sha256.Size {
		return Delivery{}, errorf(ErrMalformedSignature, "X-Hub-Signature-256 is not \"sha256=\" followed by 64 hex digits (%d characters)", len(value))
	}
	matched := false
	for _, key := range v.keys {
		if hmac.Equal(githubMAC(key, body), sig) {
			matched = true
			break
		}
	}
	if !matched {
		return Delivery{}, errorf(ErrSignatureMismatch, "X-Hub-Signature-256 does not match the %d-byte body under the %d configured secrets", len(body), len(v.keys))
	}
	id := h.Get(headerGitHubDelivery)
	if id == "" {
		return Delivery{}, errorf(ErrMissingDeliveryID, "missing X-GitHub-Delivery header; GitHub sends it with every delivery")
	}
	return Delivery{Scheme: SchemeGitHub, ID: id, Event: h.Get(headerGitHubEvent)}, nil
}

// githubMAC is HMAC-SHA256 of the body.
func githubMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// SignGitHub returns the X-Hub-Signature-256 header value
// ("sha256=<hex>") for body signed with secret.
func SignGitHub(secret string, body []byte) string {
	return "sha256=" + hex.EncodeToString(githubMAC([]byte(secret), body))
}
