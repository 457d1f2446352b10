"""Exceptions: one class per error code of the API (docs/http-api.md)."""

from __future__ import annotations

from typing import Dict, Optional, Type


class SluiceError(Exception):
    """Base of every error the SDK raises.

    ``status`` is the HTTP status of the response, or 0 when the SDK refused
    the call before sending anything (a bad argument, no endpoint
    configured) or no response came (a connection error). ``code`` is the
    API's machine-readable code, e.g. ``"queue_not_found"``; a response
    without the API's error body (a proxy's HTML page, say) gets
    ``"http_<status>"``. ``message`` says what was wrong, for people.
    """

    #: The code a subclass stands for; ``code`` may differ for a status
    #: fallback (an unknown code of a known status).
    default_code = ""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: int = 0,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.status = status
        #: Seconds the server asked to wait before retrying (Retry-After), if any.
        self.retry_after = retry_after

    def __str__(self) -> str:
        if self.status == 0:
            return self.message
        return f"{self.message} ({self.status} {self.code})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r}, status={self.status})"


class ConfigurationError(SluiceError, ValueError):
    """The client cannot be built: no endpoint, no key, a malformed account."""

    default_code = "configuration"


class SluiceConnectionError(SluiceError):
    """No response came: the server could not be reached or the connection
    broke. Raised after the retries the request allowed."""

    default_code = "connection_error"


class SluiceTimeoutError(SluiceConnectionError):
    """The request timed out (see the client's ``timeout``)."""

    default_code = "timeout"


# 4xx other than 401, 403, 404, 409 and 429: the request itself was wrong.
class InvalidRequest(SluiceError):
    """The request was wrong (400, 405, 413, 415), or an argument the SDK
    refused before sending (status 0). Fix the call; retrying won't help."""

    default_code = "invalid_request"


class InvalidJSON(InvalidRequest):
    default_code = "invalid_json"


class InvalidArgument(InvalidRequest):
    """A parameter out of range or malformed; the message names the range."""

    default_code = "invalid_argument"


class InvalidName(InvalidRequest):
    default_code = "invalid_name"


class UnsupportedMediaType(InvalidRequest):
    default_code = "unsupported_media_type"


class MethodNotAllowed(InvalidRequest):
    default_code = "method_not_allowed"


class PayloadTooLarge(InvalidRequest):
    """413: a message or request body over its limit."""

    default_code = "payload_too_large"


class MessageTooLarge(PayloadTooLarge):
    default_code = "message_too_large"


class BodyTooLarge(PayloadTooLarge):
    default_code = "body_too_large"


class Unauthorized(SluiceError):
    """401: the key is unknown, wrong or revoked."""

    default_code = "unauthorized"


class InvalidSignature(Unauthorized):
    default_code = "invalid_signature"


class Forbidden(SluiceError):
    """403: the key lacks the scope, the queue pattern or the account."""

    default_code = "forbidden"


class NotFound(SluiceError):
    """404 of any kind (queue, message, dead letter, route)."""

    default_code = "not_found"


class QueueNotFound(NotFound):
    default_code = "queue_not_found"


class TopicNotFound(NotFound):
    default_code = "topic_not_found"


class MessageNotFound(NotFound):
    """The message (or dead letter) is not there: deleted, or never was."""

    default_code = "message_not_found"


class Conflict(SluiceError):
    """409 of any kind."""

    default_code = "conflict"


class QueueExists(Conflict):
    default_code = "queue_exists"


class TopicExists(Conflict):
    default_code = "topic_exists"


class QueueInUse(Conflict):
    """The queue is another queue's dead_letter_queue: change or clear that
    setting before deleting it (the message names the queues)."""

    default_code = "queue_in_use"


class StaleReceipt(Conflict):
    """The message was received again since this receipt was issued: the
    delete or visibility change was refused and the newer lease stays."""

    default_code = "stale_receipt"


class RateLimited(SluiceError):
    """429 Too Many Requests (code ``too_many_requests``): too many failed
    authentications from this address, or the account or the server holds
    its most of something at once (received messages not yet answered,
    peeks, stats being counted, invokes); or a proxy's limit. Nothing was
    done. Retried like 503, after ``Retry-After``."""

    default_code = "rate_limited"


class ServerError(SluiceError):
    """5xx."""

    default_code = "server_error"


class InternalError(ServerError):
    """500: a bug or an unexpected failure; the server log has details."""

    default_code = "internal"


class Unavailable(ServerError):
    """503: the server cannot reach its database. Retried with backoff."""

    default_code = "unavailable"


_BY_CODE: Dict[str, Type[SluiceError]] = {
    cls.default_code: cls
    for cls in (
        InvalidJSON,
        InvalidArgument,
        InvalidName,
        UnsupportedMediaType,
        MethodNotAllowed,
        MessageTooLarge,
        BodyTooLarge,
        Unauthorized,
        InvalidSignature,
        Forbidden,
        NotFound,
        QueueNotFound,
        TopicNotFound,
        MessageNotFound,
        Conflict,
        QueueExists,
        TopicExists,
        QueueInUse,
        StaleReceipt,
        RateLimited,
        InternalError,
        Unavailable,
    )
}

_BY_STATUS: Dict[int, Type[SluiceError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    429: RateLimited,
    500: InternalError,
    503: Unavailable,
}


def error_class(code: str, status: int) -> Type[SluiceError]:
    """The exception class for an error response: by code when the code is
    known and its class fits the status, else by status."""
    cls = _BY_CODE.get(code)
    if cls is not None and (status == 0 or _status_fits(cls, status)):
        return cls
    if status == 429:
        return RateLimited
    cls = _BY_STATUS.get(status)
    if cls is not None:
        return cls
    if 500 <= status <= 599:
        return ServerError
    if 400 <= status <= 499:
        return InvalidRequest
    return SluiceError


def _status_fits(cls: Type[SluiceError], status: int) -> bool:
    # A known code under an unexpected status goes by the status, so that
    # `except NotFound` and friends stay truthful.
    by_status = _BY_STATUS.get(status)
    if by_status is None:
        by_status = ServerError if status >= 500 else InvalidRequest if status >= 400 else SluiceError
    return _family(cls) is _family(by_status)


def _family(cls: Type[SluiceError]) -> Type[SluiceError]:
    for base in (InvalidRequest, Unauthorized, Forbidden, NotFound, Conflict, RateLimited, ServerError):
        if issubclass(cls, base):
            return base
    return SluiceError


def invalid(message: str) -> InvalidArgument:
    """An argument refused before sending."""
    return InvalidArgument(message)
