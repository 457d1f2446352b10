"""The data plane: send, receive, delete, visibility, peek, purge, DLQ."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union, cast, overload

from ._base import (
    BaseClient,
    Call,
    Seconds,
    check_sequence,
    encode_json,
    expect,
    ids,
    int_list,
    integer,
    nothing,
    seconds,
)
from ._errors import InvalidArgument
from ._models import DeadLetter, Message, Page, list_of, page_of

if TYPE_CHECKING:
    from ._client import AsyncSluice, Sluice

#: A single message's body: a JSON object, or a string, number, bool or
#: null (sent as a batch of one). A list is a batch of bodies.
Body = Union[Mapping[str, Any], str, int, float, bool, None]


class _Calls:
    """Builds the data plane's calls; MQ and AsyncMQ send them."""

    def __init__(self, c: BaseClient) -> None:
        self._c = c

    def send(
        self,
        queue: str,
        body: Any,
        delay: Optional[Seconds],
        dedup_key: Optional[str],
        ttl: Optional[Seconds] = None,
        headers: Optional[Mapping[str, str]] = None,
        group: Optional[str] = None,
    ) -> Call[Any]:
        if headers is not None:
            # Headers travel only in entries: one entry per message.
            many = isinstance(body, list)
            if many and dedup_key is not None:
                raise InvalidArgument("dedup_key: only a single message takes one (give each entry its own with send_entries)")
            bodies = body if many else [body]
            call = self.send_entries(
                queue,
                [{"body": b, "headers": headers, "delay": delay, "ttl": ttl, "dedup_key": dedup_key, "group": group}
                 for b in bodies],
            )
            if many:
                return call
            return Call(call.method, call.path, expect("sequences", _single), body=call.body, idempotent=call.idempotent)
        path = self._c.queue_path(queue, "messages")
        params: Dict[str, str] = {}
        if delay is not None:
            d = seconds("delay", delay)
            if d != 0:
                params["delay_seconds"] = str(d)
        if ttl is not None:
            params["expires_in_seconds"] = str(seconds("ttl", ttl))
        if dedup_key is not None:
            params["dedup_key"] = _dedup_key(dedup_key)
        if group is not None:
            params["group"] = _group(group)
        if isinstance(body, list):
            # A batch: the server takes 1 to 10 bodies of any JSON value.
            raw = encode_json(body, "message bodies")
            return Call("POST", path, expect("sequences", int_list), params=params, body=raw)
        if isinstance(body, Mapping) and not isinstance(body, dict):
            body = dict(body)
        raw = encode_json(body, "message body")
        if not isinstance(body, dict):
            # The API takes a JSON object as one message; any other body is
            # sent as a batch of one, as the Go client does.
            if dedup_key is not None:
                raise InvalidArgument("dedup_key: the API takes one only with a single JSON object body")
            return Call(
                "POST", path, expect("sequences", _single), params=params, body=b"[" + raw + b"]"
            )
        # A repeated send with the same dedup key returns the first sequence:
        # safe to send again after a broken connection.
        return Call(
            "POST",
            path,
            expect("sequence", int),
            params=params,
            body=raw,
            idempotent=dedup_key is not None,
        )

    def send_entries(self, queue: str, entries: Sequence[Mapping[str, Any]]) -> Call[List[int]]:
        path = self._c.queue_path(queue, "messages", "entries")
        if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Sequence):
            raise InvalidArgument("entries: give a list of dicts like {'body': ..., 'headers': {...}}")
        out = [_entry(i, e) for i, e in enumerate(entries)]
        keyed = all("dedup_key" in e for e in out)
        return Call("POST", path, expect("sequences", int_list), body={"entries": out}, idempotent=keyed)

    def receive(
        self,
        queue: str,
        max_messages: int,
        wait_seconds: Seconds,
        visibility_timeout: Optional[Seconds],
        delete: bool,
    ) -> Call[List[Message]]:
        path = self._c.queue_path(queue, "messages", "receive")
        body: Dict[str, Any] = {"max_messages": integer("max_messages", max_messages)}
        wait = seconds("wait_seconds", wait_seconds)
        if wait != 0:
            body["wait_seconds"] = wait
        if visibility_timeout is not None:
            body["visibility_timeout_seconds"] = seconds("visibility_timeout", visibility_timeout)
        if delete:
            body["delete"] = True
        return Call(
            "POST",
            path,
            lambda d: list_of(Message, d, "messages"),
            body=body,
            min_timeout=max(wait, 0) + 10.0,
        )

    def delete(self, queue: str, sequence: int, receipt: Optional[str]) -> Call[None]:
        path = self._c.queue_path(queue, "messages", check_sequence(sequence))
        params = {"receipt": _receipt(receipt)} if receipt is not None else {}
        return Call("DELETE", path, nothing, params=params, idempotent=True)

    def change_visibility(
        self, queue: str, sequence: int, timeout: Seconds, receipt: Optional[str]
    ) -> Call[None]:
        path = self._c.queue_path(queue, "messages", check_sequence(sequence), "visibility")
        body: Dict[str, Any] = {"seconds": seconds("seconds", timeout)}
        if receipt is not None:
            body["receipt"] = _receipt(receipt)
        return Call("POST", path, nothing, body=body, idempotent=True)

    def peek(self, queue: str, max_messages: Optional[int], after: Optional[int]) -> Call[Page[Message]]:
        path = self._c.queue_path(queue, "messages")
        return Call("GET", path, lambda d: page_of(Message, d), params=_page(max_messages, after), idempotent=True)

    def purge(self, queue: str) -> Call[int]:
        return Call("DELETE", self._c.queue_path(queue, "messages"), expect("purged", int), idempotent=True)

    def receive_dlq(self, queue: str, max_messages: Optional[int], after: Optional[int]) -> Call[Page[DeadLetter]]:
        path = self._c.queue_path(queue, "dlq")
        return Call("GET", path, lambda d: page_of(DeadLetter, d), params=_page(max_messages, after), idempotent=True)

    def delete_dlq(self, queue: str, sequence: int) -> Call[None]:
        path = self._c.queue_path(queue, "dlq", check_sequence(sequence))
        return Call("DELETE", path, nothing, idempotent=True)

    def purge_dlq(self, queue: str) -> Call[int]:
        return Call("DELETE", self._c.queue_path(queue, "dlq"), expect("purged", int), idempotent=True)

    def redrive(self, queue: str, max_messages: Optional[int], sequences: Optional[Sequence[int]]) -> Call[int]:
        path = self._c.queue_path(queue, "dlq", "redrive")
        body: Dict[str, Any] = {}
        if max_messages is not None:
            body["max_messages"] = integer("max_messages", max_messages)
        if sequences is not None:
            body["sequences"] = ids(sequences, "sequences")
        return Call("POST", path, expect("redriven", int), body=body, idempotent=sequences is not None)


