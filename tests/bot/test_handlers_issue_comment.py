"""issue_comment -> handle_command (parsing only; the worker checks permission and replies)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from bot.handlers.issue_comment import created, edited
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import Command, HandleCommand
from tests.bot.webhook_support import ctx, load, model

ISSUE = "issue_comment.created"
PR = "issue_comment.created.pull_request"


def decide(settings: Settings, stem: str = ISSUE, **patches: Any) -> Decision:
    return created(model(stem, **patches), ctx(settings, stem, **patches))


def test_fix_command(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="/arcs fix tier=large budget=$3").jobs
    assert job.actor == "handle_command"
    payload = load(ISSUE)
    assert job.message == HandleCommand(
        repo="Codertocat/Hello-World",
        installation_id=payload.get("installation", {}).get("id"),
        delivery_id="delivery-1",
        number=payload["issue"]["number"],
        is_pull_request=False,
        comment_id=payload["comment"]["id"],
        author="Codertocat",
        author_association=payload["comment"]["author_association"],
        command=Command(verb="fix", tier="large", budget_usd=Decimal(3)),
        error=None,
        refusal=None,
    )
    assert job.idempotency_key == f"cmd:Codertocat/Hello-World:{payload['comment']['id']}"


@pytest.mark.parametrize("verb", ["stop", "retry", "help"])
def test_other_verbs(settings: Settings, verb: str) -> None:
    (job,) = decide(settings, comment__body=f"/arcs {verb}").jobs
    command = job.expect(HandleCommand).command
    assert command is not None and command.verb == verb


def test_parse_errors_are_enqueued_for_a_reply(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="/arcs fx").jobs
    assert job.expect(HandleCommand).command is None
    assert "Did you mean `fix`?" in (job.expect(HandleCommand).error or "")


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
    assert job.expect(HandleCommand).is_pull_request is True


def test_revise_on_an_arcs_pull_request(settings: Settings) -> None:
    body = "/arcs revise keep the API\nand add a test"
    (job,) = decide(settings, PR, comment__body=body, issue__user__login="arcs[bot]").jobs
    assert job.expect(HandleCommand).command == Command(
        verb="revise", instructions="keep the API\nand add a test"
    )
    assert job.expect(HandleCommand).error is None


def test_revise_on_someone_elses_pull_request(settings: Settings) -> None:
    (job,) = decide(settings, PR, comment__body="/arcs revise do it").jobs
    assert job.expect(HandleCommand).command is None
    error = job.expect(HandleCommand).error or ""
    assert "opened by ARCS" in error and "@Codertocat" in error


def test_revise_on_an_issue(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="/arcs revise do it").jobs
    assert "not on issues" in (job.expect(HandleCommand).error or "")


def test_edited_comment_with_a_command_gets_a_polite_refusal(settings: Settings) -> None:
    stem = "issue_comment.edited"
    decision = edited(model(stem, comment__body="/arcs fix"), ctx(settings, stem))
    (job,) = decision.jobs
    message = job.expect(HandleCommand)
    assert message.refusal == "edited" and message.command is None
    assert job.idempotency_key is not None and job.idempotency_key.endswith(":edited")


def test_edited_comment_without_a_command(settings: Settings) -> None:
    stem = "issue_comment.edited"
    assert not edited(model(stem), ctx(settings, stem)).queued


def test_edited_comment_by_a_bot(settings: Settings) -> None:
    stem = "issue_comment.edited"
    decision = edited(model(stem, comment__body="/arcs fix", comment__user__type="Bot"), ctx(settings, stem))
    assert not decision.queued
