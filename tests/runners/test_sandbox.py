"""LocalSandbox and UnsafeLocalRunner behaviour, plus the pure pieces of runners.limits."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bot.errors import ArcsError, UsageError
from runners.base import Runner
from runners.factory import make_runner
from runners.limits import (
    Limits,
    _Capture,
    limited_shell_argv,
    limits_prologue,
    looks_out_of_memory,
    signal_exit_code,
)
from runners.sandbox import (
    SANDBOX_HOME,
    SANDBOX_WORKDIR,
    LocalSandbox,
    SandboxUnavailable,
    UnsafeLocalRunner,
    collect_artifacts,
    sandbox_env,
)


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    box = LocalSandbox()
    box.check()
    return box


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def processes_with(marker: str, *, settle_s: float = 5.0) -> list[int]:
    """Host pids whose command line contains ``marker``, after giving SIGKILLed ones time to go."""
    deadline = time.monotonic() + settle_s
    while True:
        found = _scan(marker)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _scan(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


# --------------------------------------------------------------------------- pure pieces


def test_limits_validate() -> None:
    with pytest.raises(UsageError, match="time limit"):
        Limits(timeout_s=0, memory_mb=512)
    with pytest.raises(UsageError, match="memory limit"):
        Limits(timeout_s=1, memory_mb=1)
    with pytest.raises(UsageError, match="process limit"):
        Limits(timeout_s=1, memory_mb=512, max_processes=1)
    with pytest.raises(UsageError, match="file size"):
        Limits(timeout_s=1, memory_mb=512, max_file_mb=0)
    with pytest.raises(UsageError, match="output"):
        Limits(timeout_s=1, memory_mb=512, output_cap_bytes=10, output_kill_bytes=5)


def test_limits_prologue_sets_every_limit() -> None:
    text = limits_prologue(Limits(timeout_s=5, memory_mb=300, max_processes=40, max_file_mb=2))
    assert "ulimit -d 307200" in text
    assert "ulimit -f 4096" in text
    assert "ulimit -u 40 || ulimit -p 40" in text
    assert "ulimit -c 0" in text
    assert "exit 125" in text
    assert "ulimit -u" not in limits_prologue(Limits(timeout_s=5, memory_mb=300, max_processes=None))


@pytest.mark.parametrize("real_shell", ["/bin/sh", "/bin/bash", "/bin/dash", "/bin/busybox"])
def test_limited_shell_argv_applies_limits_in_real_shells(real_shell: str, tmp_path: Path) -> None:
    if not Path(real_shell).exists():
        pytest.skip(f"{real_shell} is not installed")
    # Whatever /bin/sh is on a machine, it runs under the name `sh` (bash then follows POSIX units).
    shell = str(tmp_path / "sh")
    Path(shell).symlink_to(real_shell)
    limits = Limits(timeout_s=5, memory_mb=300, max_processes=4000, max_file_mb=2)
    probe = "import resource as r; print(*(r.getrlimit(x)[1] for x in (r.RLIMIT_DATA, r.RLIMIT_FSIZE, r.RLIMIT_NPROC)))"
    command = f"{sys.executable} -c '{probe}'; echo \"$0|$1\""
    done = subprocess.run(
        limited_shell_argv(command, limits, shell=shell), capture_output=True, text=True, check=True
    )
    numbers, args = done.stdout.splitlines()
    assert numbers.split() == [str(300 << 20), str(2 << 20), "4000"]
    assert args == f"{shell}|"  # the command sees an ordinary `sh -c` ($0 the shell, no arguments)


def test_signal_exit_codes() -> None:
    assert signal_exit_code(137) == -9
    assert signal_exit_code(139) == -11
    assert signal_exit_code(128) == 128
    assert signal_exit_code(1) == 1
    assert signal_exit_code(-9) == -9


def test_out_of_memory_diagnosis() -> None:
    assert looks_out_of_memory(1, b"Traceback ...\nMemoryError\n")
    assert looks_out_of_memory(134, b"terminate called after throwing an instance of 'std::bad_alloc'")
    assert looks_out_of_memory(2, b"fatal error: runtime: out of memory\n\ngoroutine 1 [running]:\n")
    assert not looks_out_of_memory(0, b"MemoryError")
    assert not looks_out_of_memory(1, b"AssertionError: 1 != 2")
    # A report that mentions MemoryError and then goes on is a test failure, not a kill.
    report = b"E   MemoryError\n" + b"".join(b"line %d\n" % i for i in range(5)) + b"1 failed\n"
    assert not looks_out_of_memory(1, report)


def test_capture_keeps_head_and_marks_truncation() -> None:
    capture = _Capture(10)
    capture.feed(b"0123456789abc")
    capture.feed(b"def")
    assert capture.truncated
    assert capture.text() == "0123456789\n[... truncated 6 bytes ...]\n"
    small = _Capture(10)
    small.feed(b"ok")
    assert not small.truncated and small.text() == "ok"


def test_sandbox_env_is_built_from_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    env = sandbox_env("/usr/bin", {"FOO": "bar"})
    assert env["FOO"] == "bar" and env["HOME"] == SANDBOX_HOME and env["PATH"] == "/usr/bin"
    assert "GITHUB_TOKEN" not in env
    with pytest.raises(UsageError):
        sandbox_env("/usr/bin", {"A=B": "x"})


def test_collect_artifacts_stays_inside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "reports").mkdir(parents=True)
    (ws / "reports" / "junit.xml").write_text("<testsuite/>")
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    (ws / "escape").symlink_to(secret)
    (ws / "inside").symlink_to(ws / "reports" / "junit.xml")
    os.mkfifo(ws / "fifo.xml")  # never waited for
    names = ("reports/junit.xml", "escape", "inside", "../secret.txt", str(secret), "missing.xml", "reports")
    # No link is followed, not even one that stays inside (the host never follows the repository's links).
    assert collect_artifacts(ws, (*names, "fifo.xml")) == {"reports/junit.xml": "<testsuite/>"}


# --------------------------------------------------------------------------- argv (no bwrap needed)


def fake_box(**kwargs: object) -> LocalSandbox:
    return LocalSandbox(bwrap="/bin/true", **kwargs)  # type: ignore[arg-type]


def argv_for(box: LocalSandbox, *, mode: str, network: bool) -> list[str]:
    limits = Limits(timeout_s=5, memory_mb=256)
    return box.bwrap_argv(
        Path("/srv/ws"),
        "pytest -q",
        mode=mode,  # type: ignore[arg-type]
        uid=2_000_000_001,
        limits=limits,
        network=network,
        env=sandbox_env(box.path, {"CI": "1"}),
        data_fds={"/etc/passwd": 7},
        etc_dir=Path("/stage/etc"),
    )


def pairs(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


@pytest.mark.parametrize("mode", ["setpriv", "userns"])
def test_argv_isolates_by_default(mode: str) -> None:
    box = fake_box()
    box.setpriv = "/usr/bin/setpriv"
    argv = argv_for(box, mode=mode, network=False)
    assert "--unshare-net" in argv or "--unshare-all" in argv
    assert "--share-net" not in argv
    assert {
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--unshare-pid" if mode == "setpriv" else "--unshare-all",
    } <= set(argv)
    assert "/" not in pairs(argv, "--bind") and "/" not in pairs(argv, "--ro-bind")
    assert str(Path.home()) not in pairs(argv, "--ro-bind")
    assert pairs(argv, "--bind") == ["/srv/ws"]
    assert argv[argv.index("--bind") + 2] == SANDBOX_WORKDIR
    assert pairs(argv, "--chdir") == [SANDBOX_WORKDIR]
    assert pairs(argv, "--remount-ro") == ["/"]
    assert "/etc/resolv.conf" not in pairs(argv, "--ro-bind")
    assert not any(p.startswith("/etc") for p in pairs(argv, "--ro-bind"))  # only the staged copy
    assert argv[argv.index("/stage/etc") + 1] == "/etc"
    assert argv[argv.index("--ro-bind-data") + 1 : argv.index("--ro-bind-data") + 3] == ["7", "/etc/passwd"]
    assert str(Path(sys.base_prefix)) in pairs(argv, "--ro-bind") or Path(sys.base_prefix).is_relative_to(
        "/usr"
    )
    assert argv[-2:] == ["arcs-sandbox", "pytest -q"]
    if mode == "setpriv":
        tail = argv[argv.index("/usr/bin/setpriv") :]
        assert tail[:5] == ["/usr/bin/setpriv", "--reuid", "2000000001", "--regid", "2000000001"]
        assert "--no-new-privs" in tail and "--clear-groups" in tail
    else:
        assert pairs(argv, "--uid") == ["2000000001"]


@pytest.mark.parametrize("mode", ["setpriv", "userns"])
def test_argv_setup_phase_may_use_the_network(mode: str) -> None:
    box = fake_box()
    box.setpriv = "/usr/bin/setpriv"
    argv = argv_for(box, mode=mode, network=True)
    assert "--unshare-net" not in argv
    if mode == "userns":
        assert "--share-net" in argv
    if Path("/etc/resolv.conf").exists():
        assert "/etc/resolv.conf" in pairs(argv, "--ro-bind")


def test_argv_binds_the_private_folder_only_when_given() -> None:
    box = fake_box()
    box.setpriv = "/usr/bin/setpriv"
    limits = Limits(timeout_s=5, memory_mb=256)
    common = {"mode": "setpriv", "uid": 2_000_000_001, "limits": limits, "network": False, "data_fds": {}}
    env = sandbox_env(box.path, {})
    with_private = box.bwrap_argv(
        Path("/srv/ws"), "true", env=env, etc_dir=Path("/stage/etc"), private=Path("/srv/p"), **common
    )  # type: ignore[arg-type]
    i = with_private.index("/srv/p")
    assert with_private[i - 1 : i + 2] == ["--bind", "/srv/p", "/run/arcs"]  # read-write
    without = box.bwrap_argv(Path("/srv/ws"), "true", env=env, etc_dir=Path("/stage/etc"), **common)  # type: ignore[arg-type]
    assert "/srv/p" not in without and "/run/arcs" not in without


def test_staged_etc_holds_only_the_allow_list() -> None:
    box = fake_box()
    etc = box.etc_dir()
    assert etc.name == "etc" and box.etc_dir() == etc  # built once
    names = {p.relative_to(etc).as_posix() for p in etc.rglob("*")}
    assert (etc / "resolv.conf").read_bytes() == b""  # the host's is bound over it only with network
    assert "sandbox:x:1000:1000:" in (etc / "passwd").read_text()
    assert "localhost" in (etc / "hosts").read_text()
    assert Path("/etc/passwd").read_text() != (etc / "passwd").read_text()
    for secret in (
        "shadow",
        "gshadow",
        "gitconfig",
        "pip.conf",
        "npmrc",
        "ssl/private",
        "sudoers",
        "environment",
    ):
        assert secret not in names
    if Path("/etc/ssl/certs").is_dir():
        assert "ssl/certs" in names
    assert fake_box().etc_dir() == etc  # shared by the sandboxes of a process


def test_staged_etc_goes_with_the_process(tmp_path: Path) -> None:
    script = "from runners.sandbox import LocalSandbox; print(LocalSandbox(bwrap='/bin/true').etc_dir())"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    etc = Path(done.stdout.strip())
    assert etc.name == "etc" and f"arcs-ws-{os.getpid()}" not in str(etc)
    assert not etc.parent.exists()


def test_toolchain_paths_lead_path_and_are_bound(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    (tool / "bin").mkdir(parents=True)
    box = fake_box(toolchain_paths=[tool])
    assert box.path.startswith(f"{tool}/bin:")
    assert tool in box.toolchain_paths
    with pytest.raises(UsageError):
        fake_box(toolchain_paths=[Path("/")])
    with pytest.raises(UsageError):
        fake_box(toolchain_paths=[tmp_path / "missing"])


def test_missing_bubblewrap_is_a_clear_error() -> None:
    with pytest.raises(SandboxUnavailable) as info:
        LocalSandbox(bwrap="/nonexistent/bwrap")
    assert isinstance(info.value, ArcsError) and info.value.exit_code == 2
    assert "--unsafe-no-sandbox" in info.value.message and "\n" not in info.value.message


def test_unusable_bubblewrap_is_a_clear_error() -> None:
    box = LocalSandbox(bwrap="/bin/false", privilege="userns")
    with pytest.raises(SandboxUnavailable, match="cannot create a sandbox"):
        box.check()


# --------------------------------------------------------------------------- real sandbox


@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
class TestLocalSandbox:
    def test_is_a_runner(self, sandbox: LocalSandbox) -> None:
        assert isinstance(sandbox, Runner)

    def test_runs_in_the_workspace(self, sandbox: LocalSandbox, ws: Path) -> None:
        (ws / "input.txt").write_text("hello from the host\n")
        result = sandbox.run(
            ws, "pwd; cat input.txt; echo made > result.txt; echo oops >&2; exit 3", timeout_s=30
        )
        assert result.exit_code == 3 and not result.ok and result.killed_by is None
        assert result.stdout == f"{SANDBOX_WORKDIR}\nhello from the host\n"
        assert result.stderr == "oops\n"
        assert (ws / "result.txt").read_text() == "made\n"
        assert result.duration_s > 0

    def test_ok_run(self, sandbox: LocalSandbox, ws: Path) -> None:
        result = sandbox.run(ws, "true", timeout_s=30)
        assert result.ok and result.exit_code == 0 and not result.truncated

    def test_environment_is_explicit(
        self, sandbox: LocalSandbox, ws: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HOST_ONLY_VARIABLE", "leaked")
        result = sandbox.run(ws, "env", timeout_s=30, env={"FOO": "bar baz"})
        env = dict(line.split("=", 1) for line in result.stdout.splitlines())
        assert env["FOO"] == "bar baz"
        assert env["HOME"] == SANDBOX_HOME
        assert "HOST_ONLY_VARIABLE" not in env
        assert set(env) <= {"FOO", "HOME", "PATH", "TMPDIR", "LANG", "USER", "LOGNAME", "SHELL", "PWD", "_"}

    def test_runs_as_an_unprivileged_user(self, sandbox: LocalSandbox, ws: Path) -> None:
        result = sandbox.run(ws, "id -u; id -un; grep CapEff /proc/self/status; ls /home", timeout_s=30)
        uid, name, caps, home = result.stdout.splitlines()
        assert uid != "0" and name == "sandbox"
        assert caps.split()[1] == "0000000000000000"
        assert home == "sandbox"

    def test_home_and_tmp_are_private_and_writable(self, sandbox: LocalSandbox, ws: Path) -> None:
        marker = uuid.uuid4().hex
        result = sandbox.run(
            ws, f"touch $HOME/{marker} /tmp/{marker} /dev/shm/{marker} && ls $HOME /tmp", timeout_s=30
        )
        assert result.ok, result.stderr
        assert result.stdout.count(marker) == 2
        assert not Path(f"/tmp/{marker}").exists() and not Path(f"/dev/shm/{marker}").exists()

    def test_python_in_use_is_available(self, sandbox: LocalSandbox, ws: Path) -> None:
        result = sandbox.run(
            ws, "python3 -c 'import sys, ssl, sqlite3; print(sys.version_info[:2])'", timeout_s=30
        )
        assert result.ok, result.stderr
        assert result.stdout.strip() == str(sys.version_info[:2])

    def test_timeout_kills(self, sandbox: LocalSandbox, ws: Path) -> None:
        result = sandbox.run(ws, "echo started; sleep 30", timeout_s=0.5)
        assert result.killed_by == "timeout"
        assert result.exit_code == -9
        assert result.stdout == "started\n"

    def test_exit_by_signal_is_negative(self, sandbox: LocalSandbox, ws: Path) -> None:
        result = sandbox.run(ws, "kill -9 $$", timeout_s=30)
        assert result.exit_code == -9 and result.killed_by is None

    def test_output_is_capped_with_a_marker(self, ws: Path) -> None:
        box = LocalSandbox(output_cap_bytes=1000, output_kill_bytes=1 << 20)
        result = box.run(ws, "head -c 5000 /dev/zero | tr '\\0' a; echo done >&2", timeout_s=30)
        assert result.truncated and result.ok
        assert result.stdout.startswith("a" * 1000)
        assert result.stdout.endswith("\n[... truncated 4000 bytes ...]\n")
        assert result.stderr == "done\n"

    def test_runaway_output_is_killed(self, ws: Path) -> None:
        box = LocalSandbox(output_cap_bytes=1000, output_kill_bytes=200_000)
        result = box.run(ws, "yes", timeout_s=30)
        assert result.killed_by == "output" and result.truncated and result.exit_code == -9

    def test_memory_limit(self, sandbox: LocalSandbox, ws: Path) -> None:
        result = sandbox.run(ws, "python3 -c 'x = bytearray(1 << 30)'", timeout_s=30, memory_mb=256)
        assert result.killed_by == "memory"
        assert "MemoryError" in result.stderr
        ok = sandbox.run(ws, "python3 -c 'x = bytearray(64 << 20)'", timeout_s=30, memory_mb=256)
        assert ok.ok, ok.stderr

    def test_file_size_limit(self, ws: Path) -> None:
        box = LocalSandbox(max_file_mb=1)
        result = box.run(ws, "head -c 3000000 /dev/zero > big.bin", timeout_s=30)
        assert not result.ok
        assert (ws / "big.bin").stat().st_size <= 1 << 20

    def test_collects_artifacts_but_not_escapes(self, sandbox: LocalSandbox, ws: Path) -> None:
        command = "mkdir -p out && echo '<testsuite/>' > out/junit.xml && ln -s /etc/hostname link.txt"
        result = sandbox.run(ws, command, timeout_s=30, collect=("out/junit.xml", "link.txt", "absent.xml"))
        assert result.ok, result.stderr
        assert result.artifacts == {"out/junit.xml": "<testsuite/>\n"}

    def test_workspace_ownership_is_restored(self, sandbox: LocalSandbox, ws: Path) -> None:
        owner = ws.stat()
        (ws / "existing.txt").write_text("x")
        result = sandbox.run(ws, "mkdir -p new/deeper && touch new/deeper/file existing.txt", timeout_s=30)
        assert result.ok, result.stderr
        for path in [ws, *ws.rglob("*")]:
            info = path.lstat()
            assert (info.st_uid, info.st_gid) == (owner.st_uid, owner.st_gid), path

    def test_sandbox_cannot_write_outside(self, sandbox: LocalSandbox, ws: Path) -> None:
        result = sandbox.run(ws, "touch /usr/x || touch /x || echo blocked", timeout_s=30)
        assert result.stdout == "blocked\n"

    def test_parallel_runs_are_independent(self, sandbox: LocalSandbox, tmp_path: Path) -> None:
        spaces = []
        for i in range(4):
            path = tmp_path / f"cand{i}"
            path.mkdir()
            (path / "id.txt").write_text(str(i))
            spaces.append(path)
        command = "sleep 0.2; cat id.txt; echo; echo seen > seen.txt; ls /proc | grep -c '^[0-9]'"
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(lambda p: sandbox.run(p, command, timeout_s=30), spaces))
        for i, (path, result) in enumerate(zip(spaces, results, strict=True)):
            assert result.ok, result.stderr
            lines = result.stdout.splitlines()
            assert lines[0] == str(i)
            assert int(lines[1]) <= 6  # only this sandbox's own processes are visible
            assert (path / "seen.txt").exists()

    def test_toolchain_path_is_usable_and_read_only(self, tmp_path: Path, ws: Path) -> None:
        tool = tmp_path / "tool"
        (tool / "bin").mkdir(parents=True)
        script = tool / "bin" / "arcs-hello"
        script.write_text("#!/bin/sh\necho hello from the toolchain\n")
        script.chmod(0o755)
        box = LocalSandbox(toolchain_paths=[tool])
        result = box.run(ws, f"arcs-hello; touch {tool}/x || echo read-only", timeout_s=30)
        assert result.stdout == "hello from the toolchain\nread-only\n"
        assert not (tool / "x").exists()

    def test_userns_mode(self, ws: Path) -> None:
        box = LocalSandbox(privilege="userns")
        result = box.run(ws, "id -u; id -un; echo hi > f.txt; cat f.txt", timeout_s=30)
        assert result.ok, result.stderr
        assert result.stdout == "1000\nsandbox\nhi\n"

    @pytest.mark.parametrize("privilege", ["auto", "userns"])
    def test_network_only_when_asked(self, privilege: str, ws: Path) -> None:
        # A server on the host's loopback: the unsafe `host` setup mode reaches it in the setup
        # phase (network=True), never in the test phase; the default setup policy does not reach
        # it at all (tests/runners/test_setup_isolation.py has the full set of probes).
        from runners.egress import EgressPolicy

        box = LocalSandbox(privilege=privilege, setup_network=EgressPolicy(mode="host"))  # type: ignore[arg-type]
        with socket.create_server(("127.0.0.1", 0)) as server:
            port = server.getsockname()[1]
            probe = (
                f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\""
            )
            assert box.run(ws, probe, timeout_s=30, network=True).ok
            offline = box.run(ws, probe, timeout_s=30)
            default = LocalSandbox(privilege=privilege).run(ws, probe, timeout_s=30, network=True)  # type: ignore[arg-type]
        assert not offline.ok and "ConnectionRefusedError" in offline.stderr
        assert not default.ok and "ConnectionRefusedError" in default.stderr

    def test_check_and_make_runner(self) -> None:
        runner = make_runner()
        assert isinstance(runner, LocalSandbox)
        assert runner.mode in ("setpriv", "userns")


# --------------------------------------------------------------------------- unsafe runner


def test_unsafe_runner_announces_itself(capsys: pytest.CaptureFixture[str]) -> None:
    runner = make_runner(unsafe_no_sandbox=True)
    assert isinstance(runner, UnsafeLocalRunner) and isinstance(runner, Runner)
    assert "WARNING: --unsafe-no-sandbox" in capsys.readouterr().err
    UnsafeLocalRunner()
    assert "WITHOUT a sandbox" in capsys.readouterr().err


def test_unsafe_runner_runs_with_a_minimal_env(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOST_ONLY_VARIABLE", "leaked")
    runner = UnsafeLocalRunner()
    result = runner.run(
        ws, "echo out; echo err >&2; env; echo x > f.txt; exit 4", timeout_s=30, env={"A": "1"}
    )
    assert result.exit_code == 4 and result.stdout.startswith("out\n") and result.stderr == "err\n"
    assert "A=1" in result.stdout and "HOST_ONLY_VARIABLE" not in result.stdout
    assert (ws / "f.txt").exists()


def test_unsafe_runner_kills_the_process_group(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = f"arcs-marker-{uuid.uuid4().hex}"
    runner = UnsafeLocalRunner()
    sleeper = f"{sys.executable} -c 'import time; time.sleep(60)' {marker}"
    result = runner.run(ws, f"{sleeper} & {sleeper}", timeout_s=0.5)
    assert result.killed_by == "timeout" and result.exit_code == -9
    assert processes_with(marker) == []
    # A background job left by a command that exits normally is reaped as well.
    result = runner.run(ws, f"{sleeper} & echo done", timeout_s=30)
    assert result.ok and result.stdout == "done\n"
    assert processes_with(marker) == []
