package webhook

import (
	"errors"
	"fmt"
)

// Errors returned by [NewVerifier], [Verifier.Verify] and [NewEnvelope].
// Every error those functions return wraps exactly one of these, so callers
// branch with errors.Is; the error's own message says what was wrong and
// what was expected, and never contains a secret.
var (
	// ErrUnknownScheme: the scheme is not one of standard, github, stripe
	// or none.
	ErrUnknownScheme = errors.New("webhook: unknown signature scheme")
	// ErrInvalidSecret: a configured secret is empty, is not decodable, or
	// was given to the none scheme.
	ErrInvalidSecret = errors.New("webhook: invalid secret")
	// ErrMissingSignature: the request lacks the header carrying the
	// signature (or, for Standard Webhooks, the signed timestamp).
	ErrMissingSignature = errors.New("webhook: missing signature header")
	// ErrMalformedSignature: the signature or timestamp header is present
	// but cannot be parsed, or carries no signature of the expected version.
	ErrMalformedSignature = errors.New("webhook: malformed signature header")
	// ErrSignatureMismatch: no signature in the request matches the body
	// under any configured secret.
	ErrSignatureMismatch = errors.New("webhook: signature mismatch")
	// ErrTimestampOutOfTolerance: the signature is valid but its timestamp
	// is further from now than the verifier's tolerance, in either direction.
	ErrTimestampOutOfTolerance = errors.New("webhook: timestamp outside tolerance")
	// ErrMissingDeliveryID: the scheme requires a delivery id and the
	// request does not carry one.
	ErrMissingDeliveryID = errors.New("webhook: missing delivery id")
	// ErrBodyTooDeep: the body is JSON nested deeper than [MaxJSONDepth].
	ErrBodyTooDeep = errors.New("webhook: JSON body nested too deeply")
)

// kindError is an error of one of the Err* kinds with a detailed message.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// errorf returns an error of the given kind whose message is "webhook: "
// followed by the formatted detail.
func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: "webhook: " + fmt.Sprintf(format, args...)}
}
