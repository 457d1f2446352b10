"""Sluice and AsyncSluice: one access key on one account."""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Any, Optional, Type, TypeVar

import httpx

from ._base import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, BaseClient, Call
from ._mq import MQ, AsyncMQ
from ._queues import AsyncQueues, Queues
from ._topics import AsyncTopics, Topics

T = TypeVar("T")
S = TypeVar("S", bound="Sluice")
A = TypeVar("A", bound="AsyncSluice")

# Indirections so that tests can make the retry waits instant.
_sleep = time.sleep
_async_sleep = asyncio.sleep


class Sluice(BaseClient):
    """A client of the Sluice HTTP API, acting as one access key on one
    account. Safe to share between threads.

    ``key`` is the access key as ``ID:SECRET``; ``account`` defaults to
    ``000000000001`` (the account ``sluice dev`` uses). ``timeout`` bounds
    each request in seconds (a long-poll receive gets at least its wait plus
    10 s). ``max_retries`` is how often a request is retried after a 503 or
    429 (honouring Retry-After) or a connection error it may be retried for.
    ``http_client`` replaces the httpx.Client the client makes (and then is
    not closed by it).

    Use it as a context manager, or call :meth:`close`::

        with Sluice.from_env() as client:
            client.mq.send("orders", {"id": 1})
    """

    def __init__(
        self,
        endpoint: str,
        key: str,
        account: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(endpoint, key, account, timeout, max_retries)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64)
        )
        #: The data plane: send, receive, delete, DLQ...
        self.mq = MQ(self)
        #: Queue management.
        self.queues = Queues(self)
        #: Topics (fan-out) and publishing.
        self.topics = Topics(self)

    @classmethod
    def from_env(
        cls: Type[S],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: Optional[httpx.Client] = None,
    ) -> S:
        """A client from SLUICE_ENDPOINT, SLUICE_KEY (ID:SECRET) and
        SLUICE_ACCOUNT, falling back for each on the config file
        ``sluice login`` writes ($SLUICE_CONFIG, else
        $XDG_CONFIG_HOME/sluice/config.json or ~/.config/sluice/config.json)."""
        return cls(**cls._config_kwargs(), timeout=timeout, max_retries=max_retries, http_client=http_client)

    def close(self) -> None:
        """Closes the connections (unless the httpx client was passed in)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        args = self.request_args(call)
        attempt = 0
        while True:
            try:
                resp = self._http.request(**args)
            except httpx.TransportError as e:
                delay = self.retry_delay_after_error(call, e, attempt)
                if delay is None:
                    raise self.connection_error(call, e) from e
            else:
                delay = self.retry_delay_after_response(resp, attempt)
                if delay is None:
                    return self.result(call, resp)
            _sleep(delay)
            attempt += 1


class AsyncSluice(BaseClient):
    """The asyncio client: as :class:`Sluice`, with awaitable calls::

        async with AsyncSluice.from_env() as client:
            await client.mq.send("orders", {"id": 1})
    """

    def __init__(
        self,
        endpoint: str,
        key: str,
        account: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(endpoint, key, account, timeout, max_retries)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient(
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64)
        )
        #: The data plane: send, receive, delete, DLQ...
        self.mq = AsyncMQ(self)
        #: Queue management.
        self.queues = AsyncQueues(self)
        #: Topics (fan-out) and publishing.
        self.topics = AsyncTopics(self)

    @classmethod
    def from_env(
        cls: Type[A],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> A:
        """See :meth:`Sluice.from_env`."""
        return cls(**cls._config_kwargs(), timeout=timeout, max_retries=max_retries, http_client=http_client)

    async def aclose(self) -> None:
        """Closes the connections (unless the httpx client was passed in)."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self: A) -> A:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    async def _run(self, call: Call[T]) -> T:
        args = self.request_args(call)
        attempt = 0
        while True:
            try:
                resp = await self._http.request(**args)
            except httpx.TransportError as e:
                delay = self.retry_delay_after_error(call, e, attempt)
                if delay is None:
                    raise self.connection_error(call, e) from e
            else:
                delay = self.retry_delay_after_response(resp, attempt)
                if delay is None:
                    return self.result(call, resp)
            await _async_sleep(delay)
            attempt += 1


