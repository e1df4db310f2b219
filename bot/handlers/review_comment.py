"""``pull_request_review_comment`` created -> commands where people review code.

An ``/arcs`` line or an ``@<app slug>`` mention in a review thread ("@arcs revise use a dict
here") is parsed by the same parser as issue and pull request comments
(:func:`bot.commands.parse_request`) and runs the same ``handle_command`` job, with the same rules:
the worker checks the author's permission through the API (no answer at all to anyone without
write access), ``triggers.comments``, and ``revise`` only on ARCS's pull requests. The answer goes
in place: a reply in that review thread (GitHub replies to a thread's first comment, so
``thread_id`` is ``in_reply_to_id`` or the comment itself), edited as the attempt progresses.

Refused here without a word: comments by bots (ARCS's own replies included), comments that ask
nothing, and pull requests from forks. Only ``created`` is routed: an edited review comment is
never executed (as for issue comments).
"""

from __future__ import annotations

from dataclasses import replace

from bot.commands import CommandError, parse_request
from bot.handlers import app_slug
from bot.handlers.issue_comment import revise_refusal
from bot.handlers.views import PullRequestReviewComment
from bot.routing import Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import Command, HandleCommand
from jobs.ports import is_bot_account

router = Router("review_comment")


@router.on("pull_request_review_comment", "created", view=PullRequestReviewComment)
def created(event: PullRequestReviewComment, ctx: RouteContext) -> Decision:
    """Parse the review comment; enqueue ``handle_command`` answered in its thread."""
    comment, pull = event.comment, event.pull_request
    user = comment.user
    if user is None:
        return ignore("the review comment has no author (deleted account)")
    if is_bot_account(user.login, user.type) or user.login.casefold() == ctx.settings.bot_login.casefold():
        return ignore(f"review comment by the bot {user.login} (bots cannot run commands)")
    parsed = parse_request(comment.body, app_slug(ctx.settings.bot_login))
    if parsed is None:
        return ignore("no /arcs command or mention in the review comment")
    head = pull.head.repo if pull.head is not None else None
    if head is None or head.id != event.repository.id:
        return ignore(f"pull request #{pull.number} comes from a fork: commands never run there")
    if isinstance(parsed, Command) and parsed.verb == "revise":
        opener = pull.user.login if pull.user is not None else None
        parsed = revise_refusal(True, opener, ctx) or parsed
    repo = event.repository.full_name
    message = HandleCommand(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        number=pull.number,
        is_pull_request=True,
        comment_id=comment.id,
        author=user.login,
        author_association=comment.author_association,
        source="review_comment",
        thread_id=comment.in_reply_to_id or comment.id,
    )
    if isinstance(parsed, CommandError):
        message = replace(message, error=parsed.message)
    else:
        message = replace(message, command=parsed)
    return enqueue(ctx.job(message, key=f"review:{repo}:{comment.id}"))
