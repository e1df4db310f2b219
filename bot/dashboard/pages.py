"""The dashboard's HTML pages (server-rendered; no JavaScript needed).

Authorization (the login middleware sets ``request.state.viewer``): no viewer -> 303 to
``/login?next=<path>``; an org, repository or attempt the viewer cannot see answers the same 404
as a missing one. The policy form is for org admins (:meth:`Viewer.is_admin`), carries the
session's CSRF token (checked with :func:`hmac.compare_digest`) and answers 403 otherwise.

Routes: ``GET /``, ``GET /orgs/{owner}``, ``GET /orgs/{owner}/repos/{name}``,
``GET /orgs/{owner}/repos/{name}/flaky``, ``GET /orgs/{owner}/events``,
``POST /orgs/{owner}/policy``, ``GET /attempts/{id}``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.templating import Jinja2Templates

from bot.dashboard import charts, queries
from bot.dashboard.changeview import change_view
from bot.dashboard.forms import read_form
from bot.dashboard.templating import make_templates
from bot.dashboard.traceview import stored_report, summary_view, trace_view
from bot.dashboard.viewer import Viewer, csrf_ok, viewer_of
from bot.settings import Settings
from bot.store.store import Store, utcnow
from jobs.test_history import FLAKY_WINDOW, known_flaky_since

Clock = Callable[[], dt.datetime]

DEFAULT_WEEKS = 12
MAX_WEEKS = 104
ATTEMPTS_PER_PAGE = 50
PROBLEMS_PER_PAGE = 50
MAX_USD = 1_000_000.0
MAX_PRS_PER_DAY = 10_000
_TRUE = frozenset({"on", "1", "true", "yes"})
_FALSE = frozenset({"off", "0", "false", "no"})


# --- request helpers (shared with the API) --------------------------------------------------------


def login_redirect(request: Request) -> RedirectResponse:
    """303 to ``/login?next=<this path and query>``."""
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)


def int_param(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    """A query parameter as an int clamped to ``[low, high]`` (``default`` when absent or not a number)."""
    raw = request.query_params.get(name, "")
    try:
        value = int(raw)
    except ValueError:
        return default
    return min(max(value, low), high)


MAX_DB_ID = 2**63 - 1
"""The largest id a row can have (64-bit signed on PostgreSQL and SQLite alike)."""


def id_param(request: Request, name: str) -> int | None:
    """A path parameter that names a row (``{attempt_id:int}``), or ``None`` when no row can have
    it (0, or beyond :data:`MAX_DB_ID`): the caller answers 404, the database is never asked."""
    value = request.path_params.get(name)
    if not isinstance(value, int) or not 1 <= value <= MAX_DB_ID:
        return None
    return value


def weeks_param(request: Request) -> int:
    """``?weeks=N`` (1-104, default 12): the window of the numbers and charts."""
    return int_param(request, "weeks", DEFAULT_WEEKS, low=1, high=MAX_WEEKS)


# --- policy form ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyInput:
    """A validated policy form: the row it targets and the fields to write."""

    repo: str
    """``''`` for the owner's row, else ``owner/name``."""
    fields: dict[str, Any]


