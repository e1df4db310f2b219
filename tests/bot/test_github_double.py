"""The strict GitHub double itself: it must reject what GitHub rejects and flag what ARCS should
never send, or the tests built on it prove nothing."""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from bot.github.auth import AppCredentials, create_app_jwt
from tests.fakes.github_double import TEST_APP_ID, FakeClock, GitHubDouble, generate_app_key


@pytest.fixture
def setup(github_double: GitHubDouble) -> tuple[GitHubDouble, int]:
    inst = github_double.add_installation("acme")
    github_double.add_repo("acme/widgets", {"a.py": "x = 1\n"}, installation=inst)
    github_double.add_repo("acme/gadgets", {"b.py": "y = 1\n"}, installation=inst)
    github_double.add_issue("acme/widgets", "bug", "it breaks")
    return github_double, inst.id


_HTTP = httpx.Client(trust_env=False, verify=False)
"""One client for the module: building an httpx client with certificate loading costs ~0.2 s."""


@pytest.fixture(scope="module", autouse=True)
def _close_http() -> Iterator[None]:
    yield
    _HTTP.close()


def _api(
    double: GitHubDouble, method: str, path: str, token: str | None = None, **kw: object
) -> httpx.Response:
    headers = {"Authorization": f"token {token}"} if token else {}
    return _HTTP.request(method, double.api_url + path, headers=headers, **kw)  # type: ignore[arg-type]


def test_unimplemented_route_is_404_and_recorded(setup: tuple[GitHubDouble, int]) -> None:
    double, iid = setup
    token = double.issue_token(double.installations[iid])
    response = _api(double, "GET", "/repos/acme/widgets/branches", token)
    assert response.status_code == 404
    assert len(double.unexpected) == 1 and "/repos/acme/widgets/branches" in double.unexpected[0]
    double.unexpected.clear()


def test_wrong_method_and_unknown_query_are_unexpected(setup: tuple[GitHubDouble, int]) -> None:
    double, iid = setup
    token = double.issue_token(double.installations[iid])
    assert _api(double, "DELETE", "/repos/acme/widgets/pulls", token).status_code == 405
    assert _api(double, "GET", "/repos/acme/widgets/pulls?sort=created", token).status_code == 422
    assert len(double.unexpected) == 2
    double.unexpected.clear()


def test_unknown_body_field_is_422_and_unexpected(setup: tuple[GitHubDouble, int]) -> None:
    double, iid = setup
    token = double.issue_token(double.installations[iid])
    response = _api(
        double, "POST", "/repos/acme/widgets/issues/1/comments", token, json={"body": "x", "bogus": 1}
    )
    assert response.status_code == 422
    assert double.unexpected and "bogus" in double.unexpected[0]
    assert double.mutations == []
    double.unexpected.clear()


def test_requests_outside_the_api_prefix_are_unexpected(setup: tuple[GitHubDouble, int]) -> None:
    double, _ = setup
    assert _HTTP.get(double.base_url + "/repos/acme/widgets").status_code == 404
    assert double.unexpected
    double.unexpected.clear()


