"""Runs a real `sluice serve` for the session: a fresh schema on the
Postgres at TEST_DATABASE_URL, migrated, an admin key made with
`sluice keys create --database`; stopped and the schema dropped at the end."""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from sluice import Sluice

REPO = Path(__file__).resolve().parents[3]
LOCAL_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"


@dataclass(frozen=True)
class Server:
    url: str
    key: str
    schema: str
    database_url: str


def _binary() -> str:
    path = os.environ.get("SLUICE_BIN") or str(REPO / "bin" / "sluice")
    if not os.path.exists(path):
        go = shutil.which("go")
        if go is None:
            pytest.exit(f"no sluice binary at {path} and no go to build it: run `go build -o bin/sluice ./cmd/sluice`", 2)
        subprocess.run([go, "build", "-o", path, "./cmd/sluice"], cwd=REPO, check=True)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _psql() -> Optional[str]:
    found = shutil.which("psql")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
    return candidates[-1] if candidates else None


def _drop_schema(database_url: str, schema: str) -> None:
    psql = _psql()
    if psql is None:
        print(f"\nconftest: no psql to drop schema {schema}; drop it by hand")
        return
    r = subprocess.run(
        [psql, database_url, "-v", "ON_ERROR_STOP=1", "-qc", f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'],
        capture_output=True,
        text=True,
        env={**os.environ, "PGCLIENTENCODING": "UTF8"},
    )
    if r.returncode != 0:
        print(f"\nconftest: drop schema {schema}: {r.stderr.strip()}")


def _wait_ready(proc: subprocess.Popen, url: str, log: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sluice serve exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"sluice serve not ready at {url} after 30 s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    database_url = os.environ.get("TEST_DATABASE_URL") or LOCAL_DATABASE_URL
    binary = _binary()
    schema = "pysdk_" + secrets.token_hex(6)
    env = {**os.environ, "DATABASE_URL": database_url, "SLUICE_SCHEMA": schema}
    for name in ("SLUICE_ENDPOINT", "SLUICE_KEY", "SLUICE_ACCOUNT", "SLUICE_CONFIG", "SLUICE_ADDR"):
        env.pop(name, None)
    logdir = Path(tempfile.mkdtemp(prefix="sluice-pysdk-"))
    log = logdir / "serve.log"
    proc: Optional[subprocess.Popen] = None
    try:
        with open(log, "wb") as out:
            for _ in range(3):  # another process may take the port first
                port = _free_port()
                url = f"http://127.0.0.1:{port}"
                proc = subprocess.Popen(
                    [binary, "serve", "--addr", f"127.0.0.1:{port}", "--migrate", "--schema", schema,
                     "--log-level", "warn", "--grace", "2s"],
                    env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                )
                try:
                    _wait_ready(proc, url, log, time.monotonic() + 30)
                    break
                except RuntimeError:
                    if proc.poll() is None or "address already in use" not in log.read_text():
                        raise
            else:
                raise RuntimeError(f"sluice serve could not listen:\n{log.read_text()}")
        r = subprocess.run(
            [binary, "keys", "create", "--database", "--schema", schema, "--scope", "mq:*",
             "--description", "python sdk tests", "--json"],
            env=env, capture_output=True, text=True, check=True,
        )
        k = json.loads(r.stdout)
        yield Server(url=url, key=f"{k['id']}:{k['secret']}", schema=schema, database_url=database_url)
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc is not None and proc.returncode not in (0, -signal.SIGTERM):
            print(f"\nconftest: sluice serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        _drop_schema(database_url, schema)
        shutil.rmtree(logdir, ignore_errors=True)


@pytest.fixture
def client(server: Server) -> Iterator[Sluice]:
    with Sluice(endpoint=server.url, key=server.key) as c:
        yield c


def new_name(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def queue(client: Sluice) -> Iterator[str]:
    """A fresh queue, deleted afterwards."""
    name = new_name()
    client.queues.create(name)
    yield name
    try:
        client.queues.delete(name)
    except Exception:
        pass


def wait_for(predicate, timeout: float = 10.0, every: float = 0.1):
    """Polls predicate until it returns something truthy; returns it."""
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(every)


__all__: List[str] = ["Server", "new_name", "wait_for"]
