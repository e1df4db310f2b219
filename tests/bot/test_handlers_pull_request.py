"""pull_request closed -> record_pr_outcome for ARCS pull requests only."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bot.handlers.pull_request import closed
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import RecordPrOutcome
from tests.bot.webhook_support import ctx, model


def decide(settings: Settings, stem: str = "pull_request.closed.merged", **patches: Any) -> Decision:
    return closed(model(stem, **patches), ctx(settings, stem, **patches))


def test_merged_arcs_branch_is_recorded(settings: Settings) -> None:
    (job,) = decide(settings, pull_request__head__ref="arcs/fix-7").jobs
    assert job.actor == "record_pr_outcome"
    message = job.expect(RecordPrOutcome)
    assert (message.number, message.merged, message.head_ref) == (2, True, "arcs/fix-7")
    when = dt.datetime(2019, 5, 15, 15, 21, 18, tzinfo=dt.UTC)
    assert message.merged_at == when and message.closed_at == when
    assert job.args["merged_at"] == "2019-05-15T15:21:18+00:00"  # the v1 view jobs/pipeline.py reads
    assert job.idempotency_key == "pr-outcome:Codertocat/Hello-World#2:2019-05-15T15:21:18+00:00"


def test_closed_unmerged_is_recorded_too(settings: Settings) -> None:
    (job,) = decide(settings, "pull_request.closed", pull_request__head__ref="arcs/fix-7").jobs
    assert job.expect(RecordPrOutcome).merged is False and job.expect(RecordPrOutcome).merged_at is None


def test_pull_request_opened_by_the_bot(settings: Settings) -> None:
    assert decide(settings, pull_request__user__login="arcs[bot]").queued


def test_other_pull_requests_are_ignored(settings: Settings) -> None:
    decision = decide(settings)
    assert not decision.queued and "not an ARCS pull request" in (decision.reason or "")


def test_a_forks_arcs_branch_is_not_ours(settings: Settings) -> None:
    decision = decide(settings, pull_request__head__ref="arcs/fix-7", pull_request__head__repo__id=1)
    assert not decision.queued
