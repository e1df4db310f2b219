"""GitHub App authentication: the App JWT, and installation tokens narrowed to one repository.

An :class:`InstallationTokenProvider` mints a token for exactly one repository and the permission
subset the job needs, caches it, refreshes it ``refresh_margin_s`` before it expires (a repair can
outlive the one-hour token) and revokes it at the end (``DELETE /installation/token``). Tokens are
held as :class:`pydantic.SecretStr`: they never appear in a ``repr``, a log line or an error.

The JWT is built here (PyJWT, RS256) rather than by githubkit's ``AppAuthStrategy`` because that
one reads the wall clock directly and caches JWTs in a process-wide store keyed only by app id;
an injected clock keeps refresh logic testable without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Literal, Protocol

import httpx
import structlog
from githubkit.auth.base import BaseAuthStrategy
from pydantic import SecretStr

from bot.errors import ConfigError
from bot.github import GitHubError

if TYPE_CHECKING:
    from githubkit import GitHubCore

    from bot.settings import Settings

log = structlog.get_logger(__name__)

Clock = Callable[[], float]
"""Seconds since the epoch (``time.time`` in production, a fake in tests)."""

Access = Literal["read", "write"]
Permissions = Mapping[str, Access]

JWT_BACKDATE_S = 60
"""``iat`` is set this far in the past: GitHub rejects JWTs issued 'in the future' on clock drift."""
JWT_LIFETIME_S = 540
"""GitHub accepts at most 10 minutes; 9 leaves room for drift."""
DEFAULT_REFRESH_MARGIN_S = 600.0
"""Refresh an installation token this long before it expires (tokens live one hour)."""

REPAIR_PERMISSIONS: Permissions = MappingProxyType(
    {
        "metadata": "read",
        "actions": "read",
        "contents": "write",
        "pull_requests": "write",
        "issues": "write",
        "checks": "write",
    }
)
"""What a repair job needs: read logs, push an ``arcs/`` branch, open the PR, comment, check run."""

READ_PERMISSIONS: Permissions = MappingProxyType(
    {"metadata": "read", "contents": "read", "actions": "read", "issues": "read", "pull_requests": "read"}
)
"""Reading: clone, ``.arcs.yml``, logs, issues, pull requests, collaborator permissions."""

COMMENT_PERMISSIONS: Permissions = MappingProxyType(
    {"metadata": "read", "issues": "write", "pull_requests": "write", "checks": "write"}
)
"""Talking: reactions, the status comment, the check run (no write access to code)."""

PUBLISH_PERMISSIONS: Permissions = MappingProxyType(
    {"metadata": "read", "contents": "write", "pull_requests": "write", "issues": "write"}
)
"""Publishing a fix: push the ``arcs/`` branch, open/update the pull request, label it."""

RERUN_PERMISSIONS: Permissions = MappingProxyType({"metadata": "read", "actions": "write"})
"""Re-running a known-flaky run's failed jobs (``.arcs.yml`` ``flaky.rerun_failed_jobs``): the one
call that needs ``actions: write``, which the default manifest does not grant (the token request
then fails and the check run says so)."""


@dataclass(frozen=True, slots=True)
class AppCredentials:
    """The App's id and private key (PEM). The key is a SecretStr: safe to ``repr``."""

    app_id: str
    private_key: SecretStr

    @classmethod
    def from_settings(cls, settings: Settings) -> AppCredentials:
        """``ARCS_APP_ID`` and ``ARCS_PRIVATE_KEY`` (or ``ARCS_PRIVATE_KEY_PATH``); ConfigError if missing."""
        if not settings.app_id:
            raise ConfigError("ARCS_APP_ID is not set: the GitHub App's id is needed to authenticate")
        if settings.private_key is not None and settings.private_key.get_secret_value().strip():
            return cls(app_id=str(settings.app_id), private_key=settings.private_key)
        if settings.private_key_path is not None:
            try:
                text = settings.private_key_path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(
                    f"ARCS_PRIVATE_KEY_PATH: cannot read {settings.private_key_path}: {exc.__class__.__name__}"
                ) from exc
            return cls(app_id=str(settings.app_id), private_key=SecretStr(text))
        raise ConfigError(
            "neither ARCS_PRIVATE_KEY nor ARCS_PRIVATE_KEY_PATH is set: the App's key is needed"
        )


