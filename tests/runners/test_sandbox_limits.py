"""Per-run limits from the attacker's side: the hostile command runs inside LocalSandbox.

Each test is what a repository's tests or ``setup:`` could do to the host (fill its disk, fork
without end, eat its memory, spin on every core) and checks what stopped it from the kernel's own
counters (the run's cgroup: ``pids.peak``, ``memory.oom_control``/``memory.events``, ``cpu.stat``),
never from timings. Small limits keep it cheap: a 64 MiB disk quota, 64 processes, 128 MiB.

Tests that need a cgroup controller skip, naming the reason ``arcs doctor``'s ``limits`` line
gives, on hosts that offer none.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runners.base import Execution
from runners.cgroups import Cgroups
from runners.commands import ResolvedCommand
from runners.execute import run_tests
from runners.limits import SandboxLimits
from runners.results import parse_output
from runners.sandbox import LocalSandbox
from runners.uids import UidLeases, uid_leases

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
]

MiB = 1 << 20


def remove_groups(found: Cgroups) -> None:
    """Remove a test's shared cgroup folders (a memory cgroup can stay busy for a moment after its runs)."""
    for hierarchy in found.hierarchies:
        for _ in range(50):
            try:
                hierarchy.group.rmdir()
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
            else:
                break


@pytest.fixture(scope="module")
def group() -> str:
    """A cgroup group of this module's own (removed afterwards), so that runs elsewhere never count."""
    return f"arcs-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def make_box(group: str) -> Iterator[Callable[..., LocalSandbox]]:
    made: dict[tuple[object, ...], LocalSandbox] = {}

    def make(**overrides: object) -> LocalSandbox:
        values: dict[str, object] = {
            "disk_mb": 64,
            "cpus": None,
            "memory_mb": 128,
            "processes": 64,
            "total_processes": 512,
            "cgroup_group": group,
            **overrides,
        }
        key = tuple(sorted(values.items(), key=lambda kv: kv[0]))
        if key not in made:
            box = LocalSandbox(limits=SandboxLimits(**values))  # type: ignore[arg-type]
            box.check()
            made[key] = box
        return made[key]

    yield make
    for box in made.values():
        remove_groups(box.enforcer.cgroups)


def needs(box: LocalSandbox, controller: str) -> Cgroups:
    found = box.enforcer.cgroups
    if not found.has(controller):  # type: ignore[arg-type]
        pytest.skip(f"no writable {controller} cgroup on this host ({found.reason})")
    return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def sizes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in folder.iterdir()}


# --------------------------------------------------------------------------- disk


def test_three_100mb_writes_stop_at_the_64mib_quota(make_box: Callable[..., LocalSandbox], ws: Path) -> None:
    # The issue's `head -c 900M` x3, scaled down. The pauses give a loaded CI machine's watcher a
    # chance between files; the first file alone is past the quota.
    command = "; ".join(f"head -c 100M /dev/zero > f{i}; sleep 2" for i in (1, 2, 3))
    done = make_box().run(ws, command, timeout_s=60)
    assert done.killed_by == "disk", (done.exit_code, done.stderr)
    assert done.exit_code == -9
    assert done.limit.startswith("stopped: the workspace and its temp space reached the 64 MiB disk quota")
    assert done.usage["disk_peak_bytes"] >= 64 * MiB
    written = sizes(ws)
    assert "f3" not in written and sum(written.values()) < 200 * MiB, written


def test_writes_into_the_private_probe_folder_count_against_the_quota(
    make_box: Callable[..., LocalSandbox], ws: Path, tmp_path: Path
) -> None:
    # ARCS's private folder (the hang probe's log, the tracer's output) is a host folder the run
    # may write at $ARCS_PRIVATE: filling it is filling the host's disk too.
    private = tmp_path / "private"
    private.mkdir(mode=0o777)
    private.chmod(0o777)
    command = "; ".join(f'head -c 100M /dev/zero > "$ARCS_PRIVATE/f{i}"; sleep 2' for i in (1, 2, 3))
    done = make_box().run(ws, command, timeout_s=60, private=private)
    assert done.killed_by == "disk", (done.exit_code, done.stderr)
    written = sizes(private)
    assert "f3" not in written and sum(written.values()) < 200 * MiB, written


