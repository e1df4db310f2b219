"""``arcs dashboard`` in a real browser (issue #23): headless Chromium (Debian's
``/usr/bin/chromium``) driven by Playwright, against the real command in a subprocess, over the
traces of real ``arcs fix`` runs (a scripted pytest in place of the sandbox) in its ``ARCS_HOME``.

No login: the browser goes from the index to ``local``, into the repository, into the attempt and
sees its patch, gates and cost. ``--host 0.0.0.0`` is refused before anything listens.
Screenshots are saved as test artifacts (and, with ``ARCS_SCREENSHOTS_DIR`` set, there too).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import structlog

from bot.cli import commands, fix_cmd, main
from bot.settings import load_settings
from runners.fake import FakeRunner, fake_execution
from tests.bot.test_cli_fix import fixture_repo, scripted_pytest
from tests.e2e.test_dashboard_browser import CHROMIUM, CHROMIUM_ARGS, _skip_reason

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Local:
    base_url: str
    home: Path
    artifacts: Path


def _record_runs(home: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two real ``arcs fix`` runs of the boundary fixture: one fixed, one with a test command
    that does not exist (``environment``)."""
    import runners.factory

    runner = FakeRunner().on("pytest", scripted_pytest)
    monkeypatch.setattr(runners.factory, "make_runner", lambda **_kwargs: runner)
    if fix_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, fix_cmd.register])
    settings = load_settings({"ARCS_HOME": str(home), "ARCS_EMBEDDER": "hash"})
    repo = fixture_repo(tmp, "boundary")
    assert main(["fix", str(repo), "--tier", "0"], settings=settings) == 0
    runner.on("missing-runner", fake_execution(exit_code=127, stderr="sh: 1: missing-runner: not found\n"))
    main(["fix", str(repo), "--tier", "0", "--test", "missing-runner -q"], settings=settings)
    structlog.reset_defaults()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Local]:
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("local-dashboard")
    home = tmp / "home"
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL"):
            monkeypatch.delenv(name, raising=False)
        _record_runs(home, tmp, monkeypatch)
    assert len(list((home / "traces").glob("*.json"))) == 2

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARCS_", "ANTHROPIC_"))}
    env.update({"ARCS_HOME": str(home), "ARCS_EMBEDDER": "hash", "ARCS_LOG_FORMAT": "json"})
    log = (tmp / "dashboard.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "dashboard", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise AssertionError("arcs dashboard exited:\n" + (tmp / "dashboard.log").read_text()[-4000:])
            try:
                if httpx.get(f"{base_url}/", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("arcs dashboard did not answer:\n" + (tmp / "dashboard.log").read_text())
            time.sleep(0.3)
        yield Local(base_url, home, tmp / "artifacts")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def _screenshot(page: object, local: Local, name: str) -> None:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    local.artifacts.mkdir(parents=True, exist_ok=True)
    path = local.artifacts / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000, "the screenshot is suspiciously small"
    extra = os.environ.get("ARCS_SCREENSHOTS_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)


def test_a_command_line_user_browses_their_runs_without_login(local: Local) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            response = page.goto(f"{local.base_url}/")
            assert response is not None and response.ok and page.url == f"{local.base_url}/"
            assert page.inner_text(".who .login") == "this machine"

            page.click("a[href='/orgs/local']")
            body = page.inner_text("main")
            assert "boundary" in body and page.locator("svg[role=img]").count() >= 3
            tiles = page.locator("[data-kpi]")
            kpis = {
                tiles.nth(i).get_attribute("data-kpi"): tiles.nth(i).inner_text()
                for i in range(tiles.count())
            }
            assert "2" in kpis.get("attempts", "") and "1" in kpis.get("fixed", ""), kpis
            _screenshot(page, local, "local-dashboard-org")

            page.click("a[href='/orgs/local/repos/boundary']")
            rows = page.inner_text("main")
            assert "environment" in rows and "fixed" in rows
            _screenshot(page, local, "local-dashboard-repo")

            fixed = page.locator("tr", has_text="fixed").locator("a[href^='/attempts/']").first
            fixed.click()
            text = page.inner_text("main")
            assert "arcs fix" in text and "return age >= ADULT_AGE" in text, text[:2000]
            assert "verification" in text and "$0.00" in text and "on GitHub" not in text
            _screenshot(page, local, "local-dashboard-attempt")
        finally:
            browser.close()


def test_a_host_that_is_not_loopback_is_refused(local: Local) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARCS_", "ANTHROPIC_"))}
    env.update({"ARCS_HOME": str(local.home), "ARCS_EMBEDDER": "hash"})
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "dashboard", "--host", "0.0.0.0", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("arcs: error: dashboard: --host 0.0.0.0 is not a loopback address;")
    assert json.loads(done.stdout)["exit_code"] == 2
