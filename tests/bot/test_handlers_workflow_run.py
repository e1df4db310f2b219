"""workflow_run completed -> repair_ci_failure (failures on this repository's branches only)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.handlers.views import WorkflowRunCompleted, read
from bot.handlers.workflow_run import completed, requested
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import CiRef, RepairCiFailure, WatchChecks
from tests.bot.webhook_support import ctx, load, model

STEM = "workflow_run.completed.failure"


def decide(settings: Settings, **patches: Any) -> Decision:
    return completed(model(STEM, **patches), ctx(settings, STEM, **patches))


def test_failure_enqueues_a_ci_repair(settings: Settings) -> None:
    (job,) = decide(settings).jobs
    assert job.actor == "repair_ci_failure"
    assert job.idempotency_key == "ci:octo-org/octo-repo:workflow_run:289782451"
    message = job.expect(RepairCiFailure)
    run = load(STEM)["workflow_run"]
    assert message == RepairCiFailure(
        repo="octo-org/octo-repo",
        installation_id=load(STEM).get("installation", {}).get("id"),
        delivery_id="delivery-1",
        source="workflow_run",
        head_sha=run["head_sha"],
        head_branch="master",
        run_id=289782451,
        workflow_name=run["name"],
        pull_requests=(),
        retry_of=None,
        actor=run["triggering_actor"]["login"],
        ci=CiRef(
            run_attempt=run["run_attempt"],
            workflow_id=run["workflow_id"],
            check_suite_id=run["check_suite_id"],
            html_url=run["html_url"],
        ),
    )
    assert message.ci.html_url and message.ci.html_url.startswith("https://github.com/")
    assert job.context["delivery_id"] == "delivery-1"


def test_the_repair_counts_against_whoever_started_this_run_attempt(settings: Settings) -> None:
    """``ARCS_USER_DAILY_USD``: a re-run's clicker (``triggering_actor``), else the run's ``actor``;
    a bot's run counts against nobody."""
    octocat = {"login": "octocat", "type": "User"}
    bot = {"login": "dependabot[bot]", "type": "Bot"}

    def actor(**patches: Any) -> str | None:
        (job,) = decide(settings, **patches).jobs
        return job.expect(RepairCiFailure).actor

    assert actor() == "Codertocat"
    assert actor(workflow_run__triggering_actor=octocat) == "octocat"
    assert actor(workflow_run__triggering_actor=None, workflow_run__actor=octocat) == "octocat"
    assert actor(workflow_run__triggering_actor=bot) is None
    assert actor(workflow_run__triggering_actor=None, workflow_run__actor=None) is None
    renovate = {"login": "renovate", "type": "Bot"}  # a bot without the [bot] suffix
    assert actor(workflow_run__triggering_actor=renovate) is None


@pytest.mark.parametrize(
    "conclusion", ["success", "cancelled", "timed_out", "skipped", "startup_failure", None]
)
def test_other_conclusions_are_ignored(settings: Settings, conclusion: str | None) -> None:
    decision = decide(settings, workflow_run__conclusion=conclusion)
    assert not decision.queued and decision.reason and "concluded" in decision.reason


def test_success_fixture_as_published(settings: Settings) -> None:
    decision = completed(model("workflow_run.completed"), ctx(settings, "workflow_run.completed"))
    assert decision.reason == "workflow run concluded success"


def test_fork_runs_are_never_repaired(settings: Settings) -> None:
    decision = decide(
        settings, workflow_run__head_repository__id=1, workflow_run__head_repository__full_name="evil/fork"
    )
    assert not decision.queued
    assert decision.reason and "fork evil/fork" in decision.reason and "credentials" in decision.reason


def test_arcs_branches_are_marked_as_retries(settings: Settings) -> None:
    # A red run on ARCS's branch is a retry and also a line in its pull request's status comment.
    job, watched = decide(settings, workflow_run__head_branch="arcs/fix-42").jobs
    assert job.expect(RepairCiFailure).retry_of == "arcs/fix-42"
    message = watched.expect(WatchChecks)
    assert (message.state, message.head_branch, message.conclusion) == ("failed", "arcs/fix-42", "failure")
    assert watched.idempotency_key == "checks:octo-org/octo-repo:workflow_run:289782451:failed"


@pytest.mark.parametrize(
    ("conclusion", "state"),
    [("action_required", "waiting"), ("success", "passed"), ("cancelled", "other"), ("timed_out", "failed")],
)
def test_runs_on_arcs_branches_are_watched(settings: Settings, conclusion: str, state: str) -> None:
    decision = decide(settings, workflow_run__head_branch="arcs/fix-42", workflow_run__conclusion=conclusion)
    (watched,) = [j for j in decision.jobs if j.actor == "watch_checks"]
    assert watched.expect(WatchChecks).state == state
    assert [j.actor for j in decision.jobs].count("repair_ci_failure") == (
        state == "failed" and conclusion == "failure"
    )


def test_other_branches_and_forks_are_not_watched(settings: Settings) -> None:
    assert decide(settings, workflow_run__conclusion="action_required").jobs == ()
    fork = decide(
        settings,
        workflow_run__head_branch="arcs/fix-42",
        workflow_run__conclusion="action_required",
        workflow_run__head_repository__id=999,
    )
    assert fork.jobs == ()


def test_a_requested_run_held_for_approval_is_watched(settings: Settings) -> None:
    patches: dict[str, Any] = {
        "workflow_run__head_branch": "arcs/fix-42",
        "workflow_run__status": "action_required",
        "workflow_run__conclusion": None,
    }
    (watched,) = requested(model(STEM, **patches), ctx(settings, STEM, **patches)).jobs
    assert watched.expect(WatchChecks).state == "waiting"
    patches["workflow_run__status"] = "queued"
    decision = requested(model(STEM, **patches), ctx(settings, STEM, **patches))
    assert decision.jobs == () and decision.reason


def test_run_without_a_branch(settings: Settings) -> None:
    decision = decide(settings, workflow_run__head_branch=None)
    assert decision.reason and "no head branch" in decision.reason


def test_rerun_attempt_keeps_the_key(settings: Settings) -> None:
    first = decide(settings).jobs[0]
    second = decide(settings, workflow_run__run_attempt=2).jobs[0]
    assert first.idempotency_key == second.idempotency_key
    assert second.expect(RepairCiFailure).ci.run_attempt == 2


def test_run_whose_head_repository_is_gone_is_never_repaired(settings: Settings) -> None:
    # A deleted fork: GitHub sends null; the origin is unknown, so no credentials are used.
    decision = decide(settings, workflow_run__head_repository=None)
    assert not decision.queued and decision.reason and "no head repository" in decision.reason


def test_informational_fields_may_be_missing(settings: Settings) -> None:
    data = load(STEM)
    for key in ("name", "html_url", "run_attempt", "workflow_id", "check_suite_id", "pull_requests"):
        del data["workflow_run"][key]
    (job,) = completed(read(WorkflowRunCompleted, data), ctx(settings, STEM)).jobs
    message = job.expect(RepairCiFailure)
    assert message.workflow_name is None and message.ci == CiRef()
    assert message.pull_requests == () and message.run_id == data["workflow_run"]["id"]
