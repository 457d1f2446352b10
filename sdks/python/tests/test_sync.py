"""The sync client against a real `sluice serve`."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest

import sluice
from sluice import (
    DeadLetter,
    Forbidden,
    InvalidArgument,
    InvalidName,
    Message,
    MessageNotFound,
    NotFound,
    Queue,
    QueueExists,
    QueueNotFound,
    QueueStats,
    Sluice,
    SluiceConnectionError,
    SluiceError,
    StaleReceipt,
    Unauthorized,
)

from conftest import Server, new_name, wait_for


# -- configuration ------------------------------------------------------


def test_from_env_reads_the_environment(server: Server, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("SLUICE_CONFIG", str(tmp_path / "missing.json"))
    monkeypatch.setenv("SLUICE_ENDPOINT", server.url + "/")
    monkeypatch.setenv("SLUICE_KEY", server.key)
    monkeypatch.setenv("SLUICE_ACCOUNT", "000000000001")
    with Sluice.from_env() as c:
        assert c.endpoint == server.url
        assert c.account == "000000000001"
        assert isinstance(c.queues.list(), list)


def test_from_env_falls_back_on_the_login_config_file(server: Server, monkeypatch, tmp_path) -> None:
    for name in ("SLUICE_ENDPOINT", "SLUICE_KEY", "SLUICE_ACCOUNT", "SLUICE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "sluice").mkdir()
    (tmp_path / "sluice" / "config.json").write_text(json.dumps({"endpoint": server.url, "key": server.key}))
    with Sluice.from_env() as c:
        assert c.endpoint == server.url
        c.queues.list()
    # The environment overrides the file field by field.
    monkeypatch.setenv("SLUICE_ACCOUNT", "000000000042")
    with Sluice.from_env() as c:
        assert c.account == "000000000042"


def test_from_env_without_endpoint_says_what_to_set(monkeypatch, tmp_path) -> None:
    for name in ("SLUICE_ENDPOINT", "SLUICE_KEY", "SLUICE_ACCOUNT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLUICE_CONFIG", str(tmp_path / "none.json"))
    with pytest.raises(sluice.ConfigurationError, match="SLUICE_ENDPOINT"):
        Sluice.from_env()
    with pytest.raises(ValueError, match="ID:SECRET"):
        Sluice(endpoint="http://127.0.0.1:1", key="no-colon")
    with pytest.raises(ValueError, match="12 digits"):
        Sluice(endpoint="http://127.0.0.1:1", key="a:b", account="42")


# -- queues ---------------------------------------------------------------


def test_queues_create_get_list_update_delete_stats(client: Sluice) -> None:
    name = new_name()
    q = client.queues.create(name, visibility_timeout_seconds=timedelta(seconds=45), max_receive_count=3)
    assert isinstance(q, Queue)
    assert (q.name, q.visibility_timeout_seconds, q.max_receive_count) == (name, 45, 3)
    assert q.delay_seconds == 0 and q.retention_seconds == 345600
    assert q.created_at.tzinfo is not None

    with pytest.raises(QueueExists) as ei:
        client.queues.create(name)
    assert ei.value.status == 409 and name in ei.value.message

    got = client.queues.get(name)
    assert got.name == name and isinstance(got.stats, QueueStats)
    assert got.stats.ready == 0

    names = [x.name for x in client.queues.list()]
    assert name in names
    live = {x.name: x for x in client.queues.list(live=True)}
    assert live[name].stats is not None

    client.mq.send(name, {"n": 1})
    updated = client.queues.update(name, delay_seconds=5, dedup_window_seconds=60)
    assert (updated.delay_seconds, updated.dedup_window_seconds, updated.max_receive_count) == (5, 60, 3)
    assert client.queues.get(name).stats.ready == 1

    minutes = client.queues.stats(name, minutes=3)
    assert len(minutes) == 3
    assert all(isinstance(m.minute, datetime) for m in minutes)
    assert minutes[0].minute < minutes[-1].minute
    assert len(client.queues.stats(name)) == 60

    client.queues.delete(name)
    with pytest.raises(QueueNotFound):
        client.queues.get(name)
    with pytest.raises(QueueNotFound):
        client.queues.delete(name)


def test_queue_settings_out_of_range_get_the_servers_message(client: Sluice, queue: str) -> None:
    with pytest.raises(InvalidArgument) as ei:
        client.queues.update(queue, max_receive_count=0)
    assert ei.value.status == 400 and "max_receive_count" in ei.value.message
    with pytest.raises(InvalidArgument, match="minutes"):
        client.queues.stats(queue, minutes=1441)


# -- send -----------------------------------------------------------------


def test_send_single_batch_and_non_object_bodies(client: Sluice, queue: str) -> None:
    seq = client.mq.send(queue, {"id": 1, "sku": "ABC", "text": "naïve ✓"})
    assert isinstance(seq, int) and seq > 0
    seqs = client.mq.send(queue, [{"id": 2}, "text", 3, [4, 5], None])
    assert isinstance(seqs, list) and len(seqs) == 5 and seqs == sorted(seqs) and seqs[0] > seq
    # A single body that is not an object goes as a batch of one.
    s2 = client.mq.send(queue, "just a string")
    assert isinstance(s2, int) and s2 > seqs[-1]

    msgs = client.mq.peek(queue, max_messages=100)
    assert [m.body for m in msgs] == [
        {"id": 1, "sku": "ABC", "text": "naïve ✓"}, {"id": 2}, "text", 3, [4, 5], None, "just a string",
    ]
    assert [m.sequence for m in msgs] == [seq, *seqs, s2]


def test_send_with_dedup_key_returns_the_first_sequence(client: Sluice, queue: str) -> None:
    a = client.mq.send(queue, {"order": 7}, dedup_key="order-7")
    b = client.mq.send(queue, {"order": 7}, dedup_key="order-7")
    assert a == b
    assert len(client.mq.peek(queue)) == 1
    with pytest.raises(InvalidArgument, match="dedup_key") as ei:
        client.mq.send(queue, [{"a": 1}], dedup_key="k")
    assert ei.value.status == 400  # the server's refusal
    with pytest.raises(InvalidArgument, match="dedup_key") as ei:
        client.mq.send(queue, "text", dedup_key="k")
    assert ei.value.status == 0  # refused before sending


def test_fifo_queue_and_groups(client: Sluice) -> None:
    name = "fifo-" + str(time.time_ns())
    q = client.queues.create(name, fifo=True)
    assert q.fifo is True
    with pytest.raises(InvalidArgument, match="fifo queue") as ei:
        client.mq.send(name, {"x": 0})
    assert ei.value.status == 400
    client.mq.send(name, {"x": 1}, group="c1")
    client.mq.send(name, [{"x": 2}, {"x": 3}], group="c1")
    client.mq.send_entries(name, [{"body": {"x": 4}, "group": "c2"}])
    with pytest.raises(InvalidArgument, match="group"):
        client.mq.send(name, {"x": 5}, group="")
    msgs = client.mq.receive(name, max_messages=10)
    assert [(m.group, m.body) for m in msgs] == [("c1", {"x": 1}), ("c2", {"x": 4})]
    stats = client.queues.get(name).stats
    assert stats is not None and (stats.groups, stats.groups_inflight, stats.grouped_waiting) == (2, 2, 2)
    assert client.queues.update(name, fifo=False).fifo is False


def test_send_with_delay(client: Sluice, queue: str) -> None:
    client.mq.send(queue, {"later": True}, delay=600)
    client.mq.send(queue, [{"later": 2}, {"later": 3}], delay=timedelta(minutes=5))
    client.mq.send(queue, {"now": True}, delay=0)
    assert client.mq.receive(queue, max_messages=10) != []
    stats = client.queues.get(queue).stats
    assert stats is not None and stats.delayed == 3


def test_send_out_of_range_delay_is_invalid_argument_with_the_servers_message(client: Sluice, queue: str) -> None:
    with pytest.raises(InvalidArgument) as ei:
        client.mq.send(queue, {"a": 1}, delay=43201)
    e = ei.value
    assert (e.status, e.code) == (400, "invalid_argument")
    assert e.message == "invalid delay_seconds 43201: use an integer from 0 to 43200"
    assert str(e) == "invalid delay_seconds 43201: use an integer from 0 to 43200 (400 invalid_argument)"
    with pytest.raises(InvalidArgument, match="from 0 to 43200"):
        client.mq.send(queue, {"a": 1}, delay=-1)
    # Fractions are refused, not rounded, before anything is sent.
    with pytest.raises(InvalidArgument, match="whole seconds") as ei:
        client.mq.send(queue, {"a": 1}, delay=timedelta(milliseconds=1500))
    assert ei.value.status == 0
    assert client.mq.peek(queue) == []


def test_send_bad_batches_and_bodies(client: Sluice, queue: str) -> None:
    with pytest.raises(InvalidArgument) as ei:
        client.mq.send(queue, [{"n": i} for i in range(11)])
    assert ei.value.status == 400 and "10" in ei.value.message
    with pytest.raises(InvalidArgument):
        client.mq.send(queue, [])
    with pytest.raises(sluice.InvalidJSON):
        client.mq.send(queue, {"x": float("nan")})
    with pytest.raises(InvalidArgument, match="not JSON serializable"):
        client.mq.send(queue, {"x": object()})
    assert client.mq.peek(queue) == []


# -- receive, delete, visibility ----------------------------------------


def test_receive_returns_typed_messages(client: Sluice, queue: str) -> None:
    before = datetime.now(timezone.utc) - timedelta(seconds=5)
    seq = client.mq.send(queue, {"id": 1})
    msgs = client.mq.receive(queue, max_messages=10, wait_seconds=1, visibility_timeout=60)
    assert len(msgs) == 1
    m = msgs[0]
    assert isinstance(m, Message)
    assert (m.sequence, m.body, m.headers, m.receive_count) == (seq, {"id": 1}, None, 1)
    assert isinstance(m.created_at, datetime) and m.created_at.tzinfo is not None
    assert before < m.created_at < datetime.now(timezone.utc) + timedelta(seconds=5)
    assert m.visible_at is not None and m.visible_at > m.created_at + timedelta(seconds=50)
    assert isinstance(m.receipt, str) and len(m.receipt) == 36
    # Read like the dicts other queue SDKs return.
    assert m["sequence"] == seq and m["body"] == {"id": 1} and m.get("nope", 7) == 7
    with pytest.raises(KeyError):
        m["nope"]
    # Leased: nothing else to receive.
    assert client.mq.receive(queue) == []
    client.mq.delete(queue, m.sequence, m.receipt)
    with pytest.raises(MessageNotFound) as ei:
        client.mq.delete(queue, m.sequence)
    assert ei.value.status == 404 and isinstance(ei.value, NotFound)


def test_receive_long_poll_returns_empty_when_the_wait_ends(client: Sluice, queue: str) -> None:
    t0 = time.monotonic()
    assert client.mq.receive(queue, wait_seconds=1) == []
    assert time.monotonic() - t0 >= 0.9


def test_receive_with_delete_is_at_most_once(client: Sluice, queue: str) -> None:
    client.mq.send(queue, [{"n": 1}, {"n": 2}, {"n": 3}])
    got = client.mq.receive(queue, max_messages=2, delete=True)
    assert [m.body for m in got] == [{"n": 1}, {"n": 2}]
    assert all(m.receipt is None for m in got)
    assert [m.body for m in client.mq.peek(queue)] == [{"n": 3}]


def test_receive_bad_arguments(client: Sluice, queue: str) -> None:
    with pytest.raises(InvalidArgument, match="max_messages"):
        client.mq.receive(queue, max_messages=11)
    with pytest.raises(InvalidArgument, match="wait_seconds"):
        client.mq.receive(queue, wait_seconds=21)
    with pytest.raises(InvalidArgument, match="visibility_timeout"):
        client.mq.receive(queue, visibility_timeout=43201)


def test_stale_receipt(client: Sluice, queue: str) -> None:
    client.mq.send(queue, {"id": 1})
    [first] = client.mq.receive(queue)
    # Give it back at once; the next receive leases it again.
    client.mq.change_visibility(queue, first.sequence, 0, receipt=first.receipt)
    [second] = client.mq.receive(queue)
    assert second.sequence == first.sequence and second.receive_count == 2
    assert second.receipt != first.receipt
    with pytest.raises(StaleReceipt) as ei:
        client.mq.delete(queue, first.sequence, first.receipt)
    e = ei.value
    assert (e.status, e.code) == (409, "stale_receipt") and isinstance(e, sluice.Conflict)
    with pytest.raises(StaleReceipt):
        client.mq.change_visibility(queue, first.sequence, 30, receipt=first.receipt)
    client.mq.delete(queue, second.sequence, second.receipt)
    assert client.mq.peek(queue) == []


def test_change_visibility(client: Sluice, queue: str) -> None:
    client.mq.send(queue, {"id": 1})
    [m] = client.mq.receive(queue, visibility_timeout=timedelta(minutes=10))
    assert client.mq.peek(queue) == []
    client.mq.change_visibility(queue, m.sequence, timedelta(0))
    assert [x.sequence for x in client.mq.peek(queue)] == [m.sequence]
    with pytest.raises(InvalidArgument, match="43200"):
        client.mq.change_visibility(queue, m.sequence, 43201)
    with pytest.raises(MessageNotFound):
        client.mq.change_visibility(queue, m.sequence + 1000, 5)
    with pytest.raises(InvalidArgument, match="receipt"):
        client.mq.delete(queue, m.sequence, "not-a-uuid")


# -- peek, purge ------------------------------------------------------------


def test_peek_pages_by_sequence(client: Sluice, queue: str) -> None:
    seqs = client.mq.send(queue, [{"n": i} for i in range(5)])
    page1 = client.mq.peek(queue, max_messages=2)
    page2 = client.mq.peek(queue, max_messages=2, after=page1[-1].sequence)
    page3 = client.mq.peek(queue, max_messages=2, after=page2[-1].sequence)
    assert [m.sequence for m in page1 + page2 + page3] == seqs
    assert len(page3) == 1 and all(m.receipt is None for m in page1)
    # A page says where the next starts while more may follow.
    assert page1.next == seqs[1] and page2.next == seqs[3] and page3.next is None
    with pytest.raises(InvalidArgument, match="max_messages"):
        client.mq.peek(queue, max_messages=101)
    with pytest.raises(InvalidArgument, match="after"):
        client.mq.peek(queue, after=-1)


def test_peek_pages_stop_short_at_8_mib(client: Sluice, queue: str) -> None:
    name = queue
    client.queues.update(name, max_message_bytes=1 << 20)
    big = "x" * (900 << 10)
    seqs = [client.mq.send(name, big) for _ in range(10)]
    page1 = client.mq.peek(name, max_messages=100)
    assert len(page1) < 10 and page1.next == page1[-1].sequence
    page2 = client.mq.peek(name, max_messages=100, after=page1.next)
    assert [m.sequence for m in page1 + page2] == seqs and page2.next is None


def test_purge(client: Sluice, queue: str) -> None:
    client.mq.send(queue, [{"n": i} for i in range(4)])
    assert client.mq.purge(queue) == 4
    assert client.mq.purge(queue) == 0
    assert client.mq.peek(queue) == []


# -- dead letters -----------------------------------------------------------


def test_dead_letters_receive_delete_redrive_purge(client: Sluice) -> None:
    name = new_name("dlq")
    client.queues.create(name, max_receive_count=1)
    try:
        seqs = client.mq.send(name, [{"n": i} for i in range(6)])
        got = client.mq.receive(name, max_messages=10, visibility_timeout=0)
        assert len(got) == 6
        # After the last allowed delivery, the sweeper moves them when the
        # 1 s lease ends.
        dead = wait_for(lambda: (lambda d: d if len(d) == 6 else None)(client.mq.receive_dlq(name, max_messages=100)))
        assert [d.sequence for d in dead] == seqs
        d = dead[0]
        assert isinstance(d, DeadLetter)
        assert d.body == {"n": 0} and d.receive_count == 1 and d.reason != ""
        assert d.failed_at is not None and d.failed_at >= d.created_at
        assert [x.sequence for x in client.mq.receive_dlq(name, max_messages=2, after=seqs[1])] == seqs[2:4]

        client.mq.delete_dlq(name, seqs[0])
        with pytest.raises(MessageNotFound):
            client.mq.delete_dlq(name, seqs[0])

        assert client.mq.redrive(name, sequences=[seqs[1], seqs[2], 999999999]) == 2
        assert client.mq.redrive(name, max_messages=1) == 1
        with pytest.raises(InvalidArgument, match="not both"):
            client.mq.redrive(name, max_messages=1, sequences=[seqs[4]])
        back = client.mq.peek(name)
        assert sorted(m.sequence for m in back) == sorted([seqs[1], seqs[2], seqs[3]])
        assert all(m.receive_count == 0 for m in back)

        assert client.mq.purge_dlq(name) == 2
        assert client.mq.receive_dlq(name) == []
        assert client.mq.redrive(name) == 0
    finally:
        client.queues.delete(name)


# -- errors -----------------------------------------------------------------


def test_unknown_queue_is_queue_not_found_everywhere(client: Sluice) -> None:
    missing = new_name("missing")
    calls = [
        lambda: client.mq.send(missing, {"a": 1}),
        lambda: client.mq.send(missing, [{"a": 1}]),
        lambda: client.mq.receive(missing),
        lambda: client.mq.peek(missing),
        lambda: client.mq.purge(missing),
        lambda: client.mq.receive_dlq(missing),
        lambda: client.mq.purge_dlq(missing),
        lambda: client.mq.redrive(missing),
        lambda: client.queues.get(missing),
        lambda: client.queues.update(missing, delay_seconds=1),
        lambda: client.queues.stats(missing),
    ]
    for call in calls:
        with pytest.raises(QueueNotFound) as ei:
            call()
        e = ei.value
        assert (e.status, e.code) == (404, "queue_not_found")
        assert missing in e.message and "000000000001" in e.message
        assert isinstance(e, NotFound) and isinstance(e, SluiceError)


def test_invalid_names_are_refused_before_sending(client: Sluice) -> None:
    for bad in ["", "a/b", "..", "x" * 81, "spa ce"]:
        with pytest.raises(InvalidName) as ei:
            client.mq.send(bad, {"a": 1})
        assert ei.value.status == 0 and ei.value.code == "invalid_name"
    with pytest.raises(InvalidArgument, match="positive"):
        client.mq.delete("orders", 0)
    with pytest.raises(InvalidArgument, match="integer"):
        client.mq.receive("orders", max_messages=True)  # type: ignore[arg-type]


def test_wrong_key_is_unauthorized(server: Server) -> None:
    key_id = server.key.split(":")[0]
    with Sluice(endpoint=server.url, key=f"{key_id}:wrong-secret") as c:
        with pytest.raises(Unauthorized) as ei:
            c.queues.list()
    assert ei.value.status == 401 and ei.value.code == "unauthorized"


def test_another_account_is_forbidden(server: Server) -> None:
    with Sluice(endpoint=server.url, key=server.key, account="000000000002") as c:
        with pytest.raises(Forbidden) as ei:
            c.mq.send("orders", {"a": 1})
    assert ei.value.status == 403 and "000000000002" in ei.value.message


def test_connection_refused_is_retried_then_raised(monkeypatch) -> None:
    from sluice import _client

    sleeps = []
    monkeypatch.setattr(_client, "_sleep", sleeps.append)
    with socket_closed_port() as port:
        with Sluice(endpoint=f"http://127.0.0.1:{port}", key="a:b", max_retries=2) as c:
            with pytest.raises(SluiceConnectionError, match="is the server running there"):
                c.mq.receive("orders")  # not idempotent, but nothing was sent
    assert len(sleeps) == 2 and all(0 <= s <= 5 for s in sleeps)


class socket_closed_port:
    """A port nothing listens on."""

    def __enter__(self) -> int:
        import socket

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        return self.port

    def __exit__(self, *exc: object) -> None:
        pass
