"""What the sync and async clients share: configuration, how a call is
built (URL, query, JSON body, how to read the answer), errors and the retry
policy. The clients only differ in how they send and sleep."""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Dict, Generic, Optional, Sequence, Tuple, TypeVar, Union
from urllib.parse import quote, urlsplit

import httpx

from ._config import DEFAULT_ACCOUNT, ENV_ENDPOINT, ENV_KEY, load_config
from ._errors import (
    ConfigurationError,
    InvalidArgument,
    InvalidJSON,
    InvalidName,
    SluiceConnectionError,
    SluiceError,
    SluiceTimeoutError,
    error_class,
)
from ._version import __version__

T = TypeVar("T")

#: Bounds each request; above the longest long-poll wait (20 s). A receive
#: that waits gets at least its wait plus 10 s whatever the timeout.
DEFAULT_TIMEOUT = 60.0
#: How many times a request is retried after a 503/429 or a connection
#: error it may be retried for (see README "Retries").
DEFAULT_MAX_RETRIES = 3
#: First backoff; it doubles each retry up to MAX_BACKOFF, with full jitter.
BACKOFF_BASE = 0.2
MAX_BACKOFF = 5.0
#: A Retry-After longer than this is not waited for: the error is raised.
MAX_RETRY_AFTER = 60.0

RETRY_STATUSES = frozenset({429, 503})
MAX_ERROR_BODY = 64 << 10

_ACCOUNT_RE = re.compile(r"^[0-9]{12}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,80}$")

Seconds = Union[int, float, timedelta]


class _NoBody:
    pass


NO_BODY: Any = _NoBody()


@dataclass
class Call(Generic[T]):
    """One API call, ready to send."""

    method: str
    #: Path segments, each percent-escaped on its own.
    path: Tuple[str, ...]
    parse: Callable[[Any], T]
    params: Dict[str, str] = field(default_factory=dict)
    body: Any = NO_BODY
    #: Safe to send again when the connection broke after sending.
    idempotent: bool = False
    #: The least read timeout this call needs (a long-poll receive).
    min_timeout: Optional[float] = None


def check_name(kind: str, name: Any) -> str:
    """Refuses a queue name the API would refuse, before it goes in a URL."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise InvalidName(f"{kind} name {name!r}: use 1 to 80 letters, digits, '_' or '-'")
    return name


def check_sequence(sequence: Any) -> str:
    if isinstance(sequence, bool) or not isinstance(sequence, int):
        raise InvalidArgument(f"sequence {sequence!r}: must be an integer")
    if sequence < 1:
        raise InvalidArgument(f"sequence {sequence}: must be positive")
    return str(sequence)


def integer(name: str, value: Any) -> int:
    """An integer argument; its range is the server's to check (its message
    names the range)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} {value!r}: must be an integer")
    return value


def seconds(name: str, value: Seconds) -> int:
    """Whole seconds from an int, an integral float or a timedelta."""
    if isinstance(value, timedelta):
        total = value.total_seconds()
        if total != int(total):
            raise InvalidArgument(f"{name} {total:g} s: give whole seconds")
        return int(total)
    if isinstance(value, float) and not isinstance(value, bool):
        if not value.is_integer():
            raise InvalidArgument(f"{name} {value:g}: give whole seconds")
        return int(value)
    return integer(name, value)


def encode_json(value: Any, what: str) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except ValueError as e:  # NaN, infinity, circular references
        raise InvalidJSON(f"{what}: {e}") from e
    except TypeError as e:
        raise InvalidArgument(f"{what}: {e}") from e


def _parse_retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from(resp: httpx.Response) -> SluiceError:
    """The exception for a non-2xx response: the API's error body, or else
    a summary of whatever came."""
    status = resp.status_code
    retry_after = _parse_retry_after(resp.headers.get("retry-after"))
    raw = resp.content[:MAX_ERROR_BODY]
    code = message = ""
    try:
        data = json.loads(raw)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str) and err["code"]:
            code = err["code"]
            m = err.get("message")
            message = m if isinstance(m, str) and m else code
    except ValueError:
        pass
    if not code:
        code = f"http_{status}"
        text = raw.decode("utf-8", "replace").strip()
        if len(text) > 200:
            text = text[:200] + "..."
        message = "unexpected response: " + (text or resp.reason_phrase or str(status))
    return error_class(code, status)(message, code=code, status=status, retry_after=retry_after)


