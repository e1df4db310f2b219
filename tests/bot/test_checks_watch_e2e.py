"""Never stall silently (issue #28, item 4): after ARCS pushed a fix, the checks on its pull
request's head are said in that pull request's status comment, edited in place.

Deliveries are the pinned ``@octokit/webhooks-examples`` ``workflow_run`` and ``check_suite``
payloads pointed at ARCS's branch on the strict GitHub double, posted to the real webhook
endpoint; the jobs run through the pipeline with the worker's GitHub wiring.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from jobs import pipeline
from jobs.checks_watch import APPROVAL_SETTINGS, checks_marker, schedule_probe
from jobs.messages import Envelope, WatchChecks
from tests.bot import checks_world
from tests.bot.checks_world import REPO, WRITER, World

world = checks_world.world  # the fixture


def _fixed(w: World) -> dict[str, Any]:
    """A maintainer's `/arcs fix` that ARCS fixes: its pull request (on an ``arcs/`` branch)."""
    w.post("issue_comment", w.pr_comment("/arcs fix", user=WRITER))
    assert w.drain() == [("handle_command", "fixed"), ("publish_result", "published")]
    (opened,) = [p for p in w.double.open_pulls(REPO) if p["number"] != w.pull]
    assert opened["head"]["ref"].startswith("arcs/")
    return opened


def _run(w: World, pull: dict[str, Any], conclusion: str | None, **extra: Any) -> dict[str, Any]:
    """A ``workflow_run`` on the pull request's head (``action`` completed unless given)."""
    payload = w.repo_payload(checks_world.published("workflow_run", "completed"), "octocat")
    run = payload["workflow_run"]
    run.update(
        head_branch=pull["head"]["ref"],
        head_sha=pull["head"]["sha"],
        status="completed",
        conclusion=conclusion,
        pull_requests=[{"number": pull["number"]}],
        html_url=f"https://github.com/{REPO}/actions/runs/{run['id']}",
    )
    run["head_repository"]["id"] = w.double.repos[REPO].id
    for key, value in extra.items():
        if key == "action":
            payload["action"] = value
        else:
            run[key] = value
    return payload


def _status(w: World, number: int) -> list[str]:
    return [str(c["body"]) for c in w.double.comments_on(REPO, number)]


def test_a_run_held_for_approval_is_said_then_replaced_by_the_result(world: World) -> None:
    pull = _fixed(world)
    number = pull["number"]
    assert _status(world, number) == []
    answer = world.post("workflow_run", _run(world, pull, "action_required"))
    assert answer.status_code == 202 and answer.json()["status"] == "queued", answer.text
    assert world.drain() == [("watch_checks", "waiting")]
    (body,) = _status(world, number)
    assert f"`{pull['head']['sha'][:7]}` wait for approval" in body
    assert '"Approve and run"' in body and "/actions/runs/" in body
    assert APPROVAL_SETTINGS in body and checks_marker(number) in body
    # A second workflow held the same way edits the same comment (never one per event).
    world.post("workflow_run", _run(world, pull, "action_required", id=777, name="Lint"))
    assert world.drain() == [("watch_checks", "waiting")]
    (body,) = _status(world, number)
    assert "Lint" in body
    # Approved, the run completes: the note is replaced by the result.
    world.post("workflow_run", _run(world, pull, "success"))
    assert world.drain() == [("watch_checks", "passed")]
    (body,) = _status(world, number)
    assert body.startswith("✅ Checks passed on") and "approval" not in body


def test_one_workflows_success_never_hides_another_held_for_approval(world: World) -> None:
    pull = _fixed(world)
    held = world.double.add_workflow_run(
        REPO, head_sha=pull["head"]["sha"], head_branch=pull["head"]["ref"], jobs=[], name="Lint"
    )
    held.conclusion = "action_required"
    world.post("workflow_run", _run(world, pull, "success"))
    assert world.drain() == [("watch_checks", "waiting")]
    (body,) = _status(world, pull["number"])
    assert "Lint" in body and f"/actions/runs/{held.id}" in body and "✅" not in body
    held.conclusion = "failure"  # approved, it ran and failed: still no "passed"
    world.post("workflow_run", _run(world, pull, "success"))
    assert world.drain() == [("watch_checks", "failed")]
    (body,) = _status(world, pull["number"])
    assert body.startswith("❌ Checks failed on") and "Lint" in body


def test_a_red_run_on_arcs_branch_is_said_and_retried(world: World) -> None:
    pull = _fixed(world)
    world.post("workflow_run", _run(world, pull, "failure"))
    ran = world.drain()
    assert ("watch_checks", "failed") in ran and ran[0][0] == "repair_ci_failure"
    bodies = _status(world, pull["number"])
    assert any(b.startswith("❌ Checks failed on") for b in bodies)


def test_a_requested_run_waiting_for_approval_is_said(world: World) -> None:
    pull = _fixed(world)
    world.post("workflow_run", _run(world, pull, None, action="requested", status="action_required"))
    assert world.drain() == [("watch_checks", "waiting")]
    (body,) = _status(world, pull["number"])
    assert "wait for approval" in body


