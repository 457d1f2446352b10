package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/wire"
)

// Error codes the API returns (see docs/http-api.md and package wire).
// The client uses the same codes for arguments it refuses before sending
// anything (then Error.Status is 0).
const (
	CodeInvalidJSON          = wire.CodeInvalidJSON
	CodeInvalidArgument      = wire.CodeInvalidArgument
	CodeInvalidName          = wire.CodeInvalidName
	CodeUnsupportedMediaType = wire.CodeUnsupportedMediaType
	CodeUnauthorized         = wire.CodeUnauthorized
	CodeForbidden            = wire.CodeForbidden
	CodeQueueNotFound        = wire.CodeQueueNotFound
	CodeMessageNotFound      = wire.CodeMessageNotFound
	CodeNotFound             = wire.CodeNotFound
	CodeQueueExists          = wire.CodeQueueExists
	CodeQueueInUse           = wire.CodeQueueInUse
	CodeTopicNotFound        = wire.CodeTopicNotFound
	CodeTopicExists          = wire.CodeTopicExists
	CodeConflict             = wire.CodeConflict
	CodeStaleReceipt         = wire.CodeStaleReceipt
	CodeMessageTooLarge      = wire.CodeMessageTooLarge
	CodeBodyTooLarge         = wire.CodeBodyTooLarge
	CodeInternal             = wire.CodeInternal
	CodeUnavailable          = wire.CodeUnavailable
	CodeLimitExceeded        = wire.CodeLimitExceeded
	CodeTooManyRequests      = wire.CodeTooManyRequests
)

// Error is an error response of the API, or an argument the client
// refused before sending (Status 0). Branch on it with errors.As, with
// errors.Is against the Err* values (which compare codes), or with the
// Is* helpers (which compare statuses).
type Error struct {
	// Status is the HTTP status (0: refused by the client, nothing sent).
	Status int
	// Code is the machine-readable code, e.g. "queue_not_found". A
	// response without the API's error body (a proxy's HTML page, say)
	// gets "http_<status>".
	Code string
	// Message says what was wrong, for people.
	Message string
	// RetryAfter is how long the server asked the client to wait before
	// trying again (its Retry-After in seconds, up to a day), or 0.
	RetryAfter time.Duration
}

// Error formats the error as "message (404 queue_not_found)".
func (e *Error) Error() string {
	if e.Status == 0 {
		return e.Message
	}
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, client.ErrQueueNotFound) works. A target with a Status
// must match it too.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && (t.Status == 0 || t.Status == e.Status)
}

// Values to compare API errors with errors.Is; only the code counts.
var (
	ErrInvalidJSON     = &Error{Code: CodeInvalidJSON, Message: "invalid JSON"}
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument, Message: "invalid argument"}
	ErrInvalidName     = &Error{Code: CodeInvalidName, Message: "invalid name"}
	ErrUnauthorized    = &Error{Code: CodeUnauthorized, Message: "unauthorized"}
	ErrForbidden       = &Error{Code: CodeForbidden, Message: "forbidden"}
	ErrQueueNotFound   = &Error{Code: CodeQueueNotFound, Message: "queue not found"}
	ErrMessageNotFound = &Error{Code: CodeMessageNotFound, Message: "message not found"}
	ErrNotFound        = &Error{Code: CodeNotFound, Message: "not found"}
	ErrQueueExists     = &Error{Code: CodeQueueExists, Message: "queue exists"}
	ErrQueueInUse      = &Error{Code: CodeQueueInUse, Message: "queue in use"}
	ErrConflict        = &Error{Code: CodeConflict, Message: "conflict"}
	ErrStaleReceipt    = &Error{Code: CodeStaleReceipt, Message: "stale receipt"}
	ErrMessageTooLarge = &Error{Code: CodeMessageTooLarge, Message: "message too large"}
	ErrBodyTooLarge    = &Error{Code: CodeBodyTooLarge, Message: "body too large"}
	ErrInternal        = &Error{Code: CodeInternal, Message: "internal error"}
	ErrUnavailable     = &Error{Code: CodeUnavailable, Message: "unavailable"}
	ErrLimitExceeded   = &Error{Code: CodeLimitExceeded, Message: "limit exceeded"}
	ErrTooManyRequests = &Error{Code: CodeTooManyRequests, Message: "too many requests"}
)

// StatusOf returns the HTTP status of an API error in err's chain, or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// CodeOf returns the code of an API error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// RetryAfter reports whether err is an API error the server asked the
// client to try again after (a 429: the account or the server holds its
// most of something at once; a 503 with Retry-After), and how long to
// wait first.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if !errors.As(err, &e) || !(e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable && e.RetryAfter > 0) {
		return 0, false
	}
	return e.RetryAfter, true
}

// IsNotFound reports whether err is a 404 of any code (queue, message,
// function, key, hook...).
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is a 409: the queue exists, a stale
// receipt, a conflicting change.
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// IsUnauthorized reports whether the key was refused (401: unknown, wrong
// or revoked).
func IsUnauthorized(err error) bool { return StatusOf(err) == http.StatusUnauthorized }

// IsForbidden reports whether the key lacks the scope, queue pattern or
// account for the call (403).
func IsForbidden(err error) bool { return StatusOf(err) == http.StatusForbidden }

// IsInvalid reports whether the request itself was wrong: a 4xx other than
// 401, 403, 404, 409 and 429, or an argument the client refused before
// sending.
func IsInvalid(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Status {
	case 0:
		return true
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict, http.StatusTooManyRequests:
		return false
	}
	return e.Status >= 400 && e.Status < 500
}

// invalidf is an argument error found before sending.
func invalidf(format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}
