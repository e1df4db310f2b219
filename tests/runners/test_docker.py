"""DockerRunner: the ``docker run`` command line (pure) and, where an engine exists, real runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runners.base import Runner
from runners.docker import NOBODY, DockerOptions, DockerRunner, docker_run_argv
from runners.sandbox import SANDBOX_WORKDIR, SandboxUnavailable


def argv(**overrides: object) -> list[str]:
    values: dict[str, object] = {
        "docker": "/usr/bin/docker",
        "name": "arcs-test",
        "options": DockerOptions(),
        "user": f"{NOBODY}:{NOBODY}",
        "workspace": Path("/srv/ws"),
        "command": "pytest -q",
        "memory_mb": 1024,
        "network": False,
        "env": {"HOME": "/home/sandbox", "CI": "1"},
    }
    values.update(overrides)
    return docker_run_argv(**values)  # type: ignore[arg-type]


def value(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == flag]


def test_argv_mounts_the_private_folder_only_when_given() -> None:
    assert "/srv/p:/run/arcs:rw" in value(argv(private=Path("/srv/p")), "--volume")
    assert not any("/run/arcs:" in v for v in value(argv(), "--volume"))


def test_argv_isolates_the_container() -> None:
    args = argv()
    assert args[:3] == ["/usr/bin/docker", "run", "--rm"]
    assert value(args, "--name") == ["arcs-test"]
    assert value(args, "--network") == ["none"]
    assert "--read-only" in args and "--init" in args
    assert any(t.startswith("/tmp:") and "size=1024m" in t for t in value(args, "--tmpfs"))
    assert value(args, "--user") == ["65534:65534"]
    assert value(args, "--cap-drop") == ["ALL"]
    assert value(args, "--security-opt") == ["no-new-privileges"]
    assert value(args, "--memory") == ["1024m"] and value(args, "--memory-swap") == ["1024m"]
    assert value(args, "--pids-limit") == ["512"]
    assert value(args, "--cpus") == ["2"]
    assert value(args, "--volume") == [f"/srv/ws:{SANDBOX_WORKDIR}:rw"]
    assert value(args, "--workdir") == [SANDBOX_WORKDIR]
    assert value(args, "--env") == ["HOME=/home/sandbox", "CI=1"]
    assert "--runtime" not in args
    assert args[-4:] == ["python:3.11-slim", "sh", "-c", "pytest -q"]


def test_argv_options() -> None:
    options = DockerOptions(image="node:22", runtime="runsc", cpus=0.5, pids_limit=64, tmpfs_mb=128)
    args = argv(options=options, network=True, memory_mb=300)
    assert value(args, "--runtime") == ["runsc"]
    assert value(args, "--network") == ["bridge"]  # setup phase only
    assert value(args, "--cpus") == ["0.5"]
    assert value(args, "--pids-limit") == ["64"]
    assert value(args, "--memory") == ["300m"]
    assert args[-4] == "node:22"


def test_missing_client_is_a_clear_error() -> None:
    with pytest.raises(SandboxUnavailable, match="docker client"):
        DockerRunner(docker="/nonexistent/docker")


def test_client_env_carries_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("docker") is None:
        pytest.skip("the docker client is not installed")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("DOCKER_HOST", "unix:///var/run/docker.sock")
    env = DockerRunner().client_env()
    assert "GITHUB_TOKEN" not in env and "ANTHROPIC_API_KEY" not in env
    assert env["DOCKER_HOST"] == "unix:///var/run/docker.sock"


@pytest.fixture(scope="module")
def engine() -> DockerRunner:
    if shutil.which("docker") is None:
        pytest.skip("the docker client is not installed")
    runner = DockerRunner()
    reason = runner.engine_error()
    if reason is not None:
        pytest.skip(f"no Docker engine answers `docker info`: {reason}")
    return runner


def test_engine_runs_isolated(engine: DockerRunner, tmp_path: Path) -> None:
    assert isinstance(engine, Runner)
    (tmp_path / "in.txt").write_text("hi\n")
    result = engine.run(tmp_path, "cat in.txt; echo out > out.txt; id -u; touch /x || echo ro", timeout_s=300)
    assert result.ok, result.stderr
    assert result.stdout.splitlines()[0] == "hi"
    assert "ro" in result.stdout
    assert (tmp_path / "out.txt").read_text() == "out\n"


def test_engine_has_no_network(engine: DockerRunner, tmp_path: Path) -> None:
    command = "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)\""
    result = engine.run(tmp_path, command, timeout_s=300)
    assert not result.ok


def test_engine_timeout_kills_the_container(engine: DockerRunner, tmp_path: Path) -> None:
    result = engine.run(tmp_path, "sleep 600", timeout_s=5)
    assert result.killed_by == "timeout"


def test_settings_factory_checks_a_real_engine(engine: DockerRunner) -> None:
    from runners.factory import make_runner

    runner = make_runner(kind="docker", image="python:3.11-slim", docker=engine.docker)
    assert isinstance(runner, DockerRunner) and runner.options.image == "python:3.11-slim"
