"""Typed results of the API's calls."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Type, TypeVar

_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_time(value: Optional[str]) -> Optional[datetime]:
    """An RFC 3339 time (any number of fractional digits) as an aware
    datetime; None stays None."""
    if value is None or value == "":
        return None
    m = _RFC3339.match(value)
    if not m:
        raise ValueError(f"time {value!r}: want RFC 3339")
    date, clock, frac, zone = m.groups()
    text = f"{date}T{clock}"
    if frac:
        text += "." + (frac + "000000")[:6]
    text += "+00:00" if zone in ("Z", "z") else zone
    t = datetime.fromisoformat(text)
    return t.astimezone(timezone.utc)


class _Record:
    """Dataclasses that can also be read like the dicts other queue SDKs
    return: ``msg["body"]`` is ``msg.body``."""

    def __getitem__(self, name: str) -> Any:
        if name in self._names():
            return getattr(self, name)
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name) if name in self._names() else default

    @classmethod
    def _names(cls) -> List[str]:
        return [f.name for f in fields(cls)]


@dataclass(frozen=True)
class Message(_Record):
    """A message as received or peeked."""

    sequence: int
    #: The JSON body, decoded (dict, list, str, number, bool or None).
    body: Any
    #: A JSON object, or None.
    headers: Optional[Dict[str, Any]]
    created_at: datetime
    #: How many times it has been received, this time included.
    receive_count: int
    #: When it becomes visible again if not deleted.
    visible_at: Optional[datetime]
    #: The lease token of a received message (None when peeked or received
    #: with ``delete=True``); pass it to delete/change_visibility to fence a
    #: stale lease.
    receipt: Optional[str] = None
    #: The message's ordered group, or None.
    group: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Message":
        return cls(
            sequence=int(d["sequence"]),
            body=d.get("body"),
            headers=d.get("headers"),
            created_at=_time(d, "created_at"),
            receive_count=int(d.get("receive_count") or 0),
            visible_at=parse_time(d.get("visible_at")),
            receipt=d.get("receipt") or None,
            group=d.get("group") or None,
        )


@dataclass(frozen=True)
class DeadLetter(_Record):
    """A message in a dead-letter queue."""

    sequence: int
    body: Any
    headers: Optional[Dict[str, Any]]
    created_at: datetime
    receive_count: int
    failed_at: Optional[datetime]
    #: Why it died, e.g. ``max_receive_count`` or ``permanent``.
    reason: str
    last_error: str
    #: The message's ordered group, or None.
    group: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "DeadLetter":
        return cls(
            sequence=int(d["sequence"]),
            body=d.get("body"),
            headers=d.get("headers"),
            created_at=_time(d, "created_at"),
            receive_count=int(d.get("receive_count") or 0),
            failed_at=parse_time(d.get("failed_at")),
            reason=d.get("reason") or "",
            last_error=d.get("last_error") or "",
            group=d.get("group") or None,
        )


@dataclass(frozen=True)
class QueueStats(_Record):
    """A queue's message counts."""

    ready: int
    inflight: int
    delayed: int
    dlq: int
    oldest_ready_age_seconds: float
    #: Ordered groups with messages, those whose head is leased, those held
    #: back by a head that failed, and messages waiting behind their head.
    groups: int = 0
    groups_inflight: int = 0
    groups_blocked: int = 0
    grouped_waiting: int = 0
    #: The size of the messages' and the dead letters' bodies and headers
    #: as stored: what counts against the account's message bytes limit.
    bytes: int = 0
    dlq_bytes: int = 0

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "QueueStats":
        return cls(
            ready=int(d.get("ready") or 0),
            inflight=int(d.get("inflight") or 0),
            delayed=int(d.get("delayed") or 0),
            dlq=int(d.get("dlq") or 0),
            oldest_ready_age_seconds=float(d.get("oldest_ready_age_seconds") or 0),
            groups=int(d.get("groups") or 0),
            groups_inflight=int(d.get("groups_inflight") or 0),
            groups_blocked=int(d.get("groups_blocked") or 0),
            grouped_waiting=int(d.get("grouped_waiting") or 0),
            bytes=int(d.get("bytes") or 0),
            dlq_bytes=int(d.get("dlq_bytes") or 0),
        )


