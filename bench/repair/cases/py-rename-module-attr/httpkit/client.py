"""Request options for a tiny HTTP client."""

from dataclasses import dataclass

from httpkit import settings


@dataclass(frozen=True)
class Options:
    timeout: float
    redirects: int
    user_agent: str


def options(timeout: float | None = None, redirects: int | None = None) -> Options:
    return Options(
        timeout=settings.DEFAULT_TIMEOUT if timeout is None else timeout,
        redirects=settings.MAX_REDIRECTS if redirects is None else redirects,
        user_agent=settings.USER_AGENT,
    )
