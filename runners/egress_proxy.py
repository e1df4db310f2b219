"""The host side of the setup network: an allow-listing HTTP(S) proxy on a Unix socket.

:class:`EgressProxy` serves one setup run (asyncio, on a thread of its own). It understands the two
forms package managers send to a proxy:

* ``CONNECT host:port HTTP/1.1``: checked, then tunnelled byte for byte (TLS is never opened);
* ``GET http://host[:port]/path HTTP/1.1`` (any method, absolute URI): checked, then forwarded
  with the path in origin form, hop-by-hop headers dropped and ``Connection: close``.

For each request it resolves the name itself, asks :meth:`runners.egress.EgressPolicy.check` about
every address, and connects to one of the addresses it checked (never a second lookup). Refusals
answer ``403`` with a reason phrase that says what was refused and how to allow it (pip prints the
phrase: ``Tunnel connection failed: 403 arcs: egress to ...``). Bounded: request head size and
read time, connect and resolve time, idle time of a tunnel, concurrent connections.

Runners do not use it directly: :mod:`runners.egress_session` starts one per setup run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import structlog

from runners.egress import (
    EgressPolicy,
    IPAddress,
    PolicyError,
    host_addresses,
    ip_or_none,
    split_authority,
)

log = structlog.get_logger(__name__)

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
"""``(host, port) -> addresses``; the default asks the system resolver (``getaddrinfo``)."""

_PHRASES = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
    }
)
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux


@dataclass(frozen=True, slots=True)
class ProxyLimits:
    """Bounds of one proxy (seconds and bytes)."""

    max_head_bytes: int = 16 * 1024
    head_timeout_s: float = 30.0
    resolve_timeout_s: float = 15.0
    connect_timeout_s: float = 15.0
    idle_timeout_s: float = 120.0
    """A tunnel with no byte either way for this long is closed."""
    max_connections: int = 128


@dataclass(frozen=True, slots=True)
class EgressEvent:
    """One decision of the proxy (also logged as ``egress.allowed`` / ``egress.refused``)."""

    allowed: bool
    method: str
    host: str
    port: int
    reason: str
    address: str = ""
    """The address connected to (allowed), when known."""
    hint: str = ""
    """For a refusal: how to allow it, if it can be."""

    def note(self) -> str:
        """One line for the setup step's output."""
        verdict = "allowed" if self.allowed else "refused"
        hint = f" ({self.hint})" if self.hint else ""
        return (
            f"arcs: setup network {verdict} {self.method} {_shown(self.host, self.port)}: {self.reason}{hint}"
        )


