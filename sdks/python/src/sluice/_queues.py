"""Queue management: create, get, list, update, delete, per-minute stats."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ._base import BaseClient, Call, Seconds, check_name, integer, nothing, seconds
from ._errors import InvalidArgument
from ._models import MinuteStats, Queue, list_of

if TYPE_CHECKING:
    from ._client import AsyncSluice, Sluice


class _Calls:
    def __init__(self, c: BaseClient) -> None:
        self._c = c

    def list(self, live: bool) -> Call[List[Queue]]:
        params = {"live": "true"} if live else {}
        return Call("GET", self._c.manage_path("queues"), lambda d: list_of(Queue, d, "queues"), params=params, idempotent=True)

    def get(self, name: str) -> Call[Queue]:
        return Call("GET", self._c.manage_path("queues", check_name("queue", name)), Queue.from_json, idempotent=True)

    def create(self, name: str, settings: Dict[str, Any]) -> Call[Queue]:
        body = {"name": check_name("queue", name)}
        body.update(settings)
        return Call("POST", self._c.manage_path("queues"), Queue.from_json, body=body)

    def update(self, name: str, settings: Dict[str, Any]) -> Call[Queue]:
        path = self._c.manage_path("queues", check_name("queue", name))
        # A PATCH sets the given values: sending it twice changes nothing more.
        return Call("PATCH", path, Queue.from_json, body=settings, idempotent=True)

    def delete(self, name: str) -> Call[None]:
        return Call("DELETE", self._c.manage_path("queues", check_name("queue", name)), nothing, idempotent=True)

    def stats(self, name: str, minutes: Optional[int]) -> Call[List[MinuteStats]]:
        path = self._c.manage_path("queues", check_name("queue", name), "stats")
        params = {"minutes": str(integer("minutes", minutes))} if minutes is not None else {}
        return Call("GET", path, lambda d: list_of(MinuteStats, d, "minutes"), params=params, idempotent=True)


def settings(
    visibility_timeout_seconds: Optional[Seconds],
    max_receive_count: Optional[int],
    delay_seconds: Optional[Seconds],
    retention_seconds: Optional[Seconds],
    max_message_bytes: Optional[int],
    dedup_window_seconds: Optional[Seconds],
    dead_letter_queue: Optional[str] = None,
    fifo: Optional[bool] = None,
) -> Dict[str, Any]:
    """The settings given (not None), as the API names them."""
    out: Dict[str, Any] = {}
    if fifo is not None:
        if not isinstance(fifo, bool):
            raise InvalidArgument(f"fifo {fifo!r}: must be True or False")
        out["fifo"] = fifo
    if dead_letter_queue is not None:
        # "" sends the dead letters back to the queue's dead-letter table.
        out["dead_letter_queue"] = check_name("queue", dead_letter_queue) if dead_letter_queue != "" else ""
    for name, value in (
        ("visibility_timeout_seconds", visibility_timeout_seconds),
        ("delay_seconds", delay_seconds),
        ("retention_seconds", retention_seconds),
        ("dedup_window_seconds", dedup_window_seconds),
    ):
        if value is not None:
            out[name] = seconds(name, value)
    for name, value in (("max_receive_count", max_receive_count), ("max_message_bytes", max_message_bytes)):
        if value is not None:
            out[name] = integer(name, value)
    return out


class Queues:
    """``client.queues``: the account's queues (scope ``mq:admin`` to change
    them, ``mq:receive`` to read them).

    Settings (None: the default on create, unchanged on update):
    ``visibility_timeout_seconds`` (0 to 43200; 30), ``max_receive_count``
    (1 to 1000; 5), ``delay_seconds`` (0 to 43200; 0), ``retention_seconds``
    (60 to 1209600; 345600), ``max_message_bytes`` (1 to 1048576; 262144),
    ``dedup_window_seconds`` (0 to 86400; 300), ``dead_letter_queue``
    (another queue that receives the dead letters as messages; ``""``: back
    to the dead-letter table), ``fifo`` (every message sent needs a group;
    False). Durations take seconds or a timedelta.
    """

    def __init__(self, client: "Sluice") -> None:
        self._client = client
        self._calls = _Calls(client)

    def list(self, live: bool = False) -> List[Queue]:
        """The account's queues by name; with ``live``, each with its counts."""
        return self._client._run(self._calls.list(live))

    def get(self, name: str) -> Queue:
        """A queue's settings and counts (:class:`QueueNotFound` if none)."""
        return self._client._run(self._calls.get(name))

    def create(
        self,
        name: str,
        *,
        visibility_timeout_seconds: Optional[Seconds] = None,
        max_receive_count: Optional[int] = None,
        delay_seconds: Optional[Seconds] = None,
        retention_seconds: Optional[Seconds] = None,
        max_message_bytes: Optional[int] = None,
        dedup_window_seconds: Optional[Seconds] = None,
        dead_letter_queue: Optional[str] = None,
        fifo: Optional[bool] = None,
    ) -> Queue:
        """Creates a queue (:class:`QueueExists` if it exists)."""
        s = settings(visibility_timeout_seconds, max_receive_count, delay_seconds, retention_seconds, max_message_bytes,
                     dedup_window_seconds, dead_letter_queue, fifo)
        return self._client._run(self._calls.create(name, s))

    def update(
        self,
        name: str,
        *,
        visibility_timeout_seconds: Optional[Seconds] = None,
        max_receive_count: Optional[int] = None,
        delay_seconds: Optional[Seconds] = None,
        retention_seconds: Optional[Seconds] = None,
        max_message_bytes: Optional[int] = None,
        dedup_window_seconds: Optional[Seconds] = None,
        dead_letter_queue: Optional[str] = None,
        fifo: Optional[bool] = None,
    ) -> Queue:
        """Changes the settings given, atomically; returns the queue as it now is."""
        s = settings(visibility_timeout_seconds, max_receive_count, delay_seconds, retention_seconds, max_message_bytes,
                     dedup_window_seconds, dead_letter_queue, fifo)
        return self._client._run(self._calls.update(name, s))

    def delete(self, name: str) -> None:
        """Deletes a queue with its messages and dead letters. Raises
        :class:`QueueInUse` while another queue names it as its
        ``dead_letter_queue`` (change or clear that setting first)."""
        self._client._run(self._calls.delete(name))

    def stats(self, name: str, minutes: Optional[int] = None) -> List[MinuteStats]:
        """The last ``minutes`` (1 to 1440; 60) of per-minute statistics,
        oldest first; the last entry is the current, unfinished minute."""
        return self._client._run(self._calls.stats(name, minutes))


