"""One-click GitHub App creation (the manifest flow, as in Probot), behind a one-time token.

0. Whoever completes this flow decides which GitHub App the deployment trusts, so it needs the
   setup token (``ARCS_SETUP_TOKEN``): ``arcs serve`` makes a random one when no app is
   configured and prints the link ``{public_url}/setup?token=…``. Without a configured token
   both routes refuse (403); the flow is never open by default.
1. ``GET /setup?token=…`` checks the token (constant time) and renders a form that posts the
   manifest (``app.yml`` plus this deployment's URLs) to ``{github}/settings/apps/new?state=…``
   (``/organizations/{org}/…`` with ``?org=``) and submits itself. The state is time-stamped,
   random and signed with the token (HMAC-SHA256: the token itself never goes to GitHub), and
   also set as an ``HttpOnly`` cookie.
2. GitHub creates the app and redirects to ``GET /setup/callback?code=…&state=…``. The state must
   equal the cookie (CSRF: another site cannot make a browser present a state it never received)
   and carry a valid signature (so only a browser that opened the token link gets this far);
   the code is exchanged with ``POST {api}/app-manifests/{code}/conversions`` (unauthenticated,
   valid for one hour).
3. The app id, the private key (``github-app.pem``), the webhook secret and the OAuth client
   id and secret (the dashboard's "log in with GitHub") are written to ``$ARCS_HOME/secrets.env``
   (mode 0600, never overwritten) for the next start.

Both routes refuse once the app is configured (``ARCS_APP_ID`` set or ``secrets.env`` present):
writing ``secrets.env`` spends the token.
GitHub Enterprise Server is supported: the web URL is derived from ``ARCS_GITHUB_API_URL``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
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
from urllib.parse import quote

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
MIN_SETUP_TOKEN_CHARS = 16
"""A shorter ``ARCS_SETUP_TOKEN`` is refused (``arcs serve`` makes 43-character ones)."""

_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_CODE = re.compile(r"[A-Za-z0-9_-]{1,200}")


def load_manifest(path: Path = MANIFEST_FILE) -> dict[str, Any]:
    """Read ``app.yml``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a mapping")
    return data


