"""A formatter failure fixed at zero LLM cost end to end in the App (#14): a signed
``workflow_run`` whose failed step is ``ruff format --check .``, the worker's real engine in the
real sandbox (bubblewrap) with the worker's own toolchain, the formatter's fix mode limited to the
file changed since the last green run, verified by re-running the check, and the pull request."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import Settings
from jobs import pipeline
from jobs.engine_ports import worker_toolchains
from jobs.repair.report import RepairReport
from tests.conftest import sandbox_works
from tests.fakes.github_double import AppKey, FakeClock, GitHubDouble
from tests.jobs.test_change_signal_e2e import REPO, _delivery, double, signed_run

__all__ = ["double"]  # the fixture, imported

CLEAN = "def area(w, h):\n    return w * h\n"
UGLY = "def area( w,h ):\n  return w*h\n"
RED_LOG = """##[group]Run ruff format --check .
ruff format --check .
##[endgroup]
Would reformat: geo.py
1 file would be reformatted, 1 file already formatted
##[error]Process completed with exit code 1.
"""


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_a_formatter_failure_is_fixed_with_no_model_and_a_pull_request(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    inst = double.add_installation("acme")
    double.add_repo(
        REPO,
        {"geo.py": CLEAN, "util.py": "X = 1\n", "ruff.toml": "line-length = 100\n"},
        installation=inst,
    )
    green = str(double.branch_sha(REPO, "main"))
    double.commit(REPO, {"geo.py": UGLY}, branch="main", message="geo: quick edit")
    red_sha = double.commit(REPO, {"README.md": "geo\n"}, branch="main", message="docs")
    double.add_workflow_run(REPO, head_sha=green, head_branch="main", jobs=[("lint", "success", "ok")])
    red = double.add_workflow_run(
        REPO, head_sha=red_sha, head_branch="main", jobs=[("lint", "failure", RED_LOG)]
    )
    payload = _delivery(double, inst.id, red.id, red.workflow_id, red_sha)
    with signed_run(
        double, settings, test_app_key, fake_clock, tmp_path, payload, None, worker_toolchains()
    ) as (deps, job, follow_ups):
        assert pipeline.dispatch(deps, job) == "fixed"
        (publish,) = follow_ups
        assert pipeline.dispatch(deps, publish) == "published"
        (attempt,) = deps.store.attempts(repo=REPO, limit=5)
        report = RepairReport.from_json(attempt.trace or {})

    assert report.fixed and report.spend.tokens == 0 and report.spend.usd == 0  # no model
    assert report.verification is not None and report.verification.exit_code == 0
    assert report.verification.command == "ruff format --check ."  # the exact failing step
    assert any(n.startswith("autofix (no LLM) with ruff-format") for n in report.notices), report.notices
    [pull] = double.open_pulls(REPO)
    head = pull["head"]["ref"]
    assert double.read_file(REPO, head, "geo.py") == CLEAN
    assert "geo.py" in report.patch and "util.py" not in report.patch
