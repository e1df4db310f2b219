"""issues labeled -> repair_issue (the worker checks the label against .arcs.yml)."""

from __future__ import annotations

from typing import Any

from bot.handlers.issues import labeled
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import RepairIssue
from tests.bot.webhook_support import ctx, model

STEM = "issues.labeled"


def decide(settings: Settings, *, delivery_id: str = "delivery-1", **patches: Any) -> Decision:
    return labeled(model(STEM, **patches), ctx(settings, STEM, delivery_id=delivery_id, **patches))


def test_arcs_label_enqueues_an_issue_repair(settings: Settings) -> None:
    (job,) = decide(settings).jobs
    assert job.actor == "repair_issue"
    message = job.expect(RepairIssue)
    assert (message.repo, message.issue_number, message.label) == ("Codertocat/Hello-World", 1, "arcs")
    assert message.title == "Spelling error in the README file"
    assert message.sender == "Codertocat"
    assert job.idempotency_key == "issue:Codertocat/Hello-World#1:delivery-1"


def test_label_match_is_case_insensitive(settings: Settings) -> None:
    assert decide(settings, label__name="ARCS").queued


def test_any_label_is_enqueued_for_the_worker_to_check_against_arcs_yml(settings: Settings) -> None:
    # A repository may configure another label in .arcs.yml; only the worker can read it.
    (job,) = decide(settings, label__name="autofix").jobs
    assert job.actor == "repair_issue" and job.expect(RepairIssue).label == "autofix"


def test_labels_added_by_arcs_itself_are_ignored(settings: Settings) -> None:
    decision = decide(settings, sender__login=settings.bot_login)
    assert not decision.queued and "ARCS itself" in (decision.reason or "")


def test_pull_requests_are_ignored(settings: Settings) -> None:
    decision = decide(settings, issue__pull_request={"url": "https://api.github.com/x"})
    assert not decision.queued and "pull request" in (decision.reason or "")


def test_closed_issues_are_ignored(settings: Settings) -> None:
    assert "closed" in (decide(settings, issue__state="closed").reason or "")


def test_labelling_again_is_a_new_request(settings: Settings) -> None:
    first = decide(settings, delivery_id="a").jobs[0]
    second = decide(settings, delivery_id="b").jobs[0]
    assert first.idempotency_key != second.idempotency_key
