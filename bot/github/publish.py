"""The thin layer that changes things on GitHub: branch, pull request, labels, check run, status
comment, reactions. Every call goes through an :class:`bot.github.client.InstallationClient`
(narrowed token, serialized mutations, rate-limit retries); every answer is read as plain JSON.

Idempotence is the rule: the pull request for a branch is looked up before one is opened, the
status comment is found by its hidden marker before one is created, a branch that already holds
the same tree on the same base is not pushed again.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, cast

import structlog

from bot.github import GitHubError
from bot.github.client import InstallationClient, github_errors
from bot.github.git import (
    BotIdentity,
    GitAuth,
    check_branch,
    clone_at_sha,
    commit_all,
    push_branch,
    push_on_top,
    remote_branch_sha,
    run_git,
)
from jobs.ports import PullRequestRef
from jobs.render import MAX_BODY_CHARS, MAX_CHECK_TEXT, STATUS_MARKER_RE, truncate
from jobs.render_checks import MAX_ANNOTATIONS_PER_REQUEST
from runners import wsfs

log = structlog.get_logger(__name__)

CHECK_NAME = "ARCS"
PER_PAGE = 100
MAX_PAGES = 50
"""A bound on pagination (5 000 items): a runaway ``Link`` header must not loop forever."""


def _json(response: Any) -> Any:
    return response.json()


def _next_page(response: Any) -> bool:
    link = response.headers.get("link") or ""
    return 'rel="next"' in link


# --------------------------------------------------------------------------- reading


def repository(client: InstallationClient) -> Mapping[str, Any]:
    """``GET /repos/{owner}/{repo}`` (default branch, clone URL, …)."""
    with github_errors(f"read {client.full_name}"):
        data = _json(client.gh.rest.repos.get(client.owner, client.repo))
    if not isinstance(data, dict):
        raise GitHubError(f"read {client.full_name}: unexpected answer")
    return data


def read_file(client: InstallationClient, path: str, *, ref: str | None = None) -> str | None:
    """A file's text at ``ref`` (default branch when None); None when it does not exist."""
    what = f"read {path} from {client.full_name}" + (f"@{ref}" if ref else "")
    try:
        with github_errors(what):
            if ref is None:
                response = client.gh.rest.repos.get_content(client.owner, client.repo, path)
            else:
                response = client.gh.rest.repos.get_content(client.owner, client.repo, path, ref=ref)
    except GitHubError as exc:
        if exc.status == 404:
            return None
        raise
    data = _json(response)
    if not isinstance(data, dict) or data.get("type") != "file":
        return None
    try:
        raw = base64.b64decode(str(data.get("content") or ""))
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise GitHubError(f"{what}: not a UTF-8 text file") from exc


def branch_sha(client: InstallationClient, branch: str) -> str | None:
    """The tip of ``branch`` (None when it does not exist)."""
    try:
        with github_errors(f"look up branch {branch} of {client.full_name}"):
            data = _json(client.gh.rest.git.get_ref(client.owner, client.repo, f"heads/{branch}"))
    except GitHubError as exc:
        if exc.status == 404:
            return None
        raise
    return str(data["object"]["sha"])


def _paginate(fetch: Any, what: str) -> Iterator[Any]:
    for page in range(1, MAX_PAGES + 1):
        with github_errors(what):
            response = fetch(page)
        items = _json(response)
        yield from items
        if not _next_page(response):
            return


# --------------------------------------------------------------------------- branch


def _safe_rel(path: str) -> str:
    rel = PurePosixPath(path)
    if rel.is_absolute() or not rel.parts or ".." in rel.parts or rel.parts[0] == ".git":
        raise GitHubError(f"refusing to write {path!r}: not a path inside the repository")
    return str(rel)


def _write_files(root: Path, files: Mapping[str, str | None]) -> None:
    # Through runners.wsfs: the clone is the repository's; a link on the way is refused.
    for path, content in files.items():
        rel = _safe_rel(path)
        try:
            if content is None:
                wsfs.unlink(root, rel)
            else:
                wsfs.write_text(root, rel, content)
        except wsfs.Refused as exc:
            raise GitHubError(f"refusing to write {path!r}: {exc}") from None