def create_app_jwt(credentials: AppCredentials, *, now: float) -> str:
    """An RS256 JWT authenticating as the App (``iss`` = app id), valid for about nine minutes."""
    import jwt  # PyJWT (githubkit[auth-app]); imported here so the module loads without it

    payload = {"iat": int(now) - JWT_BACKDATE_S, "exp": int(now) + JWT_LIFETIME_S, "iss": credentials.app_id}
    try:
        return jwt.encode(payload, credentials.private_key.get_secret_value(), algorithm="RS256")
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        # Never echo the key; the exception text of some backends includes it.
        raise ConfigError("ARCS_PRIVATE_KEY is not a valid PEM RSA private key") from exc


class _AppJWTAuth(httpx.Auth):
    """Sets ``Authorization: Bearer <jwt>``; the JWT is reused until a minute before it expires."""

    def __init__(self, credentials: AppCredentials, clock: Clock) -> None:
        self._credentials = credentials
        self._clock = clock
        self._lock = threading.Lock()
        self._jwt: SecretStr | None = None
        self._expires = 0.0

    def _current(self) -> str:
        with self._lock:
            now = self._clock()
            if self._jwt is None or now >= self._expires - 60:
                self._jwt = SecretStr(create_app_jwt(self._credentials, now=now))
                self._expires = int(now) + JWT_LIFETIME_S
            return self._jwt.get_secret_value()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._current()}"
        yield request


@dataclass(frozen=True, slots=True)
class AppJWTAuthStrategy(BaseAuthStrategy):
    """githubkit auth strategy: authenticate as the App itself (JWT)."""

    credentials: AppCredentials
    clock: Clock = time.time

    def get_auth_flow(self, github: GitHubCore[BaseAuthStrategy]) -> httpx.Auth:
        """The httpx auth flow githubkit installs on its client."""
        return _AppJWTAuth(self.credentials, self.clock)


class TokenSource(Protocol):
    """Anything that hands out a currently valid installation token."""

    def token(self) -> SecretStr:
        """A token valid for at least the refresh margin."""
        ...


class InstallationTokenAuth(httpx.Auth):
    """httpx auth: ``Authorization: token <installation token>`` from a :class:`TokenSource`."""

    def __init__(self, source: TokenSource) -> None:
        self._source = source

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        # Asked on every request, so a refreshed token is picked up without rebuilding the client.
        request.headers["Authorization"] = f"token {self._source.token().get_secret_value()}"
        yield request


@dataclass(frozen=True, slots=True)
class InstallationAuthStrategy(BaseAuthStrategy):
    """githubkit auth strategy: authenticate as an installation through a :class:`TokenSource`."""

    source: TokenSource

    def get_auth_flow(self, github: GitHubCore[BaseAuthStrategy]) -> httpx.Auth:
        """The httpx auth flow githubkit installs on its client."""
        return InstallationTokenAuth(self.source)


@dataclass(frozen=True, slots=True)
class StaticToken:
    """A :class:`TokenSource` for one fixed token (revocation uses the token being revoked)."""

    value: SecretStr

    def token(self) -> SecretStr:
        """The token."""
        return self.value


@dataclass(frozen=True, slots=True)
class InstallationToken:
    """A minted installation token and what GitHub says it may do."""

    token: SecretStr
    expires_at: float
    """Seconds since the epoch."""
    repositories: tuple[str, ...] = ()
    """Repository names the token is limited to (empty: all of the installation's)."""
    permissions: Mapping[str, str] = field(default_factory=dict)


