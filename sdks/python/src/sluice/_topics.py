"""Topics (fan-out): create, list, get, delete, subscribe, unsubscribe, publish."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union, cast

from ._base import BaseClient, Call, Seconds, check_name, encode_json, expect, int_list, nothing, seconds
from ._errors import InvalidArgument
from ._models import Topic, list_of

if TYPE_CHECKING:
    from ._client import AsyncSluice, Sluice

#: How many headers a subscription filter may name.
MAX_FILTER_KEYS = 10


def _filter(f: Optional[Mapping[str, str]]) -> Optional[Dict[str, str]]:
    if f is None:
        return None
    if not isinstance(f, Mapping):
        raise InvalidArgument(f"filter {f!r}: want a mapping of header names to strings")
    if len(f) > MAX_FILTER_KEYS:
        raise InvalidArgument(f"filter: name at most {MAX_FILTER_KEYS} headers, got {len(f)}")
    for k, v in f.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise InvalidArgument(f"filter: header {k!r} must map a string to a string, got {v!r}")
    return dict(f)


def _copies(v: Any) -> int:
    if not isinstance(v, list) or len(v) != 1:
        raise ValueError("want one count")
    return int(v[0])


class _Calls:
    def __init__(self, c: BaseClient) -> None:
        self._c = c

    def _topic_path(self, topic: str, *segments: str) -> tuple:
        return (self._c._account, "topics", check_name("topic", topic)) + segments

    def list(self) -> Call[List[Topic]]:
        return Call("GET", self._c.manage_path("topics"), lambda d: list_of(Topic, d, "topics"), idempotent=True)

    def get(self, name: str) -> Call[Topic]:
        return Call("GET", self._c.manage_path("topics", check_name("topic", name)), Topic.from_json, idempotent=True)

    def create(self, name: str) -> Call[Topic]:
        return Call("POST", self._c.manage_path("topics"), Topic.from_json, body={"name": check_name("topic", name)})

    def delete(self, name: str) -> Call[None]:
        return Call("DELETE", self._c.manage_path("topics", check_name("topic", name)), nothing, idempotent=True)

    def subscribe(self, topic: str, queue: str, filter: Optional[Mapping[str, str]]) -> Call[Topic]:
        path = self._c.manage_path("topics", check_name("topic", topic), "subscriptions", check_name("queue", queue))
        f = _filter(filter)
        # A PUT: subscribing again with the same filter changes nothing.
        return Call("PUT", path, Topic.from_json, body={"filter": f} if f else {}, idempotent=True)

    def unsubscribe(self, topic: str, queue: str) -> Call[None]:
        path = self._c.manage_path("topics", check_name("topic", topic), "subscriptions", check_name("queue", queue))
        return Call("DELETE", path, nothing, idempotent=True)

    def publish(self, topic: str, body: Any, delay: Optional[Seconds]) -> Call[Any]:
        path = self._topic_path(topic, "messages")
        params: Dict[str, str] = {}
        if delay is not None:
            d = seconds("delay", delay)
            if d != 0:
                params["delay_seconds"] = str(d)
        if isinstance(body, list):
            return Call("POST", path, expect("copies", int_list), params=params, body=encode_json(body, "message bodies"))
        if isinstance(body, Mapping) and not isinstance(body, dict):
            body = dict(body)
        raw = encode_json(body, "message body")
        if not isinstance(body, dict):
            return Call("POST", path, expect("copies", _copies), params=params, body=b"[" + raw + b"]")
        return Call("POST", path, expect("copies", int), params=params, body=raw)

    def publish_entries(self, topic: str, entries: Sequence[Mapping[str, Any]]) -> Call[List[int]]:
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence) or not 1 <= len(entries) <= 10:
            raise InvalidArgument("entries: want a list of 1 to 10 entries")
        out = []
        for i, e in enumerate(entries):
            if not isinstance(e, Mapping) or "body" not in e:
                raise InvalidArgument(f"entries[{i}]: want a mapping with a body")
            unknown = set(e) - {"body", "headers", "delay"}
            if unknown:
                raise InvalidArgument(f"entries[{i}]: unknown keys {sorted(unknown)}: use body, headers, delay")
            entry: Dict[str, Any] = {"body": e["body"]}
            if e.get("headers") is not None:
                if not isinstance(e["headers"], Mapping):
                    raise InvalidArgument(f"entries[{i}].headers: want a mapping")
                entry["headers"] = dict(e["headers"])
            if e.get("delay") is not None:
                entry["delay_seconds"] = seconds("delay", e["delay"])
            out.append(entry)
        raw = encode_json({"entries": out}, "entries")
        return Call("POST", self._topic_path(topic, "messages", "entries"), expect("copies", int_list), body=raw)


class Topics:
    """``client.topics``: topics copy each message published to them into
    every subscribed queue, in one transaction (scope ``mq:admin`` to
    change topics and subscriptions, ``mq:receive`` to read them,
    ``mq:send`` to publish).

    A subscription may filter on headers: ``{"type": "order"}`` copies only
    messages whose ``type`` header is exactly ``"order"`` (1 to 10 names,
    all must match); publish headers with :meth:`publish_entries`.
    """

    def __init__(self, client: "Sluice") -> None:
        self._client = client
        self._calls = _Calls(client)

    def list(self) -> List[Topic]:
        """The account's topics by name, with their subscriptions."""
        return self._client._run(self._calls.list())

    def get(self, name: str) -> Topic:
        """A topic with its subscriptions (:class:`TopicNotFound` if none)."""
        return self._client._run(self._calls.get(name))

    def create(self, name: str) -> Topic:
        """Creates a topic (:class:`TopicExists` if it exists)."""
        return self._client._run(self._calls.create(name))

    def delete(self, name: str) -> None:
        """Deletes a topic and its subscriptions (not the queues)."""
        self._client._run(self._calls.delete(name))

    def subscribe(self, topic: str, queue: str, filter: Optional[Mapping[str, str]] = None) -> Topic:
        """Subscribes ``queue`` to ``topic``, with an optional filter on
        headers (again: replaces the filter); returns the topic."""
        return self._client._run(self._calls.subscribe(topic, queue, filter))

    def unsubscribe(self, topic: str, queue: str) -> None:
        """Stops copying the topic's messages into ``queue``."""
        self._client._run(self._calls.unsubscribe(topic, queue))

    def publish(self, topic: str, body: Any, *, delay: Optional[Seconds] = None) -> Union[int, List[int]]:
        """Publishes one message and returns the copies made (one per
        subscribed queue whose filter matched); a list is a batch of 1 to
        10 bodies and returns the copies per message. ``delay`` (0 to
        43200 s) keeps the copies invisible that long."""
        return cast(Union[int, List[int]], self._client._run(self._calls.publish(topic, body, delay)))

    def publish_entries(self, topic: str, entries: Sequence[Mapping[str, Any]]) -> List[int]:
        """Publishes 1 to 10 entries ``{"body": ..., "headers": {...}, "delay": s}``
        (headers and delay optional) in one transaction; returns the copies
        made per entry."""
        return self._client._run(self._calls.publish_entries(topic, entries))


