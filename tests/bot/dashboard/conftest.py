"""Fixtures of the dashboard tests: seeded stores (SQLite and the real PostgreSQL), viewers, a client.

The pages and the API are tested behind a tiny middleware that sets ``request.state.viewer``
from :class:`ViewerHolder` (the real login is tested with the auth module).
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.dashboard.api import api_routes
from bot.dashboard.pages import page_routes
from bot.dashboard.templating import STATIC_DIR
from bot.dashboard.viewer import Viewer
from bot.settings import Settings, load_settings
from bot.store.store import Store
from tests.bot.dashboard.seed import OCTO, OCTO_REPOS, SeedInfo, seed_dashboard
from tests.conftest import CreateDb

NOW = dt.datetime(2025, 3, 13, 12, 0, tzinfo=dt.UTC)
"""A Thursday noon: the seed's weeks are then unambiguous."""
TABLES = "deliveries, attempts, pull_requests, events, policies, dashboard_sessions"

ALICE = replace(Viewer.of("alice", owners=[OCTO], repos=OCTO_REPOS, admin_of=[OCTO]), csrf="csrf-alice")
"""An admin of octo-org (and of nothing else)."""
BOB = replace(Viewer.of("bob", owners=[OCTO], repos=OCTO_REPOS), csrf="csrf-bob")
"""A member of octo-org who is not an admin."""


@pytest.fixture(scope="session")
def dash_pg_url(pg_create_db: CreateDb) -> str:
    """A throwaway PostgreSQL database for the dashboard tests (dropped at the end)."""
    return pg_create_db()


@dataclass
class Seeded:
    """A seeded store with its settings (traces under ``settings.traces_dir``)."""

    store: Store
    info: SeedInfo
    settings: Settings


def _settings(home: Path) -> Settings:
    return load_settings({"ARCS_HOME": str(home), "ARCS_EMBEDDER": "hash"})


@pytest.fixture(scope="session")
def seed_template(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """The seed on SQLite, made once per session; tests get copies of its database file."""
    home = tmp_path_factory.mktemp("dash-template")
    settings = _settings(home)
    store = Store.open(f"sqlite:///{home / 'arcs.db'}")
    info = seed_dashboard(store, now=NOW, traces_dir=settings.traces_dir)
    with store.engine.connect() as conn:
        # Everything into the main file, so a plain copy of it is the whole database.
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return Seeded(store, info, settings)


def _copy(template: Seeded, folder: Path) -> Seeded:
    """A store on a copy of the template's SQLite file (same seed info and traces)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template.settings.home / "arcs.db", folder / "arcs.db")
    store = Store.open(f"sqlite:///{folder / 'arcs.db'}", upgrade=False)
    return Seeded(store, template.info, template.settings)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, seed_template: Seeded
) -> Iterator[Seeded]:
    """The seed on each backend, shared by a module's read-only tests."""
    if request.param == "sqlite":
        made = _copy(seed_template, tmp_path_factory.mktemp("dash-sqlite"))
    else:
        url: str = request.getfixturevalue("dash_pg_url")
        store = Store.open(url)
        with store.engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))
        settings = _settings(tmp_path_factory.mktemp("dash-pg"))
        made = Seeded(store, seed_dashboard(store, now=NOW, traces_dir=settings.traces_dir), settings)
    try:
        yield made
    finally:
        made.store.close()


@pytest.fixture(scope="module")
def seeded_sqlite(tmp_path_factory: pytest.TempPathFactory, seed_template: Seeded) -> Iterator[Seeded]:
    """The seed on SQLite, shared by a module's read-only tests."""
    made = _copy(seed_template, tmp_path_factory.mktemp("dash-sqlite"))
    try:
        yield made
    finally:
        made.store.close()


@pytest.fixture
def fresh(tmp_path: Path, seed_template: Seeded) -> Iterator[Seeded]:
    """A seeded SQLite store of its own, for tests that write."""
    made = _copy(seed_template, tmp_path / "db")
    try:
        yield made
    finally:
        made.store.close()


class ViewerHolder:
    """Who the test middleware says is logged in (None: nobody)."""

    def __init__(self, viewer: Viewer | None = None) -> None:
        self.viewer = viewer


class _SetViewer:
    def __init__(self, app: ASGIApp, holder: ViewerHolder) -> None:
        self.app = app
        self.holder = holder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {})["viewer"] = self.holder.viewer
        await self.app(scope, receive, send)


@dataclass
class Client:
    """A test client of the dashboard's pages and API, and who it is logged in as."""

    http: TestClient
    who: ViewerHolder
    seeded: Seeded

    def as_(self, viewer: Viewer | None) -> Client:
        """Log in as ``viewer`` (None: log out)."""
        self.who.viewer = viewer
        return self


def make_client(seeded: Seeded, viewer: Viewer | None = ALICE, *, settings: Settings | None = None) -> Client:
    """The dashboard's routes (pages, API, /static) with the test viewer middleware."""
    cfg = settings or seeded.settings
    holder = ViewerHolder(viewer)
    app = Starlette(
        routes=[
            *api_routes(seeded.store, cfg, clock=lambda: NOW),
            *page_routes(seeded.store, cfg, clock=lambda: NOW),
            Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        middleware=[Middleware(_SetViewer, holder=holder)],
    )
    return Client(TestClient(app, follow_redirects=False), holder, seeded)


@pytest.fixture
def client(seeded_sqlite: Seeded) -> Client:
    """A client on the shared SQLite seed, logged in as :data:`ALICE`."""
    return make_client(seeded_sqlite)


@pytest.fixture
def fresh_client(fresh: Seeded) -> Client:
    """A client on a store of its own, logged in as :data:`ALICE`."""
    return make_client(fresh)
