"""Shared test fixtures: isolated settings, temporary git repositories."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import structlog
from sqlalchemy import create_engine, text

from bot.settings import Settings, load_settings

pytest_plugins = ["tests.fakes.github_fixtures"]

PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
CreateDb = Callable[[], str]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "ARCS Test",
    "GIT_AUTHOR_EMAIL": "test@arcs.invalid",
    "GIT_COMMITTER_NAME": "ARCS Test",
    "GIT_COMMITTER_EMAIL": "test@arcs.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity and no user/system config; return stdout."""
    env = {**os.environ, **GIT_ENV, "HOME": str(repo), "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write ``files`` (relative path -> content) under ``root``."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


@functools.cache
def sandbox_works() -> bool:
    """Whether bubblewrap can create a sandbox on this machine (checked once per test process)."""
    if shutil.which("bwrap") is None:
        return False
    from runners.sandbox import LocalSandbox, SandboxUnavailable

    try:
        LocalSandbox().check()
    except SandboxUnavailable:
        return False
    return True


MakeRepo = Callable[..., Path]


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    """Factory: ``make_repo({"a.py": "..."}, name="r")`` -> path of a git repo with one commit."""
    counter = iter(range(1_000_000))

    def _make(files: Mapping[str, str | bytes], *, name: str | None = None, commit: bool = True) -> Path:
        root = tmp_path / (name or f"repo{next(counter)}")
        root.mkdir(parents=True)
        git(root, "init", "-q")
        write_tree(root, files)
        if commit:
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "initial")
        return root

    return _make


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings isolated under a temporary ARCS_HOME with the fast lexical embedder."""
    return load_settings({"ARCS_HOME": str(tmp_path / "arcs-home"), "ARCS_EMBEDDER": "hash"})


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Never reach a model hub from a test.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    yield


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    # The CLI configures structlog to write to the (captured) stderr of the test that ran it;
    # pytest closes that stream afterwards, so later tests must not inherit the configuration.
    yield
    structlog.reset_defaults()


# --- the real PostgreSQL server (127.0.0.1:5432, trust) ---------------------------------------


def _pg_unreachable() -> str | None:
    engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        return " ".join(str(exc).split())[:200]
    finally:
        engine.dispose()
    return None


@pytest.fixture(scope="session")
def pg_create_db() -> Iterator[CreateDb]:
    """Creates throwaway databases on the local server; drops them all at the end."""
    reason = _pg_unreachable()
    if reason is not None:
        pytest.skip(f"PostgreSQL on 127.0.0.1:5432 is unreachable ({reason})")
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    created: list[str] = []

    def create() -> str:
        name = f"arcs_test_{uuid.uuid4().hex[:12]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        created.append(name)
        return f"postgresql://postgres@127.0.0.1:5432/{name}"

    yield create
    with admin.connect() as conn:
        for name in created:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@contextlib.contextmanager
def qdrant_folder_held(path: Path) -> Iterator[None]:
    """Another process holds the embedded Qdrant folder ``path`` (local mode admits one client)
    until the block ends."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from qdrant_client import QdrantClient; "
            f"c = QdrantClient(path={str(path)!r}); print('ready', flush=True); "
            "sys.stdin.read(); c.close()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
