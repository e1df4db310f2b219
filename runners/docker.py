"""``DockerRunner``: the production runner, one throwaway container per command.

The container gets no network (``--network none``), a read-only root filesystem with tmpfs ``/tmp``
and ``$HOME``, an unprivileged user, no capabilities,
``no-new-privileges``, memory/pids/cpu limits, and optionally gVisor (``--runtime runsc``). The
workspace is bind-mounted read-write at ``/workspace``. On timeout the container is killed by name
(killing the ``docker`` client alone would leave it running).

The setup phase (``network=True``) follows the runner's ``setup_network`` policy
(:mod:`runners.egress`): ``registries`` (default) keeps ``--network none`` and mounts the folder of
an :class:`runners.egress_session.EgressSession` at ``/run/arcs-egress`` (read-only): the
allow-listing proxy's Unix socket and the relay that the setup command starts with the image's
``python3`` on the container's own ``127.0.0.1:3128``. The folder is created under the workspace
root, which the engine must see at the same path (as for the workspace itself). ``none`` gives setup
no network either; ``host`` gives it ``--network bridge`` (unsafe: the bridge reaches the host and
everything it can reach). With gVisor the runtime must allow host Unix sockets
(``runsc --host-uds=open``), or the relay cannot connect and setup fails saying so.

Workers use it with ``ARCS_RUNNER=docker`` (``ARCS_RUNNER_IMAGE``, ``ARCS_RUNNER_RUNTIME``):
:func:`runners.factory.make_runner` builds it and calls :meth:`DockerRunner.check` first, so a
missing engine is one clear error before anything runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runners.base import PRIVATE_ENV, PRIVATE_MOUNT, Execution
from runners.egress import MAVEN_SETTINGS_NAME, RELAY_DIR, EgressPolicy
from runners.egress_session import network_plan
from runners.errors import UsageError
from runners.limits import DEFAULT_OUTPUT_CAP, DEFAULT_OUTPUT_KILL, Limits, supervise
from runners.sandbox import (
    SANDBOX_HOME,
    SANDBOX_WORKDIR,
    SandboxUnavailable,
    chown_tree,
    collect_artifacts,
    sandbox_env,
)

DEFAULT_IMAGE = "python:3.11-slim"
NOBODY = 65534
# The docker client runs on the host side; it needs these to find the engine and registries, and
# nothing else of the host environment (tokens, keys) is passed to it.
_CLIENT_ENV = (
    "PATH",
    "HOME",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "XDG_RUNTIME_DIR",
)
_CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CONTAINER_PYTHON = "python3"
"""Runs the egress relay in the container (found on its PATH: the runner image has it)."""


@dataclass(frozen=True, slots=True)
class DockerOptions:
    """Container settings that do not change between commands."""

    image: str = DEFAULT_IMAGE
    runtime: str | None = None
    """``runsc`` for gVisor; None for the engine's default runtime."""
    cpus: float = 2.0
    pids_limit: int = 512
    tmpfs_mb: int = 1024
    max_file_mb: int = 1024
    user: str | None = None
    """``uid:gid`` inside the container; None means 65534 (the workspace is chowned to it when
    ARCS runs as root) or, for a non-root host, the host user's own ids."""


