"""Who is looking at the dashboard, and what they may see.

A :class:`Viewer` is built once at login from the user's GitHub token (the installations and
repositories the token can see, and the orgs where the user is an admin) and kept in the
``dashboard_sessions`` row; every page and API route filters by it. Names compare
case-insensitively, as on GitHub.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request


def _fold(names: Iterable[str]) -> frozenset[str]:
    return frozenset(n.lower() for n in names)


@dataclass(frozen=True, slots=True)
class Viewer:
    """A logged-in dashboard user and their scope."""

    login: str
    owners: frozenset[str] = field(default_factory=frozenset)
    """Orgs/users (lowercase) with an ARCS installation the user's token can see."""
    repos: frozenset[str] = field(default_factory=frozenset)
    """``owner/name`` (lowercase) of the installation repositories the user can see."""
    admin_of: frozenset[str] = field(default_factory=frozenset)
    """Owners (lowercase) where the user may change the policy: org admins, or the user itself."""
    csrf: str = ""
    """The session's CSRF token (forms echo it back)."""

    def can_see_owner(self, owner: str) -> bool:
        """Whether the owner's pages exist for this user (others answer 404)."""
        return owner.lower() in self.owners

    def can_see_repo(self, repo: str) -> bool:
        """Whether ``owner/name`` is visible to this user."""
        return repo.lower() in self.repos

    def is_admin(self, owner: str) -> bool:
        """Whether the user may change ``owner``'s policy."""
        return owner.lower() in self.admin_of and self.can_see_owner(owner)

    def visible_repos(self, owner: str) -> frozenset[str]:
        """The lowercase ``owner/name`` of ``owner``'s repositories this user can see."""
        prefix = owner.lower() + "/"
        return frozenset(r for r in self.repos if r.startswith(prefix))

    def scope_json(self) -> dict[str, Any]:
        """The scope as stored in the session row."""
        return {"owners": sorted(self.owners), "repos": sorted(self.repos), "admin_of": sorted(self.admin_of)}

    @classmethod
    def from_scope(cls, login: str, scope: Mapping[str, Any], *, csrf: str = "") -> Viewer:
        """Rebuild a viewer from :meth:`scope_json` output."""
        return cls(
            login=login,
            owners=_fold(scope.get("owners", ())),
            repos=_fold(scope.get("repos", ())),
            admin_of=_fold(scope.get("admin_of", ())),
            csrf=csrf,
        )

    @classmethod
    def of(
        cls,
        login: str,
        *,
        owners: Iterable[str] = (),
        repos: Iterable[str] = (),
        admin_of: Iterable[str] = (),
    ) -> Viewer:
        """A viewer from plain name lists (folded to lowercase)."""
        return cls(login=login, owners=_fold(owners), repos=_fold(repos), admin_of=_fold(admin_of))


def viewer_of(request: Request) -> Viewer | None:
    """The request's viewer (``None`` when logged out or when the session middleware is absent)."""
    viewer = getattr(request.state, "viewer", None)
    return viewer if isinstance(viewer, Viewer) else None


def csrf_ok(viewer: Viewer | None, token: object) -> bool:
    """Whether ``token`` is the viewer's CSRF token (constant time; an empty token never matches)."""
    if viewer is None or not viewer.csrf or not isinstance(token, str) or not token:
        return False
    return hmac.compare_digest(token.encode("utf-8"), viewer.csrf.encode("utf-8"))
