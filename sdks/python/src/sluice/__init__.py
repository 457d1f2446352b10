"""Python SDK of Sluice, the Postgres queue and WebAssembly function runtime.

    from sluice import Sluice

    with Sluice.from_env() as client:
        client.mq.send("orders", {"id": 1})
        for msg in client.mq.receive("orders", max_messages=10, wait_seconds=20):
            handle(msg.body)
            client.mq.delete("orders", msg.sequence, msg.receipt)

See README.md; the HTTP API is docs/http-api.md of the Sluice repository.
"""

from ._base import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ._client import AsyncSluice, Sluice
from ._config import DEFAULT_ACCOUNT, Config, config_path, load_config, read_config
from ._errors import (
    BodyTooLarge,
    ConfigurationError,
    Conflict,
    Forbidden,
    InternalError,
    InvalidArgument,
    InvalidJSON,
    InvalidName,
    InvalidRequest,
    InvalidSignature,
    MessageNotFound,
    MessageTooLarge,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    QueueExists,
    QueueInUse,
    QueueNotFound,
    RateLimited,
    ServerError,
    SluiceConnectionError,
    SluiceError,
    SluiceTimeoutError,
    StaleReceipt,
    TopicExists,
    TopicNotFound,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from ._models import DeadLetter, Message, MinuteStats, Page, Queue, QueueStats, Subscription, Topic
from ._mq import MQ, AsyncMQ, Body
from ._queues import AsyncQueues, Queues
from ._topics import AsyncTopics, Topics
from ._version import __version__

__all__ = [
    "AsyncMQ",
    "AsyncQueues",
    "AsyncTopics",
    "AsyncSluice",
    "Body",
    "BodyTooLarge",
    "Config",
    "ConfigurationError",
    "Conflict",
    "DEFAULT_ACCOUNT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "DeadLetter",
    "Forbidden",
    "InternalError",
    "InvalidArgument",
    "InvalidJSON",
    "InvalidName",
    "InvalidRequest",
    "InvalidSignature",
    "MQ",
    "Message",
    "MessageNotFound",
    "MessageTooLarge",
    "MethodNotAllowed",
    "MinuteStats",
    "NotFound",
    "Page",
    "PayloadTooLarge",
    "Queue",
    "QueueExists",
    "QueueInUse",
    "QueueNotFound",
    "QueueStats",
    "Queues",
    "RateLimited",
    "ServerError",
    "Sluice",
    "SluiceConnectionError",
    "SluiceError",
    "SluiceTimeoutError",
    "StaleReceipt",
    "Subscription",
    "Topic",
    "TopicExists",
    "TopicNotFound",
    "Topics",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "__version__",
    "config_path",
    "load_config",
    "read_config",
]
