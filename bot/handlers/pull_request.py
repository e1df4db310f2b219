"""``pull_request`` closed -> record merged/closed for ARCS's pull requests (accepted-fix rate).

A pull request is ARCS's when its head branch starts with ``arcs/`` in the same repository
(a fork can name a branch ``arcs/…`` too, so the head repository must be the base repository)
or when the app's bot account opened it.
"""

from __future__ import annotations

from bot.handlers import iso
from bot.handlers.views import PullRequestClosed
from bot.routing import ARCS_BRANCH_PREFIX, Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import RecordPrOutcome

router = Router("pull_request")


@router.on("pull_request", "closed", view=PullRequestClosed)
def closed(event: PullRequestClosed, ctx: RouteContext) -> Decision:
    """Enqueue ``record_pr_outcome`` when an ARCS pull request is merged or closed."""
    pr = event.pull_request
    head_repo = pr.head.repo
    same_repo = head_repo is not None and head_repo.id == event.repository.id
    by_arcs = pr.user is not None and pr.user.login.casefold() == ctx.settings.bot_login.casefold()
    if not (by_arcs or (same_repo and pr.head.ref.startswith(ARCS_BRANCH_PREFIX))):
        return ignore(f"pull request #{pr.number} is not an ARCS pull request")
    repo = event.repository.full_name
    message = RecordPrOutcome(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        number=pr.number,
        merged=bool(pr.merged),
        head_ref=pr.head.ref,
        head_sha=pr.head.sha,
        closed_at=pr.closed_at,
        merged_at=pr.merged_at,
    )
    return enqueue(ctx.job(message, key=f"pr-outcome:{repo}#{pr.number}:{iso(pr.closed_at)}"))
