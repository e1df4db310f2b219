"""The dashboard's read-only JSON API (same authorization as the pages).

No viewer -> 401 ``{"error": "login required"}``; an org or attempt the viewer cannot see answers
the same 404 ``{"error": "not found"}`` as a missing one. ``?weeks=N`` (1-104, default 12) sets the
window of the numbers, as on the pages. Numbers follow the definitions in
:mod:`bot.dashboard.queries`; rates are 0..1 (``null`` when undefined).

- ``GET /api/orgs``: the owners the viewer can see, with their totals.
- ``GET /api/orgs/{org}``: totals, the weekly series, per-repo rows, failure classes, policies.
- ``GET /api/orgs/{org}/repos``: the per-repo table.
- ``GET /api/attempts/{id}``: one attempt with its trace summary, PR and events (never the
  ``files`` column, never the trace file itself).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from bot.dashboard import queries
from bot.dashboard.pages import id_param, weeks_param
from bot.dashboard.viewer import Viewer, viewer_of
from bot.settings import Settings
from bot.store.store import Store, utcnow

Clock = Callable[[], dt.datetime]


def _json(data: Any, status: int = 200) -> Response:
    # Per-user data: never cached by a shared cache.
    return JSONResponse(data, status_code=status, headers={"Cache-Control": "private, no-store"})


def unauthorized() -> Response:
    """401 for a request without a login."""
    return _json({"error": "login required"}, 401)


def not_found() -> Response:
    """404, the same for missing and invisible things."""
    return _json({"error": "not found"}, 404)


class _Api:
    def __init__(self, store: Store, settings: Settings, clock: Clock) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock

    def _window(self, request: Request) -> tuple[int, dt.datetime]:
        weeks = weeks_param(request)
        return weeks, queries.window_start(self.clock(), weeks)

    def orgs(self, request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None:
            return unauthorized()
        weeks, since = self._window(request)
        found = {o.owner.lower(): o for o in queries.owners_with_data(self.store, viewer.repos, since=since)}
        out = []
        for key in sorted(viewer.owners):
            summary = found.get(key)
            stats = summary.stats if summary else queries.Stats()
            out.append(
                {
                    "owner": summary.owner if summary else key,
                    "repos": len(viewer.visible_repos(key)),
                    "admin": viewer.is_admin(key),
                    "last_attempt_at": None
                    if summary is None or summary.last_attempt_at is None
                    else summary.last_attempt_at.isoformat(),
                    "totals": stats.to_json(),
                }
            )
        return _json({"weeks": weeks, "since": since.isoformat(), "orgs": out})

    def _owner(self, request: Request) -> tuple[Viewer | None, str | None]:
        viewer = viewer_of(request)
        owner = str(request.path_params["org"])
        if viewer is None or not viewer.can_see_owner(owner):
            return viewer, None
        return viewer, owner

    def org(self, request: Request) -> Response:
        viewer, owner = self._owner(request)
        if viewer is None:
            return unauthorized()
        if owner is None:
            return not_found()
        weeks = weeks_param(request)
        repos = viewer.visible_repos(owner)
        name = queries.owner_name(self.store, owner)
        overview = queries.org_overview(self.store, name, repos, now=self.clock(), weeks=weeks)
        data = overview.to_json()
        data["weeks_requested"] = weeks
        data["policies"] = [p.to_json() for p in queries.policies(self.store, name, repos)]
        data["admin"] = viewer.is_admin(owner)
        return _json(data)

    def repos(self, request: Request) -> Response:
        viewer, owner = self._owner(request)
        if viewer is None:
            return unauthorized()
        if owner is None:
            return not_found()
        weeks, since = self._window(request)
        rows = queries.per_repo(self.store, viewer.visible_repos(owner), since=since)
        name = queries.owner_name(self.store, owner)
        return _json(
            {"owner": name, "weeks": weeks, "since": since.isoformat(), "repos": [r.to_json() for r in rows]}
        )

    def attempt(self, request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None:
            return unauthorized()
        attempt_id = id_param(request, "attempt_id")
        if attempt_id is None:
            return not_found()
        detail = queries.attempt_detail(self.store, attempt_id, viewer.repos)
        if detail is None or not viewer.can_see_owner(detail.row.repo.split("/", 1)[0]):
            return not_found()
        return _json(detail.to_json())


def api_routes(store: Store, settings: Settings, *, clock: Clock = utcnow) -> list[BaseRoute]:
    """``GET /api/orgs``, ``/api/orgs/{org}``, ``/api/orgs/{org}/repos``, ``/api/attempts/{id}``."""
    api = _Api(store, settings, clock)
    return [
        Route("/api/orgs", api.orgs, methods=["GET"], name="dashboard_api_orgs"),
        Route("/api/orgs/{org}", api.org, methods=["GET"], name="dashboard_api_org"),
        Route("/api/orgs/{org}/repos", api.repos, methods=["GET"], name="dashboard_api_repos"),
        Route("/api/attempts/{attempt_id:int}", api.attempt, methods=["GET"], name="dashboard_api_attempt"),
    ]


__all__ = ["api_routes", "not_found", "unauthorized"]
