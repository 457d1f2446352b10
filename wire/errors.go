package wire

// Error codes of the API's error bodies (see docs/http-api.md).
const (
	CodeInvalidJSON          = "invalid_json"
	CodeInvalidArgument      = "invalid_argument"
	CodeInvalidName          = "invalid_name"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeQueueNotFound        = "queue_not_found"
	CodeMessageNotFound      = "message_not_found"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeQueueExists          = "queue_exists"
	CodeQueueInUse           = "queue_in_use"
	CodeTopicNotFound        = "topic_not_found"
	CodeTopicExists          = "topic_exists"
	CodeConflict             = "conflict"
	CodeStaleReceipt         = "stale_receipt"
	CodeMessageTooLarge      = "message_too_large"
	CodeBodyTooLarge         = "body_too_large"
	CodeInvalidSignature     = "invalid_signature"
	CodeInternal             = "internal"
	CodeUnavailable          = "unavailable"
	// CodeLimitExceeded: an account limit (403); the message names it.
	CodeLimitExceeded = "limit_exceeded"
	// CodeTooManyRequests: the account or the server holds its most of
	// something at once (429, with Retry-After); the message names it.
	CodeTooManyRequests = "too_many_requests"
)

// ErrorResponse is the body of every error response:
// {"error": {"code": "queue_not_found", "message": "..."}}.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong: a code to branch on and a message for
// people.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
