"""The check run's buttons (issue #28, item 2): "Re-run ARCS", "Apply" and "Fix with ARCS".

Each click is a ``check_run.requested_action`` delivery (the pinned ``@octokit/webhooks-examples``
payload pointed at ARCS's check run on the strict GitHub double), posted to the real webhook
endpoint; the jobs run through the pipeline. A click is a ``/arcs`` command by the person who
clicked: the same permission rule, the same path.
"""

from __future__ import annotations

from dataclasses import replace

from jobs.repair.diffing import unified_diff
from tests.bot import checks_world
from tests.bot.checks_world import APP_FILE, READER, REPO, WRITER, World

world = checks_world.world  # the fixture


def _no_fix(w: World) -> dict[str, object]:
    """A maintainer's `/arcs fix` that ends without a fix; ARCS's completed check run."""
    w.repair.outcome = replace(w.repair.outcome, verdict="no_fix", fixed=False, patch="", files={})
    w.post("issue_comment", w.pr_comment("/arcs fix", user=WRITER))
    assert w.drain() == [("handle_command", "no_fix")]
    (check,) = w.checks()
    return check


def test_rerun_button_on_the_completed_check_run_and_a_double_click_is_one_attempt(world: World) -> None:
    check = _no_fix(world)
    assert [a["identifier"] for a in check["actions"]] == ["arcs-rerun"]  # no patch: no "Apply"
    payload = world.click(check["id"], "arcs-rerun", user=WRITER)
    first = world.post("check_run", payload, delivery="click-1")
    assert first.status_code == 202 and first.json()["status"] == "queued", first.text
    assert world.post("check_run", payload, delivery="click-1").json()["status"] == "duplicate"  # redelivery
    assert world.post("check_run", payload, delivery="click-2").status_code == 202  # the second click
    assert world.drain() == [("handle_command", "no_fix"), ("handle_command", "duplicate")]
    assert len(world.repair.requests) == 2  # the first attempt and one re-run
    attempts = world.store.attempts()
    assert len(attempts) == 2 and {a.requested_by for a in attempts} == {WRITER}
    assert len(world.checks()) == 2  # the new attempt has its own check run (and its own button)


def test_a_readers_click_gets_no_answer_and_runs_nothing(world: World) -> None:
    check = _no_fix(world)
    before = len(world.double.mutations)
    answer = world.post("check_run", world.click(check["id"], "arcs-rerun", user=READER))
    assert answer.status_code == 202
    assert world.drain() == [("handle_command", "refused")]
    assert world.writes(before) == []  # no comment, no reaction, no check run
    assert len(world.repair.requests) == 1
    refused = [a for a in world.store.attempts() if a.status == "refused"]
    assert len(refused) == 1 and "read permission" in (refused[0].reason or "")


def test_another_apps_check_run_is_ignored(world: World) -> None:
    check = _no_fix(world)
    jobs = len(world.queue.jobs)
    answer = world.post("check_run", world.click(check["id"], "arcs-rerun", user=WRITER, app_id=25811))
    assert answer.status_code == 202 and answer.json()["status"] == "ignored"
    assert "another App" in answer.json()["reason"] and len(world.queue.jobs) == jobs


def test_malformed_clicks(world: World) -> None:
    check = _no_fix(world)
    jobs = len(world.queue.jobs)
    payload = world.click(check["id"], "arcs-rerun", user=WRITER)
    del payload["requested_action"]
    answer = world.post("check_run", payload, delivery="no-action")
    assert answer.status_code == 202 and answer.json()["status"] == "ignored"
    delivery = world.store.get_delivery("no-action")
    assert delivery is not None  # recorded, with the reason
    payload = world.click(check["id"], "arcs-rerun", user=WRITER)
    del payload["check_run"]["id"]
    answer = world.post("check_run", payload, delivery="no-id")
    assert answer.status_code == 400 and "check_run.id is missing" in answer.json()["reason"]
    assert len(world.queue.jobs) == jobs


def test_apply_opens_the_pull_request_a_partial_fix_did_not_get(world: World) -> None:
    partial = APP_FILE.replace("value_7 = 7", "value_7 = 70")
    world.repair.outcome = replace(
        world.repair.outcome,
        verdict="partial",
        fixed=False,
        reason="the targets pass; tests/test_old.py still fails at the last green commit",
        patch=unified_diff({"app.py": APP_FILE}, {"app.py": partial}),
        files={},  # open_pr_on_partial is off: nothing applied, no pull request
        pre_existing=("tests/test_old.py::test_legacy",),
    )
    world.post("issue_comment", world.pr_comment("/arcs fix", user=WRITER))
    assert world.drain() == [("handle_command", "partial")]
    (check,) = world.checks()
    assert [a["identifier"] for a in check["actions"]] == ["arcs-rerun", "arcs-apply"]
    assert world.double.open_pulls(REPO) == [world.double.repos[REPO].pulls[world.pull]]
    world.post("check_run", world.click(check["id"], "arcs-apply", user=WRITER))
    assert world.drain() == [("handle_command", "skipped"), ("publish_result", "published")]
    (opened,) = [p for p in world.double.open_pulls(REPO) if p["number"] != world.pull]
    assert opened["head"]["ref"].startswith("arcs/")
    # The stored patch, applied to the pull request's head it was made on (value_1 = 3 there).
    head = APP_FILE.replace("value_1 = 1", "value_1 = 3")
    assert world.double.read_file(REPO, opened["head"]["ref"], "app.py") == head.replace(
        "value_7 = 7", "value_7 = 70"
    )
    (check,) = world.checks()
    assert [a["identifier"] for a in check["actions"]] == ["arcs-rerun"]  # applied: no "Apply" any more


def test_fix_with_arcs_when_ci_repairs_are_turned_off(world: World) -> None:
    sha = world.double.commit(REPO, {".arcs.yml": "triggers:\n  ci: false\n"}, branch="feature")
    world.head_sha = sha
    payload = world.repo_payload(checks_world.published("check_run", "completed", index=2), "octocoders-bot")
    run = payload["check_run"]
    run.update(head_sha=sha, conclusion="failure", pull_requests=world.pulls_json())
    run["app"].update(id=77, slug="octocoders-ci")
    run["check_suite"].update(head_branch="feature", head_sha=sha)
    assert world.post("check_run", payload).json()["status"] == "queued"
    assert world.drain() == [("repair_ci_failure", "skipped")]
    assert world.repair.requests == []  # never repaired on its own
    (offer,) = world.checks()
    assert offer["head_sha"] == sha and offer["conclusion"] == "neutral"
    assert offer["output"]["title"] == "ARCS can fix this"
    assert [a["identifier"] for a in offer["actions"]] == ["arcs-fix"]
    world.post("check_run", world.click(offer["id"], "arcs-fix", user=WRITER))
    assert world.drain() == [("handle_command", "fixed"), ("publish_result", "published")]
    assert len(world.repair.requests) == 1
