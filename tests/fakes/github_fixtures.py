"""pytest fixtures for the GitHub side: a test App key, a fake clock, the strict double, a GitHubApp.

Use them with ``pytest_plugins = ["tests.fakes.github_fixtures"]`` (in the root conftest, or in a
test module that imports nothing from this module; helpers live in :mod:`tests.fakes.github_double`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from pydantic import SecretStr

from bot.github.auth import AppCredentials
from bot.github.client import GitHubApp, RetryPolicy
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble, generate_app_key


@pytest.fixture(scope="session")
def test_app_key() -> AppKey:
    """The test App's key pair (generated once per session)."""
    return generate_app_key()


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock that starts at the real time and advances only when told (or slept on)."""
    return FakeClock()


@pytest.fixture
def fresh_structlog() -> Iterator[None]:
    """structlog's default configuration for the test, the previous one restored afterwards.

    A CLI test that ran ``configure_logging`` with pytest's captured stderr leaves structlog
    printing to a closed file; the GitHub modules log, so their tests start from the defaults.
    """
    saved = structlog.get_config()
    structlog.reset_defaults()
    yield
    structlog.configure(**saved)


@pytest.fixture
def github_double(
    tmp_path: Path, test_app_key: AppKey, fake_clock: FakeClock, fresh_structlog: None
) -> Iterator[GitHubDouble]:
    """A started strict double sharing ``fake_clock``; fails the test on any unexpected request."""
    double = GitHubDouble(
        tmp_path / "github-double",
        app_id=TEST_APP_ID,
        app_public_key_pem=test_app_key.public_pem,
        clock=fake_clock.time,
    )
    with double:
        yield double
    assert double.unexpected == [], "the GitHub double received unexpected requests"


@pytest.fixture
def app_credentials(test_app_key: AppKey) -> AppCredentials:
    """Credentials of the test App."""
    return AppCredentials(app_id=TEST_APP_ID, private_key=SecretStr(test_app_key.private_pem))


@pytest.fixture
def github_app(
    github_double: GitHubDouble, app_credentials: AppCredentials, fake_clock: FakeClock
) -> Iterator[GitHubApp]:
    """A GitHubApp pointed at the double, on the fake clock (retries and gaps never really sleep)."""
    app = GitHubApp(
        app_credentials,
        api_url=github_double.api_url,
        clock=fake_clock.time,
        monotonic=fake_clock.monotonic,
        sleep=fake_clock.sleep,
        policy=RetryPolicy(),
    )
    yield app
    app.close()
