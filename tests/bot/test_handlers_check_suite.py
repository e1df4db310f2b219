"""check_suite / check_run completed -> repair_ci_failure for CI apps other than Actions."""

from __future__ import annotations

from typing import Any

import pytest

from bot.handlers.check_suite import run_completed, suite_completed
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import RepairCiFailure, WatchChecks
from tests.bot.webhook_support import ctx, load, model

SUITE = "check_suite.completed.failure"
RUN = "check_run.completed.failure"


def suite(settings: Settings, **patches: Any) -> Decision:
    return suite_completed(model(SUITE, **patches), ctx(settings, SUITE, **patches))


def run(settings: Settings, **patches: Any) -> Decision:
    return run_completed(model(RUN, **patches), ctx(settings, RUN, **patches))


def test_failed_suite_enqueues_a_ci_repair(settings: Settings) -> None:
    (job,) = suite(settings).jobs
    assert job.actor == "repair_ci_failure"
    message = job.expect(RepairCiFailure)
    assert message.source == "check_suite"
    assert message.ci.app_slug == "octocoders-ci"
    assert message.head_branch == "changes"
    assert message.ci.check_suite_id == load(SUITE)["check_suite"]["id"]
    assert message.ci.app_id == load(SUITE)["check_suite"]["app"]["id"]
    assert message.retry_of is None and message.run_id is None


def test_failed_run_enqueues_a_ci_repair(settings: Settings) -> None:
    (job,) = run(settings).jobs
    message = job.expect(RepairCiFailure)
    assert message.source == "check_run"
    assert message.ci.check_run_id == load(RUN)["check_run"]["id"]
    assert message.ci.check_name == load(RUN)["check_run"]["name"]
    assert message.ci.html_url == load(RUN)["check_run"]["html_url"]


def test_run_and_suite_of_one_commit_coalesce(settings: Settings) -> None:
    # Same app, same head commit in both fixtures: one attempt for the worker.
    assert suite(settings).jobs[0].idempotency_key == run(settings).jobs[0].idempotency_key


@pytest.mark.parametrize("conclusion", ["success", "neutral", "cancelled", "timed_out", None])
def test_other_conclusions(settings: Settings, conclusion: str | None) -> None:
    assert not suite(settings, check_suite__conclusion=conclusion).queued
    assert not run(settings, check_run__conclusion=conclusion).queued


def test_actions_suites_and_runs_are_left_to_workflow_run(settings: Settings) -> None:
    decision = suite(settings, check_suite__app__slug="github-actions")
    assert decision.reason and "workflow_run" in decision.reason
    published = run_completed(model("check_run.completed"), ctx(settings, "check_run.completed"))
    assert published.reason and "workflow_run" in published.reason


def test_fork_pull_requests_are_refused(settings: Settings) -> None:
    decision = suite(settings, check_suite__pull_requests__0__head__repo__id=1)
    assert decision.reason and "fork" in decision.reason
    decision = run(settings, check_run__pull_requests__0__head__repo__id=1)
    assert decision.reason and "fork" in decision.reason


def test_no_head_branch_is_refused(settings: Settings) -> None:
    assert "no head branch" in (suite(settings, check_suite__head_branch=None).reason or "")
    assert "no head branch" in (run(settings, check_run__check_suite__head_branch=None).reason or "")


def test_arcs_branch_is_a_retry(settings: Settings) -> None:
    job, watched = suite(settings, check_suite__head_branch="arcs/fix-1").jobs
    assert job.expect(RepairCiFailure).retry_of == "arcs/fix-1"
    assert watched.expect(WatchChecks).state == "failed"  # and said in ARCS's pull request


def test_a_suite_held_for_approval_on_arcs_branch_is_watched_even_for_actions(settings: Settings) -> None:
    patches = {
        "check_suite__head_branch": "arcs/fix-1",
        "check_suite__conclusion": "action_required",
        "check_suite__app__slug": "github-actions",
    }
    (watched,) = suite(settings, **patches).jobs
    message = watched.expect(WatchChecks)
    assert (message.state, message.source, message.name) == ("waiting", "check_suite", "github-actions")
    # An Actions suite's plain result is left to workflow_run; other branches are not watched.
    patches["check_suite__conclusion"] = "success"
    assert suite(settings, **patches).jobs == ()
    assert suite(settings, check_suite__conclusion="action_required").jobs == ()