class AsyncTopics:
    """``client.topics`` of :class:`AsyncSluice`: as :class:`Topics`, awaitable."""

    def __init__(self, client: "AsyncSluice") -> None:
        self._client = client
        self._calls = _Calls(client)

    async def list(self) -> List[Topic]:
        """See :meth:`Topics.list`."""
        return await self._client._run(self._calls.list())

    async def get(self, name: str) -> Topic:
        """See :meth:`Topics.get`."""
        return await self._client._run(self._calls.get(name))

    async def create(self, name: str) -> Topic:
        """See :meth:`Topics.create`."""
        return await self._client._run(self._calls.create(name))

    async def delete(self, name: str) -> None:
        """See :meth:`Topics.delete`."""
        await self._client._run(self._calls.delete(name))

    async def subscribe(self, topic: str, queue: str, filter: Optional[Mapping[str, str]] = None) -> Topic:
        """See :meth:`Topics.subscribe`."""
        return await self._client._run(self._calls.subscribe(topic, queue, filter))

    async def unsubscribe(self, topic: str, queue: str) -> None:
        """See :meth:`Topics.unsubscribe`."""
        await self._client._run(self._calls.unsubscribe(topic, queue))

    async def publish(self, topic: str, body: Any, *, delay: Optional[Seconds] = None) -> Union[int, List[int]]:
        """See :meth:`Topics.publish`."""
        return cast(Union[int, List[int]], await self._client._run(self._calls.publish(topic, body, delay)))

    async def publish_entries(self, topic: str, entries: Sequence[Mapping[str, Any]]) -> List[int]:
        """See :meth:`Topics.publish_entries`."""
        return await self._client._run(self._calls.publish_entries(topic, entries))
