package webhook

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Scheme names how a hook's requests are signed.
type Scheme string

// The signature schemes a hook can be configured with.
const (
	// SchemeStandard is Standard Webhooks (standardwebhooks.com), also what
	// Svix sends: webhook-id, webhook-timestamp and webhook-signature.
	SchemeStandard Scheme = "standard"
	// SchemeGitHub is GitHub's X-Hub-Signature-256.
	SchemeGitHub Scheme = "github"
	// SchemeStripe is Stripe's Stripe-Signature.
	SchemeStripe Scheme = "stripe"
	// SchemeNone accepts every request unverified.
	SchemeNone Scheme = "none"
)

// DefaultTolerance is how far a signed timestamp may be from the verifier's
// clock, in either direction, for the schemes that sign one.
const DefaultTolerance = 5 * time.Minute

// ParseScheme returns the scheme named s, or an error wrapping
// [ErrUnknownScheme].
func ParseScheme(s string) (Scheme, error) {
	switch sc := Scheme(s); sc {
	case SchemeStandard, SchemeGitHub, SchemeStripe, SchemeNone:
		return sc, nil
	}
	return "", errorf(ErrUnknownScheme, "unknown signature scheme %q; expected one of standard, github, stripe, none", s)
}

// Delivery is what a verified request says about itself.
type Delivery struct {
	// Scheme is the scheme the request was verified with.
	Scheme Scheme
	// ID identifies the delivery for deduplication: webhook-id (standard),
	// X-GitHub-Delivery (github), the event's "id" (stripe), or
	// Idempotency-Key / webhook-id (none; empty when neither is sent).
	ID string
	// Event is the event name where the scheme carries one outside the
	// body's payload: X-GitHub-Event (github) or the event's "type"
	// (stripe); empty otherwise.
	Event string
}

// Verifier checks the requests of one hook. It is immutable and safe for
// concurrent use.
type Verifier struct {
	scheme    Scheme
	keys      [][]byte
	tolerance time.Duration
}

// NewVerifier returns a verifier for scheme that accepts a signature made
// with any of secrets, so keys can rotate: configure the new secret next to
// the old one, switch the sender, then drop the old one.
//
// standard, github and stripe need at least one secret; none takes none.
// For standard, a secret of the form whsec_<base64> is base64-decoded and the
// decoded bytes are the HMAC key, as Standard Webhooks and Svix define it; a
// secret without the whsec_ prefix is used as raw bytes, as typed (note that
// the reference Standard Webhooks libraries base64-decode unprefixed secrets
// too: add the prefix to such a secret). For github and stripe the whole
// secret string is the key, as those services use it (Stripe's secrets start
// with whsec_ but are not decoded).
func NewVerifier(scheme Scheme, secrets ...string) (*Verifier, error) {
	if _, err := ParseScheme(string(scheme)); err != nil {
		return nil, err
	}
	v := &Verifier{scheme: scheme, tolerance: DefaultTolerance}
	if scheme == SchemeNone {
		if len(secrets) > 0 {
			return nil, errorf(ErrInvalidSecret, "scheme none verifies nothing and takes no secrets; got %d", len(secrets))
		}
		return v, nil
	}
	if len(secrets) == 0 {
		return nil, errorf(ErrInvalidSecret, "scheme %s needs at least one secret", scheme)
	}
	for i, s := range secrets {
		key, err := secretKey(scheme, s)
		if err != nil {
			return nil, fmt.Errorf("webhook: secret #%d of %d: %w", i+1, len(secrets), err)
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// secretKey returns the HMAC key a configured secret stands for.
func secretKey(scheme Scheme, secret string) ([]byte, error) {
	if secret == "" {
		return nil, errorf(ErrInvalidSecret, "secret is empty")
	}
	if scheme != SchemeStandard {
		return []byte(secret), nil
	}
	b64, ok := strings.CutPrefix(secret, standardSecretPrefix)
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil || len(key) == 0 {
		return nil, errorf(ErrInvalidSecret, "secret has the %s prefix but the rest (%d characters) is not non-empty standard base64", standardSecretPrefix, len(b64))
	}
	return key, nil
}

// Scheme returns the scheme v verifies.
func (v *Verifier) Scheme() Scheme { return v.scheme }

// WithTolerance returns a copy of v that allows signed timestamps to be d
// away from the clock instead of [DefaultTolerance]. It panics if d is not
// positive.
func (v *Verifier) WithTolerance(d time.Duration) *Verifier {
	if d <= 0 {
		panic(fmt.Sprintf("webhook: tolerance must be positive, got %v", d))
	}
	c := *v
	c.tolerance = d
	return &c
}

// Verify checks the signature of a request with headers h and the exact
// bytes body, as received, against the verifier's secrets, using now as the
// clock for the timestamp tolerance. On success it returns the delivery's id
// and event. Errors wrap one of the Err* values of this package.
//
// h is the request's header as net/http provides it (canonical keys).
// Replay within the tolerance is not detected here: deduplicate on
// [Delivery.ID].
func (v *Verifier) Verify(h http.Header, body []byte, now time.Time) (Delivery, error) {
	switch v.scheme {
	case SchemeStandard:
		return v.verifyStandard(h, body, now)
	case SchemeGitHub:
		return v.verifyGitHub(h, body)
	case SchemeStripe:
		return v.verifyStripe(h, body, now)
	case SchemeNone:
		id := h.Get("Idempotency-Key")
		if id == "" {
			id = h.Get(headerStandardID)
		}
		return Delivery{Scheme: SchemeNone, ID: id}, nil
	}
	// Unreachable through NewVerifier; a zero Verifier lands here.
	return Delivery{}, errorf(ErrUnknownScheme, "unknown signature scheme %q; expected one of standard, github, stripe, none (use NewVerifier)", v.scheme)
}

// parseTimestamp parses a unix-seconds timestamp header value: decimal
// digits only, at most 18 of them.
func parseTimestamp(header, s string) (int64, error) {
	if s == "" || len(s) > 18 || strings.Trim(s, "0123456789") != "" {
		return 0, errorf(ErrMalformedSignature, "%s %q is not a unix timestamp; expected decimal seconds", header, clip(s))
	}
	ts, _ := strconv.ParseInt(s, 10, 64) // cannot fail: at most 18 digits
	return ts, nil
}

// checkTolerance reports whether the unix timestamp ts is within tol of now.
func checkTolerance(header string, ts int64, now time.Time, tol time.Duration) error {
	tolSec := int64(tol / time.Second)
	nowSec := now.Unix()
	switch {
	case ts < nowSec-tolSec:
		return errorf(ErrTimestampOutOfTolerance, "%s %d is %s in the past; allowed skew is %v", header, ts, seconds(nowSec-ts), tol)
	case ts > nowSec+tolSec:
		return errorf(ErrTimestampOutOfTolerance, "%s %d is %s in the future; allowed skew is %v", header, ts, seconds(ts-nowSec), tol)
	}
	return nil
}

// seconds formats n seconds as a duration.
func seconds(n int64) string {
	if n > int64(1<<63-1)/int64(time.Second) {
		return strconv.FormatInt(n, 10) + "s"
	}
	return (time.Duration(n) * time.Second).String()
}

// clip shortens a header value quoted in an error message.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