def docker_run_argv(
    *,
    docker: str,
    name: str,
    options: DockerOptions,
    user: str,
    workspace: Path,
    command: str,
    memory_mb: int,
    network: bool,
    env: Mapping[str, str],
    egress: Path | None = None,
    private: Path | None = None,
) -> list[str]:
    """The ``docker run`` command line for one command (pure; unit-tested).

    ``network`` attaches the default bridge (the unsafe ``host`` setup mode only); otherwise
    ``--network none``. ``egress`` is an egress session's folder, mounted read-only at
    ``/run/arcs-egress`` (the ``registries`` setup mode). ``private`` (the run's private folder)
    is mounted read-write at ``/run/arcs``.
    """
    argv = [docker, "run", "--rm", "--name", name, "--init"]
    argv += ["--network", "bridge" if network else "none"]
    argv += ["--read-only", "--tmpfs", f"/tmp:rw,nosuid,nodev,size={options.tmpfs_mb}m,mode=1777"]
    argv += ["--tmpfs", f"{SANDBOX_HOME}:rw,nosuid,nodev,size={options.tmpfs_mb}m,mode=1777"]
    if egress is not None:
        argv += ["--volume", f"{egress.resolve()}:{RELAY_DIR}:ro"]
        # Maven reads its proxy from settings.xml only; ~/.m2 stays writable for the downloads.
        argv += ["--tmpfs", f"{SANDBOX_HOME}/.m2:rw,nosuid,nodev,mode=1777"]
        settings = egress.resolve() / MAVEN_SETTINGS_NAME
        argv += ["--volume", f"{settings}:{SANDBOX_HOME}/.m2/settings.xml:ro"]
    argv += ["--user", user, "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    argv += ["--memory", f"{memory_mb}m", "--memory-swap", f"{memory_mb}m"]
    argv += ["--pids-limit", str(options.pids_limit), "--cpus", f"{options.cpus:g}"]
    argv += ["--ulimit", f"fsize={options.max_file_mb << 20}", "--ulimit", "core=0"]
    if options.runtime:
        argv += ["--runtime", options.runtime]
    argv += ["--volume", f"{workspace.resolve()}:{SANDBOX_WORKDIR}:rw", "--workdir", SANDBOX_WORKDIR]
    if private is not None:
        argv += ["--volume", f"{private.resolve()}:{PRIVATE_MOUNT}:rw"]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    argv += [options.image, "sh", "-c", command]
    return argv


class DockerRunner:
    """:class:`runners.base.Runner` backed by the docker CLI."""

    name = "docker"

    def __init__(
        self,
        options: DockerOptions | None = None,
        *,
        docker: str = "docker",
        output_cap_bytes: int = DEFAULT_OUTPUT_CAP,
        output_kill_bytes: int = DEFAULT_OUTPUT_KILL,
        setup_network: EgressPolicy | None = None,
    ) -> None:
        """Find the docker client; raise :class:`SandboxUnavailable` if it is not installed.

        ``setup_network``: the setup phase's network policy (default: the registries only).
        """
        found = shutil.which(docker)
        if found is None:
            raise SandboxUnavailable(f"the docker client ({docker}) is not installed")
        self.docker = found
        self.options = options or DockerOptions()
        self.output_cap_bytes = output_cap_bytes
        self.output_kill_bytes = output_kill_bytes
        self.setup_network = setup_network or EgressPolicy()

    def client_env(self) -> dict[str, str]:
        """The docker client's own environment: engine and registry settings only."""
        return {key: os.environ[key] for key in _CLIENT_ENV if key in os.environ}

    def engine_error(self) -> str | None:
        """None if an engine answers ``docker info``; else why not (one line)."""
        try:
            done = subprocess.run(
                [self.docker, "info", "--format", "{{.ServerVersion}}"],
                capture_output=True,
                text=True,
                timeout=20,
                env=self.client_env(),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if done.returncode != 0:
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            return lines[-1] if lines else f"docker info exited {done.returncode}"
        return None

    def runtime_error(self) -> str | None:
        """None unless the engine lists its runtimes and ``options.runtime`` is not among them.

        Engines that do not answer ``docker info --format '{{json .Runtimes}}'`` with a JSON object
        (Podman's CLI, older engines) are not second-guessed: ``docker run`` reports it then.
        """
        wanted = self.options.runtime
        if not wanted:
            return None
        try:
            done = subprocess.run(
                [self.docker, "info", "--format", "{{json .Runtimes}}"],
                capture_output=True,
                text=True,
                timeout=20,
                env=self.client_env(),
                check=False,
            )
            runtimes = json.loads(done.stdout) if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return None
        if not isinstance(runtimes, dict) or wanted in runtimes:
            return None
        known = ", ".join(sorted(str(name) for name in runtimes)) or "none"
        return f"the container engine has no runtime {wanted!r} (it has: {known})"

    def check(self) -> None:
        """Raise :class:`SandboxUnavailable` (one line) unless an engine answers ``docker info``
        and knows the configured runtime; runs no container."""
        reason = self.engine_error()
        if reason is not None:
            raise SandboxUnavailable(f"no container engine answers `docker info` ({reason})")
        reason = self.runtime_error()
        if reason is not None:
            raise SandboxUnavailable(reason)

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
        """Run ``command`` in a fresh container with ``workspace`` at ``/workspace``."""
        workspace = Path(workspace)
        if not workspace.is_dir():
            raise UsageError(f"workspace {workspace} is not a folder")
        limits = Limits(
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            max_processes=None,  # --pids-limit does it
            output_cap_bytes=self.output_cap_bytes,
            output_kill_bytes=self.output_kill_bytes,
        )
        name = f"arcs-{uuid.uuid4().hex[:16]}"
        root = os.geteuid() == 0
        user = self.options.user or (f"{NOBODY}:{NOBODY}" if root else f"{os.getuid()}:{os.getgid()}")
        owner = workspace.stat()
        chown = root and self.options.user is None

        def kill(proc: subprocess.Popen[bytes]) -> None:
            subprocess.run(
                [self.docker, "rm", "--force", name],
                capture_output=True,
                timeout=60,
                env=self.client_env(),
                check=False,
            )
            proc.kill()

        if private is not None:
            env = {**(env or {}), PRIVATE_ENV: PRIVATE_MOUNT}
        plan_python = _CONTAINER_PYTHON if network else None
        with network_plan(self.setup_network, network, command, env, python=plan_python) as plan:
            argv = docker_run_argv(
                docker=self.docker,
                name=name,
                options=self.options,
                user=user,
                workspace=workspace,
                command=plan.command,
                memory_mb=memory_mb,
                network=plan.share_net,
                env=sandbox_env(_CONTAINER_PATH, plan.env),
                egress=plan.egress,
                private=private,
            )
            try:
                if chown:
                    chown_tree(workspace, NOBODY, NOBODY)
                done = supervise(argv, env=self.client_env(), cwd="/", limits=limits, kill=kill)
            finally:
                if chown:
                    chown_tree(workspace, owner.st_uid, owner.st_gid)
        done = plan.annotate(done)
        killed_by = done.killed_by
        # 137 from the engine with no kill of ours: the kernel's OOM killer inside the memory cgroup.
        if killed_by is None and done.exit_code == -9:
            killed_by = "memory"
        return Execution(
            command=command,
            exit_code=done.exit_code,
            stdout=done.stdout,
            stderr=done.stderr,
            duration_s=done.duration_s,
            killed_by=killed_by,
            truncated=done.truncated,
            artifacts=collect_artifacts(workspace, collect),
        )
