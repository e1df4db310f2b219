"""git over smart HTTP against the double: clone at a SHA, commit as the bot, push to arcs/<key>,
with the token never in argv, a URL, .git/config or any file of the checkout."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bot.github import GitHubError, RefusedPush
from bot.github import git as gitmod
from bot.github.auth import READ_PERMISSIONS, InstallationTokenProvider
from bot.github.client import GitHubApp
from bot.github.git import (
    BotIdentity,
    branch_name,
    check_branch,
    clone_at_sha,
    commit_all,
    push_branch,
)
from tests.fakes.github_double import GitHubDouble

REPO = "acme/widgets"


@pytest.fixture
def setup(github_double: GitHubDouble) -> tuple[int, str, str]:
    inst = github_double.add_installation("acme")
    github_double.add_repo(REPO, {"app.py": "VALUE = 1\n", "README.md": "hi\n"}, installation=inst)
    failing = github_double.branch_sha(REPO, "main")
    assert failing is not None
    later = github_double.commit(REPO, {"app.py": "VALUE = 99\n"}, branch="main", message="later")
    return inst.id, failing, later


@pytest.fixture
def tokens(github_app: GitHubApp, setup: tuple[int, str, str]) -> Iterator[InstallationTokenProvider]:
    with github_app.installation_tokens(setup[0], repository=REPO) as provider:
        yield provider


@pytest.fixture
def identity(github_double: GitHubDouble) -> BotIdentity:
    return BotIdentity.for_app(github_double.bot_user_id)


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_clone_at_sha_keeps_the_token_off_disk(
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    tokens: InstallationTokenProvider,
    tmp_path: Path,
) -> None:
    _, failing, later = setup
    dest = clone_at_sha(github_double.clone_url(REPO), failing, tmp_path / "clone", source=tokens)
    assert (dest / "app.py").read_text() == "VALUE = 1\n"  # the failing commit, not main's tip
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True
    ).stdout.strip()
    assert head == failing and head != later
    token = tokens.token().get_secret_value()
    basic = base64.b64encode(f"x-access-token:{token}".encode())
    assert _files_containing(dest, token.encode()) == []
    assert _files_containing(dest, basic) == []
    config = (dest / ".git" / "config").read_text()
    assert github_double.clone_url(REPO) in config
    assert "extraheader" not in config.lower() and "@" not in config


def test_token_goes_through_the_environment_scoped_to_the_repository(
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    tokens: InstallationTokenProvider,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    real_run = subprocess.run

    def spy(args: list[str], **kwargs: Any) -> Any:
        calls.append((list(args), dict(kwargs.get("env") or {})))
        return real_run(args, **kwargs)

    # Only git.py's calls (the double runs git too, through the real module).
    monkeypatch.setattr(
        gitmod, "subprocess", SimpleNamespace(run=spy, TimeoutExpired=subprocess.TimeoutExpired)
    )
    clone_at_sha(github_double.clone_url(REPO), setup[1], tmp_path / "clone", source=tokens)
    token = tokens.token().get_secret_value()
    assert calls
    for argv, env in calls:
        assert not any(token in arg for arg in argv)
        assert env["GIT_CONFIG_GLOBAL"] and env["GIT_CONFIG_NOSYSTEM"] == "1"
        assert env["GIT_TERMINAL_PROMPT"] == "0"
    authed = [env for _, env in calls if "GIT_CONFIG_VALUE_0" in env]
    assert len(authed) == 1  # only the fetch talks to the server
    env = authed[0]
    assert env["GIT_CONFIG_KEY_0"] == f"http.{github_double.clone_url(REPO)}.extraHeader"
    expected = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    assert env["GIT_CONFIG_VALUE_0"] == f"Authorization: Basic {expected}"


def test_commit_as_bot_with_trailer_and_push_to_arcs_branch(
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    tokens: InstallationTokenProvider,
    identity: BotIdentity,
    tmp_path: Path,
) -> None:
    dest = clone_at_sha(github_double.clone_url(REPO), setup[1], tmp_path / "clone", source=tokens)
    (dest / "app.py").write_text("VALUE = 2\n")
    sha = commit_all(dest, "Fix VALUE", identity=identity, attempt="https://arcs.example/attempts/7")
    result = push_branch(dest, "arcs/abc123", source=tokens, identity=identity)
    assert result.created and result.sha == sha
    assert github_double.branch_sha(REPO, "arcs/abc123") == sha
    info = github_double.commit_info(REPO, "arcs/abc123")
    assert info["author_name"] == "arcs[bot]"
    assert info["author_email"] == f"{github_double.bot_user_id}+arcs[bot]@users.noreply.github.com"
    assert info["committer_email"] == info["author_email"]
    assert "ARCS-Attempt: https://arcs.example/attempts/7" in info["message"].splitlines()
    [push] = github_double.mutations_matching("POST", r"git-receive-pack$")
    assert push.body == {"refs": {"arcs/abc123": {"old": None, "new": sha}}}
    assert push.token == tokens.token().get_secret_value()
    # Pushing the same commit again is a no-op.
    assert push_branch(dest, "arcs/abc123", source=tokens, identity=identity).unchanged
    assert len(github_double.mutations_matching("POST", r"git-receive-pack$")) == 1
    token = tokens.token().get_secret_value()
    assert _files_containing(dest, token.encode()) == []


def test_message_with_its_own_trailer_is_kept(
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    tokens: InstallationTokenProvider,
    identity: BotIdentity,
    tmp_path: Path,
) -> None:
    dest = clone_at_sha(github_double.clone_url(REPO), setup[1], tmp_path / "clone", source=tokens)
    (dest / "new.txt").write_text("x\n")
    commit_all(dest, "Add\n\nARCS-Attempt: 42", identity=identity, attempt=None)
    message = subprocess.run(
        ["git", "log", "-1", "--format=%B"], cwd=dest, capture_output=True, text=True
    ).stdout
    assert message.count("ARCS-Attempt") == 1
    with pytest.raises(GitHubError, match="no change"):
        commit_all(dest, "nothing", identity=identity, attempt="1")


def test_an_own_branch_is_replaced_with_a_lease(
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    tokens: InstallationTokenProvider,
    identity: BotIdentity,
    tmp_path: Path,
) -> None:
    url = github_double.clone_url(REPO)
    first = clone_at_sha(url, setup[1], tmp_path / "one", source=tokens)
    (first / "app.py").write_text("VALUE = 2\n")
    old = commit_all(first, "attempt 1", identity=identity, attempt="1")
    push_branch(first, "arcs/key", source=tokens, identity=identity)
    second = clone_at_sha(url, setup[1], tmp_path / "two", source=tokens)
    (second / "app.py").write_text("VALUE = 3\n")
    new = commit_all(second, "attempt 2", identity=identity, attempt="2")
    result = push_branch(second, "arcs/key", source=tokens, identity=identity)
    assert result.updated and result.previous == old and result.sha == new
    assert github_double.branch_sha(REPO, "arcs/key") == new


BAD_BRANCHES = [
    "main",
    "refs/heads/main",
    "feature/x",
    "arcs/../main",
    "arcs/",
    "arcs/x.lock",
    "arcs//x",
    "arcs/.hidden",
]


def test_refuses_to_push_anything_but_an_arcs_branch(
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    tokens: InstallationTokenProvider,
    identity: BotIdentity,
    tmp_path: Path,
) -> None:
    dest = clone_at_sha(github_double.clone_url(REPO), setup[1], tmp_path / "clone", source=tokens)
    (dest / "app.py").write_text("VALUE = 2\n")
    commit_all(dest, "fix", identity=identity, attempt="1")
    for branch in BAD_BRANCHES:
        with pytest.raises(RefusedPush):
            push_branch(dest, branch, source=tokens, identity=identity)
    assert github_double.mutations_matching("POST", r"git-receive-pack$") == []
    assert github_double.branch_sha(REPO, "main") == setup[2]


def test_refuses_to_overwrite_a_branch_someone_else_committed_to(
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    tokens: InstallationTokenProvider,
    identity: BotIdentity,
    tmp_path: Path,
) -> None:
    human = github_double.commit(
        REPO, {"app.py": "VALUE = 5\n"}, branch="arcs/key", author=("Dev", "dev@example.com"), base="main"
    )
    dest = clone_at_sha(github_double.clone_url(REPO), setup[1], tmp_path / "clone", source=tokens)
    (dest / "app.py").write_text("VALUE = 2\n")
    commit_all(dest, "fix", identity=identity, attempt="1")
    with pytest.raises(RefusedPush, match="Dev"):
        push_branch(dest, "arcs/key", source=tokens, identity=identity)
    assert github_double.branch_sha(REPO, "arcs/key") == human


def test_failures_are_one_line_and_redacted(
    github_app: GitHubApp,
    github_double: GitHubDouble,
    setup: tuple[int, str, str],
    identity: BotIdentity,
    tmp_path: Path,
) -> None:
    with github_app.installation_tokens(setup[0], repository=REPO, permissions=READ_PERMISSIONS) as reader:
        dest = clone_at_sha(github_double.clone_url(REPO), setup[1], tmp_path / "clone", source=reader)
        (dest / "app.py").write_text("VALUE = 2\n")
        commit_all(dest, "fix", identity=identity, attempt="1")
        with pytest.raises(GitHubError) as info:
            push_branch(dest, "arcs/key", source=reader, identity=identity)
        token = reader.token().get_secret_value()
    message = str(info.value)
    assert "\n" not in info.value.message
    assert token not in message
    assert github_double.branch_sha(REPO, "arcs/key") is None
    github_double.auth_failures.clear()


def test_rejects_urls_with_credentials_and_bad_shas(
    tokens: InstallationTokenProvider, tmp_path: Path
) -> None:
    with pytest.raises(GitHubError, match="credentials"):
        clone_at_sha("https://user:pw@github.com/a/b.git", "a" * 40, tmp_path / "x", source=tokens)
    with pytest.raises(GitHubError, match="sha"):
        clone_at_sha("https://github.com/a/b.git", "main", tmp_path / "y", source=tokens)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "f").write_text("x")
    with pytest.raises(GitHubError, match="not empty"):
        clone_at_sha("https://github.com/a/b.git", "a" * 40, tmp_path / "busy", source=tokens)


def test_branch_names() -> None:
    assert branch_name("abc123") == "arcs/abc123"
    long = branch_name("tests/test_x.py::test_y AssertionError")
    assert long.startswith("arcs/") and len(long) == len("arcs/") + 12
    assert long == branch_name("tests/test_x.py::test_y AssertionError")
    assert check_branch(long) == long
    assert check_branch("arcs/attempt/12") == "arcs/attempt/12"
