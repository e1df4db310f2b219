"""A real ``arcs worker`` (two processes) on the real Redis, processing one job, stopped by SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.settings import load_settings
from bot.store import open_store
from jobs.broker import make_enqueuer
from jobs.messages import JobRequest

ROOT = Path(__file__).parents[2]
REDIS_URL = "redis://127.0.0.1:6379/14"
REPO = "octo/app"

# Runs the CLI with `worker` registered, whether or not the registry lists it yet.
CLI = (
    "import sys\n"
    "from bot.cli import app, commands, worker_cmd\n"
    "if worker_cmd.register not in commands.REGISTRY:\n"
    "    commands.REGISTRY.append(worker_cmd.register)\n"
    "raise SystemExit(app.main(sys.argv[1:]))\n"
)


def _redis_unreachable() -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2):
            return None
    except OSError as exc:
        return str(exc)


@pytest.mark.slow
def test_a_worker_process_runs_a_job_and_stops_gracefully(tmp_path: Path) -> None:
    reason = _redis_unreachable()
    if reason is not None:
        pytest.skip(f"Redis on 127.0.0.1:6379 is unreachable ({reason})")
    env = {"ARCS_HOME": str(tmp_path / "home"), "ARCS_BROKER_URL": REDIS_URL, "ARCS_EMBEDDER": "hash"}
    settings = load_settings(env)
    with open_store(settings) as store:
        attempt, _ = store.claim_attempt("k", repo=REPO, trigger="ci", status="fixed")
        store.record_pr(
            repo=REPO, number=12, url="https://x/12", branch="arcs/fix/main", attempt_id=attempt.id
        )
    enqueuer = make_enqueuer(settings)
    enqueuer.broker.flush_all()
    enqueuer.enqueue(
        JobRequest(
            "record_pr_outcome",
            {"repo": REPO, "number": 12, "merged": True, "merged_at": "2026-11-02T10:00:00Z"},
            context={"delivery_id": "d-proc", "repo": REPO},
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "worker", "--processes", "2", "--threads", "1", "--grace", "5"],
        cwd=ROOT,
        env={**os.environ, **env, "ARCS_LOG_FORMAT": "json"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err_lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: err_lines.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()

    def events(name: str) -> list[dict[str, object]]:
        parsed = [json.loads(line) for line in list(err_lines) if line.startswith("{")]
        return [e for e in parsed if e.get("event") == name]

    try:
        deadline = time.monotonic() + 120
        state = None
        with open_store(settings) as store:
            # Both children up (so SIGTERM meets their handlers) and the job done.
            while time.monotonic() < deadline and proc.poll() is None:
                row = store.get_pr(REPO, 12)
                state = row.state if row is not None else None
                if state == "merged" and len(events("worker.started")) == 2:
                    break
                time.sleep(0.5)
        assert state == "merged", "".join(err_lines[-20:]) or "the worker did not finish the job"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(10)  # the reader owns stderr; stdout holds one line
        stdout = proc.stdout.read() if proc.stdout is not None else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        reader.join(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        enqueuer.broker.flush_all()
        enqueuer.close()
    assert proc.returncode == 0, "".join(err_lines[-20:])
    done = events("job.done")
    assert [(e["job"], e["outcome"], e["delivery_id"]) for e in done] == [
        ("record_pr_outcome", "merged", "d-proc")
    ]
    assert len(events("worker.stopped")) == 2
    assert "arcs worker: stopped" in stdout


@pytest.fixture
def cli_with_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import structlog

    from bot.cli import commands, worker_cmd

    if worker_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, worker_cmd.register])
    yield
    # main() pointed structlog at the captured stderr, which pytest closes after the test.
    structlog.reset_defaults()


@pytest.mark.usefixtures("cli_with_worker")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["worker", "--processes", "0"], "--processes must be at least 1"),
        (["worker", "--threads", "0"], "--threads must be at least 1"),
        (["worker", "--queues", "arcs-github,nope"], "unknown queue(s) nope"),
    ],
)
def test_worker_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    from bot.cli.app import main

    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_BROKER_URL": REDIS_URL})
    assert main(argv, settings=settings) == 2
    assert message in capsys.readouterr().err


@pytest.mark.usefixtures("cli_with_worker")
def test_a_worker_without_a_shared_broker_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli.app import main

    assert main(["worker"], settings=load_settings({"ARCS_HOME": str(tmp_path)})) == 2
    err = capsys.readouterr().err
    assert err.startswith("arcs: error: worker: ARCS_BROKER_URL is not set") and err.count("\n") == 1


@pytest.fixture
def restore_global_broker() -> Iterator[None]:
    import dramatiq

    previous = dramatiq.broker.global_broker
    yield
    dramatiq.broker.global_broker = previous


@pytest.mark.usefixtures("cli_with_worker", "restore_global_broker")
def test_a_worker_fails_fast_when_the_broker_is_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli.app import main

    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_BROKER_URL": "redis://127.0.0.1:1/0"})
    assert main(["worker"], settings=settings) == 1
    assert "arcs: error: worker: broker unreachable" in capsys.readouterr().err


@pytest.mark.usefixtures("restore_global_broker")
def test_serve_processes_jobs_until_stopped(tmp_path: Path) -> None:
    from bot.worker_wiring import worker_spec
    from jobs.worker import serve

    reason = _redis_unreachable()
    if reason is not None:
        pytest.skip(f"Redis on 127.0.0.1:6379 is unreachable ({reason})")
    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_BROKER_URL": "redis://127.0.0.1:6379/13"})
    with open_store(settings) as store:
        store.record_pr(repo=REPO, number=3, url="https://x/3", branch="arcs/fix/main")
    enqueuer = make_enqueuer(settings)
    enqueuer.broker.flush_all()
    enqueuer.enqueue(JobRequest("record_pr_outcome", {"repo": REPO, "number": 3, "merged": False}))
    stop = threading.Event()
    codes: list[int] = []
    runner = threading.Thread(
        target=lambda: codes.append(serve(worker_spec(settings), threads=1, stop=stop, grace_s=2))
    )
    runner.start()
    try:
        with open_store(settings) as store:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                row = store.get_pr(REPO, 3)
                if row is not None and row.state == "closed":
                    break
                time.sleep(0.2)
            row = store.get_pr(REPO, 3)
            assert row is not None and row.state == "closed"
    finally:
        stop.set()
        runner.join(60)
        enqueuer.broker.flush_all()
        enqueuer.close()
    assert codes == [0]
