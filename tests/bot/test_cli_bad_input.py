"""Bad input stops at once (issue #23): a folder that is not a git work tree, an empty test
command and an ``.arcs.yml`` the App refuses end ``arcs fix``/``arcs test`` with exit 2 and one
line naming the problem, before any sandbox, index or repair runs.

On the base commit each of these ran a whole repair (or used the default command, or ignored
the key); the engine is replaced by a recorder here, so "nothing ran" is observed, not assumed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jobs.fix
from bot.cli import commands, fix_cmd, main, test_cmd
from bot.settings import Settings
from tests.conftest import MakeRepo

SOURCE = {"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": "from calc import add\n"}


class Ran(Exception):
    """The engine was reached."""


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    for register in (fix_cmd.register, test_cmd.register):
        if register not in commands.REGISTRY:
            monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Requests that reached :func:`jobs.fix.fix` (each stops there with :class:`Ran`)."""
    seen: list[Any] = []

    def record(_settings: Any, request: Any, **_ports: Any) -> Any:
        seen.append(request)
        raise Ran

    monkeypatch.setattr(jobs.fix, "fix", record)
    return seen


@pytest.fixture
def no_runner(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``arcs test``: the sandbox is never made (each attempt is recorded and refused)."""
    import runners.factory

    made: list[str] = []

    def refuse(**_kwargs: Any) -> Any:
        made.append("runner")
        raise Ran

    monkeypatch.setattr(runners.factory, "make_runner", refuse)
    return made


def _run(args: list[str], settings: Settings, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args, settings=settings)
    _out, err = capsys.readouterr()
    return code, err


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arcs: error: "), err
    return lines[0].removeprefix("arcs: error: ")


def test_a_folder_that_is_not_a_git_repository_stops_at_once(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str], engine: list[Any]
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    for name, text in SOURCE.items():
        (folder / name).write_text(text)
    code, err = _run(["fix", str(folder), "--tier", "0"], settings, capsys)
    line = _one_error_line(err)
    assert code == 2 and engine == []
    assert line.startswith(f"fix: {folder} is not a git repository;") and f"git -C {folder} init" in line
    assert not (settings.home / "traces").exists()  # nothing ran, so no trace either


def test_a_repository_without_a_commit_stops_at_once(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo, engine: list[Any]
) -> None:
    repo = make_repo(SOURCE, commit=False)
    code, err = _run(["fix", str(repo)], settings, capsys)
    assert code == 2 and engine == []
    assert _one_error_line(err).startswith(f"fix: {repo} has no commit yet; commit the files first")


def test_a_missing_path_is_named(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str], engine: list[Any]
) -> None:
    code, err = _run(["fix", str(tmp_path / "nope")], settings, capsys)
    assert code == 2 and engine == [] and _one_error_line(err) == f"fix: {tmp_path / 'nope'} does not exist"


@pytest.mark.parametrize("command", ["", "   "])
def test_an_empty_test_command_is_refused_not_replaced_by_the_default(
    command: str,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    engine: list[Any],
) -> None:
    repo = make_repo(SOURCE)
    code, err = _run(["fix", str(repo), "--test", command], settings, capsys)
    assert code == 2 and engine == []
    assert _one_error_line(err).startswith("fix: --test is empty; give the command that runs the tests")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tier: banana\n", ".arcs.yml: tier: expected one of 0, small, medium, large, auto, got 'banana'"),
        ("budget: {usd: lots}\n", ".arcs.yml: budget.usd: expected a number, got 'lots'"),
        ("budget: {usd: .nan}\n", ".arcs.yml: budget.usd: expected a finite positive number, got nan"),
        ("tirgger: {ci: true}\n", ".arcs.yml: unknown key `tirgger` (did you mean `triggers`?)"),
        (
            "budget: {dollars: 3}\n",
            ".arcs.yml: unknown key `budget.dollars` (known: iterations, usd, wall_s)",
        ),
        ("timeout_s: .inf\n", ".arcs.yml: `timeout_s` must be a finite positive number, got inf"),
    ],
    ids=["tier", "budget-usd", "nan", "unknown-key", "unknown-nested-key", "inf"],
)
def test_an_invalid_arcs_yml_stops_fix_and_test_naming_the_key(
    text: str,
    message: str,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    engine: list[Any],
    no_runner: list[str],
) -> None:
    repo = make_repo({**SOURCE, ".arcs.yml": text})
    code, err = _run(["fix", str(repo), "--tier", "0"], settings, capsys)
    assert code == 2 and engine == [] and _one_error_line(err) == message
    code, err = _run(["test", str(repo)], settings, capsys)
    assert code == 2 and no_runner == [] and _one_error_line(err) == message


def test_an_empty_cmd_of_arcs_test_is_refused(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo, no_runner: list[str]
) -> None:
    repo = make_repo(SOURCE)
    code, err = _run(["test", str(repo), "--cmd", " "], settings, capsys)
    assert code == 2 and no_runner == []
    assert _one_error_line(err).startswith("test: --cmd is empty;")


@pytest.mark.parametrize("flag", ["--budget-usd", "--budget-wall"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_budget_that_is_not_a_finite_number_is_refused(
    flag: str,
    value: str,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    engine: list[Any],
) -> None:
    repo = make_repo(SOURCE)
    code, err = _run(["fix", str(repo), flag, value], settings, capsys)
    assert (
        code == 2
        and engine == []
        and _one_error_line(err) == f"fix: {flag} must be a finite number, got {value}"
    )


def test_a_valid_arcs_yml_tier_and_budget_are_used_and_flags_win(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo, engine: list[Any]
) -> None:
    repo = make_repo({**SOURCE, ".arcs.yml": "tier: 0\nbudget: {usd: 0.5, iterations: 2}\n"})
    with pytest.raises(Ran):
        main(["fix", str(repo)], settings=settings)
    with pytest.raises(Ran):
        main(["fix", str(repo), "--tier", "auto", "--budget-iterations", "3"], settings=settings)
    first, second = engine
    assert (first.tier, first.budget.usd, first.budget.iterations) == ("0", 0.5, 2)
    assert (second.tier, second.budget.usd, second.budget.iterations) == ("auto", 0.5, 3)


def test_a_model_tier_from_arcs_yml_without_a_key_runs_tier_0_and_says_so(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo, engine: list[Any]
) -> None:
    repo = make_repo({**SOURCE, ".arcs.yml": "tier: large\n"})
    with pytest.raises(Ran):
        main(["fix", str(repo)], settings=settings)
    assert engine[0].tier == "0"
    assert "note: .arcs.yml asks for tier large; without ANTHROPIC_API_KEY: tier 0" in capsys.readouterr().err


def test_the_folder_config_may_live_in_dot_github(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo, engine: list[Any]
) -> None:
    repo = make_repo({**SOURCE, ".github/arcs.yml": "tier: 0\nbudget: {iterations: 2}\n"})
    with pytest.raises(Ran):  # the engine is reached
        _run(["fix", str(repo)], settings, capsys)
    assert len(engine) == 1
    assert engine[0].tier == "0" and engine[0].budget.iterations == 2  # read from .github/arcs.yml


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {".github/arcs.yml": "tier: banana\n"},
            ".github/arcs.yml: tier: expected one of 0, small, medium, large, auto, got 'banana'",
        ),
        (
            {".github/arcs.yml": "timeout_s: .inf\n"},
            ".github/arcs.yml: `timeout_s` must be a finite positive number, got inf",
        ),
        (
            {".arcs.yml": "tier: 0\n", ".github/arcs.yml": "tier: 0\n"},
            ".arcs.yml and .github/arcs.yml both configure ARCS; keep one of them (ARCS reads a single file)",
        ),
    ],
    ids=["dot-github-key", "dot-github-runner-key", "both"],
)
def test_fix_and_test_name_the_config_file_they_read(
    files: dict[str, str],
    message: str,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    engine: list[Any],
    no_runner: list[str],
) -> None:
    repo = make_repo({**SOURCE, **files})
    code, err = _run(["fix", str(repo), "--tier", "0"], settings, capsys)
    assert code == 2 and engine == [] and _one_error_line(err) == message
    code, err = _run(["test", str(repo)], settings, capsys)
    assert code == 2 and no_runner == [] and _one_error_line(err) == message
