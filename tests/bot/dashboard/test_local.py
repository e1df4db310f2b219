"""``arcs dashboard`` (issue #23): the App's pages over the runs of ``arcs fix``/``demo``/``action``
recorded under ``ARCS_HOME``, no login, loopback only.

The runs are real ``arcs fix`` runs (a scripted pytest in place of the sandbox) whose traces land
in ``$ARCS_HOME/traces``; the dashboard is the real app (``create_local_app``) behind Starlette's
test client. On the base commit the command does not exist and a command-line user saw only
"Dashboard login is not configured".
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from starlette.testclient import TestClient

import bot.dashboard.local as local
from bot.cli import commands, dashboard_cmd, fix_cmd, main
from bot.dashboard.local import (
    check_loopback,
    copy_action_trace,
    create_local_app,
    local_store,
    sync_traces,
)
from bot.errors import UsageError
from bot.settings import Settings
from bot.store.store import Store
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import fixture_repo, scripted_pytest

HEADERS = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    for register in (fix_cmd.register, dashboard_cmd.register):
        if register not in commands.REGISTRY:
            monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(local, "SYNC_EVERY_S", 0.0)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    import runners.factory

    runner = FakeRunner().on("pytest", scripted_pytest)
    monkeypatch.setattr(runners.factory, "make_runner", lambda **_kwargs: runner)


@pytest.fixture
def fixed_run(tmp_path: Path, settings: Settings, scripted: None, capsys: pytest.CaptureFixture[str]) -> Path:
    """One real ``arcs fix`` run of the boundary fixture (tier 0 fixes it); its trace path."""
    repo = fixture_repo(tmp_path, "boundary")
    assert main(["fix", str(repo), "--tier", "0", "--json"], settings=settings) == 0
    structlog.reset_defaults()  # the CLI logged to the captured stderr, which pytest closes
    return Path(json.loads(capsys.readouterr().out)["trace_path"])


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    opened = local_store(settings)
    yield opened
    opened.close()


@pytest.fixture
def client(settings: Settings, store: Store) -> Iterator[TestClient]:
    with TestClient(create_local_app(settings, store), base_url="http://127.0.0.1:8001") as test_client:
        yield test_client


# --------------------------------------------------------------------------- loopback only


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
def test_loopback_hosts_are_accepted(host: str) -> None:
    assert check_loopback(host) == host.strip("[]")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "arcs.example.com", ""])
def test_other_hosts_are_refused_with_one_line(
    host: str, settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UsageError, match=r"is not a loopback address; the local dashboard has no login"):
        check_loopback(host)
    monkeypatch.setattr(local, "local_store", _never)  # refused before anything is opened
    assert main(["dashboard", "--host", host], settings=settings) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"arcs: error: dashboard: --host {host or repr(host)} is not a loopback address;")


def _never(_settings: Settings) -> Store:
    raise AssertionError("the store was opened for a refused --host")


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8001", "192.168.1.20:8001", "127.0.0.1.evil.example"]
)
def test_a_request_for_another_host_name_is_refused(client: TestClient, host: str) -> None:
    # DNS rebinding: a page of another site whose name now resolves to 127.0.0.1.
    reply = client.get("/", headers={"Host": host})
    assert reply.status_code == 400 and "local" not in reply.text.split(":", 1)[0]
    assert client.get("/api/orgs", headers={"Host": host}).status_code == 400


@pytest.mark.parametrize("host", ["127.0.0.1:8001", "localhost:8001", "[::1]:8001", "localhost"])
def test_loopback_host_names_are_served(client: TestClient, host: str) -> None:
    assert client.get("/", headers={"Host": host}).status_code == 200


# --------------------------------------------------------------------------- the pages


def test_a_fix_run_is_shown_with_its_trace_patch_gates_and_cost(
    client: TestClient, fixed_run: Path, settings: Settings
) -> None:
    index = client.get("/")
    assert index.status_code == 200 and 'href="/orgs/local"' in index.text
    assert "this machine" in index.text and "Log out" not in index.text
    assert all(name in index.headers for name in HEADERS)

    org = client.get("/orgs/local")
    assert org.status_code == 200 and 'href="/orgs/local/repos/boundary"' in org.text
    assert "Policy" not in org.text and "csrf" not in org.text  # nothing to administer

    repo = client.get("/orgs/local/repos/boundary")
    assert repo.status_code == 200 and 'href="/attempts/1"' in repo.text and "on GitHub" not in repo.text

    attempt = client.get("/attempts/1")
    text = attempt.text
    assert attempt.status_code == 200
    assert "arcs fix " in text and "boundary" in text and "fixed" in text
    assert "age &gt;= ADULT_AGE" in text  # the patch
    assert "verification" in text and "regressions" in text  # the gates
    assert "$0.00" in text  # the cost
    assert "on GitHub" not in text and "Failing workflow run" not in text
    api = client.get("/api/attempts/1").json()
    assert api["status"] == "fixed" and api["trigger"] == "fix", api


def test_new_runs_appear_on_the_next_page_load(
    client: TestClient,
    fixed_run: Path,
    settings: Settings,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert 'href="/attempts/1"' in client.get("/orgs/local/repos/boundary").text
    other = fixture_repo(tmp_path / "second", "boundary")
    assert main(["fix", str(other), "--tier", "0"], settings=settings) == 0
    structlog.reset_defaults()
    capsys.readouterr()
    page = client.get("/orgs/local").text
    # A second folder of the same name is a repository of its own.
    assert 'href="/orgs/local/repos/boundary"' in page and 'href="/orgs/local/repos/boundary-' in page


def test_sync_is_idempotent_and_names_what_it_skips(
    fixed_run: Path, settings: Settings, store: Store
) -> None:
    folder = settings.traces_dir
    (folder / "notes.json").write_text('{"hello": 1}')
    (folder / "broken.json").write_text("{")
    (folder / "link.json").symlink_to(fixed_run)
    first = sync_traces(store, folder, home=settings.home)
    assert first.imported == 1
    assert sorted(line.split(":")[0] for line in first.skipped) == ["broken.json", "link.json", "notes.json"]
    assert "link.json: not a regular file" in first.skipped
    assert sync_traces(store, folder, home=settings.home).imported == 0
    assert len(store.attempts()) == 1


def test_demo_and_action_runs_are_told_apart(fixed_run: Path, settings: Settings, store: Store) -> None:
    data = json.loads(fixed_run.read_text())
    data["id"] = "demo-run"
    data["repo"]["path"] = str(settings.home / "demo" / "inventory")
    (settings.traces_dir / "demo-run.json").write_text(json.dumps(data))
    elsewhere = settings.home.parent / "runner-temp" / "trace-7301-1.json"
    elsewhere.parent.mkdir()
    data["id"] = "action-run"
    data["repo"]["path"] = "/home/runner/work/widgets/widgets"
    elsewhere.write_text(json.dumps(data))
    copied = copy_action_trace(str(elsewhere), settings.traces_dir)
    assert copied is not None and copied.name == "action-trace-7301-1.json"
    assert copy_action_trace("", settings.traces_dir) is None

    sync_traces(store, settings.traces_dir, home=settings.home)
    triggers = {a.repo: a.trigger for a in store.attempts()}
    assert triggers == {"local/boundary": "fix", "local/inventory": "demo", "local/widgets": "action"}


def test_without_runs_the_page_says_how_to_make_one(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "No run is recorded yet" in page.text and "arcs demo" in page.text


def test_the_store_is_derived_data(fixed_run: Path, settings: Settings) -> None:
    store = local_store(settings)
    sync_traces(store, settings.traces_dir, home=settings.home)
    store.close()
    (settings.home / local.STORE_FILE).unlink()
    again = local_store(settings)
    try:
        assert sync_traces(again, settings.traces_dir, home=settings.home).imported == 1
    finally:
        again.close()
    assert fixed_run.is_file()
    shutil.rmtree(settings.traces_dir)
