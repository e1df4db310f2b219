"""Dashboard login with GitHub (the GitHub App's user-to-server OAuth web flow) and sessions.

Routes:

* ``GET /login?next=/path``: 503 page naming ``ARCS_CLIENT_ID`` / ``ARCS_CLIENT_SECRET`` when
  they are not set; else a redirect to ``{github_web_url}/login/oauth/authorize`` with a random
  ``state`` kept (with ``next``, same-site relative paths only) in the signed cookie session.
* ``GET /login/callback?code=…&state=…``: the state is checked (constant time, single use, ten
  minutes), the code traded for a user token at ``{github_web_url}/login/oauth/access_token``;
  with that token ARCS reads ``/user``, ``/user/installations`` (this App's only),
  ``/user/installations/{id}/repositories`` and, for organizations,
  ``/user/memberships/orgs/{org}`` (an active admin may change the org's policy; a user is the
  admin of their own account). The scope becomes a ``dashboard_sessions`` row keyed by the
  SHA-256 of a random id that only the signed cookie holds, then a redirect to ``next``. The user
  token is dropped at the end of the request: never stored, never logged. A denied consent, a
  bad state or code answers 400, GitHub down or misconfigured credentials 502; no session then.
  An ``error`` sent back to the callback shows the fixed text of its code
  (:data:`bot.dashboard.loginpages.OAUTH_ERRORS`), never the request's ``error_description``.
* ``GET /logout``: a page with a "Log out" button. ``POST /logout`` (form field ``csrf``, or
  header ``X-CSRF-Token``, must equal the session's token) deletes the row and clears the cookie.

:class:`ViewerMiddleware` (pure ASGI, after Starlette's ``SessionMiddleware``) loads the session
row of each request carrying a session id and sets ``request.state.viewer`` to a
:class:`~bot.dashboard.viewer.Viewer`, or to ``None`` (no, expired or deleted session). The
cookie (``arcs_session``) is ``HttpOnly``, ``SameSite=Lax``, ``Secure`` when ``ARCS_PUBLIC_URL``
is https, and signed with ``ARCS_SESSION_SECRET`` (a random per-process key when unset: a
warning says that logins then do not survive a restart nor span several web processes).
"""

# Long (~660 lines): the login flow, reading the user's scope and the session middleware are one
# security boundary, reviewed together.

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import hmac
import html
import re
import secrets
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlencode, urlsplit

import httpx
import structlog
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.dashboard.forms import read_form
from bot.dashboard.loginpages import NO_STORE, OAUTH_ERRORS, UNKNOWN_OAUTH_ERROR, document, page
from bot.dashboard.viewer import Viewer, csrf_ok
from bot.settings import Settings

if TYPE_CHECKING:
    from bot.store.store import Store

log = structlog.get_logger("arcs.dashboard.auth")

SESSION_COOKIE = "arcs_session"
SID_KEY = "sid"
"""Key of the random session id in the signed cookie session."""
_STATE_KEY = "login_state"
_NEXT_KEY = "login_next"
_STARTED_KEY = "login_started"
STATE_MAX_AGE_S = 600
"""A login must come back from GitHub within ten minutes (GitHub's codes live as long)."""
HTTP_TIMEOUT_S = 15.0
API_VERSION = "2022-11-28"
PER_PAGE = 100
MAX_PAGES = 20
"""At most 2,000 installations, and 2,000 repositories per installation, are read at login."""
MAX_INSTALLATIONS = 200
CONCURRENCY = 8
"""GitHub API calls in flight at once while reading one user's installations."""
_CODE = re.compile(r"[A-Za-z0-9_.-]{1,256}")