class AsyncQueues:
    """``client.queues`` of :class:`AsyncSluice`: as :class:`Queues`, awaitable."""

    def __init__(self, client: "AsyncSluice") -> None:
        self._client = client
        self._calls = _Calls(client)

    async def list(self, live: bool = False) -> List[Queue]:
        """See :meth:`Queues.list`."""
        return await self._client._run(self._calls.list(live))

    async def get(self, name: str) -> Queue:
        """See :meth:`Queues.get`."""
        return await self._client._run(self._calls.get(name))

    async def create(
        self,
        name: str,
        *,
        visibility_timeout_seconds: Optional[Seconds] = None,
        max_receive_count: Optional[int] = None,
        delay_seconds: Optional[Seconds] = None,
        retention_seconds: Optional[Seconds] = None,
        max_message_bytes: Optional[int] = None,
        dedup_window_seconds: Optional[Seconds] = None,
        dead_letter_queue: Optional[str] = None,
        fifo: Optional[bool] = None,
    ) -> Queue:
        """See :meth:`Queues.create`."""
        s = settings(visibility_timeout_seconds, max_receive_count, delay_seconds, retention_seconds, max_message_bytes,
                     dedup_window_seconds, dead_letter_queue, fifo)
        return await self._client._run(self._calls.create(name, s))

    async def update(
        self,
        name: str,
        *,
        visibility_timeout_seconds: Optional[Seconds] = None,
        max_receive_count: Optional[int] = None,
        delay_seconds: Optional[Seconds] = None,
        retention_seconds: Optional[Seconds] = None,
        max_message_bytes: Optional[int] = None,
        dedup_window_seconds: Optional[Seconds] = None,
        dead_letter_queue: Optional[str] = None,
        fifo: Optional[bool] = None,
    ) -> Queue:
        """See :meth:`Queues.update`."""
        s = settings(visibility_timeout_seconds, max_receive_count, delay_seconds, retention_seconds, max_message_bytes,
                     dedup_window_seconds, dead_letter_queue, fifo)
        return await self._client._run(self._calls.update(name, s))

    async def delete(self, name: str) -> None:
        """See :meth:`Queues.delete`."""
        await self._client._run(self._calls.delete(name))

    async def stats(self, name: str, minutes: Optional[int] = None) -> List[MinuteStats]:
        """See :meth:`Queues.stats`."""
        return await self._client._run(self._calls.stats(name, minutes))
