"""One-click GitHub App creation (the manifest flow, as in Probot).

1. ``GET /setup`` renders a form that posts the manifest (``app.yml`` plus this deployment's URLs)
   to ``{github}/settings/apps/new?state=…`` (``/organizations/{org}/…`` with ``?org=``) and
   submits itself. The state is random, time-stamped and also set as an ``HttpOnly`` cookie.
2. GitHub creates the app and redirects to ``GET /setup/callback?code=…&state=…``. The state must
   equal the cookie (CSRF: another site cannot make a browser present a state it never received);
   the code is exchanged with ``POST {api}/app-manifests/{code}/conversions`` (unauthenticated,
   valid for one hour).
3. The app id, the private key (``github-app.pem``) and the webhook secret are written to
   ``$ARCS_HOME/secrets.env`` (mode 0600, never overwritten) for the next start.

Both routes refuse once the app is configured (``ARCS_APP_ID`` set or ``secrets.env`` present).
GitHub Enterprise Server is supported: the web URL is derived from ``ARCS_GITHUB_API_URL``.
"""

from __future__ import annotations

import copy
import hmac
import html
import json
import os
import re
import secrets
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import structlog
import yaml
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from bot.settings import Settings

log = structlog.get_logger("arcs.setup")

MANIFEST_FILE = Path(__file__).with_name("app.yml")
"""The packaged manifest (a link to the repository's ``app.yml``)."""

SECRETS_FILE = "secrets.env"
PRIVATE_KEY_FILE = "github-app.pem"
STATE_COOKIE = "arcs_setup_state"
STATE_MAX_AGE_S = 3600
EXCHANGE_TIMEOUT_S = 30.0

_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_CODE = re.compile(r"[A-Za-z0-9_-]{1,200}")


def load_manifest(path: Path = MANIFEST_FILE) -> dict[str, Any]:
    """Read ``app.yml``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a mapping")
    return data


def build_manifest(settings: Settings, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest to post: ``app.yml`` with this deployment's webhook and redirect URLs."""
    manifest = copy.deepcopy(dict(base if base is not None else load_manifest()))
    public = settings.public_url.rstrip("/")
    manifest.setdefault("url", public)
    hook = dict(manifest.get("hook_attributes") or {})
    hook["url"] = f"{public}/webhooks/github"
    hook.setdefault("active", True)
    manifest["hook_attributes"] = hook
    manifest["redirect_url"] = f"{public}/setup/callback"
    return manifest


def github_web_url(api_url: str) -> str:
    """The web URL of the GitHub that serves ``api_url`` (github.com, GHE.com or GHES)."""
    parts = urlsplit(api_url.rstrip("/"))
    host = parts.netloc
    if host == "api.github.com":
        return "https://github.com"
    if host.startswith("api.") and parts.path in ("", "/"):
        # GHE.com data residency: api.SUBDOMAIN.ghe.com -> SUBDOMAIN.ghe.com
        return f"{parts.scheme}://{host.removeprefix('api.')}"
    # GHES: https://HOST/api/v3 -> https://HOST
    return f"{parts.scheme}://{host}{parts.path.removesuffix('/api/v3')}"


def secrets_path(settings: Settings) -> Path:
    """Where the manifest flow writes the app's credentials."""
    return settings.home / SECRETS_FILE


def is_configured(settings: Settings) -> bool:
    """Whether an app is already set up (then the manifest flow is refused)."""
    return settings.app_id is not None or secrets_path(settings).exists()


