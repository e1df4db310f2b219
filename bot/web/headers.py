"""Security headers on every response of the web process (dashboard pages, API, login, setup).

:class:`SecurityHeaders` is a pure ASGI middleware (no buffering) that adds, unless the route
set them itself:

* ``Content-Security-Policy`` (:func:`content_security_policy`): nothing loads or runs unless
  listed: styles and images from this origin only, no script at all except the hashes given (the
  manifest flow's one-line auto-submit), forms posting to this origin and the GitHub web URL
  (where the manifest flow sends the app's manifest), ``frame-ancestors 'none'``, ``base-uri
  'none'``. Every page therefore keeps its styles in ``/static`` and its markup free of inline
  ``style``/``on…`` attributes;
* ``X-Frame-Options: DENY`` (browsers without ``frame-ancestors``), ``X-Content-Type-Options:
  nosniff``, ``Referrer-Policy: no-referrer`` (a dashboard URL names orgs and attempts);
* ``Cache-Control: no-store`` on every response that did not choose its caching, except the
  static files: authenticated pages and their redirects are never kept by a browser or a proxy.

:class:`SecureStarlette` installs it around the whole middleware stack, so even the 500 page of
Starlette's error middleware carries the headers. Reusable as is by any other ASGI front end of
the dashboard (``arcs dashboard``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC_PREFIX = "/static/"


def script_hash(source: str) -> str:
    """The CSP source of an inline ``<script>`` whose text is exactly ``source``."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(*, form_targets: Iterable[str] = (), script_hashes: Iterable[str] = ()) -> str:
    """The policy: this origin's styles and images, no script but ``script_hashes`` (from
    :func:`script_hash`), forms to this origin and ``form_targets`` (origins), never framed."""
    scripts = " ".join(script_hashes) or "'none'"
    forms = " ".join(["'self'", *form_targets])
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {scripts}",
            "style-src 'self'",
            "img-src 'self' data:",
            f"form-action {forms}",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ]
    )


class SecurityHeaders:
    """Adds the security headers (see the module docstring) to every HTTP response."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        csp: str | None = None,
        static_prefixes: Sequence[str] = (STATIC_PREFIX,),
    ) -> None:
        self.app = app
        self.static_prefixes = tuple(static_prefixes)
        self.headers: tuple[tuple[str, str], ...] = (
            ("content-security-policy", csp if csp is not None else content_security_policy()),
            ("x-frame-options", "DENY"),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "no-referrer"),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith(self.static_prefixes)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers:
                    if name not in headers:
                        headers[name] = value
                if not static and "cache-control" not in headers:
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)


class SecureStarlette(Starlette):
    """A Starlette application whose every response, its error pages included, carries the
    security headers (:class:`SecurityHeaders` outside Starlette's own middleware)."""

    def __init__(self, *args: Any, csp: str | None = None, **kwargs: Any) -> None:
        self.csp = csp
        super().__init__(*args, **kwargs)

    def build_middleware_stack(self) -> ASGIApp:
        """Starlette's stack (error handling, the app's middleware, the routes), wrapped."""
        return SecurityHeaders(super().build_middleware_stack(), csp=self.csp)


__all__ = ["SecureStarlette", "SecurityHeaders", "content_security_policy", "script_hash"]