def build_manifest(settings: Settings, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest to post: ``app.yml`` with this deployment's webhook, redirect and login
    callback URLs."""
    manifest = copy.deepcopy(dict(base if base is not None else load_manifest()))
    public = settings.public_url.rstrip("/")
    manifest.setdefault("url", public)
    hook = dict(manifest.get("hook_attributes") or {})
    hook["url"] = f"{public}/webhooks/github"
    hook.setdefault("active", True)
    manifest["hook_attributes"] = hook
    manifest["redirect_url"] = f"{public}/setup/callback"
    # The dashboard's "log in with GitHub" comes back here (the only callback the app accepts).
    manifest["callback_urls"] = [f"{public}/login/callback"]
    return manifest


def secrets_path(settings: Settings) -> Path:
    """Where the manifest flow writes the app's credentials."""
    return settings.home / SECRETS_FILE


def is_configured(settings: Settings) -> bool:
    """Whether an app is already set up (then the manifest flow is refused)."""
    return settings.app_id is not None or secrets_path(settings).exists()


AUTOSUBMIT_JS = "document.forms[0].submit();"
"""The one inline script of the web process (the manifest form posts itself to GitHub); the
Content-Security-Policy allows exactly this text by its hash (:mod:`bot.web.headers`)."""


def _page(title: str, body: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>",
        status_code=status_code,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def setup_token_of(settings: Settings) -> str | None:
    """The configured setup token, or ``None`` when there is none (an empty one counts as none)."""
    token = settings.setup_token.get_secret_value() if settings.setup_token is not None else ""
    return token or None


def setup_url(settings: Settings, token: str) -> str:
    """The link that starts the manifest flow: ``{public_url}/setup?token=…``."""
    return f"{settings.public_url.rstrip('/')}/setup?token={quote(token, safe='')}"


def _token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def _refuse_no_token() -> HTMLResponse:
    return _page(
        "Setup is locked",
        "<p>Creating the GitHub App needs a one-time setup token, and this deployment has none. "
        "Start ARCS with <code>arcs serve</code>: when no app is configured it prints the setup "
        "link (<code>…/setup?token=…</code>). Or set <code>ARCS_SETUP_TOKEN</code> to a random "
        f"value of at least {MIN_SETUP_TOKEN_CHARS} characters, restart, and open "
        "<code>/setup?token=</code> followed by that value.</p>",
        403,
    )


def _refuse_short_token() -> HTMLResponse:
    return _page(
        "Setup is locked",
        f"<p>ARCS_SETUP_TOKEN is shorter than {MIN_SETUP_TOKEN_CHARS} characters. Set a longer "
        "random value (or unset it and let <code>arcs serve</code> make one), then restart.</p>",
        403,
    )


def _refuse_wrong_token() -> HTMLResponse:
    return _page(
        "Setup link required",
        "<p>This page needs the setup link with its one-time token "
        "(<code>…/setup?token=…</code>), which <code>arcs serve</code> printed when it started "
        "(or the ARCS_SETUP_TOKEN value the operator set).</p>",
        403,
    )


def _refuse_configured() -> HTMLResponse:
    return _page(
        "ARCS is already configured",
        "<p>A GitHub App is already set up for this deployment (ARCS_APP_ID is set or "
        "secrets.env exists). Remove it first to create another one.</p>",
        409,
    )


def _state_tag(token: str, body: str) -> str:
    digest = hmac.new(token.encode(), b"arcs-setup-state\0" + body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _new_state(token: str) -> str:
    # STAMP.NONCE.TAG -- url-safe base64 never contains a dot.
    body = f"{int(time.time())}.{secrets.token_urlsafe(24)}"
    return f"{body}.{_state_tag(token, body)}"


def _state_ok(query_state: str | None, cookie_state: str | None, now: float) -> bool:
    """The state came back to the browser it was given to, within ``STATE_MAX_AGE_S``."""
    if not query_state or not cookie_state:
        return False
    if not hmac.compare_digest(query_state.encode(), cookie_state.encode()):
        return False
    stamp, _, _ = query_state.partition(".")
    return stamp.isdigit() and 0 <= now - int(stamp) <= STATE_MAX_AGE_S


def _state_signed(state: str, token: str) -> bool:
    """The state was issued by ``/setup`` to a request that had ``token``."""
    body, _, tag = state.rpartition(".")
    return bool(body) and hmac.compare_digest(tag.encode(), _state_tag(token, body).encode())


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
    # The dashboard logs users in with the app's OAuth client.
    for key, name in (("client_id", "ARCS_CLIENT_ID"), ("client_secret", "ARCS_CLIENT_SECRET")):
        value = conversion.get(key)
        if isinstance(value, str) and value:
            lines.append(f"{name}={shlex.quote(value)}")
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

    def _token(self) -> str | HTMLResponse:
        """The configured setup token, or the page that explains why there is none to check."""
        token = setup_token_of(self.settings)
        if token is None:
            return _refuse_no_token()
        if len(token) < MIN_SETUP_TOKEN_CHARS:
            return _refuse_short_token()
        return token

    async def start(self, request: Request) -> HTMLResponse:
        """Check the setup token; render the auto-submitting form that posts the manifest to GitHub."""
        if is_configured(self.settings):
            return _refuse_configured()
        token = self._token()
        if isinstance(token, HTMLResponse):
            return token
        if not _token_matches(request.query_params.get("token"), token):
            log.warning("setup_token_refused", client=request.client.host if request.client else None)
            return _refuse_wrong_token()
        web = self.settings.web_url
        org = request.query_params.get("org")
        if org is not None and not _ORG.fullmatch(org):
            return _page("Invalid organization", "<p>?org= must be an organization login.</p>", 400)
        manifest = build_manifest(self.settings, self._manifest)
        name = request.query_params.get("name")
        if name:
            manifest["name"] = name[:34]  # GitHub's limit on app names
        state = _new_state(token)
        where = f"/organizations/{quote(org)}/settings/apps/new" if org else "/settings/apps/new"
        action = f"{web}{where}?state={quote(state)}"
        body = (
            f"<form method='post' action='{html.escape(action, quote=True)}'>"
            f"<input type='hidden' name='manifest' value='{html.escape(json.dumps(manifest), quote=True)}'>"
            "<p>Creating the GitHub App on GitHub… If nothing happens, press the button.</p>"
            "<button type='submit'>Create the GitHub App</button></form>"
            f"<script>{AUTOSUBMIT_JS}</script>"
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
        """Check the state (this browser's, signed with the token); exchange the code; save."""
        if is_configured(self.settings):
            return _refuse_configured()
        token = self._token()
        if isinstance(token, HTMLResponse):
            return token
        state = request.query_params.get("state")
        if not _state_ok(state, request.cookies.get(STATE_COOKIE), time.time()):
            return _page(
                "Setup link expired or invalid",
                "<p>The state does not match this browser's setup session. Start again with the "
                "setup link (<code>…/setup?token=…</code>).</p>",
                400,
            )
        if state is None or not _state_signed(state, token):
            log.warning("setup_state_unsigned", client=request.client.host if request.client else None)
            return _refuse_wrong_token()
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
                "once: start again with the setup link (<code>…/setup?token=…</code>).</p>",
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
