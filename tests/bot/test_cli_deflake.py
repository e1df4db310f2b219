"""``arcs deflake``: usage errors, and a real sandboxed measurement naming a polluting test."""

from __future__ import annotations

import json

import pytest

from bot.cli import main
from bot.settings import Settings
from tests.conftest import MakeRepo, sandbox_works


def test_deflake_needs_a_node_id_and_sane_runs(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo
) -> None:
    repo = make_repo({"tests/test_a.py": "def test_a():\n    pass\n"})
    assert main(["deflake", str(repo), "--test", "test_a"], settings=settings) == 2
    assert (
        main(["deflake", str(repo), "--test", "tests/test_a.py::test_a", "--runs", "1"], settings=settings)
        == 2
    )
    assert "--runs" in capsys.readouterr().err


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_deflake_names_the_polluting_test(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo
) -> None:
    repo = make_repo(
        {
            "pytest.ini": "[pytest]\n",
            "tests/test_a.py": (
                "STATE = []\n\n\ndef test_setter():\n    STATE.append(1)\n\n\n"
                "def test_victim():\n    assert STATE == []\n\n\ndef test_other():\n    pass\n"
            ),
        }
    )
    code = main(
        [
            "deflake",
            str(repo),
            "--test",
            "tests/test_a.py::test_victim",
            "--runs",
            "6",
            "--json",
            "--timeout",
            "120",
        ],
        settings=settings,
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0, data
    assert data["cause"] == "order-dependence" and data["polluter"] == "tests/test_a.py::test_setter"
    assert data["runs"] == 6 and 0 < data["failures"] < 6
    assert sorted(data["neighbours"]) == ["tests/test_a.py::test_other", "tests/test_a.py::test_setter"]
    assert "not proposed" in data["fix"]