class TokenMinter(Protocol):
    """Creates and revokes installation tokens (implemented by :class:`bot.github.client.GitHubApp`)."""

    def mint_installation_token(
        self, installation_id: int, *, repositories: Sequence[str], permissions: Permissions
    ) -> InstallationToken:
        """``POST /app/installations/{id}/access_tokens`` narrowed to ``repositories``/``permissions``."""
        ...

    def revoke_installation_token(self, token: SecretStr) -> None:
        """``DELETE /installation/token`` authenticated with ``token`` itself."""
        ...


class InstallationTokenProvider:
    """A cached, refreshed, revocable installation token for one repository.

    ``repository`` is ``owner/name``; the token is minted with ``repositories=[name]`` and exactly
    ``permissions``. Thread-safe. Use as a context manager, or call :meth:`close`, so the token is
    revoked when the job ends.
    """

    def __init__(
        self,
        minter: TokenMinter,
        installation_id: int,
        *,
        repository: str,
        permissions: Permissions = REPAIR_PERMISSIONS,
        clock: Clock = time.time,
        refresh_margin_s: float = DEFAULT_REFRESH_MARGIN_S,
    ) -> None:
        owner, sep, name = repository.partition("/")
        if not sep or not owner or not name or "/" in name:
            raise ValueError(f"repository must be 'owner/name', got {repository!r}")
        self._minter = minter
        self.installation_id = installation_id
        self.repository = repository
        self.permissions: Permissions = MappingProxyType(dict(permissions))
        self._clock = clock
        self._margin = refresh_margin_s
        self._lock = threading.Lock()
        self._current: InstallationToken | None = None
        self._retired: list[InstallationToken] = []
        self._closed = False
        self.minted = 0
        """How many tokens were minted (refreshes included)."""

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("active" if self._current else "idle")
        return (
            f"InstallationTokenProvider(installation_id={self.installation_id}, "
            f"repository={self.repository!r}, {state})"
        )

    def token(self) -> SecretStr:
        """A token valid for at least ``refresh_margin_s`` more seconds (minting one if needed)."""
        with self._lock:
            if self._closed:
                raise GitHubError(f"the installation token for {self.repository} was already revoked")
            current = self._current
            if current is None or self._clock() >= current.expires_at - self._margin:
                fresh = self._minter.mint_installation_token(
                    self.installation_id,
                    repositories=[self.repository.split("/", 1)[1]],
                    permissions=self.permissions,
                )
                self.minted += 1
                log.info(
                    "github.token.minted",
                    installation_id=self.installation_id,
                    repository=self.repository,
                    refresh=current is not None,
                    expires_in_s=round(fresh.expires_at - self._clock()),
                )
                if current is not None:
                    # Not revoked yet: a git push or a download may still be using it.
                    self._retired.append(current)
                self._current = current = fresh
            return current.token

    def expires_at(self) -> float | None:
        """When the current token expires (None before the first one)."""
        current = self._current
        return None if current is None else current.expires_at

    def close(self) -> None:
        """Revoke every token this provider minted that is still valid (idempotent); later
        :meth:`token` calls raise."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            tokens = [*self._retired, *([self._current] if self._current is not None else [])]
            self._current = None
            self._retired = []
        now = self._clock()
        for item in tokens:
            if now < item.expires_at:
                self._revoke_quietly(item.token)

    revoke = close

    def _revoke_quietly(self, token: SecretStr) -> None:
        # Revocation is hygiene; a failure must not mask the job's own outcome. It is logged.
        try:
            self._minter.revoke_installation_token(token)
        except Exception as exc:
            log.warning(
                "github.token.revoke_failed",
                installation_id=self.installation_id,
                repository=self.repository,
                error=exc.__class__.__name__,
            )
        else:
            log.info("github.token.revoked", installation_id=self.installation_id, repository=self.repository)

    def __enter__(self) -> InstallationTokenProvider:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
