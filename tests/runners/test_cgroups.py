"""runners.cgroups against a simulated cgroupfs (v2 and v1 layouts) and, where the host has them, real
v1/v2 hierarchies (the attacker-side tests are in test_sandbox_limits.py).

The simulated tree stands in for the kernel: a new cgroup folder gets the files the kernel would
create, ``cgroup.procs`` of a v2 folder with processes refuses ``subtree_control`` (EBUSY, the "no
internal processes" rule). It checks what ARCS writes where, not what the kernel then does.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

import runners.cgroups as cg
from runners.cgroups import CgroupSpec, detect

V2_FILES = (
    "cgroup.procs",
    "cgroup.controllers",
    "cgroup.subtree_control",
    "cgroup.kill",
    "cpu.max",
    "cpu.stat",
    "memory.max",
    "memory.swap.max",
    "memory.oom.group",
    "memory.events",
    "memory.peak",
    "pids.max",
    "pids.events",
    "pids.peak",
)
V1_FILES = {
    "cpu": ("cgroup.procs", "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.stat"),
    "memory": (
        "cgroup.procs",
        "memory.limit_in_bytes",
        "memory.memsw.limit_in_bytes",
        "memory.oom_control",
        "memory.max_usage_in_bytes",
    ),
    "pids": ("cgroup.procs", "pids.max", "pids.events", "pids.peak"),
}


class FakeKernel:
    """A cgroupfs in a temporary folder: mkdir makes the control files; v2's EBUSY rule."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.busy: set[Path] = set()
        real_write = cg._write

        def mkdir(path: Path) -> None:
            path.mkdir(mode=0o755)
            version_1 = next((c for c in V1_FILES if f"/v1-{c}/" in f"{path}/"), None)
            for name in V1_FILES[version_1] if version_1 else V2_FILES:
                (path / name).write_text("")
            if version_1 is None:
                (path / "cgroup.controllers").write_text("cpu memory pids\n")

        def write(path: Path, value: str) -> None:
            busy = path.parent in self.busy and (path.parent / "cgroup.procs").read_text().strip()
            if path.name == "cgroup.subtree_control" and busy:
                raise OSError(errno.EBUSY, "Device or resource busy")
            if path.name == "cgroup.procs" and value != "0":
                # moving a process: take it out of every other folder
                for procs in self.root.rglob("cgroup.procs"):
                    kept = [p for p in procs.read_text().split() if p != value]
                    procs.write_text("\n".join(kept))
                path.write_text((path.read_text() + "\n" + value).strip())
                return
            real_write(path, value)

        def rmdir(path: Path) -> None:
            if (path / "cgroup.procs").read_text().strip():
                raise OSError(errno.EBUSY, "Device or resource busy")
            for name in path.iterdir():
                if name.is_file():
                    name.unlink()
            path.rmdir()

        monkeypatch.setattr(cg, "_mkdir", mkdir)
        monkeypatch.setattr(cg, "_write", write)
        monkeypatch.setattr(cg, "_rmdir", rmdir)
        self.mkdir = mkdir


