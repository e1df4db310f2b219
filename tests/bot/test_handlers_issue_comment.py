"""issue_comment -> handle_command (parsing only; the worker checks permission and replies)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.handlers.issue_comment import created, edited
from bot.routing import Decision
from bot.settings import Settings
from tests.bot.webhook_support import ctx, load, model

ISSUE = "issue_comment.created"
PR = "issue_comment.created.pull_request"


def decide(settings: Settings, stem: str = ISSUE, **patches: Any) -> Decision:
    return created(model(stem, **patches), ctx(settings, stem, **patches))


def test_fix_command(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="/arcs fix tier=large budget=$3").jobs
    assert job.actor == "handle_command"
    payload = load(ISSUE)
    assert job.args["command"] == {
        "verb": "fix",
        "tier": "large",
        "budget_usd": "3",
        "iterations": None,
        "instructions": None,
    }
    assert job.args["error"] is None and job.args["refusal"] is None
    assert job.args["issue_number"] == payload["issue"]["number"]
    assert job.args["is_pull_request"] is False
    assert job.args["comment_id"] == payload["comment"]["id"]
    assert job.args["author"] == "Codertocat"
    assert job.args["author_association"] == payload["comment"]["author_association"]
    assert job.idempotency_key == f"cmd:Codertocat/Hello-World:{payload['comment']['id']}"


@pytest.mark.parametrize("verb", ["stop", "retry", "help"])
def test_other_verbs(settings: Settings, verb: str) -> None:
    (job,) = decide(settings, comment__body=f"/arcs {verb}").jobs
    assert job.args["command"]["verb"] == verb


def test_parse_errors_are_enqueued_for_a_reply(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="/arcs fx").jobs
    assert job.args["command"] is None
    assert "Did you mean `fix`?" in job.args["error"]


def test_comment_without_a_command(settings: Settings) -> None:
    decision = decide(settings)  # the fixture as published
    assert not decision.queued and decision.reason == "no /arcs command in the comment"


def test_quoted_command_is_not_a_command(settings: Settings) -> None:
    assert not decide(settings, comment__body="> /arcs fix\nI agree").queued


@pytest.mark.parametrize(
    ("login", "user_type"),
    [("arcs[bot]", "Bot"), ("ARCS[bot]", "User"), ("dependabot[bot]", "Bot"), ("some-app", "Bot")],
)
def test_bots_are_refused_without_a_reply(settings: Settings, login: str, user_type: str) -> None:
    decision = decide(
        settings, comment__body="/arcs fix", comment__user__login=login, comment__user__type=user_type
    )
    assert not decision.queued and "bot" in (decision.reason or "")


def test_own_login_from_settings(settings: Settings) -> None:
    custom = settings.model_copy(update={"bot_login": "my-arcs"})
    decision = created(
        model(ISSUE, comment__body="/arcs fix", comment__user__login="my-arcs"),
        ctx(custom, ISSUE),
    )
    assert not decision.queued


def test_comment_on_a_pull_request(settings: Settings) -> None:
    (job,) = decide(settings, PR, comment__body="/arcs retry").jobs
    assert job.args["is_pull_request"] is True


def test_revise_on_an_arcs_pull_request(settings: Settings) -> None:
    body = "/arcs revise keep the API\nand add a test"
    (job,) = decide(settings, PR, comment__body=body, issue__user__login="arcs[bot]").jobs
    assert job.args["command"]["verb"] == "revise"
    assert job.args["command"]["instructions"] == "keep the API\nand add a test"
    assert job.args["error"] is None


def test_revise_on_someone_elses_pull_request(settings: Settings) -> None:
    (job,) = decide(settings, PR, comment__body="/arcs revise do it").jobs
    assert job.args["command"] is None
    assert "opened by ARCS" in job.args["error"] and "@Codertocat" in job.args["error"]


def test_revise_on_an_issue(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="/arcs revise do it").jobs
    assert "not on issues" in job.args["error"]


def test_edited_comment_with_a_command_gets_a_polite_refusal(settings: Settings) -> None:
    stem = "issue_comment.edited"
    decision = edited(model(stem, comment__body="/arcs fix"), ctx(settings, stem))
    (job,) = decision.jobs
    assert job.args["refusal"] == "edited" and job.args["command"] is None
    assert job.idempotency_key is not None and job.idempotency_key.endswith(":edited")


def test_edited_comment_without_a_command(settings: Settings) -> None:
    stem = "issue_comment.edited"
    assert not edited(model(stem), ctx(settings, stem)).queued


def test_edited_comment_by_a_bot(settings: Settings) -> None:
    stem = "issue_comment.edited"
    decision = edited(model(stem, comment__body="/arcs fix", comment__user__type="Bot"), ctx(settings, stem))
    assert not decision.queued
