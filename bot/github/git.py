"""git against GitHub without leaving the token anywhere: clone at a SHA, commit as the bot, push to
an ``arcs/`` branch.

The installation token reaches git only through the environment of the one git process that needs
it: ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_0``/``GIT_CONFIG_VALUE_0`` set
``http.<repository url>.extraHeader = Authorization: Basic …`` for that invocation. It is never in
argv (visible to every user in ``ps``), never in a remote URL, never in ``.git/config``, and the
header is scoped to the repository's URL so a redirect or a submodule elsewhere never receives it.
User and system git configuration are ignored (``GIT_CONFIG_GLOBAL=/dev/null``,
``GIT_CONFIG_NOSYSTEM=1``): a credential helper there could otherwise store what it sees, and an
``insteadOf`` rewrite could send the header to another host. The checkout handed to the sandbox
therefore holds no secret.

Pushes go to ``arcs/<key>`` branches. An existing branch is overwritten (``--force-with-lease``
on the exact sha ARCS saw) only when its last commit was authored by the bot; anything else is
refused with :class:`bot.github.RefusedPush`. The one exception is :func:`push_on_top`
(``.arcs.yml`` ``auto_apply``): one commit added on top of a pull request's branch, never a
rewrite, and only while the branch is still at the commit the fix was made on.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import structlog

from bot.github import GitHubError, RefusedPush
from bot.github.auth import TokenSource
from jobs.branches import is_pushable
from jobs.branches import signature_branch as branch_name

__all__ = [
    "BotIdentity",
    "GitAuth",
    "PushResult",
    "branch_name",
    "check_branch",
    "clone_at_sha",
    "commit_all",
    "push_branch",
    "push_on_top",
    "remote_branch_sha",
    "run_git",
]

log = structlog.get_logger(__name__)

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
TRAILER_KEY = "ARCS-Attempt"
GIT_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """The author/committer of ARCS' commits: the App's bot account."""

    name: str
    email: str

    @classmethod
    def for_app(cls, user_id: int | str, *, login: str = "arcs[bot]") -> BotIdentity:
        """``login <ID+login@users.noreply.github.com>``.

        GitHub links a commit to the bot account when ``ID`` is the bot *user's* id
        (``GET /users/<slug>[bot]``); the App id is an acceptable fallback (the commit then shows
        the name without the avatar link).
        """
        return cls(name=login, email=f"{user_id}+{login}@users.noreply.github.com")


def check_branch(branch: str) -> str:
    """``branch`` if it is an ``arcs/`` branch ARCS may push to; :class:`RefusedPush` otherwise."""
    if not is_pushable(branch):
        raise RefusedPush(f"refusing to push to {branch!r}: ARCS only pushes to its own arcs/<key> branches")
    return branch


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise GitHubError(f"not an HTTP(S) repository URL: {parts.scheme}://{parts.hostname or ''}")
    if parts.username or parts.password or "@" in parts.netloc:
        # A credential in the URL would be written to .git/config.
        raise GitHubError("refusing a repository URL with credentials in it")
    if parts.query or parts.fragment:
        raise GitHubError("refusing a repository URL with a query or fragment")
    return url


@dataclass(frozen=True, slots=True)
class PushResult:
    """What :func:`push_branch` did."""

    branch: str
    sha: str
    created: bool = False
    updated: bool = False
    """An existing ``arcs/`` branch (authored by the bot) was moved to ``sha``."""
    unchanged: bool = False
    previous: str | None = None


class GitAuth:
    """Per-invocation credentials for one repository URL, from a :class:`TokenSource`."""

    def __init__(self, source: TokenSource, repository_url: str) -> None:
        self._source = source
        self.repository_url = _check_url(repository_url)

    def __repr__(self) -> str:
        return f"GitAuth({self.repository_url!r})"

    def env(self) -> tuple[dict[str, str], tuple[str, ...]]:
        """The environment entries that authenticate one git process, and the secrets to redact."""
        token = self._source.token().get_secret_value()
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        entries = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{self.repository_url}.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }
        return entries, (token, basic)


def _base_env() -> dict[str, str]:
    # Inherit PATH/HOME/locale, but no GIT_* variable of the caller (GIT_DIR from a hook, a
    # GIT_TRACE_CURL that would print headers, a GIT_CONFIG_* of someone else's).
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "GCM_INTERACTIVE": "never",
            "LC_ALL": "C",
        }
    )
    return env


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def run_git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    auth: GitAuth | None = None,
    extra_env: Mapping[str, str] | None = None,
    what: str,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run git hermetically (no user/system config, no prompts); ``auth`` adds the credentials
    to this one process's environment. Errors are one line, with any secret redacted."""
    env = _base_env()
    secrets: tuple[str, ...] = ()
    if auth is not None:
        entries, secrets = auth.env()
        env.update(entries)
    env.update(extra_env or {})
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitHubError(f"{what}: git timed out after {GIT_TIMEOUT_S:.0f}s") from exc
    if check and done.returncode != 0:
        detail = _redact((done.stderr or done.stdout).strip(), secrets)
        last = " | ".join(line.strip() for line in detail.splitlines()[-3:] if line.strip())
        raise GitHubError(f"{what}: git {args[0]} failed ({done.returncode}): {last or 'no output'}")
    # Belt and braces: nothing git printed may carry the token onward.
    done.stdout = _redact(done.stdout, secrets)
    done.stderr = _redact(done.stderr, secrets)
    return done


