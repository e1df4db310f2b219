"""``arcs dashboard``: the App's dashboard pages over the runs of this machine (issue #23).

The record of a command-line run is its trace file: ``arcs fix`` and ``arcs demo`` write one to
``$ARCS_HOME/traces``, ``arcs action`` copies its own there (``action-<id>.json``; a trace
written elsewhere with ``--trace-out`` is not seen). :func:`sync_traces` reads each new file into an attempt row of a SQLite
store with the App's schema (``$ARCS_HOME/dashboard.db``, derived: deleting it loses nothing), the
way the App records an attempt (:mod:`jobs.outcome`: the status of the verdict, cost, tokens,
tier, the stored :class:`~jobs.repair.report.RepairReport` and the trace path). So the pages, the
JSON API and the queries are the App's own (:mod:`bot.dashboard.pages`), not a second set over
JSON files, and the command line never opens a database on its way.

Every run belongs to the owner ``local``; a repository is the run's folder name (a second folder
of the same name gets a short hash of its path). There is no login: :class:`LocalViewer` sees
every local repository and administers nothing (no policy form). The server binds loopback only
(:func:`check_loopback`) and answers only requests addressed to a loopback name
(:class:`LoopbackHosts`: a web page that rebinds its own domain to 127.0.0.1 gets 400, not the
data), with the App's security headers (:class:`bot.web.headers.SecureStarlette`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.dashboard.viewer import Viewer
from bot.errors import UsageError
from bot.settings import Settings
from bot.store.store import Store

log = structlog.get_logger(__name__)

OWNER = "local"
"""The owner of every command-line run on the dashboard."""
STORE_FILE = "dashboard.db"
ACTION_PREFIX = "action-"
"""Traces ``arcs action`` copied into the traces folder (their trigger is ``action``)."""
MAX_TRACE_BYTES = 32 * 1024 * 1024
"""A trace larger than this is skipped (the attempt page reads no larger one either)."""
SYNC_EVERY_S = 2.0
"""Pages look for new trace files at most this often."""

__all__ = [
    "OWNER",
    "LocalViewer",
    "LoopbackHosts",
    "SyncResult",
    "check_loopback",
    "copy_action_trace",
    "create_local_app",
    "local_store",
    "sync_traces",
]


# --------------------------------------------------------------------------- binding


def check_loopback(host: str) -> str:
    """``host`` when it is a loopback address or ``localhost``; else :class:`UsageError` (the
    dashboard has no login: what it shows must not be reachable from another machine)."""
    name = host.strip().strip("[]")
    if name == "localhost":
        return name
    try:
        loopback = ipaddress.ip_address(name).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(
            f"dashboard: --host {host or repr(host)} is not a loopback address; the local dashboard has no login, so it "
            "listens on 127.0.0.1, ::1 or localhost only (`arcs serve` serves the App's dashboard, with login)"
        )
    return name


class LoopbackHosts:
    """Answers 400 to a request whose ``Host`` is not a loopback name (DNS rebinding: a page on
    another site that points its own name at 127.0.0.1 must not read the dashboard)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not _loopback_host(_header(scope, b"host")):
            response = PlainTextResponse(
                "Bad Host: the local dashboard answers 127.0.0.1 and localhost only", 400
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


def _loopback_host(value: str) -> bool:
    host = value.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else ""
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- recording runs


def local_store(settings: Settings) -> Store:
    """The dashboard's SQLite store under ``ARCS_HOME`` (made and migrated on first use)."""
    settings.home.mkdir(parents=True, exist_ok=True)
    return Store.open(f"sqlite:///{settings.home / STORE_FILE}")


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one :func:`sync_traces` did."""

    imported: int = 0
    skipped: tuple[str, ...] = ()
    """Files in the folder that are not readable ARCS traces (name: why)."""


def _status(verdict: str, fixed: bool) -> str:
    # The App's statuses for the same verdicts (jobs/outcome.py).
    if fixed:
        return "fixed"
    return {"interrupted": "skipped", "environment": "environment", "partial": "partial"}.get(
        verdict, "no_fix"
    )


def _when(text: str) -> dt.datetime | None:
    try:
        value = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _read_trace(path: Path) -> dict[str, Any]:
    """The trace JSON at ``path``: a regular file (never a link), at most :data:`MAX_TRACE_BYTES`."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("not a regular file")
    if info.st_size > MAX_TRACE_BYTES:
        raise ValueError(f"larger than {MAX_TRACE_BYTES // (1024 * 1024)} MiB")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != "arcs-trace":
        raise ValueError("not an ARCS trace")
    return data


def _repo_names(store: Store) -> dict[str, str]:
    """Folder path -> repository name of the runs already recorded."""
    from sqlalchemy import select

    from bot.store.models import Attempt

    names: dict[str, str] = {}
    with store.engine.connect() as conn:
        for repo, options in conn.execute(
            select(Attempt.repo, Attempt.options).where(Attempt.owner == OWNER).distinct()
        ):
            folder = options.get("path") if isinstance(options, dict) else None
            if isinstance(folder, str):
                names.setdefault(folder, str(repo))
    return names


def _repo_for(folder: str, names: dict[str, str]) -> str:
    if folder in names:
        return names[folder]
    base = Path(folder).name or "repository"
    repo = f"{OWNER}/{base}"
    if repo in names.values():
        repo = f"{OWNER}/{base}-{hashlib.sha256(folder.encode()).hexdigest()[:6]}"
    names[folder] = repo
    return repo


def _trigger(path: Path, folder: str, home: Path) -> str:
    if path.name.startswith(ACTION_PREFIX):
        return "action"
    return "demo" if Path(folder).is_relative_to(home / "demo") else "fix"


def _record(store: Store, path: Path, data: dict[str, Any], names: dict[str, str], home: Path) -> None:
    from jobs.repair.report import RepairReport
    from jobs.repair.trace_read import TraceDoc

    doc = TraceDoc.read(data)
    report = RepairReport.from_trace(doc, trace_path=str(path))
    raw_repo = data.get("repo")
    repo_info: dict[str, Any] = raw_repo if isinstance(raw_repo, dict) else {}
    folder = str(repo_info.get("path") or path.stem)
    trigger = _trigger(path, folder, home)
    finished = _when(doc.created) or dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
    started = finished - dt.timedelta(seconds=max(0.0, report.spend.wall_s))
    command = str(repo_info.get("test_command") or "")
    raw_task = data.get("task")
    task: dict[str, Any] = raw_task if isinstance(raw_task, dict) else {}
    # A local run repairs a failing command: `test` unless the run knew better (an issue, CI's class).
    failure_class = str(task.get("failure_class") or ("issue" if task.get("kind") == "issue" else "test"))
    commit = str(repo_info.get("commit") or "") or None
    attempt, created = store.claim_attempt(
        f"local:{doc.id or path.name}",
        repo=_repo_for(folder, names),
        owner=OWNER,
        trigger=trigger,
        status="running",
        created_at=started,
        options={"path": folder},
    )
    if not created:
        return
    status = _status(report.verdict, report.fixed)
    store.update_attempt(
        attempt.id,
        status=status,
        verdict=report.verdict,
        reason=(report.reason or report.verdict)[:2000],
        title=f"arcs {trigger} {folder}" + (f" ({command})" if command else ""),
        tier=report.tier or None,
        rounds=report.rounds,
        tokens=report.spend.tokens,
        cost_usd=round(report.spend.usd, 6),
        patch=report.patch or None,
        explanation=report.explanation or None,
        trace_path=str(path),
        trace=report.to_json(with_files=False),
        head_sha=commit,
        failure_class=failure_class[:32],
        started_at=started,
        finished_at=finished,
    )


def _candidates(folder: Path) -> list[Path]:
    try:
        entries = sorted(folder.iterdir())
    except FileNotFoundError:
        return []
    return [p for p in entries if p.suffix == ".json"]


def sync_traces(store: Store, folder: Path, *, home: Path) -> SyncResult:
    """Record every trace file in ``folder`` that the store does not hold yet (by trace id)."""
    from sqlalchemy import select

    from bot.store.models import Attempt

    with store.engine.connect() as conn:
        known = {
            str(path) for (path,) in conn.execute(select(Attempt.trace_path).where(Attempt.owner == OWNER))
        }
    names = _repo_names(store)
    imported = 0
    skipped: list[str] = []
    for path in _candidates(folder):
        if str(path) in known:
            continue
        try:
            data = _read_trace(path)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            skipped.append(f"{path.name}: {exc}")
            continue
        _record(store, path, data, names, home)
        imported += 1
    return SyncResult(imported, tuple(skipped))


def copy_action_trace(trace_path: str, traces_dir: Path) -> Path | None:
    """Copy the trace of an ``arcs action`` run into ``traces_dir`` as ``action-<name>``, so that
    ``arcs dashboard`` on this machine shows it (None: there was no trace)."""
    import shutil

    source = Path(trace_path) if trace_path else None
    if source is None or not source.is_file():
        return None
    traces_dir.mkdir(parents=True, exist_ok=True)
    target = traces_dir / f"{ACTION_PREFIX}{source.name}"
    shutil.copyfile(source, target)
    return target


# --------------------------------------------------------------------------- the app


class LocalViewer:
    """Sets ``request.state.viewer``: the machine's user, who sees every local repository and
    administers nothing; pages look for new traces first (at most every :data:`SYNC_EVERY_S`)."""

    def __init__(self, app: ASGIApp, *, store: Store, sync: Callable[[], object]) -> None:
        self.app = app
        self.store = store
        self.sync = sync
        self._lock = threading.Lock()
        self._synced_at = 0.0

    def _viewer(self) -> Viewer:
        from sqlalchemy import select

        from bot.store.models import Attempt

        with self.store.engine.connect() as conn:
            repos: Iterable[str] = [
                str(r) for (r,) in conn.execute(select(Attempt.repo).where(Attempt.owner == OWNER).distinct())
            ]
        # No run yet: no owner either, so the index page says how to make one.
        return Viewer.of("local", owners=[OWNER] if repos else [], repos=repos)

    def _refresh(self) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self._synced_at >= SYNC_EVERY_S:
                self._synced_at = now
                self.sync()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith("/static/"):
            from starlette.concurrency import run_in_threadpool

            await run_in_threadpool(self._refresh)
            state = scope.setdefault("state", {})
            state["viewer"] = await run_in_threadpool(self._viewer)
        await self.app(scope, receive, send)


def create_local_app(settings: Settings, store: Store, *, traces_dir: Path | None = None) -> Starlette:
    """The local dashboard: the App's pages and JSON API over ``store``, no login, loopback only."""
    from starlette.middleware import Middleware

    from bot.dashboard.api import api_routes
    from bot.dashboard.pages import local_page_routes
    from bot.dashboard.templating import STATIC_DIR
    from bot.web.headers import SecureStarlette

    folder = traces_dir or settings.traces_dir

    def sync() -> object:
        result = sync_traces(store, folder, home=settings.home)
        if result.imported:
            log.info("dashboard.synced", imported=result.imported)
        return result

    routes = [
        *api_routes(store, settings),
        *local_page_routes(store, settings),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    middleware = [Middleware(LoopbackHosts), Middleware(LocalViewer, store=store, sync=sync)]
    return SecureStarlette(routes=routes, middleware=middleware)