def ensure_branch_pushed(
    client: InstallationClient,
    *,
    branch: str,
    base_sha: str,
    files: Mapping[str, str | None],
    message: str,
    identity: BotIdentity,
    attempt: str | None,
    workdir: Path | None = None,
) -> str:
    """Point ``branch`` at one commit on ``base_sha`` that writes ``files``; return its sha.

    When the remote branch already is one commit on ``base_sha`` with the same tree, nothing is
    pushed (a retried job does not churn the pull request). A remote branch whose last commit is
    not the bot's is never overwritten (:class:`bot.github.RefusedPush`).
    """
    check_branch(branch)
    if not files:
        raise GitHubError(f"push {branch}: there is no change to push")
    with _bot_commit(client, base_sha, files, message, identity, attempt, workdir) as (dest, sha):
        remote = remote_branch_sha(dest, branch, source=client.tokens)
        if remote is not None and remote != sha and _same_change(dest, branch, remote, sha, base_sha, client):
            log.info("github.branch.unchanged", branch=branch, sha=remote[:12])
            return remote
        result = push_branch(dest, branch, source=client.tokens, identity=identity)
        return result.sha


@contextlib.contextmanager
def _bot_commit(
    client: InstallationClient,
    parent_sha: str,
    files: Mapping[str, str | None],
    message: str,
    identity: BotIdentity,
    attempt: str | None,
    workdir: Path | None,
) -> Iterator[tuple[Path, str]]:
    """A throw-away clone at ``parent_sha`` with one bot commit writing ``files``: ``(clone, sha)``."""
    clone_url = str(repository(client).get("clone_url") or "")
    with tempfile.TemporaryDirectory(prefix="arcs-push-", dir=workdir) as tmp:
        dest = Path(tmp) / "repo"
        clone_at_sha(clone_url, parent_sha, dest, source=client.tokens)
        _write_files(dest, files)
        yield dest, commit_all(dest, message, identity=identity, attempt=attempt)


def commit_on_top(
    client: InstallationClient,
    *,
    branch: str,
    parent_sha: str,
    files: Mapping[str, str | None],
    message: str,
    identity: BotIdentity,
    attempt: str | None,
    workdir: Path | None = None,
) -> str | None:
    """One bot commit on ``parent_sha`` writing ``files``, pushed on top of ``branch`` (a pull
    request's own branch) when it still points at ``parent_sha``; the commit's sha, or None when
    the branch moved or refused the push (see :func:`bot.github.git.push_on_top`)."""
    if not files:
        raise GitHubError(f"push on top of {branch}: there is no change to push")
    with _bot_commit(client, parent_sha, files, message, identity, attempt, workdir) as (dest, sha):
        return sha if push_on_top(dest, branch, parent_sha, source=client.tokens) else None


def _same_change(
    dest: Path, branch: str, remote: str, local: str, base_sha: str, client: InstallationClient
) -> bool:
    auth = GitAuth(
        client.tokens, run_git(["remote", "get-url", "origin"], cwd=dest, what="remote").stdout.strip()
    )
    run_git(
        ["fetch", "-q", "--no-tags", "--depth=2", "origin", f"+refs/heads/{branch}:refs/arcs/existing"],
        cwd=dest,
        auth=auth,
        what=f"read {branch}",
    )
    out = run_git(
        ["log", "-1", "--format=%T %P", "refs/arcs/existing"], cwd=dest, what=f"read {branch}"
    ).stdout.split()
    mine = run_git(["log", "-1", "--format=%T %P", local], cwd=dest, what=f"read {branch}").stdout.split()
    return out[:1] == mine[:1] and out[1:] == [base_sha]


# --------------------------------------------------------------------------- pull requests


def find_open_pr(client: InstallationClient, head: str) -> Mapping[str, Any] | None:
    """The open pull request from ``head`` (a branch of this repository), if any."""
    with github_errors(f"list pull requests of {client.full_name}"):
        pulls = _json(
            client.gh.rest.pulls.list(
                client.owner, client.repo, state="open", head=f"{client.owner}:{head}", per_page=10
            )
        )
    for pull in pulls:
        if pull.get("head", {}).get("ref") == head:
            return dict(pull)
    return None


