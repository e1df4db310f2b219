"""The job summary links the ARCS App's attempt for the repaired commit when the App is connected
(its ``ARCS`` check run on the commit names the attempt) and ``dashboard-url`` says where its
dashboard is; otherwise no link, never a guessed one."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bot.action.dashboard import attempt_url, dashboard_url_problem
from bot.action.env import read_inputs
from bot.action.summary import ActionOutcome, job_summary
from tests.bot.action.conftest import ACTIONS_PERMISSIONS, REPO, World, event

DASHBOARD = "https://arcs.example.com/arcs"
WITH_CHECKS = {**ACTIONS_PERMISSIONS, "checks": "read"}


# --------------------------------------------------------------------------- pure


@pytest.mark.parametrize("url", ["https://arcs.example.com", "http://10.0.0.5:8000/arcs/", "https://a.b/c/d"])
def test_dashboard_urls_are_accepted_without_their_trailing_slash(url: str) -> None:
    problems: list[str] = []
    assert read_inputs({"INPUT_DASHBOARD_URL": url}, problems).dashboard_url == url.rstrip("/")
    assert problems == [] and dashboard_url_problem(url.rstrip("/")) is None


@pytest.mark.parametrize(
    "url",
    [
        "arcs.example.com",
        "ftp://x",
        "https://x/?a=1",
        "https://x/#f",
        "https://u:p@x",
        "https://x/a b",
        "javascript:alert(1)",
    ],
)
def test_anything_but_an_http_address_is_one_clear_problem(url: str) -> None:
    problems: list[str] = []
    assert read_inputs({"INPUT_DASHBOARD_URL": url}, problems).dashboard_url is None
    [problem] = problems
    assert problem.startswith("INPUT_DASHBOARD_URL (dashboard-url): expected the ARCS App's http(s) address")


def test_the_summary_links_the_attempt_only_when_there_is_one() -> None:
    link = attempt_url(DASHBOARD + "/", 17)
    assert link == "https://arcs.example.com/arcs/attempts/17"
    with_link = job_summary(ActionOutcome(verdict="fixed", reason="", fixed=True, dashboard_url=link))
    assert f"- **Dashboard**: [the ARCS App's attempt #17]({link})" in with_link
    without = job_summary(ActionOutcome(verdict="fixed", reason="", fixed=True))
    assert "Dashboard" not in without and "/attempts/" not in without


# --------------------------------------------------------------------------- end to end


def _check_run(world: World, sha: str, name: str, external_id: str) -> None:
    """A check run as the ARCS App opens one for its attempt (jobs.run.open_check_run)."""
    token = world.token({"metadata": "read", "checks": "write"})
    response = httpx.post(
        f"{world.double.api_url}/repos/{REPO}/check-runs",
        headers={"Authorization": f"token {token}", "Accept": "application/vnd.github+json"},
        json={"name": name, "head_sha": sha, "status": "in_progress", "external_id": external_id},
    )
    assert response.status_code == 201, response.text


def _run(world: World, permissions: dict[str, str], **inputs: str) -> tuple[str, str]:
    sha = world.double.branch_sha(REPO, "master")
    assert sha is not None
    payload = event("push")
    payload["after"] = sha
    payload["head_commit"]["id"] = sha
    environ = world.environ(
        event_name="push",
        payload=payload,
        sha=sha,
        ref=payload["ref"],
        workspace=world.workspace(sha),
        token=world.token(permissions),
        inputs=inputs,
    )
    outcome = world.run(environ)
    assert outcome.verdict == "fixed", outcome
    return Path(environ["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8"), outcome.dashboard_url


def test_a_connected_app_s_attempt_is_linked_from_the_summary(world: World) -> None:
    sha = world.double.branch_sha(REPO, "master")
    assert sha is not None
    _check_run(world, sha, "ARCS", "12")
    _check_run(world, sha, "CI", "99")  # another check: not an ARCS attempt
    _check_run(world, sha, "ARCS", "not-an-id")
    _check_run(world, sha, "ARCS", "17")  # the newest attempt
    summary, link = _run(world, WITH_CHECKS, INPUT_DASHBOARD_URL=DASHBOARD + "/")
    assert link == f"{DASHBOARD}/attempts/17"
    assert f"- **Dashboard**: [the ARCS App's attempt #17]({DASHBOARD}/attempts/17)" in summary
    assert world.double.requests_matching("GET", rf"/commits/{sha}/check-runs$")


def test_without_an_app_attempt_there_is_no_link(world: World) -> None:
    summary, link = _run(world, WITH_CHECKS, INPUT_DASHBOARD_URL=DASHBOARD)
    assert link == "" and "/attempts/" not in summary and "Dashboard" not in summary


def test_without_dashboard_url_nothing_is_looked_up(world: World) -> None:
    summary, link = _run(world, WITH_CHECKS)
    assert link == "" and "/attempts/" not in summary
    assert not world.double.requests_matching("GET", r"/check-runs$")


def test_a_token_without_checks_read_gets_a_clear_notice_and_no_link(world: World) -> None:
    sha = world.double.branch_sha(REPO, "master")
    assert sha is not None
    _check_run(world, sha, "ARCS", "12")
    summary, link = _run(world, dict(ACTIONS_PERMISSIONS), INPUT_DASHBOARD_URL=DASHBOARD)
    assert link == "" and "/attempts/" not in summary
    assert "dashboard-url: the ARCS App's attempt could not be looked up" in summary
    assert "checks: read" in summary