def test_temp_space_counts_and_a_full_tmp_is_the_disk_limit(
    make_box: Callable[..., LocalSandbox], ws: Path
) -> None:
    # /tmp is a tmpfs no larger than the quota: the write fails with ENOSPC, which is the disk
    # limit, not a test failure.
    done = make_box().run(ws, "head -c 100M /dev/zero > /tmp/big; echo rc=$?; sleep 5", timeout_s=60)
    assert done.killed_by == "disk", (done.exit_code, done.stderr)
    assert "/tmp" in done.limit and "64 MiB" in done.limit
    assert done.usage["disk_temp_bytes"] >= 60 * MiB


def test_a_deleted_file_held_open_still_counts(make_box: Callable[..., LocalSandbox], ws: Path) -> None:
    # Unlinked but open: no walk of the workspace sees it, /proc/PID/fd does.
    command = (
        "exec 3> hidden; rm hidden; head -c 30M /dev/zero >&3; sleep 1; head -c 50M /dev/zero >&3; sleep 10"
    )
    done = make_box().run(ws, command, timeout_s=60)
    assert done.killed_by == "disk", (done.exit_code, done.stderr)
    assert sizes(ws) == {}


def test_growth_below_the_quota_is_not_stopped(make_box: Callable[..., LocalSandbox], ws: Path) -> None:
    (ws / "big-before").write_bytes(b"x" * (80 * MiB))  # counts as the starting point, not growth
    done = make_box().run(ws, "head -c 20M /dev/zero > f1 && head -c 10M /dev/zero > /tmp/t", timeout_s=60)
    assert done.ok, (done.killed_by, done.limit, done.stderr)
    assert done.limit == "" and 20 * MiB <= done.usage["disk_peak_bytes"] < 64 * MiB


def test_the_verdict_line_reaches_the_test_result() -> None:
    line = "stopped: the workspace and its temp space reached the 2048 MiB disk quota (2051 MiB written)"
    run = parse_output(Execution("pytest", -9, "", "", 3.0, killed_by="disk", limit=line), None)
    assert [(e.type, e.message) for e in run.errors] == [("disk", line)]


# --------------------------------------------------------------------------- processes


class Recording:
    """A Runner that keeps every Execution of the real sandbox it wraps."""

    def __init__(self, box: LocalSandbox) -> None:
        self.box = box
        self.name = box.name
        self.runs: list[Execution] = []

    def run(self, workspace: Path, command: str, **kwargs: object) -> Execution:
        done = self.box.run(workspace, command, **kwargs)  # type: ignore[arg-type]
        self.runs.append(done)
        return done


FORK_BOMB = (
    "python3 -c 'import os, time\nwhile True:\n    try: os.fork()\n    except OSError: time.sleep(0.01)'"
)


def test_a_fork_bomb_in_setup_is_held_by_the_pids_cgroup(
    make_box: Callable[..., LocalSandbox], make_repo: Callable[..., Path]
) -> None:
    box = make_box()
    needs(box, "pids")
    repo = make_repo({"test_ok.py": "def test_ok():\n    pass\n"})
    runner = Recording(box)
    resolved = ResolvedCommand("python3 -m pytest -q", "explicit", setup=FORK_BOMB)
    run = run_tests(runner, repo, resolved, timeout_s=60, setup_network=False)  # type: ignore[arg-type]
    setup = runner.runs[0]
    assert len(runner.runs) == 1  # the tests never ran
    assert setup.killed_by == "processes" and run.killed_by == "processes"
    # The kernel's own count of the run's processes never passed the limit.
    assert 0 < setup.usage["pids_peak"] <= 64 and setup.usage["pids_refused"] > 0
    assert run.errors[0].message.startswith("setup failed (the sandbox reached its 64-process limit)")


