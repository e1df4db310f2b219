"""``runners.factory.make_runner``: settings -> runner (bubblewrap, docker, unsafe) and its errors.

No container engine is needed: :func:`fake_docker` writes a ``docker`` executable that answers
``docker info`` as a reachable (or unreachable) engine would and records every call; with
``execute=True`` its ``docker run`` even runs the command on the host, in the mounted workspace,
so a whole repair can go through :class:`DockerRunner` (tests/jobs/test_repair_service.py).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError
from bot.settings import Settings, load_settings
from runners.docker import DockerRunner
from runners.factory import make_runner
from runners.sandbox import SANDBOX_WORKDIR, SandboxUnavailable, UnsafeLocalRunner

UNREACHABLE = (
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
)

_FAKE = """#!{python}
import json, os, subprocess, sys
argv = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(argv) + "\\n")
if argv[:1] == ["info"]:
    if not {engine!r}:
        sys.stderr.write({unreachable!r} + "\\n")
        sys.exit(1)
    if argv[-1] == "{{{{.ServerVersion}}}}":
        print("27.3.1")
    elif {runtimes!r} is None:
        sys.exit(1)
    else:
        print(json.dumps({runtimes!r}))
    sys.exit(0)
if argv[:1] == ["run"] and {execute!r}:
    volumes = [v.rsplit(":", 2) for k, v in zip(argv, argv[1:]) if k == "--volume"]
    host = next(src for src, dst, _ in volumes if dst == "/workspace")
    env = dict(v.split("=", 1) for k, v in zip(argv, argv[1:]) if k == "--env")
    env["PATH"] = {path!r} + ":" + env.get("PATH", "")
    env["HOME"] = host
    # The run's private folder (the hang probe) is mounted at /run/arcs: here, its host path.
    env.update({{"ARCS_PRIVATE": src for src, dst, _ in volumes if dst == "/run/arcs"}})
    sys.exit(subprocess.run(["sh", "-c", argv[-1]], cwd=host, env=env).returncode)