class BadRequest(ValueError):
    """A request the proxy cannot parse or will not forward (answered 400)."""


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """A parsed request head."""

    method: str
    host: str
    port: int
    target: str
    """Origin-form path for forwarded requests; ``host:port`` for CONNECT."""
    version: str
    headers: tuple[tuple[str, str], ...]

    @property
    def tunnel(self) -> bool:
        """True for CONNECT."""
        return self.method == "CONNECT"


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_request(head: bytes) -> ProxyRequest:
    """Parse a request head (through the blank line); :class:`BadRequest` says what is wrong."""
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest("the request head is not ASCII") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not all(parts):
        raise BadRequest("malformed request line")
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(f"unsupported protocol {version!r}")
    if not method.isascii() or not method.isalpha() or not method.isupper():
        raise BadRequest(f"malformed method {method!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or not set(name) <= _TOKEN:
            raise BadRequest("malformed header line")
        headers.append((name, value.strip()))
    try:
        if method == "CONNECT":
            host, port = split_authority(target, default_port=None)
            return ProxyRequest(method, host, port, _shown(host, port), version, tuple(headers))
        if not target.lower().startswith("http://"):
            raise BadRequest("a proxy request needs an absolute http:// URL (https goes through CONNECT)")
        url = urlsplit(target)
        if url.username is not None or url.password is not None or not url.hostname:
            raise BadRequest("malformed URL")
        netloc = url.netloc
        host, port = split_authority(netloc, default_port=80)
    except (PolicyError, ValueError) as exc:
        raise BadRequest(str(exc)) from None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    return ProxyRequest(method, host, port, path, version, tuple(headers))


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """The addresses ``getaddrinfo`` gives for ``host`` (TCP), in its order, without duplicates."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    out: list[IPAddress] = []
    for info in infos:
        ip = ip_or_none(str(info[4][0]))
        if ip is not None and ip not in out:
            out.append(ip)
    return out


class _Idle(Exception):
    pass


class EgressProxy:
    """An allow-listing proxy on a Unix socket, on its own thread (see the module docstring)."""

    def __init__(
        self,
        policy: EgressPolicy,
        socket_path: Path,
        *,
        limits: ProxyLimits | None = None,
        resolver: Resolver | None = None,
        local_addresses: Iterable[IPAddress] | None = None,
    ) -> None:
        """Nothing runs until :meth:`start`. ``local_addresses`` defaults to :func:`host_addresses`."""
        if len(os.fsencode(socket_path)) > _MAX_SOCKET_PATH:
            raise OSError(f"the egress socket path {socket_path} is too long for a Unix socket")
        self.policy = policy
        self.socket_path = Path(socket_path)
        self.limits = limits or ProxyLimits()
        self._resolve = resolver or system_resolver
        self._local = frozenset(host_addresses() if local_addresses is None else local_addresses)
        self._events: list[EgressEvent] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._active = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> EgressProxy:
        """Listen on :attr:`socket_path` (mode 0666: the sandbox user connects) and serve."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_unix_server(
                        self._handle, path=str(self.socket_path), limit=self.limits.max_head_bytes
                    )
                )
                self.socket_path.chmod(0o666)
            except BaseException as exc:  # reported to start()'s caller
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="arcs-egress-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self

    def close(self) -> None:
        """Stop listening, drop every open connection and end the thread (idempotent)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        with contextlib.suppress(RuntimeError, TimeoutError):
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._loop = self._thread = None

    def __enter__(self) -> EgressProxy:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def events(self) -> list[EgressEvent]:
        """Every decision so far, in order."""
        with self._lock:
            return list(self._events)

    @property
    def refusals(self) -> list[EgressEvent]:
        """The refused ones."""
        return [event for event in self.events if not event.allowed]

    def _record(self, event: EgressEvent) -> None:
        with self._lock:
            self._events.append(event)
        fields = {"method": event.method, "host": event.host, "port": event.port, "reason": event.reason}
        if event.allowed:
            log.info("egress.allowed", address=event.address, **fields)
        else:
            log.warning("egress.refused", **fields)

    # ------------------------------------------------------------------ one connection

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._active += 1
        try:
            if self._active > self.limits.max_connections:
                await _reply(writer, 503, "arcs: too many connections through the setup network proxy")
                return
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._active -= 1
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limits = self.limits
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), limits.head_timeout_s)
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():
                await _reply(writer, 400, "arcs: incomplete request head")
            return  # a probe that connected and left (the relay's start-up check)
        except asyncio.LimitOverrunError:
            await _reply(writer, 431, f"arcs: request head larger than {limits.max_head_bytes} bytes")
            return
        except TimeoutError:
            await _reply(writer, 408, f"arcs: no complete request head within {limits.head_timeout_s:g} s")
            return
        try:
            request = parse_request(head)
        except BadRequest as exc:
            await _reply(writer, 400, f"arcs: bad proxy request: {exc}")
            return
        literal = ip_or_none(request.host)
        addresses: list[IPAddress] = [literal] if literal is not None else []
        failure = ""
        if self.policy.entries_for(request.host, request.port) and literal is None:
            try:
                addresses = await asyncio.wait_for(
                    self._resolve(request.host, request.port), limits.resolve_timeout_s
                )
            except (OSError, TimeoutError, UnicodeError) as exc:
                failure = f"cannot resolve {request.host} ({exc or 'timeout'})"
        target = _shown(request.host, request.port)
        if failure:
            self._record(EgressEvent(False, request.method, request.host, request.port, failure))
            await _reply(writer, 502, f"arcs: egress to {target} failed: {failure}")
            return
        verdict = self.policy.check(request.host, request.port, addresses, self._local)
        if not verdict.allowed:
            self._record(
                EgressEvent(
                    False, request.method, request.host, request.port, verdict.reason, hint=verdict.hint
                )
            )
            hint = f"; {verdict.hint}" if verdict.hint else ""
            await _reply(
                writer,
                403,
                f"arcs: egress to {target} refused by the setup network policy ({verdict.reason}){hint}",
            )
            return
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        errors: list[str] = []
        for ip in addresses:
            try:
                upstream = await asyncio.wait_for(
                    asyncio.open_connection(str(ip), request.port), limits.connect_timeout_s
                )
            except (OSError, TimeoutError) as exc:
                errors.append(f"{ip}: {exc or 'timeout'}")
                continue
            self._record(
                EgressEvent(True, request.method, request.host, request.port, verdict.reason, str(ip))
            )
            break
        if upstream is None:
            reason = "; ".join(errors) or "no address"
            self._record(
                EgressEvent(False, request.method, request.host, request.port, f"unreachable: {reason}")
            )
            await _reply(writer, 502, f"arcs: cannot connect to {target} ({reason})")
            return
        up_reader, up_writer = upstream
        try:
            if request.tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(_forward_head(request))
            await self._pipe_both(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()

    async def _pipe_both(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        loop = asyncio.get_running_loop()
        last = [loop.time()]
        idle = self.limits.idle_timeout_s

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while True:
                try:
                    data = await asyncio.wait_for(src.read(65536), idle)
                except TimeoutError:
                    if loop.time() - last[0] >= idle:
                        raise _Idle from None
                    continue
                if not data:
                    if dst.can_write_eof():
                        with contextlib.suppress(OSError):
                            dst.write_eof()
                    return
                last[0] = loop.time()
                dst.write(data)
                await dst.drain()

        tasks = [
            asyncio.ensure_future(pipe(reader, up_writer)),
            asyncio.ensure_future(pipe(up_reader, writer)),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _forward_head(request: ProxyRequest) -> bytes:
    """The request head for the origin server: origin-form target, no hop-by-hop headers."""
    named = {
        token.strip().lower()
        for name, value in request.headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    lines = [f"{request.method} {request.target} {request.version}"]
    has_host = False
    for name, value in request.headers:
        lower = name.lower()
        if lower in _HOP_BY_HOP or lower in named:
            continue
        has_host = has_host or lower == "host"
        lines.append(f"{name}: {value}")
    if not has_host:
        lines.append(f"Host: {_shown(request.host, request.port) if request.port != 80 else request.host}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


async def _reply(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    """A complete response; a 403's reason phrase carries ``message`` (clients print the phrase)."""
    line = " ".join(message.split())
    phrase = line if status == 403 else _PHRASES.get(status, "Error")
    body = (line + "\n").encode("utf-8", errors="replace")
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode("latin-1", errors="replace") + body)
    with contextlib.suppress(OSError):
        await writer.drain()
