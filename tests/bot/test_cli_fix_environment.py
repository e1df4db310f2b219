"""``arcs fix`` on the repository's own environment (#23), end to end in the real sandbox at tier 0:
a src layout with the user's own ``PYTHONPATH``, an editable install in the user's venv, and the
``environment`` verdicts of a package that cannot be imported and of a suite that runs no test."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from bot.cli import commands, fix_cmd, main
from bot.settings import Settings
from tests.conftest import MakeRepo, sandbox_works

OFFLINE = ("--no-build-isolation", "-e")
pytestmark = pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")

BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = (
    "from minipkg import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    if fix_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, fix_cmd.register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL", "ARCS_TRACES_DIR", "VIRTUAL_ENV"):
        monkeypatch.delenv(name, raising=False)


def _run(
    settings: Settings, capsys: pytest.CaptureFixture[str], repo: Path, *extra: str
) -> tuple[int, dict[str, object], str]:
    code = main(["fix", str(repo), "--tier", "0", "--no-index", "--json", *extra], settings=settings)
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_the_users_pythonpath_on_a_src_layout_is_repaired_not_an_environment_problem(
    make_repo: MakeRepo, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({"src/minipkg/__init__.py": BUGGY, "tests/test_add.py": TESTS})
    code, data, err = _run(settings, capsys, repo, "--test", "PYTHONPATH=src python -m pytest")
    assert (code, data["verdict"]) == (0, "fixed"), data["reason"]
    assert "src layout → PYTHONPATH=src" in err


def test_a_suite_that_runs_no_test_is_exit_4(
    make_repo: MakeRepo, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({"src/minipkg/__init__.py": BUGGY, "tests/test_add.py": TESTS})
    code, data, _ = _run(settings, capsys, repo, "--test", "python -m pytest -k nomatch")
    assert (code, data["verdict"], data["candidates"]) == (fix_cmd.EXIT_ENVIRONMENT, "environment", 0)
    assert str(data["reason"]).startswith("the test command ran no tests (collected 2 items / 2 deselected")


def test_a_package_under_test_that_cannot_be_imported_is_exit_4(
    make_repo: MakeRepo, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    # A layout nothing declares: only an install would put lib/ on the path.
    repo = make_repo({"lib/minipkg/__init__.py": BUGGY, "tests/test_add.py": TESTS})
    code, data, _ = _run(settings, capsys, repo, "--test", "python -m pytest")
    assert (code, data["verdict"], data["candidates"]) == (fix_cmd.EXIT_ENVIRONMENT, "environment", 0)
    assert "the package under test `minipkg` (lib/minipkg) cannot be imported" in str(data["reason"])


@pytest.mark.slow
def test_an_editable_install_in_the_users_venv_is_used(
    make_repo: MakeRepo, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = make_repo(
        {
            "setup.py": "from setuptools import setup\nsetup(name='minipkg', version='0.1.0', "
            "packages=['minipkg'], package_dir={'': 'python'})\n",
            "python/minipkg/__init__.py": BUGGY,
            "tests/test_add.py": TESTS,
        }
    )
    venv = tmp_path / "user-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "_host.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n", encoding="utf-8")
    done = subprocess.run(
        [
            str(venv / "bin/python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            *OFFLINE,
            str(repo),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"pip could not make an editable install offline here: {done.stderr[-300:]}")
    code, data, err = _run(settings, capsys, repo, "--test", "python -m pytest", "--toolchain", str(venv))
    assert (code, data["verdict"]) == (0, "fixed"), data["reason"]
    assert f"environment: {venv} (Python" in err and "editable install → PYTHONPATH=python" in err


def test_help_says_how_the_environment_is_found(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fix", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for words in (".venv", "VIRTUAL_ENV", "src layout", "editable", "setup:", "environment:"):
        assert words in out, words


def test_the_readme_has_a_worked_example_per_layout() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Your repository's environment", 1)[1].split("\n### ", 1)[0]
    for layout in (
        "venv in the repository",
        "active venv",
        "uv project",
        "poetry",
        "src layout, no install",
        "editable install",
        "`setup: pip install -e .`",
        "`setup: npm ci`",
    ):
        assert f"| {layout}" in section, layout