def parse_policy_form(
    form: Mapping[str, str], owner: str, can_see_repo: Callable[[str], bool]
) -> tuple[PolicyInput | None, list[str]]:
    """Validate the policy form: ``(input, [])`` or ``(None, errors)``.

    Empty fields mean "not set" (``None``: no limit on the owner's row; inherit the owner's value
    on a repository row). ``paused`` is a checkbox on the owner's row (absent = not paused) and a
    choice on a repository row (``''`` inherit, ``1`` paused, ``0`` running).
    """
    errors: list[str] = []
    repo_field = form.get("repo", "").strip()
    repo = ""
    if repo_field:
        name = repo_field.split("/", 1)[1] if "/" in repo_field else repo_field
        if (
            repo_field.count("/") > 1
            or not name
            or ("/" in repo_field and repo_field.split("/", 1)[0].lower() != owner.lower())
        ):
            errors.append(f"repository must be a repository of {owner}")
        else:
            repo = f"{owner}/{name}"
            if not can_see_repo(repo):
                errors.append(f"{repo} is not a repository of {owner} you can see")
    fields: dict[str, Any] = {}

    paused_raw = form.get("paused", "").strip().lower()
    if paused_raw in _TRUE:
        fields["paused"] = True
    elif paused_raw in _FALSE:
        fields["paused"] = False
    elif paused_raw == "":
        fields["paused"] = None if repo else False
    else:
        errors.append("paused must be on or off")

    usd_raw = form.get("monthly_usd", "").strip().lstrip("$")
    if usd_raw == "":
        fields["monthly_usd"] = None
    else:
        try:
            usd = float(usd_raw)
        except ValueError:
            usd = math.nan
        if not math.isfinite(usd) or usd < 0 or usd > MAX_USD:
            errors.append(f"monthly budget must be a number of USD from 0 to {MAX_USD:,.0f}, or empty")
        else:
            fields["monthly_usd"] = round(usd, 2)

    prs_raw = form.get("max_prs_per_day", "").strip()
    if prs_raw == "":
        fields["max_prs_per_day"] = None
    elif not prs_raw.isdigit() or int(prs_raw) > MAX_PRS_PER_DAY:
        errors.append(f"PRs per day must be a whole number from 0 to {MAX_PRS_PER_DAY}, or empty")
    else:
        fields["max_prs_per_day"] = int(prs_raw)

    hours: dict[str, int | None] = {}
    for key, label in (("quiet_start", "quiet hours start"), ("quiet_end", "quiet hours end")):
        raw = form.get(key, "").strip()
        if raw == "":
            hours[key] = None
        elif not raw.isdigit() or int(raw) > 23:
            errors.append(f"{label} must be an hour from 0 to 23, or empty")
        else:
            hours[key] = int(raw)
    if len(hours) == 2:
        if (hours["quiet_start"] is None) != (hours["quiet_end"] is None):
            errors.append("set both quiet hours (start and end) or neither")
        else:
            fields.update(hours)

    tz_raw = form.get("timezone", "").strip()
    if tz_raw == "":
        fields["timezone"] = None
    elif len(tz_raw) > 64 or not _valid_timezone(tz_raw):
        errors.append("timezone must be an IANA time zone name such as Europe/Berlin or UTC")
    else:
        fields["timezone"] = tz_raw

    if errors:
        return None, errors
    return PolicyInput(repo=repo, fields=fields), []


def _valid_timezone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


# --- pages ---------------------------------------------------------------------------------------


