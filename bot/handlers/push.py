"""``push`` to the default branch -> an incremental index refresh (git diff ``before..after``).

Pushes to other branches, tags and branch deletions do not change what ARCS retrieves from.
"""

from __future__ import annotations

from bot.handlers.views import Push
from bot.routing import Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import RefreshIndex

router = Router("push")

_NULL_SHA = "0" * 40


@router.on("push", view=Push)
def pushed(event: Push, ctx: RouteContext) -> Decision:
    """Enqueue ``refresh_index`` (incremental) for a push to the default branch."""
    default = f"refs/heads/{event.repository.default_branch}"
    if event.ref != default:
        return ignore(f"push to {event.ref}, not the default branch")
    if event.deleted or event.after == _NULL_SHA:
        return ignore("the default branch was deleted")
    repo = event.repository.full_name
    before = None if event.created or event.before == _NULL_SHA else event.before
    message = RefreshIndex(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        after=event.after,
        # No usable "before" (a new branch): the worker does a full refresh.
        mode="incremental" if before else "full",
        reason="push to the default branch",
    )
    return enqueue(ctx.job(message, key=f"index:{repo}:incremental:{event.after}"))
