"""CI cannot pass by skipping: scripts/ci-services fails naming a service that does not answer,
and scripts/check-skips (the skip budget) fails on a skip the allowlist does not expect.

The service checks point the script at unused ports instead of stopping this machine's shared
servers; the skip budget runs a real pytest session and reads its JUnit XML."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CI_SERVICES = ROOT / "scripts" / "ci-services"
CHECK_SKIPS = ROOT / "scripts" / "check-skips"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def ci_services(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(CI_SERVICES)],
        env={**os.environ, "CI_SERVICES_TIMEOUT": "2", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ci_services_fails_naming_each_service_that_does_not_answer() -> None:
    pg, redis, amqp = free_port(), free_port(), free_port()
    done = ci_services(
        CI_PG_PORT=str(pg),
        CI_REDIS_PORT=str(redis),
        CI_AMQP_PORT=str(amqp),
        CI_START_POSTGRES="true",  # "starts" nothing: what a broken start looks like
        CI_START_REDIS="exit 3",
        CI_START_RABBITMQ="true",
    )
    assert done.returncode == 1, done.stderr
    assert f"FAILED: PostgreSQL on 127.0.0.1:{pg} did not start" in done.stderr
    assert f"FAILED: Redis on 127.0.0.1:{redis} did not start" in done.stderr
    assert f"FAILED: RabbitMQ on 127.0.0.1:{amqp} did not start" in done.stderr
    assert "redis: the start command failed" in done.stderr


def test_ci_services_starts_a_service_that_is_down_and_passes(tmp_path: Path) -> None:
    # Redis on a port of its own (the shared one stays untouched): down, started, answering.
    assert shutil.which("redis-server") and shutil.which("redis-cli"), "CI needs Redis installed"
    port = free_port()
    start = (
        f"redis-server --daemonize yes --bind 127.0.0.1 --port {port} --save '' --appendonly no "
        f"--dir {tmp_path} --pidfile {tmp_path}/redis.pid --logfile {tmp_path}/redis.log"
    )
    try:
        done = ci_services(CI_REDIS_PORT=str(port), CI_START_REDIS=start, CI_SERVICES_TIMEOUT="20")
        assert done.returncode == 0, done.stderr
        assert f"starting redis: {start}" in done.stderr and "redis is up (after" in done.stderr
    finally:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True, check=False)


def test_a_non_amqp_listener_is_not_taken_for_rabbitmq() -> None:
    # Something answers on the port, but not AMQP: the check must not count it as the broker.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        done = ci_services(CI_AMQP_PORT=str(port), CI_START_RABBITMQ="true", CI_SERVICES_TIMEOUT="1")
    assert done.returncode == 1 and f"RabbitMQ on 127.0.0.1:{port} did not start" in done.stderr


def run_skipping_tests(tmp_path: Path) -> Path:
    """A real pytest session with one expected and one unexpected skip; its JUnit XML."""
    (tmp_path / "test_fake_services.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_needs_docker():
                pytest.skip("no Docker engine answers `docker info`: Cannot connect")

            def test_needs_redis():
                pytest.skip("Redis on 127.0.0.1:6379 is unreachable (Connection refused)")

            def test_runs():
                assert True
            """
        )
    )
    junit = tmp_path / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
         f"--rootdir={tmp_path}", f"--junitxml={junit}", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return junit


def check_skips(junit: Path, allowlist: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECK_SKIPS), str(junit), str(allowlist)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_skip_budget_fails_on_an_unexpected_skip(tmp_path: Path) -> None:
    junit = run_skipping_tests(tmp_path)
    allowlist = tmp_path / "allowed.txt"
    allowlist.write_text("# only Docker may be missing\ntest_fake_services | ^no Docker engine answers\n")
    done = check_skips(junit, allowlist)
    assert done.returncode == 1, done.stderr
    assert "FAILED: 1 test(s) skipped" in done.stderr
    assert "test_fake_services::test_needs_redis: Redis on 127.0.0.1:6379 is unreachable" in done.stderr
    assert "allowed: 1 skipped: no Docker engine answers" in done.stderr
    # Allow it too, and the same session passes the budget.
    allowlist.write_text(allowlist.read_text() + "test_fake_services | ^Redis on\n")
    assert check_skips(junit, allowlist).returncode == 0


def test_a_malformed_allowlist_is_a_clear_error(tmp_path: Path) -> None:
    junit = run_skipping_tests(tmp_path)
    allowlist = tmp_path / "allowed.txt"
    allowlist.write_text("no Docker engine\n")
    done = check_skips(junit, allowlist)
    assert done.returncode == 2
    assert (
        done.stderr.count("\n") == 1
        and "allowed.txt:1: expected '<test prefix> | <reason regex>'" in done.stderr
    )


def test_the_committed_allowlist_never_excuses_a_missing_service_or_sandbox() -> None:
    text = (ROOT / ".ci" / "allowed-skips.txt").read_text(encoding="utf-8")
    rules = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert rules
    for rule in rules:
        prefix, _, pattern = rule.partition(" | ")
        assert prefix.startswith("tests.") and pattern.startswith("^"), rule
        for service in ("PostgreSQL", "Redis", "RabbitMQ", "bubblewrap", "chromium"):
            assert service.lower() not in rule.lower(), rule