def proc_files(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def test_v2_delegation_moves_the_worker_into_a_leaf_and_configures_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = FakeKernel(tmp_path, monkeypatch)
    fs = tmp_path / "cgroup2"
    fs.mkdir()
    service = fs / "system.slice" / "arcs-worker.service"
    service.parent.mkdir()
    kernel.mkdir(service)
    (service / "cgroup.procs").write_text("4242\n4243\n")  # the worker and its helper
    kernel.busy.add(service)
    proc = proc_files(
        tmp_path,
        f"30 23 0:26 / {fs} rw,nosuid - cgroup2 cgroup2 rw\n",
        "0::/system.slice/arcs-worker.service\n",
    )
    found = detect(proc=proc, total_processes=100)
    assert found.reason == ""
    assert [(h.version, h.group, sorted(h.controllers)) for h in found.hierarchies] == [
        (2, service / "arcs-sandboxes", ["cpu", "memory", "pids"])
    ]
    # The "no internal processes" rule: the service's processes went to a leaf first.
    assert (service / "cgroup.procs").read_text().strip() == ""
    assert (service / "arcs-worker" / "cgroup.procs").read_text().split() == ["4242", "4243"]
    assert (service / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"
    assert (service / "arcs-sandboxes" / "pids.max").read_text() == "100"
    # The next worker object of this process (now in the leaf) finds the same group, not a nested one.
    moved = proc_files(
        tmp_path / "later",
        f"30 23 0:26 / {fs} rw - cgroup2 cgroup2 rw\n",
        "0::/system.slice/arcs-worker.service/arcs-worker\n",
    )
    assert [h.group for h in detect(proc=moved).hierarchies] == [service / "arcs-sandboxes"]

    run = found.create(CgroupSpec(cpus=0.5, memory_mb=128, processes=64))
    (folder,) = (p.path for p in run.parts)
    assert folder.parent == service / "arcs-sandboxes"
    assert (folder / "cpu.max").read_text() == "50000 100000"
    assert (folder / "memory.max").read_text() == str(128 << 20)
    assert (folder / "memory.swap.max").read_text() == "0"
    assert (folder / "memory.oom.group").read_text() == "1"
    assert (folder / "pids.max").read_text() == "64"
    argv = run.enter_argv(["bwrap", "--", "true"])
    assert argv[:3] == ["/bin/sh", "-c", cg._ENTER]
    assert argv[4:] == [str(folder / "cgroup.procs"), "--", "bwrap", "--", "true"]

    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n")
    (folder / "pids.events").write_text("max 7\n")
    (folder / "pids.peak").write_text("64\n")
    (folder / "cpu.stat").write_text("usage_usec 900\nnr_periods 10\nnr_throttled 9\nthrottled_usec 450000\n")
    assert run.oom_kills() == 1 and run.fork_refusals() == 7
    usage = run.usage()
    assert usage["pids_peak"] == 64 and usage["cpu_throttled"] == 9 and usage["cpu_throttled_us"] == 450000
    run.remove()
    assert not folder.exists()


def test_v1_hierarchies_nest_under_the_own_cgroup_of_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeKernel(tmp_path, monkeypatch)
    mounts = []
    for n, controller in enumerate(("cpu", "memory", "pids")):
        mount = tmp_path / f"v1-{controller}"
        mount.mkdir()
        own = mount / "job" if controller == "memory" else mount
        if own != mount:
            own.mkdir()
        mounts.append(f"{40 + n} 31 0:{30 + n} / {mount} rw - cgroup cgroup rw,{controller}")
    proc = proc_files(tmp_path, "\n".join(mounts) + "\n", "3:cpu:/\n2:memory:/job\n1:pids:/\n0::/\n")
    found = detect(proc=proc, total_processes=50, group="g")
    assert found.reason == ""
    groups = {h.group: sorted(h.controllers) for h in found.hierarchies}
    assert groups == {
        tmp_path / "v1-cpu" / "g": ["cpu"],
        tmp_path / "v1-memory" / "job" / "g": ["memory"],
        tmp_path / "v1-pids" / "g": ["pids"],
    }
    assert (tmp_path / "v1-pids" / "g" / "pids.max").read_text() == "50"
    run = found.create(CgroupSpec(cpus=2.0, memory_mb=64, processes=8))
    paths = {next(iter(p.controllers)): p.path for p in run.parts}
    assert paths["memory"].parent == tmp_path / "v1-memory" / "job" / "g"
    assert (paths["cpu"] / "cpu.cfs_period_us").read_text() == "100000"
    assert (paths["cpu"] / "cpu.cfs_quota_us").read_text() == "200000"
    assert (paths["memory"] / "memory.limit_in_bytes").read_text() == str(64 << 20)
    assert (paths["memory"] / "memory.memsw.limit_in_bytes").read_text() == str(64 << 20)
    assert (paths["pids"] / "pids.max").read_text() == "8"
    (paths["memory"] / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert run.oom_kills() == 2
    assert run.enter_argv(["x"])[4:] == [
        *(str(paths[c] / "cgroup.procs") for c in ("cpu", "memory", "pids")),
        "--",
        "x",
    ]
    run.remove()
    assert not any(path.exists() for path in paths.values())


def test_dry_run_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = FakeKernel(tmp_path, monkeypatch)
    fs = tmp_path / "cgroup2"
    fs.mkdir()
    kernel.mkdir(fs / "svc")
    (fs / "svc" / "cgroup.procs").write_text("4242\n")
    kernel.busy.add(fs / "svc")
    proc = proc_files(tmp_path, f"30 23 0:26 / {fs} rw - cgroup2 cgroup2 rw\n", "0::/svc\n")
    before = sorted((p, p.read_text()) for p in tmp_path.rglob("*") if p.is_file())
    found = detect(proc=proc, dry_run=True)
    assert found.reason == "" and found.has("pids")
    assert sorted((p, p.read_text()) for p in tmp_path.rglob("*") if p.is_file()) == before
    assert not (fs / "svc" / "arcs-sandboxes").exists()


def test_no_writable_cgroup_is_a_reason_not_an_error(tmp_path: Path) -> None:
    proc = proc_files(tmp_path, "", "0::/\n")
    found = detect(proc=proc)
    assert found.hierarchies == () and "no writable cgroup offers cpu, memory, pids" in found.reason
    named = detect(proc=proc, parent=tmp_path / "delegated")
    assert "has no cgroup v2" in named.reason
    with pytest.raises(cg.CgroupError):
        cg.Cgroups((cg.Hierarchy(2, tmp_path / "absent" / "g", frozenset({"pids"})),)).create(CgroupSpec())


def test_a_container_mount_root_maps_the_own_path(tmp_path: Path) -> None:
    mount = cg._Mount(2, Path("/sys/fs/cgroup"), "/docker/abc", frozenset())
    assert mount.folder_of("/docker/abc/worker") == Path("/sys/fs/cgroup/worker")
    assert mount.folder_of("/docker/abc") == Path("/sys/fs/cgroup")
    assert mount.folder_of("/elsewhere") is None


def test_stale_run_cgroups_of_dead_workers_are_swept(tmp_path: Path) -> None:
    group = tmp_path / "arcs-sandboxes"
    dead, alive, busy = group / "run-999999999-1-aa", group / "run-1-1-bb", group / "run-999999998-1-cc"
    for folder in (dead, alive, busy):
        folder.mkdir(parents=True)
    (busy / "still-here").write_text("")  # rmdir refuses: a cgroup with processes
    found = cg.Cgroups((cg.Hierarchy(1, group, frozenset({"pids"})),))
    assert found.sweep_stale() == 1
    assert not dead.exists() and alive.exists() and busy.exists()
