"""githubkit, configured for ARCS: base URL from settings, polite to GitHub's rate limits.

:class:`GitHubApp` builds every client. Each one sends its requests through a
:class:`RateLimitedTransport`, which

- serializes mutating requests (POST/PATCH/PUT/DELETE) per installation, with a minimum gap
  between them (GitHub's secondary-limit guidance: no concurrent mutations, about a second apart);
- retries 429s and rate-limit 403s, honouring ``retry-after`` and ``x-ratelimit-reset`` and backing
  off exponentially for secondary limits that give neither; a plain permission 403 is not retried;
- retries 5xx answers to idempotent reads with a short backoff.

``sleep`` and the clocks are injected, so tests of all this are instant. githubkit's own
``auto_retry`` is off (it would sleep on the real clock) and so is its HTTP cache (ARCS needs
fresh answers: "is there already a PR for this branch?").

Proxies from the environment are not honoured (``trust_env=False``): an environment proxy would
route requests around this transport, and library code reads no environment.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import httpx
import structlog
from githubkit import GitHub
from githubkit.auth.base import BaseAuthStrategy
from githubkit.exception import RateLimitExceeded, RequestError, RequestFailed, RequestTimeout
from pydantic import SecretStr

from bot.github import GitHubError
from bot.github.auth import (
    DEFAULT_REFRESH_MARGIN_S,
    REPAIR_PERMISSIONS,
    AppCredentials,
    AppJWTAuthStrategy,
    Clock,
    InstallationAuthStrategy,
    InstallationToken,
    InstallationTokenAuth,
    InstallationTokenProvider,
    Permissions,
    StaticToken,
)
from bot.settings import Settings

log = structlog.get_logger(__name__)

MUTATING_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD"})
API_VERSION = "2022-11-28"
"""The REST API version ARCS speaks. githubkit stamps its bundled schema's (newer) version on typed
calls; the transport pins this one instead, which github.com and GitHub Enterprise Server 3.9+ both
accept. ARCS reads answers as plain JSON, so the schema version changes nothing else."""
USER_AGENT = "arcs-bot"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How patient ARCS is with GitHub."""

    max_retries: int = 4
    min_mutation_gap_s: float = 1.0
    """Minimum time between two mutating requests of one installation."""
    secondary_backoff_s: float = 60.0
    """First wait for a secondary limit that names no time (GitHub: at least a minute), doubling."""
    server_error_backoff_s: float = 2.0
    """First wait after a 5xx on a read, doubling."""
    max_wait_s: float = 900.0
    """A limit that asks for longer than this is reported rather than waited out."""


class MutationGate:
    """One installation's mutation lane: a lock and the time of its last mutation."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: float | None = None


class MutationGates:
    """The lanes, by key (``installation:<id>`` or ``app``); share one per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[str, MutationGate] = {}

    def gate(self, key: str) -> MutationGate:
        """The lane for ``key`` (created on first use)."""
        with self._lock:
            return self._gates.setdefault(key, MutationGate())


