"""Settings values -> a checked :class:`~runners.base.Runner` (bubblewrap, docker or unsafe).

The one place that picks a runner. It sits above :mod:`runners.sandbox` and :mod:`runners.docker`
(docker builds on the sandbox's helpers), so neither of those imports the other's factory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from runners.base import Runner
from runners.docker import DockerOptions, DockerRunner
from runners.egress import EgressPolicy
from runners.errors import ConfigError
from runners.limits import SandboxLimits
from runners.sandbox import LocalSandbox, SandboxUnavailable, UnsafeLocalRunner

__all__ = ["RunnerKind", "SandboxUnavailable", "make_runner"]

RunnerKind = Literal["bubblewrap", "docker"]
"""The runners :func:`make_runner` builds (the ``ARCS_RUNNER`` setting)."""


def make_runner(
    *,
    unsafe_no_sandbox: bool = False,
    toolchain_paths: Sequence[Path] = (),
    kind: RunnerKind = "bubblewrap",
    image: str | None = None,
    runtime: str | None = None,
    docker: str = "docker",
    setup_network: EgressPolicy | None = None,
    limits: SandboxLimits | None = None,
) -> Runner:
    """The runner for this machine, checked: the one place that turns settings into a runner.

    - ``unsafe_no_sandbox`` (``--unsafe-no-sandbox``): :class:`UnsafeLocalRunner`, whatever ``kind``;
    - ``kind="bubblewrap"``: a :class:`LocalSandbox` exposing ``toolchain_paths``;
    - ``kind="docker"``: a :class:`runners.docker.DockerRunner` on ``image`` (required) with
      ``runtime`` (``runsc``: gVisor); ``toolchain_paths`` do not apply (the image has its own).

    ``setup_network`` is the setup phase's network policy (default: the package registries only);
    the unsafe runner cannot enforce it. ``limits`` are bubblewrap's per-run CPU, memory, process
    and disk limits (``ARCS_SANDBOX_*``; default :class:`SandboxLimits`).

    Raises :class:`SandboxUnavailable` (one line, saying what to install, start or set) when the
    chosen runner cannot run here, and :class:`ConfigError` when ``image`` is missing for docker.
    """
    if unsafe_no_sandbox:
        return UnsafeLocalRunner(toolchain_paths=toolchain_paths)
    if kind == "docker":
        return _docker_runner(image=image, runtime=runtime, docker=docker, setup_network=setup_network)
    if kind != "bubblewrap":
        raise ConfigError(f"ARCS_RUNNER: unknown runner {kind!r} (use bubblewrap or docker)")
    sandbox = LocalSandbox(toolchain_paths=toolchain_paths, setup_network=setup_network, limits=limits)
    sandbox.check()
    return sandbox


def _docker_runner(
    *, image: str | None, runtime: str | None, docker: str, setup_network: EgressPolicy | None = None
) -> Runner:
    if not image:
        raise ConfigError(
            "ARCS_RUNNER=docker needs ARCS_RUNNER_IMAGE: the image test commands run in "
            "(deploy/runner/Dockerfile builds one)"
        )
    try:
        runner = DockerRunner(
            DockerOptions(image=image, runtime=runtime or None), docker=docker, setup_network=setup_network
        )
        runner.check()
    except SandboxUnavailable as exc:
        raise SandboxUnavailable(
            f"ARCS_RUNNER=docker: {exc.message}; the worker needs the docker CLI and a container "
            "engine it can reach (DOCKER_HOST), or set ARCS_RUNNER=bubblewrap"
        ) from None
    return runner
