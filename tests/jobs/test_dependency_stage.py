"""The dependency-update stage end to end (#27): a tiny repository whose requirements bump removes
a symbol it imports; the two versions come from a local fetch port (no network). The tests really
run (a subprocess with the bumped version on its path), answered through the fake runner."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.settings import Settings
from jobs.config import load_repo_config
from jobs.engine import EngineConfig, EnginePorts, execute, report_of
from jobs.fix import FixRequest, fix, plan_of
from jobs.history import read_changeset
from jobs.plan import for_cli
from jobs.render import check_run_output, pr_body
from jobs.repair.budget import Budget
from jobs.repair.report import RepairReport
from jobs.replay import replay
from jobs.summary import RepairSummary
from runners.base import Execution
from runners.commands import JUNIT_PATH
from runners.config import RepoConfig
from runners.distfetch import FetchError
from runners.errors import ConfigError
from runners.fake import FakeCall, FakeRunner, fake_execution
from tests.bot.test_cli_fix import junit
from tests.jobs.test_culprit import commit, git

TEST = "tests/test_app.py::test_shout"
V1 = "def soft_unicode(s):\n    return str(s)\n"
V2 = (
    "def soft_str(s):\n    return str(s)\n\n"
    "def __getattr__(name):\n    if name == 'soft_unicode':\n"
    "        import warnings\n        warnings.warn(\"'soft_unicode' has been renamed to 'soft_str'. \"\n"
    '            "The old name will be removed in 2.1.", DeprecationWarning, stacklevel=2)\n'
    "        return soft_str\n    raise AttributeError(name)\n"
)
V3 = "def soft_str(s):\n    return str(s)\n"
CHANGES = "## 2.1.0\n- Remove ``soft_unicode``, use ``soft_str`` instead.\n\n## 2.0.1\n- first\n"
APP = "from textlib import soft_unicode\n\n\ndef shout(s):\n    return soft_unicode(s).upper()\n"


def versions(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for version, code in (("2.0.1", V1), ("2.1.0", V3)):
        root = tmp_path / "dists" / version
        (root / f"textlib-{version}" / "textlib").mkdir(parents=True)
        (root / f"textlib-{version}" / "textlib" / "__init__.py").write_text(code)
        (root / f"textlib-{version}" / "CHANGES.md").write_text(CHANGES)
        out[version] = root
    return out


class LocalFetch:
    """The fetch port on local folders; counts what it was asked."""

    def __init__(self, roots: dict[str, Path]) -> None:
        self.roots = roots
        self.asked: list[tuple[str, str, str]] = []

    def __call__(self, ecosystem: str, package: str, version: str) -> Path:
        self.asked.append((ecosystem, package, version))
        if package != "textlib" or version not in self.roots:
            raise FetchError(f"{package} {version}: no sdist or wheel on the index")
        return self.roots[version]


def installed_runner(roots: dict[str, Path]) -> FakeRunner:
    """pytest with textlib 2.1.0 "installed": runs the test for real in a subprocess."""
    site = roots["2.1.0"] / "textlib-2.1.0"

    def run(call: FakeCall) -> Execution:
        probe = "import app; assert app.shout('a') == 'A'"
        done = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=call.workspace,
            env={"PYTHONPATH": f"{site}:{call.workspace}"},
            capture_output=True,
            text=True,
            check=False,
        )
        ok = done.returncode == 0
        return fake_execution(
            exit_code=0 if ok else 1, stderr=done.stderr, artifacts={JUNIT_PATH: junit({TEST: (3, ok)})}
        )

    return FakeRunner().on("pytest", run)


@pytest.fixture
def bumped(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "app"
    repo.mkdir()
    git(repo, "init", "-q")
    base = commit(
        repo,
        {
            "requirements.txt": "textlib==2.0.1\n",
            "app.py": APP,
            "tests/test_app.py": "from app import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n",
        },
        "green",
    )
    commit(repo, {"requirements.txt": "textlib==2.1.0\n"}, "Bump textlib from 2.0.1 to 2.1.0")
    return repo, base


def plan(repo: Path, base: str, tmp_path: Path, **over: object) -> object:
    p = for_cli(
        repo,
        repo_config=RepoConfig(),
        test_command="pytest -q",
        tier="0",
        use_index=False,
        trace_out=tmp_path / "trace.json",
        changes=read_changeset(repo, base, "HEAD"),
        ci_tests=(TEST,),
        budget=Budget(executions=12),
    )
    return dataclasses.replace(p, **over)  # type: ignore[arg-type]


def test_a_red_bump_is_migrated_by_tier_0_and_replays_without_fetching(
    bumped: tuple[Path, str], tmp_path: Path, settings: Settings
) -> None:
    repo, base = bumped
    roots = versions(tmp_path)
    fetch = LocalFetch(roots)
    the_plan = plan(repo, base, tmp_path)
    ports = EnginePorts(config=EngineConfig.of(settings), runner=installed_runner(roots), fetch=fetch)
    done = execute(the_plan, ports)  # type: ignore[arg-type]
    result = done.result

    assert result.fixed, result.reason
    assert "+from textlib import soft_str" in result.patch and "requirements.txt" not in result.patch
    assert sorted(fetch.asked) == [("pypi", "textlib", "2.0.1"), ("pypi", "textlib", "2.1.0")]
    trace = json.loads(done.trace_path.read_text())
    assert trace["repo"]["dependency_update"]["deps"][0]["bump"]["new"] == "2.1.0"
    assert any(n.startswith("dependency update: textlib 2.0.1 -> 2.1.0") for n in trace["notices"])
    # the LLM tiers' context gets the fenced section
    context = trace["task"]["dependency_context"]
    assert "<untrusted-dependency-changes>" in context and "textlib.soft_unicode" in context

    report = report_of(done)
    assert report.dependency is not None
    bump = report.dependency.bumps[0]
    assert (bump.ecosystem, bump.package, bump.old, bump.new) == ("pypi", "textlib", "2.0.1", "2.1.0")
    assert report.dependency.title.endswith("migrated"), report.dependency.title
    assert "ARCS migrated 2 call site(s)" in report.dependency.markdown
    # serialised with the report; a report from before #27 still reads
    again = RepairReport.from_json(json.loads(json.dumps(report.to_json())))
    assert again.dependency == report.dependency
    old = report.to_json()
    del old["dependency"]
    assert RepairReport.from_json(old).dependency is None
    # the check run and the PR body carry the section
    summary = RepairSummary(
        verdict=report.verdict, fixed=True, diff=report.patch, dependency=report.dependency.markdown
    )
    assert "### Dependency update" in check_run_output("completed", summary)["summary"]
    assert "### Dependency update" in pr_body(summary)

    # replay reads the stage from the trace: the fetch port is never asked again
    fetch.asked.clear()
    replayed = replay(settings, done.trace_path, runner=installed_runner(roots))
    assert replayed.divergence is None, replayed.divergence
    assert fetch.asked == []


def test_comment_mode_searches_no_candidate_and_names_what_broke(
    bumped: tuple[Path, str], tmp_path: Path, settings: Settings
) -> None:
    repo, base = bumped
    roots = versions(tmp_path)
    runner = installed_runner(roots)
    the_plan = plan(repo, base, tmp_path, dependency_updates="comment")
    ports = EnginePorts(config=EngineConfig.of(settings), runner=runner, fetch=LocalFetch(roots))
    done = execute(the_plan, ports)  # type: ignore[arg-type]

    report = report_of(done)
    assert not report.fixed and report.candidates == 0 and report.patch == ""
    assert report.dependency is not None and report.dependency.mode == "comment"
    assert "textlib.soft_unicode" in report.dependency.breaking and "`app.py:1`" in report.dependency.breaking
    assert "dependency_updates: comment" in report.dependency.markdown


def test_off_mode_leaves_the_update_alone(
    bumped: tuple[Path, str], tmp_path: Path, settings: Settings
) -> None:
    repo, base = bumped
    roots = versions(tmp_path)
    fetch = LocalFetch(roots)
    the_plan = plan(repo, base, tmp_path, dependency_updates="off")
    ports = EnginePorts(config=EngineConfig.of(settings), runner=installed_runner(roots), fetch=fetch)
    report = report_of(execute(the_plan, ports))  # type: ignore[arg-type]
    assert report.dependency is None and fetch.asked == []


@pytest.mark.parametrize("mode", ["comment", "off"])
def test_arcs_fix_reads_dependency_updates_from_the_folders_arcs_yml(
    bumped: tuple[Path, str], tmp_path: Path, settings: Settings, mode: str
) -> None:
    repo, base = bumped
    (repo / ".arcs.yml").write_text(f"dependency_updates: {mode}\n")
    roots = versions(tmp_path)
    fetch = LocalFetch(roots)
    request = FixRequest(
        repo=repo,
        test_command="pytest -q",
        tier="0",
        use_index=False,
        trace_out=tmp_path / "trace.json",
        changes=read_changeset(repo, base, "HEAD"),
        ci_tests=(TEST,),
        budget=Budget(executions=12),
    )
    report = report_of(fix(settings, request, runner=installed_runner(roots), fetch=fetch))
    if mode == "off":
        assert report.dependency is None and fetch.asked == []
    else:
        assert report.dependency is not None and report.dependency.mode == "comment"
        assert not report.fixed and report.candidates == 0


def test_a_bad_dependency_updates_value_stops_arcs_fix_naming_the_key(bumped: tuple[Path, str]) -> None:
    repo, _ = bumped
    (repo / ".arcs.yml").write_text("dependency_updates: sometimes\n")
    with pytest.raises(ConfigError, match="dependency_updates"):
        plan_of(FixRequest(repo=repo), load_repo_config(repo))
    (repo / ".arcs.yml").write_text("test: pytest -q\n")
    assert plan_of(FixRequest(repo=repo), load_repo_config(repo)).dependency_updates == "fix"
