"""A strict GitHub double: the REST subset ARCS uses plus git smart HTTP, on loopback.

:class:`GitHubDouble` is a ``ThreadingHTTPServer`` on ``127.0.0.1`` (ephemeral port). The REST API
lives under ``/api/v3`` by default (the GitHub Enterprise Server layout, so ARCS'
``ARCS_GITHUB_API_URL`` handling is exercised; ``api_prefix=""`` serves it at the root as
``api.github.com`` does), git under ``/<owner>/<repo>.git`` served by ``git http-backend`` over bare
repositories the double builds from dicts of files.

It is strict:

- App routes need an RS256 JWT signed by the test App's key (verified with PyJWT against the
  public key, ``iss`` = app id, lifetime at most ten minutes, not expired on the double's clock).
- Installation routes need an installation token the double minted, not revoked, not expired; the
  repository must be one the token was narrowed to (else 404, as GitHub hides it) and the token must
  hold the permission the route needs (else 403 "Resource not accessible by integration").
- git fetch needs ``contents: read``, git push ``contents: write``, through HTTP Basic auth.
- Bodies are validated: unknown fields, missing required fields and wrong types are answered 422
  *and* recorded as unexpected; so is any route, method or query the double does not implement
  (404/405). The ``github_double`` fixture asserts :attr:`GitHubDouble.unexpected` is empty.

Every request is recorded in :attr:`GitHubDouble.requests`; every successful mutation (REST or
git push) in :attr:`GitHubDouble.mutations` with the token that made it. :meth:`GitHubDouble.fail_next`
scripts rate-limit answers (429, secondary-limit 403) for retry tests.

Dashboard login (the GitHub App's user-to-server OAuth web flow) is served at the web root, as on
github.com: ``GET /login/oauth/authorize`` answers at once for the user :meth:`GitHubDouble.sign_in`
named (a redirect to ``redirect_uri`` with ``code`` and ``state``, or ``error=access_denied`` after
:meth:`GitHubDouble.deny_next_authorization`), ``POST /login/oauth/access_token`` trades the code
for a ``ghu_`` user token bound to that user (GitHub's error JSON, with a 200, for a bad client
secret or code). With that token: ``GET /user``, ``/user/installations``,
``/user/installations/{id}/repositories`` and ``/user/memberships/orgs/{org}`` answer what the user
may see: the installations whose account is the user, or an org where the user is an admin, or
that hold a repository the user can see (an org member sees the org's repositories unless the
org's base permission is ``none``; collaborators see theirs). The membership route needs the
``members`` permission on the App's installation on that org (else 403), as on GitHub.
:func:`oauth_login` drives the whole flow for a test client.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import itertools
import json
import os
import re
import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import httpx

API_PREFIX = "/api/v3"
"""Where the REST API lives by default (GitHub Enterprise Server: ``https://HOST/api/v3``)."""
ALL_PERMISSIONS: Mapping[str, str] = {
    "metadata": "read",
    "contents": "write",
    "pull_requests": "write",
    "issues": "write",
    "checks": "write",
    "actions": "read",
    "statuses": "write",
}
WITH_MEMBERS: Mapping[str, str] = {**ALL_PERMISSIONS, "members": "read"}
"""The permissions plus organization ``members: read`` (what ``/user/memberships/orgs/{org}`` needs)."""
PERMISSION_LEVELS = {"read": 1, "write": 2, "admin": 3}
CHECK_STATUSES = {"queued", "in_progress", "completed", "waiting", "requested", "pending"}
CHECK_CONCLUSIONS = {
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
}
REACTIONS = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}
ANNOTATION_LEVELS = {"notice", "warning", "failure"}
MAX_ANNOTATIONS_PER_REQUEST = 50
MAX_CHECK_ACTIONS = 3
MAX_TEXT = 65535
MAX_BODY = 65536
DEFAULT_AUTHOR = ("Octo Cat", "octocat@example.com")

Json = Any


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Reply(Exception):
    """Raised inside a handler to answer at once."""

    def __init__(self, status: int, body: Json = None, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


class _Unexpected(_Reply):
    """An answer for a request ARCS should never send (recorded as unexpected)."""


# --------------------------------------------------------------------------- test support


TEST_APP_ID = "4242"
TEST_CLIENT_ID = "Iv1.a1b2c3d4e5f6a7b8"
"""The test App's OAuth client id (``ARCS_CLIENT_ID``)."""
TEST_CLIENT_SECRET = "arcs-test-client-secret-0123456789abcdef"
"""The test App's OAuth client secret (``ARCS_CLIENT_SECRET``)."""
OAUTH_CODE_TTL_S = 600.0
"""GitHub's login codes expire after ten minutes."""
USER_TOKEN_TTL_S = 8 * 3600.0
"""User-to-server tokens expire after eight hours."""


@dataclass(frozen=True)
class AppKey:
    """An RSA key pair for the test App (PEM)."""

    private_pem: str
    public_pem: bytes


@dataclass
class FakeClock:
    """Wall clock, monotonic clock and ``sleep`` in one: sleeping advances time at once."""

    now: float = field(default_factory=time.time)
    mono: float = 1000.0
    sleeps: list[float] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def time(self) -> float:
        with self._lock:
            return self.now

    def monotonic(self) -> float:
        with self._lock:
            return self.mono

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += seconds
            self.mono += seconds

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds
            self.mono += seconds


def generate_app_key() -> AppKey:
    """A fresh 2048-bit RSA key pair."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return AppKey(private_pem=private, public_pem=public)


# --------------------------------------------------------------------------- state


@dataclass
class Installation:
    """An installation of the test App (or, with ``app_id``, of another App) on an account."""

    id: int
    account: str
    repositories: set[str]
    """Full names the installation may access."""
    permissions: dict[str, str]
    app_id: int | None = None
    """``None``: the test App. Another App's installation only shows in ``/user/installations``."""


@dataclass
class Org:
    """An organization: its members (login -> (role, state)) and the members' base permission."""

    login: str
    id: int
    base_permission: str = "read"
    """What every member may do on every repository (``none``: only what they were granted)."""
    members: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class OAuthCode:
    """A login code ``/login/oauth/authorize`` handed out."""

    value: str
    login: str
    client_id: str
    redirect_uri: str
    expires_at: float
    used: bool = False


@dataclass
class UserToken:
    """A user-to-server token (``ghu_``) bound to one user."""

    value: str
    login: str
    expires_at: float


@dataclass
class Token:
    """An installation token the double minted."""

    value: str
    installation_id: int
    repositories: frozenset[str]
    """Full names (narrowed)."""
    permissions: dict[str, str]
    expires_at: float
    revoked: bool = False


@dataclass
class Job:
    """One job of a workflow run."""

    id: int
    run_id: int
    name: str
    conclusion: str
    log: str
    run_attempt: int = 1
    status: str = "completed"


@dataclass
class WorkflowRun:
    """A workflow run (one attempt's jobs)."""

    id: int
    repo: str
    name: str
    head_sha: str
    head_branch: str
    run_attempt: int
    conclusion: str
    event: str
    jobs: list[Job]
    workflow_id: int = 0
    """The workflow the run belongs to (one id per repository and workflow name by default)."""


RUN_STATUSES = frozenset(
    {"completed", "action_required", "cancelled", "failure", "neutral", "skipped", "stale", "success"}
    | {"timed_out", "in_progress", "queued", "requested", "waiting", "pending"}
)
"""What ``GET .../actions/workflows/{id}/runs?status=`` accepts (a status or a conclusion)."""


@dataclass
class Repo:
    """A repository: a bare git repository plus the REST objects around it."""

    id: int
    owner: str
    name: str
    default_branch: str
    path: Path
    private: bool = True
    collaborators: dict[str, str] = field(default_factory=dict)
    labels: dict[str, dict[str, Json]] = field(default_factory=dict)
    issues: dict[int, dict[str, Json]] = field(default_factory=dict)
    """Issues and pull requests share GitHub's number space; pulls carry ``pull_request``."""
    pulls: dict[int, dict[str, Json]] = field(default_factory=dict)
    comments: dict[int, dict[str, Json]] = field(default_factory=dict)
    review_comments: dict[int, dict[str, Json]] = field(default_factory=dict)
    """Pull request review comments (threads: ``in_reply_to_id`` names the thread's first one)."""
    check_runs: dict[int, dict[str, Json]] = field(default_factory=dict)
    runs: dict[int, WorkflowRun] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True)
class RequestRecord:
    """One request the double received."""

    method: str
    path: str
    """Without the API prefix (``/api/v3`` by default) for REST routes."""
    query: str
    status: int
    auth: str
    """``jwt``, ``token``, ``basic``, ``none`` or ``invalid``."""
    api_version: str | None = None
    """The ``X-GitHub-Api-Version`` header, when sent."""
    raw_path: str = ""
    """The path as received (with the API prefix)."""


@dataclass(frozen=True)
class Mutation:
    """One successful mutation: what ARCS changed, and with which token."""

    method: str
    path: str
    body: Json
    token: str | None
    installation_id: int | None


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: Json
    times: int


@dataclass
class _Auth:
    kind: str
    token: Token | None = None
    user: str | None = None
    """The login a ``ghu_`` user token belongs to."""


@dataclass
class _Request:
    method: str
    path: str
    query: dict[str, list[str]]
    raw_query: str
    headers: Mapping[str, str]
    body: bytes
    auth: _Auth = field(default_factory=lambda: _Auth("none"))

    def json(self) -> dict[str, Json]:
        if not self.body:
            return {}
        try:
            data = json.loads(self.body)
        except ValueError as exc:
            raise _Unexpected(400, {"message": "Problems parsing JSON"}) from exc
        if not isinstance(data, dict):
            raise _Unexpected(400, {"message": "Body should be a JSON object"})
        return data

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else default


@dataclass(frozen=True)
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Callable[..., tuple[int, Json] | tuple[int, Json, dict[str, str]]]
    auth: str
    """``jwt``, ``token`` (installation), ``user`` (a ``ghu_`` user token) or ``none``."""
    permission: tuple[tuple[str, str], ...] = ()
    """Any one of these (name, level) pairs suffices."""
    query: frozenset[str] = frozenset()
    """Query parameters the route accepts."""


def _validate(
    body: Mapping[str, Json],
    *,
    allowed: Mapping[str, type | tuple[type, ...]],
    required: Iterable[str] = (),
) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise _Unexpected(422, {"message": "Invalid request.", "errors": [f"unknown field(s): {unknown}"]})
    for key in required:
        if key not in body:
            raise _Unexpected(422, {"message": "Invalid request.", "errors": [f'"{key}" wasn\'t supplied.']})
    for key, value in body.items():
        kinds = allowed[key]
        if value is None:
            continue
        if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
            raise _Unexpected(422, {"message": "Invalid request.", "errors": [f"{key}: wrong type"]})
        if not isinstance(value, kinds):
            raise _Unexpected(422, {"message": "Invalid request.", "errors": [f"{key}: wrong type"]})


# --------------------------------------------------------------------------- the double


