"""A repository client on the token the workflow gave ``arcs action`` (``github-token``).

The Action's token is an installation token already (the ``GITHUB_TOKEN`` of the job, or an App's
or a person's token the workflow passes). It goes through ARCS' own client, so the publishing code
of the App (:mod:`bot.github.publish`: branch push through git with the token only in the git
process's environment, one pull request per branch, comments found by marker) and its transport
(serialized mutations, rate-limit retries) apply unchanged.

:class:`GivenToken` is the :class:`bot.github.auth.TokenMinter` of that client: it hands out the
given token and never revokes it (revoking the job's ``GITHUB_TOKEN`` would break the workflow's
later steps). The :class:`bot.github.client.GitHubApp` underneath carries no App credentials: only
its transport is used (nothing here authenticates as an App).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import httpx
from pydantic import SecretStr

from bot.github.auth import AppCredentials, InstallationToken, InstallationTokenProvider, Permissions
from bot.github.client import GitHubApp, InstallationClient, RetryPolicy

TOKEN_LIFETIME_S = 24 * 3600.0
"""A job's ``GITHUB_TOKEN`` expires when the job ends (at most 24 hours)."""
NO_APP = AppCredentials(app_id="", private_key=SecretStr(""))
"""The Action authenticates with a given token only; App (JWT) calls are never made."""


class GivenToken:
    """A :class:`bot.github.auth.TokenMinter` that returns the workflow's token and revokes nothing."""

    def __init__(self, token: SecretStr, *, clock: Callable[[], float] = time.time) -> None:
        self._token = token
        self._clock = clock

    def __repr__(self) -> str:
        return "GivenToken(***)"

    def mint_installation_token(
        self, installation_id: int, *, repositories: Sequence[str], permissions: Permissions
    ) -> InstallationToken:
        """The given token (GitHub decides what it may do; a missing permission answers 403)."""
        return InstallationToken(
            token=self._token,
            expires_at=self._clock() + TOKEN_LIFETIME_S,
            repositories=tuple(repositories),
            permissions={},
        )

    def revoke_installation_token(self, token: SecretStr) -> None:
        """Nothing: the workflow owns its token."""


def token_client(
    token: SecretStr,
    repository: str,
    *,
    api_url: str,
    transport: httpx.BaseTransport | None = None,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    policy: RetryPolicy | None = None,
) -> InstallationClient:
    """An :class:`InstallationClient` for ``repository`` authenticated with ``token``.

    ``api_url`` is ``GITHUB_API_URL`` (``https://HOST/api/v3`` on GitHub Enterprise Server).
    Close it when done (that closes the connection pool; the token is not revoked).
    """
    app = GitHubApp(
        NO_APP,
        api_url=api_url,
        transport=transport,
        clock=clock,
        monotonic=monotonic,
        sleep=sleep,
        policy=policy,
    )
    tokens = InstallationTokenProvider(
        GivenToken(token, clock=clock), 0, repository=repository, permissions={}, clock=clock
    )
    return _ClosingClient(app, tokens)


class _ClosingClient(InstallationClient):
    """Closes its own :class:`GitHubApp` (connection pool) with the client."""

    def close(self) -> None:
        """Forget the token (never revoked: see :class:`GivenToken`) and close the pool."""
        try:
            super().close()
        finally:
            self.app.close()


__all__ = ["NO_APP", "GivenToken", "token_client"]