class _Pages:
    def __init__(
        self, store: Store, settings: Settings, templates: Jinja2Templates, clock: Clock, local: bool = False
    ) -> None:
        self.store = store
        self.settings = settings
        self.templates = templates
        self.clock = clock
        self.local = local

    # -- rendering --

    def render(
        self, request: Request, name: str, viewer: Viewer | None, context: dict[str, Any], status: int = 200
    ) -> Response:
        nav = sorted(viewer.owners) if viewer is not None else []
        ctx = {"viewer": viewer, "nav_owners": nav, **context}
        return self.templates.TemplateResponse(request, name, ctx, status_code=status)

    def not_found(self, request: Request, viewer: Viewer | None) -> Response:
        # One body for "missing" and "not yours": the page must not reveal what exists.
        return self.render(
            request, "error.html", viewer, {"title": "Not found", "message": "There is nothing here."}, 404
        )

    def forbidden(self, request: Request, viewer: Viewer, message: str) -> Response:
        return self.render(request, "error.html", viewer, {"title": "Forbidden", "message": message}, 403)

    # -- GET / --

    def index(self, request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None:
            return login_redirect(request)
        weeks = weeks_param(request)
        since = queries.window_start(self.clock(), weeks)
        found = {o.owner.lower(): o for o in queries.owners_with_data(self.store, viewer.repos, since=since)}
        rows = []
        for key in sorted(viewer.owners):
            summary = found.get(key)
            rows.append(
                {
                    "owner": summary.owner if summary else key,
                    "repos": len(viewer.visible_repos(key)),
                    "active_repos": summary.repos if summary else 0,
                    "stats": summary.stats if summary else queries.Stats(),
                    "last": summary.last_attempt_at if summary else None,
                    "admin": viewer.is_admin(key),
                }
            )
        return self.render(
            request, "index.html", viewer, {"title": "Organizations", "rows": rows, "weeks": weeks}
        )

    # -- GET /orgs/{owner} --

    def org(self, request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None:
            return login_redirect(request)
        owner = str(request.path_params["owner"])
        if not viewer.can_see_owner(owner):
            return self.not_found(request, viewer)
        return self.org_page(request, viewer, owner)

    def org_page(
        self,
        request: Request,
        viewer: Viewer,
        owner: str,
        *,
        errors: list[str] | None = None,
        form: Mapping[str, str] | None = None,
        status: int = 200,
    ) -> Response:
        weeks = weeks_param(request)
        repos = viewer.visible_repos(owner)
        name = queries.owner_name(self.store, owner)
        overview = queries.org_overview(self.store, name, repos, now=self.clock(), weeks=weeks)
        problems = queries.problems(self.store, repos, limit=5)
        policy_rows = queries.policies(self.store, name, repos)
        known = {r.repo.lower(): r.repo for r in overview.repos}
        repo_choices = sorted((known.get(r, r) for r in repos), key=str.lower)
        context = {
            "title": name,
            "owner": name,
            "weeks": weeks,
            "ov": overview,
            "charts": {
                "rates": Markup(charts.rates_chart(overview.weeks)),
                "outcomes": Markup(charts.outcomes_chart(overview.classes)),
                "cost": Markup(charts.cost_chart(overview.weeks)),
            },
            "problems": problems,
            "policies": policy_rows,
            "owner_policy": next((p for p in policy_rows if p.repo == ""), None),
            "repo_policies": [p for p in policy_rows if p.repo != ""],
            "repo_choices": repo_choices,
            "is_admin": viewer.is_admin(owner),
            "saved": request.query_params.get("saved") == "1",
            "errors": errors or [],
            "form": dict(form or {}),
        }
        return self.render(request, "org.html", viewer, context, status)

    def repo_viewer(self, request: Request) -> tuple[Viewer, str, str] | Response:
        """``(viewer, owner, owner/name)`` of a repository page the viewer may see; else the login
        redirect or the same 404 as for a repository that does not exist."""
        viewer = viewer_of(request)
        if viewer is None:
            return login_redirect(request)
        owner = str(request.path_params["owner"])
        full = f"{owner}/{request.path_params['name']}"
        if not viewer.can_see_owner(owner) or not viewer.can_see_repo(full):
            return self.not_found(request, viewer)
        return viewer, owner, full

    # -- GET /orgs/{owner}/repos/{name} --

    def repo(self, request: Request) -> Response:
        seen = self.repo_viewer(request)
        if isinstance(seen, Response):
            return seen
        viewer, owner, full = seen
        weeks = weeks_param(request)
        now = self.clock()
        since = queries.window_start(now, weeks)
        name = queries.repo_name(self.store, full)
        page_no = int_param(request, "page", 1, low=1, high=1_000_000)
        page = queries.repo_attempts(self.store, name, page=page_no, per_page=ATTEMPTS_PER_PAGE)
        week_rows = queries.weekly(self.store, {full}, now=now, weeks=weeks)
        context = {
            "title": name,
            "owner": queries.owner_name(self.store, owner),
            "repo": name,
            "weeks": weeks,
            "stats": queries.stats(self.store, {full}, since=since),
            "rates_chart": Markup(charts.rates_chart(week_rows)),
            "page": page,
            "org_defaults": queries.org_defaults(self.store, full),
            "flaky_path": f"/orgs/{quote(owner)}/repos/{quote(str(request.path_params['name']))}/flaky",
        }
        return self.render(request, "repo.html", viewer, context)

    # -- GET /orgs/{owner}/repos/{name}/flaky --

    def flaky(self, request: Request) -> Response:
        seen = self.repo_viewer(request)
        if isinstance(seen, Response):
            return seen
        viewer, owner, full = seen
        name = queries.repo_name(self.store, full)
        now = self.clock()
        context = {
            "title": f"Flaky tests of {name}",
            "owner": queries.owner_name(self.store, owner),
            "repo": name,
            "repo_path": f"/orgs/{quote(owner)}/repos/{quote(str(request.path_params['name']))}",
            "days": FLAKY_WINDOW.days,
            # the store is the test history; the classifier decides, as for the check run
            "tests": known_flaky_since(self.store, name, now - FLAKY_WINDOW),
        }
        return self.render(request, "flaky.html", viewer, context)

    # -- GET /orgs/{owner}/events --

    def events(self, request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None:
            return login_redirect(request)
        owner = str(request.path_params["owner"])
        if not viewer.can_see_owner(owner):
            return self.not_found(request, viewer)
        page_no = int_param(request, "page", 1, low=1, high=100_000)
        found = queries.problems(
            self.store,
            viewer.visible_repos(owner),
            limit=PROBLEMS_PER_PAGE + 1,
            offset=(page_no - 1) * PROBLEMS_PER_PAGE,
        )
        name = queries.owner_name(self.store, owner)
        context = {
            "title": f"{name}: refusals and errors",
            "owner": name,
            "problems": found[:PROBLEMS_PER_PAGE],
            "page_no": page_no,
            "has_next": len(found) > PROBLEMS_PER_PAGE,
        }
        return self.render(request, "events.html", viewer, context)

    # -- GET /attempts/{id} --

    def attempt(self, request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None:
            return login_redirect(request)
        attempt_id = id_param(request, "attempt_id")
        if attempt_id is None:
            return self.not_found(request, viewer)
        detail = queries.attempt_detail(self.store, attempt_id, viewer.repos)
        if detail is None or not viewer.can_see_owner(detail.row.repo.split("/", 1)[0]):
            return self.not_found(request, viewer)
        full = queries.read_trace(detail.trace_path, self.settings.traces_dir)
        web = self.settings.web_url
        repo_path = quote(detail.row.repo, safe="/")
        links = {
            "repo": f"{web}/{repo_path}",
            "run": f"{web}/{repo_path}/actions/runs/{detail.row.run_id}" if detail.row.run_id else "",
            "issue": f"{web}/{repo_path}/issues/{detail.row.issue_number}" if detail.row.issue_number else "",
            "pr": (detail.pr.url if detail.pr else detail.row.pr_url) or "",
        }
        if self.local:  # `arcs dashboard`: a folder of this machine, not a repository on GitHub
            links = {"repo": "", "run": "", "issue": "", "pr": links["pr"]}
        trace = trace_view(full) if full is not None else None
        report = stored_report(detail.trace_summary)
        context = {
            "title": f"Attempt #{detail.row.id}",
            "a": detail.row,
            "d": detail,
            "owner": detail.row.repo.split("/", 1)[0],
            "name": detail.row.repo.split("/", 1)[-1],
            "trace": trace,
            "summary": summary_view(report),
            "change": change_view(trace.changes if trace is not None else None, report, detail.pr),
            "links": links,
        }
        return self.render(request, "attempt.html", viewer, context)

    # -- POST /orgs/{owner}/policy --

    async def policy(self, request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None:
            return login_redirect(request)
        owner = str(request.path_params["owner"])
        if not viewer.can_see_owner(owner):
            return self.not_found(request, viewer)
        values = await read_form(request)
        if values is None:
            return self.render(
                request,
                "error.html",
                viewer,
                {"title": "Bad request", "message": "Send the form from the page."},
                400,
            )
        if not csrf_ok(viewer, values.get("csrf")):
            return self.forbidden(
                request, viewer, "The form expired or did not come from this page; reload and retry."
            )
        if not viewer.is_admin(owner):
            return self.forbidden(request, viewer, f"Only admins of {owner} can change its policy.")
        parsed, errors = parse_policy_form(values, owner, viewer.can_see_repo)
        if parsed is None:
            return await run_in_threadpool(
                self.org_page, request, viewer, owner, errors=errors, form=values, status=400
            )
        await run_in_threadpool(self._save_policy, viewer, owner, parsed)
        return RedirectResponse(f"/orgs/{quote(owner, safe='')}?saved=1#policy", status_code=303)

    def _save_policy(self, viewer: Viewer, owner: str, parsed: PolicyInput) -> None:
        # The row is unique by exact (owner, repo): update an existing row under its spelling,
        # else spell the names as GitHub does (from the attempts).
        existing = queries.policies(self.store, owner, {parsed.repo} if parsed.repo else set())
        name = existing[0].owner if existing else queries.owner_name(self.store, owner)
        repo = ""
        if parsed.repo:
            same = [p.repo for p in existing if p.repo.lower() == parsed.repo.lower()]
            repo = same[0] if same else queries.repo_name(self.store, parsed.repo)
        self.store.set_policy(name, repo, updated_by=viewer.login, **parsed.fields)


def page_routes(store: Store, settings: Settings, *, clock: Clock = utcnow) -> list[BaseRoute]:
    """The page routes: ``/``, ``/orgs/{owner}``, ``/orgs/{owner}/repos/{name}`` (and its ``/flaky``),
    ``/attempts/{id}``,
    ``/orgs/{owner}/events`` and ``POST /orgs/{owner}/policy`` (``clock``: "now" for the windows)."""
    return _routes(_Pages(store, settings, make_templates(settings), clock))


def local_page_routes(store: Store, settings: Settings, *, clock: Clock = utcnow) -> list[BaseRoute]:
    """The same pages for ``arcs dashboard``: this machine's runs, no login, no links to GitHub."""
    return _routes(_Pages(store, settings, make_templates(settings, local=True), clock, local=True))


def _routes(pages: _Pages) -> list[BaseRoute]:
    # Sync endpoints run in Starlette's thread pool (the store is synchronous).
    return [
        Route("/", pages.index, methods=["GET"], name="dashboard_index"),
        Route("/orgs/{owner}", pages.org, methods=["GET"], name="dashboard_org"),
        Route("/orgs/{owner}/repos/{name}", pages.repo, methods=["GET"], name="dashboard_repo"),
        Route("/orgs/{owner}/repos/{name}/flaky", pages.flaky, methods=["GET"], name="dashboard_flaky"),
        Route("/orgs/{owner}/events", pages.events, methods=["GET"], name="dashboard_events"),
        Route("/orgs/{owner}/policy", pages.policy, methods=["POST"], name="dashboard_policy"),
        Route("/attempts/{attempt_id:int}", pages.attempt, methods=["GET"], name="dashboard_attempt"),
    ]


__all__ = [
    "MAX_DB_ID",
    "PolicyInput",
    "id_param",
    "login_redirect",
    "page_routes",
    "parse_policy_form",
    "weeks_param",
]
