"""The small self-contained pages of the dashboard login (errors, logout), and the fixed texts
shown for the error codes GitHub's OAuth flow sends back.

No inline style or script (the Content-Security-Policy of :mod:`bot.web.headers` allows none):
the pages link the dashboard's stylesheet. Every text is escaped; no text of the request is
shown (a crafted ``/login/callback?error_description=…`` link must not put words on our origin).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from starlette.responses import HTMLResponse

NO_STORE = {"Cache-Control": "no-store"}


def page(status: int, title: str, *paragraphs: str, link: tuple[str, str] | None = None) -> HTMLResponse:
    """A small self-contained HTML page (every text escaped), never cached."""
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    if link is not None:
        href, label = link
        body += f'<p><a href="{html.escape(href)}">{html.escape(label)}</a></p>'
    return HTMLResponse(document(title, body), status_code=status, headers=NO_STORE)


def document(title: str, body: str) -> str:
    """A narrow page with the dashboard's stylesheet (no inline style: the CSP allows none)."""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)} · ARCS</title>"
        "<link rel='stylesheet' href='/static/dashboard.css'></head>"
        f"<body class='narrow'><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    )


OAUTH_ERRORS: Mapping[str, tuple[str, str]] = {
    "access_denied": (
        "Login cancelled",
        "GitHub says you did not authorize ARCS, so you are not logged in.",
    ),
    "redirect_uri_mismatch": (
        "The callback URL is not registered",
        "GitHub refused the login because this ARCS's callback URL is not among the GitHub App's "
        "callback URLs. An administrator must add it on the app's settings page (or fix "
        "ARCS_PUBLIC_URL).",
    ),
    "application_suspended": (
        "The GitHub App is suspended",
        "GitHub refused the login because the ARCS GitHub App is suspended. An administrator must "
        "unsuspend it.",
    ),
    "temporarily_unavailable": (
        "GitHub is busy",
        "GitHub could not log you in right now. Try again in a moment.",
    ),
    "server_error": (
        "GitHub could not log you in",
        "GitHub had an internal error. Try again in a moment.",
    ),
}
"""The page for each error code GitHub's authorization step may send back. The callback's
``error_description`` (and any code not listed here) is never shown: anyone can craft a link to
``/login/callback?error=…&error_description=…``, and this page is on our origin."""
UNKNOWN_OAUTH_ERROR = (
    "GitHub did not log you in",
    "GitHub sent the login back with an error ARCS does not know. Try again; if it keeps "
    "happening, an administrator can find the error code in the ARCS log.",
)
