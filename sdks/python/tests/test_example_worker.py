"""examples/worker.py runs: it handles and deletes messages, and on SIGTERM
gives back what it has not handled and exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sluice import Sluice

from conftest import Server, wait_for

WORKER = Path(__file__).resolve().parents[1] / "examples" / "worker.py"


def test_example_worker(server: Server, client: Sluice, queue: str) -> None:
    client.mq.send(queue, [{"n": i} for i in range(3)])
    env = {**os.environ, "SLUICE_ENDPOINT": server.url, "SLUICE_KEY": server.key,
           "PYTHONPATH": str(WORKER.parents[1] / "src")}
    env.pop("SLUICE_ACCOUNT", None)
    proc = subprocess.Popen([sys.executable, str(WORKER), queue], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def drained() -> bool:
            stats = client.queues.get(queue).stats
            return stats is not None and stats.ready + stats.inflight == 0

        wait_for(drained)
        time.sleep(0.2)  # let it go back to its long poll
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        # Wakes the long poll; the stopping worker gives the message back.
        seq = client.mq.send(queue, {"n": "last"})
        out, _ = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    assert out.count("handling") == 3, out
    [left] = client.mq.peek(queue)
    assert left.sequence == seq and left.receive_count == 1
