"""``installation`` and ``installation_repositories``: build and drop the repositories' indexes.

``installation.created`` and ``installation_repositories.added`` -> a full index refresh per
repository; ``installation.deleted`` and ``installation_repositories.removed`` -> a ``drop_index``
per repository (ARCS keeps no code of a repository it can no longer read). One job per
repository, so a large installation works in parallel and one failing repository does not hold
up the others. Suspensions are not routed: the index stays for when the installation resumes.
"""

from __future__ import annotations

from bot.handlers.views import (
    InstallationCreated,
    InstallationDeleted,
    InstallationRepositoriesAdded,
    InstallationRepositoriesRemoved,
    RepositoryName,
)
from bot.routing import Decision, RouteContext, Router, enqueue, ignore
from jobs.messages import DropIndex, DropReason, RefreshIndex

router = Router("installation")


def _names(repos: list[RepositoryName]) -> list[str]:
    return sorted({repo.full_name for repo in repos})


def _refresh_all(repos: list[RepositoryName], ctx: RouteContext, reason: str) -> Decision:
    names = _names(repos)
    if not names:
        return ignore(f"{reason}: no repositories listed")
    return enqueue(
        *(
            ctx.job(
                RefreshIndex(
                    repo=name,
                    installation_id=ctx.installation_id,
                    delivery_id=ctx.delivery_id,
                    mode="full",
                    reason=reason,
                ),
                key=f"index:{name}:full:{ctx.delivery_id}",
            )
            for name in names
        )
    )


def _drop_all(repos: list[RepositoryName], ctx: RouteContext, reason: DropReason, what: str) -> Decision:
    names = _names(repos)
    if not names:
        return ignore(f"{what}: no repositories listed")
    return enqueue(
        *(
            ctx.job(
                DropIndex(
                    repo=name, installation_id=ctx.installation_id, delivery_id=ctx.delivery_id, reason=reason
                ),
                key=f"index-drop:{name}:{ctx.delivery_id}",
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


@router.on("installation", "deleted", view=InstallationDeleted)
def deleted(event: InstallationDeleted, ctx: RouteContext) -> Decision:
    """Drop the index of every repository of an uninstalled app (those the payload lists)."""
    return _drop_all(event.repositories or [], ctx, "uninstalled", "installation deleted")


@router.on("installation_repositories", "removed", view=InstallationRepositoriesRemoved)
def repositories_removed(event: InstallationRepositoriesRemoved, ctx: RouteContext) -> Decision:
    """Drop the indexes of the repositories removed from an installation."""
    return _drop_all(event.repositories_removed, ctx, "removed", "repositories removed from the installation")
