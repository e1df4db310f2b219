"""The strict GitHub double itself: it must reject what GitHub rejects and flag what ARCS should
never send, or the tests built on it prove nothing."""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from pydantic import SecretStr

from bot.github.auth import AppCredentials, create_app_jwt
from tests.fakes.github_double import (
    TEST_APP_ID,
    TEST_CLIENT_ID,
    TEST_CLIENT_SECRET,
    WITH_MEMBERS,
    FakeClock,
    GitHubDouble,
    generate_app_key,
)


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


# --- the OAuth web flow and user tokens (dashboard login) ----------------------------------------

CALLBACK = "http://arcs.test/login/callback"


def _authorize(double: GitHubDouble, **params: str) -> httpx.Response:
    query = {"client_id": TEST_CLIENT_ID, "redirect_uri": CALLBACK, "state": "s1", **params}
    return _HTTP.get(double.base_url + "/login/oauth/authorize", params=query)


def _exchange(double: GitHubDouble, code: str, **fields: str) -> httpx.Response:
    data = {"client_id": TEST_CLIENT_ID, "client_secret": TEST_CLIENT_SECRET, "code": code, **fields}
    return _HTTP.post(
        double.base_url + "/login/oauth/access_token", data=data, headers={"Accept": "application/json"}
    )


def _code_of(response: httpx.Response) -> str:
    assert response.status_code == 302, response.text
    query = parse_qs(urlsplit(response.headers["location"]).query)
    assert query["state"] == ["s1"]
    return query["code"][0]


def test_the_oauth_web_flow_issues_a_user_token(github_double: GitHubDouble) -> None:
    double = github_double
    double.register_callback(CALLBACK)
    double.sign_in("alice")
    answer = _authorize(double)
    assert answer.headers["location"].startswith(CALLBACK + "?code=")
    code = _code_of(answer)
    token = _exchange(double, code, redirect_uri=CALLBACK).json()
    assert token["token_type"] == "bearer" and token["access_token"].startswith("ghu_")
    me = _api(double, "GET", "/user", token["access_token"])
    assert me.status_code == 200 and me.json()["login"] == "alice"
    # A code works once; a wrong secret or callback gets GitHub's error JSON (with a 200).
    assert _exchange(double, code).json()["error"] == "bad_verification_code"
    fresh = _code_of(_authorize(double))
    wrong = _exchange(double, fresh, client_secret="nope")
    assert wrong.status_code == 200 and wrong.json()["error"] == "incorrect_client_credentials"
    assert (
        _exchange(double, fresh, redirect_uri="http://elsewhere/cb").json()["error"]
        == "redirect_uri_mismatch"
    )
    assert double.unexpected == [] and double.mutations == []


def test_a_code_expires_after_ten_minutes(github_double: GitHubDouble, fake_clock: FakeClock) -> None:
    github_double.register_callback(CALLBACK)
    github_double.sign_in("alice")
    code = _code_of(_authorize(github_double))
    fake_clock.advance(601)
    assert _exchange(github_double, code).json()["error"] == "bad_verification_code"


def test_a_denied_authorization_redirects_with_the_error(github_double: GitHubDouble) -> None:
    github_double.register_callback(CALLBACK)
    github_double.sign_in("alice")
    github_double.deny_next_authorization()
    query = parse_qs(urlsplit(_authorize(github_double).headers["location"]).query)
    assert query["error"] == ["access_denied"] and query["state"] == ["s1"] and "code" not in query
    assert "code" in parse_qs(urlsplit(_authorize(github_double).headers["location"]).query)


def test_the_oauth_endpoints_are_strict(github_double: GitHubDouble) -> None:
    double = github_double
    double.sign_in("alice")
    assert _authorize(double).status_code == 400  # no callback URL registered
    double.register_callback(CALLBACK)
    assert _authorize(double, redirect_uri="http://evil.test/cb").status_code == 400
    assert _authorize(double, state="").status_code == 400
    assert _authorize(double, client_id="Iv1.other").status_code == 404
    assert _authorize(double, scope="repo").status_code == 422
    double.sign_out()
    assert _authorize(double).status_code == 401
    double.sign_in("alice")
    code = _code_of(_authorize(double))
    no_json = _HTTP.post(
        double.base_url + "/login/oauth/access_token",
        data={"client_id": TEST_CLIENT_ID, "client_secret": TEST_CLIENT_SECRET, "code": code},
    )
    assert no_json.status_code == 406
    assert len(double.unexpected) == 7
    double.unexpected.clear()


