"""Per-message options: ttl=, headers= and send_entries, sync and async."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sluice import AsyncSluice, InvalidArgument, Sluice

from conftest import Server, new_name


def test_send_with_headers_and_ttl(client: Sluice, queue: str) -> None:
    a = client.mq.send(queue, {"id": 1}, headers={"trace": "abc"}, ttl=60)
    b = client.mq.send(queue, [1, "two"], headers={"batch": "yes"}, ttl=timedelta(minutes=5), delay=0)
    c = client.mq.send(queue, {"id": 3}, ttl=1209600)
    d = client.mq.send(queue, {"id": 4}, headers={"k": "v"}, dedup_key="d4")
    assert client.mq.send(queue, {"id": 4}, headers={"k": "v"}, dedup_key="d4") == d
    assert isinstance(a, int) and isinstance(b, list) and len(b) == 2 and b[0] > a and c > b[1]
    msgs = client.mq.peek(queue, max_messages=100)
    assert [(m.body, m.headers) for m in msgs] == [
        ({"id": 1}, {"trace": "abc"}), (1, {"batch": "yes"}), ("two", {"batch": "yes"}), ({"id": 3}, None), ({"id": 4}, {"k": "v"}),
    ]
    got = client.mq.receive(queue, max_messages=10)
    assert got[0].headers == {"trace": "abc"}


def test_send_entries_each_with_its_own_options(client: Sluice, queue: str) -> None:
    seqs = client.mq.send_entries(queue, [
        {"body": {"n": 1}, "headers": {"k": "v"}, "ttl": 60},
        {"body": "later", "delay": timedelta(hours=1)},
        {"body": [3], "dedup_key": "e"},
        {"body": 4, "dedup_key": "e"},
    ])
    assert len(seqs) == 4 and seqs[3] == seqs[2]
    stats = client.queues.get(queue).stats
    assert stats is not None and (stats.ready, stats.delayed) == (2, 1)
    got = client.mq.receive(queue, max_messages=10, delete=True)
    assert [(m.body, m.headers, m.receipt) for m in got] == [({"n": 1}, {"k": "v"}, None), ([3], None, None)]
    assert client.mq.peek(queue) == []


def test_bad_options_name_the_allowed_form(client: Sluice, queue: str) -> None:
    with pytest.raises(InvalidArgument) as ei:
        client.mq.send(queue, {"a": 1}, ttl=0)
    assert ei.value.status == 400 and ei.value.message == "invalid expires_in_seconds 0: use an integer from 1 to 1209600"
    with pytest.raises(InvalidArgument, match="from 1 to 1209600"):
        client.mq.send_entries(queue, [{"body": 1, "ttl": 1209601}])
    with pytest.raises(InvalidArgument, match=r"entries\[0\].delay_seconds 43201: use an integer from 0 to 43200"):
        client.mq.send_entries(queue, [{"body": 1, "delay": 43201}])
    with pytest.raises(InvalidArgument, match="give 1 to 1000 entries") as ei:
        client.mq.send_entries(queue, [{"body": i} for i in range(1001)])
    assert ei.value.status == 400
    with pytest.raises(InvalidArgument, match="give 1 to 1000 entries"):
        client.mq.send_entries(queue, [])
    # Refused before sending.
    for call, match in [
        (lambda: client.mq.send(queue, {"a": 1}, headers={"k": 1}), "dict of string keys and string values"),
        (lambda: client.mq.send(queue, {"a": 1}, headers=["k=v"]), "dict of string keys"),
        (lambda: client.mq.send(queue, [1, 2], headers={"k": "v"}, dedup_key="x"), "only a single message"),
        (lambda: client.mq.send_entries(queue, [{"body": 1}, {"headers": {"k": "v"}}]), r"entries\[1\] has no body"),
        (lambda: client.mq.send_entries(queue, [{"body": 1, "priority": "g"}]), "unknown key 'priority'"),
        (lambda: client.mq.send_entries(queue, [{"body": 1, "group": ""}]), "group '': must be a string of 1 to 128"),
        (lambda: client.mq.send_entries(queue, [{"body": 1, "ttl": 1.5}]), "whole seconds"),
        (lambda: client.mq.send_entries(queue, {"body": 1}), "a list of dicts"),
        (lambda: client.mq.send_entries(queue, [{"body": 1, "dedup_key": ""}]), "non-empty string"),
    ]:
        with pytest.raises(InvalidArgument, match=match) as ei:
            call()
        assert ei.value.status == 0
    assert client.mq.peek(queue) == []


@pytest.mark.asyncio
async def test_async_send_entries_headers_and_ttl(server: Server) -> None:
    async with AsyncSluice(endpoint=server.url, key=server.key) as c:
        q = new_name()
        await c.queues.create(q)
        try:
            s = await c.mq.send(q, {"a": 1}, headers={"h": "1"}, ttl=30)
            seqs = await c.mq.send_entries(q, [{"body": 2, "headers": {"h": "2"}}])
            assert seqs[0] > s
            got = await c.mq.receive(q, max_messages=10, delete=True)
            assert [m.headers for m in got] == [{"h": "1"}, {"h": "2"}]
        finally:
            await c.queues.delete(q)