def test_app_routes_verify_the_jwt(
    setup: tuple[GitHubDouble, int], app_credentials: AppCredentials, fake_clock: FakeClock
) -> None:
    double, iid = setup
    good = create_app_jwt(app_credentials, now=fake_clock.time())
    ok = _HTTP.post(
        f"{double.api_url}/app/installations/{iid}/access_tokens",
        headers={"Authorization": f"Bearer {good}"},
        json={"repositories": ["widgets"], "permissions": {"contents": "read"}},
    )
    assert ok.status_code == 201
    assert ok.json()["permissions"] == {"contents": "read"}
    assert [r["full_name"] for r in ok.json()["repositories"]] == ["acme/widgets"]

    other_key = generate_app_key()
    forged = create_app_jwt(
        AppCredentials(TEST_APP_ID, SecretStr(other_key.private_pem)), now=fake_clock.time()
    )
    expired = create_app_jwt(app_credentials, now=fake_clock.time() - 3600)
    wrong_app = create_app_jwt(AppCredentials("999", app_credentials.private_key), now=fake_clock.time())
    for bad in (forged, expired, wrong_app, "not-a-jwt"):
        response = _HTTP.get(f"{double.api_url}/app", headers={"Authorization": f"Bearer {bad}"})
        assert response.status_code == 401, bad
    # An installation token is not an App JWT.
    token = ok.json()["token"]
    assert _HTTP.get(f"{double.api_url}/app", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_token_minting_honours_the_installation(
    setup: tuple[GitHubDouble, int], app_credentials: AppCredentials, fake_clock: FakeClock
) -> None:
    double, iid = setup
    double.add_repo("other/elsewhere", {"c": "c"})
    jwt = create_app_jwt(app_credentials, now=fake_clock.time())
    url = f"{double.api_url}/app/installations/{iid}/access_tokens"
    headers = {"Authorization": f"Bearer {jwt}"}
    assert _HTTP.post(url, headers=headers, json={"repositories": ["elsewhere"]}).status_code == 422
    double.installations[iid].permissions.pop("checks")
    assert _HTTP.post(url, headers=headers, json={"permissions": {"checks": "write"}}).status_code == 422
    assert _HTTP.post(url, headers=headers, json={"permissions": {"actions": "write"}}).status_code == 422


def test_token_checks_on_every_call(setup: tuple[GitHubDouble, int], fake_clock: FakeClock) -> None:
    double, iid = setup
    inst = double.installations[iid]
    narrow = double.issue_token(inst, repositories=["acme/widgets"], permissions={"metadata": "read"})
    assert _api(double, "GET", "/repos/acme/widgets", narrow).status_code == 200
    # Another repository of the same installation is invisible to a narrowed token.
    assert _api(double, "GET", "/repos/acme/gadgets", narrow).status_code == 404
    # A permission it was not given.
    assert _api(double, "GET", "/repos/acme/widgets/contents/a.py", narrow).status_code == 403
    assert _api(double, "GET", "/repos/acme/widgets", "ghs_unknown").status_code == 401
    assert _api(double, "GET", "/repos/acme/widgets").status_code == 401
    fake_clock.advance(3601)
    assert _api(double, "GET", "/repos/acme/widgets", narrow).status_code == 401
    fresh = double.issue_token(inst)
    assert _api(double, "DELETE", "/installation/token", fresh).status_code == 204
    assert _api(double, "GET", "/repos/acme/widgets", fresh).status_code == 401
    assert double.unexpected == []
    assert len(double.auth_failures) == 6


def test_mutations_are_recorded_with_their_token(setup: tuple[GitHubDouble, int]) -> None:
    double, iid = setup
    token = double.issue_token(double.installations[iid])
    response = _api(double, "POST", "/repos/acme/widgets/issues/1/comments", token, json={"body": "hello"})
    assert response.status_code == 201
    assert response.json()["user"]["login"] == "arcs[bot]"
    [mutation] = double.mutations
    assert (mutation.method, mutation.path, mutation.body, mutation.token) == (
        "POST",
        "/repos/acme/widgets/issues/1/comments",
        {"body": "hello"},
        token,
    )


def test_pagination_sends_a_link_header(setup: tuple[GitHubDouble, int]) -> None:
    double, iid = setup
    for i in range(5):
        double.add_comment("acme/widgets", 1, f"c{i}")
    token = double.issue_token(double.installations[iid])
    first = _api(double, "GET", "/repos/acme/widgets/issues/1/comments?per_page=2", token)
    assert [c["body"] for c in first.json()] == ["c0", "c1"]
    assert 'rel="next"' in first.headers["link"]
    last = _api(double, "GET", "/repos/acme/widgets/issues/1/comments?per_page=2&page=3", token)
    assert [c["body"] for c in last.json()] == ["c4"]
    assert "link" not in last.headers


def test_job_logs_redirect_to_a_signed_blob(setup: tuple[GitHubDouble, int]) -> None:
    double, iid = setup
    sha = double.branch_sha("acme/widgets", "main")
    assert sha is not None
    run = double.add_workflow_run(
        "acme/widgets", head_sha=sha, head_branch="main", jobs=[("test", "failure", "boom\n")]
    )
    token = double.issue_token(double.installations[iid])
    response = _api(double, "GET", f"/repos/acme/widgets/actions/jobs/{run.jobs[0].id}/logs", token)
    assert response.status_code == 302
    assert _HTTP.get(response.headers["location"]).text == "boom\n"
    tampered = response.headers["location"].replace("sig=", "sig=0")
    assert _HTTP.get(tampered).status_code == 403
    assert double.unexpected
    double.unexpected.clear()


def test_check_run_validation(setup: tuple[GitHubDouble, int]) -> None:
    double, iid = setup
    token = double.issue_token(double.installations[iid])
    sha = double.branch_sha("acme/widgets", "main")
    ok = _api(double, "POST", "/repos/acme/widgets/check-runs", token, json={"name": "ARCS", "head_sha": sha})
    assert ok.status_code == 201
    too_long = {"name": "ARCS", "head_sha": sha, "output": {"title": "t", "summary": "x" * 70000}}
    assert _api(double, "POST", "/repos/acme/widgets/check-runs", token, json=too_long).status_code == 422
    no_conclusion = {"status": "completed"}
    path = f"/repos/acme/widgets/check-runs/{ok.json()['id']}"
    assert _api(double, "PATCH", path, token, json=no_conclusion).status_code == 422
    missing = {"name": "ARCS", "head_sha": "0" * 40}
    assert _api(double, "POST", "/repos/acme/widgets/check-runs", token, json=missing).status_code == 422
    assert len(double.unexpected) == 2
    double.unexpected.clear()


def _git(cwd: Path, *args: str, header: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    if header:
        env.update(
            {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader", "GIT_CONFIG_VALUE_0": header}
        )
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def _basic(token: str) -> str:
    return "Authorization: Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def test_git_smart_http_requires_a_token_with_contents_access(
    setup: tuple[GitHubDouble, int], tmp_path: Path
) -> None:
    double, iid = setup
    inst = double.installations[iid]
    url = double.clone_url("acme/widgets")
    assert _git(tmp_path, "clone", "-q", url, "anon").returncode != 0
    reader = double.issue_token(inst, permissions={"contents": "read", "metadata": "read"})
    done = _git(tmp_path, "clone", "-q", url, "clone", header=_basic(reader))
    assert done.returncode == 0, done.stderr
    clone = tmp_path / "clone"
    assert (clone / "a.py").read_text() == "x = 1\n"
    _git(clone, "checkout", "-q", "-b", "arcs/x")
    (clone / "a.py").write_text("x = 2\n")
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "change")
    denied = _git(clone, "push", "-q", "origin", "arcs/x", header=_basic(reader))
    assert denied.returncode != 0
    writer = double.issue_token(inst)
    pushed = _git(clone, "push", "-q", "origin", "arcs/x", header=_basic(writer))
    assert pushed.returncode == 0, pushed.stderr
    [mutation] = [m for m in double.mutations if m.path.endswith("git-receive-pack")]
    assert list(mutation.body["refs"]) == ["arcs/x"] and mutation.token == writer
    other = double.issue_token(inst, repositories=["acme/gadgets"])
    assert _git(tmp_path, "clone", "-q", url, "c2", header=_basic(other)).returncode != 0
    assert double.unexpected == []
