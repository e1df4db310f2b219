"""``issues`` labeled -> an issue repair job (the worker decides whether the label asks ARCS).

The label that asks for a fix is ``arcs`` unless the repository's ``.arcs.yml`` names another one,
and only the API can read that file, which the request path never calls. So every label added to
an open issue is enqueued (cheap: one small message), except where it cannot be for ARCS: on a
pull request, on a closed issue, or added by a bot (ARCS' own account or any other App: a bot
never stands in for a maintainer who read the issue). The worker reads
``.arcs.yml`` first and ends a job whose label is not the configured one silently (attempt
``skipped``, no comment, no check run, no event) before it looks at anyone's permission.
"""

from __future__ import annotations

from bot.handlers.views import IssuesLabeled
from bot.routing import Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import RepairIssue
from jobs.ports import is_bot_account

router = Router("issues")


@router.on("issues", "labeled", view=IssuesLabeled)
def labeled(event: IssuesLabeled, ctx: RouteContext) -> Decision:
    """Enqueue ``repair_issue`` when a label is added to an open issue (see the module docstring)."""
    label = event.label
    name = (label.name if label is not None else None) or ""
    if not name.strip():
        return ignore("the event names no label")
    sender = event.sender.login
    if sender and sender.casefold() == ctx.settings.bot_login.casefold():
        return ignore(f"label {name!r} was added by ARCS itself")
    if is_bot_account(sender, event.sender.type):
        # A bot labels what others wrote (a triage App): its write access is not a maintainer's
        # reading of the issue, so its label never starts a repair.
        return ignore(f"label {name!r} was added by the bot {sender}")
    issue = event.issue
    if issue.pull_request is not None:
        return ignore(f"#{issue.number} is a pull request, not an issue")
    if issue.state == "closed":
        return ignore(f"issue #{issue.number} is closed")
    repo = event.repository.full_name
    message = RepairIssue(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        issue_number=issue.number,
        title=issue.title,
        label=name,
        sender=sender,
    )
    return enqueue(ctx.job(message, key=f"issue:{repo}#{issue.number}:{ctx.delivery_id}"))