@dataclass(frozen=True)
class Queue(_Record):
    """A queue's settings, with its counts from ``queues.get`` and from
    ``queues.list(live=True)``."""

    name: str
    visibility_timeout_seconds: int
    max_receive_count: int
    delay_seconds: int
    retention_seconds: int
    max_message_bytes: int
    dedup_window_seconds: int
    created_at: datetime
    updated_at: datetime
    stats: Optional[QueueStats] = None
    #: The queue that receives this queue's dead letters as messages, or
    #: None when they go to its dead-letter table.
    dead_letter_queue: Optional[str] = None
    #: Every message sent needs a group (ordered processing).
    fifo: bool = False

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Queue":
        stats = d.get("stats")
        return cls(
            name=d["name"],
            visibility_timeout_seconds=int(d.get("visibility_timeout_seconds") or 0),
            max_receive_count=int(d.get("max_receive_count") or 0),
            delay_seconds=int(d.get("delay_seconds") or 0),
            retention_seconds=int(d.get("retention_seconds") or 0),
            max_message_bytes=int(d.get("max_message_bytes") or 0),
            dedup_window_seconds=int(d.get("dedup_window_seconds") or 0),
            created_at=_time(d, "created_at"),
            updated_at=_time(d, "updated_at"),
            stats=QueueStats.from_json(stats) if isinstance(stats, dict) else None,
            dead_letter_queue=d.get("dead_letter_queue") or None,
            fifo=bool(d.get("fifo") or False),
        )


@dataclass(frozen=True)
class MinuteStats(_Record):
    """One minute of a queue's statistics (``queues.stats``)."""

    #: The start of the minute (UTC).
    minute: datetime
    #: Messages sent, deleted after being received, and moved to the DLQ
    #: in the minute.
    sends: int
    acks: int
    dlq_moves: int
    #: The depth sampled in the minute; None when no sample was taken.
    ready: Optional[int]
    inflight: Optional[int]
    delayed: Optional[int]
    dlq: Optional[int]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "MinuteStats":
        return cls(
            minute=_time(d, "minute"),
            sends=int(d.get("sends") or 0),
            acks=int(d.get("acks") or 0),
            dlq_moves=int(d.get("dlq_moves") or 0),
            ready=_opt_int(d.get("ready")),
            inflight=_opt_int(d.get("inflight")),
            delayed=_opt_int(d.get("delayed")),
            dlq=_opt_int(d.get("dlq")),
        )


def _time(d: Dict[str, Any], name: str) -> datetime:
    t = parse_time(d.get(name))
    if t is None:
        raise ValueError(f"response: {name} is missing")
    return t


def _opt_int(v: Any) -> Optional[int]:
    return None if v is None else int(v)


R = TypeVar("R", Message, DeadLetter, Queue, MinuteStats)


@dataclass(frozen=True)
class Subscription(_Record):
    """A queue subscribed to a topic. ``filter`` (None: every message)
    copies only messages whose headers hold each name with exactly that
    string value; ``source`` is ``"api"`` or ``"manifest"`` (made by
    ``sluice deploy``)."""

    queue: str
    filter: Optional[Dict[str, str]]
    source: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Subscription":
        f = d.get("filter")
        return cls(queue=d["queue"], filter=dict(f) if isinstance(f, dict) else None, source=d.get("source") or "api")


@dataclass(frozen=True)
class Topic(_Record):
    """A topic with the queues subscribed to it."""

    name: str
    created_at: datetime
    subscriptions: List[Subscription]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Topic":
        return cls(
            name=d["name"],
            created_at=_time(d, "created_at"),
            subscriptions=[Subscription.from_json(s) for s in d.get("subscriptions") or []],
        )


class Page(List[R]):
    """A page of a peek or DLQ read: a list of its messages, with
    ``next``, the ``after`` of the next page while more may follow (the
    page is full or reached 8 MiB), ``None`` on the last page."""

    next: Optional[int] = None


def page_of(cls: Type[R], data: Any) -> "Page[R]":
    """A peek or DLQ read's response: ``{"messages": [...], "next"?: n}``."""
    out: Page[R] = Page(list_of(cls, data, "messages"))
    nxt = data.get("next") if isinstance(data, dict) else None
    if nxt is not None and (not isinstance(nxt, int) or isinstance(nxt, bool)):
        raise ValueError("response: next is not an integer")
    out.next = nxt
    return out


def list_of(cls: Type[R], data: Any, key: str) -> List[R]:
    """A list response: ``{key: [...]}`` (or a bare array); null is []."""
    if isinstance(data, dict):
        data = data.get(key)
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValueError(f"response: {key} is not a list")
    return [cls.from_json(item) for item in data]
