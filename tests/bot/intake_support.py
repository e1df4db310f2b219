"""Helpers for the intake tests that run a real ``arcs serve``: a switchable TCP plug in front of a
dependency (forward, refuse, or accept and never answer), the server process, queue inspection."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import httpx

from tests.bot.test_serve import LAUNCHER, ROOT
from tests.bot.webhook_support import encode, headers

CODE_ROOT = Path(os.environ.get("ARCS_TEST_CODE_ROOT") or ROOT)
"""The code ``arcs serve`` runs (``ARCS_TEST_CODE_ROOT``: a worktree of older code, to show that
these tests fail there)."""
REDIS_URL = "redis://127.0.0.1:6379/11"
"""The Redis database these tests own (flushed by them)."""
SECRET = "intake-test-secret"

Mode = Literal["forward", "refuse", "hang"]


class TcpPlug:
    """A loopback port standing in for a dependency: ``forward`` to the real one, ``refuse``
    (closed: connection refused) or ``hang`` (accept, read, never answer)."""

    def __init__(self, target: tuple[str, int], mode: Mode = "forward") -> None:
        self.target = target
        self.port = _free_port()
        self._mode: Mode = "refuse"
        self._server: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self.set(mode)

    def set(self, mode: Mode) -> None:
        """Switch mode; existing connections are dropped."""
        with self._lock:
            for sock in self._open:
                _close(sock)
            self._open.clear()
            if self._server is not None:
                _close(self._server)
                self._server = None
            self._mode = mode
            if mode == "refuse":
                return
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", self.port))
            server.listen(64)
            self._server = server
        threading.Thread(target=self._accept, args=(server, mode), daemon=True).start()

    def close(self) -> None:
        """Stop listening and drop every connection."""
        self.set("refuse")

    def _accept(self, server: socket.socket, mode: Mode) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with self._lock:
                if self._server is not server:
                    _close(client)
                    return
                self._open.append(client)
            if mode == "hang":
                threading.Thread(target=_drain, args=(client,), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open.append(upstream)
            threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def _drain(sock: socket.socket) -> None:
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _close(sink)


class Serve:
    """``arcs serve`` in its own process group (so a test can SIGKILL all of it)."""

    def __init__(self, home: Path, env: Mapping[str, str], *, workers: int = 1) -> None:
        full = {
            **os.environ,
            "ARCS_HOME": str(home),
            "ARCS_WEBHOOK_SECRET": SECRET,
            "ARCS_EMBEDDER": "hash",
            "ARCS_LOG_FORMAT": "json",
            "ARCS_APP_ID": "1",
        }
        for key in ("ARCS_BROKER_URL", "ARCS_DATABASE_URL", "ARCS_SETUP_TOKEN", "ARCS_SESSION_SECRET"):
            full.pop(key, None)
        full.update(env)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                LAUNCHER,
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--workers",
                str(workers),
            ],
            cwd=CODE_ROOT,
            env=full,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.port: int | None = None
        self._started = threading.Event()
        self._workers = workers
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        started = 0
        for line in self.proc.stdout:
            self.lines.append(line)
            if match := re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", line):
                self.port = int(match.group(1))
            if "web_started" in line:
                started += 1
                if started >= self._workers:
                    self._started.set()
        self._started.set()

    def url(self, timeout: float = 60.0) -> str:
        if not self._started.wait(timeout) or self.port is None or self.proc.poll() is not None:
            raise AssertionError("arcs serve did not start:\n" + "".join(self.lines[-40:]))
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL the master and every worker at once (no shutdown hook runs)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def signed(stem: str, delivery: str) -> tuple[bytes, dict[str, str]]:
    """Body and headers of a signed delivery of a fixture (the fixture of the tree under test, so
    an older tree is fed the payloads it was written for)."""
    path = CODE_ROOT / "tests" / "fixtures" / "webhooks" / f"{stem}.json"
    body = encode(json.loads(path.read_text(encoding="utf-8")))
    return body, headers(stem.split(".", 1)[0], body, delivery=delivery, secret=SECRET)


def post(base: str, stem: str, delivery: str, *, timeout: float = 30.0) -> httpx.Response:
    """POST a signed fixture delivery."""
    body, hdrs = signed(stem, delivery)
    return httpx.post(f"{base}/webhooks/github", content=body, headers=hdrs, timeout=timeout)


def queued_jobs(delivery_id: str, url: str = REDIS_URL) -> list[dict[str, Any]]:
    """The jobs waiting in Redis (dramatiq's queues) that came from ``delivery_id``."""
    import redis

    client = redis.Redis.from_url(url)
    found: list[dict[str, Any]] = []
    try:
        for key in client.scan_iter("dramatiq:*.msgs"):
            for raw in client.hvals(key):
                message = json.loads(raw)
                job = message["args"][0]
                if job.get("context", {}).get("delivery_id") == delivery_id:
                    found.append(job)
    finally:
        client.close()
    return found


def flush_redis(url: str = REDIS_URL) -> None:
    """Empty the tests' Redis database."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    """Poll ``predicate`` until it is true (``AssertionError`` naming ``what`` otherwise)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
