"""``installation`` created and ``installation_repositories`` added -> full index refreshes.

One job per repository, so a large installation indexes in parallel and one failing repository
does not hold up the others. Removals and suspensions are not routed (nothing to build; the index
of a removed repository is dropped by the retention job, not by a webhook).
"""

from __future__ import annotations

from bot.handlers.views import InstallationCreated, InstallationRepositoriesAdded, RepositoryName
from bot.routing import Decision, RouteContext, Router, enqueue, ignore

router = Router("installation")


def _refresh_all(repos: list[RepositoryName], ctx: RouteContext, reason: str) -> Decision:
    names = sorted({repo.full_name for repo in repos})
    if not names:
        return ignore(f"{reason}: no repositories listed")
    return enqueue(
        *(
            ctx.job(
                "refresh_index",
                {"mode": "full", "ref": None, "before": None, "after": None, "reason": reason},
                key=f"index:{name}:full:{ctx.delivery_id}",
                repo=name,
            )
            for name in names
        )
    )


@router.on("installation", "created", view=InstallationCreated)
def created(event: InstallationCreated, ctx: RouteContext) -> Decision:
    """Index every repository the app was installed on."""
    return _refresh_all(event.repositories or [], ctx, "installation created")


@router.on("installation_repositories", "added", view=InstallationRepositoriesAdded)
def repositories_added(event: InstallationRepositoriesAdded, ctx: RouteContext) -> Decision:
    """Index the repositories added to an installation."""
    return _refresh_all(event.repositories_added, ctx, "repositories added to the installation")