def open_or_update_pr(
    client: InstallationClient,
    *,
    head: str,
    base: str,
    title: str,
    body: str,
    draft: bool = True,
    labels: Sequence[str] = (),
) -> PullRequestRef:
    """Open a pull request from ``head`` into ``base``, or update the open one (one per branch)."""
    check_branch(head)
    body = truncate(body, MAX_BODY_CHARS)
    existing = find_open_pr(client, head)
    if existing is not None:
        number = int(existing["number"])
        with github_errors(f"update pull request #{number}"):
            data = _json(
                client.gh.rest.pulls.update(client.owner, client.repo, number, title=title, body=body)
            )
        created = False
    else:
        with github_errors(f"open a pull request from {head} into {base}"):
            data = _json(
                client.gh.rest.pulls.create(
                    client.owner, client.repo, title=title, head=head, base=base, body=body, draft=draft
                )
            )
        number = int(data["number"])
        created = True
    if labels:
        add_labels(client, number, labels)
    url = str(data.get("html_url") or "")
    log.info("github.pr", number=number, created=created, head=head)
    return PullRequestRef(number=number, url=url, created=created)


def add_labels(client: InstallationClient, number: int, labels: Sequence[str]) -> None:
    """Add ``labels`` to issue/PR ``number`` (created on the fly by GitHub when missing)."""
    with github_errors(f"label #{number}"):
        client.gh.rest.issues.add_labels(client.owner, client.repo, number, labels=list(labels))


# --------------------------------------------------------------------------- check runs


def _output(output: Mapping[str, str], annotations: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": truncate(output.get("title", "ARCS"), 255, note="…"),
        "summary": truncate(output.get("summary", ""), MAX_CHECK_TEXT),
    }
    if output.get("text"):
        out["text"] = truncate(output["text"], MAX_CHECK_TEXT)
    if annotations:
        if len(annotations) > MAX_ANNOTATIONS_PER_REQUEST:
            raise ValueError(f"at most {MAX_ANNOTATIONS_PER_REQUEST} annotations per request")
        out["annotations"] = [dict(a) for a in annotations]
    return out


def create_check_run(
    client: InstallationClient,
    *,
    head_sha: str,
    output: Mapping[str, str],
    status: str = "in_progress",
    name: str = CHECK_NAME,
    details_url: str | None = None,
    external_id: str | None = None,
    conclusion: str | None = None,
    actions: Sequence[Mapping[str, str]] = (),
) -> int:
    """Create the check run on ``head_sha`` (completed when ``conclusion`` is given, with
    ``actions``: buttons); return its id."""
    body: dict[str, Any] = {"name": name, "head_sha": head_sha, "status": status, "output": _output(output)}
    if conclusion is not None:
        body["status"] = "completed"
        body["conclusion"] = conclusion
    if details_url:
        body["details_url"] = details_url
    if external_id:
        body["external_id"] = external_id
    if actions:
        body["actions"] = [dict(a) for a in actions]
    with github_errors(f"create the {name} check run"):
        data = _json(client.gh.rest.checks.create(client.owner, client.repo, data=cast(Any, body)))
    return int(data["id"])


def update_check_run(
    client: InstallationClient,
    check_run_id: int,
    *,
    output: Mapping[str, str] | None = None,
    status: str | None = None,
    conclusion: str | None = None,
    details_url: str | None = None,
    annotations: Sequence[Mapping[str, Any]] = (),
    actions: Sequence[Mapping[str, str]] | None = None,
) -> None:
    """Update the check run; a ``conclusion`` completes it. ``annotations`` (at most
    :data:`MAX_ANNOTATIONS_PER_REQUEST`, GitHub's limit) need an ``output``; ``actions`` replace
    the buttons (``[]`` removes them, ``None`` leaves them)."""
    body: dict[str, Any] = {}
    if conclusion is not None:
        body["status"] = "completed"
        body["conclusion"] = conclusion
    elif status is not None:
        body["status"] = status
    if output is not None:
        body["output"] = _output(output, annotations)
    elif annotations:
        raise ValueError("annotations need an output (title and summary)")
    if details_url:
        body["details_url"] = details_url
    if actions is not None:
        body["actions"] = [dict(a) for a in actions]
    with github_errors(f"update check run {check_run_id}"):
        client.gh.rest.checks.update(client.owner, client.repo, check_run_id, data=cast(Any, body))


# --------------------------------------------------------------------------- comments, reactions