def _visibility_world(double: GitHubDouble) -> dict[str, int]:
    double.add_org("acme")
    double.add_member("acme", "alice", role="admin")
    double.add_member("acme", "bob")
    double.add_member("acme", "carol", state="pending")
    double.add_org("vault", base_permission="none")
    double.add_member("vault", "bob")
    double.grant("erin", "vault/open")
    ids = {
        "acme": double.add_installation("acme", ["acme/a", "acme/b"], permissions=WITH_MEMBERS).id,
        "vault": double.add_installation("vault", ["vault/secret", "vault/open"]).id,
        "dave": double.add_installation("dave", ["dave/dots"]).id,
        "foreign": double.add_installation("acme", ["acme/a"], app_id=77).id,
    }
    return ids


def _listing(double: GitHubDouble, login: str) -> dict[str, list[str]]:
    token = double.issue_user_token(login)
    installations = _api(double, "GET", "/user/installations", token).json()["installations"]
    out: dict[str, list[str]] = {}
    for inst in installations:
        assert inst["app_id"] == int(TEST_APP_ID)
        repos = _api(double, "GET", f"/user/installations/{inst['id']}/repositories", token).json()
        out[inst["account"]["login"]] = sorted(r["full_name"] for r in repos["repositories"])
    return out


def test_user_tokens_see_what_the_user_may_see(github_double: GitHubDouble) -> None:
    double = github_double
    ids = _visibility_world(double)
    assert _listing(double, "alice") == {"acme": ["acme/a", "acme/b"]}
    # bob: acme's repositories as a member; in vault (base permission none) nothing granted.
    assert _listing(double, "bob") == {"acme": ["acme/a", "acme/b"]}
    assert _listing(double, "erin") == {"vault": ["vault/open"]}
    assert _listing(double, "carol") == {}  # a pending invitation shows nothing
    assert _listing(double, "dave") == {"dave": ["dave/dots"]}
    # Another App's installation and an installation the user cannot see answer 404.
    token = double.issue_user_token("bob")
    for iid in (ids["foreign"], ids["dave"]):
        assert _api(double, "GET", f"/user/installations/{iid}/repositories", token).status_code == 404
    assert double.unexpected == []


def test_the_membership_route_needs_the_members_permission(github_double: GitHubDouble) -> None:
    double = github_double
    _visibility_world(double)
    alice, bob, carol = (double.issue_user_token(login) for login in ("alice", "bob", "carol"))
    admin = _api(double, "GET", "/user/memberships/orgs/acme", alice).json()
    assert (admin["state"], admin["role"], admin["organization"]["login"]) == ("active", "admin", "acme")
    assert _api(double, "GET", "/user/memberships/orgs/ACME", bob).json()["role"] == "member"
    assert _api(double, "GET", "/user/memberships/orgs/acme", carol).json()["state"] == "pending"
    assert (
        _api(double, "GET", "/user/memberships/orgs/acme", double.issue_user_token("zed")).status_code == 404
    )
    # vault's installation lacks "members: read".
    assert _api(double, "GET", "/user/memberships/orgs/vault", bob).status_code == 403
    assert double.unexpected == []


def test_user_and_installation_tokens_do_not_mix(
    setup: tuple[GitHubDouble, int], fake_clock: FakeClock
) -> None:
    double, iid = setup
    installation_token = double.issue_token(double.installations[iid])
    user_token = double.issue_user_token("alice")
    assert _api(double, "GET", "/user", installation_token).status_code == 403
    assert _api(double, "GET", "/repos/acme/widgets", user_token).status_code == 401
    assert _api(double, "GET", "/user").status_code == 401
    assert _api(double, "GET", "/user", user_token).status_code == 200
    fake_clock.advance(8 * 3600 + 1)
    assert _api(double, "GET", "/user", user_token).status_code == 401
    assert double.unexpected == []


def test_user_listings_paginate(github_double: GitHubDouble) -> None:
    double = github_double
    inst = double.add_installation("acme", [f"acme/r{i:03d}" for i in range(150)])
    double.add_member("acme", "bob")
    token = double.issue_user_token("bob")
    first = _api(double, "GET", f"/user/installations/{inst.id}/repositories?per_page=100", token)
    assert first.json()["total_count"] == 150 and len(first.json()["repositories"]) == 100
    second = _HTTP.get(first.links["next"]["url"], headers={"Authorization": f"Bearer {token}"})
    assert len(second.json()["repositories"]) == 50 and "link" not in second.headers