Clock = Callable[[], dt.datetime]
HttpFactory = Callable[[], httpx.AsyncClient]
"""Makes the client of one login (used as ``async with``, so closed in the request's loop)."""
T = TypeVar("T")
R = TypeVar("R")


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def session_id_hash(session_id: str) -> str:
    """The ``dashboard_sessions.id_hash`` of a cookie's session id (SHA-256, hex)."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def safe_next(value: str | None, default: str = "/") -> str:
    """``value`` when it is a same-site relative path (``/orgs/acme?x=1``), else ``default``.

    Refused (open redirects): absolute and scheme-relative URLs (``https://x``, ``//x``), a
    backslash anywhere (browsers read ``/\\x`` as ``//x``), whitespace and control characters
    (browsers drop tabs and newlines: ``/\\t/x``), the login routes themselves, over 2,000 chars.
    """
    if not value or len(value) > 2000 or not value.startswith("/") or value.startswith("//"):
        return default
    if "\\" in value or any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in value):
        return default
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return default
    if parts.path in ("/login", "/logout") or parts.path.startswith("/login/"):
        return default
    return value


# --- sessions --------------------------------------------------------------------------------


def session_secret(settings: Settings) -> str:
    """``ARCS_SESSION_SECRET``, or a random key for this process (with a warning)."""
    if settings.session_secret is not None and settings.session_secret.get_secret_value():
        return settings.session_secret.get_secret_value()
    log.warning(
        "dashboard_session_secret_unset",
        hint="set ARCS_SESSION_SECRET: with a random per-process key, dashboard logins do not "
        "survive a restart and several web processes cannot share them",
    )
    return secrets.token_urlsafe(32)


def session_middleware(settings: Settings, store: Store, *, secret: str | None = None) -> list[Middleware]:
    """The signed cookie session, then :class:`ViewerMiddleware` (outermost first)."""
    return [
        Middleware(
            SessionMiddleware,
            secret_key=secret if secret is not None else session_secret(settings),
            session_cookie=SESSION_COOKIE,
            max_age=max(60, int(settings.session_hours * 3600)),
            same_site="lax",
            https_only=settings.public_url.lower().startswith("https://"),
        ),
        Middleware(ViewerMiddleware, store=store),
    ]


class ViewerMiddleware:
    """Sets ``request.state.viewer`` from the session row named by the signed cookie.

    Pure ASGI (no response buffering, streaming-safe). Only requests whose cookie carries a
    session id touch the database, and never for ``skip`` paths (static files, which the browser
    fetches with the cookie too; their viewer is ``None``); a session that is unknown or expired
    is dropped from the cookie. A database error leaves the viewer ``None`` for that request but
    keeps the cookie (an outage must not log everyone out).
    """

    def __init__(self, app: ASGIApp, store: Store, *, skip: tuple[str, ...] = ("/static/",)) -> None:
        self.app = app
        self.store = store
        self.skip = skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope.get("path", "")
            viewer = None if path.startswith(self.skip) else await self._viewer(scope)
            scope.setdefault("state", {})["viewer"] = viewer
        await self.app(scope, receive, send)

    async def _viewer(self, scope: Scope) -> Viewer | None:
        session = scope.get("session")
        if not session:
            return None
        sid = session.get(SID_KEY)
        if not isinstance(sid, str) or not sid:
            return None
        try:
            row = await run_in_threadpool(self.store.get_session, session_id_hash(sid))
        except Exception as exc:
            log.warning("dashboard_session_lookup_failed", error=repr(exc))
            return None
        if row is None:
            session.pop(SID_KEY, None)
            return None
        return Viewer.from_scope(row.login, row.scope, csrf=row.csrf)


# --- reading the user's scope from GitHub ----------------------------------------------------


class LoginFailed(Exception):
    """A login that cannot finish: the page to show, and a short reason for the log."""

    def __init__(self, status: int, title: str, *paragraphs: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.title = title
        self.paragraphs = paragraphs
        self.reason = reason

    def response(self) -> HTMLResponse:
        """The error page."""
        return page(self.status, self.title, *self.paragraphs, link=("/login", "Log in again"))


def _unreachable(what: str, exc: Exception) -> LoginFailed:
    return LoginFailed(
        502,
        "GitHub could not be reached",
        f"ARCS could not {what} ({type(exc).__name__}). Try again in a moment.",
        reason=f"{what}: {type(exc).__name__}",
    )


def _bad_answer(what: str, status: int) -> LoginFailed:
    return LoginFailed(
        502,
        "GitHub answered unexpectedly",
        f"ARCS could not {what}: GitHub answered HTTP {status}. Try again in a moment.",
        reason=f"{what}: HTTP {status}",
    )


def _json_object(response: httpx.Response, what: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise LoginFailed(
            502,
            "GitHub answered unexpectedly",
            f"ARCS could not {what}: GitHub's answer is not a JSON object.",
            reason=f"{what}: not a JSON object",
        )
    return data


async def _gather_limited(items: Iterable[T], run: Callable[[T], Awaitable[R]], limit: int) -> list[R]:
    """``run`` over ``items``, ``limit`` at a time; every call finishes before the first error
    is raised (no call is left running against a client about to close)."""
    gate = asyncio.Semaphore(limit)

    async def one(item: T) -> R:
        async with gate:
            return await run(item)

    results = await asyncio.gather(*(one(item) for item in items), return_exceptions=True)
    done: list[R] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        done.append(result)
    return done


class UserAPI:
    """GitHub REST calls with a user-to-server token (kept only as long as this object)."""

    def __init__(self, client: httpx.AsyncClient, api_url: str, token: str) -> None:
        self._client = client
        self._api = api_url.rstrip("/")
        self._origin = urlsplit(self._api)[:2]
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "ARCS",
        }

    async def _get(self, url: str, what: str) -> httpx.Response:
        try:
            return await self._client.get(url, headers=self._headers)
        except httpx.HTTPError as exc:
            raise _unreachable(what, exc) from None

    async def get_object(self, path: str, what: str) -> dict[str, Any]:
        """``GET {api}{path}`` answered 200 with a JSON object, else :class:`LoginFailed`."""
        response = await self._get(self._api + path, what)
        if response.status_code != 200:
            raise _bad_answer(what, response.status_code)
        return _json_object(response, what)

    async def list_all(self, path: str, key: str, what: str) -> list[dict[str, Any]]:
        """Every item of a paginated listing (``{key: [...]}`` pages, ``Link: rel="next"``)."""
        url: str | None = f"{self._api}{path}?{urlencode({'per_page': PER_PAGE})}"
        items: list[dict[str, Any]] = []
        for _ in range(MAX_PAGES):
            if url is None:
                return items
            response = await self._get(url, what)
            if response.status_code != 200:
                raise _bad_answer(what, response.status_code)
            chunk = _json_object(response, what).get(key)
            if not isinstance(chunk, list):
                raise _bad_answer(what, response.status_code)
            items.extend(item for item in chunk if isinstance(item, dict))
            url = response.links.get("next", {}).get("url")
            # The token goes only where the API lives, whatever a Link header says.
            if url is not None and urlsplit(url)[:2] != self._origin:
                log.warning("dashboard_login_foreign_link", what=what)
                url = None
        if url is not None:
            log.warning("dashboard_login_listing_truncated", what=what, items=len(items))
        return items

    async def is_org_admin(self, org: str) -> bool:
        """Whether the user is an active admin of ``org``.

        403 (the App lacks the organization ``members: read`` permission, or the org blocks the
        App) and 404 (not a member) mean "not an admin".
        """
        what = "read your organization membership"
        response = await self._get(f"{self._api}/user/memberships/orgs/{quote(org, safe='')}", what)
        if response.status_code in (403, 404):
            if response.status_code == 403:
                log.info("dashboard_membership_forbidden", org=org, hint="the App needs members: read")
            return False
        if response.status_code != 200:
            raise _bad_answer(what, response.status_code)
        data = _json_object(response, what)
        return data.get("state") == "active" and data.get("role") == "admin"


@dataclass(frozen=True, slots=True)
class Identity:
    """Who logged in (``user_id`` as GitHub numbers them) and what they may see."""

    viewer: Viewer
    user_id: int | None


def our_installations(
    installations: Iterable[Mapping[str, Any]], app_id: str | None
) -> list[Mapping[str, Any]]:
    """The installations of this App (``app_id`` when configured) with a usable account login."""
    mine = []
    for inst in installations:
        account = inst.get("account")
        if not isinstance(inst.get("id"), int) or not isinstance(account, Mapping):
            continue
        if not isinstance(account.get("login"), str):
            continue
        if app_id is not None and str(inst.get("app_id")) != str(app_id):
            continue
        mine.append(inst)
    return mine


async def read_identity(api: UserAPI, app_id: str | None) -> Identity:
    """Read the user's login, this App's installations they can see, the repositories of those
    installations they can see, and where they are an admin."""
    user = await api.get_object("/user", "read your GitHub account")
    login = user.get("login")
    if not isinstance(login, str) or not login:
        raise LoginFailed(
            502, "GitHub answered unexpectedly", "GitHub did not say who you are.", reason="no login"
        )
    user_id = user.get("id") if isinstance(user.get("id"), int) else None
    listed = await api.list_all("/user/installations", "installations", "list your ARCS installations")
    installations = our_installations(listed, app_id)
    if len(installations) > MAX_INSTALLATIONS:
        log.warning("dashboard_login_installations_truncated", login=login, installations=len(installations))
        installations = installations[:MAX_INSTALLATIONS]

    async def scope_of(inst: Mapping[str, Any]) -> tuple[str, list[str], bool]:
        account = inst["account"]
        owner: str = account["login"]
        listing = await api.list_all(
            f"/user/installations/{inst['id']}/repositories", "repositories", "list your repositories"
        )
        prefix = owner.lower() + "/"
        repos = [
            r["full_name"]
            for r in listing
            if isinstance(r.get("full_name"), str) and r["full_name"].lower().startswith(prefix)
        ]
        if account.get("type") == "Organization":
            admin = await api.is_org_admin(owner)
        else:
            admin = owner.lower() == login.lower()
        return owner, repos, admin

    scopes = await _gather_limited(installations, scope_of, CONCURRENCY)
    viewer = Viewer.of(
        login,
        owners=[owner for owner, _, _ in scopes],
        repos=[repo for _, repos, _ in scopes for repo in repos],
        admin_of=[owner for owner, _, admin in scopes if admin],
    )
    return Identity(viewer=viewer, user_id=user_id)


# --- the routes --------------------------------------------------------------------------------


class GitHubLogin:
    """``/login``, ``/login/callback`` and ``/logout`` (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        http: HttpFactory | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._http = http
        self._ssl: ssl.SSLContext | None = None
        self._clock = clock or _utcnow
        self.web_url = settings.web_url
        self.redirect_uri = settings.public_url.rstrip("/") + "/login/callback"

    @property
    def configured(self) -> bool:
        """Whether the App's OAuth client id and secret are set."""
        secret = self.settings.client_secret
        return bool(self.settings.client_id) and secret is not None and bool(secret.get_secret_value())

    def routes(self) -> list[Route]:
        """The routes (names ``login``, ``login_callback``, ``logout_page``, ``logout``)."""
        return [
            Route("/login", self.login, methods=["GET"], name="login"),
            Route("/login/callback", self.callback, methods=["GET"], name="login_callback"),
            Route("/logout", self.logout_page, methods=["GET"], name="logout_page"),
            Route("/logout", self.logout, methods=["POST"], name="logout"),
        ]

    def _not_configured(self) -> HTMLResponse:
        return page(
            503,
            "Dashboard login is not configured",
            "Logging in with GitHub needs the GitHub App's OAuth client id and secret: set "
            "ARCS_CLIENT_ID and ARCS_CLIENT_SECRET and restart ARCS.",
            "An app created with ARCS's /setup page has them in $ARCS_HOME/secrets.env already "
            "(restart ARCS to load them). For an app created by hand, copy the Client ID from the "
            "app's settings page on GitHub, generate a client secret there, and add "
            f"{self.redirect_uri} to its callback URLs.",
        )

    def _default_client(self) -> httpx.AsyncClient:
        # Loading the CA bundle is the slow part of a client: once per process is enough.
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return httpx.AsyncClient(timeout=HTTP_TIMEOUT_S, verify=self._ssl)

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        async with (self._http or self._default_client)() as client:
            yield client

    async def login(self, request: Request) -> Response:
        """Start the web flow (a new login each time: it also refreshes what the user may see)."""
        if not self.configured:
            return self._not_configured()
        state = secrets.token_urlsafe(32)
        session = request.session
        session[_STATE_KEY] = state
        session[_NEXT_KEY] = safe_next(request.query_params.get("next"))
        session[_STARTED_KEY] = int(self._clock().timestamp())
        query = urlencode(
            {"client_id": self.settings.client_id, "redirect_uri": self.redirect_uri, "state": state}
        )
        return RedirectResponse(
            f"{self.web_url}/login/oauth/authorize?{query}", status_code=302, headers=NO_STORE
        )

    async def callback(self, request: Request) -> Response:
        """Finish the web flow: check, exchange, read the scope, open the session."""
        session = request.session
        expected = session.pop(_STATE_KEY, None)
        started = session.pop(_STARTED_KEY, None)
        next_path = safe_next(session.pop(_NEXT_KEY, None))
        params = request.query_params
        error = params.get("error")
        if error:
            log.info("dashboard_login_refused", error=error[:64])
            title, text = OAUTH_ERRORS.get(error, UNKNOWN_OAUTH_ERROR)
            return page(400, title, text, link=("/login", "Try again"))
        given = params.get("state") or ""
        if (
            not isinstance(expected, str)
            or not given
            or not hmac.compare_digest(given.encode(), expected.encode())
        ):
            log.warning("dashboard_login_bad_state", had_state=isinstance(expected, str))
            return page(
                400,
                "This login did not start here",
                "The answer from GitHub does not match a login started in this browser (state "
                "mismatch; the link may be stale or forged). Nothing was changed.",
                link=("/login", "Log in again"),
            )
        now = int(self._clock().timestamp())
        if not isinstance(started, int) or not 0 <= now - started <= STATE_MAX_AGE_S:
            return page(
                400,
                "This login expired",
                "Logins must finish within ten minutes.",
                link=("/login", "Log in again"),
            )
        code = params.get("code") or ""
        if not _CODE.fullmatch(code):
            return page(
                400,
                "GitHub sent no login code",
                "The callback carries no usable code.",
                link=("/login", "Log in again"),
            )
        if not self.configured:
            return self._not_configured()
        try:
            async with self._client() as client:
                identity = await self._identify(client, code)
        except LoginFailed as exc:
            log.warning("dashboard_login_failed", status=exc.status, reason=exc.reason)
            return exc.response()
        return await self._open_session(request, identity, next_path)

    async def _identify(self, client: httpx.AsyncClient, code: str) -> Identity:
        token = await self._exchange(client, code)
        # The token lives in this frame and the UserAPI only; both end with the request.
        return await read_identity(UserAPI(client, self.settings.github_api_url, token), self.settings.app_id)

    async def _exchange(self, client: httpx.AsyncClient, code: str) -> str:
        what = "finish the login with GitHub"
        secret = self.settings.client_secret
        assert self.settings.client_id is not None and secret is not None
        try:
            response = await client.post(
                f"{self.web_url}/login/oauth/access_token",
                data={
                    "client_id": self.settings.client_id,
                    "client_secret": secret.get_secret_value(),
                    "code": code,
                    "redirect_uri": self.redirect_uri,
                },
                headers={"Accept": "application/json", "User-Agent": "ARCS"},
            )
        except httpx.HTTPError as exc:
            raise _unreachable(what, exc) from None
        if response.status_code != 200:
            raise _bad_answer(what, response.status_code)
        data = _json_object(response, what)
        error = data.get("error")
        if error == "bad_verification_code":
            raise LoginFailed(
                400,
                "This login code is not valid",
                "GitHub says the login code is wrong, expired or already used. Log in again.",
                reason="bad_verification_code",
            )
        if error == "incorrect_client_credentials":
            raise LoginFailed(
                502,
                "ARCS's GitHub App credentials are wrong",
                "GitHub rejected ARCS_CLIENT_ID / ARCS_CLIENT_SECRET. An administrator must set the "
                "GitHub App's client id and a current client secret.",
                reason="incorrect_client_credentials",
            )
        if error == "redirect_uri_mismatch":
            raise LoginFailed(
                502,
                "The callback URL is not registered",
                f"The GitHub App does not list {self.redirect_uri} among its callback URLs. An "
                "administrator must add it on the app's settings page (or fix ARCS_PUBLIC_URL).",
                reason="redirect_uri_mismatch",
            )
        if error is not None:
            title, text = OAUTH_ERRORS.get(str(error), UNKNOWN_OAUTH_ERROR)
            raise LoginFailed(502, title, text, reason=f"oauth error {str(error)[:64]}")
        token = data.get("access_token")
        if not isinstance(token, str) or not token:
            raise LoginFailed(
                502, "GitHub answered unexpectedly", "GitHub sent no token.", reason="no access_token"
            )
        return token

    async def _open_session(self, request: Request, identity: Identity, next_path: str) -> Response:
        session = request.session
        previous = session.get(SID_KEY)
        sid = secrets.token_urlsafe(32)
        csrf = secrets.token_urlsafe(32)
        expires_at = self._clock() + dt.timedelta(hours=self.settings.session_hours)
        viewer = identity.viewer

        def save() -> None:
            if isinstance(previous, str) and previous:
                self.store.delete_session(session_id_hash(previous))
            self.store.create_session(
                session_id_hash(sid),
                login=viewer.login,
                user_id=identity.user_id,
                scope=viewer.scope_json(),
                csrf=csrf,
                expires_at=expires_at,
            )

        try:
            await run_in_threadpool(save)
        except Exception as exc:
            log.error("dashboard_session_not_saved", error=repr(exc))
            return page(
                503,
                "The dashboard is unavailable",
                "ARCS could not save your login (database unavailable). Try again in a moment.",
            )
        session.clear()
        session[SID_KEY] = sid
        log.info(
            "dashboard_login",
            login=viewer.login,
            owners=len(viewer.owners),
            repos=len(viewer.repos),
            admin_of=len(viewer.admin_of),
        )
        return RedirectResponse(next_path, status_code=303, headers=NO_STORE)

    async def logout_page(self, request: Request) -> Response:
        """A page with the "Log out" button (or saying that nobody is logged in)."""
        viewer: Viewer | None = getattr(request.state, "viewer", None)
        if viewer is None:
            return page(
                200,
                "You are logged out",
                "You are not logged in to the ARCS dashboard.",
                link=("/login", "Log in with GitHub"),
            )
        body = (
            f"<p>You are logged in as {html.escape(viewer.login)}.</p>"
            "<form method='post' action='/logout'>"
            f"<input type='hidden' name='csrf' value='{html.escape(viewer.csrf, quote=True)}'>"
            "<button type='submit'>Log out</button></form>"
        )
        return HTMLResponse(document("Log out", body), headers=NO_STORE)

    async def logout(self, request: Request) -> Response:
        """Delete the session (the CSRF token must match) and clear the cookie."""
        viewer: Viewer | None = getattr(request.state, "viewer", None)
        session = request.session
        if viewer is None:
            session.clear()
            return RedirectResponse("/logout", status_code=303, headers=NO_STORE)
        form = await read_form(request) or {}
        if not csrf_ok(viewer, form.get("csrf") or request.headers.get("x-csrf-token")):
            log.warning("dashboard_logout_bad_csrf", login=viewer.login)
            return page(
                403,
                "Not logged out",
                "The form is stale or did not come from ARCS (CSRF token mismatch). Reload the page and try again.",
                link=("/logout", "Log out"),
            )
        sid = session.get(SID_KEY)
        if isinstance(sid, str) and sid:
            try:
                await run_in_threadpool(self.store.delete_session, session_id_hash(sid))
            except Exception as exc:  # the cookie is cleared anyway; the row expires by itself
                log.warning("dashboard_session_not_deleted", error=repr(exc))
        session.clear()
        log.info("dashboard_logout", login=viewer.login)
        return RedirectResponse("/logout", status_code=303, headers=NO_STORE)
