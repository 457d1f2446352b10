"""How error responses become exceptions (no server needed: responses are
built by hand)."""

from __future__ import annotations

import httpx
import pytest

import sluice
from sluice._base import error_from


@pytest.mark.parametrize(
    "status,code,cls",
    [
        (400, "invalid_json", sluice.InvalidJSON),
        (400, "invalid_argument", sluice.InvalidArgument),
        (400, "invalid_name", sluice.InvalidName),
        (415, "unsupported_media_type", sluice.UnsupportedMediaType),
        (401, "unauthorized", sluice.Unauthorized),
        (401, "invalid_signature", sluice.InvalidSignature),
        (403, "forbidden", sluice.Forbidden),
        (404, "queue_not_found", sluice.QueueNotFound),
        (404, "message_not_found", sluice.MessageNotFound),
        (404, "not_found", sluice.NotFound),
        (405, "method_not_allowed", sluice.MethodNotAllowed),
        (409, "queue_exists", sluice.QueueExists),
        (409, "queue_in_use", sluice.QueueInUse),
        (429, "too_many_requests", sluice.RateLimited),
        (409, "stale_receipt", sluice.StaleReceipt),
        (409, "conflict", sluice.Conflict),
        (413, "message_too_large", sluice.MessageTooLarge),
        (413, "body_too_large", sluice.BodyTooLarge),
        (429, "rate_limited", sluice.RateLimited),
        (500, "internal", sluice.InternalError),
        (503, "unavailable", sluice.Unavailable),
        # Codes this SDK does not know go by their status.
        (404, "function_not_found", sluice.NotFound),
        (409, "something_new", sluice.Conflict),
        (400, "something_new", sluice.InvalidRequest),
        (422, "something_new", sluice.InvalidRequest),
        (502, "bad_gateway", sluice.ServerError),
        (429, "slow_down", sluice.RateLimited),
    ],
)
def test_error_codes_map_to_classes(status: int, code: str, cls: type) -> None:
    resp = httpx.Response(status, json={"error": {"code": code, "message": f"what went wrong ({code})"}})
    e = error_from(resp)
    assert type(e) is cls
    assert isinstance(e, sluice.SluiceError)
    assert (e.status, e.code, e.message) == (status, code, f"what went wrong ({code})")
    assert str(e) == f"what went wrong ({code}) ({status} {code})"


def test_a_response_without_the_apis_error_body() -> None:
    e = error_from(httpx.Response(502, text="<html>Bad Gateway</html>", headers={"Retry-After": "3"}))
    assert type(e) is sluice.ServerError
    assert (e.status, e.code, e.retry_after) == (502, "http_502", 3.0)
    assert e.message == "unexpected response: <html>Bad Gateway</html>"
    e = error_from(httpx.Response(404, text=""))
    assert type(e) is sluice.NotFound and e.message == "unexpected response: Not Found"


def test_a_known_code_under_another_status_goes_by_the_status() -> None:
    e = error_from(httpx.Response(500, json={"error": {"code": "queue_not_found", "message": "odd"}}))
    assert type(e) is sluice.InternalError and e.code == "queue_not_found"
