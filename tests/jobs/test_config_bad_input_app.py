"""The App refuses the same ``.arcs.yml`` files as ``arcs fix`` (issue #23), and says so on the
check run of the red commit: the file's text is read through a gateway's typed
``load_arcs_config`` (as the App's GitHub gateway reads it) and nothing is repaired.

The NaN/infinity cases failed on the base commit (a budget of ``.nan`` USD was accepted); the
others pin that the App and the command line give the same line.
"""

from __future__ import annotations

import pytest

from jobs import config as arcs_config
from jobs import pipeline
from jobs.config import ArcsConfig
from jobs.fakes import FakeGitHubGateway
from tests.jobs.test_pipeline import REPO, Harness, ci_job, h, nothing_spent, only_attempt

__all__ = ["h"]  # the harness fixture, shared with test_pipeline


class FileGateway(FakeGitHubGateway):
    """A gateway whose repository holds ``.arcs.yml`` with ``text`` (read with the App's parser)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def load_arcs_config(self, repo: str, ref: str | None = None) -> ArcsConfig:
        self._record("load_arcs_config", repo=repo, ref=ref)
        return arcs_config.load(lambda path: self.text if path == ".arcs.yml" else None)


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("tier: banana\n", "tier", "tier: expected one of 0, small, medium, large, auto, got 'banana'"),
        ("budget: {usd: lots}\n", "budget.usd", "budget.usd: expected a number, got 'lots'"),
        ("budget: {usd: .nan}\n", "budget.usd", "budget.usd: expected a finite positive number, got nan"),
        (
            "budget: {wall_s: .inf}\n",
            "budget.wall_s",
            "budget.wall_s: expected a finite positive number, got inf",
        ),
        ("timeout_s: .nan\n", "timeout_s", "`timeout_s` must be a finite positive number, got nan"),
        ("tirgger: {ci: true}\n", "tirgger", "unknown key `tirgger` (did you mean `triggers`?)"),
    ],
    ids=["tier", "budget-usd", "nan", "inf", "timeout-nan", "unknown-key"],
)
def test_the_check_run_names_the_bad_key_and_nothing_is_repaired(
    h: Harness, text: str, key: str, message: str
) -> None:
    gh = FileGateway(text)
    h.deps.github = lambda _installation: gh
    h.gh = gh
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "refused"
    attempt = only_attempt(h.store)
    assert attempt.reason == f"malformed .arcs.yml: .arcs.yml: {message}" and nothing_spent(h)
    check = gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "neutral" and check["title"] == "ARCS could not read .arcs.yml"
    assert message in check["summary"] and f"`{key}` key" in check["summary"]
    (event,) = h.store.events(kind="refusal")
    assert event.data == {"policy": "config_error", "key": key} and event.repo == REPO