def test_a_run_of_an_older_head_never_overwrites_the_note(world: World) -> None:
    pull = _fixed(world)
    world.post("workflow_run", _run(world, pull, "action_required"))
    assert world.drain() == [("watch_checks", "waiting")]
    before = _status(world, pull["number"])
    world.post("workflow_run", _run(world, pull, "success", head_sha="0" * 40))
    assert world.drain() == [("watch_checks", "stale")]
    assert _status(world, pull["number"]) == before


@pytest.mark.parametrize("branch", ["feature", "arcs/not-ours"])
def test_branches_without_an_arcs_pull_request_say_nothing(world: World, branch: str) -> None:
    pull = _fixed(world)
    before = len(world.double.mutations)
    payload = _run(world, pull, "action_required", head_branch=branch)
    answer = world.post("workflow_run", payload)
    if branch == "feature":
        assert answer.json()["status"] == "ignored"
        assert world.drain() == []
    else:
        assert world.drain() == [("watch_checks", "not_ours")]
    assert world.writes(before) == []


def test_a_check_suite_held_for_approval_is_said(world: World) -> None:
    pull = _fixed(world)
    payload = world.repo_payload(checks_world.published("check_suite", "completed"), "octocat")
    suite = payload["check_suite"]
    suite.update(head_branch=pull["head"]["ref"], head_sha=pull["head"]["sha"], conclusion="action_required")
    suite["pull_requests"] = []
    assert world.post("check_suite", payload).json()["status"] == "queued"
    assert world.drain() == [("watch_checks", "waiting")]
    (body,) = _status(world, pull["number"])
    assert "wait for approval" in body


# --- checks that never start: the delayed probe ------------------------------------------------


def _fixed_with_probe(w: World) -> tuple[dict[str, Any], Envelope, dt.timedelta]:
    later: list[tuple[Envelope, dt.timedelta]] = []
    w.deps.enqueue_later = lambda job, delay: later.append((job, delay))
    pull = _fixed(w)
    ((probe, delay),) = later
    return pull, probe, delay


def test_no_checks_started_within_the_grace_period_is_said(world: World) -> None:
    pull, probe, delay = _fixed_with_probe(world)
    assert delay == dt.timedelta(seconds=world.settings.checks_grace_s) and delay.total_seconds() > 0
    message = probe.expect(WatchChecks)
    assert (message.state, message.head_sha, message.head_branch) == (
        "probe",
        pull["head"]["sha"],
        pull["head"]["ref"],
    )
    assert pipeline.dispatch(world.deps, probe) == "never_started"
    (body,) = _status(world, pull["number"])
    assert f"No checks started for `{pull['head']['sha'][:7]}`" in body and "`GITHUB_TOKEN`" in body
    # The run starts later after all: its result replaces the note in the same comment.
    world.post("workflow_run", _run(world, pull, "success"))
    assert world.drain() == [("watch_checks", "passed")]
    (body,) = _status(world, pull["number"])
    assert body.startswith("✅")


def test_the_probe_is_quiet_when_checks_started(world: World) -> None:
    pull, probe, _ = _fixed_with_probe(world)
    world.double.add_workflow_run(
        REPO, head_sha=pull["head"]["sha"], head_branch=pull["head"]["ref"], jobs=[("test", "success", "ok")]
    )
    before = len(world.double.mutations)
    assert pipeline.dispatch(world.deps, probe) == "started"
    assert world.writes(before) == [] and _status(world, pull["number"]) == []


def test_the_probe_finds_a_run_held_for_approval_whose_event_was_missed(world: World) -> None:
    pull, probe, _ = _fixed_with_probe(world)
    run = world.double.add_workflow_run(
        REPO, head_sha=pull["head"]["sha"], head_branch=pull["head"]["ref"], jobs=[("test", "success", "")]
    )
    run.conclusion = "action_required"
    assert pipeline.dispatch(world.deps, probe) == "waiting"
    (body,) = _status(world, pull["number"])
    assert "wait for approval" in body and f"/actions/runs/{run.id}" in body


def test_a_probe_after_another_push_is_stale_and_grace_zero_sends_none(world: World) -> None:
    pull, probe, _ = _fixed_with_probe(world)
    world.store.record_pr(
        repo=REPO, number=pull["number"], url=pull["html_url"], branch=pull["head"]["ref"], head_sha="f" * 40
    )
    assert pipeline.dispatch(world.deps, probe) == "stale"
    later: list[object] = []
    world.deps.enqueue_later = lambda job, delay: later.append(job)
    world.deps.settings = world.settings.model_copy(update={"checks_grace_s": 0.0})
    schedule_probe(world.deps, {}, repo=REPO, installation_id=None, branch="arcs/x", sha="a" * 40)
    assert later == []


# --- the App pushes with its installation token -------------------------------------------------


def test_the_fix_is_pushed_with_the_apps_installation_token(world: World) -> None:
    pull = _fixed(world)
    (push,) = [m for m in world.double.mutations if m.path.endswith("/git-receive-pack")]
    assert push.token is not None and push.token.startswith("ghs_")  # an installation token…
    token = world.double.tokens[push.token]
    assert token.installation_id == world.installation and REPO in token.repositories  # …of this App
    assert token.permissions.get("contents") == "write"
    assert pull["user"]["login"] == world.double.bot_login  # the pull request is the App's too