def test_the_process_cap_holds_across_concurrent_sandboxes(tmp_path: Path) -> None:
    # Two sandboxes of two "workers" (separate LocalSandbox objects, one group): each may have 48
    # processes, both together 64.
    group = f"arcs-test-{uuid.uuid4().hex[:8]}"
    limits = SandboxLimits(disk_mb=64, cpus=None, processes=48, total_processes=64, cgroup_group=group)
    boxes = [LocalSandbox(limits=limits) for _ in range(2)]
    found = needs(boxes[0], "pids")
    shared = next(h.group for h in found.hierarchies if "pids" in h.controllers)
    results: list[Execution] = []

    def bomb(box: LocalSandbox, name: str) -> None:
        ws = tmp_path / name
        ws.mkdir()
        results.append(box.run(ws, FORK_BOMB, timeout_s=30))

    threads = [threading.Thread(target=bomb, args=(box, f"ws{i}")) for i, box in enumerate(boxes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        peak = int((shared / "pids.peak").read_text())
    finally:
        remove_groups(found)
    assert [r.killed_by for r in results] == ["processes", "processes"]
    assert all(r.usage["pids_peak"] <= 48 for r in results)
    assert 0 < peak <= 64


def test_uids_are_leased_across_worker_processes(
    make_box: Callable[..., LocalSandbox], tmp_path: Path
) -> None:
    box = make_box()
    if box.mode != "setpriv":
        pytest.skip("per-run uids are setpriv mode's (the host runs as root)")
    state = tmp_path / "uids"
    # Another worker process holds a lease on uid `taken`; this one's random choice lands on it first.
    taken = 2_000_000_000 + 4242
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import random, sys; from pathlib import Path; from runners.uids import UidLeases\n"
            "class R(random.Random):\n    def randrange(self, n): return 4242\n"
            f"u = UidLeases(Path({str(state)!r}), 2_000_000_000, 1 << 24, rng=R()).acquire()\n"
            "print(u, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert holder.stdout is not None and int(holder.stdout.readline()) == taken
        picks = iter([4242, 4243])

        class Rigged(random.Random):
            def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
                return next(picks)

        sandbox = LocalSandbox(limits=box.limits, uid_state_dir=state)
        sandbox.check()
        leases = uid_leases(state)
        leases._rng = Rigged()  # steer this process's choice onto the held uid
        ws = tmp_path / "ws"
        ws.mkdir()
        done = sandbox.run(ws, "id -u", timeout_s=30)
        assert done.ok, done.stderr
        assert int(done.stdout) == taken + 1
        assert leases.held() == frozenset()  # released after the run
    finally:
        holder.kill()
        holder.communicate()
    # The holder died without releasing: the kernel dropped its lock, so the uid is free again.
    assert UidLeases(state, taken, 1).acquire() == taken


# --------------------------------------------------------------------------- memory and CPU


def test_a_memory_hog_is_killed_by_the_cgroup(make_box: Callable[..., LocalSandbox], ws: Path) -> None:
    box = make_box()
    needs(box, "memory")
    # 300 MB touched, under the 512 MiB per-process limit (RLIMIT_DATA) but past the run's 128 MiB.
    hog = 'python3 -c \'b = b"x" * (300 << 20); print("ALLOCATED", len(b))\''
    done = box.run(ws, hog, timeout_s=60, memory_mb=512)
    assert done.killed_by == "memory", (done.exit_code, done.stderr)
    assert "ALLOCATED" not in done.stdout
    assert done.usage["oom_kills"] >= 1
    assert done.limit.startswith("stopped: the sandbox reached its 128 MiB memory limit (the kernel killed")


def test_busy_loops_are_throttled_by_the_cpu_cgroup(make_box: Callable[..., LocalSandbox], ws: Path) -> None:
    box = make_box(cpus=0.05)
    needs(box, "cpu")
    spin = "for i in 1 2 3; do (while :; do :; done) & done; sleep 2; exit 0"
    done = box.run(ws, spin, timeout_s=60)
    assert done.ok, (done.killed_by, done.stderr)
    # Three spinning processes against 5 ms of CPU per 100 ms period: the kernel held them back.
    assert done.usage["cpu_throttled"] > 0 and done.usage["cpu_throttled_us"] > 0


def test_without_cgroups_the_rlimits_still_hold(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fallback: no cgroup at all (as on a host that delegates none); RLIMIT_NPROC holds the bomb.
    box = LocalSandbox(limits=SandboxLimits(disk_mb=64, processes=32, total_processes=None))
    monkeypatch.setattr(box.enforcer, "_find", lambda **_: Cgroups(reason="none here"))
    box.check()
    assert box.limit_mechanisms()["processes"].startswith("32 per sandbox uid (RLIMIT_NPROC")
    assert box.limit_mechanisms()["cpu"] == "none (no cpu cgroup)"
    done = box.run(ws, FORK_BOMB, timeout_s=2)
    assert done.killed_by == "timeout" and done.usage.get("pids_peak") is None, (done.limit, dict(done.usage))
