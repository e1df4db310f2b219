"""The real Workbench: previews in a scratch copy, runs in fresh copies, results as TestOutcome."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from jobs.repair.edits import EditError
from jobs.repair.model import Edit
from jobs.sandbox_workbench import DirectorySource, SandboxWorkbench, to_outcome, write_change
from runners.commands import JUNIT_PATH, resolve_test_command
from runners.fake import FakeCall, FakeRunner, fake_execution
from runners.results import Frame, TestFailure, TestResult, TestRun
from tests.conftest import MakeRepo, git, sandbox_works

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BOUNDARY = FIXTURES / "fix" / "boundary"
RULES = "ages/rules.py"
FIX = Edit(RULES, old="return age > ADULT_AGE", new="return age >= ADULT_AGE")


def fixture_repo(tmp_path: Path, src: Path = BOUNDARY) -> Path:
    repo = tmp_path / src.name
    shutil.copytree(src, repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def test_to_outcome_maps_results_and_run_errors() -> None:
    failure = TestFailure(
        "tests/t.py::test_a", "ages/rules.py", 9, "AssertionError", "assert False",
        (Frame("tests/t.py", 4, "test_a"), Frame("ages/rules.py", 9, "is_adult")),
    )  # fmt: skip
    run = TestRun(
        command="python -m pytest",
        exit_code=1,
        duration_s=1.5,
        results=(
            TestResult("tests/t.py::test_a", "failed", failure=failure),
            TestResult("tests/t.py::test_b", "passed"),
            TestResult("tests/t.py::test_c", "skipped"),
        ),
        errors=(TestFailure("tests/t_broken.py", type="collection", message="ImportError"),),
        killed_by="timeout",
    )
    out = to_outcome(run, selected=True)
    assert out.passed == ("tests/t.py::test_b",) and out.failed == ("tests/t.py::test_a",)
    assert out.errors == ("tests/t_broken.py",) and out.skipped == ("tests/t.py::test_c",)
    assert out.timed_out and out.selected and out.command == "python -m pytest"
    first = out.failures[0]
    assert (first.test_id, first.type, first.path, first.line) == (
        "tests/t.py::test_a",
        "AssertionError",
        "ages/rules.py",
        9,
    )
    assert [f.function for f in first.frames] == ["test_a", "is_adult"]  # innermost last
    assert out.failures[1].type == "collection"


def test_write_change_creates_overwrites_and_deletes(tmp_path: Path) -> None:
    from jobs.repair.fakes import apply_in_memory

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "gone.py").write_text("y = 2\n")
    change = apply_in_memory(
        {"a.py": "x = 1\n", "gone.py": "y = 2\n"},
        [Edit("a.py", old="x = 1", new="x = 3"), Edit("new/b.py", kind="create", new="z = 4\n"), Edit("gone.py", kind="delete_file")],
    )  # fmt: skip
    write_change(tmp_path, change)
    assert (tmp_path / "a.py").read_text() == "x = 3\n"
    assert (tmp_path / "new/b.py").read_text() == "z = 4\n"
    assert not (tmp_path / "gone.py").exists()


def test_directory_source_and_digest(tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path)
    source = DirectorySource.of(repo)
    assert RULES in source.files() and "tests/test_rules.py" in source.files()
    assert "return age > ADULT_AGE" in (source.read(RULES) or "")
    assert source.read("missing.py") is None
    digest = source.digest()
    assert digest == DirectorySource.of(repo).digest()
    (repo / RULES).write_text("changed\n")
    assert DirectorySource.of(repo).digest() != digest


def test_preview_restores_the_scratch_copy_and_never_touches_the_repo(tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path)
    before = (repo / RULES).read_text()
    with SandboxWorkbench(repo, resolve_test_command(repo), FakeRunner()) as wb:
        first = wb.preview([FIX])
        assert first.paths == (RULES,) and "age >= ADULT_AGE" in (first.after[RULES] or "")
        # the same old text is still there for the next preview: the scratch copy was restored
        second = wb.preview([Edit(RULES, old="return age > ADULT_AGE", new="return age > 17")])
        assert "age > 17" in (second.after[RULES] or "")
        created = wb.preview([Edit("ages/extra.py", kind="create", new="X = 1\n")])
        assert created.paths == ("ages/extra.py",)
        again = wb.preview([Edit("ages/extra.py", kind="create", new="X = 2\n")])  # not left behind
        assert again.after["ages/extra.py"] == "X = 2\n"
        with pytest.raises(EditError, match=r"no such text|not found|does not occur"):
            wb.preview([Edit(RULES, old="no such text", new="x")])
        with pytest.raises(EditError):
            wb.preview([Edit("../outside.py", kind="create", new="x")])
    assert (repo / RULES).read_text() == before
    assert not (repo / "ages/extra.py").exists()
    assert git(repo, "status", "--porcelain") == ""


def test_run_tests_uses_a_fresh_copy_with_the_change_and_narrows(tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path)
    xml = (FIXTURES / "junit" / "pytest_xunit1.xml").read_text(encoding="utf-8")
    seen: list[tuple[Path, str]] = []

    def respond(call: FakeCall) -> object:
        seen.append((call.workspace, (call.workspace / RULES).read_text()))
        return fake_execution(exit_code=1, artifacts={JUNIT_PATH: xml})

    runner = FakeRunner().on("pytest", respond)  # type: ignore[arg-type]
    with SandboxWorkbench(repo, resolve_test_command(repo), runner) as wb:
        base = wb.run_tests(None, timeout_s=30)
        change = wb.preview([FIX])
        narrowed = wb.run_tests(change, select=["tests/test_rules.py::test_eighteen_is_adult"], timeout_s=30)
    assert not base.selected and narrowed.selected
    assert "pytest tests/test_rules.py::test_eighteen_is_adult " in runner.calls[1].command
    assert runner.calls[0].timeout_s == 30
    assert seen[0][0] != repo and seen[0][0] != seen[1][0]  # a fresh private copy per run
    assert "age > ADULT_AGE" in seen[0][1] and "age >= ADULT_AGE" in seen[1][1]
    assert base.passed and base.failed  # parsed from the JUnit report
    assert "age > ADULT_AGE" in (repo / RULES).read_text()


def test_verification_runs_the_exact_command_without_the_hang_probe(tmp_path: Path) -> None:
    """Diagnosis runs carry the pytest hang probe; the final verification is the user's command as is."""
    repo = fixture_repo(tmp_path)
    runner = FakeRunner().on("pytest", lambda call: fake_execution(exit_code=0))  # type: ignore[arg-type,return-value]
    command = resolve_test_command(repo)
    with SandboxWorkbench(repo, command, runner) as wb:
        wb.run_tests(None, timeout_s=30)
        wb.verify(None, timeout_s=30)
    diagnosis, verification = runner.calls[0].command, runner.calls[1].command
    assert "arcs_hang_probe" in diagnosis
    assert "arcs_hang_probe" not in verification


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_real_sandbox_runs(tmp_path: Path, make_repo: MakeRepo) -> None:
    from runners.factory import make_runner

    repo = fixture_repo(tmp_path)
    runner = make_runner(toolchain_paths=[Path(sys.prefix)])
    target = "tests/test_rules.py::test_eighteen_is_adult"
    with SandboxWorkbench(repo, resolve_test_command(repo), runner) as wb:
        base = wb.run_tests(None, timeout_s=120)
        assert base.failed == (target,) and len(base.passed) == 2 and not base.selected
        failure = base.failures[0]
        assert failure.type == "AssertionError" and failure.frames[-1].path == "tests/test_rules.py"
        fixed = wb.run_tests(wb.preview([FIX]), select=[target], timeout_s=120)
        assert fixed.selected and fixed.passed == (target,) and fixed.failed == ()
        broken = wb.run_tests(
            wb.preview([Edit(RULES, old="def is_adult", new="def is_adult(")]), timeout_s=120
        )
        assert broken.errors and not broken.passed  # a run that cannot even import is an error, not a pass
    assert git(repo, "status", "--porcelain") == ""
