"""The world of an ``arcs action`` test: a strict GitHub double whose App is ``github-actions`` (so
the token acts as ``github-actions[bot]``, as a job's ``GITHUB_TOKEN`` does), a repository holding a
small broken project (tier 0 fixes it), the job's workspace cloned from it, and a recorded-shape
``GITHUB_*`` environment around an event file from ``@octokit/webhooks-examples``."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.action.env import read_action_env
from bot.action.run import ActionDeps, run_action
from bot.action.summary import ActionOutcome
from bot.github.auth import StaticToken
from bot.github.git import clone_at_sha
from bot.settings import Settings
from tests.fakes.github_double import (
    ALL_PERMISSIONS,
    TEST_APP_ID,
    AppKey,
    FakeClock,
    GitHubDouble,
    Installation,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
EVENTS = FIXTURES / "action" / "events"
BOUNDARY = FIXTURES / "fix" / "boundary"
REPO = "Codertocat/Hello-World"
"""The repository of the octokit examples (default branch ``master``)."""
BUGGY = "    return age > ADULT_AGE\n"
FIXED = "    return age >= ADULT_AGE\n"
ACTIONS_PERMISSIONS: Mapping[str, str] = {k: v for k, v in ALL_PERMISSIONS.items() if k != "checks"}
"""What a job's GITHUB_TOKEN gets with `permissions: {contents: write, pull-requests: write, …}`."""


def event(name: str) -> dict[str, Any]:
    """A fresh copy of a recorded event payload (see tests/fixtures/action/README.md)."""
    data: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    return copy.deepcopy(data)


def project_files() -> dict[str, str]:
    """The broken project: ``is_adult(18)`` is False (``>`` instead of ``>=``)."""
    files = {
        str(p.relative_to(BOUNDARY)): p.read_text(encoding="utf-8")
        for p in BOUNDARY.rglob("*")
        if p.is_file()
    }
    assert BUGGY in files["ages/rules.py"]
    return files


@dataclass
class World:
    """The double, the App installation standing for GitHub Actions, and where things go."""

    double: GitHubDouble
    installation: Installation
    root: Path
    settings: Settings
    clock: FakeClock
    counter: list[int] = field(default_factory=lambda: [0])

    def token(self, permissions: Mapping[str, str] = ACTIONS_PERMISSIONS, repo: str = REPO) -> str:
        """A job token for ``repo`` (what ``${{ github.token }}`` is)."""
        return self.double.issue_token(self.installation, repositories=[repo], permissions=permissions)

    def workspace(self, sha: str, repo: str = REPO) -> Path:
        """``actions/checkout`` of ``sha`` into a fresh GITHUB_WORKSPACE."""
        self.counter[0] += 1
        dest = self.root / f"workspace{self.counter[0]}"
        token = self.token({"metadata": "read", "contents": "read"}, repo)
        clone_at_sha(self.double.clone_url(repo), sha, dest, source=StaticToken(SecretStr(token)))
        return dest

    def environ(
        self,
        *,
        event_name: str,
        payload: Mapping[str, Any],
        sha: str,
        ref: str,
        workspace: Path,
        token: str | None,
        repo: str = REPO,
        inputs: Mapping[str, str] | None = None,
        head_ref: str = "",
    ) -> dict[str, str]:
        """The step's environment, shaped as GitHub sets it (GitHub Enterprise Server URLs: the double)."""
        n = self.counter[0]
        temp = self.root / f"runner-temp{n}"
        temp.mkdir(exist_ok=True)
        event_path = temp / "event.json"
        event_path.write_text(json.dumps(payload), encoding="utf-8")
        (temp / "summary.md").touch()
        (temp / "output.txt").touch()
        env = {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": repo,
            "GITHUB_REPOSITORY_OWNER": repo.split("/")[0],
            "GITHUB_SHA": sha,
            "GITHUB_REF": ref,
            "GITHUB_HEAD_REF": head_ref,
            "GITHUB_BASE_REF": "",
            "GITHUB_RUN_ID": "7301",
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_RUN_NUMBER": "12",
            "GITHUB_WORKFLOW": "CI",
            "GITHUB_JOB": "test",
            "GITHUB_ACTOR": "Codertocat",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
            "GITHUB_OUTPUT": str(temp / "output.txt"),
            "GITHUB_API_URL": self.double.api_url,
            "GITHUB_SERVER_URL": self.double.base_url,
            "GITHUB_GRAPHQL_URL": f"{self.double.api_url}/graphql",
            "RUNNER_TEMP": str(temp),
            "RUNNER_OS": "Linux",
            # The workflow's PATH: the project's Python (with pytest) set up by an earlier step.
            "ARCS_ACTION_PATH": f"{sys.prefix}/bin:/usr/bin:/bin",
            "INPUT_MODE": "pr",
            "INPUT_SANDBOX": "auto",
            "INPUT_GITHUB_TOKEN": token or "",
        }
        env.update(inputs or {})
        return env

    def run(self, environ: Mapping[str, str]) -> ActionOutcome:
        """``arcs action`` in-process, on the fake clock (mutation gaps do not really sleep)."""
        deps = ActionDeps(clock=self.clock.time, monotonic=self.clock.monotonic, sleep=self.clock.sleep)
        return run_action(self.settings, read_action_env(environ), deps)


@pytest.fixture
def actions_double(
    tmp_path: Path, test_app_key: AppKey, fake_clock: FakeClock, fresh_structlog: None
) -> Iterator[GitHubDouble]:
    """The strict double; its App is ``github-actions`` (bot ``github-actions[bot]``)."""
    double = GitHubDouble(
        tmp_path / "github",
        app_id=TEST_APP_ID,
        app_public_key_pem=test_app_key.public_pem,
        app_slug="github-actions",
        clock=fake_clock.time,
    )
    with double:
        yield double
    assert double.unexpected == [], "the GitHub double received unexpected requests"


@pytest.fixture
def world(actions_double: GitHubDouble, tmp_path: Path, settings: Settings, fake_clock: FakeClock) -> World:
    """Codertocat/Hello-World (default branch master) holding the broken project."""
    inst = actions_double.add_installation("Codertocat", permissions=ACTIONS_PERMISSIONS)
    actions_double.add_repo(REPO, project_files(), default_branch="master", installation=inst)
    return World(actions_double, inst, tmp_path, settings, fake_clock)
