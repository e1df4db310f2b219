"""The GitHub side of ARCS: App authentication, a rate-limit-aware client, git over HTTPS, pure
payload builders, the thin publishing layer, Actions log download and ``.arcs.yml``.

Nothing here runs at import time; settings and clocks are injected.
"""

from __future__ import annotations

from bot.errors import ArcsError


class GitHubError(ArcsError):
    """A GitHub call or a git operation against GitHub did not succeed (one clear line, no secret)."""

    exit_code = 1

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status when the error came from a response."""


class RefusedPush(GitHubError):
    """ARCS refused to push: not an ``arcs/`` branch, or a branch someone else owns."""
