"""The repository dashboard issue end to end (issue #28, item 5): ``dashboard_issue: true`` in the
default branch's ``.arcs.yml``; a maintainer's ``/arcs fix`` (the pinned ``issue_comment.created``
payload, signed, through the webhook endpoint) runs and publishes on the strict GitHub double; the
``refresh_dashboard`` job it schedules opens the one dashboard issue, later ones edit it in place.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from jobs import pipeline
from jobs.messages import Envelope, RefreshDashboard
from jobs.render_dashboard import DASHBOARD_TITLE, rendered_at
from jobs.repair.flaky import SANDBOX_ENV, TestRun
from tests.bot import checks_world
from tests.bot.checks_world import REPO, WRITER, World

world = checks_world.world  # the fixture

ON = "dashboard_issue: true\n"


def configure(world: World, text: str) -> None:
    world.double.commit(REPO, {".arcs.yml": text}, branch="main", message="configure ARCS")


def later(world: World) -> list[tuple[Envelope, dt.timedelta]]:
    """Delayed jobs (the dashboard's refresh, the checks probe) are kept here instead of a broker."""
    kept: list[tuple[Envelope, dt.timedelta]] = []
    world.deps.enqueue_later = lambda job, delay: kept.append((job, delay))
    return kept


def fix(world: World) -> None:
    world.post("issue_comment", world.pr_comment("/arcs fix", user=WRITER))
    assert world.drain() == [("handle_command", "fixed"), ("publish_result", "published")]


def refresh(world: World, job: Envelope | None = None) -> str:
    job = job or Envelope.of(RefreshDashboard(repo=REPO, installation_id=world.installation))
    return pipeline.dispatch(world.deps, job)


def dashboards(world: World) -> list[dict[str, Any]]:
    return [
        i
        for i in world.double.repos[REPO].issues.values()
        if "pull_request" not in i and i["title"] == DASHBOARD_TITLE
    ]


def test_an_attempt_schedules_a_refresh_that_opens_the_one_dashboard(world: World) -> None:
    configure(world, ON)
    kept = later(world)
    fix(world)
    # One when the attempt ended, one when its pull request was published.
    (ended, delay), (published, _) = [(j, d) for j, d in kept if j.actor == "refresh_dashboard"]
    assert delay == dt.timedelta(seconds=60)
    assert refresh(world, published) == "opened"
    (issue,) = dashboards(world)
    assert issue["user"]["login"] == world.double.bot_login and issue["state"] == "open"
    body = issue["body"]
    (attempt,) = world.store.attempts(repo=REPO)
    assert f"- #{attempt.pr_number} (attempt #{attempt.id}, `{attempt.branch}`)" in body
    assert "No attempt is queued or running." in body
    assert f"- `{REPO}`: $0.05 spent or reserved in" in body  # the fake repair's spend
    assert "/orgs/acme/repos/widgets" in body  # the web dashboard's page

    # The earlier change (a burst): the issue was rendered after it, nothing is written.
    writes = len(world.writes())
    assert refresh(world, ended) == "current"
    assert refresh(world, published) == "current"
    assert len(world.writes()) == writes

    # The pull request is merged: the next refresh edits the same issue, which no longer lists it.
    assert attempt.pr_number is not None
    world.store.set_pr_state(REPO, attempt.pr_number, "merged")
    assert refresh(world) == "updated"
    (edited,) = dashboards(world)
    assert edited["number"] == issue["number"] and "No ARCS pull request is open." in edited["body"]


def test_later_attempts_edit_the_same_issue_even_closed_or_rewritten(world: World) -> None:
    configure(world, ON)
    assert refresh(world) == "opened"
    (issue,) = dashboards(world)
    number = issue["number"]
    # A person closes it and rewrites its body (the marker gone): ARCS finds it by its title,
    # edits it in place and leaves it closed.
    issue.update(state="closed", body="we do not need this")
    assert refresh(world) == "updated"
    (again,) = dashboards(world)
    assert again["number"] == number and again["state"] == "closed"
    assert rendered_at(again["body"]) is not None


def test_known_flaky_tests_come_from_the_test_history_with_their_evidence(world: World) -> None:
    configure(world, ON)
    world.deps.history = world.store  # as the worker wires it
    flaky, broken = "tests/test_app.py::test_value", "tests/test_app.py::test_broken"
    sha = "a1b2c3d4e5f6"
    runs = [TestRun(flaky, sha, "ci:CI", "ci", True, run_key="ci:555:1")]
    runs += [
        TestRun(flaky, sha, SANDBOX_ENV, "reproduction", n == 0, run_key=f"attempt:1:r:{n}") for n in range(4)
    ]
    runs += [
        TestRun(broken, sha, SANDBOX_ENV, "reproduction", True, run_key=f"attempt:1:r:{n}") for n in range(3)
    ]
    assert world.store.record_test_runs(REPO, runs) == 8
    assert refresh(world) == "opened"
    (issue,) = dashboards(world)
    row = next(line for line in issue["body"].splitlines() if flaky in line)
    # failed in CI and in the sandbox's baseline, passed the three re-runs; the rate is the
    # sandbox's, where it both failed and passed at one commit (1 of 4)
    assert row.startswith(f"| `{flaky}` | 25% | 5 (2 failed) | ")
    assert "| failed 2 of 5 runs at a1b2c3d, passed here 3 of 4 in ARCS' sandbox, first seen failing" in row
    assert broken not in issue["body"]  # failing every time is a break, not a flake


def test_without_a_history_no_test_is_known_flaky(world: World) -> None:
    configure(world, ON)
    world.store.record_test_runs(
        REPO,
        [TestRun("t::x", "abc", SANDBOX_ENV, "reproduction", n == 0, run_key=f"k:{n}") for n in range(2)],
    )
    assert refresh(world) == "opened"  # deps.history is None: nothing recorded is read
    (issue,) = dashboards(world)
    assert "## Known flaky tests\n\nNone known." in issue["body"]


def test_a_persons_issue_quoting_the_marker_is_never_edited(world: World) -> None:
    configure(world, ON)
    forged = world.double.add_issue(
        REPO, DASHBOARD_TITLE, "<!-- arcs:dashboard-issue rendered=2099-01-01T00:00:00Z -->", user=WRITER
    )
    assert refresh(world) == "opened"
    assert (
        world.double.repos[REPO].issues[forged]["body"].startswith("<!-- arcs:dashboard-issue rendered=2099")
    )
    ours = [i for i in dashboards(world) if i["user"]["login"] == world.double.bot_login]
    assert len(ours) == 1 and ours[0]["number"] != forged


def test_paused_and_waiting_items_and_the_monthly_cap_are_shown(world: World) -> None:
    configure(world, ON)
    world.store.set_policy("acme", paused=True, monthly_usd=10.0, updated_by="alice")
    world.store.claim_attempt("waiting-1", repo=REPO, trigger="issue", issue_number=9, status="queued")
    world.store.defer_attempt(world.store.get_attempt_by_key("waiting-1").id)  # type: ignore[union-attr]
    assert refresh(world) == "opened"
    (issue,) = dashboards(world)
    body = issue["body"]
    assert "- ARCS is paused for `acme` by an org admin" in body
    assert "waits for the quiet hours to end" in body
    assert "- `acme`: $0.00 of $10.00 (0%) in" in body


def test_without_the_key_nothing_is_scheduled_or_written(world: World) -> None:
    kept = later(world)
    fix(world)
    assert [j for j, _ in kept if j.actor == "refresh_dashboard"] == []  # .arcs.yml did not ask
    writes = len(world.writes())
    assert refresh(world) == "disabled"  # a job sent anyway finds the key off
    assert len(world.writes()) == writes and dashboards(world) == []
