"""The ARCS App's attempt for the commit the Action repaired, linked from the job summary.

When the ARCS App is installed on the repository (connected), it records its own attempt for a red
commit in its dashboard and opens a check run named ``ARCS`` on that commit whose ``external_id`` is
the attempt's id (:mod:`jobs.run`: what a clicked button names). Given the App's address (the
``dashboard-url`` input: the deployment's ``ARCS_PUBLIC_URL``), the Action finds that check run with
its token (``checks: read``) and links ``<dashboard-url>/attempts/<id>``. No such check run: no
link (never a guessed one).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.github.client import InstallationClient

CHECK_NAME = "ARCS"
"""The App's check run (``jobs.run.CHECK_NAME``)."""
_URL = re.compile(r"https?://[^\s/?#@]+(?:/[^\s?#]*)?")
_ID = re.compile(r"[1-9][0-9]{0,17}")


def dashboard_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be the App's address, in one line (None: it can)."""
    if not _URL.fullmatch(url):
        shown = url if len(url) <= 80 else url[:79] + "…"
        return f"expected the ARCS App's http(s) address without a query, such as https://arcs.example.com, got {shown!r}"
    return None


def attempt_url(dashboard_url: str, attempt_id: int) -> str:
    """``<dashboard-url>/attempts/<id>``: the App's attempt page."""
    return f"{dashboard_url.rstrip('/')}/attempts/{attempt_id}"


def app_attempt(client: InstallationClient, sha: str) -> int | None:
    """The id of the App's newest attempt on commit ``sha`` (its ``ARCS`` check run's
    ``external_id``), or None; :class:`bot.github.GitHubError` when GitHub refuses (403: the token
    lacks ``checks: read``)."""
    from bot.github.client import github_errors

    with github_errors(f"list the check runs of {sha[:12]}"):
        data: Any = client.gh.rest.checks.list_for_ref(
            client.owner, client.repo, sha, check_name=CHECK_NAME, per_page=100
        ).json()
    found: list[tuple[int, int]] = []
    for run in data.get("check_runs") or []:
        external = str(run.get("external_id") or "").strip()
        if run.get("name") == CHECK_NAME and _ID.fullmatch(external):
            found.append((int(run.get("id") or 0), int(external)))
    return max(found)[1] if found else None


def dashboard_link(base: str | None, sha: str, client: InstallationClient | None, notices: list[str]) -> str:
    """``<base>/attempts/<id>`` of the App's attempt on ``sha``, else '' (no ``dashboard-url``,
    or no such attempt); no token or a refused lookup adds a notice."""
    from bot.github import GitHubError

    if base is None:
        return ""
    if client is None:
        notices.append("dashboard-url: no github-token, so the ARCS App's attempt was not looked up")
        return ""
    try:
        attempt = app_attempt(client, sha)
    except GitHubError as exc:
        denied = exc.status == 403 or " 403" in exc.message
        hint = " (grant the job `checks: read`)" if denied else ""
        notices.append(f"dashboard-url: the ARCS App's attempt could not be looked up: {exc.message}{hint}")
        return ""
    return attempt_url(base, attempt) if attempt is not None else ""


__all__ = ["CHECK_NAME", "app_attempt", "attempt_url", "dashboard_link", "dashboard_url_problem"]
