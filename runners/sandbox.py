"""Local execution of untrusted commands: a bubblewrap sandbox, and a loud unsafe fallback.

What the sandbox sees (``LocalSandbox``):

* a read-only root built from scratch: ``/usr`` (and the ``/bin``, ``/lib*`` links), an allow-list
  of ``/etc`` entries that runtimes need (loader cache, CA certificates, alternatives; never
  ``shadow``, ``gitconfig``, ``pip.conf`` or ``npmrc``), synthetic ``passwd``/``group``/``hosts``,
  the Python installation in use and the caller's ``toolchain_paths`` (a venv, a JDK), each at its
  host path; nothing else of the host, in particular no ``$HOME``;
* the workspace read-write at ``/workspace`` (the working directory), private tmpfs ``/tmp``,
  ``/dev/shm`` and ``$HOME=/home/sandbox``; a fresh ``/proc`` that shows only the sandbox;
* an environment built from nothing: ``PATH``, ``HOME``, ``LANG``... plus the caller's ``env``;
* no network (only a private loopback); with ``network=True`` (the setup phase) the
  ``setup_network`` policy (:mod:`runners.egress`): by default still its own network namespace,
  whose one way out is an allow-listing proxy for the package registries, reached through a Unix
  socket bound at ``/run/arcs-egress`` and a relay on the sandbox's ``127.0.0.1:3128``; ``none``
  keeps it offline, ``host`` (unsafe) shares the host's network;
* its own pid namespace: when the command exits or is killed, every process it left is killed too.

Limits: wall time (SIGKILL to the whole sandbox), ``RLIMIT_DATA`` (memory per process),
``RLIMIT_FSIZE`` and the size of captured output (:mod:`runners.limits`); per run, through the
host's cgroups where it offers them, CPU time, memory and processes of the whole tree, plus a cap
on the processes of all sandboxes together, and a disk quota on the workspace and temp space
(:mod:`runners.guard`; without cgroups, ``RLIMIT_NPROC`` per sandbox uid).

Two ways to get an unprivileged sandbox user, picked by ``privilege="auto"``:

* ``setpriv`` (host runs as root): bubblewrap runs privileged and the command drops to a fresh,
  unused uid (``setpriv --reuid``, no capabilities, ``no_new_privs``), leased across every worker
  process of the host (:mod:`runners.uids`). The workspace is chowned to
  that uid for the run and back afterwards. A non-root uid is what makes ``RLIMIT_NPROC`` bite: the
  kernel never applies it to uid 0, even inside a user namespace.
* ``userns`` (host runs as a normal user): an unprivileged user namespace; the command runs as
  uid 1000 inside, which is the host user outside.

If bubblewrap is missing or cannot create namespaces, :class:`SandboxUnavailable` says so;
:class:`UnsafeLocalRunner` (``--unsafe-no-sandbox``) is the explicit, loudly-announced opt-out.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, TextIO

import structlog

from runners import wsfs
from runners.base import PRIVATE_ENV, PRIVATE_MOUNT, Execution
from runners.cgroups import CgroupError
from runners.egress import MAVEN_SETTINGS_NAME, RELAY_DIR, EgressPolicy
from runners.egress_session import network_plan
from runners.errors import ArcsError, UsageError
from runners.guard import LimitEnforcer, RunGuard
from runners.limits import (
    DEFAULT_OUTPUT_CAP,
    DEFAULT_OUTPUT_KILL,
    Limits,
    SandboxLimits,
    Supervised,
    limited_shell_argv,
    process_tree,
    supervise,
)
from runners.uids import DEFAULT_STATE_DIR, UidLeaseError, uid_leases
from runners.workspace import default_root, remove_tree, shared_folders, sweep_stale

log = structlog.get_logger(__name__)

Privilege = Literal["auto", "setpriv", "userns"]

SANDBOX_WORKDIR = "/workspace"
SANDBOX_HOME = "/home/sandbox"
SANDBOX_HOSTNAME = "arcs-sandbox"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_ARTIFACT_BYTES = 1 << 20

_SHELL = "/bin/sh"
_USERNS_ID = 1000
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc entries that runtimes read and that hold no secrets (not /etc/ssl wholesale: ssl/private).
# They are copied once into a private staging folder that is bound as the sandbox's /etc: one mount
# instead of one per entry keeps the start-up cost of a sandbox down.
_ETC_ALLOW = (
    "alternatives",
    "crypto-policies",
    "fonts",
    "ld.so.cache",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "pki/ca-trust",
    "pki/tls/cert.pem",
    "pki/tls/certs",
    "pki/tls/openssl.cnf",
    "protocols",
    "services",
    "ssl/cert.pem",
    "ssl/certs",
    "ssl/openssl.cnf",
    "timezone",
)
_ETC_ALLOW_GLOBS = ("java-*", "python3*", "perl")
# Bound over the staged copies when needed: the host's resolver files for the setup phase (empty
# placeholders otherwise), and passwd/group naming the per-run uid in setpriv mode.
_ETC_NETWORK = ("resolv.conf", "host.conf", "gai.conf")
_ETC_HOSTS = f"127.0.0.1\tlocalhost {SANDBOX_HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n"
_FORBIDDEN_TOOLCHAIN = ("/", "/etc", "/root", "/home", "/proc", "/sys", "/dev", "/run", "/var", "/tmp")
_TMPFS_SHM_MB = 256


class SandboxUnavailable(ArcsError):
    """bubblewrap is missing or cannot create a sandbox on this machine."""


def sandbox_env(path: str, extra: Mapping[str, str] | None, *, home: str = SANDBOX_HOME) -> dict[str, str]:
    """The complete environment of a sandboxed command: a fixed minimum, then ``extra``."""
    env = {
        "PATH": path,
        "HOME": home,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "SHELL": _SHELL,
    }
    for key, value in (extra or {}).items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise UsageError(f"invalid environment variable name or value: {key!r}")
        env[key] = value
    return env


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """``chown -hR uid:gid root`` without following symlinks (:func:`runners.wsfs.chown_tree`)."""
    wsfs.chown_tree(root, uid, gid)


def collect_artifacts(
    workspace: Path, names: Sequence[str], *, max_bytes: int = MAX_ARTIFACT_BYTES
) -> dict[str, str]:
    """Read ``names`` (workspace-relative) back: regular files only, at most ``max_bytes`` each.

    The sandbox can leave ``report.xml -> /root/.git-credentials`` or a FIFO behind; the host reads
    as a more privileged user, so no link is followed on the way and nothing but a regular file is
    opened (:mod:`runners.wsfs`); anything else is left out.
    """
    found: dict[str, str] = {}
    for name in names:
        with contextlib.suppress(OSError):
            found[name] = wsfs.read_text(workspace, name, limit=max_bytes, errors="replace")
    return found


def _execution(command: str, done: Supervised, artifacts: Mapping[str, str]) -> Execution:
    return Execution(
        command=command,
        exit_code=done.exit_code,
        stdout=done.stdout,
        stderr=done.stderr,
        duration_s=done.duration_s,
        killed_by=done.killed_by,
        truncated=done.truncated,
        artifacts=dict(artifacts),
        hang=done.hang,
        limit=done.limit,
        usage=dict(done.usage),
    )


def _memfd(name: str, content: bytes) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        os.write(fd, content)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_toolchain(path: Path) -> Path:
    path = Path(path).absolute()
    if str(path) in _FORBIDDEN_TOOLCHAIN or path == Path.home():
        raise UsageError(f"refusing to expose {path} to the sandbox; name the toolchain folder itself")
    if not path.exists():
        raise UsageError(f"toolchain path {path} does not exist")
    return path


def _stage_etc() -> Path:
    """Copy the allow-listed ``/etc`` entries into a fresh private folder; return its ``etc``."""
    root = default_root()
    sweep_stale(root)
    holder = Path(tempfile.mkdtemp(prefix=f"arcs-ws-{os.getpid()}-etc-", dir=root))
    etc = holder / "etc"
    etc.mkdir(mode=0o755)
    host = Path("/etc")
    names = list(_ETC_ALLOW)
    for pattern in _ETC_ALLOW_GLOBS:
        names.extend(sorted(p.name for p in host.glob(pattern)))
    for name in names:
        source, target = host / name, etc / name
        if not source.exists() or target.exists():
            continue
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        # Unreadable entries are simply left out; the copy keeps symlinks as symlinks.
        with contextlib.suppress(OSError, shutil.Error):
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target, follow_symlinks=False)
    for name in _ETC_NETWORK:
        placeholder = etc / name
        if not placeholder.exists():
            placeholder.touch(mode=0o644)
    for name, body in {**account_files(_USERNS_ID, _USERNS_ID), "hosts": _ETC_HOSTS.encode()}.items():
        (etc / name).write_bytes(body)
        (etc / name).chmod(0o644)
    return etc


_ETC_LOCK = threading.Lock()
_ETC_DIR: dict[int, Path] = {}  # by pid: a forked child stages its own (the parent removes its copy)


def _shared_etc() -> Path:
    pid = os.getpid()
    with _ETC_LOCK:
        etc = _ETC_DIR.get(pid)
        if etc is None or not etc.is_dir():
            etc = _stage_etc()
            atexit.register(_remove_stage, pid, etc.parent)
            _ETC_DIR[pid] = etc
        return etc


def _remove_stage(owner: int, holder: Path) -> None:
    if os.getpid() == owner:
        remove_tree(holder)


def account_files(uid: int, gid: int) -> dict[str, bytes]:
    """Synthetic ``passwd`` and ``group`` naming the sandbox user (no host account data)."""
    return {
        "passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"sandbox:x:{uid}:{gid}:ARCS sandbox:{SANDBOX_HOME}:{_SHELL}\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ).encode(),
        "group": f"root:x:0:\nsandbox:x:{gid}:\nnogroup:x:65534:\n".encode(),
    }


class LocalSandbox:
    """:class:`Runner` that isolates each command with bubblewrap (see the module docstring)."""

    name = "bubblewrap"
    mounts_shared = True
    """Binds a workspace's shared folders (:func:`runners.workspace.shared_folders`) read-only."""

    def __init__(
        self,
        *,
        toolchain_paths: Sequence[Path] = (),
        bwrap: str | Path | None = None,
        privilege: Privilege = "auto",
        bind_python: bool = True,
        max_processes: int = 512,
        max_file_mb: int = 1024,
        tmpfs_mb: int = 1024,
        output_cap_bytes: int = DEFAULT_OUTPUT_CAP,
        output_kill_bytes: int = DEFAULT_OUTPUT_KILL,
        setup_network: EgressPolicy | None = None,
        limits: SandboxLimits | None = None,
        uid_state_dir: Path = DEFAULT_STATE_DIR,
    ) -> None:
        """Find bubblewrap (raise :class:`SandboxUnavailable` if absent); run nothing yet.

        ``toolchain_paths`` are bound read-only at their host paths and their ``bin`` folders
        lead ``PATH``; ``bind_python`` adds the running interpreter's installation
        (``sys.base_prefix``) the same way. ``setup_network`` is what ``network=True`` runs get
        (default: the package registries only, :class:`runners.egress.EgressPolicy`).
        ``limits`` are the per-run CPU, memory, process and disk limits (default:
        :class:`SandboxLimits` with ``processes=max_processes``); ``uid_state_dir`` holds the
        uid leases of setpriv mode, shared by every worker process of the host.
        """
        found = shutil.which(str(bwrap) if bwrap is not None else "bwrap")
        if found is None:
            raise SandboxUnavailable(
                "bubblewrap (bwrap) is not installed, so tests cannot run sandboxed; install it "
                "(Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) or pass "
                "--unsafe-no-sandbox to run them without isolation"
            )
        self.bwrap = found
        self.privilege: Privilege = privilege
        self.limits = limits if limits is not None else SandboxLimits(processes=max_processes)
        self.max_processes = self.limits.processes
        self.enforcer = LimitEnforcer(self.limits)
        self.uid_state_dir = Path(uid_state_dir)
        self.max_file_mb = max_file_mb
        self.tmpfs_mb = tmpfs_mb
        self.output_cap_bytes = output_cap_bytes
        self.output_kill_bytes = output_kill_bytes
        self.setup_network = setup_network or EgressPolicy()
        paths = [Path(sys.base_prefix)] if bind_python else []
        paths.extend(Path(p) for p in toolchain_paths)
        binds: list[Path] = []
        for raw in paths:
            path = _check_toolchain(raw)
            if path.is_relative_to("/usr") or path in binds:
                continue  # Already visible through /usr.
            binds.append(path)
        self.toolchain_paths: tuple[Path, ...] = tuple(binds)
        bins = [str(p / "bin") for p in reversed(self.toolchain_paths) if (p / "bin").is_dir()]
        self.path = ":".join([*bins, SYSTEM_PATH])
        self.setpriv = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
        self._mode: Literal["setpriv", "userns"] | None = None
        self._mode_lock = threading.Lock()
        self._disable_userns: bool | None = None

    # ------------------------------------------------------------------ set-up checks

    @property
    def mode(self) -> Literal["setpriv", "userns"]:
        """The isolation mode in use, probing the machine on first access (see :meth:`check`)."""
        with self._mode_lock:
            if self._mode is None:
                self._mode = self._choose_mode()
            return self._mode

    def check(self) -> None:
        """Start a trivial sandbox once; raise :class:`SandboxUnavailable` with bwrap's reason if it fails.

        Also finds the mechanism of each limit (:meth:`limit_mechanisms`).
        """
        _ = self.mode
        _ = self.enforcer.cgroups

    def limit_mechanisms(self) -> dict[str, str]:
        """For ``cpu``, ``memory``, ``processes`` and ``disk``: the mechanism in force and its value."""
        return self.enforcer.mechanisms()

    def temp_mounts(self) -> dict[str, int]:
        """The sandbox's private tmpfs mounts and their sizes in MiB (within the disk quota)."""
        quota = self.limits.disk_mb
        sizes = {"/tmp": self.tmpfs_mb, SANDBOX_HOME: self.tmpfs_mb, "/dev/shm": _TMPFS_SHM_MB}
        return {mount: min(size, quota) if quota is not None else size for mount, size in sizes.items()}

    def _choose_mode(self) -> Literal["setpriv", "userns"]:
        root = os.geteuid() == 0
        candidates: list[Literal["setpriv", "userns"]]
        if self.privilege == "setpriv":
            if not root or self.setpriv is None:
                raise SandboxUnavailable(
                    "privilege='setpriv' needs ARCS to run as root with util-linux setpriv installed"
                )
            candidates = ["setpriv"]
        elif self.privilege == "userns":
            candidates = ["userns"]
        else:
            candidates = ["setpriv", "userns"] if root and self.setpriv is not None else ["userns"]
        reasons: list[str] = []
        for mode in candidates:
            reason = self._probe(mode)
            if reason is None:
                if root and mode == "userns" and not self.enforcer.cgroups.has("pids"):
                    log.warning(
                        "sandbox.no_process_limit",
                        reason="the sandbox runs in a user namespace mapped to root, which the kernel "
                        "exempts from RLIMIT_NPROC; install util-linux's setpriv to fix it",
                    )
                return mode
            reasons.append(f"{mode}: {reason}")
        raise SandboxUnavailable(
            "bubblewrap cannot create a sandbox on this machine (" + "; ".join(reasons) + "); "
            "enable unprivileged user namespaces or pass --unsafe-no-sandbox"
        )

    def _probe(self, mode: Literal["setpriv", "userns"]) -> str | None:
        with tempfile.TemporaryDirectory(prefix="arcs-probe-") as tmp:
            limits = Limits(timeout_s=30.0, memory_mb=256, max_processes=self.max_processes)
            try:
                done, started = self._run(
                    Path(tmp), "true", mode=mode, limits=limits, network=False, env={}, guarded=False
                )
            except OSError as exc:
                return str(exc)
        if started and done.exit_code == 0:
            return None
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else f"exit status {done.exit_code}"

    def _supports_disable_userns(self) -> bool:
        if self._disable_userns is None:
            try:
                text = subprocess.run(
                    [self.bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False
                ).stdout
            except (OSError, subprocess.TimeoutExpired):
                text = ""
            self._disable_userns = "--disable-userns" in text
        return self._disable_userns

    # ------------------------------------------------------------------ argv

    def bwrap_argv(
        self,
        workspace: Path,
        command: str,
        *,
        mode: Literal["setpriv", "userns"],
        uid: int,
        limits: Limits,
        network: bool,
        env: Mapping[str, str],
        data_fds: Mapping[str, int],
        etc_dir: Path,
        status_fd: int | None = None,
        egress: Path | None = None,
        private: Path | None = None,
    ) -> list[str]:
        """The full ``bwrap ... -- [setpriv ... --] sh -c ...`` command line (no side effects).

        ``network`` shares the host's network (the ``host`` setup mode only); otherwise the sandbox
        has its own network namespace. ``egress`` is the host folder of an
        :class:`runners.egress_session.EgressSession`, bound read-only at ``/run/arcs-egress``;
        ``private`` (the run's private folder) is bound read-write at ``/run/arcs``.
        """
        argv = [self.bwrap]
        if mode == "setpriv":
            # Privileged bwrap: no user namespace, so setpriv can switch to a real unprivileged uid.
            argv += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
            if not network:
                argv.append("--unshare-net")
        else:
            argv += ["--unshare-all", "--unshare-user", "--uid", str(uid), "--gid", str(uid)]
            if network:
                argv.append("--share-net")
            if self._supports_disable_userns():
                argv.append("--disable-userns")
        argv += ["--hostname", SANDBOX_HOSTNAME, "--die-with-parent", "--new-session", "--clearenv"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        if status_fd is not None:
            argv += ["--json-status-fd", str(status_fd)]
        argv += ["--ro-bind", "/usr", "/usr"]
        for top in _SYSTEM_DIRS:
            entry = Path(top)
            if entry.is_symlink():
                argv += ["--symlink", str(entry.readlink()), top]
            elif entry.is_dir():
                argv += ["--ro-bind", top, top]
        # Private writable mounts first, so that a toolchain bound below /tmp is not hidden by them.
        size = {mount: str(mib << 20) for mount, mib in self.temp_mounts().items()}
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += ["--perms", "1777", "--size", size["/dev/shm"], "--tmpfs", "/dev/shm"]
        argv += ["--perms", "1777", "--size", size["/tmp"], "--tmpfs", "/tmp"]
        argv += ["--dir", str(Path(SANDBOX_HOME).parent)]
        argv += ["--perms", "1777", "--size", size[SANDBOX_HOME], "--tmpfs", SANDBOX_HOME]
        made: set[str] = {"/", "/usr", "/proc", "/dev", "/tmp", str(Path(SANDBOX_HOME).parent), *_SYSTEM_DIRS}

        def parents(dest: str) -> None:
            # bwrap would create missing parents of a bind mount with mode 0700, which the
            # unprivileged sandbox user could not traverse.
            for parent in reversed(Path(dest).parents):
                if str(parent) not in made:
                    argv.extend(["--dir", str(parent)])
                    made.add(str(parent))

        argv += ["--ro-bind", str(etc_dir), "/etc"]
        made.add("/etc")
        for dest, fd in data_fds.items():
            parents(dest)
            argv += ["--perms", "0644", "--ro-bind-data", str(fd), dest]
        if network:
            for name in _ETC_NETWORK:
                if (Path("/etc") / name).exists():
                    argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        if egress is not None:
            parents(RELAY_DIR)
            argv += ["--ro-bind", str(egress), RELAY_DIR]
            # Maven reads its proxy from settings.xml only; ~/.m2 stays writable for the downloads.
            m2 = f"{SANDBOX_HOME}/.m2"
            argv += ["--perms", "1777", "--dir", m2]
            argv += ["--ro-bind", str(egress / MAVEN_SETTINGS_NAME), f"{m2}/settings.xml"]
        if private is not None:
            parents(PRIVATE_MOUNT)
            argv += ["--bind", str(private), PRIVATE_MOUNT]
        for path in self.toolchain_paths:
            parents(str(path))
            argv += ["--ro-bind", str(path), str(path)]
        argv += ["--bind", str(workspace), SANDBOX_WORKDIR, "--chdir", SANDBOX_WORKDIR]
        for name, source in shared_folders(workspace):
            # Shared dependencies (node_modules) read-only over their empty mount point: every
            # candidate reads the same copy and none can change it.
            argv += ["--ro-bind", str(source), f"{SANDBOX_WORKDIR}/{name}"]
        argv += ["--remount-ro", "/"]
        if mode == "setpriv":
            assert self.setpriv is not None
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
            argv += ["--", self.setpriv, "--reuid", str(uid), "--regid", str(uid), "--clear-groups"]
            argv += ["--no-new-privs", "--inh-caps", "-all", "--bounding-set", "-all"]
        argv += ["--", *limited_shell_argv(command, limits, shell=_SHELL)]
        return argv

    def etc_dir(self) -> Path:
        """The staged ``/etc`` (allow-listed host entries), shared by every sandbox of this process.

        Built on first use under the workspace root as ``arcs-ws-<pid>-etc-*``, removed at exit, and
        removed by the stale-workspace sweep if this process is killed.
        """
        return _shared_etc()

    # ------------------------------------------------------------------ running

    def run(
        self,
        workspace: Path,
        command: str,
        *,
        timeout_s: float = 600.0,
        memory_mb: int = 2048,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        collect: tuple[str, ...] = (),
        private: Path | None = None,
    ) -> Execution:
        """Run ``command`` in the sandbox with ``workspace`` at ``/workspace`` (see :class:`Runner`)."""
        workspace = Path(workspace).resolve()
        if not workspace.is_dir():
            raise UsageError(f"workspace {workspace} is not a folder")
        mode = self.mode
        limits = Limits(
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            max_processes=self.enforcer.rlimit_processes(),
            max_file_mb=self.max_file_mb,
            output_cap_bytes=self.output_cap_bytes,
            output_kill_bytes=self.output_kill_bytes,
        )
        if private is not None:
            env = {**(env or {}), PRIVATE_ENV: PRIVATE_MOUNT}
        try:
            python = self.relay_python() if network else None
            with network_plan(self.setup_network, network, command, env, python=python) as plan:
                done, started = self._run(
                    workspace,
                    plan.command,
                    mode=mode,
                    limits=limits,
                    network=plan.share_net,
                    env=plan.env,
                    egress=plan.egress,
                    private=private,
                )
        except OSError as exc:
            raise SandboxUnavailable(f"could not start bubblewrap: {exc}") from exc
        except (CgroupError, UidLeaseError) as exc:
            raise SandboxUnavailable(exc.message) from exc
        if not started and done.killed_by is None:
            raise SandboxUnavailable(f"bubblewrap could not start the sandbox: {done.stderr.strip()}")
        return _execution(command, plan.annotate(done), collect_artifacts(workspace, collect))

    def relay_python(self) -> str | None:
        """A Python the sandbox can run the egress relay with (its host path is its sandbox path).

        ARCS's own interpreter when the sandbox sees it, then the system's, and only then a
        toolchain's (which may be the repository's own ``.venv``).
        """
        own = Path(sys.base_prefix)
        first = [own / "bin" / "python3"] if own in self.toolchain_paths or own.is_relative_to("/usr") else []
        system = [Path("/usr/bin/python3"), Path("/usr/local/bin/python3")]
        candidates = [*first, *system, *(path / "bin" / "python3" for path in self.toolchain_paths)]
        return next((str(path) for path in candidates if os.access(path, os.X_OK)), None)

    def _run(
        self,
        workspace: Path,
        command: str,
        *,
        mode: Literal["setpriv", "userns"],
        limits: Limits,
        network: bool,
        env: Mapping[str, str] | None,
        egress: Path | None = None,
        guarded: bool = True,
        private: Path | None = None,
    ) -> tuple[Supervised, bool]:
        """Run once; also report whether bwrap got as far as starting the command.

        ``guarded``: under the per-run limits of :attr:`limits` (off for the set-up probe).
        """
        full_env = sandbox_env(self.path, env)
        leases = uid_leases(self.uid_state_dir) if mode == "setpriv" else None
        uid = leases.acquire() if leases is not None else _USERNS_ID
        owner = workspace.stat()
        fds: list[int] = []
        status_r, status_w = os.pipe()
        status = _Status(status_r)
        guard: RunGuard | None = None
        try:
            if guarded:
                extra = (private,) if private is not None else ()
                guard = self.enforcer.start(workspace, self.temp_mounts(), extra)
            if mode == "setpriv":
                chown_tree(workspace, uid, uid)
            data_fds: dict[str, int] = {}
            if mode == "setpriv":  # The staged passwd/group name uid 1000, the userns user.
                for name, body in account_files(uid, uid).items():
                    data_fds[f"/etc/{name}"] = _memfd(name, body)
                    fds.append(data_fds[f"/etc/{name}"])
            argv = self.bwrap_argv(
                workspace,
                command,
                mode=mode,
                uid=uid,
                limits=limits,
                network=network,
                env=full_env,
                data_fds=data_fds,
                etc_dir=self.etc_dir(),
                status_fd=status_w,
                egress=egress,
                private=private,
            )
            if guard is not None:
                argv = guard.wrap(argv)
                guard.sandbox_pid = status.child_pid
                guard.tree = lambda: _sandbox_pids(status.child_pid())
            # bwrap itself gets an empty environment: nothing of the host's reaches the sandbox,
            # not even through /proc/1/environ of its init process.
            done = supervise(
                argv,
                env={},
                cwd="/",
                limits=limits,
                pass_fds=(*fds, status_w),
                watch=guard.watch if guard is not None else None,
            )
            os.close(status_w)
            status_w = -1
            started = status.child_pid() is not None
            if guard is not None:
                done = guard.finish(done)
        finally:
            for fd in (*fds, status_w):
                if fd >= 0:
                    os.close(fd)
            try:
                if guard is not None:
                    guard.close()
            finally:
                os.close(status_r)
                if mode == "setpriv":
                    try:
                        chown_tree(workspace, owner.st_uid, owner.st_gid)
                    finally:
                        if leases is not None:
                            leases.release(uid)
        return done, started


def _sandbox_pids(root: int | None) -> list[int]:
    return [] if root is None else [root, *(pid for pid, _ in process_tree(root))]


class _Status:
    """Reads bwrap's ``--json-status-fd`` without blocking: the sandbox's pid once set-up succeeded."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._buffer = b""
        self._pid: int | None = None

    def child_pid(self) -> int | None:
        """The host pid of the sandbox's first process, once bwrap has reported it."""
        if self._pid is None:
            with contextlib.suppress(OSError):
                while chunk := os.read(self._fd, 65536):
                    self._buffer += chunk
            for line in self._buffer.decode("utf-8", errors="replace").splitlines():
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    pid = json.loads(line).get("child-pid")
                    if isinstance(pid, int):
                        self._pid = pid
                        break
        return self._pid


class UnsafeLocalRunner:
    """Runs commands as plain subprocesses: NO isolation. Only for ``--unsafe-no-sandbox``.

    Keeps what it can without a sandbox: an environment built from nothing, a throwaway ``$HOME``,
    wall-time kill of the whole process group, memory and file-size rlimits, output caps. The
    command can still read the host's files, use the network and leave setsid daemons behind.
    """

    name = "unsafe-local"

    def __init__(
        self,
        *,
        toolchain_paths: Sequence[Path] = (),
        max_file_mb: int = 1024,
        output_cap_bytes: int = DEFAULT_OUTPUT_CAP,
        output_kill_bytes: int = DEFAULT_OUTPUT_KILL,
        warn_stream: TextIO | None = None,
    ) -> None:
        """Announce, on stderr and in the log, that commands will run unsandboxed."""
        message = (
            "WARNING: --unsafe-no-sandbox: repository code will run WITHOUT a sandbox, with this "
            "user's file access and network; use it only for code you trust"
        )
        print(message, file=warn_stream or sys.stderr, flush=True)
        log.warning("sandbox.disabled", runner=self.name, reason="--unsafe-no-sandbox")
        bins = [str(Path(p).absolute() / "bin") for p in toolchain_paths]
        python_bin = str(Path(sys.base_prefix) / "bin")
        self.path = ":".join([*bins, python_bin, SYSTEM_PATH])
        self.max_file_mb = max_file_mb
        self.output_cap_bytes = output_cap_bytes
        self.output_kill_bytes = output_kill_bytes

    def run(
        self,
        workspace: Path,
        command: str,
        *,
        timeout_s: float = 600.0,
        memory_mb: int = 2048,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        collect: tuple[str, ...] = (),
        private: Path | None = None,
    ) -> Execution:
        """Run ``command`` in ``workspace`` directly (``network`` cannot be enforced and is ignored)."""
        workspace = Path(workspace)
        if not workspace.is_dir():
            raise UsageError(f"workspace {workspace} is not a folder")
        # No process limit: outside a user namespace RLIMIT_NPROC counts every process of this
        # user on the machine, so any value would be wrong for someone.
        limits = Limits(
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            max_processes=None,
            max_file_mb=self.max_file_mb,
            output_cap_bytes=self.output_cap_bytes,
            output_kill_bytes=self.output_kill_bytes,
        )
        with tempfile.TemporaryDirectory(prefix="arcs-unsafe-home-") as home:
            full_env = sandbox_env(self.path, env, home=home)
            full_env["TMPDIR"] = home
            if private is not None:
                full_env[PRIVATE_ENV] = str(Path(private).resolve())
            done = supervise(
                limited_shell_argv(command, limits),
                env=full_env,
                cwd=str(workspace),
                limits=limits,
                reap_group=True,
            )
        return _execution(command, done, collect_artifacts(workspace, collect))
