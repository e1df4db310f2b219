"""The client: GHES base URL, rate-limit retries on the injected clock, serialized mutations."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from bot.github import GitHubError
from bot.github.client import GitHubApp, InstallationClient, RetryPolicy
from bot.github.publish import create_comment
from bot.settings import load_settings
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble

SECONDARY = {
    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
}


@pytest.fixture
def repo(github_double: GitHubDouble) -> int:
    inst = github_double.add_installation("acme")
    github_double.add_repo("acme/widgets", {"a.py": "x = 1\n"}, installation=inst)
    github_double.add_issue("acme/widgets", "bug")
    return inst.id


@pytest.fixture
def client(github_app: GitHubApp, repo: int) -> Iterator[InstallationClient]:
    with github_app.installation(repo, repository="acme/widgets") as c:
        yield c


def _comment_posts(double: GitHubDouble) -> list[int]:
    return [r.status for r in double.requests_matching("POST", r"/issues/1/comments$")]


def test_from_settings_uses_the_enterprise_api_url(tmp_path: object, test_app_key: AppKey) -> None:
    settings = load_settings(
        {
            "ARCS_APP_ID": TEST_APP_ID,
            "ARCS_PRIVATE_KEY": test_app_key.private_pem,
            "ARCS_GITHUB_API_URL": "https://ghe.example.com/api/v3",
        }
    )
    app = GitHubApp.from_settings(settings)
    assert app.base_url == "https://ghe.example.com/api/v3/"
    assert str(app.app_client().config.base_url) == "https://ghe.example.com/api/v3/"
    app.close()


def test_requests_pin_the_rest_api_version(client: InstallationClient, github_double: GitHubDouble) -> None:
    client.gh.rest.repos.get("acme", "widgets")
    create_comment(client, 1, "hello")
    versions = {r.api_version for r in github_double.requests if r.path.startswith(("/repos", "/app"))}
    assert versions == {"2022-11-28"}


def test_429_retry_after_is_honoured(
    client: InstallationClient, github_double: GitHubDouble, fake_clock: FakeClock
) -> None:
    github_double.fail_next("POST", r"/issues/1/comments$", 429, headers={"retry-after": "7"}, body=SECONDARY)
    create_comment(client, 1, "hello")
    assert _comment_posts(github_double) == [429, 201]
    assert 7.0 in fake_clock.sleeps
    assert len(github_double.comments_on("acme/widgets", 1)) == 1


def test_secondary_limit_403_without_retry_after_backs_off_exponentially(
    client: InstallationClient, github_double: GitHubDouble, fake_clock: FakeClock
) -> None:
    github_double.fail_next("POST", r"/issues/1/comments$", 403, body=SECONDARY, times=2)
    create_comment(client, 1, "hello")
    assert _comment_posts(github_double) == [403, 403, 201]
    backoffs = [s for s in fake_clock.sleeps if s >= 60]
    assert backoffs == [60.0, 120.0]


def test_primary_limit_waits_until_the_reset(
    client: InstallationClient, github_double: GitHubDouble, fake_clock: FakeClock
) -> None:
    reset = int(fake_clock.time()) + 42
    github_double.fail_next(
        "GET",
        r"^/repos/acme/widgets$",
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        body={"message": "API rate limit exceeded"},
    )
    assert client.gh.rest.repos.get("acme", "widgets").json()["name"] == "widgets"
    [wait] = fake_clock.sleeps
    assert 42 <= wait <= 44


def test_a_permission_403_is_not_retried(client: InstallationClient, github_double: GitHubDouble) -> None:
    github_double.fail_next(
        "POST", r"/issues/1/comments$", 403, body={"message": "Resource not accessible by integration"}
    )
    with pytest.raises(GitHubError, match="403: Resource not accessible by integration"):
        create_comment(client, 1, "hello")
    assert _comment_posts(github_double) == [403]


def test_gives_up_after_max_retries_and_on_waits_too_long(
    github_double: GitHubDouble, repo: int, app_credentials: object, fake_clock: FakeClock
) -> None:
    app = GitHubApp(
        app_credentials,  # type: ignore[arg-type]
        api_url=github_double.api_url,
        clock=fake_clock.time,
        monotonic=fake_clock.monotonic,
        sleep=fake_clock.sleep,
        policy=RetryPolicy(max_retries=2, max_wait_s=300),
    )
    with app.installation(repo, repository="acme/widgets") as client:
        github_double.fail_next("POST", r"/issues/1/comments$", 429, headers={"retry-after": "1"}, times=5)
        with pytest.raises(GitHubError, match="rate limit"):
            create_comment(client, 1, "a")
        assert _comment_posts(github_double) == [429, 429, 429]
        github_double.fail_next("POST", r"/issues/1/comments$", 429, headers={"retry-after": "3600"}, times=1)
        with pytest.raises(GitHubError, match="rate limit"):
            create_comment(client, 1, "b")
        assert 3600 not in fake_clock.sleeps
        assert _comment_posts(github_double)[-1] == 429  # answered once, not waited out
    app.close()


def test_server_errors_are_retried_for_reads_only(
    client: InstallationClient, github_double: GitHubDouble, fake_clock: FakeClock
) -> None:
    github_double.fail_next("GET", r"^/repos/acme/widgets$", 502, body={"message": "bad gateway"})
    assert client.gh.rest.repos.get("acme", "widgets").json()["name"] == "widgets"
    assert fake_clock.sleeps == [2.0]
    github_double.fail_next("POST", r"/issues/1/comments$", 502, body={"message": "bad gateway"})
    with pytest.raises(GitHubError, match="502"):
        create_comment(client, 1, "maybe posted already: do not repeat")
    assert _comment_posts(github_double) == [502]


def test_mutations_keep_a_minimum_gap_per_installation(
    github_app: GitHubApp, github_double: GitHubDouble, repo: int, fake_clock: FakeClock
) -> None:
    other = github_double.add_installation("zeta")
    github_double.add_repo("zeta/tools", {"t.py": ""}, installation=other)
    github_double.add_issue("zeta/tools", "t")
    with (
        github_app.installation(repo, repository="acme/widgets") as first,
        github_app.installation(other.id, repository="zeta/tools") as second,
    ):
        first.tokens.token()
        second.tokens.token()
        fake_clock.sleeps.clear()
        create_comment(first, 1, "one")
        create_comment(second, 1, "other installation: its own lane")
        assert fake_clock.sleeps == []
        fake_clock.advance(0.25)
        first.gh.rest.repos.get("acme", "widgets")  # reads never wait
        create_comment(first, 1, "two")
        assert fake_clock.sleeps == [pytest.approx(0.75)]
        fake_clock.advance(5)
        create_comment(first, 1, "three")
        assert fake_clock.sleeps == [pytest.approx(0.75)]


class _Tracking(httpx.BaseTransport):
    """Counts concurrent mutations reaching the network (and holds each a little while)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        mutating = request.method != "GET" and "/access_tokens" not in request.url.path
        if mutating:
            with self.lock:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
            time.sleep(0.02)
        try:
            response = self.inner.handle_request(request)
            response.read()
            return response
        finally:
            if mutating:
                with self.lock:
                    self.in_flight -= 1

    def close(self) -> None:
        self.inner.close()


def test_concurrent_mutations_of_one_installation_are_serialized(
    github_double: GitHubDouble, repo: int, app_credentials: object, fake_clock: FakeClock
) -> None:
    tracking = _Tracking()
    app = GitHubApp(
        app_credentials,  # type: ignore[arg-type]
        api_url=github_double.api_url,
        transport=tracking,
        clock=fake_clock.time,
        monotonic=fake_clock.monotonic,
        sleep=fake_clock.sleep,
    )
    with app.installation(repo, repository="acme/widgets") as client:
        client.tokens.token()
        errors: list[BaseException] = []

        def post(i: int) -> None:
            try:
                for j in range(3):
                    create_comment(client, 1, f"{i}-{j}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=post, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    assert tracking.peak == 1
    assert len(github_double.comments_on("acme/widgets", 1)) == 12
    # Eleven of the twelve waited for the gap (the fake clock never moves by itself).
    assert len([s for s in fake_clock.sleeps if s == pytest.approx(1.0)]) == 11
    tracking.close()