def _int_header(headers: httpx.Headers, name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


class RateLimitedTransport(httpx.BaseTransport):
    """Wraps a transport: per-installation mutation serialization and rate-limit retries."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        *,
        gate: MutationGate,
        policy: RetryPolicy,
        monotonic: Clock,
        clock: Clock,
        sleep: Callable[[float], None],
        api_version: str | None = API_VERSION,
    ) -> None:
        self._inner = inner
        self._api_version = api_version
        self._gate = gate
        self._policy = policy
        self._monotonic = monotonic
        self._clock = clock
        self._sleep = sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``, waiting for the mutation lane and retrying on rate limits."""
        if self._api_version and "x-github-api-version" in request.headers:
            request.headers["X-GitHub-Api-Version"] = self._api_version
        if request.method in MUTATING_METHODS:
            with self._gate.lock:
                return self._send(request, mutating=True)
        return self._send(request, mutating=False)

    def _send(self, request: httpx.Request, *, mutating: bool) -> httpx.Response:
        attempt = 0
        while True:
            if mutating and self._gate.last is not None:
                wait = self._gate.last + self._policy.min_mutation_gap_s - self._monotonic()
                if wait > 0:
                    self._sleep(wait)
            try:
                response = self._inner.handle_request(request)
            finally:
                if mutating:
                    self._gate.last = self._monotonic()
            wait_s, why = self._retry_after(request, response, attempt)
            if wait_s is None:
                return response
            response.read()
            response.close()
            log.warning(
                "github.retry",
                method=request.method,
                path=request.url.path,
                status=response.status_code,
                reason=why,
                wait_s=round(wait_s, 3),
                attempt=attempt + 1,
            )
            self._sleep(wait_s)
            attempt += 1

    def _retry_after(
        self, request: httpx.Request, response: httpx.Response, attempt: int
    ) -> tuple[float | None, str]:
        policy = self._policy
        if attempt >= policy.max_retries:
            return None, ""
        status = response.status_code
        if status in (403, 429):
            headers = response.headers
            retry_after = _int_header(headers, "retry-after")
            remaining = headers.get("x-ratelimit-remaining")
            reset = _int_header(headers, "x-ratelimit-reset")
            if retry_after is not None:
                wait, why = float(max(retry_after, 0)), "retry-after"
            elif remaining == "0" and reset is not None:
                wait, why = max(0.0, reset - self._clock()) + 1.0, "x-ratelimit-reset"
            elif status == 429 or self._mentions_rate_limit(response):
                wait, why = policy.secondary_backoff_s * (2**attempt), "secondary-limit backoff"
            else:
                return None, ""  # a permission 403: retrying would not help
            return (wait, why) if wait <= policy.max_wait_s else (None, "")
        if status in (500, 502, 503, 504) and request.method in IDEMPOTENT_METHODS:
            return policy.server_error_backoff_s * (2**attempt), f"server error {status}"
        return None, ""

    @staticmethod
    def _mentions_rate_limit(response: httpx.Response) -> bool:
        try:
            text = response.read().decode("utf-8", "replace").lower()
        except httpx.HTTPError:
            return False
        return "rate limit" in text

    def close(self) -> None:
        """No-op: the inner transport is shared and closed by its :class:`GitHubApp`."""


@contextlib.contextmanager
def github_errors(what: str) -> Iterator[None]:
    """Turn githubkit's exceptions into one-line :class:`GitHubError` s that say what failed."""
    try:
        yield
    except RateLimitExceeded as exc:
        raise GitHubError(
            f"{what}: GitHub's rate limit is still exceeded after retrying", status=exc.response.status_code
        ) from exc
    except RequestFailed as exc:
        status = exc.response.status_code
        raise GitHubError(
            f"{what}: GitHub answered {status}: {error_message(exc.response.raw_response)}", status=status
        ) from exc
    except RequestTimeout as exc:
        raise GitHubError(f"{what}: GitHub did not answer in time") from exc
    except RequestError as exc:
        raise GitHubError(f"{what}: cannot reach GitHub ({exc.exc.__class__.__name__})") from exc


def error_message(response: httpx.Response) -> str:
    """GitHub's ``message`` (and validation errors) from an error response, one line."""
    try:
        data = response.json()
    except ValueError:
        return response.reason_phrase or "error"
    if not isinstance(data, dict):
        return response.reason_phrase or "error"
    parts = [str(data.get("message") or response.reason_phrase or "error")]
    for item in data.get("errors") or []:
        if isinstance(item, dict):
            detail = item.get("message") or " ".join(str(item.get(k, "")) for k in ("field", "code")).strip()
            if detail:
                parts.append(str(detail))
        elif isinstance(item, str):
            parts.append(item)
    return " ".join("; ".join(parts).split())


def _parse_github_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True, slots=True)
class Download:
    """A capped download."""

    content: bytes
    truncated: bool
    """True when the body was longer than the cap (``content`` holds the kept part)."""
    size: int
    """Bytes received in all."""


