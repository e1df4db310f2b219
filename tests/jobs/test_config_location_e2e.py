"""``.github/arcs.yml`` beside ``.arcs.yml`` (Probot's place for an app's file), on the worker's
path: a signed ``workflow_run`` posted to the app, the job run by the worker through the real
gateway on the strict GitHub double. The file in ``.github/`` is read; an error names it; two
files are refused naming both (never a silent pick)."""

from __future__ import annotations

from pathlib import Path

from bot.settings import Settings
from jobs import pipeline
from runners.fake import FakeRunner
from tests.fakes.github_double import AppKey, FakeClock, GitHubDouble
from tests.jobs.test_change_signal_e2e import REPO, _delivery, _tree, double, signed_run

__all__ = ["double"]  # the fixture, imported


def _red_run(
    github: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
    config: dict[str, str],
    *,
    org: dict[str, str] | None = None,
) -> tuple[str, str, dict[str, object] | None, FakeRunner]:
    """A red run on ``main`` of a repository whose config files are ``config`` (``org``: the files
    of the organisation's ``.github`` repository); the outcome, the
    attempt's reason, the ARCS check run (None: none) and the runner (did a repair start?)."""
    inst = github.add_installation("acme")
    tree = {name: text for name, text in _tree().items() if name != ".arcs.yml"}
    github.add_repo(REPO, {**tree, **config}, installation=inst)
    if org is not None:  # the organisation's .github repository, in the same installation
        github.add_repo(f"{REPO.split('/')[0]}/.github", {"README.md": "org\n", **org}, installation=inst)
    sha = str(github.branch_sha(REPO, "main"))
    red = github.add_workflow_run(REPO, head_sha=sha, head_branch="main", jobs=[("test", "failure", "boom")])
    payload = _delivery(github, inst.id, red.id, red.workflow_id, sha)
    runner = FakeRunner()
    with signed_run(github, settings, test_app_key, fake_clock, tmp_path, payload, runner) as (deps, job, _):
        outcome = pipeline.dispatch(deps, job)
        (attempt,) = deps.store.attempts(repo=REPO, limit=5)
    checks = list(github.repos[REPO].check_runs.values())
    return str(outcome), attempt.reason, (checks[0] if checks else None), runner


def test_the_config_in_dot_github_is_read(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    config = {".github/arcs.yml": "test: pytest -q\nbranches: ['release/*']\n"}
    outcome, reason, check, runner = _red_run(double, settings, test_app_key, fake_clock, tmp_path, config)
    assert outcome == "skipped" and check is None and runner.calls == []
    assert reason == "branch main is not in .arcs.yml `branches`"  # read from .github/arcs.yml


def test_an_error_in_dot_github_names_that_file(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    config = {".github/arcs.yml": "tier: banana\n"}
    outcome, _reason, check, runner = _red_run(double, settings, test_app_key, fake_clock, tmp_path, config)
    assert outcome == "refused" and check is not None and runner.calls == []
    summary = str(check["output"]["summary"])  # type: ignore[index]
    assert ".github/arcs.yml: tier: expected one of 0, small, medium, large, auto, got 'banana'" in summary


def test_two_config_files_are_refused_naming_both(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    config = {".arcs.yml": "test: pytest -q\n", ".github/arcs.yml": "test: make test\n"}
    outcome, _reason, check, runner = _red_run(double, settings, test_app_key, fake_clock, tmp_path, config)
    assert outcome == "refused" and check is not None and runner.calls == []
    summary = str(check["output"]["summary"])  # type: ignore[index]
    assert ".arcs.yml and .github/arcs.yml both configure ARCS; keep one of them" in summary