def find_status_comment(
    client: InstallationClient, number: int, attempt_id: str, *, bot_login: str
) -> int | None:
    """The id of the bot's status comment for ``attempt_id`` on ``number`` (by hidden marker)."""

    def fetch(page: int) -> Any:
        return client.gh.rest.issues.list_comments(
            client.owner, client.repo, number, per_page=PER_PAGE, page=page
        )

    for comment in _paginate(fetch, f"list comments of #{number}"):
        user = comment.get("user") or {}
        if user.get("login") != bot_login:
            continue  # a user quoting the marker must not hijack the status comment
        match = STATUS_MARKER_RE.search(str(comment.get("body") or ""))
        if match and match.group(1) == attempt_id:
            return int(comment["id"])
    return None


def upsert_status_comment(
    client: InstallationClient,
    number: int,
    body: str,
    *,
    bot_login: str,
    comment_id: int | None = None,
) -> int:
    """Edit the status comment (``comment_id``, else the one carrying ``body``'s marker) or create it."""
    body = truncate(body, MAX_BODY_CHARS)
    if comment_id is None:
        marker = STATUS_MARKER_RE.search(body)
        if marker is not None:
            comment_id = find_status_comment(client, number, marker.group(1), bot_login=bot_login)
    if comment_id is not None:
        try:
            with github_errors(f"edit status comment {comment_id}"):
                client.gh.rest.issues.update_comment(client.owner, client.repo, comment_id, body=body)
            return comment_id
        except GitHubError as exc:
            if exc.status != 404:
                raise
            log.info("github.status_comment.gone", comment_id=comment_id)  # deleted by a person
    with github_errors(f"comment on #{number}"):
        data = _json(client.gh.rest.issues.create_comment(client.owner, client.repo, number, body=body))
    return int(data["id"])


def create_comment(client: InstallationClient, number: int, body: str) -> int:
    """A new comment on issue/PR ``number``; returns its id."""
    with github_errors(f"comment on #{number}"):
        data = _json(
            client.gh.rest.issues.create_comment(
                client.owner, client.repo, number, body=truncate(body, MAX_BODY_CHARS)
            )
        )
    return int(data["id"])


def reply_in_review_thread(
    client: InstallationClient, number: int, thread_id: int, body: str, *, reply_id: int | None = None
) -> int:
    """ARCS's reply in the review thread ``thread_id`` (its first comment) on pull request
    ``number``: edit the reply ``reply_id`` in place, or post it (a deleted one is posted again)."""
    body = truncate(body, MAX_BODY_CHARS)
    if reply_id is not None:
        try:
            with github_errors(f"edit review reply {reply_id}"):
                client.gh.rest.pulls.update_review_comment(client.owner, client.repo, reply_id, body=body)
            return reply_id
        except GitHubError as exc:
            if exc.status != 404:
                raise
            log.info("github.review_reply.gone", comment_id=reply_id)
    with github_errors(f"reply in review thread {thread_id} of #{number}"):
        data = _json(
            client.gh.rest.pulls.create_reply_for_review_comment(
                client.owner, client.repo, number, thread_id, body=body
            )
        )
    return int(data["id"])


_REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


def add_reaction(client: InstallationClient, comment_id: int, content: str = "eyes") -> None:
    """React to an issue/PR comment (👀 when a command is accepted)."""
    if content not in _REACTIONS:
        raise ValueError(f"not a GitHub reaction: {content!r}")
    with github_errors(f"react to comment {comment_id}"):
        client.gh.rest.reactions.create_for_issue_comment(
            client.owner, client.repo, comment_id, data=cast(Any, {"content": content})
        )


def add_issue_reaction(client: InstallationClient, number: int, content: str = "eyes") -> None:
    """React to an issue/PR itself (the labelled issue that triggered a repair)."""
    if content not in _REACTIONS:
        raise ValueError(f"not a GitHub reaction: {content!r}")
    with github_errors(f"react to #{number}"):
        client.gh.rest.reactions.create_for_issue(
            client.owner, client.repo, number, data=cast(Any, {"content": content})
        )


def bot_user_id(client: InstallationClient, bot_login: str) -> int | None:
    """The bot account's user id (for the noreply commit e-mail); None when it cannot be read."""
    try:
        with github_errors(f"read user {bot_login}"):
            data = _json(client.gh.rest.users.get_by_username(bot_login))
    except GitHubError:
        return None
    value = data.get("id") if isinstance(data, dict) else None
    return int(value) if isinstance(value, int) else None
