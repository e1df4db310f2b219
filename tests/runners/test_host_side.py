"""The host side of the sandbox against a hostile repository (issue #22, "Symlinks followed as root"
and "Unbounded reads on the host").

Each attack is what a repository can commit or what its ``setup:`` and tests can do inside the real
bubblewrap sandbox; the assertions are about the host afterwards: a host folder the repository
points ``.arcs/hang`` or ``.arcs/spectrum`` at keeps its mode and files, the workspace root stays
private (the next repair works), a FIFO never blocks the worker (each run sits in a thread with a
join timeout, so a regression fails instead of hanging the suite), and what the host reads back is
bounded in bytes (the calling thread's ``rchar`` from ``/proc/thread-self/io``) and in lines
parsed, whatever the tests wrote.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.sandbox_workbench import SandboxWorkbench
from runners import hang
from runners.base import Runner
from runners.commands import ResolvedCommand
from runners.execute import go_packages, run_in_workspace
from runners.hang import HangProbe
from runners.results import TestRun
from runners.workspace import ephemeral_workspace
from tests.conftest import MakeRepo, git, sandbox_works

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here"),
]

PYTEST = "python -m pytest -q -p no:randomly -p no:cacheprovider"
JOIN_S = 120.0
"""How long a run may take before the test calls the worker blocked (runs take seconds)."""
READ_BOUND = 16 << 20
"""What the host may read in one run (the log's 4 MiB tail, the output, JUnit): far below the attacks."""
LINES_BOUND = (4 << 20) // 3 + 1
"""The most ``{}`` lines a 4 MiB tail of the event log holds (``runners.hang.EVENTS_CAP``)."""

PASSING = "def test_ok():\n    assert True\n"
SPIN = "def spin():\n    n = 1\n    while n > 0:\n        n += 1\n"


def _runner() -> Runner:
    from runners.factory import make_runner

    return make_runner(toolchain_paths=[Path(sys.prefix)])


def _pytest(setup: str | None = None) -> ResolvedCommand:
    return ResolvedCommand(command=PYTEST, source="flag", framework="pytest", setup=setup)


def _with_links(make_repo: MakeRepo, files: dict[str, str], links: dict[str, str]) -> Path:
    """A committed repository holding ``files`` and the symlinks ``links`` (path -> target)."""
    repo = make_repo(files, commit=False)
    for link, target in links.items():
        (repo / link).parent.mkdir(parents=True, exist_ok=True)
        (repo / link).symlink_to(target)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hostile")
    return repo


def _host_folder(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    folder = tmp_path / name
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    for rel, text in files.items():
        (folder / rel).write_text(text)
    return folder


def _state(folder: Path) -> tuple[int, dict[str, str]]:
    return stat.S_IMODE(folder.stat().st_mode), {p.name: p.read_text() for p in sorted(folder.iterdir())}


def _rchar() -> int:
    for line in Path("/proc/thread-self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/thread-self/io")


def _unblock_fifos(under: Path) -> None:
    # A worker blocked in open() of a FIFO (the regression this file guards against) is released by a
    # writer appearing; then the test can fail with its message instead of leaving a stuck thread.
    for path in under.rglob("*"):
        if path.is_fifo():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            os.close(fd)


def _in_thread(work: Callable[[], Any], cleanup: Path) -> tuple[Any, int]:
    """``work()`` in a thread with a join timeout: its result and the bytes its thread read."""
    out: dict[str, Any] = {}

    def target() -> None:
        before = _rchar()
        try:
            out["result"] = work()
        except BaseException as exc:  # reported below
            out["error"] = exc
        out["read"] = _rchar() - before

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(JOIN_S)
    blocked = thread.is_alive()
    if blocked:
        _unblock_fifos(cleanup)
        thread.join(30)
    assert not blocked, "the worker blocked (a FIFO in the workspace was opened for reading)"
    if "error" in out:
        raise out["error"]
    return out["result"], out["read"]


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary folder of this test as ``$TMPDIR``: the default workspace root lives in it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield tmp


# ------------------------------------------------------------------ links committed or planted


def test_a_committed_arcs_hang_link_never_reaches_the_host_folder(
    tmp_path: Path, make_repo: MakeRepo
) -> None:
    host = _host_folder(tmp_path, "host", {"events.jsonl": "host log\n", "keep.txt": "host file\n"})
    before = _state(host)
    repo = _with_links(make_repo, {"test_ok.py": PASSING}, {".arcs/hang": str(host)})
    with SandboxWorkbench(repo, _pytest(), _runner(), workspace_root=tmp_path / "ws") as wb:
        outcome = wb.run_tests(None, timeout_s=120)
    assert _state(host) == before  # not chmodded, nothing written, nothing deleted
    assert outcome.passed == ("test_ok.py::test_ok",), outcome


def test_arcs_hang_linked_to_the_workspace_root_leaves_it_private(
    private_tmp: Path, make_repo: MakeRepo
) -> None:
    # .arcs/hang -> ../../.. is <root>/arcs-ws-<pid>-*/<repo>/.arcs/../../.. = the workspace root.
    repo = _with_links(make_repo, {"test_ok.py": PASSING}, {".arcs/hang": "../../.."})
    from runners.workspace import default_root

    root = default_root()
    before = stat.S_IMODE(root.stat().st_mode)
    for _ in range(2):  # the next repair on this worker works too
        with SandboxWorkbench(repo, _pytest(), _runner()) as wb:
            outcome = wb.run_tests(None, timeout_s=120)
        assert stat.S_IMODE(root.stat().st_mode) == before == 0o700
        assert outcome.passed == ("test_ok.py::test_ok",), outcome
    assert not list(root.glob("*.py"))  # no probe written into the root


def test_a_committed_arcs_spectrum_link_never_reaches_the_host_folder(
    tmp_path: Path, make_repo: MakeRepo
) -> None:
    host = _host_folder(tmp_path, "host", {"spectrum.json": "host data\n", "spectrum-gw0.json.tmp": "x\n"})
    before = _state(host)
    files = {
        "calc.py": "def add(a, b):\n    return a - b\n",
        "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n",
    }
    repo = _with_links(make_repo, files, {".arcs/spectrum": str(host)})
    with SandboxWorkbench(repo, _pytest(), _runner(), workspace_root=tmp_path / "ws") as wb:
        got = wb.spectrum(["test_calc.py::test_add"], suite=True, timeout_s=120)
    assert _state(host) == before  # not chmodded, no plugin written, its spectrum*.json kept
    assert got is not None and (got.failed, got.passed) == (1, 1)
    assert got.lines["calc.py"][2] == (1, 1)


def test_a_link_planted_by_setup_at_run_time_is_not_followed(tmp_path: Path, make_repo: MakeRepo) -> None:
    host = _host_folder(tmp_path, "host", {"events.jsonl": "host log\n"})
    before = _state(host)
    repo = make_repo({"test_ok.py": PASSING})
    # Inside the sandbox the link dangles; on the host it would lead to the host folder.
    setup = f"mkdir -p .arcs && ln -s {host} .arcs/hang && ln -s {host} .arcs/spectrum"
    with ephemeral_workspace(repo, root=tmp_path / "ws") as ws:
        run = run_in_workspace(
            _runner(), ws, _pytest(setup), timeout_s=120, setup_network=False, hang_probe=HangProbe()
        )
    assert _state(host) == before
    assert run.passed_ids == ["test_ok.py::test_ok"], run


# ------------------------------------------------------------------ what the tests leave in the log


def _hanging_repo(make_repo: MakeRepo, attack: str) -> Path:
    """A test that does ``attack`` to the hang probe's event log, then hangs (the probe fires)."""
    test = f"import os\n\n{SPIN}\n\ndef test_attack():\n    log = os.environ['ARCS_HANG_LOG']\n{attack}    spin()\n"
    return make_repo({"test_attack.py": test, "test_a_first.py": PASSING})


def _probed_run(repo: Path, ws_root: Path) -> TestRun:
    with ephemeral_workspace(repo, root=ws_root) as ws:
        return run_in_workspace(
            _runner(), ws, _pytest(), timeout_s=120, hang_probe=HangProbe(probe_s=1.0, ratio=0.0)
        )


def test_a_fifo_in_place_of_the_hang_log_never_blocks_the_worker(tmp_path: Path, make_repo: MakeRepo) -> None:
    attack = "    if os.path.exists(log):\n        os.remove(log)\n    os.mkfifo(log)\n"
    repo = _hanging_repo(make_repo, attack)
    run, _read = _in_thread(lambda: _probed_run(repo, tmp_path / "ws"), cleanup=tmp_path)
    assert run.exit_code != 0  # the run ended and was reported; the sabotaged log is simply not read


def test_a_link_to_a_big_host_file_in_place_of_the_hang_log_is_not_read(
    tmp_path: Path, make_repo: MakeRepo
) -> None:
    big = tmp_path / "host-big.jsonl"
    with big.open("w") as fh:
        fh.write('{"start": "HOST-SECRET", "limit_s": 1, "before_s": 0}\n')
        fh.truncate(64 << 20)  # sparse: 64 MiB to read, no disk used
    attack = f"    if os.path.exists(log):\n        os.remove(log)\n    os.symlink({str(big)!r}, log)\n"
    repo = _hanging_repo(make_repo, attack)
    run, read = _in_thread(lambda: _probed_run(repo, tmp_path / "ws"), cleanup=tmp_path)
    assert "HOST-SECRET" not in repr(run)  # nothing of the host file became a result
    assert read < READ_BOUND, f"the host read {read} bytes"


def test_twenty_megabytes_of_events_cost_the_host_a_bounded_read(
    tmp_path: Path, make_repo: MakeRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []
    real = hang.read_events

    def counting(text: str) -> list[dict[str, object]]:
        parsed.append(text.count("\n"))
        return real(text)

    monkeypatch.setattr(hang, "read_events", counting)
    attack = "    with open(log, 'a') as fh:\n        fh.write('{}\\n' * (7 << 20))\n"  # 21 MiB
    repo = _hanging_repo(make_repo, attack)
    run, read = _in_thread(lambda: _probed_run(repo, tmp_path / "ws"), cleanup=tmp_path)
    # The flood pushed the hung test's start out of the tail the host reads: the run is reported as
    # the failure it is, without a hang attribution (never as a pass).
    assert run.exit_code != 0 and "test_attack.py::test_attack" not in run.passed_ids
    assert parsed and max(parsed) <= LINES_BOUND, parsed  # lines parsed: the tail only
    assert read < READ_BOUND, f"the host read {read} bytes"


# ------------------------------------------------------------------ go.mod


def _go_run(repo: Path, ws_root: Path, command: str) -> TestRun:
    go = ResolvedCommand(command=command, source="flag", framework="go", junit=False)
    with ephemeral_workspace(repo, root=ws_root) as ws:
        return run_in_workspace(_runner(), ws, go, timeout_s=120)


@pytest.mark.parametrize(
    "command",
    [
        "rm -f go.mod && mkfifo go.mod && exit 1",
        "truncate -s 256M go.mod && exit 1",  # sparse: 256 MiB to read
    ],
    ids=["fifo", "huge"],
)
def test_a_go_mod_the_tests_replaced_costs_the_host_a_bounded_read(
    tmp_path: Path, make_repo: MakeRepo, command: str
) -> None:
    repo = make_repo({"go.mod": "module example.com/m\n\ngo 1.21\n", "m.go": "package m\n"})
    run, read = _in_thread(lambda: _go_run(repo, tmp_path / "ws", command), cleanup=tmp_path)
    assert run.exit_code == 1
    assert read < READ_BOUND, f"the host read {read} bytes"


def test_go_packages_reads_only_regular_files_in_the_tree(tmp_path: Path) -> None:
    host = tmp_path / "host.mod"
    host.write_text("module host.example/secret\n")
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    (root / "a" / "go.mod").symlink_to(host)
    (root / "a" / "x.go").write_text("package a\n")
    (root / "b").mkdir()
    with (root / "b" / "go.mod").open("w") as fh:
        fh.write("module example.com/b\n")
        fh.truncate(64 << 20)
    (root / "b" / "y.go").write_text("package b\n")
    files = ["a/go.mod", "a/x.go", "b/go.mod", "b/y.go"]
    got, read = _in_thread(lambda: go_packages(root, files), cleanup=tmp_path)
    assert got == {"example.com/b": "b"}  # the link to a host go.mod is not read
    assert read < READ_BOUND
