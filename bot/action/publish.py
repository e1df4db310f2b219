"""The Action's three ways to publish a verified fix, with the token the workflow gave it.

- ``pr``: one commit on the failing commit pushed to ``arcs/fix/<signature>`` and a (draft) pull
  request against the failing branch — through :mod:`bot.github.publish`, so an open pull request of
  that branch is updated instead of a second one opened, an unchanged branch is not pushed again and
  a branch someone else committed to is never overwritten. Nothing is ever pushed to another branch.
- ``suggest``: one review on the pull request with a suggestion block per change on the lines the
  pull request's diff shows (multi-line: ``start_line``/``line``, side RIGHT); the other changes go
  into the review body as a diff. A review for the same failure signature on the same commit is not
  posted twice.
- ``comment``: one comment with the diff on the pull request or issue, edited in place on later
  runs of the same failure (found by its hidden marker).

Every GitHub error becomes a :class:`bot.action.summary.Published` line (a token without the
permission, 403, says which permission the workflow must grant); nothing here raises for GitHub.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

import structlog

from bot.action.suggest import commentable_ranges, outside_diff_text, place, suggestions_for
from bot.action.summary import ACTION_MARKER, Published, comment_body, review_body
from bot.github import GitHubError
from bot.github.client import InstallationClient, github_errors
from bot.github.git import BotIdentity
from bot.github.publish import (
    bot_user_id,
    ensure_branch_pushed,
    open_or_update_pr,
    read_file,
    upsert_status_comment,
)
from jobs.render import fenced, pr_body, pr_title
from jobs.summary import RepairSummary

log = structlog.get_logger(__name__)

ACTIONS_BOT_LOGIN = "github-actions[bot]"
ACTIONS_BOT_ID = 41898282
"""The user id of ``github-actions[bot]`` on github.com (its commits link to the bot's account)."""
MAX_PAGES = 30

PERMISSION_HINT = {
    "pr": "grant the workflow `permissions: {contents: write, pull-requests: write}` (and allow GitHub "
    "Actions to create pull requests in the repository's Actions settings)",
    "suggest": "grant the workflow `permissions: {pull-requests: write}`",
    "comment": "grant the workflow `permissions: {issues: write, pull-requests: write}`",
}


def _denied(exc: GitHubError) -> bool:
    return exc.status == 403 or " 403" in exc.message or "denied" in exc.message.lower()


def failed(mode: str, exc: GitHubError) -> Published:
    """The line said when GitHub refused or failed (403: which permission to grant)."""
    if _denied(exc):
        return Published(
            mode,
            False,
            detail=f"the token may not do this (HTTP 403: {exc.message}); {PERMISSION_HINT[mode]}",
        )
    return Published(mode, False, detail=exc.message)


def identity(client: InstallationClient, login: str) -> BotIdentity:
    """The commit identity of the token's account (``github-actions[bot]`` by default)."""
    user_id = bot_user_id(client, login)
    if user_id is None:
        user_id = ACTIONS_BOT_ID if login == ACTIONS_BOT_LOGIN else 0
    return BotIdentity.for_app(user_id, login=login)


def base_mismatches(client: InstallationClient, before: Mapping[str, str | None], sha: str) -> list[str]:
    """The touched files whose text at ``sha`` differs from the workspace's (the fix was made on
    another tree, e.g. a pull request's merge commit): publishing them would carry that difference."""
    return [path for path, text in before.items() if read_file(client, path, ref=sha) != text]


# --------------------------------------------------------------------------- pr


def publish_pr(
    client: InstallationClient,
    summary: RepairSummary,
    *,
    branch: str,
    base_branch: str,
    base_sha: str,
    files: Mapping[str, str | None],
    draft: bool,
    labels: Sequence[str],
    bot_login: str,
    attempt: str,
    workdir: Path | None = None,
) -> Published:
    """Push ``files`` as one commit on ``base_sha`` to ``branch`` and open or update its PR."""
    try:
        sha = ensure_branch_pushed(
            client,
            branch=branch,
            base_sha=base_sha,
            files=files,
            message=f"{pr_title(summary)}\n\nVerified by ARCS in {attempt}\n",
            identity=identity(client, bot_login),
            attempt=attempt,
            workdir=workdir,
        )
        pr = open_or_update_pr(
            client,
            head=branch,
            base=base_branch,
            title=pr_title(summary),
            body=pr_body(summary),
            draft=draft,
            labels=labels,
        )
    except GitHubError as exc:
        log.warning("action.publish_failed", mode="pr", error=exc.message[:300])
        return failed("pr", exc)
    verb = "opened" if pr.created else "updated"
    return Published(
        "pr", True, url=pr.url, detail=f"{verb} pull request #{pr.number} from {branch} ({sha[:12]})"
    )


# --------------------------------------------------------------------------- suggest


def _pages(fetch: Any, what: str) -> Iterator[Mapping[str, Any]]:
    for page in range(1, MAX_PAGES + 1):
        with github_errors(what):
            response = fetch(page)
        items = response.json()
        yield from items
        if 'rel="next"' not in (response.headers.get("link") or ""):
            return


def pull_ranges(client: InstallationClient, number: int) -> dict[str, list[tuple[int, int]]]:
    """``path -> RIGHT-side line ranges`` of the pull request's diff (``GET /pulls/{n}/files``)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for item in _pages(
        lambda page: client.gh.rest.pulls.list_files(
            client.owner, client.repo, number, per_page=100, page=page
        ),
        f"list the files of pull request #{number}",
    ):
        ranges[str(item.get("filename"))] = commentable_ranges(str(item.get("patch") or ""))
    return ranges


def has_review(client: InstallationClient, number: int, marker: str, bot_login: str) -> bool:
    """Whether the bot already left the review that carries ``marker``."""
    for review in _pages(
        lambda page: client.gh.rest.pulls.list_reviews(
            client.owner, client.repo, number, per_page=100, page=page
        ),
        f"list the reviews of pull request #{number}",
    ):
        if (review.get("user") or {}).get("login") == bot_login and marker in str(review.get("body") or ""):
            return True
    return False


def publish_suggestions(
    client: InstallationClient,
    summary: RepairSummary,
    *,
    number: int,
    head_sha: str,
    before: Mapping[str, str | None],
    after: Mapping[str, str | None],
    signature: str,
    bot_login: str,
) -> Published:
    """One review with suggestion blocks on the pull request's diff (see the module docstring)."""
    marker = ACTION_MARKER.format(signature=f"{signature}@{head_sha[:12]}")
    try:
        if has_review(client, number, marker, bot_login):
            return Published("suggest", True, detail=f"pull request #{number} already has these suggestions")
        ranges = pull_ranges(client, number)
        items = []
        unsuggestable = []
        for path in sorted(after):
            old, new = before.get(path), after[path]
            if old is None or new is None:
                unsuggestable.append(path)  # created or deleted files cannot be suggestions
                continue
            items.extend(suggestions_for(path, old, new))
        placed, outside = place(items, ranges)
        extra = outside_diff_text(outside)
        if unsuggestable:
            listed = ", ".join(f"`{p}`" for p in unsuggestable)
            extra = (
                extra + "\n\n" if extra else ""
            ) + f"Files created or deleted by the fix (see the patch): {listed}"
        if extra:
            extra += "\n\n" + fence_patch(summary)
        body = review_body(
            summary, signature=f"{signature}@{head_sha[:12]}", placed=len(placed), outside=extra
        )
        payload: dict[str, Any] = {
            "commit_id": head_sha,
            "event": "COMMENT",
            "body": body,
            "comments": [item.review_comment() for item in placed],
        }
        with github_errors(f"review pull request #{number}"):
            data: Any = client.gh.rest.pulls.create_review(
                client.owner, client.repo, number, data=cast(Any, payload)
            ).json()
    except GitHubError as exc:
        log.warning("action.publish_failed", mode="suggest", error=exc.message[:300])
        return failed("suggest", exc)
    url = str(data.get("html_url") or "")
    detail = f"{len(placed)} suggestion{'s' if len(placed) != 1 else ''} on pull request #{number}"
    if outside:
        detail += (
            f"; {len(outside)} change{'s' if len(outside) != 1 else ''} outside its diff in the review body"
        )
    return Published("suggest", True, url=url, detail=detail)


def fence_patch(summary: RepairSummary) -> str:
    """The whole patch, collapsed (for a review whose changes are not all suggestions)."""
    return f"<details>\n<summary>The whole patch</summary>\n\n{fenced(summary.diff, 'diff')}\n\n</details>"


# --------------------------------------------------------------------------- comment


def publish_comment(
    client: InstallationClient,
    summary: RepairSummary,
    *,
    number: int,
    signature: str,
    bot_login: str,
    repo_url: str,
    run_url: str = "",
) -> Published:
    """One comment with the diff on ``number``, edited in place for the same failure.

    ``repo_url`` is the repository's web URL (``GITHUB_SERVER_URL/owner/name``)."""
    try:
        comment_id = upsert_status_comment(
            client, number, comment_body(summary, signature=signature, run_url=run_url), bot_login=bot_login
        )
    except GitHubError as exc:
        log.warning("action.publish_failed", mode="comment", error=exc.message[:300])
        return failed("comment", exc)
    url = f"{repo_url}/issues/{number}#issuecomment-{comment_id}"
    return Published("comment", True, url=url, detail=f"commented on #{number}")


class PullHead(NamedTuple):
    """What :func:`pull_request_head` reads of a pull request."""

    sha: str
    branch: str
    head_repo: str
    base_repo: str
    base_sha: str
    """The base branch's tip (the change signal's merge base is taken with it)."""


def pull_request_head(client: InstallationClient, number: int) -> PullHead:
    """Head sha, head branch, head and base repositories and base sha of pull request ``number``."""
    with github_errors(f"read pull request #{number}"):
        data: Any = client.gh.rest.pulls.get(client.owner, client.repo, number).json()
    head = data.get("head") or {}
    base = data.get("base") or {}
    return PullHead(
        sha=str(head.get("sha") or ""),
        branch=str(head.get("ref") or ""),
        head_repo=str((head.get("repo") or {}).get("full_name") or ""),
        base_repo=str((base.get("repo") or {}).get("full_name") or client.full_name),
        base_sha=str(base.get("sha") or ""),
    )


__all__ = [
    "ACTIONS_BOT_LOGIN",
    "PullHead",
    "base_mismatches",
    "failed",
    "identity",
    "publish_comment",
    "publish_pr",
    "publish_suggestions",
    "pull_ranges",
    "pull_request_head",
]
