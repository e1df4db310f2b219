"""``issue_comment`` -> ``/arcs`` commands (see :mod:`bot.commands`).

The request path only parses; the worker (``handle_command``) checks the author's permission
through the API first (write, maintain or admin; the payload's ``author_association`` is not
trusted). An author without it gets no reply at all (no comment, no reaction: anyone can comment,
so anyone could otherwise make the bot post); to the others the worker replies: the result, a
refusal, or the parse error carried in ``error``.

A command is an ``/arcs`` line or an ``@<app slug>`` mention ("@arcs fix this",
:func:`bot.commands.parse_request`; the handle is the App's, from ``ARCS_BOT_LOGIN``): a mention
that is not exactly one command gets a short help reply, never a repair.

Refused here without a reply: comments by bots, ARCS's own account included (replying to a bot
invites loops) and comments without a command. Edited comments are never executed (the text
someone approved may not be the text that runs); when an edited comment contains a command,
the worker replies once per comment asking for a new comment (``refusal: "edited"``), to an
author with write access only.
"""

from __future__ import annotations

from dataclasses import replace

from bot.commands import CommandError, parse_request
from bot.handlers import app_slug
from bot.handlers.views import IssueComment
from bot.routing import Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import Command, HandleCommand
from jobs.ports import is_bot_account

router = Router("issue_comment")


def _is_bot(login: str, user_type: str | None, settings_login: str) -> bool:
    return is_bot_account(login, user_type) or login.casefold() == settings_login.casefold()


def _message(event: IssueComment, ctx: RouteContext) -> HandleCommand:
    """The message without its outcome (``command``, ``error``, ``refusal`` are set by the caller)."""
    issue = event.issue
    comment = event.comment
    return HandleCommand(
        repo=event.repository.full_name,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        number=issue.number,
        is_pull_request=issue.pull_request is not None,
        comment_id=comment.id,
        author=comment.user.login if comment.user is not None else None,
        author_association=comment.author_association,
    )


def _bot_author(event: IssueComment, ctx: RouteContext) -> str | None:
    user = event.comment.user
    if user is None:
        return "the comment has no author (deleted account)"
    if _is_bot(user.login, user.type, ctx.settings.bot_login):
        return f"comment by the bot {user.login} (bots cannot run commands)"
    return None


@router.on("issue_comment", "created", view=IssueComment)
def created(event: IssueComment, ctx: RouteContext) -> Decision:
    """Parse the comment; enqueue ``handle_command`` with the command or the parse error."""
    refused = _bot_author(event, ctx)
    if refused:
        return ignore(refused)
    parsed = parse_request(event.comment.body, app_slug(ctx.settings.bot_login))
    if parsed is None:
        return ignore("no /arcs command in the comment")
    if isinstance(parsed, Command) and parsed.verb == "revise":
        opener = event.issue.user.login if event.issue.user is not None else None
        parsed = revise_refusal(event.issue.pull_request is not None, opener, ctx) or parsed
    message = _message(event, ctx)
    if isinstance(parsed, CommandError):
        message = replace(message, error=parsed.message)
    else:
        message = replace(message, command=parsed)
    return enqueue(ctx.job(message, key=f"cmd:{message.repo}:{event.comment.id}"))


def revise_refusal(is_pull_request: bool, opener: str | None, ctx: RouteContext) -> CommandError | None:
    """``/arcs revise`` only makes sense on a pull request opened by ARCS (re-checked by the worker)."""
    line = "/arcs revise"
    if not is_pull_request:
        return CommandError("`/arcs revise` works on ARCS pull requests, not on issues.", line)
    author = opener or ""
    if author.casefold() != ctx.settings.bot_login.casefold():
        return CommandError(
            "`/arcs revise` works on pull requests opened by ARCS; this one was opened by "
            f"@{author or 'someone else'}.",
            line,
        )
    return None


@router.on("issue_comment", "edited", view=IssueComment)
def edited(event: IssueComment, ctx: RouteContext) -> Decision:
    """Never run an edited comment; ask (once per comment) for a new one when it has a command."""
    refused = _bot_author(event, ctx)
    if refused:
        return ignore(refused)
    if parse_request(event.comment.body, app_slug(ctx.settings.bot_login)) is None:
        return ignore("edited comment without an /arcs command")
    message = replace(_message(event, ctx), refusal="edited")
    return enqueue(ctx.job(message, key=f"cmd:{message.repo}:{event.comment.id}:edited"))