class InstallationClient:
    """An installation-scoped client for one repository: githubkit's ``rest`` plus capped downloads.

    Owns its :class:`InstallationTokenProvider`; :meth:`close` revokes the token.
    """

    def __init__(
        self,
        app: GitHubApp,
        tokens: InstallationTokenProvider,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.owner, self.repo = tokens.repository.split("/", 1)
        self.gh: GitHub[InstallationAuthStrategy] = app.github_for(
            InstallationAuthStrategy(tokens), gate_key=f"installation:{tokens.installation_id}"
        )

    def __repr__(self) -> str:
        return f"InstallationClient({self.tokens!r})"

    @property
    def full_name(self) -> str:
        """``owner/name`` of the repository this client is narrowed to."""
        return self.tokens.repository

    def download(
        self, url: str, *, max_bytes: int, keep: Literal["head", "tail"] = "tail", accept: str = "*/*"
    ) -> Download:
        """GET ``url`` (API-relative path or absolute URL), following redirects, keeping at most
        ``max_bytes`` (the end of the body by default: a log's failure is at its end)."""
        transport = self.app.transport_for(f"installation:{self.tokens.installation_id}")
        client = httpx.Client(
            base_url=self.app.base_url,
            auth=InstallationTokenAuth(self.tokens),
            transport=transport,
            follow_redirects=True,
            trust_env=False,
            timeout=self.app.timeout_s,
            headers={"User-Agent": USER_AGENT, "X-GitHub-Api-Version": API_VERSION, "Accept": accept},
        )
        kept = bytearray()
        size = 0
        truncated = False
        target = url if "://" in url else url.lstrip("/")
        with client:
            try:
                with client.stream("GET", target) as response:
                    if response.is_error:
                        response.read()
                        raise GitHubError(
                            f"download {url}: GitHub answered {response.status_code}: {error_message(response)}",
                            status=response.status_code,
                        )
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if keep == "head":
                            room = max_bytes - len(kept)
                            if room > 0:
                                kept.extend(chunk[:room])
                            if len(chunk) > room:
                                truncated = True
                                break
                        else:
                            kept.extend(chunk)
                            if len(kept) > max_bytes:
                                truncated = True
                                del kept[: len(kept) - max_bytes]
            except httpx.TimeoutException as exc:
                raise GitHubError(f"download {url}: GitHub did not answer in time") from exc
            except httpx.HTTPError as exc:
                raise GitHubError(f"download {url}: {exc.__class__.__name__}") from exc
        return Download(content=bytes(kept), truncated=truncated, size=size)

    def close(self) -> None:
        """Revoke the installation token."""
        self.tokens.close()

    def __enter__(self) -> InstallationClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class GitHubApp:
    """The App's entry point: builds JWT- and installation-authenticated githubkit clients.

    One per process (share it: the mutation lanes live here). ``api_url`` is
    ``https://api.github.com`` or, for GitHub Enterprise Server, ``https://HOST/api/v3``.
    """

    def __init__(
        self,
        credentials: AppCredentials,
        *,
        api_url: str = "https://api.github.com",
        transport: httpx.BaseTransport | None = None,
        clock: Clock = time.time,
        monotonic: Clock = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        policy: RetryPolicy | None = None,
        gates: MutationGates | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.credentials = credentials
        self.base_url = api_url.rstrip("/") + "/"
        self._inner = transport if transport is not None else httpx.HTTPTransport(retries=1)
        self._owns_inner = transport is None
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep
        self.policy = policy or RetryPolicy()
        self.gates = gates or MutationGates()
        self.timeout_s = timeout_s

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> GitHubApp:
        """From ``ARCS_APP_ID``, ``ARCS_PRIVATE_KEY``/``_PATH`` and ``ARCS_GITHUB_API_URL``."""
        return cls(AppCredentials.from_settings(settings), api_url=settings.github_api_url, **kwargs)

    def __repr__(self) -> str:
        return f"GitHubApp(app_id={self.credentials.app_id!r}, api_url={self.base_url!r})"

    # --- construction ---------------------------------------------------------------------------

    def transport_for(self, gate_key: str) -> RateLimitedTransport:
        """A rate-limited transport in the mutation lane ``gate_key``."""
        return RateLimitedTransport(
            self._inner,
            gate=self.gates.gate(gate_key),
            policy=self.policy,
            monotonic=self.monotonic,
            clock=self.clock,
            sleep=self.sleep,
        )

    def github_for(self, auth: BaseAuthStrategy, *, gate_key: str) -> GitHub[Any]:
        """A githubkit client with ``auth`` whose requests go through the lane ``gate_key``."""
        return GitHub(
            auth,
            base_url=self.base_url,
            user_agent=USER_AGENT,
            transport=self.transport_for(gate_key),
            http_cache=False,
            auto_retry=False,
            trust_env=False,
            timeout=self.timeout_s,
        )

    def app_client(self) -> GitHub[Any]:
        """Authenticated as the App (JWT): installation lookups and token minting only."""
        return self.github_for(AppJWTAuthStrategy(self.credentials, self.clock), gate_key="app")

    # --- installation tokens (TokenMinter) ---------------------------------------------------------

    def mint_installation_token(
        self, installation_id: int, *, repositories: Sequence[str], permissions: Permissions
    ) -> InstallationToken:
        """``POST /app/installations/{id}/access_tokens`` with the narrowing in the body."""
        gh = self.app_client()
        body: Any = {"repositories": list(repositories), "permissions": dict(permissions)}
        with github_errors(f"create an installation token for installation {installation_id}"):
            response = gh.rest.apps.create_installation_access_token(installation_id, data=body)
        data = response.json()
        try:
            token = SecretStr(str(data["token"]))
            expires_at = _parse_github_time(str(data["expires_at"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise GitHubError(
                f"create an installation token for installation {installation_id}: unexpected answer"
            ) from exc
        granted = data.get("permissions") or {}
        repos = tuple(str(r.get("name", "")) for r in data.get("repositories") or [] if isinstance(r, dict))
        missing = sorted(
            name
            for name, level in permissions.items()
            if granted.get(name) not in (("write",) if level == "write" else ("read", "write"))
        )
        if missing:
            # GitHub silently drops permissions the installation lacks; a job without them would fail
            # later and less clearly.
            self.revoke_installation_token(token)
            raise GitHubError(
                f"installation {installation_id} has not granted ARCS: {', '.join(missing)} "
                "(accept the App's updated permissions in the installation settings)"
            )
        return InstallationToken(
            token=token,
            expires_at=expires_at,
            repositories=repos,
            permissions={str(k): str(v) for k, v in granted.items()},
        )

    def revoke_installation_token(self, token: SecretStr) -> None:
        """``DELETE /installation/token`` authenticated with the token itself."""
        gh = self.github_for(InstallationAuthStrategy(StaticToken(token)), gate_key="revoke")
        with github_errors("revoke the installation token"):
            gh.rest.apps.revoke_installation_access_token()

    def repo_installation_id(self, owner: str, repo: str) -> int:
        """``GET /repos/{owner}/{repo}/installation``: the installation that covers the repository."""
        gh = self.app_client()
        with github_errors(f"find the App's installation on {owner}/{repo}"):
            response = gh.rest.apps.get_repo_installation(owner, repo)
        return int(response.json()["id"])

    def installation_tokens(
        self,
        installation_id: int,
        *,
        repository: str,
        permissions: Permissions = REPAIR_PERMISSIONS,
        refresh_margin_s: float = DEFAULT_REFRESH_MARGIN_S,
    ) -> InstallationTokenProvider:
        """A token provider narrowed to ``repository`` (``owner/name``) and ``permissions``."""
        return InstallationTokenProvider(
            self,
            installation_id,
            repository=repository,
            permissions=permissions,
            clock=self.clock,
            refresh_margin_s=refresh_margin_s,
        )

    def installation(
        self,
        installation_id: int,
        *,
        repository: str,
        permissions: Permissions = REPAIR_PERMISSIONS,
        refresh_margin_s: float = DEFAULT_REFRESH_MARGIN_S,
    ) -> InstallationClient:
        """An :class:`InstallationClient` for one repository (close it to revoke its token)."""
        tokens = self.installation_tokens(
            installation_id, repository=repository, permissions=permissions, refresh_margin_s=refresh_margin_s
        )
        return InstallationClient(self, tokens)

    def close(self) -> None:
        """Close the connection pool (when this app created it)."""
        if self._owns_inner:
            self._inner.close()