def _page(title: str, body: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>",
        status_code=status_code,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def _refuse_configured() -> HTMLResponse:
    return _page(
        "ARCS is already configured",
        "<p>A GitHub App is already set up for this deployment (ARCS_APP_ID is set or "
        "secrets.env exists). Remove it first to create another one.</p>",
        409,
    )


def _new_state() -> str:
    return f"{int(time.time())}.{secrets.token_urlsafe(32)}"


def _state_ok(query_state: str | None, cookie_state: str | None, now: float) -> bool:
    if not query_state or not cookie_state:
        return False
    if not hmac.compare_digest(query_state.encode(), cookie_state.encode()):
        return False
    stamp, _, _ = query_state.partition(".")
    return stamp.isdigit() and 0 <= now - int(stamp) <= STATE_MAX_AGE_S


def write_credentials(settings: Settings, conversion: Mapping[str, Any]) -> Path:
    """Write the private key and ``secrets.env`` (both 0600); refuse to overwrite ``secrets.env``."""
    home = settings.home
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    key_path = home / PRIVATE_KEY_FILE
    _write_private(key_path, str(conversion["pem"]).encode(), overwrite=True)
    lines = [
        "# Written by the ARCS manifest flow; load with `set -a; . ./secrets.env; set +a`.",
        f"ARCS_APP_ID={shlex.quote(str(conversion['id']))}",
        f"ARCS_PRIVATE_KEY_PATH={shlex.quote(str(key_path))}",
        f"ARCS_WEBHOOK_SECRET={shlex.quote(str(conversion['webhook_secret']))}",
    ]
    slug = conversion.get("slug")
    if isinstance(slug, str) and slug:
        lines.append(f"ARCS_BOT_LOGIN={shlex.quote(slug + '[bot]')}")
    target = secrets_path(settings)
    _write_private(target, ("\n".join(lines) + "\n").encode(), overwrite=False)
    return target


def _write_private(path: Path, data: bytes, *, overwrite: bool) -> None:
    # Created 0600 from the first byte (no chmod window); published atomically.
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        tmp.chmod(0o600)
        if overwrite:
            tmp.replace(path)
        else:
            path.hardlink_to(tmp)  # fails if it exists: two racing callbacks cannot both win
    finally:
        if tmp.exists():
            tmp.unlink()


class ManifestFlow:
    """The two routes of the manifest flow, bound to settings."""

    def __init__(self, settings: Settings, *, manifest: Mapping[str, Any] | None = None) -> None:
        self.settings = settings
        self._manifest = manifest

    def routes(self) -> list[Route]:
        """``GET /setup`` and ``GET /setup/callback``."""
        return [
            Route("/setup", self.start, methods=["GET"]),
            Route("/setup/callback", self.callback, methods=["GET"]),
        ]

    async def start(self, request: Request) -> HTMLResponse:
        """Render the auto-submitting form that posts the manifest to GitHub."""
        if is_configured(self.settings):
            return _refuse_configured()
        web = github_web_url(self.settings.github_api_url)
        org = request.query_params.get("org")
        if org is not None and not _ORG.fullmatch(org):
            return _page("Invalid organization", "<p>?org= must be an organization login.</p>", 400)
        manifest = build_manifest(self.settings, self._manifest)
        name = request.query_params.get("name")
        if name:
            manifest["name"] = name[:34]  # GitHub's limit on app names
        state = _new_state()
        where = f"/organizations/{quote(org)}/settings/apps/new" if org else "/settings/apps/new"
        action = f"{web}{where}?state={quote(state)}"
        body = (
            f"<form method='post' action='{html.escape(action, quote=True)}'>"
            f"<input type='hidden' name='manifest' value='{html.escape(json.dumps(manifest), quote=True)}'>"
            "<p>Creating the GitHub App on GitHub… If nothing happens, press the button.</p>"
            "<button type='submit'>Create the GitHub App</button></form>"
            "<script>document.forms[0].submit();</script>"
        )
        response = _page("Create the ARCS GitHub App", body)
        response.set_cookie(
            STATE_COOKIE,
            state,
            max_age=STATE_MAX_AGE_S,
            path="/setup",
            httponly=True,
            samesite="lax",  # sent on GitHub's top-level redirect back, not on cross-site posts
            secure=self.settings.public_url.startswith("https://"),
        )
        return response

    async def callback(self, request: Request) -> HTMLResponse:
        """Check the state, exchange the code, write the credentials."""
        if is_configured(self.settings):
            return _refuse_configured()
        if not _state_ok(request.query_params.get("state"), request.cookies.get(STATE_COOKIE), time.time()):
            return _page(
                "Setup link expired or invalid",
                "<p>The state does not match this browser's setup session. Start again at "
                "<a href='/setup'>/setup</a>.</p>",
                400,
            )
        code = request.query_params.get("code") or ""
        if not _CODE.fullmatch(code):
            return _page("Missing code", "<p>GitHub did not send a valid code.</p>", 400)
        api = self.settings.github_api_url.rstrip("/")
        try:
            async with httpx.AsyncClient(timeout=EXCHANGE_TIMEOUT_S) as client:
                reply = await client.post(
                    f"{api}/app-manifests/{code}/conversions",
                    headers={
                        "Accept": "application/vnd.github+json",
                        "X-GitHub-Api-Version": "2022-11-28",
                    },
                )
        except httpx.HTTPError as exc:
            log.error("manifest_exchange_failed", error=repr(exc))
            return _page("GitHub unreachable", "<p>Could not reach the GitHub API. Try again.</p>", 502)
        if reply.status_code != 201:
            log.error("manifest_exchange_refused", status=reply.status_code)
            return _page(
                "GitHub refused the code",
                f"<p>GitHub answered {reply.status_code}. Codes are valid for one hour and only "
                "once: start again at <a href='/setup'>/setup</a>.</p>",
                502,
            )
        conversion = reply.json()
        if not isinstance(conversion, dict) or not {"id", "pem", "webhook_secret"} <= conversion.keys():
            return _page("Unexpected answer", "<p>GitHub's answer lacks the app credentials.</p>", 502)
        try:
            target = write_credentials(self.settings, conversion)
        except FileExistsError:
            return _refuse_configured()
        log.info("github_app_created", app_id=conversion["id"], slug=conversion.get("slug"))
        app_url = str(conversion.get("html_url") or "")
        install = (
            f"<p><a href='{html.escape(app_url, quote=True)}/installations/new'>Install the app</a> "
            "on your repositories.</p>"
            if app_url.startswith(("https://", "http://"))
            else ""
        )
        response = _page(
            "GitHub App created",
            f"<p>Credentials written to <code>{html.escape(str(target))}</code> (mode 0600). "
            "Restart ARCS so it reads them.</p>" + install,
        )
        response.delete_cookie(STATE_COOKIE, path="/setup")
        return response