def clone_at_sha(repository_url: str, sha: str, dest: Path, *, source: TokenSource, depth: int = 1) -> Path:
    """Check out commit ``sha`` of ``repository_url`` into ``dest`` (a shallow fetch of that one
    commit, detached HEAD). ``dest`` must not exist or be empty. The token stays off disk."""
    if not SHA_RE.match(sha):
        raise GitHubError(f"not a full commit sha: {sha!r}")
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise GitHubError(f"clone destination {dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    auth = GitAuth(source, repository_url)
    what = f"fetch {sha[:12]}"
    run_git(["init", "-q", "--initial-branch=arcs-work", str(dest)], what=what)
    run_git(["remote", "add", "origin", auth.repository_url], cwd=dest, what=what)
    run_git(
        ["fetch", "-q", "--no-tags", "--no-recurse-submodules", f"--depth={depth}", "origin", sha],
        cwd=dest,
        auth=auth,
        what=what,
    )
    run_git(["-c", "advice.detachedHead=false", "checkout", "-q", "--detach", sha], cwd=dest, what=what)
    head = run_git(["rev-parse", "HEAD"], cwd=dest, what=what).stdout.strip()
    if head != sha:
        raise GitHubError(f"{what}: checked out {head[:12]} instead")
    log.info("github.git.cloned", sha=sha[:12], dest=str(dest))
    return dest


def fetch_history(dest: Path, shas: Sequence[str], *, depth: int, source: TokenSource) -> None:
    """Deepen the checkout at ``dest`` (made by :func:`clone_at_sha`) to ``depth`` commits behind
    each of ``shas``, fetching those it does not hold yet (the last green commit, a pull request's
    base). The work tree stays as it is; the token stays off disk."""
    if depth < 1:
        raise GitHubError(f"fetch history: depth must be at least 1, not {depth}")
    for sha in shas:
        if not SHA_RE.match(sha):
            raise GitHubError(f"not a full commit sha: {sha!r}")
    if not shas:
        return
    dest = Path(dest)
    what = f"fetch history of {', '.join(s[:12] for s in shas)}"
    url = run_git(["remote", "get-url", "origin"], cwd=dest, what=what).stdout.strip()
    auth = GitAuth(source, url)
    run_git(
        ["fetch", "-q", "--no-tags", "--no-recurse-submodules", f"--depth={depth}", "origin", *shas],
        cwd=dest,
        auth=auth,
        what=what,
    )
    log.info("github.git.history", shas=[s[:12] for s in shas], depth=depth, dest=str(dest))


def commit_all(
    repo: Path,
    message: str,
    *,
    identity: BotIdentity,
    attempt: str | None,
) -> str:
    """Stage every change in ``repo`` and commit it as ``identity`` with an ``ARCS-Attempt``
    trailer (the attempt's URL or id; kept as is when ``message`` already has one); returns the
    new sha. Raises when there is nothing to commit."""
    what = "commit the fix"
    run_git(["add", "-A"], cwd=repo, what=what)
    staged = run_git(["diff", "--cached", "--quiet"], cwd=repo, what=what, check=False)
    if staged.returncode == 0:
        raise GitHubError(f"{what}: the work tree has no change to commit")
    ident = {
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }
    text = message.strip() or "ARCS fix"
    args = ["-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", text]
    if not re.search(rf"^{TRAILER_KEY}:\s*\S", text, re.MULTILINE):
        attempt_line = " ".join((attempt or "").split())
        if not attempt_line:
            raise ValueError("attempt must name the attempt (URL or id) when the message has no trailer")
        args += ["--trailer", f"{TRAILER_KEY}: {attempt_line}"]
    run_git(args, cwd=repo, extra_env=ident, what=what)
    return run_git(["rev-parse", "HEAD"], cwd=repo, what=what).stdout.strip()


def remote_branch_sha(repo: Path, branch: str, *, source: TokenSource) -> str | None:
    """The tip of ``refs/heads/<branch>`` on ``origin`` (None when it does not exist)."""
    url = run_git(["remote", "get-url", "origin"], cwd=repo, what="read the remote").stdout.strip()
    auth = GitAuth(source, url)
    out = run_git(
        ["ls-remote", "--heads", "origin", f"refs/heads/{branch}"],
        cwd=repo,
        auth=auth,
        what=f"look up {branch}",
    ).stdout
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == f"refs/heads/{branch}":
            return sha.strip()
    return None


def push_branch(repo: Path, branch: str, *, source: TokenSource, identity: BotIdentity) -> PushResult:
    """Push ``HEAD`` of ``repo`` to ``origin``'s ``branch`` (an ``arcs/`` branch).

    - absent on the remote: created (a plain push, no force);
    - already at ``HEAD``: nothing to do;
    - present elsewhere: replaced with ``--force-with-lease`` on the sha seen, but only when its last
      commit's author is ``identity``: a branch someone else committed to is never overwritten.
    """
    check_branch(branch)
    url = run_git(["remote", "get-url", "origin"], cwd=repo, what="read the remote").stdout.strip()
    auth = GitAuth(source, url)
    what = f"push {branch}"
    head = run_git(["rev-parse", "HEAD"], cwd=repo, what=what).stdout.strip()
    remote = remote_branch_sha(repo, branch, source=source)
    ref = f"refs/heads/{branch}"
    if remote is None:
        run_git(["push", "-q", "--no-verify", "origin", f"HEAD:{ref}"], cwd=repo, auth=auth, what=what)
        log.info("github.git.pushed", branch=branch, sha=head[:12], created=True)
        return PushResult(branch=branch, sha=head, created=True)
    if remote == head:
        return PushResult(branch=branch, sha=head, unchanged=True, previous=remote)
    run_git(
        ["fetch", "-q", "--no-tags", "--depth=1", "origin", f"+{ref}:refs/arcs/remote-tip"],
        cwd=repo,
        auth=auth,
        what=what,
    )
    fetched = run_git(["rev-parse", "refs/arcs/remote-tip"], cwd=repo, what=what).stdout.strip()
    if fetched != remote:
        raise RefusedPush(f"{what}: the remote branch moved while ARCS was looking at it; not pushing")
    author_name, _, author_email = (
        run_git(["log", "-1", "--format=%an%x00%ae", fetched], cwd=repo, what=what)
        .stdout.strip()
        .partition("\x00")
    )
    if author_email.lower() != identity.email.lower():
        raise RefusedPush(
            f"refusing to overwrite {branch}: its last commit is by {author_name or 'someone else'}, "
            "not ARCS; a person's work is never force-pushed over"
        )
    run_git(
        ["push", "-q", "--no-verify", f"--force-with-lease={ref}:{remote}", "origin", f"HEAD:{ref}"],
        cwd=repo,
        auth=auth,
        what=what,
    )
    log.info("github.git.pushed", branch=branch, sha=head[:12], previous=remote[:12])
    return PushResult(branch=branch, sha=head, updated=True, previous=remote)


def push_on_top(repo: Path, branch: str, expected: str, *, source: TokenSource) -> bool:
    """Push ``HEAD`` of ``repo`` (one commit whose parent is ``expected``) to ``origin``'s
    ``branch``, a pull request's branch that is not ARCS's: a fast-forward by one commit, leased
    on ``expected``. False (nothing pushed) when the branch is no longer at ``expected`` (someone
    pushed meanwhile: their work wins) or the push is rejected (a protected branch)."""
    what = f"push on top of {branch}"
    if not SHA_RE.match(expected) or not branch or branch.startswith("-") or ".." in branch:
        raise GitHubError(f"{what}: not a branch and commit ARCS may push on top of")
    parent = run_git(["rev-parse", "HEAD^"], cwd=repo, what=what).stdout.strip()
    if parent != expected:
        raise GitHubError(f"{what}: the commit is not on top of {expected[:12]}")
    if remote_branch_sha(repo, branch, source=source) != expected:
        return False
    url = run_git(["remote", "get-url", "origin"], cwd=repo, what=what).stdout.strip()
    ref = f"refs/heads/{branch}"
    done = run_git(
        ["push", "-q", "--no-verify", f"--force-with-lease={ref}:{expected}", "origin", f"HEAD:{ref}"],
        cwd=repo,
        auth=GitAuth(source, url),
        what=what,
        check=False,
    )
    if done.returncode != 0:
        log.warning("github.git.push_on_top_refused", branch=branch, error=done.stderr.strip()[-300:])
        return False
    log.info("github.git.pushed_on_top", branch=branch, parent=expected[:12])
    return True
