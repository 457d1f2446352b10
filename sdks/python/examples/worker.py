"""A worker: long-polls a queue, handles each message, deletes it when done.

    export SLUICE_ENDPOINT=http://127.0.0.1:8080 SLUICE_KEY=sk_...:...
    python3 examples/worker.py orders

Delivery is at least once: a message whose handler fails (or whose worker
dies) is delivered again when its lease ends, up to the queue's
max_receive_count; after the last one it moves to the dead-letter queue.
Make handlers idempotent. SIGINT/SIGTERM stop the loop after the batch in
hand; messages not yet handled are given back at once.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from typing import Any

from sluice import Message, SluiceConnectionError, Sluice, StaleReceipt, Unavailable

log = logging.getLogger("worker")


def handle(body: Any) -> None:
    """Your work. Raise to have the message retried."""
    log.info("handling %r", body)


def retry_delay(msg: Message) -> int:
    """Seconds until a failed message is tried again: 2, 4, 8... up to 5 min."""
    return min(300, 1 << min(msg.receive_count, 9))


def main(queue: str) -> None:
    stopping = False

    def stop(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True
        log.info("stopping after this batch")

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)

    with Sluice.from_env() as client:
        while not stopping:
            try:
                # Waits up to 20 s for a first message; [] when none came.
                batch = client.mq.receive(queue, max_messages=10, wait_seconds=20)
            except (Unavailable, SluiceConnectionError) as e:
                # The client already retried with backoff; wait and go on.
                log.warning("receive failed: %s", e)
                time.sleep(5)
                continue
            for i, msg in enumerate(batch):
                if stopping:
                    # Give back what we will not handle, for another worker.
                    for rest in batch[i:]:
                        client.mq.change_visibility(queue, rest.sequence, 0, receipt=rest.receipt)
                    break
                try:
                    handle(msg.body)
                except Exception:
                    log.exception("message %d failed (delivery %d)", msg.sequence, msg.receive_count)
                    try:
                        client.mq.change_visibility(queue, msg.sequence, retry_delay(msg), receipt=msg.receipt)
                    except StaleReceipt:
                        pass  # the lease ended and someone else has it now
                    continue
                try:
                    # The receipt fences the delete: if our lease ended and
                    # the message went to another worker, we do not delete
                    # their copy.
                    client.mq.delete(queue, msg.sequence, receipt=msg.receipt)
                except StaleReceipt:
                    log.warning("message %d: lease lost before the delete; it will be handled again", msg.sequence)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if len(sys.argv) != 2:
        sys.exit("usage: worker.py QUEUE")
    main(sys.argv[1])
