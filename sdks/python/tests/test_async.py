"""The asyncio client against a real `sluice serve`: every method."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta

import pytest

from sluice import (
    AsyncSluice,
    DeadLetter,
    Forbidden,
    InvalidArgument,
    Message,
    MessageNotFound,
    Queue,
    QueueExists,
    QueueNotFound,
    StaleReceipt,
    Unauthorized,
)

from conftest import Server, new_name

pytestmark = pytest.mark.asyncio


async def test_from_env_and_context_manager(server: Server, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("SLUICE_CONFIG", str(tmp_path / "missing.json"))
    monkeypatch.setenv("SLUICE_ENDPOINT", server.url)
    monkeypatch.setenv("SLUICE_KEY", server.key)
    monkeypatch.delenv("SLUICE_ACCOUNT", raising=False)
    async with AsyncSluice.from_env() as c:
        assert c.account == "000000000001"
        assert isinstance(await c.queues.list(), list)
    assert c._http.is_closed


async def test_queues(server: Server) -> None:
    async with AsyncSluice(endpoint=server.url, key=server.key) as c:
        name = new_name("aq")
        q = await c.queues.create(name, max_receive_count=2, retention_seconds=timedelta(hours=1))
        assert isinstance(q, Queue) and (q.max_receive_count, q.retention_seconds) == (2, 3600)
        with pytest.raises(QueueExists):
            await c.queues.create(name)
        got = await c.queues.get(name)
        assert got.stats is not None and got.stats.ready == 0
        assert name in [x.name for x in await c.queues.list(live=True)]
        updated = await c.queues.update(name, visibility_timeout_seconds=90)
        assert updated.visibility_timeout_seconds == 90 and updated.max_receive_count == 2
        minutes = await c.queues.stats(name, minutes=2)
        assert len(minutes) == 2 and isinstance(minutes[-1].minute, datetime)
        await c.queues.delete(name)
        with pytest.raises(QueueNotFound):
            await c.queues.get(name)


async def test_send_receive_delete_visibility_peek_purge(server: Server) -> None:
    async with AsyncSluice(endpoint=server.url, key=server.key) as c:
        name = new_name("aq")
        await c.queues.create(name)
        try:
            seq = await c.mq.send(name, {"id": 1})
            seqs = await c.mq.send(name, [{"id": 2}, "three"], delay=timedelta(0))
            assert isinstance(seq, int) and len(seqs) == 2 and seq < seqs[0] < seqs[1]
            nine = await c.mq.send(name, {"id": 9}, dedup_key="nine")
            assert await c.mq.send(name, {"id": 9}, dedup_key="nine") == nine

            peeked = await c.mq.peek(name, max_messages=2)
            assert [m.body for m in peeked] == [{"id": 1}, {"id": 2}]
            rest = await c.mq.peek(name, after=peeked[-1].sequence)
            assert [m.body for m in rest] == ["three", {"id": 9}]

            got = await c.mq.receive(name, max_messages=10, visibility_timeout=60)
            assert [m.sequence for m in got] == [seq, *seqs, nine]
            assert all(isinstance(m, Message) and m.receipt for m in got)
            first = got[0]
            await c.mq.change_visibility(name, first.sequence, 0, receipt=first.receipt)
            [again] = await c.mq.receive(name)
            assert again.sequence == first.sequence and again.receive_count == 2
            with pytest.raises(StaleReceipt):
                await c.mq.delete(name, first.sequence, first.receipt)
            await c.mq.delete(name, again.sequence, again.receipt)
            with pytest.raises(MessageNotFound):
                await c.mq.delete(name, again.sequence)

            await c.mq.change_visibility(name, got[1].sequence, timedelta(0), receipt=got[1].receipt)
            deleted = await c.mq.receive(name, max_messages=10, delete=True)
            assert [m.body for m in deleted] == [{"id": 2}] and deleted[0].receipt is None
            # Purge takes the leased messages too.
            assert await c.mq.purge(name) == 2
            assert await c.mq.peek(name) == []
        finally:
            await c.queues.delete(name)


async def test_long_poll_wakes_when_a_message_comes(server: Server) -> None:
    async with AsyncSluice(endpoint=server.url, key=server.key) as c:
        name = new_name("aq")
        await c.queues.create(name)
        try:
            async def send_later() -> None:
                await asyncio.sleep(0.3)
                await c.mq.send(name, {"late": True})

            t0 = time.monotonic()
            sender = asyncio.create_task(send_later())
            got = await c.mq.receive(name, wait_seconds=10)
            await sender
            assert [m.body for m in got] == [{"late": True}]
            assert time.monotonic() - t0 < 5
        finally:
            await c.queues.delete(name)


async def test_dead_letters(server: Server) -> None:
    async with AsyncSluice(endpoint=server.url, key=server.key) as c:
        name = new_name("adlq")
        await c.queues.create(name, max_receive_count=1)
        try:
            seqs = await c.mq.send(name, [{"n": i} for i in range(4)])
            assert len(await c.mq.receive(name, max_messages=10, visibility_timeout=0)) == 4
            deadline = time.monotonic() + 10
            while len(dead := await c.mq.receive_dlq(name)) < 4:
                assert time.monotonic() < deadline, "messages never reached the DLQ"
                await asyncio.sleep(0.1)
            assert all(isinstance(d, DeadLetter) for d in dead)
            assert [d.sequence for d in dead] == seqs
            await c.mq.delete_dlq(name, seqs[0])
            assert await c.mq.redrive(name, sequences=[seqs[1]]) == 1
            assert await c.mq.redrive(name, max_messages=1) == 1
            assert await c.mq.purge_dlq(name) == 1
            assert await c.mq.redrive(name) == 0
            assert sorted(m.sequence for m in await c.mq.peek(name)) == [seqs[1], seqs[2]]
        finally:
            await c.queues.delete(name)


async def test_errors(server: Server) -> None:
    async with AsyncSluice(endpoint=server.url, key=server.key) as c:
        missing = new_name("missing")
        with pytest.raises(QueueNotFound) as ei:
            await c.mq.send(missing, {"a": 1})
        assert ei.value.status == 404 and missing in ei.value.message
        name = new_name("aq")
        await c.queues.create(name)
        try:
            with pytest.raises(InvalidArgument) as ei2:
                await c.mq.send(name, {"a": 1}, delay=50000)
            assert ei2.value.message == "invalid delay_seconds 50000: use an integer from 0 to 43200"
        finally:
            await c.queues.delete(name)
    async with AsyncSluice(endpoint=server.url, key=server.key.split(":")[0] + ":bad") as c:
        with pytest.raises(Unauthorized):
            await c.queues.list()
    async with AsyncSluice(endpoint=server.url, key=server.key, account="000000000003") as c:
        with pytest.raises(Forbidden):
            await c.queues.list()
