"""Retries. The server cannot be made to answer 503 on demand, so this is
the one test that talks to httpx.MockTransport instead of a real server."""

from __future__ import annotations

import asyncio
from typing import Callable, List

import httpx
import pytest

from sluice import AsyncSluice, Sluice, SluiceConnectionError, Unavailable
from sluice import _client


def test_retries_503_with_backoff_honouring_retry_after_and_connection_errors_when_idempotent(monkeypatch) -> None:
    sleeps: List[float] = []
    monkeypatch.setattr(_client, "_sleep", sleeps.append)

    async def fake_async_sleep(s: float) -> None:
        sleeps.append(s)

    monkeypatch.setattr(_client, "_async_sleep", fake_async_sleep)
    unavailable = {"error": {"code": "unavailable", "message": "database unavailable; retry later"}}
    seen: List[str] = []

    def script(*steps: Callable[[httpx.Request], httpx.Response]) -> Callable[[httpx.Request], httpx.Response]:
        it = iter(steps)

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(f"{request.method} {request.url.path}")
            return next(it)(request)

        return handler

    def r503(retry_after: str = "") -> Callable[[httpx.Request], httpx.Response]:
        headers = {"Retry-After": retry_after} if retry_after else {}
        return lambda req: httpx.Response(503, json=unavailable, headers=headers)

    def ok(body: object, status: int = 200) -> Callable[[httpx.Request], httpx.Response]:
        return lambda req: httpx.Response(status, json=body)

    def broken(exc: type) -> Callable[[httpx.Request], httpx.Response]:
        def raise_(req: httpx.Request) -> httpx.Response:
            raise exc("connection broke", request=req)

        return raise_

    def client(handler: Callable[[httpx.Request], httpx.Response], max_retries: int = 3) -> Sluice:
        http = httpx.Client(transport=httpx.MockTransport(handler))
        return Sluice(endpoint="http://sluice.test", key="sk_x:secret", max_retries=max_retries, http_client=http)

    # 503, 503 (Retry-After: 2), then the answer: the send is retried.
    c = client(script(r503(), r503("2"), ok({"sequence": 42}, 201)))
    assert c.mq.send("orders", {"id": 1}) == 42
    assert seen == ["POST /000000000001/orders/messages"] * 3
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 0.2 and sleeps[1] == 2.0

    # Retries run out: the last 503 is raised, with its Retry-After.
    seen.clear(), sleeps.clear()
    c = client(script(*[r503("1")] * 3), max_retries=2)
    with pytest.raises(Unavailable) as ei:
        c.queues.list()
    assert (ei.value.status, ei.value.code, ei.value.retry_after) == (503, "unavailable", 1.0)
    assert len(seen) == 3 and sleeps == [1.0, 1.0]

    # Backoff grows (full jitter under 0.2 * 2**attempt, at most 5 s).
    seen.clear(), sleeps.clear()
    c = client(script(*[r503()] * 6), max_retries=5)
    with pytest.raises(Unavailable):
        c.queues.get("orders")
    assert [s <= min(5.0, 0.2 * 2**i) for i, s in enumerate(sleeps)] == [True] * 5

    # A Retry-After over a minute is not waited for.
    seen.clear(), sleeps.clear()
    c = client(script(r503("3600")))
    with pytest.raises(Unavailable):
        c.queues.list()
    assert len(seen) == 1 and sleeps == []

    # A broken connection after sending: a receive (not idempotent) is not
    # sent again; a GET is.
    seen.clear(), sleeps.clear()
    c = client(script(broken(httpx.ReadError)))
    with pytest.raises(SluiceConnectionError, match="connection broke"):
        c.mq.receive("orders")
    assert len(seen) == 1
    seen.clear()
    c = client(script(broken(httpx.RemoteProtocolError), ok({"messages": []})))
    assert c.mq.peek("orders") == []
    assert len(seen) == 2
    # A send with a dedup key is idempotent, so it is retried too.
    seen.clear()
    c = client(script(broken(httpx.ReadError), ok({"sequence": 7}, 201)))
    assert c.mq.send("orders", {"id": 7}, dedup_key="seven") == 7
    assert len(seen) == 2

    # The async client follows the same policy.
    seen.clear(), sleeps.clear()
    handler = script(r503(), ok({"messages": []}))

    async def run() -> list:
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        async with AsyncSluice(endpoint="http://sluice.test", key="sk_x:secret", http_client=http) as ac:
            try:
                return await ac.mq.receive("orders", max_messages=5)
            finally:
                await http.aclose()

    assert asyncio.run(run()) == []
    assert seen == ["POST /000000000001/orders/messages/receive"] * 2 and len(sleeps) == 1