sys.exit({run_exit!r} if argv[:1] == ["run"] else 0)
"""


def fake_docker(
    bin_dir: Path,
    *,
    engine: bool = True,
    runtimes: dict[str, Any] | None = None,
    execute: bool = False,
    run_exit: int = 0,
) -> Path:
    """Write an executable ``bin_dir/docker``; return the file its calls are logged to (JSON lines).

    ``engine=False``: ``docker info`` fails like a client without a daemon. ``runtimes``: what
    ``docker info --format '{{json .Runtimes}}'`` answers (None: that query fails). ``execute``:
    ``docker run`` runs its command with ``sh -c`` in the host folder mounted at /workspace (and
    ``$ARCS_PRIVATE`` names the host folder mounted at /run/arcs).
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    log = bin_dir / "docker-calls.jsonl"
    script = bin_dir / "docker"
    script.write_text(
        _FAKE.format(
            python=sys.executable,
            log=str(log),
            engine=engine,
            unreachable=UNREACHABLE,
            runtimes=runtimes,
            execute=execute,
            path=str(Path(sys.executable).parent),
            run_exit=run_exit,
        ),
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return log


def docker_calls(log: Path) -> list[list[str]]:
    """The recorded ``docker`` command lines (without ``docker`` itself)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def flag_values(argv: Sequence[str], flag: str) -> list[str]:
    """Every value given to ``flag`` in ``argv``."""
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == flag]


def docker_settings(tmp_path: Path, **env: str) -> Settings:
    """Settings with ``ARCS_RUNNER=docker`` plus ``env``."""
    values = {"ARCS_HOME": str(tmp_path / "arcs-home"), "ARCS_EMBEDDER": "hash", "ARCS_RUNNER": "docker"}
    return load_settings({**values, **env})


@pytest.fixture
def docker_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder first on PATH, for :func:`fake_docker`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


# ------------------------------------------------------------------------------------ settings


def test_runner_settings_default_to_bubblewrap(settings: Settings) -> None:
    assert (settings.runner, settings.runner_image, settings.runner_runtime) == ("bubblewrap", None, None)


def test_runner_settings_load_from_the_environment(tmp_path: Path) -> None:
    settings = docker_settings(
        tmp_path, ARCS_RUNNER_IMAGE="ghcr.io/o/arcs-runner:0.1", ARCS_RUNNER_RUNTIME="runsc"
    )
    assert (settings.runner, settings.runner_image, settings.runner_runtime) == (
        "docker",
        "ghcr.io/o/arcs-runner:0.1",
        "runsc",
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ARCS_RUNNER", "podman"),
        ("ARCS_RUNNER_IMAGE", "--privileged"),
        ("ARCS_RUNNER_IMAGE", "python:3.11 --rm"),
        ("ARCS_RUNNER_RUNTIME", "-v"),
    ],
)
def test_bad_runner_settings_name_their_variable(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"invalid setting {key}:"):
        load_settings({"ARCS_HOME": str(tmp_path), key: value})


# ------------------------------------------------------------------------------------- factory


def test_docker_without_an_image_is_a_config_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="ARCS_RUNNER_IMAGE") as caught:
        make_runner(kind="docker", image=None)
    assert "\n" not in caught.value.message and caught.value.exit_code == 2


def test_docker_without_a_client_is_one_clear_line() -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        make_runner(kind="docker", image="img:1", docker="/nonexistent/docker")
    message = caught.value.message
    assert message.startswith("ARCS_RUNNER=docker: the docker client (/nonexistent/docker) is not installed")
    assert "ARCS_RUNNER=bubblewrap" in message


def test_docker_without_a_reachable_engine_is_one_clear_line(docker_bin: Path) -> None:
    log = fake_docker(docker_bin, engine=False)
    with pytest.raises(SandboxUnavailable) as caught:
        make_runner(kind="docker", image="img:1")
    message = caught.value.message
    assert message.startswith("ARCS_RUNNER=docker: no container engine answers `docker info`")
    assert "Cannot connect to the Docker daemon" in message and "DOCKER_HOST" in message
    assert str(caught.value) == message  # already one line
    assert [call[0] for call in docker_calls(log)] == ["info"]  # no container was started


def test_docker_with_an_unregistered_runtime_says_which_runtimes_exist(docker_bin: Path) -> None:
    fake_docker(docker_bin, runtimes={"runc": {}, "io.containerd.runc.v2": {}})
    with pytest.raises(
        SandboxUnavailable, match=r"no runtime 'runsc' \(it has: io.containerd.runc.v2, runc\)"
    ):
        make_runner(kind="docker", image="img:1", runtime="runsc")


def test_an_engine_that_does_not_list_runtimes_is_not_second_guessed(docker_bin: Path) -> None:
    fake_docker(docker_bin, runtimes=None)  # e.g. podman's CLI: `docker run --runtime` decides
    runner = make_runner(kind="docker", image="img:1", runtime="runsc")
    assert isinstance(runner, DockerRunner) and runner.options.runtime == "runsc"


def test_docker_settings_give_a_docker_runner_whose_runs_use_image_and_runtime(
    docker_bin: Path, tmp_path: Path
) -> None:
    from jobs.fix import _make_runner

    log = fake_docker(docker_bin, runtimes={"runc": {}, "runsc": {}})
    settings = docker_settings(tmp_path, ARCS_RUNNER_IMAGE="arcs-runner:0.1.0", ARCS_RUNNER_RUNTIME="runsc")
    runner = _make_runner(settings, False, (Path(sys.prefix),))
    assert isinstance(runner, DockerRunner) and runner.name == "docker"
    assert (runner.options.image, runner.options.runtime) == ("arcs-runner:0.1.0", "runsc")
    assert runner.docker == str(docker_bin / "docker")

    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = runner.run(workspace, "pytest -q", timeout_s=60, memory_mb=512, env={"CI": "1"})
    assert result.ok, result.stderr
    (run,) = [call for call in docker_calls(log) if call[0] == "run"]
    assert flag_values(run, "--runtime") == ["runsc"]
    assert flag_values(run, "--network") == ["none"]
    assert flag_values(run, "--memory") == ["512m"]
    assert flag_values(run, "--volume") == [f"{workspace.resolve()}:{SANDBOX_WORKDIR}:rw"]
    assert "--read-only" in run and flag_values(run, "--cap-drop") == ["ALL"]
    assert "CI=1" in flag_values(run, "--env")
    assert run[-4:] == ["arcs-runner:0.1.0", "sh", "-c", "pytest -q"]


def test_docker_settings_without_a_runtime_use_the_engine_default(docker_bin: Path, tmp_path: Path) -> None:
    from jobs.fix import _make_runner

    log = fake_docker(docker_bin, runtimes={"runc": {}})
    runner = _make_runner(docker_settings(tmp_path, ARCS_RUNNER_IMAGE="img:1"), False, ())
    assert isinstance(runner, DockerRunner) and runner.options.runtime is None
    # Only the engine was asked; without a runtime there is nothing more to check.
    assert docker_calls(log) == [["info", "--format", "{{.ServerVersion}}"]]


def test_unsafe_no_sandbox_wins_over_the_docker_setting(
    docker_bin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobs.fix import _make_runner

    log = fake_docker(docker_bin, engine=False)
    runner = _make_runner(docker_settings(tmp_path), True, ())
    assert isinstance(runner, UnsafeLocalRunner)
    assert "--unsafe-no-sandbox" in capsys.readouterr().err
    assert docker_calls(log) == []


def test_bubblewrap_settings_give_a_checked_sandbox_with_the_toolchains(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.factory
    from jobs.fix import _make_runner

    made: list[tuple[Path, ...]] = []
    policies: list[Any] = []
    limits_seen: list[Any] = []

    class RecordingSandbox:
        name = "bubblewrap"
        checked = False

        def __init__(
            self, *, toolchain_paths: Sequence[Path] = (), setup_network: Any = None, limits: Any = None
        ) -> None:
            made.append(tuple(toolchain_paths))
            policies.append(setup_network)
            limits_seen.append(limits)

        def check(self) -> None:
            RecordingSandbox.checked = True

    monkeypatch.setattr(runners.factory, "LocalSandbox", RecordingSandbox)
    settings = settings.model_copy(update={"sandbox_disk_mb": 100, "sandbox_cpus": 0.5})
    runner = _make_runner(settings, False, (Path("/opt/venv"),))
    assert isinstance(runner, RecordingSandbox) and RecordingSandbox.checked
    assert made == [(Path("/opt/venv"),)]
    assert policies[0].mode == "registries"  # ARCS_SETUP_NETWORK's default reaches the sandbox
    # ARCS_SANDBOX_* reach the sandbox as plain values.
    assert limits_seen[0] == settings.sandbox_limits()
    assert (limits_seen[0].disk_mb, limits_seen[0].cpus) == (100, 0.5)


def test_an_unknown_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown runner 'podman'"):
        make_runner(kind="podman")  # type: ignore[arg-type]