class GitHubDouble:
    """The double. Use as a context manager (or :meth:`start`/:meth:`stop`)."""

    def __init__(
        self,
        root: Path,
        *,
        app_id: str,
        app_public_key_pem: bytes,
        app_slug: str = "arcs",
        clock: Callable[[], float] = time.time,
        token_ttl_s: float = 3600.0,
        client_id: str = TEST_CLIENT_ID,
        client_secret: str = TEST_CLIENT_SECRET,
        api_prefix: str = API_PREFIX,
    ) -> None:
        if api_prefix and (not api_prefix.startswith("/") or api_prefix.endswith("/")):
            raise ValueError(f"api_prefix {api_prefix!r}: empty or /segments without a trailing slash")
        self.api_prefix = api_prefix
        """Where the REST API lives: ``/api/v3`` (GHES layout) or ``""`` (``api.github.com``)."""
        self.root = Path(root)
        self.git_root = self.root / "git"
        self.git_root.mkdir(parents=True, exist_ok=True)
        self.app_id = str(app_id)
        self.app_slug = app_slug
        self.bot_login = f"{app_slug}[bot]"
        self.bot_user_id = 41_000_000 + int(app_id) if app_id.isdigit() else 41_000_001
        self._public_key = app_public_key_pem
        self.clock = clock
        self.token_ttl_s = token_ttl_s
        self._lock = threading.RLock()
        self._ids = itertools.count(1000)
        self._blob_key = secrets.token_bytes(16)
        self.installations: dict[int, Installation] = {}
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, Token] = {}
        self.users: dict[str, int] = {}
        self.requests: list[RequestRecord] = []
        self.mutations: list[Mutation] = []
        self.unexpected: list[str] = []
        self.auth_failures: list[str] = []
        self._faults: list[_Fault] = []
        # The OAuth web flow (dashboard login).
        self.client_id = client_id
        self.client_secret = client_secret
        self.callback_urls: list[str] = []
        """The App's registered callback URLs; ``redirect_uri`` must be one of them."""
        self.orgs: dict[str, Org] = {}
        self.repo_grants: dict[str, dict[str, str]] = {}
        """Collaborators (login -> permission) of repositories that have no git repository here."""
        self.signed_in: str | None = None
        """The user logged in at GitHub (``/login/oauth/authorize`` answers for them)."""
        self._deny_next = False
        self.oauth_codes: dict[str, OAuthCode] = {}
        self.user_tokens: dict[str, UserToken] = {}
        self.reviews: dict[tuple[str, int], list[dict[str, Json]]] = {}
        self.workflows: dict[tuple[str, str], int] = {}
        """``(full name, workflow name)`` -> workflow id (:meth:`add_workflow_run`)."""
        """Pull request reviews by ``(full name, number)`` (``arcs action``'s suggestion mode)."""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._routes = self._build_routes()
        self._web_routes = self._build_web_routes()

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self) -> GitHubDouble:
        """Start serving on an ephemeral loopback port."""
        double = self

        class Handler(_Handler):
            owner = double

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="github-double",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> GitHubDouble:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the double is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """What ARCS_GITHUB_API_URL would be (GHES layout unless ``api_prefix=""``)."""
        return f"{self.base_url}{self.api_prefix}"

    def clone_url(self, full_name: str) -> str:
        return f"{self.base_url}/{full_name}.git"

    # --- setup helpers -------------------------------------------------------------------------

    def add_user(self, login: str) -> int:
        with self._lock:
            return self.users.setdefault(login, next(self._ids))

    def add_installation(
        self,
        account: str,
        repositories: Iterable[str] = (),
        *,
        permissions: Mapping[str, str] = ALL_PERMISSIONS,
        installation_id: int | None = None,
        app_id: int | None = None,
    ) -> Installation:
        """Install the App (another App with ``app_id``) on ``account`` with access to
        ``repositories`` (full names)."""
        with self._lock:
            inst = Installation(
                id=installation_id or next(self._ids),
                account=account,
                repositories=set(repositories),
                permissions=dict(permissions),
                app_id=app_id if app_id is not None and str(app_id) != self.app_id else None,
            )
            self.installations[inst.id] = inst
            return inst

    def add_org(self, login: str, *, base_permission: str = "read") -> Org:
        """An organization (accounts not added here are users)."""
        if base_permission not in ("none", "read", "write", "admin"):
            raise ValueError(f"base permission {base_permission!r}")
        with self._lock:
            org = self.orgs.setdefault(login, Org(login=login, id=next(self._ids)))
            org.base_permission = base_permission
            return org

    def add_member(self, org: str, login: str, *, role: str = "member", state: str = "active") -> None:
        """Make ``login`` a member (``role`` ``member`` or ``admin``; ``state`` ``active`` or
        ``pending``) of ``org`` (created when missing)."""
        if role not in ("member", "admin") or state not in ("active", "pending"):
            raise ValueError(f"membership {role}/{state}")
        with self._lock:
            found = self.orgs.get(org) or self.add_org(org)
            self.add_user(login)
            found.members[login] = (role, state)

    def grant(self, login: str, full_name: str, permission: str = "write") -> None:
        """Make ``login`` a collaborator of ``full_name`` (a repository added or not)."""
        with self._lock:
            self.add_user(login)
            repo = self.repos.get(full_name)
            if repo is not None:
                repo.collaborators[login] = permission
            else:
                self.repo_grants.setdefault(full_name, {})[login] = permission

    def sign_in(self, login: str) -> None:
        """``login`` is the user logged in at GitHub: the authorize page answers for them."""
        with self._lock:
            self.add_user(login)
            self.signed_in = login

    def sign_out(self) -> None:
        """Nobody is logged in at GitHub (an authorize request is then unexpected)."""
        with self._lock:
            self.signed_in = None

    def register_callback(self, url: str) -> None:
        """Register an OAuth callback URL of the App (what the manifest's ``callback_urls`` does)."""
        with self._lock:
            if url not in self.callback_urls:
                self.callback_urls.append(url)

    def deny_next_authorization(self) -> None:
        """The next authorize request is answered as if the user clicked "Cancel"."""
        with self._lock:
            self._deny_next = True

    def issue_user_token(self, login: str) -> str:
        """A user-to-server token for ``login``, minted directly (no HTTP)."""
        with self._lock:
            self.add_user(login)
            value = "ghu_" + secrets.token_urlsafe(27)
            self.user_tokens[value] = UserToken(value, login, self.clock() + USER_TOKEN_TTL_S)
            return value

    def user_can_see_repo(self, login: str, full_name: str) -> bool:
        """Whether ``login`` may read ``full_name``: its own, an org admin's or (unless the
        org's base permission is ``none``) a member's, or a collaborator's."""
        owner = full_name.split("/", 1)[0]
        if owner == login:
            return True
        org = self.orgs.get(owner)
        membership = org.members.get(login) if org is not None else None
        if (
            org is not None
            and membership is not None
            and membership[1] == "active"
            and (membership[0] == "admin" or org.base_permission != "none")
        ):
            return True
        repo = self.repos.get(full_name)
        if repo is not None and login in repo.collaborators:
            return True
        return login in self.repo_grants.get(full_name, {})

    def user_can_see_installation(self, login: str, inst: Installation) -> bool:
        """Whether ``/user/installations`` lists ``inst`` for ``login``."""
        org = self.orgs.get(inst.account)
        if org is None:
            if inst.account == login:
                return True
        elif org.members.get(login) == ("admin", "active"):
            return True
        return any(self.user_can_see_repo(login, full) for full in inst.repositories)

    def add_repo(
        self,
        full_name: str,
        files: Mapping[str, str | bytes],
        *,
        default_branch: str = "main",
        installation: Installation | None = None,
        collaborators: Mapping[str, str] | None = None,
        private: bool = True,
        author: tuple[str, str] = DEFAULT_AUTHOR,
    ) -> Repo:
        """Create ``owner/name`` with one commit of ``files`` on ``default_branch``."""
        owner, name = full_name.split("/", 1)
        path = self.git_root / owner / f"{name}.git"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._git(None, "init", "-q", "--bare", f"--initial-branch={default_branch}", str(path))
        self._git(path, "config", "uploadpack.allowAnySHA1InWant", "true")
        self._git(path, "config", "http.receivepack", "true")
        with self._lock:
            repo = Repo(
                id=next(self._ids),
                owner=owner,
                name=name,
                default_branch=default_branch,
                path=path,
                private=private,
                collaborators=dict(collaborators or {}),
            )
            self.repos[full_name] = repo
            for login in repo.collaborators:
                self.add_user(login)
            if installation is not None:
                installation.repositories.add(full_name)
        self.commit(full_name, files, branch=default_branch, message="initial", author=author)
        return repo

    def commit(
        self,
        full_name: str,
        files: Mapping[str, str | bytes | None],
        *,
        branch: str,
        message: str = "change",
        author: tuple[str, str] = DEFAULT_AUTHOR,
        base: str | None = None,
    ) -> str:
        """Commit ``files`` (None deletes) onto ``branch`` (created from ``base`` or the default
        branch when missing); returns the new commit's sha."""
        repo = self.repos[full_name]
        with self._lock:
            parent = self.branch_sha(full_name, branch)
            if parent is None and base is not None:
                parent = self.branch_sha(full_name, base) or base
            elif parent is None and branch != repo.default_branch:
                parent = self.branch_sha(full_name, repo.default_branch)
            index = self.root / f"index-{secrets.token_hex(4)}"
            env = {"GIT_INDEX_FILE": str(index)}
            try:
                if parent:
                    self._git(repo.path, "read-tree", parent, env=env)
                for rel, content in files.items():
                    if content is None:
                        self._git(repo.path, "update-index", "--force-remove", rel, env=env)
                        continue
                    data = content.encode() if isinstance(content, str) else content
                    blob = self._git(repo.path, "hash-object", "-w", "--stdin", input=data).strip()
                    self._git(
                        repo.path, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=env
                    )
                tree = self._git(repo.path, "write-tree", env=env).strip()
            finally:
                index.unlink(missing_ok=True)
            name, email = author
            ident = {
                "GIT_AUTHOR_NAME": name,
                "GIT_AUTHOR_EMAIL": email,
                "GIT_COMMITTER_NAME": name,
                "GIT_COMMITTER_EMAIL": email,
            }
            args = ["commit-tree", tree, "-m", message]
            if parent:
                args[2:2] = ["-p", parent]
            sha = self._git(repo.path, *args, env=ident).strip()
            self._git(repo.path, "update-ref", f"refs/heads/{branch}", sha)
            return sha

    def branch_sha(self, full_name: str, branch: str) -> str | None:
        """The tip of ``branch`` (None when it does not exist)."""
        repo = self.repos[full_name]
        done = self._run_git(repo.path, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    def branches(self, full_name: str) -> dict[str, str]:
        """Branch name -> tip sha."""
        repo = self.repos[full_name]
        out = self._git(repo.path, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/heads")
        return dict(line.split(" ", 1) for line in out.splitlines() if line)

    def commit_info(self, full_name: str, rev: str) -> dict[str, str]:
        """Author, committer and message of a commit."""
        repo = self.repos[full_name]
        out = self._git(repo.path, "log", "-1", "--format=%an%x00%ae%x00%cn%x00%ce%x00%B", rev)
        an, ae, cn, ce, body = out.split("\x00", 4)
        return {
            "author_name": an,
            "author_email": ae,
            "committer_name": cn,
            "committer_email": ce,
            "message": body,
        }

    def read_file(self, full_name: str, rev: str, path: str) -> str | None:
        """A file's text at ``rev`` (None when absent)."""
        repo = self.repos[full_name]
        done = self._run_git(repo.path, "show", f"{rev}:{path}")
        return done.stdout.decode() if done.returncode == 0 else None

    def has_commit(self, full_name: str, sha: str) -> bool:
        repo = self.repos[full_name]
        return self._run_git(repo.path, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0

    def add_issue(self, full_name: str, title: str, body: str = "", *, user: str = "octocat") -> int:
        """Open an issue; returns its number."""
        with self._lock:
            repo = self.repos[full_name]
            number = self._next_number(repo)
            self.add_user(user)
            repo.issues[number] = {
                "id": next(self._ids),
                "number": number,
                "title": title,
                "body": body,
                "state": "open",
                "labels": [],
                "user": self._user_json(user),
                "html_url": f"{self.base_url}/{full_name}/issues/{number}",
            }
            return number

    def add_comment(self, full_name: str, number: int, body: str, *, user: str = "octocat") -> int:
        """A comment by ``user`` on issue/PR ``number``; returns its id."""
        with self._lock:
            repo = self.repos[full_name]
            if number not in repo.issues:
                raise KeyError(number)
            self.add_user(user)
            return self._new_comment(repo, number, body, self._user_json(user))["id"]  # type: ignore[no-any-return]

    def add_workflow_run(
        self,
        full_name: str,
        *,
        head_sha: str,
        head_branch: str,
        jobs: Sequence[tuple[str, str, str]],
        name: str = "CI",
        run_attempt: int = 1,
        event: str = "push",
        workflow_id: int | None = None,
    ) -> WorkflowRun:
        """A completed run whose jobs are ``(name, conclusion, log text)``; ``workflow_id``
        defaults to one id per workflow ``name`` of the repository. Runs added later are newer."""
        with self._lock:
            if workflow_id is None:
                workflow_id = self.workflows.setdefault((full_name, name), next(self._ids))
            run_id = next(self._ids)
            run = WorkflowRun(
                id=run_id,
                repo=full_name,
                name=name,
                head_sha=head_sha,
                head_branch=head_branch,
                run_attempt=run_attempt,
                conclusion="failure" if any(c == "failure" for _, c, _ in jobs) else "success",
                event=event,
                jobs=[
                    Job(
                        id=next(self._ids),
                        run_id=run_id,
                        name=n,
                        conclusion=c,
                        log=text,
                        run_attempt=run_attempt,
                    )
                    for n, c, text in jobs
                ],
                workflow_id=workflow_id,
            )
            self.repos[full_name].runs[run_id] = run
            return run

    def fail_next(
        self,
        method: str,
        path_pattern: str,
        status: int,
        *,
        headers: Mapping[str, str] | None = None,
        body: Json = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching requests (path without the API prefix) with ``status``."""
        with self._lock:
            self._faults.append(
                _Fault(method.upper(), re.compile(path_pattern), status, dict(headers or {}), body, times)
            )

    def issue_token(
        self,
        installation: Installation,
        *,
        repositories: Iterable[str] | None = None,
        permissions: Mapping[str, str] | None = None,
    ) -> str:
        """A token minted directly (no HTTP), for tests of the double and of git."""
        with self._lock:
            value = "ghs_" + secrets.token_urlsafe(27)
            self.tokens[value] = Token(
                value=value,
                installation_id=installation.id,
                repositories=frozenset(installation.repositories if repositories is None else repositories),
                permissions=dict(installation.permissions if permissions is None else permissions),
                expires_at=self.clock() + self.token_ttl_s,
            )
            return value

    def expire_tokens(self) -> None:
        """Make every token expired (as if an hour passed on GitHub's side)."""
        with self._lock:
            for token in self.tokens.values():
                token.expires_at = min(token.expires_at, self.clock() - 1)

    # --- queries for assertions --------------------------------------------------------------------

    def mutations_matching(self, method: str, pattern: str) -> list[Mutation]:
        """Mutations with ``method`` whose path matches ``pattern`` (regex, search)."""
        rx = re.compile(pattern)
        return [m for m in self.mutations if m.method == method and rx.search(m.path)]

    def requests_matching(self, method: str, pattern: str) -> list[RequestRecord]:
        rx = re.compile(pattern)
        return [r for r in self.requests if r.method == method and rx.search(r.path)]

    def open_pulls(self, full_name: str) -> list[dict[str, Json]]:
        return [p for p in self.repos[full_name].pulls.values() if p["state"] == "open"]

    def add_pull(
        self, full_name: str, head: str, base: str, *, title: str = "A change", user: str = "octocat"
    ) -> int:
        """A pull request by ``user`` from ``head`` into ``base`` (both branches of ``full_name``)."""
        with self._lock:
            r = self.repos[full_name]
            head_sha, base_sha = self.branch_sha(full_name, head), self.branch_sha(full_name, base)
            if head_sha is None or base_sha is None:
                raise KeyError(f"{full_name}: no branch {head if head_sha is None else base}")
            number = self._next_number(r)
            self.add_user(user)
            url = f"{self.base_url}/{full_name}/pull/{number}"
            r.issues[number] = {
                "id": next(self._ids),
                "number": number,
                "title": title,
                "body": "",
                "state": "open",
                "labels": [],
                "user": self._user_json(user),
                "html_url": url,
                "pull_request": {"url": f"{self.api_url}/repos/{full_name}/pulls/{number}"},
            }
            repo_ref = {"full_name": full_name}
            r.pulls[number] = {
                "id": next(self._ids),
                "number": number,
                "state": "open",
                "title": title,
                "body": "",
                "draft": False,
                "user": self._user_json(user),
                "html_url": url,
                "head": {"ref": head, "sha": head_sha, "label": f"{r.owner}:{head}", "repo": repo_ref},
                "base": {"ref": base, "sha": base_sha, "label": f"{r.owner}:{base}", "repo": repo_ref},
                "merged": False,
            }
            return number

    def add_review_comment(
        self,
        full_name: str,
        number: int,
        body: str,
        *,
        user: str = "octocat",
        path: str = "app.py",
        line: int = 1,
        in_reply_to: int | None = None,
    ) -> int:
        """A review comment by ``user`` on pull request ``number`` (a reply when ``in_reply_to``)."""
        with self._lock:
            r = self.repos[full_name]
            if number not in r.pulls:
                raise KeyError(f"{full_name}: no pull request #{number}")
            self.add_user(user)
            return self._new_review_comment(r, number, body, self._user_json(user), path, line, in_reply_to)

    def review_thread(self, full_name: str, root: int) -> list[dict[str, Json]]:
        """The review comment ``root`` and its replies, oldest first."""
        comments = self.repos[full_name].review_comments
        return [c for c in comments.values() if c["id"] == root or c.get("in_reply_to_id") == root]

    def _new_review_comment(
        self,
        r: Repo,
        number: int,
        body: str,
        user: dict[str, Json],
        path: str,
        line: int,
        in_reply_to: int | None,
    ) -> int:
        cid = next(self._ids)
        now = _iso(self.clock())
        r.review_comments[cid] = {
            "id": cid,
            "pull_request_number": number,
            "in_reply_to_id": in_reply_to,
            "body": body,
            "path": path,
            "line": line,
            "user": user,
            "html_url": f"{self.base_url}/{r.full_name}/pull/{number}#discussion_r{cid}",
            "created_at": now,
            "updated_at": now,
        }
        return cid

    def _reply_review_comment(
        self, req: _Request, owner: str, repo: str, number: str, cid: str
    ) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"body": str}, required=("body",))
        if len(body["body"]) > MAX_BODY:
            raise _Unexpected(422, {"message": "body is too long (maximum is 65536 characters)"})
        r = self._repo(owner, repo)
        target = r.review_comments.get(int(cid))
        if target is None or target["pull_request_number"] != int(number):
            raise _Reply(404, {"message": "Not Found"})
        if target.get("in_reply_to_id") is not None:
            # GitHub: replies to replies are not supported (reply to the thread's first comment).
            raise _Unexpected(
                422, {"message": "Validation Failed", "errors": ["in_reply_to must be a top-level comment"]}
            )
        new = self._new_review_comment(
            r,
            int(number),
            body["body"],
            self._user_json(self.bot_login),
            target["path"],
            target["line"],
            int(cid),
        )
        return 201, r.review_comments[new]

    def _update_review_comment(self, req: _Request, owner: str, repo: str, cid: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"body": str}, required=("body",))
        r = self._repo(owner, repo)
        comment = r.review_comments.get(int(cid))
        if comment is None:
            raise _Reply(404, {"message": "Not Found"})
        if comment["user"]["login"] != self.bot_login:
            raise _Unexpected(403, {"message": "Resource not accessible by integration"})
        comment["body"] = body["body"]
        comment["updated_at"] = _iso(self.clock())
        return 200, comment

    def reviews_on(self, full_name: str, number: int) -> list[dict[str, Json]]:
        """The reviews posted on pull request ``number`` (with their ``comments``)."""
        return list(self.reviews.get((full_name, number), []))

    # --- git plumbing ----------------------------------------------------------------------------

    def _git_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "LANG": "C",
        }
        env.update(extra or {})
        return env

    def _run_git(
        self, repo: Path | None, *args: str, env: Mapping[str, str] | None = None, input: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        cmd = ["git", *(["--git-dir", str(repo)] if repo is not None else []), *args]
        return subprocess.run(cmd, env=self._git_env(env), input=input, capture_output=True, check=False)

    def _git(
        self, repo: Path | None, *args: str, env: Mapping[str, str] | None = None, input: bytes | None = None
    ) -> str:
        done = self._run_git(repo, *args, env=env, input=input)
        if done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
        return done.stdout.decode()

    # --- JSON shapes -------------------------------------------------------------------------------

    def _user_json(self, login: str) -> dict[str, Json]:
        if login == self.bot_login:
            return {"login": login, "id": self.bot_user_id, "type": "Bot"}
        return {"login": login, "id": self.users.get(login, 0), "type": "User"}

    def _repo_json(self, repo: Repo) -> dict[str, Json]:
        return {
            "id": repo.id,
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
            "owner": {"login": repo.owner, "id": 1, "type": "Organization"},
            "default_branch": repo.default_branch,
            "html_url": f"{self.base_url}/{repo.full_name}",
            "clone_url": self.clone_url(repo.full_name),
            "url": f"{self.api_url}/repos/{repo.full_name}",
        }

    def _next_number(self, repo: Repo) -> int:
        return max([0, *repo.issues]) + 1

    def _new_comment(self, repo: Repo, number: int, body: str, user: dict[str, Json]) -> dict[str, Json]:
        cid = next(self._ids)
        now = _iso(self.clock())
        comment = {
            "id": cid,
            "body": body,
            "user": user,
            "issue_number": number,
            "html_url": f"{self.base_url}/{repo.full_name}/issues/{number}#issuecomment-{cid}",
            "created_at": now,
            "updated_at": now,
            "reactions": {},
        }
        repo.comments[cid] = comment
        return comment

    @staticmethod
    def _public_comment(comment: Mapping[str, Json]) -> dict[str, Json]:
        return {k: v for k, v in comment.items() if k not in ("issue_number", "reactions")}

    # --- routing -----------------------------------------------------------------------------------

    def _build_routes(self) -> list[_Route]:
        repo = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
        routes: list[tuple[str, str, Callable[..., Any], str, tuple[tuple[str, str], ...], Iterable[str]]] = [
            ("GET", r"/app", self._get_app, "jwt", (), ()),
            ("GET", repo + r"/installation", self._get_repo_installation, "jwt", (), ()),
            ("POST", r"/app/installations/(?P<iid>\d+)/access_tokens", self._create_token, "jwt", (), ()),
            ("DELETE", r"/installation/token", self._revoke_token, "token", (), ()),
            ("GET", r"/users/(?P<login>[^/]+)", self._get_user, "token", (), ()),
            ("GET", repo, self._get_repo, "token", (("metadata", "read"),), ()),
            (
                "GET",
                repo + r"/collaborators/(?P<login>[^/]+)/permission",
                self._get_permission,
                "token",
                (("metadata", "read"),),
                (),
            ),
            (
                "GET",
                repo + r"/contents/(?P<path>.+)",
                self._get_contents,
                "token",
                (("contents", "read"),),
                ("ref",),
            ),
            (
                "GET",
                repo + r"/git/ref/heads/(?P<branch>.+)",
                self._get_ref,
                "token",
                (("contents", "read"),),
                (),
            ),
            ("GET", repo + r"/actions/runs/(?P<run>\d+)", self._get_run, "token", (("actions", "read"),), ()),
            (
                "POST",
                repo + r"/actions/runs/(?P<run>\d+)/rerun-failed-jobs",
                self._rerun_failed_jobs,
                "token",
                (("actions", "write"),),
                (),
            ),
            (
                "GET",
                repo + r"/actions/runs",
                self._list_repo_runs,
                "token",
                (("actions", "read"),),
                ("head_sha", "per_page", "page"),
            ),
            (
                "GET",
                repo + r"/actions/workflows/(?P<workflow>\d+)/runs",
                self._list_workflow_runs,
                "token",
                (("actions", "read"),),
                ("branch", "status", "event", "head_sha", "exclude_pull_requests", "per_page", "page"),
            ),
            (
                "GET",
                repo + r"/actions/runs/(?P<run>\d+)/attempts/(?P<attempt>\d+)/jobs",
                self._list_jobs,
                "token",
                (("actions", "read"),),
                ("per_page", "page"),
            ),
            (
                "GET",
                repo + r"/actions/jobs/(?P<job>\d+)/logs",
                self._job_logs,
                "token",
                (("actions", "read"),),
                (),
            ),
            (
                "GET",
                repo + r"/pulls",
                self._list_pulls,
                "token",
                (("pull_requests", "read"),),
                ("state", "head", "base", "per_page", "page"),
            ),
            ("POST", repo + r"/pulls", self._create_pull, "token", (("pull_requests", "write"),), ()),
            (
                "GET",
                repo + r"/pulls/(?P<number>\d+)",
                self._get_pull,
                "token",
                (("pull_requests", "read"),),
                (),
            ),
            (
                "PATCH",
                repo + r"/pulls/(?P<number>\d+)",
                self._update_pull,
                "token",
                (("pull_requests", "write"),),
                (),
            ),
            (
                "GET",
                repo + r"/pulls/(?P<number>\d+)/files",
                self._list_pull_files,
                "token",
                (("pull_requests", "read"),),
                ("per_page", "page"),
            ),
            (
                "GET",
                repo + r"/pulls/(?P<number>\d+)/reviews",
                self._list_reviews,
                "token",
                (("pull_requests", "read"),),
                ("per_page", "page"),
            ),
            (
                "POST",
                repo + r"/pulls/(?P<number>\d+)/reviews",
                self._create_review,
                "token",
                (("pull_requests", "write"),),
                (),
            ),
            (
                "POST",
                repo + r"/pulls/(?P<number>\d+)/comments/(?P<cid>\d+)/replies",
                self._reply_review_comment,
                "token",
                (("pull_requests", "write"),),
                (),
            ),
            (
                "PATCH",
                repo + r"/pulls/comments/(?P<cid>\d+)",
                self._update_review_comment,
                "token",
                (("pull_requests", "write"),),
                (),
            ),
            (
                "GET",
                repo + r"/issues",
                self._list_issues,
                "token",
                (("issues", "read"),),
                ("state", "creator", "sort", "direction", "per_page", "page"),
            ),
            ("POST", repo + r"/issues", self._create_issue, "token", (("issues", "write"),), ()),
            (
                "PATCH",
                repo + r"/issues/(?P<number>\d+)",
                self._update_issue,
                "token",
                (("issues", "write"), ("pull_requests", "write")),
                (),
            ),
            (
                "GET",
                repo + r"/issues/(?P<number>\d+)",
                self._get_issue,
                "token",
                (("issues", "read"), ("pull_requests", "read")),
                (),
            ),
            (
                "POST",
                repo + r"/issues/(?P<number>\d+)/labels",
                self._add_labels,
                "token",
                (("issues", "write"), ("pull_requests", "write")),
                (),
            ),
            (
                "GET",
                repo + r"/issues/(?P<number>\d+)/comments",
                self._list_comments,
                "token",
                (("issues", "read"), ("pull_requests", "read")),
                ("per_page", "page", "since"),
            ),
            (
                "POST",
                repo + r"/issues/(?P<number>\d+)/comments",
                self._create_comment,
                "token",
                (("issues", "write"), ("pull_requests", "write")),
                (),
            ),
            (
                "PATCH",
                repo + r"/issues/comments/(?P<cid>\d+)",
                self._update_comment,
                "token",
                (("issues", "write"), ("pull_requests", "write")),
                (),
            ),
            (
                "POST",
                repo + r"/issues/comments/(?P<cid>\d+)/reactions",
                self._react_comment,
                "token",
                (("issues", "write"), ("pull_requests", "write")),
                (),
            ),
            (
                "POST",
                repo + r"/issues/(?P<number>\d+)/reactions",
                self._react_issue,
                "token",
                (("issues", "write"), ("pull_requests", "write")),
                (),
            ),
            ("POST", repo + r"/check-runs", self._create_check, "token", (("checks", "write"),), ()),
            (
                "PATCH",
                repo + r"/check-runs/(?P<cid>\d+)",
                self._update_check,
                "token",
                (("checks", "write"),),
                (),
            ),
            (
                "GET",
                repo + r"/commits/(?P<sha>[0-9a-f]{40})/check-runs",
                self._list_checks,
                "token",
                (("checks", "read"),),
                ("check_name", "status", "filter", "per_page", "page"),
            ),
            ("GET", r"/_blobs/logs/(?P<job>\d+)", self._blob_logs, "none", (), ("sig",)),
            # With a user-to-server token (dashboard login).
            ("GET", r"/user", self._get_authenticated_user, "user", (), ()),
            ("GET", r"/user/installations", self._user_installations, "user", (), ("per_page", "page")),
            (
                "GET",
                r"/user/installations/(?P<iid>\d+)/repositories",
                self._user_installation_repos,
                "user",
                (),
                ("per_page", "page"),
            ),
            ("GET", r"/user/memberships/orgs/(?P<org>[^/]+)", self._user_membership, "user", (), ()),
        ]
        return [
            _Route(method, re.compile(f"^{pattern}$"), handler, auth, perm, frozenset(query))
            for method, pattern, handler, auth, perm, query in routes
        ]

    def _build_web_routes(self) -> list[_Route]:
        # The OAuth web flow lives on the web host (github.com), not under the API prefix.
        return [
            _Route(
                "GET",
                re.compile(r"^/login/oauth/authorize$"),
                self._oauth_authorize,
                "none",
                (),
                frozenset({"client_id", "redirect_uri", "state", "login", "allow_signup", "prompt"}),
            ),
            _Route("POST", re.compile(r"^/login/oauth/access_token$"), self._oauth_access_token, "none"),
        ]

    def handle(self, req: _Request) -> tuple[int, dict[str, str], bytes]:
        """Answer one request (called by the HTTP handler thread)."""
        with self._lock:
            git = re.match(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+)\.git/(?P<rest>.*)$", req.path)
            if git:
                status, headers, body = self._handle_git(req, git["owner"], git["repo"], git["rest"])
                self.requests.append(
                    RequestRecord(
                        req.method, req.path, req.raw_query, status, req.auth.kind, raw_path=req.path
                    )
                )
                return status, headers, body
            try:
                status, payload, headers = self._dispatch(req)
            except _Unexpected as reply:
                self.unexpected.append(
                    f"{req.method} {req.path}?{req.raw_query} -> {reply.status}: {reply.body}"
                )
                status, payload, headers = reply.status, reply.body, reply.headers
            except _Reply as reply:
                status, payload, headers = reply.status, reply.body, reply.headers
            prefix = self.api_prefix
            path = req.path[len(prefix) :] if prefix and req.path.startswith(prefix + "/") else req.path
            self.requests.append(
                RequestRecord(
                    req.method,
                    path,
                    req.raw_query,
                    status,
                    req.auth.kind,
                    req.headers.get("x-github-api-version"),
                    raw_path=req.path,
                )
            )
            if isinstance(payload, bytes | str):
                data = payload.encode() if isinstance(payload, str) else payload
                headers.setdefault("Content-Type", "text/plain; charset=utf-8")
            elif payload is None and status in (204, 302):
                data = b""
            else:
                data = json.dumps(payload if payload is not None else {}).encode()
                headers.setdefault("Content-Type", "application/json; charset=utf-8")
            return status, headers, data

    def _dispatch(self, req: _Request) -> tuple[int, Json, dict[str, str]]:
        if req.path.startswith("/login/oauth/"):
            return self._dispatch_web(req)
        if req.path.startswith("/_blobs/"):
            path = req.path
        elif req.path.startswith(self.api_prefix + "/"):
            path = req.path[len(self.api_prefix) :]
        else:
            raise _Unexpected(404, {"message": "Not Found (outside the API prefix)"})
        matched = [(route, m) for route in self._routes if (m := route.pattern.match(path))]
        if not matched:
            raise _Unexpected(404, {"message": f"Not Found: the double does not implement {path}"})
        found = next(((route, m) for route, m in matched if route.method == req.method), None)
        if found is None:
            raise _Unexpected(405, {"message": f"Method {req.method} not implemented for {path}"})
        route, m = found
        unknown_query = sorted(set(req.query) - route.query)
        if unknown_query:
            raise _Unexpected(422, {"message": f"unexpected query parameters {unknown_query}"})
        params = {k: unquote(v) for k, v in m.groupdict().items()}
        self._authenticate(req, route, params)
        for fault in self._faults:
            if fault.times > 0 and fault.method == req.method and fault.pattern.search(path):
                fault.times -= 1
                raise _Reply(fault.status, fault.body, headers=fault.headers)
        result = route.handler(req, **params)
        status, payload = result[0], result[1]
        headers = dict(result[2]) if len(result) > 2 else {}
        if req.method in ("POST", "PATCH", "PUT", "DELETE") and status < 400:
            body = req.json() if req.body else None
            token = req.auth.token
            self.mutations.append(
                Mutation(
                    req.method,
                    path,
                    body,
                    token.value if token else None,
                    token.installation_id if token else None,
                )
            )
        return status, payload, headers

    def _dispatch_web(self, req: _Request) -> tuple[int, Json, dict[str, str]]:
        matched = [route for route in self._web_routes if route.pattern.match(req.path)]
        if not matched:
            raise _Unexpected(404, {"message": f"Not Found: the double does not implement {req.path}"})
        route = next((r for r in matched if r.method == req.method), None)
        if route is None:
            raise _Unexpected(405, {"message": f"Method {req.method} not implemented for {req.path}"})
        unknown_query = sorted(set(req.query) - route.query)
        if unknown_query:
            raise _Unexpected(422, {"message": f"unexpected query parameters {unknown_query}"})
        result = route.handler(req)
        return result[0], result[1], dict(result[2]) if len(result) > 2 else {}

    # --- authentication ------------------------------------------------------------------------

    def _authenticate(self, req: _Request, route: _Route, params: Mapping[str, str]) -> None:
        header = req.headers.get("authorization", "")
        if route.auth == "none":
            return
        if route.auth == "jwt":
            scheme, _, credential = header.partition(" ")
            if scheme.lower() != "bearer" or not credential:
                self._deny(req, 401, "A JSON web token could not be decoded")
            self._verify_jwt(req, credential)
            req.auth = _Auth("jwt")
            return
        if route.auth == "user":
            scheme, _, credential = header.partition(" ")
            if scheme.lower() not in ("token", "bearer") or not credential:
                self._deny(req, 401, "Requires authentication")
            user = self.user_tokens.get(credential)
            if user is None:
                if credential in self.tokens:
                    self._deny(req, 403, "Resource not accessible by integration")
                self._deny(req, 401, "Bad credentials")
            assert user is not None
            if self.clock() >= user.expires_at:
                self._deny(req, 401, "Bad credentials")
            req.auth = _Auth("user", user=user.login)
            return
        scheme, _, credential = header.partition(" ")
        if scheme.lower() not in ("token", "bearer") or not credential:
            self._deny(req, 401, "Requires authentication")
        token = self.tokens.get(credential)
        if token is None:
            if credential.count(".") == 2:
                self._deny(req, 401, "A JWT cannot be used for this route")
            self._deny(req, 401, "Bad credentials")
        assert token is not None
        if token.revoked or self.clock() >= token.expires_at:
            self._deny(req, 401, "Bad credentials")
        req.auth = _Auth("token", token)
        if "owner" in params and "repo" in params:
            full = f"{params['owner']}/{params['repo']}"
            inst = self.installations.get(token.installation_id)
            if full not in token.repositories or inst is None or full not in inst.repositories:
                self._deny(req, 404, "Not Found")
            if full not in self.repos:
                self._deny(req, 404, "Not Found")
        if route.permission and not any(self._grants(token, name, level) for name, level in route.permission):
            self._deny(req, 403, "Resource not accessible by integration")

    @staticmethod
    def _grants(token: Token, name: str, level: str) -> bool:
        held = token.permissions.get(name)
        if held is None:
            return False
        return PERMISSION_LEVELS[held] >= PERMISSION_LEVELS[level]

    def _deny(self, req: _Request, status: int, message: str) -> None:
        self.auth_failures.append(f"{req.method} {req.path}: {status} {message}")
        req.auth = _Auth("invalid")
        raise _Reply(status, {"message": message})

    def _verify_jwt(self, req: _Request, credential: str) -> None:
        import jwt

        try:
            claims = jwt.decode(
                credential,
                self._public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "require": ["iat", "exp", "iss"]},
            )
        except jwt.PyJWTError:
            self._deny(req, 401, "A JSON web token could not be decoded")
            return
        now = self.clock()
        if str(claims["iss"]) != self.app_id:
            self._deny(req, 401, "'Issuer' claim ('iss') must be the App's id")
        if int(claims["exp"]) - int(claims["iat"]) > 600:
            self._deny(req, 401, "'Expiration time' claim ('exp') is too far in the future")
        if now >= int(claims["exp"]) or int(claims["iat"]) > now + 60:
            self._deny(req, 401, "'Expiration time' claim ('exp') must be a numeric value in the future")

    # --- App routes ----------------------------------------------------------------------------

    def _get_app(self, req: _Request) -> tuple[int, Json]:
        return 200, {
            "id": int(self.app_id),
            "slug": self.app_slug,
            "name": "ARCS",
            "owner": {"login": "arcs"},
        }

    def _get_repo_installation(self, req: _Request, owner: str, repo: str) -> tuple[int, Json]:
        full = f"{owner}/{repo}"
        for inst in self.installations.values():
            if inst.app_id is None and full in inst.repositories:
                return 200, {"id": inst.id, "app_id": int(self.app_id), "account": {"login": inst.account}}
        raise _Reply(404, {"message": "Not Found"})

    def _create_token(self, req: _Request, iid: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"repositories": list, "repository_ids": list, "permissions": dict})
        inst = self.installations.get(int(iid))
        if inst is None or inst.app_id is not None:
            raise _Reply(404, {"message": "Not Found"})
        repos = set(inst.repositories)
        if body.get("repositories") is not None:
            wanted = set()
            for name in body["repositories"]:
                match = [full for full in inst.repositories if full.split("/", 1)[1] == name]
                if not match:
                    raise _Reply(
                        422,
                        {
                            "message": f"There is at least one repository that does not exist or is not accessible to the parent installation: {name}"
                        },
                    )
                wanted.update(match)
            repos = wanted
        perms = dict(inst.permissions)
        if body.get("permissions") is not None:
            perms = {}
            for name, level in body["permissions"].items():
                held = inst.permissions.get(name)
                if level not in PERMISSION_LEVELS:
                    raise _Unexpected(422, {"message": f"permission {name}: invalid level {level!r}"})
                if held is None or PERMISSION_LEVELS[held] < PERMISSION_LEVELS[level]:
                    raise _Reply(
                        422,
                        {
                            "message": f"The permissions requested are not granted to this installation: {name}"
                        },
                    )
                perms[name] = level
        value = "ghs_" + secrets.token_urlsafe(27)
        token = Token(
            value=value,
            installation_id=inst.id,
            repositories=frozenset(repos),
            permissions=perms,
            expires_at=self.clock() + self.token_ttl_s,
        )
        self.tokens[value] = token
        return 201, {
            "token": value,
            "expires_at": _iso(token.expires_at),
            "permissions": perms,
            "repository_selection": "selected",
            "repositories": [self._repo_json(self.repos[r]) for r in sorted(repos) if r in self.repos],
        }

    def _revoke_token(self, req: _Request) -> tuple[int, Json]:
        assert req.auth.token is not None
        req.auth.token.revoked = True
        return 204, None

    def _get_user(self, req: _Request, login: str) -> tuple[int, Json]:
        if login == self.bot_login:
            return 200, self._user_json(login)
        if login not in self.users:
            raise _Reply(404, {"message": "Not Found"})
        return 200, self._user_json(login)

    # --- OAuth web flow (dashboard login) ---------------------------------------------------------

    def _oauth_authorize(self, req: _Request) -> tuple[int, Json, dict[str, str]]:
        if req.arg("client_id") != self.client_id:
            raise _Unexpected(404, "authorize: unknown client_id")
        if not self.callback_urls:
            raise _Unexpected(400, "authorize: the App has no callback URL (call register_callback)")
        redirect_uri = req.arg("redirect_uri") or self.callback_urls[0]
        if redirect_uri not in self.callback_urls:
            raise _Unexpected(
                400, f"authorize: redirect_uri {redirect_uri!r} is not a registered callback URL"
            )
        state = req.arg("state")
        if not state:
            # GitHub does not insist, but a login without state is open to login CSRF.
            raise _Unexpected(400, "authorize: no state parameter")
        params: dict[str, str]
        if self._deny_next:
            self._deny_next = False
            params = {
                "error": "access_denied",
                "error_description": "The user has denied your application access.",
                "error_uri": "https://docs.github.com/apps/troubleshooting-authorization-request-errors/#access-denied",
                "state": state,
            }
        else:
            if self.signed_in is None:
                raise _Unexpected(401, "authorize: nobody is signed in at GitHub (call sign_in)")
            code = secrets.token_hex(10)
            self.oauth_codes[code] = OAuthCode(
                value=code,
                login=self.signed_in,
                client_id=self.client_id,
                redirect_uri=redirect_uri,
                expires_at=self.clock() + OAUTH_CODE_TTL_S,
            )
            params = {"code": code, "state": state}
        sep = "&" if "?" in redirect_uri else "?"
        return 302, None, {"Location": redirect_uri + sep + urlencode(params)}

    @staticmethod
    def _oauth_error(error: str, description: str) -> tuple[int, Json]:
        # GitHub answers these with a 200.
        return 200, {
            "error": error,
            "error_description": description,
            "error_uri": f"https://docs.github.com/apps/troubleshooting-oauth-app-access-token-request-errors/#{error.replace('_', '-')}",
        }

    def _oauth_access_token(self, req: _Request) -> tuple[int, Json]:
        if "application/json" not in req.headers.get("accept", ""):
            raise _Unexpected(
                406, "access_token: send Accept: application/json (else GitHub answers form-encoded)"
            )
        content_type = req.headers.get("content-type", "")
        fields: dict[str, Json]
        if content_type.startswith("application/x-www-form-urlencoded"):
            parsed = parse_qs(req.body.decode("utf-8", "replace"), keep_blank_values=True)
            fields = {k: v[-1] for k, v in parsed.items()}
        elif content_type.startswith("application/json"):
            fields = req.json()
        else:
            raise _Unexpected(415, f"access_token: unexpected content type {content_type!r}")
        _validate(
            fields,
            allowed={"client_id": str, "client_secret": str, "code": str, "redirect_uri": str},
            required=("client_id", "client_secret", "code"),
        )
        secret_ok = hmac.compare_digest(str(fields["client_secret"]).encode(), self.client_secret.encode())
        if fields["client_id"] != self.client_id or not secret_ok:
            return self._oauth_error(
                "incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect."
            )
        code = self.oauth_codes.get(str(fields["code"]))
        if code is None or code.used or self.clock() >= code.expires_at:
            return self._oauth_error("bad_verification_code", "The code passed is incorrect or expired.")
        if fields.get("redirect_uri") is not None and fields["redirect_uri"] != code.redirect_uri:
            return self._oauth_error(
                "redirect_uri_mismatch",
                "The redirect_uri MUST match the registered callback URL for this application.",
            )
        code.used = True
        return 200, {
            "access_token": self.issue_user_token(code.login),
            "expires_in": int(USER_TOKEN_TTL_S),
            "refresh_token": "ghr_" + secrets.token_urlsafe(54),
            "refresh_token_expires_in": 15897600,
            "scope": "",
            "token_type": "bearer",
        }

    # --- user-token routes -----------------------------------------------------------------------

    def _account_json(self, login: str) -> dict[str, Json]:
        org = self.orgs.get(login)
        if org is not None:
            return {"login": login, "id": org.id, "type": "Organization"}
        return {"login": login, "id": self.users.get(login, 0), "type": "User"}

    def _installation_json(self, inst: Installation) -> dict[str, Json]:
        account = self._account_json(inst.account)
        return {
            "id": inst.id,
            "app_id": int(self.app_id),
            "app_slug": self.app_slug,
            "target_id": account["id"],
            "target_type": account["type"],
            "account": account,
            "repository_selection": "selected",
            "permissions": dict(inst.permissions),
            "events": [],
            "html_url": f"{self.base_url}/settings/installations/{inst.id}",
        }

    def _user_repo_json(self, full_name: str, login: str) -> dict[str, Json]:
        repo = self.repos.get(full_name)
        if repo is not None:
            out = self._repo_json(repo)
        else:
            owner, name = full_name.split("/", 1)
            out = {
                "id": int(hashlib.sha256(full_name.encode()).hexdigest()[:8], 16),
                "name": name,
                "full_name": full_name,
                "private": True,
                "owner": self._account_json(owner),
                "html_url": f"{self.base_url}/{full_name}",
            }
        owner = full_name.split("/", 1)[0]
        org = self.orgs.get(owner)
        granted = (repo.collaborators if repo is not None else self.repo_grants.get(full_name, {})).get(login)
        admin = owner == login or (org is not None and org.members.get(login) == ("admin", "active"))
        level = "admin" if admin else granted or (org.base_permission if org is not None else "read")
        rank = PERMISSION_LEVELS.get(level, 1)
        out["permissions"] = {"admin": rank >= 3, "push": rank >= 2, "pull": True}
        return out

    def _get_authenticated_user(self, req: _Request) -> tuple[int, Json]:
        login = req.auth.user
        assert login is not None
        return 200, {
            "login": login,
            "id": self.users[login],
            "type": "User",
            "name": login.capitalize(),
            "html_url": f"{self.base_url}/{login}",
            "site_admin": False,
        }

    def _user_installations(self, req: _Request) -> tuple[int, Json, dict[str, str]]:
        login = req.auth.user
        assert login is not None
        # A user token of this App lists this App's installations only.
        visible = [
            self._installation_json(inst)
            for inst in sorted(self.installations.values(), key=lambda i: i.id)
            if inst.app_id is None and self.user_can_see_installation(login, inst)
        ]
        page, headers = self._paginate(req, visible)
        return 200, {"total_count": len(visible), "installations": page}, headers

    def _user_installation_repos(self, req: _Request, iid: str) -> tuple[int, Json, dict[str, str]]:
        login = req.auth.user
        assert login is not None
        inst = self.installations.get(int(iid))
        if inst is None or inst.app_id is not None or not self.user_can_see_installation(login, inst):
            raise _Reply(404, {"message": "Not Found"})
        names = sorted(full for full in inst.repositories if self.user_can_see_repo(login, full))
        repos = [self._user_repo_json(full, login) for full in names]
        page, headers = self._paginate(req, repos)
        return (
            200,
            {"total_count": len(repos), "repository_selection": "selected", "repositories": page},
            headers,
        )

    def _user_membership(self, req: _Request, org: str) -> tuple[int, Json]:
        login = req.auth.user
        assert login is not None
        found = next((o for o in self.orgs.values() if o.login.lower() == org.lower()), None)
        inst = next(
            (
                i
                for i in self.installations.values()
                if i.app_id is None and found is not None and i.account == found.login
            ),
            None,
        )
        # GitHub Apps need the organization "members" permission for this route.
        if inst is None or "members" not in inst.permissions:
            self._deny(req, 403, "Resource not accessible by integration")
        assert found is not None
        membership = found.members.get(login)
        if membership is None:
            raise _Reply(404, {"message": "Not Found"})
        role, state = membership
        return 200, {
            "url": f"{self.api_url}/orgs/{found.login}/memberships/{login}",
            "state": state,
            "role": role,
            "organization_url": f"{self.api_url}/orgs/{found.login}",
            "organization": {"login": found.login, "id": found.id},
            "user": self._user_json(login),
        }

    # --- repository routes ---------------------------------------------------------------------

    def _repo(self, owner: str, repo: str) -> Repo:
        return self.repos[f"{owner}/{repo}"]

    def _get_repo(self, req: _Request, owner: str, repo: str) -> tuple[int, Json]:
        return 200, self._repo_json(self._repo(owner, repo))

    def _get_permission(self, req: _Request, owner: str, repo: str, login: str) -> tuple[int, Json]:
        r = self._repo(owner, repo)
        if login not in self.users and login not in r.collaborators:
            raise _Reply(404, {"message": "Not Found"})
        permission = r.collaborators.get(login, "none")
        role = {
            "admin": "admin",
            "maintain": "maintain",
            "write": "write",
            "triage": "triage",
            "read": "read",
        }
        return 200, {
            "permission": "write"
            if permission == "maintain"
            else ("read" if permission == "triage" else permission),
            "role_name": role.get(permission, "none"),
            "user": self._user_json(login),
        }

    def _get_contents(self, req: _Request, owner: str, repo: str, path: str) -> tuple[int, Json]:
        r = self._repo(owner, repo)
        ref = req.arg("ref") or r.default_branch
        done = self._run_git(r.path, "cat-file", "-p", f"{ref}:{path}")
        kind = self._run_git(r.path, "cat-file", "-t", f"{ref}:{path}").stdout.decode().strip()
        if done.returncode != 0 or kind != "blob":
            raise _Reply(404, {"message": "Not Found"})
        sha = self._git(r.path, "rev-parse", f"{ref}:{path}").strip()
        return 200, {
            "type": "file",
            "encoding": "base64",
            "size": len(done.stdout),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": sha,
            "content": base64.encodebytes(done.stdout).decode(),
        }

    def _get_ref(self, req: _Request, owner: str, repo: str, branch: str) -> tuple[int, Json]:
        sha = self.branch_sha(f"{owner}/{repo}", branch)
        if sha is None:
            raise _Reply(404, {"message": "Not Found"})
        return 200, {"ref": f"refs/heads/{branch}", "object": {"sha": sha, "type": "commit"}}

    # --- actions -----------------------------------------------------------------------------

    def _run_json(self, run: WorkflowRun) -> dict[str, Json]:
        return {
            "id": run.id,
            "name": run.name,
            "head_sha": run.head_sha,
            "head_branch": run.head_branch,
            "run_attempt": run.run_attempt,
            "workflow_id": run.workflow_id,
            "status": "completed",
            "conclusion": run.conclusion,
            "event": run.event,
            "html_url": f"{self.base_url}/{run.repo}/actions/runs/{run.id}",
        }

    def _get_run(self, req: _Request, owner: str, repo: str, run: str) -> tuple[int, Json]:
        found = self._repo(owner, repo).runs.get(int(run))
        if found is None:
            raise _Reply(404, {"message": "Not Found"})
        return 200, self._run_json(found)

    def _rerun_failed_jobs(self, req: _Request, owner: str, repo: str, run: str) -> tuple[int, Json]:
        """Re-run a completed run's failed jobs: a new attempt of the run (its failed jobs again,
        with the same logs here). GitHub refuses a run that did not fail."""
        unknown = set(req.json()) - {"enable_debug_logging"}
        if unknown:
            raise _Unexpected(422, {"message": f"unexpected fields {sorted(unknown)}"})
        found = self._repo(owner, repo).runs.get(int(run))
        if found is None:
            raise _Reply(404, {"message": "Not Found"})
        if found.conclusion != "failure":
            raise _Reply(403, {"message": "This workflow run cannot be retried"})
        found.run_attempt += 1
        for job in found.jobs:
            if job.conclusion == "failure":
                job.run_attempt = found.run_attempt
        return 201, {}

    def _list_workflow_runs(
        self, req: _Request, owner: str, repo: str, workflow: str
    ) -> tuple[int, Json, dict[str, str]]:
        """A workflow's runs, newest first, filtered like GitHub's: ``status`` is a status or a
        conclusion (every run here is ``completed``)."""
        runs = [r for r in self._repo(owner, repo).runs.values() if r.workflow_id == int(workflow)]
        branch, status, event, head_sha = (req.arg(k) for k in ("branch", "status", "event", "head_sha"))
        if status is not None and status not in RUN_STATUSES:
            raise _Unexpected(422, {"message": f"unknown status {status!r}"})
        selected = [
            self._run_json(r)
            for r in reversed(runs)
            if (branch is None or r.head_branch == branch)
            and (status is None or status in ("completed", r.conclusion))
            and (event is None or r.event == event)
            and (head_sha is None or r.head_sha == head_sha)
        ]
        page, headers = self._paginate(req, selected)
        return 200, {"total_count": len(selected), "workflow_runs": page}, headers

    def _list_repo_runs(self, req: _Request, owner: str, repo: str) -> tuple[int, Json, dict[str, str]]:
        """The repository's runs, newest first (``head_sha`` filters; a run's ``conclusion`` may be
        ``action_required``: held for approval)."""
        head_sha = req.arg("head_sha")
        runs = self._repo(owner, repo).runs.values()
        selected = [self._run_json(r) for r in reversed(list(runs)) if head_sha in (None, r.head_sha)]
        page, headers = self._paginate(req, selected)
        return 200, {"total_count": len(selected), "workflow_runs": page}, headers

    def _list_jobs(
        self, req: _Request, owner: str, repo: str, run: str, attempt: str
    ) -> tuple[int, Json, dict[str, str]]:
        found = self._repo(owner, repo).runs.get(int(run))
        if found is None or int(attempt) != found.run_attempt:
            raise _Reply(404, {"message": "Not Found"})
        jobs = [
            {
                "id": job.id,
                "run_id": job.run_id,
                "run_attempt": job.run_attempt,
                "name": job.name,
                "status": job.status,
                "conclusion": job.conclusion,
                "head_sha": found.head_sha,
                "html_url": f"{self.base_url}/{found.repo}/actions/runs/{found.id}/job/{job.id}",
                "steps": [],
            }
            for job in found.jobs
        ]
        page, headers = self._paginate(req, jobs)
        return 200, {"total_count": len(jobs), "jobs": page}, headers

    def _blob_sig(self, job: int) -> str:
        return hmac.new(self._blob_key, str(job).encode(), hashlib.sha256).hexdigest()[:32]

    def _find_job(self, job_id: int) -> Job | None:
        for r in self.repos.values():
            for run in r.runs.values():
                for job in run.jobs:
                    if job.id == job_id:
                        return job
        return None

    def _job_logs(self, req: _Request, owner: str, repo: str, job: str) -> tuple[int, Json, dict[str, str]]:
        found = next(
            (j for run in self._repo(owner, repo).runs.values() for j in run.jobs if j.id == int(job)), None
        )
        if found is None:
            raise _Reply(404, {"message": "Not Found"})
        location = f"{self.base_url}/_blobs/logs/{found.id}?sig={self._blob_sig(found.id)}"
        return 302, None, {"Location": location}

    def _blob_logs(self, req: _Request, job: str) -> tuple[int, Json, dict[str, str]]:
        if not hmac.compare_digest(req.arg("sig") or "", self._blob_sig(int(job))):
            raise _Unexpected(403, "signature mismatch")
        found = self._find_job(int(job))
        if found is None:
            raise _Unexpected(404, "no such log")
        return 200, found.log, {"Content-Type": "text/plain; charset=utf-8"}

    # --- pulls ---------------------------------------------------------------------------------

    def _pull_json(self, r: Repo, pull: Mapping[str, Json]) -> dict[str, Json]:
        head_sha = self.branch_sha(r.full_name, pull["head"]["ref"]) or pull["head"]["sha"]
        out = {k: v for k, v in pull.items() if k != "head"}
        out["head"] = {**pull["head"], "sha": head_sha}
        out["labels"] = list(r.issues[pull["number"]]["labels"])
        return out

    def _list_pulls(self, req: _Request, owner: str, repo: str) -> tuple[int, Json, dict[str, str]]:
        r = self._repo(owner, repo)
        state = req.arg("state", "open")
        if state not in ("open", "closed", "all"):
            raise _Unexpected(422, {"message": f"invalid state {state!r}"})
        head = req.arg("head")
        base = req.arg("base")
        if head is not None and ":" not in head:
            raise _Unexpected(422, {"message": "head must be 'owner:branch'"})
        pulls = []
        for pull in sorted(r.pulls.values(), key=lambda p: -int(p["number"])):
            if state != "all" and pull["state"] != state:
                continue
            if head is not None and pull["head"]["label"] != head:
                continue
            if base is not None and pull["base"]["ref"] != base:
                continue
            pulls.append(self._pull_json(r, pull))
        page, headers = self._paginate(req, pulls)
        return 200, page, headers

    def _create_pull(self, req: _Request, owner: str, repo: str) -> tuple[int, Json]:
        body = req.json()
        _validate(
            body,
            allowed={
                "title": str,
                "head": str,
                "base": str,
                "body": str,
                "draft": bool,
                "maintainer_can_modify": bool,
                "head_repo": str,
                "issue": int,
            },
            required=("head", "base", "title"),
        )
        r = self._repo(owner, repo)
        head = body["head"].split(":", 1)[-1]
        base = body["base"]
        if len(body.get("body") or "") > MAX_BODY:
            raise _Unexpected(
                422,
                {
                    "message": "Validation Failed",
                    "errors": ["body is too long (maximum is 65536 characters)"],
                },
            )
        head_sha = self.branch_sha(r.full_name, head)
        base_sha = self.branch_sha(r.full_name, base)
        if head_sha is None or base_sha is None:
            raise _Reply(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [
                        {
                            "resource": "PullRequest",
                            "field": "head" if head_sha is None else "base",
                            "code": "invalid",
                        }
                    ],
                },
            )
        label = f"{owner}:{head}"
        if any(p["state"] == "open" and p["head"]["label"] == label for p in r.pulls.values()):
            raise _Reply(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [{"message": f"A pull request already exists for {label}."}],
                },
            )
        if self._run_git(r.path, "merge-base", "--is-ancestor", head_sha, base_sha).returncode == 0:
            raise _Reply(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [{"message": f"No commits between {base} and {head}"}],
                },
            )
        number = self._next_number(r)
        user = self._user_json(self.bot_login)
        r.issues[number] = {
            "id": next(self._ids),
            "number": number,
            "title": body["title"],
            "body": body.get("body") or "",
            "state": "open",
            "labels": [],
            "user": user,
            "html_url": f"{self.base_url}/{r.full_name}/pull/{number}",
            "pull_request": {"url": f"{self.api_url}/repos/{r.full_name}/pulls/{number}"},
        }
        pull = {
            "id": next(self._ids),
            "number": number,
            "state": "open",
            "title": body["title"],
            "body": body.get("body") or "",
            "draft": bool(body.get("draft", False)),
            "user": user,
            "html_url": f"{self.base_url}/{r.full_name}/pull/{number}",
            "head": {"ref": head, "sha": head_sha, "label": label, "repo": {"full_name": r.full_name}},
            "base": {
                "ref": base,
                "sha": base_sha,
                "label": f"{owner}:{base}",
                "repo": {"full_name": r.full_name},
            },
            "merged": False,
        }
        r.pulls[number] = pull
        return 201, self._pull_json(r, pull)

    def _get_pull(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        r = self._repo(owner, repo)
        pull = r.pulls.get(int(number))
        if pull is None:
            raise _Reply(404, {"message": "Not Found"})
        return 200, self._pull_json(r, pull)

    def _pull_patches(self, r: Repo, pull: Mapping[str, Json]) -> dict[str, tuple[str, str]]:
        """``path -> (status, patch)`` of the pull request's diff (three-dot: from the merge base)."""
        head = self.branch_sha(r.full_name, pull["head"]["ref"]) or pull["head"]["sha"]
        base = self.branch_sha(r.full_name, pull["base"]["ref"]) or pull["base"]["sha"]
        merge_base = self._git(r.path, "merge-base", base, head).strip()
        out: dict[str, tuple[str, str]] = {}
        for line in self._git(r.path, "diff", "--name-status", "--no-renames", merge_base, head).splitlines():
            code, _, path = line.partition("\t")
            text = self._git(r.path, "diff", "--no-color", "-U3", merge_base, head, "--", path)
            at = text.find("\n@@")
            status = {"A": "added", "D": "removed"}.get(code[:1], "modified")
            out[path] = (status, text[at + 1 :] if at >= 0 else "")
        return out

    def _list_pull_files(
        self, req: _Request, owner: str, repo: str, number: str
    ) -> tuple[int, Json, dict[str, str]]:
        r = self._repo(owner, repo)
        pull = r.pulls.get(int(number))
        if pull is None:
            raise _Reply(404, {"message": "Not Found"})
        files = [
            {"filename": path, "status": status, "patch": patch}
            for path, (status, patch) in sorted(self._pull_patches(r, pull).items())
        ]
        page, headers = self._paginate(req, files)
        return 200, page, headers

    def _list_reviews(
        self, req: _Request, owner: str, repo: str, number: str
    ) -> tuple[int, Json, dict[str, str]]:
        r = self._repo(owner, repo)
        if int(number) not in r.pulls:
            raise _Reply(404, {"message": "Not Found"})
        reviews = [
            {k: v for k, v in rv.items() if k != "comments"}
            for rv in self.reviews_on(r.full_name, int(number))
        ]
        page, headers = self._paginate(req, reviews)
        return 200, page, headers

    def _create_review(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"commit_id": str, "body": str, "event": str, "comments": list})
        r = self._repo(owner, repo)
        pull = r.pulls.get(int(number))
        if pull is None:
            raise _Reply(404, {"message": "Not Found"})
        if body.get("event") != "COMMENT":
            raise _Unexpected(422, {"message": "ARCS only leaves COMMENT reviews"})
        commit = body.get("commit_id")
        if commit is not None and not self.has_commit(r.full_name, commit):
            raise _Unexpected(
                422, {"message": "Validation Failed", "errors": ["commit_id is not part of the pull request"]}
            )
        ranges: dict[str, list[tuple[int, int]]] = {}
        for path, (_status, patch) in self._pull_patches(r, pull).items():
            for m in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", patch, re.MULTILINE):
                start, count = int(m.group(1)), int(m.group(2) or 1)
                ranges.setdefault(path, []).append((start, start + count - 1))
        comments = body.get("comments") or []
        for item in comments:
            if not isinstance(item, dict):
                raise _Unexpected(422, {"message": "comments[] must be objects"})
            _validate(
                item,
                allowed={
                    "path": str,
                    "body": str,
                    "line": int,
                    "side": str,
                    "start_line": int,
                    "start_side": str,
                },
                required=("path", "body", "line"),
            )
            line, start = item["line"], item.get("start_line", item["line"])
            if (
                item.get("side", "RIGHT") != "RIGHT"
                or item.get("start_side", "RIGHT") != "RIGHT"
                or start > line
            ):
                raise _Unexpected(422, {"message": "Validation Failed", "errors": ["bad side or line range"]})
            if not any(a <= start and line <= b for a, b in ranges.get(item["path"], [])):
                raise _Unexpected(
                    422,
                    {
                        "message": "Validation Failed",
                        "errors": ["Pull request review thread line must be part of the diff"],
                    },
                )
        rid = next(self._ids)
        review = {
            "id": rid,
            "user": self._user_json(self.bot_login),
            "body": body.get("body") or "",
            "state": "COMMENTED",
            "commit_id": commit or pull["head"]["sha"],
            "html_url": f"{self.base_url}/{r.full_name}/pull/{number}#pullrequestreview-{rid}",
            "comments": [dict(item) for item in comments],
        }
        self.reviews.setdefault((r.full_name, int(number)), []).append(review)
        return 200, {k: v for k, v in review.items() if k != "comments"}

    def _update_pull(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        body = req.json()
        _validate(
            body,
            allowed={"title": str, "body": str, "state": str, "base": str, "maintainer_can_modify": bool},
        )
        r = self._repo(owner, repo)
        pull = r.pulls.get(int(number))
        if pull is None:
            raise _Reply(404, {"message": "Not Found"})
        if "state" in body and body["state"] not in ("open", "closed"):
            raise _Unexpected(422, {"message": "invalid state"})
        if len(body.get("body") or "") > MAX_BODY:
            raise _Unexpected(
                422,
                {
                    "message": "Validation Failed",
                    "errors": ["body is too long (maximum is 65536 characters)"],
                },
            )
        for key in ("title", "body", "state"):
            if key in body:
                pull[key] = body[key]
                r.issues[int(number)][key] = body[key]
        if "base" in body:
            pull["base"]["ref"] = body["base"]
        return 200, self._pull_json(r, pull)

    # --- issues, comments, labels, reactions -----------------------------------------------------

    def _list_issues(self, req: _Request, owner: str, repo: str) -> tuple[int, Json, dict[str, str]]:
        # GitHub lists pull requests as issues too (with a `pull_request` key), newest first by default.
        state = req.arg("state") or "open"
        if state not in ("open", "closed", "all"):
            raise _Unexpected(422, {"message": f"invalid state {state!r}"})
        if (req.arg("sort") or "created") not in ("created", "updated", "comments") or (
            req.arg("direction") or "desc"
        ) not in ("asc", "desc"):
            raise _Unexpected(422, {"message": "invalid sort or direction"})
        creator = req.arg("creator")
        issues = [
            i
            for i in self._repo(owner, repo).issues.values()
            if (state == "all" or i["state"] == state) and (creator is None or i["user"]["login"] == creator)
        ]
        issues.sort(key=lambda i: int(i["number"]), reverse=(req.arg("direction") or "desc") == "desc")
        page, headers = self._paginate(req, issues)
        return 200, page, headers

    def _create_issue(self, req: _Request, owner: str, repo: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"title": str, "body": str, "labels": list}, required=("title",))
        if not body["title"].strip() or len(body["title"]) > 256:
            raise _Unexpected(
                422, {"message": "Validation Failed", "errors": ["title is missing or too long"]}
            )
        if len(body.get("body") or "") > MAX_BODY:
            raise _Unexpected(422, {"message": "Body is too long (maximum is 65536 characters)"})
        r = self._repo(owner, repo)
        number = self._next_number(r)
        r.issues[number] = {
            "id": next(self._ids),
            "number": number,
            "title": body["title"],
            "body": body.get("body") or "",
            "state": "open",
            "labels": [],
            "user": self._user_json(self.bot_login),
            "html_url": f"{self.base_url}/{r.full_name}/issues/{number}",
        }
        return 201, r.issues[number]

    def _update_issue(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"title": str, "body": str, "state": str, "state_reason": str})
        r = self._repo(owner, repo)
        issue = r.issues.get(int(number))
        if issue is None:
            raise _Reply(404, {"message": "Not Found"})
        if "state" in body and body["state"] not in ("open", "closed"):
            raise _Unexpected(422, {"message": "invalid state"})
        if len(body.get("body") or "") > MAX_BODY or ("title" in body and not body["title"].strip()):
            raise _Unexpected(422, {"message": "Validation Failed"})
        for key in ("title", "body", "state"):
            if key in body:
                issue[key] = body[key]
        return 200, issue

    def _get_issue(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        issue = self._repo(owner, repo).issues.get(int(number))
        if issue is None:
            raise _Reply(404, {"message": "Not Found"})
        return 200, issue

    def _add_labels(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"labels": list}, required=("labels",))
        if not all(isinstance(name, str) and name for name in body["labels"]):
            raise _Unexpected(422, {"message": "labels must be non-empty strings"})
        r = self._repo(owner, repo)
        issue = r.issues.get(int(number))
        if issue is None:
            raise _Reply(404, {"message": "Not Found"})
        for name in body["labels"]:
            label = r.labels.setdefault(name, {"id": next(self._ids), "name": name, "color": "ededed"})
            if all(existing["name"] != name for existing in issue["labels"]):
                issue["labels"].append(label)
        return 200, issue["labels"]

    def _list_comments(
        self, req: _Request, owner: str, repo: str, number: str
    ) -> tuple[int, Json, dict[str, str]]:
        r = self._repo(owner, repo)
        if int(number) not in r.issues:
            raise _Reply(404, {"message": "Not Found"})
        comments = [
            self._public_comment(c)
            for c in sorted(r.comments.values(), key=lambda c: int(c["id"]))
            if c["issue_number"] == int(number)
        ]
        page, headers = self._paginate(req, comments)
        return 200, page, headers

    def _create_comment(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"body": str}, required=("body",))
        if len(body["body"]) > MAX_BODY:
            raise _Unexpected(422, {"message": "Body is too long (maximum is 65536 characters)"})
        r = self._repo(owner, repo)
        if int(number) not in r.issues:
            raise _Reply(404, {"message": "Not Found"})
        comment = self._new_comment(r, int(number), body["body"], self._user_json(self.bot_login))
        return 201, self._public_comment(comment)

    def _update_comment(self, req: _Request, owner: str, repo: str, cid: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"body": str}, required=("body",))
        if len(body["body"]) > MAX_BODY:
            raise _Unexpected(422, {"message": "Body is too long (maximum is 65536 characters)"})
        r = self._repo(owner, repo)
        comment = r.comments.get(int(cid))
        if comment is None:
            raise _Reply(404, {"message": "Not Found"})
        if comment["user"]["login"] != self.bot_login:
            # An App can edit others' comments with issues:write, but ARCS never should.
            raise _Unexpected(403, {"message": "ARCS must only edit its own comments"})
        comment["body"] = body["body"]
        comment["updated_at"] = _iso(self.clock())
        return 200, self._public_comment(comment)

    def _reaction(self, target: dict[str, Json], req: _Request) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={"content": str}, required=("content",))
        if body["content"] not in REACTIONS:
            raise _Unexpected(422, {"message": f"invalid reaction {body['content']!r}"})
        reactions: dict[str, Json] = target.setdefault("reactions", {})
        existing = reactions.get(body["content"])
        if existing is not None:
            return 200, existing
        reaction = {
            "id": next(self._ids),
            "content": body["content"],
            "user": self._user_json(self.bot_login),
        }
        reactions[body["content"]] = reaction
        return 201, reaction

    def _react_comment(self, req: _Request, owner: str, repo: str, cid: str) -> tuple[int, Json]:
        comment = self._repo(owner, repo).comments.get(int(cid))
        if comment is None:
            raise _Reply(404, {"message": "Not Found"})
        return self._reaction(comment, req)

    def _react_issue(self, req: _Request, owner: str, repo: str, number: str) -> tuple[int, Json]:
        issue = self._repo(owner, repo).issues.get(int(number))
        if issue is None:
            raise _Reply(404, {"message": "Not Found"})
        return self._reaction(issue, req)

    def reactions_on_comment(self, full_name: str, comment_id: int) -> list[str]:
        return sorted(self.repos[full_name].comments[comment_id].get("reactions", {}))

    def reactions_on_issue(self, full_name: str, number: int) -> list[str]:
        return sorted(self.repos[full_name].issues[number].get("reactions", {}))

    def comments_on(self, full_name: str, number: int) -> list[dict[str, Json]]:
        return [c for c in self.repos[full_name].comments.values() if c["issue_number"] == number]

    # --- check runs ----------------------------------------------------------------------------

    _CHECK_FIELDS: Mapping[str, type | tuple[type, ...]] = {
        "name": str,
        "head_sha": str,
        "details_url": str,
        "external_id": str,
        "status": str,
        "started_at": str,
        "conclusion": str,
        "completed_at": str,
        "output": dict,
        "actions": list,
    }

    def _check_body(self, body: Mapping[str, Json], current: Mapping[str, Json] | None) -> None:
        status = body.get("status", current["status"] if current else "queued")
        if status not in CHECK_STATUSES:
            raise _Unexpected(422, {"message": f"invalid status {status!r}"})
        conclusion = body.get("conclusion")
        if conclusion is not None and conclusion not in CHECK_CONCLUSIONS:
            raise _Unexpected(422, {"message": f"invalid conclusion {conclusion!r}"})
        if status == "completed" and conclusion is None and not (current and current.get("conclusion")):
            raise _Unexpected(422, {"message": "conclusion is required when status is completed"})
        output = body.get("output")
        if output is not None:
            _validate(
                output,
                allowed={"title": str, "summary": str, "text": str, "annotations": list, "images": list},
                required=("title", "summary"),
            )
            for key in ("summary", "text"):
                if len(output.get(key) or "") > MAX_TEXT:
                    raise _Unexpected(422, {"message": f"output.{key} is longer than {MAX_TEXT} characters"})
            self._check_annotations(output.get("annotations") or [])
        actions = body.get("actions")
        if actions is not None:
            if len(actions) > MAX_CHECK_ACTIONS:
                raise _Unexpected(422, {"message": f"at most {MAX_CHECK_ACTIONS} actions"})
            for action in actions:
                if not isinstance(action, dict):
                    raise _Unexpected(422, {"message": "an action is an object"})
                _validate(
                    action,
                    allowed={"label": str, "description": str, "identifier": str},
                    required=("label", "description", "identifier"),
                )
                for key, limit in (("label", 20), ("description", 40), ("identifier", 20)):
                    if not action[key] or len(action[key]) > limit:
                        raise _Unexpected(422, {"message": f"action {key} must be 1-{limit} characters"})

    @staticmethod
    def _check_annotations(annotations: Sequence[Json]) -> None:
        """GitHub's rules: at most 50 per request, each with a path inside the repository, a
        line range, a level and a message."""
        if len(annotations) > MAX_ANNOTATIONS_PER_REQUEST:
            raise _Unexpected(
                422, {"message": f"at most {MAX_ANNOTATIONS_PER_REQUEST} annotations per request"}
            )
        for note in annotations:
            if not isinstance(note, dict):
                raise _Unexpected(422, {"message": "an annotation is an object"})
            _validate(
                note,
                allowed={
                    "path": str,
                    "start_line": int,
                    "end_line": int,
                    "start_column": int,
                    "end_column": int,
                    "annotation_level": str,
                    "message": str,
                    "title": str,
                    "raw_details": str,
                },
                required=("path", "start_line", "end_line", "annotation_level", "message"),
            )
            path = note["path"]
            if not path or path.startswith("/") or "\\" in path or ".." in path.split("/"):
                raise _Unexpected(422, {"message": f"annotation path {path!r} is not in the repository"})
            if note["annotation_level"] not in ANNOTATION_LEVELS:
                raise _Unexpected(422, {"message": f"invalid annotation_level {note['annotation_level']!r}"})
            if note["start_line"] < 1 or note["end_line"] < note["start_line"]:
                raise _Unexpected(422, {"message": "annotation lines must be 1 <= start_line <= end_line"})

    def _create_check(self, req: _Request, owner: str, repo: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed=self._CHECK_FIELDS, required=("name", "head_sha"))
        self._check_body(body, None)
        r = self._repo(owner, repo)
        if not re.fullmatch(r"[0-9a-f]{40}", body["head_sha"]) or not self.has_commit(
            r.full_name, body["head_sha"]
        ):
            raise _Reply(422, {"message": "No commit found for SHA: " + body["head_sha"]})
        cid = next(self._ids)
        check = {
            "id": cid,
            "name": body["name"],
            "head_sha": body["head_sha"],
            "status": "completed" if body.get("conclusion") else body.get("status", "queued"),
            "conclusion": body.get("conclusion"),
            "details_url": body.get("details_url"),
            "external_id": body.get("external_id"),
            "output": body.get("output") or {"title": None, "summary": None, "text": None},
            "annotations": list((body.get("output") or {}).get("annotations") or []),
            "actions": list(body.get("actions") or []),
            "html_url": f"{self.base_url}/{r.full_name}/runs/{cid}",
            "app": {"id": int(self.app_id), "slug": self.app_slug},
            "history": [body.get("status", "queued")],
        }
        r.check_runs[cid] = check
        return 201, {k: v for k, v in check.items() if k != "history"}

    def _update_check(self, req: _Request, owner: str, repo: str, cid: str) -> tuple[int, Json]:
        body = req.json()
        _validate(body, allowed={k: v for k, v in self._CHECK_FIELDS.items() if k != "head_sha"})
        r = self._repo(owner, repo)
        check = r.check_runs.get(int(cid))
        if check is None:
            raise _Reply(404, {"message": "Not Found"})
        self._check_body(body, check)
        for key, value in body.items():
            check[key] = value
        # GitHub appends the annotations of every request (each request carries at most 50).
        check["annotations"] = check.get("annotations", []) + list(
            (body.get("output") or {}).get("annotations") or []
        )
        if body.get("conclusion"):
            check["status"] = "completed"
        check["history"].append(check["status"])
        return 200, {k: v for k, v in check.items() if k != "history"}

    def _list_checks(
        self, req: _Request, owner: str, repo: str, sha: str
    ) -> tuple[int, Json, dict[str, str]]:
        r = self._repo(owner, repo)
        name = req.arg("check_name")
        runs = [
            {k: v for k, v in c.items() if k != "history"}
            for c in r.check_runs.values()
            if c["head_sha"] == sha and (name is None or c["name"] == name)
        ]
        page, headers = self._paginate(req, runs)
        return 200, {"total_count": len(runs), "check_runs": page}, headers

    # --- pagination ----------------------------------------------------------------------------

    def _paginate(self, req: _Request, items: Sequence[Json]) -> tuple[list[Json], dict[str, str]]:
        try:
            per_page = min(int(req.arg("per_page") or 30), 100)
            page = max(int(req.arg("page") or 1), 1)
        except ValueError as exc:
            raise _Unexpected(422, {"message": "per_page/page must be integers"}) from exc
        start = (page - 1) * per_page
        chunk = list(items[start : start + per_page])
        headers: dict[str, str] = {}
        if start + per_page < len(items):
            query = {k: v[-1] for k, v in req.query.items()}
            query.update({"per_page": str(per_page), "page": str(page + 1)})
            qs = "&".join(f"{k}={v}" for k, v in query.items())
            headers["Link"] = f'<{self.base_url}{req.path}?{qs}>; rel="next"'
        return chunk, headers

    # --- git smart HTTP ------------------------------------------------------------------------

    def _handle_git(
        self, req: _Request, owner: str, name: str, rest: str
    ) -> tuple[int, dict[str, str], bytes]:
        full = f"{owner}/{name}"
        service = req.arg("service") if rest == "info/refs" else rest
        if rest not in ("info/refs", "git-upload-pack", "git-receive-pack") or service not in (
            "git-upload-pack",
            "git-receive-pack",
        ):
            self.unexpected.append(f"{req.method} {req.path}?{req.raw_query}: not a smart-HTTP request")
            return 404, {}, b"not found"
        challenge = {"WWW-Authenticate": 'Basic realm="GitHub"'}
        header = req.headers.get("authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() != "basic":
            self.auth_failures.append(f"{req.method} {req.path}: 401 no credentials")
            return 401, challenge, b"Authentication required"
        try:
            user, _, secret = base64.b64decode(credential).decode().partition(":")
        except ValueError:
            return 401, challenge, b"bad credentials"
        token = self.tokens.get(secret)
        inst = self.installations.get(token.installation_id) if token else None
        if (
            token is None
            or inst is None
            or token.revoked
            or self.clock() >= token.expires_at
            or user != "x-access-token"
        ):
            self.auth_failures.append(f"{req.method} {req.path}: 401 bad credentials")
            return 401, challenge, b"Invalid username or token"
        req.auth = _Auth("basic", token)
        if full not in self.repos or full not in token.repositories or full not in inst.repositories:
            self.auth_failures.append(f"{req.method} {req.path}: 404 repository not accessible")
            return 404, {}, b"Repository not found."
        need = "write" if service == "git-receive-pack" else "read"
        if not self._grants(token, "contents", need):
            self.auth_failures.append(f"{req.method} {req.path}: 403 contents:{need} not granted")
            return 403, {}, f"Permission to {full}.git denied to {self.bot_login}.".encode()
        before = self.branches(full) if rest == "git-receive-pack" else {}
        status, headers, body = self._cgi(req, owner, name, rest)
        if rest == "git-receive-pack":
            after = self.branches(full)
            changes = {
                ref: {"old": before.get(ref), "new": after.get(ref)}
                for ref in sorted(set(before) | set(after))
                if before.get(ref) != after.get(ref)
            }
            if changes:
                self.mutations.append(
                    Mutation(
                        "POST",
                        f"/{full}.git/git-receive-pack",
                        {"refs": changes},
                        token.value,
                        token.installation_id,
                    )
                )
        return status, headers, body

    def _cgi(self, req: _Request, owner: str, name: str, rest: str) -> tuple[int, dict[str, str], bytes]:
        env = self._git_env(
            {
                "GIT_PROJECT_ROOT": str(self.git_root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": f"/{owner}/{name}.git/{rest}",
                "QUERY_STRING": req.raw_query,
                "REQUEST_METHOD": req.method,
                "CONTENT_TYPE": req.headers.get("content-type", ""),
                "CONTENT_LENGTH": str(len(req.body)),
                "REMOTE_USER": self.bot_login,
                "REMOTE_ADDR": "127.0.0.1",
                "SERVER_PROTOCOL": "HTTP/1.1",
            }
        )
        if "git-protocol" in req.headers:
            env["GIT_PROTOCOL"] = req.headers["git-protocol"]
        if "content-encoding" in req.headers:
            env["HTTP_CONTENT_ENCODING"] = req.headers["content-encoding"]
        done = subprocess.run(
            ["git", "http-backend"], input=req.body, env=env, capture_output=True, check=False, timeout=60
        )
        out = done.stdout
        sep = out.find(b"\r\n\r\n")
        head, body = (
            (out[:sep], out[sep + 4 :]) if sep >= 0 else (out.split(b"\n\n", 1)[0], out.split(b"\n\n", 1)[-1])
        )
        status = 200
        headers: dict[str, str] = {}
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers[key.strip()] = value.strip()
        if done.returncode != 0 and status == 200:
            status = 500
            body = done.stderr
        return status, headers, body


class _Handler(BaseHTTPRequestHandler):
    owner: GitHubDouble
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stall per request

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the double records requests itself."""

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size_line = self.rfile.readline().strip()
                size = int(size_line.split(b";", 1)[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        req = _Request(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            raw_query=parts.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self._read_body(),
        )
        try:
            status, headers, body = self.owner.handle(req)
        except Exception as exc:  # a bug in the double: make it visible
            self.owner.unexpected.append(f"{req.method} {req.path}: double crashed: {exc!r}")
            status, headers, body = 500, {"Content-Type": "text/plain"}, repr(exc).encode()
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = _serve
    do_POST = _serve
    do_PATCH = _serve
    do_PUT = _serve
    do_DELETE = _serve
    do_HEAD = _serve


def oauth_login(
    client: httpx.Client, double: GitHubDouble, *, next: str = "/", login: str | None = None
) -> httpx.Response:
    """Log in to an ARCS app through the double as a browser would, and return the answer of
    ARCS' ``/login/callback`` (a redirect to ``next`` on success; cookies land in ``client``).

    ``client`` talks to ARCS (a Starlette ``TestClient``, or an ``httpx.Client`` on a served app
    whose ``ARCS_PUBLIC_URL`` is its base URL); the App's callback URL must be registered with
    :meth:`GitHubDouble.register_callback`. ``login`` signs that user in at GitHub first.
    """
    if login is not None:
        double.sign_in(login)
    start = client.get("/login", params={"next": next}, follow_redirects=False)
    assert start.status_code in (302, 303, 307), f"/login answered {start.status_code}: {start.text[:300]}"
    authorize = start.headers["location"]
    assert authorize.startswith(double.base_url + "/login/oauth/authorize?"), authorize
    with httpx.Client(trust_env=False, verify=False) as browser:
        answer = browser.get(authorize, follow_redirects=False)
    assert answer.status_code == 302, f"authorize answered {answer.status_code}: {answer.text[:300]}"
    callback = urlsplit(answer.headers["location"])
    return client.get(f"{callback.path}?{callback.query}", follow_redirects=False)
