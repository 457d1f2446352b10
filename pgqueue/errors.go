package pgqueue

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Error kinds. Every error the Client returns for a rejected request is an
// *Error whose Kind is one of these, so callers branch with errors.Is:
//
//	if errors.Is(err, pgqueue.ErrQueueNotFound) { ... }
//
// The *Error message names what was wrong and what is allowed.
var (
	ErrQueueNotFound   = errors.New("queue not found")
	ErrQueueExists     = errors.New("queue already exists")
	ErrInvalidName     = errors.New("invalid name")
	ErrMessageTooLarge = errors.New("message too large")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrStaleReceipt    = errors.New("stale receipt")
	ErrMessageNotFound = errors.New("message not found")
	ErrTopicNotFound   = errors.New("topic not found")
	ErrTopicExists     = errors.New("topic already exists")
	ErrAccountNotFound = errors.New("account not found")
	ErrAccountExists   = errors.New("account already exists")
	// ErrQueueInUse: the queue is another queue's dead_letter_queue, so
	// it cannot be deleted until that setting changes.
	ErrQueueInUse = errors.New("queue in use")
	// ErrStoredBytesLimit: the account's messages take up its limit of
	// stored bytes (Options.StoredBytesLimit), so it may not send or
	// publish more until it receives, deletes or purges some.
	ErrStoredBytesLimit = errors.New("stored bytes limit")
)

// sqlStates maps the SQLSTATE codes raised by the SQL API (see
// migrations/001_queue_core.up.sql) to error kinds. It is Sluice's one
// SQLSTATE-to-error mapping: other packages reach it through AsError.
var sqlStates = map[string]error{
	"SQ001": ErrQueueNotFound,
	"SQ002": ErrQueueExists,
	"SQ003": ErrInvalidName,
	"SQ004": ErrMessageTooLarge,
	"SQ005": ErrInvalidArgument,
	"SQ006": ErrStaleReceipt,
	"SQ007": ErrMessageNotFound,
	"SQ008": ErrTopicNotFound,
	"SQ009": ErrTopicExists,
	"SQ010": ErrAccountNotFound,
	"SQ011": ErrAccountExists,
	"SQ012": ErrQueueInUse, // raised since migration 022
}

// invalidJSON are the SQLSTATEs of Postgres rejecting a body or headers
// that are not valid JSON; the Client reports them as ErrInvalidArgument
// naming the operation.
var invalidJSON = map[string]bool{"22P02": true, "22032": true}

// Error is a request the queue core refused. Kind is one of the Err*
// values; Message says what was wrong and what is allowed.
type Error struct {
	Kind    error
	Message string
	cause   error
}

// Error returns "pgqueue: " followed by the message.
func (e *Error) Error() string { return "pgqueue: " + e.Message }

// Is reports whether target is the error's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying Postgres error, if any.
func (e *Error) Unwrap() error { return e.cause }

func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// AsError finds the *Error in err's chain or, failing that, a Postgres
// error raised by the SQL API with one of its own SQLSTATEs (SQ001 to
// SQ012), which it converts. Statements that call the SQL API outside the
// Client (an application's own transaction, another package's query) thus
// get the same kinds as the Client's errors. Any other error gives false.
func AsError(err error) (*Error, bool) {
	var qe *Error
	if errors.As(err, &qe) {
		return qe, true
	}
	return fromSQLState(err)
}

// fromSQLState converts a Postgres error in err's chain that carries one
// of the SQL API's SQLSTATEs.
func fromSQLState(err error) (*Error, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if kind, ok := sqlStates[pgErr.Code]; ok {
			return &Error{Kind: kind, Message: pgErr.Message, cause: err}, true
		}
	}
	return nil, false
}

// convertError turns a Postgres error raised by the SQL API into an *Error
// and wraps any other error with the operation that failed.
func convertError(op string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && invalidJSON[pgErr.Code] {
		return &Error{Kind: ErrInvalidArgument, Message: op + ": body or headers are not valid JSON: " + pgErr.Message, cause: err}
	}
	if qe, ok := fromSQLState(err); ok {
		return qe
	}
	return fmt.Errorf("pgqueue: %s: %w", op, err)
}
