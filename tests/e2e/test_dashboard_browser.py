"""The dashboard in a real browser: headless Chromium (Debian's ``/usr/bin/chromium``) driven by
Playwright, against ``arcs serve`` (gunicorn) with a seeded database and the strict GitHub double
as the OAuth provider.

A maintainer of ``octo-org`` logs in with GitHub, opens the org page, sees the charts and the
numbers the seed implies, clicks into an attempt and sees its trace; a user of another org gets
404 on those pages and API routes. Screenshots are saved as test artifacts (and, with
``ARCS_SCREENSHOTS_DIR`` set, there too: that is how ``docs/screenshots/`` is made).
"""

from __future__ import annotations

import datetime as dt
import os
import re
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

from bot.store.store import Store
from tests.bot.dashboard.seed import OCTO, OCTO_REPOS, OTHER, OTHER_REPOS, SeedInfo, seed_dashboard
from tests.fakes.github_double import (
    TEST_APP_ID,
    TEST_CLIENT_ID,
    TEST_CLIENT_SECRET,
    WITH_MEMBERS,
    GitHubDouble,
    generate_app_key,
)

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling Google on a closed network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MAINTAINER = "alice"
OUTSIDER = "mallory"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _skip_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (Debian: apt-get install chromium; scripts/bootstrap does it as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (it is in the dev extras)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Site:
    base_url: str
    double: GitHubDouble
    seed: SeedInfo
    artifacts: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("dashboard-browser")
    double = GitHubDouble(
        tmp / "github", app_id=TEST_APP_ID, app_public_key_pem=generate_app_key().public_pem
    )
    double.start()
    # GitHub's side: two orgs with the App installed; alice administers octo-org, mallory is
    # only in other-org.
    double.add_member(OCTO, MAINTAINER, role="admin")
    double.add_member(OTHER, OUTSIDER, role="member")
    for owner, repos in ((OCTO, OCTO_REPOS), (OTHER, OTHER_REPOS)):
        # members: read (app.yml) lets ARCS ask GitHub who administers the org.
        inst = double.add_installation(owner, permissions=WITH_MEMBERS)
        for full_name in repos:
            double.add_repo(full_name, {"README.md": "seeded\n"}, installation=inst)

    home = tmp / "home"
    db_url = f"sqlite:///{tmp / 'arcs.db'}"
    with Store.open(db_url) as store:
        seed = seed_dashboard(store, now=dt.datetime.now(dt.UTC), traces_dir=home / "traces")

    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    double.register_callback(f"{base_url}/login/callback")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARCS_", "ANTHROPIC_"))}
    env.update(
        {
            "ARCS_HOME": str(home),
            "ARCS_DATABASE_URL": db_url,
            "ARCS_PUBLIC_URL": base_url,
            "ARCS_GITHUB_WEB_URL": double.base_url,
            "ARCS_GITHUB_API_URL": double.api_url,
            "ARCS_APP_ID": TEST_APP_ID,
            "ARCS_CLIENT_ID": TEST_CLIENT_ID,
            "ARCS_CLIENT_SECRET": TEST_CLIENT_SECRET,
            "ARCS_SESSION_SECRET": "browser-test-session-secret-0123456789",
            "ARCS_WEBHOOK_SECRET": "browser-test-webhook-secret",
            "ARCS_EMBEDDER": "hash",
            "ARCS_LOG_FORMAT": "json",
        }
    )
    log = (tmp / "serve.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise AssertionError("arcs serve exited:\n" + (tmp / "serve.log").read_text()[-4000:])
            try:
                if httpx.get(f"{base_url}/healthz", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    "arcs serve did not answer /healthz:\n" + (tmp / "serve.log").read_text()[-4000:]
                )
            time.sleep(0.3)
        yield Site(base_url, double, seed, tmp / "artifacts")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
        double.stop()
    assert double.unexpected == [], "the GitHub double received unexpected requests"


def _screenshot(page: object, site: Site, name: str) -> Path:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    site.artifacts.mkdir(parents=True, exist_ok=True)
    path = site.artifacts / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000, "the screenshot is suspiciously small"
    extra = os.environ.get("ARCS_SCREENSHOTS_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)
    return path


def _money(value: float) -> str:
    return f"${value:,.2f}"


def test_a_maintainer_logs_in_sees_the_org_numbers_and_an_attempt_trace(site: Site) -> None:
    from playwright.sync_api import sync_playwright

    site.double.sign_in(MAINTAINER)
    expected = site.seed.org[OCTO]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            # Not logged in: the dashboard sends the browser through GitHub's OAuth and back.
            response = page.goto(f"{site.base_url}/orgs/{OCTO}")
            assert response is not None and response.ok, response and response.status
            assert page.url == f"{site.base_url}/orgs/{OCTO}", page.url
            assert page.inner_text(".who .login") == MAINTAINER

            # The charts are server-rendered SVG; the KPI tiles carry the seeded numbers.
            charts = page.locator("svg[role=img]")
            assert charts.count() >= 3
            body = page.inner_text("main")
            assert f"{expected.attempts}" in body
            assert _money(expected.total_usd) in body, (_money(expected.total_usd), body[:2000])
            tiles = page.locator("[data-kpi]")
            kpis = {
                tiles.nth(i).get_attribute("data-kpi"): tiles.nth(i).inner_text()
                for i in range(tiles.count())
            }
            assert re.search(rf"\b{expected.attempts}\b", kpis.get("attempts", "")), kpis
            assert re.search(rf"\b{expected.fixed}\b", kpis.get("fixed", "")), kpis
            assert re.search(rf"\b{expected.prs_merged}\b", kpis.get("prs_merged", "")), kpis
            assert _money(expected.total_usd) in kpis.get("total_usd", ""), kpis
            # Other orgs' repositories are not listed.
            assert OTHER not in body
            _screenshot(page, site, "dashboard-org")

            # Into one repository, then the attempt that carries a full trace.
            page.click(f"a[href='/orgs/{OCTO}/repos/{OCTO_REPOS[0].split('/')[1]}']")
            assert page.url.endswith(f"/orgs/{OCTO}/repos/{OCTO_REPOS[0].split('/')[1]}"), page.url
            _screenshot(page, site, "dashboard-repo")
            page.click(f"a[href='/attempts/{site.seed.traced_attempt_id}']")
            assert page.url.endswith(f"/attempts/{site.seed.traced_attempt_id}"), page.url
            trace_text = page.inner_text("main")
            assert "Round 1" in trace_text or "round 1" in trace_text.lower()
            assert page.locator("pre").count() >= 1  # candidate diffs
            page.locator("details").first.click()
            _screenshot(page, site, "dashboard-attempt")

            # alice administers octo-org: the kill switch is a real form (CSRF token included).
            page.goto(f"{site.base_url}/orgs/{OCTO}#policy")
            form = page.locator(f"form.policy[action='/orgs/{OCTO}/policy']").first
            form.locator("input[name=paused]").check()
            form.locator("input[name=monthly_usd]").fill("250")
            form.locator("button[type=submit]").click()
            page.wait_for_load_state()
            current = page.inner_text("dl.policy-current")
            assert "paused" in current and "$250.00" in current, current
            assert "by alice" in current, current
            _screenshot(page, site, "dashboard-policy")
        finally:
            browser.close()


def test_a_user_of_another_org_gets_404_on_pages_and_api(site: Site) -> None:
    from playwright.sync_api import sync_playwright

    site.double.sign_in(OUTSIDER)
    attempt = site.seed.traced_attempt_id
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            home = page.goto(f"{site.base_url}/")
            assert home is not None and home.ok
            assert page.inner_text(".who .login") == OUTSIDER
            assert OCTO not in page.inner_text("main")
            for path in (
                f"/orgs/{OCTO}",
                f"/orgs/{OCTO}/repos/{OCTO_REPOS[0].split('/')[1]}",
                f"/orgs/{OCTO}/events",
                f"/attempts/{attempt}",
                f"/api/orgs/{OCTO}",
                f"/api/orgs/{OCTO}/repos",
                f"/api/attempts/{attempt}",
            ):
                answer = page.goto(f"{site.base_url}{path}")
                assert answer is not None and answer.status == 404, (path, answer and answer.status)
            # Their own org is there.
            own = page.goto(f"{site.base_url}/api/orgs")
            assert own is not None and own.ok
            assert OTHER in own.text() and OCTO not in own.text()
        finally:
            browser.close()