# Connection errors raised before anything was sent: any call may retry.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class BaseClient:
    """Configuration and the retry policy; Sluice and AsyncSluice add I/O."""

    def __init__(
        self,
        endpoint: str,
        key: str,
        account: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        if not endpoint:
            raise ConfigurationError(
                f"no endpoint: pass endpoint=, set {ENV_ENDPOINT}, or run `sluice login --endpoint URL --key ID:SECRET`"
            )
        u = urlsplit(endpoint)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ConfigurationError(f"endpoint {endpoint!r}: want http://host[:port] or https://host[:port]")
        if u.query or u.fragment:
            raise ConfigurationError(f"endpoint {endpoint!r}: must not have a query or fragment")
        if not key:
            raise ConfigurationError(
                f"no access key: pass key='ID:SECRET', set {ENV_KEY}=ID:SECRET, or run `sluice login --endpoint URL --key ID:SECRET`"
            )
        key_id, sep, secret = key.partition(":")
        if not sep or not key_id or not secret:
            raise ConfigurationError("access key: want ID:SECRET")
        if any(c in key_id for c in ": \t\r\n") or any(c in secret for c in " \t\r\n"):
            raise ConfigurationError("access key: the id must not contain ':' or spaces and the secret no spaces")
        account = account or DEFAULT_ACCOUNT
        if not _ACCOUNT_RE.match(account):
            raise ConfigurationError(f"account {account!r}: want 12 digits, e.g. {DEFAULT_ACCOUNT}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigurationError(f"timeout {timeout!r}: want seconds > 0")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"max_retries {max_retries!r}: want an integer >= 0")
        self._base = f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"
        self._key_id = key_id
        self._account = account
        self._timeout = float(timeout)
        self._max_retries = max_retries
        self._headers = {
            "Authorization": f"Bearer {key_id}:{secret}",
            "Accept": "application/json",
            "User-Agent": f"sluice-python/{__version__}",
        }

    @staticmethod
    def _config_kwargs() -> Dict[str, str]:
        cfg = load_config()
        return {"endpoint": cfg.endpoint, "key": cfg.key, "account": cfg.account}

    @property
    def account(self) -> str:
        """The account the client acts on."""
        return self._account

    @property
    def endpoint(self) -> str:
        """The API's base URL."""
        return self._base

    def __repr__(self) -> str:
        return f"{type(self).__name__}(endpoint={self._base!r}, key_id={self._key_id!r}, account={self._account!r})"

    # -- building -------------------------------------------------------

    def queue_path(self, queue: str, *segments: str) -> Tuple[str, ...]:
        return (self._account, check_name("queue", queue)) + segments

    def manage_path(self, *segments: str) -> Tuple[str, ...]:
        return ("v1", "accounts", self._account) + segments

    def url(self, call: "Call[Any]") -> str:
        return self._base + "".join("/" + quote(s, safe="") for s in call.path)

    def request_args(self, call: "Call[Any]") -> Dict[str, Any]:
        headers = dict(self._headers)
        content = None
        if call.body is not NO_BODY:
            content = call.body if isinstance(call.body, bytes) else encode_json(call.body, "request body")
            headers["Content-Type"] = "application/json"
        timeout = self._timeout
        if call.min_timeout is not None and call.min_timeout > timeout:
            timeout = call.min_timeout
        return {
            "method": call.method,
            "url": self.url(call),
            "params": call.params or None,
            "content": content,
            "headers": headers,
            "timeout": timeout,
        }

    # -- reading --------------------------------------------------------

    def result(self, call: "Call[T]", resp: httpx.Response) -> T:
        if not 200 <= resp.status_code <= 299:
            raise error_from(resp)
        data: Any = None
        if resp.status_code != 204 and resp.content.strip():
            try:
                data = json.loads(resp.content)
            except ValueError as e:
                raise SluiceError(
                    f"{call.method} {self.url(call)}: decode the response: {e}",
                    code="invalid_response",
                    status=resp.status_code,
                ) from e
        try:
            return call.parse(data)
        except (KeyError, TypeError, ValueError) as e:
            raise SluiceError(
                f"{call.method} {self.url(call)}: unexpected response: {e}",
                code="invalid_response",
                status=resp.status_code,
            ) from e

    def connection_error(self, call: "Call[Any]", exc: httpx.TransportError) -> SluiceError:
        detail = str(exc) or type(exc).__name__
        hint = ""
        if isinstance(exc, httpx.ConnectError) and "refused" in detail.lower():
            hint = " (is the server running there?)"
        cls = SluiceTimeoutError if isinstance(exc, httpx.TimeoutException) else SluiceConnectionError
        return cls(f"{call.method} {self.url(call)}: {detail}{hint}")

    # -- retrying -------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        return random.uniform(0, min(MAX_BACKOFF, BACKOFF_BASE * (2**attempt)))

    def retry_delay_after_response(self, resp: httpx.Response, attempt: int) -> Optional[float]:
        """Seconds to wait before retrying a response, or None to not retry."""
        if resp.status_code not in RETRY_STATUSES or attempt >= self._max_retries:
            return None
        ra = _parse_retry_after(resp.headers.get("retry-after"))
        if ra is not None:
            return ra if ra <= MAX_RETRY_AFTER else None
        return self._backoff(attempt)

    def retry_delay_after_error(self, call: "Call[Any]", exc: httpx.TransportError, attempt: int) -> Optional[float]:
        """Seconds to wait before retrying after a connection error, or None."""
        if attempt >= self._max_retries:
            return None
        if isinstance(exc, _NOT_SENT) or call.idempotent:
            return self._backoff(attempt)
        return None


def expect(key: str, conv: Callable[[Any], T]) -> Callable[[Any], T]:
    """A parser of ``{key: value}``."""

    def parse(data: Any) -> T:
        if not isinstance(data, dict) or key not in data:
            raise ValueError(f"no {key!r} in the response")
        return conv(data[key])

    return parse


def nothing(_: Any) -> None:
    return None


def int_list(v: Any) -> "list[int]":
    if not isinstance(v, list):
        raise ValueError("want a list of integers")
    return [int(x) for x in v]


def ids(values: Sequence[Any], name: str) -> "list[int]":
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InvalidArgument(f"{name}: want a list of integers")
    return [integer(f"{name} item", v) for v in values]