#: The keys of a send_entries entry.
ENTRY_KEYS = ("body", "headers", "delay", "ttl", "dedup_key", "group")


def _dedup_key(key: Any) -> str:
    if not isinstance(key, str) or key == "":
        raise InvalidArgument(f"dedup_key {key!r}: must be a non-empty string")
    return key


def _group(group: Any) -> str:
    if not isinstance(group, str) or not 1 <= len(group) <= 128:
        raise InvalidArgument(f"group {group!r}: must be a string of 1 to 128 characters")
    return group


def _headers(name: str, headers: Any) -> Dict[str, str]:
    if not isinstance(headers, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise InvalidArgument(f"{name} {headers!r}: must be a dict of string keys and string values")
    return dict(headers)


def _entry(i: int, e: Any) -> Dict[str, Any]:
    """One entry of send_entries in the API's form."""
    if not isinstance(e, Mapping):
        raise InvalidArgument(f"entries[{i}] {e!r}: must be a dict like {{'body': ...}}")
    unknown = [k for k in e if k not in ENTRY_KEYS]
    if unknown:
        raise InvalidArgument(f"entries[{i}]: unknown key {unknown[0]!r}: use {', '.join(ENTRY_KEYS)}")
    if e.get("body") is None:
        raise InvalidArgument(f"entries[{i}] has no body: give 'body', any JSON value but None")
    body = e["body"]
    if isinstance(body, Mapping) and not isinstance(body, dict):
        body = dict(body)
    encode_json(body, f"entries[{i}] body")  # refuses what cannot be JSON
    out: Dict[str, Any] = {"body": body}
    if e.get("headers") is not None:
        out["headers"] = _headers(f"entries[{i}] headers", e["headers"])
    if e.get("delay") is not None:
        d = seconds(f"entries[{i}] delay", e["delay"])
        if d != 0:
            out["delay_seconds"] = d
    if e.get("ttl") is not None:
        out["expires_in_seconds"] = seconds(f"entries[{i}] ttl", e["ttl"])
    if e.get("dedup_key") is not None:
        out["dedup_key"] = _dedup_key(e["dedup_key"])
    if e.get("group") is not None:
        out["group"] = _group(e["group"])
    return out


def _single(v: Any) -> int:
    seqs = int_list(v)
    if len(seqs) != 1:
        raise ValueError(f"got {len(seqs)} sequences for one message")
    return seqs[0]


def _receipt(receipt: Any) -> str:
    if not isinstance(receipt, str) or receipt == "":
        raise InvalidArgument(f"receipt {receipt!r}: pass the receipt (a string) a receive returned, or None")
    return receipt


def _page(max_messages: Optional[int], after: Optional[int]) -> Dict[str, str]:
    params: Dict[str, str] = {}
    if max_messages is not None:
        params["max_messages"] = str(integer("max_messages", max_messages))
    if after is not None:
        params["after"] = str(integer("after", after))
    return params


class MQ:
    """``client.mq``: the data plane of the client's account.

    Every method takes the queue's name first. Ranges (a batch of 1 to 10,
    ``wait_seconds`` 0 to 20, delays and visibility 0 to 43200 s...) are
    checked by the server, whose :class:`InvalidArgument` message names them.
    """

    def __init__(self, client: "Sluice") -> None:
        self._client = client
        self._calls = _Calls(client)

    @overload
    def send(
        self,
        queue: str,
        body: List[Any],
        *,
        delay: Optional[Seconds] = None,
        dedup_key: Optional[str] = None,
        ttl: Optional[Seconds] = None,
        headers: Optional[Mapping[str, str]] = None,
        group: Optional[str] = None,
    ) -> List[int]: ...

    @overload
    def send(
        self,
        queue: str,
        body: Body,
        *,
        delay: Optional[Seconds] = None,
        dedup_key: Optional[str] = None,
        ttl: Optional[Seconds] = None,
        headers: Optional[Mapping[str, str]] = None,
        group: Optional[str] = None,
    ) -> int: ...

    def send(
        self,
        queue: str,
        body: Any,
        *,
        delay: Optional[Seconds] = None,
        dedup_key: Optional[str] = None,
        ttl: Optional[Seconds] = None,
        headers: Optional[Mapping[str, str]] = None,
        group: Optional[str] = None,
    ) -> Union[int, List[int]]:
        """Sends one message (a JSON-serializable body) and returns its
        sequence; a list is a batch of 1 to 10 bodies, sent in one
        transaction, and returns their sequences in order (to send one
        message whose body is a list, send ``[that_list]``).

        ``delay`` (seconds or a timedelta, 0 to 43200) keeps the messages
        invisible that long. ``ttl`` (seconds or a timedelta, 1 to
        1209600) is the messages' time to live: they are never delivered
        after it. ``headers`` (a dict of strings) are stored and returned
        with each message. ``dedup_key`` (single sends only) makes a
        repeat within the queue's dedup window return the first message's
        sequence instead of storing another. ``group`` (1 to 128
        characters) puts the messages into an ordered group: a group's
        messages are delivered in order, one at a time; a fifo queue
        requires one."""
        return cast(
            Union[int, List[int]], self._client._run(self._calls.send(queue, body, delay, dedup_key, ttl, headers, group))
        )

    def send_entries(self, queue: str, entries: Sequence[Mapping[str, Any]]) -> List[int]:
        """Sends 1 to 1000 entries in one transaction, each a dict with its
        own options: ``body`` (required, any JSON value but None),
        ``headers`` (a dict of strings), ``delay`` and ``ttl`` (seconds or
        a timedelta), ``dedup_key`` and ``group``. Returns the sequences in entry
        order (a repeated dedup key returns the first message's)."""
        return self._client._run(self._calls.send_entries(queue, entries))

    def receive(
        self,
        queue: str,
        max_messages: int = 1,
        wait_seconds: Seconds = 0,
        visibility_timeout: Optional[Seconds] = None,
        delete: bool = False,
    ) -> List[Message]:
        """Claims up to ``max_messages`` (1 to 10) ready messages, leasing
        them for ``visibility_timeout`` (the queue's when None; 0 is the
        shortest lease, 1 s), long-polling up to ``wait_seconds`` (0 to 20)
        for a first one. Returns [] when none came. With ``delete=True``
        they are deleted in the same statement that receives them (at most
        once: none is ever returned twice; no receipt)."""
        return self._client._run(self._calls.receive(queue, max_messages, wait_seconds, visibility_timeout, delete))

    def delete(self, queue: str, sequence: int, receipt: Optional[str] = None) -> None:
        """Deletes (acknowledges) a message. With its ``receipt`` the delete
        is fenced: :class:`StaleReceipt` if it was received again since.
        :class:`MessageNotFound` if it is not there."""
        self._client._run(self._calls.delete(queue, sequence, receipt))

    def change_visibility(self, queue: str, sequence: int, seconds: Seconds, receipt: Optional[str] = None) -> None:
        """Makes a received message visible again in ``seconds`` (0 to
        43200; 0 retries it now). ``receipt`` fences it as for delete."""
        self._client._run(self._calls.change_visibility(queue, sequence, seconds, receipt))

    def peek(self, queue: str, max_messages: Optional[int] = None, after: Optional[int] = None) -> Page[Message]:
        """Up to ``max_messages`` (1 to 100; 10) ready messages without
        claiming them, in sequence order, after sequence ``after``. Pass
        the page's ``.next`` as ``after`` for the next page while it is not
        ``None`` (a page stops short at 8 MiB of bodies)."""
        return self._client._run(self._calls.peek(queue, max_messages, after))

    def purge(self, queue: str) -> int:
        """Deletes every message of the queue (not its DLQ); returns how many."""
        return self._client._run(self._calls.purge(queue))

    def receive_dlq(self, queue: str, max_messages: Optional[int] = None, after: Optional[int] = None) -> Page[DeadLetter]:
        """Up to ``max_messages`` (1 to 100; 10) dead letters in sequence
        order after ``after``; they stay until deleted or redriven. Page
        on with ``.next``, as :meth:`peek`."""
        return self._client._run(self._calls.receive_dlq(queue, max_messages, after))

    def delete_dlq(self, queue: str, sequence: int) -> None:
        """Deletes one dead letter (:class:`MessageNotFound` if not there)."""
        self._client._run(self._calls.delete_dlq(queue, sequence))

    def purge_dlq(self, queue: str) -> int:
        """Deletes every dead letter of the queue; returns how many."""
        return self._client._run(self._calls.purge_dlq(queue))

    def redrive(self, queue: str, max_messages: Optional[int] = None, sequences: Optional[Sequence[int]] = None) -> int:
        """Moves dead letters back into the queue, ready at once with their
        receive counts reset, and returns how many moved: all of them, the
        ``max_messages`` that failed first, or those with the given
        ``sequences`` (1 to 1000; ones not in the DLQ are skipped)."""
        return self._client._run(self._calls.redrive(queue, max_messages, sequences))


class AsyncMQ:
    """``client.mq`` of :class:`AsyncSluice`: as :class:`MQ`, awaitable."""

    def __init__(self, client: "AsyncSluice") -> None:
        self._client = client
        self._calls = _Calls(client)

    @overload
    async def send(
        self,
        queue: str,
        body: List[Any],
        *,
        delay: Optional[Seconds] = None,
        dedup_key: Optional[str] = None,
        ttl: Optional[Seconds] = None,
        headers: Optional[Mapping[str, str]] = None,
        group: Optional[str] = None,
    ) -> List[int]: ...

    @overload
    async def send(
        self,
        queue: str,
        body: Body,
        *,
        delay: Optional[Seconds] = None,
        dedup_key: Optional[str] = None,
        ttl: Optional[Seconds] = None,
        headers: Optional[Mapping[str, str]] = None,
        group: Optional[str] = None,
    ) -> int: ...

    async def send(
        self,
        queue: str,
        body: Any,
        *,
        delay: Optional[Seconds] = None,
        dedup_key: Optional[str] = None,
        ttl: Optional[Seconds] = None,
        headers: Optional[Mapping[str, str]] = None,
        group: Optional[str] = None,
    ) -> Union[int, List[int]]:
        """See :meth:`MQ.send`."""
        return cast(
            Union[int, List[int]], await self._client._run(self._calls.send(queue, body, delay, dedup_key, ttl, headers, group))
        )

    async def send_entries(self, queue: str, entries: Sequence[Mapping[str, Any]]) -> List[int]:
        """See :meth:`MQ.send_entries`."""
        return await self._client._run(self._calls.send_entries(queue, entries))

    async def receive(
        self,
        queue: str,
        max_messages: int = 1,
        wait_seconds: Seconds = 0,
        visibility_timeout: Optional[Seconds] = None,
        delete: bool = False,
    ) -> List[Message]:
        """See :meth:`MQ.receive`."""
        return await self._client._run(self._calls.receive(queue, max_messages, wait_seconds, visibility_timeout, delete))

    async def delete(self, queue: str, sequence: int, receipt: Optional[str] = None) -> None:
        """See :meth:`MQ.delete`."""
        await self._client._run(self._calls.delete(queue, sequence, receipt))

    async def change_visibility(self, queue: str, sequence: int, seconds: Seconds, receipt: Optional[str] = None) -> None:
        """See :meth:`MQ.change_visibility`."""
        await self._client._run(self._calls.change_visibility(queue, sequence, seconds, receipt))

    async def peek(self, queue: str, max_messages: Optional[int] = None, after: Optional[int] = None) -> Page[Message]:
        """See :meth:`MQ.peek`."""
        return await self._client._run(self._calls.peek(queue, max_messages, after))

    async def purge(self, queue: str) -> int:
        """See :meth:`MQ.purge`."""
        return await self._client._run(self._calls.purge(queue))

    async def receive_dlq(
        self, queue: str, max_messages: Optional[int] = None, after: Optional[int] = None
    ) -> Page[DeadLetter]:
        """See :meth:`MQ.receive_dlq`."""
        return await self._client._run(self._calls.receive_dlq(queue, max_messages, after))

    async def delete_dlq(self, queue: str, sequence: int) -> None:
        """See :meth:`MQ.delete_dlq`."""
        await self._client._run(self._calls.delete_dlq(queue, sequence))

    async def purge_dlq(self, queue: str) -> int:
        """See :meth:`MQ.purge_dlq`."""
        return await self._client._run(self._calls.purge_dlq(queue))

    async def redrive(
        self, queue: str, max_messages: Optional[int] = None, sequences: Optional[Sequence[int]] = None
    ) -> int:
        """See :meth:`MQ.redrive`."""
        return await self._client._run(self._calls.redrive(queue, max_messages, sequences))
