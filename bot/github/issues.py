"""The repository dashboard issue on GitHub (``.arcs.yml`` ``dashboard_issue``): find the one
issue the bot opened that carries the dashboard marker, edit it in place, or open it once.

Only issues the bot itself created are considered (a person quoting the marker cannot make ARCS
edit their issue), open or closed: a closed dashboard is edited as it is, never reopened and never
duplicated. Failing the marker (a person rewrote the body), the bot's issue with the dashboard's
title is the one.
"""

from __future__ import annotations

from typing import Any

from bot.github import GitHubError
from bot.github.client import InstallationClient, github_errors
from bot.github.publish import PER_PAGE, _json, _paginate
from jobs.ports import DashboardIssue
from jobs.render_dashboard import DASHBOARD_MARKER_RE, DASHBOARD_TITLE

__all__ = ["find_dashboard_issue", "write_dashboard_issue"]


def _issue(data: Any) -> DashboardIssue:
    return DashboardIssue(
        number=int(data["number"]),
        url=str(data.get("html_url") or ""),
        state=str(data.get("state") or "open"),
        body=str(data.get("body") or ""),
    )


def find_dashboard_issue(client: InstallationClient, *, bot_login: str) -> DashboardIssue | None:
    """The bot's dashboard issue (open or closed, oldest first wins), or None."""

    def fetch(page: int) -> Any:
        return client.gh.rest.issues.list_for_repo(
            client.owner,
            client.repo,
            state="all",
            creator=bot_login,
            sort="created",
            direction="asc",
            per_page=PER_PAGE,
            page=page,
        )

    titled: DashboardIssue | None = None
    for item in _paginate(fetch, f"list the issues {bot_login} opened"):
        if item.get("pull_request") or (item.get("user") or {}).get("login") != bot_login:
            continue  # pull requests are issues too; only the bot's own issue is the dashboard
        if DASHBOARD_MARKER_RE.search(str(item.get("body") or "")):
            return _issue(item)
        if titled is None and item.get("title") == DASHBOARD_TITLE:
            titled = _issue(item)
    return titled


def write_dashboard_issue(
    client: InstallationClient, *, number: int | None, title: str, body: str
) -> DashboardIssue:
    """Edit issue ``number``'s title and body (its state is left as it is), or open the issue."""
    if number is not None:
        try:
            with github_errors(f"edit the dashboard issue #{number}"):
                data = _json(
                    client.gh.rest.issues.update(client.owner, client.repo, number, title=title, body=body)
                )
            return _issue(data)
        except GitHubError as exc:
            if exc.status not in (404, 410):
                raise
            # Deleted (or transferred away) by a person: open a new one.
    with github_errors("open the dashboard issue"):
        data = _json(client.gh.rest.issues.create(client.owner, client.repo, title=title, body=body))
    return _issue(data)
