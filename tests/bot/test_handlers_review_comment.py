"""pull_request_review_comment.created -> handle_command answered in the review thread."""

from __future__ import annotations

from typing import Any

import pytest

from bot.handlers.review_comment import created
from bot.routing import Decision
from bot.settings import Settings
from jobs.messages import Command, HandleCommand
from tests.bot.webhook_support import ctx, load, model

PLAIN = "pull_request_review_comment.created"
COMMAND = "pull_request_review_comment.created.command"


def decide(settings: Settings, stem: str = COMMAND, **patches: Any) -> Decision:
    return created(model(stem, **patches), ctx(settings, stem, **patches))


def test_a_fix_command_in_a_review_thread(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="/arcs fix tier=small").jobs
    payload = load(COMMAND)
    comment = payload["comment"]
    assert job.message == HandleCommand(
        repo=payload["repository"]["full_name"],
        installation_id=None,
        delivery_id="delivery-1",
        number=payload["pull_request"]["number"],
        is_pull_request=True,
        comment_id=comment["id"],
        author=comment["user"]["login"],
        author_association=comment["author_association"],
        command=Command(verb="fix", tier="small"),
        source="review_comment",
        thread_id=comment["id"],
    )
    assert job.idempotency_key == f"review:{payload['repository']['full_name']}:{comment['id']}"


def test_a_reply_is_answered_in_its_thread(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="@arcs retry", comment__in_reply_to_id=77).jobs
    message = job.expect(HandleCommand)
    assert message.thread_id == 77 and message.command == Command(verb="retry")


def test_revise_on_someone_elses_pull_request_is_answered_not_run(settings: Settings) -> None:
    (job,) = decide(settings).jobs  # the fixture: /arcs revise on Codertocat's pull request
    message = job.expect(HandleCommand)
    assert message.command is None and "opened by ARCS" in (message.error or "")
    (job,) = decide(settings, pull_request__user__login="arcs[bot]").jobs
    command = job.expect(HandleCommand).command
    assert command is not None and command.verb == "revise"
    assert command.instructions == "keep the public API unchanged"


def test_an_ambiguous_mention_gets_help(settings: Settings) -> None:
    (job,) = decide(settings, comment__body="@arcs can you look at this?").jobs
    message = job.expect(HandleCommand)
    assert message.command is None and "`@arcs fix`" in (message.error or "")


def test_the_mention_handle_follows_the_bot_login(settings: Settings) -> None:
    custom = settings.model_copy(update={"bot_login": "fixer[bot]"})
    assert not decide(custom, comment__body="@arcs fix").queued
    (job,) = decide(custom, comment__body="@fixer fix").jobs
    assert job.expect(HandleCommand).command == Command(verb="fix")


def test_ignored_without_a_reply(settings: Settings) -> None:
    assert decide(settings, PLAIN).reason == "no /arcs command or mention in the review comment"
    assert "bot" in (
        decide(settings, comment__user__login="arcs[bot]", comment__user__type="Bot").reason or ""
    )
    assert "deleted" in (decide(settings, comment__user=None).reason or "")
    assert "fork" in (decide(settings, pull_request__head__repo__id=1).reason or "")
    assert "fork" in (decide(settings, pull_request__head__repo=None).reason or "")


@pytest.mark.parametrize("body", ["> /arcs fix", "```\n/arcs fix\n```"])
def test_quoted_or_code_is_not_a_command(settings: Settings, body: str) -> None:
    assert not decide(settings, comment__body=body).queued
