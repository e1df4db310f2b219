"""Webhook intake throughput: ARCS's ``POST /webhooks/github`` against a bare Starlette endpoint.

See ``bench/intake/README.md``. One run measures, per database backend, the bare endpoint and then
ARCS, both served the same way (gunicorn + uvicorn workers, ``--workers`` processes), at each
concurrency, with wrk as the load generator (loopback only). ``--label`` names the code under test
(``before``: a read-only worktree of the old code given with ``--code``; ``after``: this tree);
results are merged into ``bench/results/intake.json`` under that label and the ``## Intake`` table
of ``bench/RESULTS.md`` is regenerated from every label in the JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.common import REPO_ROOT, RESULTS_DIR, machine_info, markdown_table, today, update_results_md

HERE = Path(__file__).resolve().parent
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "webhooks"
SECRET = "bench-intake-secret"
PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/11"
RESULTS_JSON = RESULTS_DIR / "intake.json"


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def load_avg() -> float:
    """The 1-minute load average."""
    return round(os.getloadavg()[0], 2)


@contextlib.contextmanager
def server(
    app: str, *, code: Path, env: dict[str, str], workers: int, log: Path
) -> Iterator[tuple[int, int]]:
    """Run ``bench/intake/serve.py`` for ``app`` with ``code`` first on the path; yield its port
    and the gunicorn master's pid."""
    port = free_port()
    full_env = {**os.environ, **env, "PYTHONPATH": str(code)}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "serve.py"),
                "--app",
                app,
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            cwd=code,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{app} server exited; see {log}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{app} server did not start; see {log}")
            time.sleep(0.3)
        loaded = re.findall(rf"bench_app_loaded app={app} code=(\S+)", log.read_text(errors="replace"))
        if not loaded or not all(Path(p).resolve().is_relative_to(code.resolve()) for p in loaded):
            raise RuntimeError(f"the {app} server did not import the code under test ({code}): {loaded}")
        yield port, proc.pid
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def workers_cpu_s(master: int) -> float:
    """CPU seconds (user + system) used so far by the gunicorn workers under ``master``.

    Unlike requests per second, CPU per answered request hardly depends on what else the shared
    machine runs at that moment, so it shows what a change costs or saves."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for child in Path("/proc").glob("[0-9]*"):
        try:
            fields = (child / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == master:  # ppid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def run_wrk(
    port: int, *, connections: int, duration: int, prefix: str, event: str, sig: str, body: Path
) -> dict[str, Any]:
    """One wrk run; the Lua script's ``done`` prints the summary as JSON."""
    threads = min(2, connections)
    cmd = [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--timeout", "10s",
        "-s", str(HERE / "post.lua"), f"http://127.0.0.1:{port}",
        "--", prefix, event, sig, str(body),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("WRKJSON "))
    raw = json.loads(line.removeprefix("WRKJSON "))
    seconds = raw["duration_us"] / 1e6
    errors = sum(raw["errors"].values())
    return {
        "connections": connections,
        "requests": raw["requests"],
        "errors": raw["errors"],
        "rps": round((raw["requests"] - errors) / seconds, 1),
        "p50_ms": round(raw["latency_us"]["p50"] / 1000, 2),
        "p90_ms": round(raw["latency_us"]["p90"] / 1000, 2),
        "p99_ms": round(raw["latency_us"]["p99"] / 1000, 2),
        "max_ms": round(raw["latency_us"]["max"] / 1000, 2),
    }


def flush_redis() -> None:
    """Empty the benchmark's Redis database (the queue grows by one message per delivery)."""
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


@contextlib.contextmanager
def database(backend: str, tmp: Path) -> Iterator[str | None]:
    """A fresh database URL for ``backend`` (``None`` when PostgreSQL is unreachable)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp / 'arcs.db'}"
        return
    from sqlalchemy import create_engine, text

    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
    name = f"arcs_bench_intake_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        print(f"postgresql unreachable, skipped: {exc}", file=sys.stderr)
        admin.dispose()
        yield None
        return
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def count_deliveries(url: str, prefix: str) -> int:
    """Deliveries recorded by one wrk run (its ids start with ``prefix``)."""
    from sqlalchemy import create_engine, text

    from bot.store.store import normalize_url

    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM deliveries WHERE delivery_id LIKE :p"), {"p": prefix + "-%"}
                ).scalar_one()
            )
    finally:
        engine.dispose()


def _median_result(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median throughput, plus every round's throughput and p99."""
    ordered = sorted(runs, key=lambda r: r["rps"])
    chosen = dict(ordered[len(ordered) // 2])
    chosen["rounds"] = [{"rps": r["rps"], "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"]} for r in runs]
    return chosen


def measure_backend(
    backend: str, args: argparse.Namespace, tmp: Path, body: Path, sig: str
) -> dict[str, Any] | None:
    """Bare and ARCS side by side (both served, measured in alternating rounds so that the load of
    a shared machine hits both alike) at every concurrency, against one database backend."""
    event = args.event.split(".", 1)[0]  # the fixture stem's X-GitHub-Event
    with database(backend, tmp) as url:
        if url is None:
            return None
        env = {
            "ARCS_HOME": str(tmp / "home"),
            "ARCS_DATABASE_URL": url,
            "ARCS_BROKER_URL": REDIS_URL,
            "ARCS_WEBHOOK_SECRET": SECRET,
            "ARCS_APP_ID": "1",
            "ARCS_EMBEDDER": "hash",
            "ARCS_LOG_FORMAT": "json",
            "ARCS_SESSION_SECRET": "bench-session-secret",
        }
        out: dict[str, Any] = {"backend": backend, "apps": {"bare": [], "arcs": []}}
        run_id = uuid.uuid4().hex[:6]
        logs = {app: tmp / f"{backend}-{app}.log" for app in ("bare", "arcs")}
        with contextlib.ExitStack() as stack:
            served = {
                app: stack.enter_context(
                    server(app, code=args.code, env=env, workers=args.workers, log=logs[app])
                )
                for app in ("bare", "arcs")
            }
            ports = {app: port for app, (port, _) in served.items()}
            for app, port in ports.items():
                warm = f"w{run_id}-{backend[:2]}-{app}"
                run_wrk(
                    port, connections=10, duration=args.warmup, prefix=warm, event=event, sig=sig, body=body
                )
            for connections in args.concurrency:
                rounds: dict[str, list[dict[str, Any]]] = {"bare": [], "arcs": []}
                for r in range(args.rounds):
                    for app in ("bare", "arcs") if r % 2 == 0 else ("arcs", "bare"):
                        flush_redis()
                        prefix = f"b{run_id}-{backend[:2]}-{app}-c{connections}-r{r}"
                        cpu_before = workers_cpu_s(served[app][1])
                        result = run_wrk(
                            ports[app], connections=connections, duration=args.duration, prefix=prefix,
                            event=event, sig=sig, body=body,
                        )  # fmt: skip
                        answered = result["rps"] * args.duration
                        cpu_ms = (workers_cpu_s(served[app][1]) - cpu_before) * 1000
                        result["cpu_ms_per_req"] = round(cpu_ms / answered, 3) if answered else None
                        if app == "arcs":
                            # Every answered request is one recorded delivery (no id collided).
                            result["recorded"] = count_deliveries(url, prefix)
                        result["load_avg"] = load_avg()
                        rounds[app].append(result)
                        print(f"{backend:10} {app:4} c={connections:<3} r{r} {result}", file=sys.stderr)
                for app, runs in rounds.items():
                    out["apps"][app].append(_median_result(runs))
        flush_redis()
        out["ratios"] = [
            {
                "connections": a["connections"],
                "rps_ratio": round(a["rps"] / b["rps"], 3) if b["rps"] else None,
                "arcs_p99_ms": a["p99_ms"],
                "bare_p99_ms": b["p99_ms"],
            }
            for a, b in zip(out["apps"]["arcs"], out["apps"]["bare"], strict=True)
        ]
        return out


def _cpu(result: dict[str, Any]) -> object:
    """The workers' CPU per answered request, or a dash for runs made before it was measured."""
    value = result.get("cpu_ms_per_req")
    return "-" if value is None else value


def markdown(results: dict[str, Any]) -> str:
    """The ``## Intake`` block: one row per label, backend and concurrency."""
    rows: list[list[object]] = []
    notes: list[str] = []
    for label, run in results.get("runs", {}).items():
        notes.append(
            f"`{label}`: {run['date']}, code `{run['code_commit']}`{' + working tree' if run.get('dirty') else ''}, "
            f"event `{run['event']}`, {run['workers']} gunicorn workers, {run.get('rounds', 1)} alternating rounds of "
            f"{run['duration_s']} s per level (median round), "
            f"load average {run['load_before']} -> {run['load_after']}"
        )
        for backend in run["backends"]:
            bare = {r["connections"]: r for r in backend["apps"]["bare"]}
            for a in backend["apps"]["arcs"]:
                b = bare[a["connections"]]
                rows.append([
                    label, backend["backend"], a["connections"], b["rps"], a["rps"],
                    round(a["rps"] / b["rps"], 3) if b["rps"] else 0.0,
                    b["p50_ms"], a["p50_ms"], b["p99_ms"], a["p99_ms"],
                    sum(a["errors"].values()),
                    _cpu(b), _cpu(a),
                ])  # fmt: skip
    table = markdown_table(
        ["code", "database", "concurrent", "bare req/s", "ARCS req/s", "ratio", "bare p50 ms", "ARCS p50 ms",
         "bare p99 ms", "ARCS p99 ms", "ARCS errors", "bare CPU ms/req", "ARCS CPU ms/req"],
        rows,
    )  # fmt: skip
    machine = results.get("machine", {})
    head = (
        f"wrk 4.1 over loopback; {machine.get('cpu', '?')}, {machine.get('cpus_available', '?')} CPUs shared by "
        "the servers, wrk, PostgreSQL and Redis (and other jobs). Reproduce with "
        "`python -m bench.intake.run --label after` (and `--label before --code <worktree of the old code>`); "
        "raw numbers in `bench/results/intake.json`."
    )
    return head + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n\n" + table


def git_facts(code: Path) -> tuple[str, bool]:
    """The commit of ``code`` and whether its tree has local changes."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=code, capture_output=True, text=True)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", "bot", "jobs"], cwd=code, capture_output=True, text=True
    )
    return commit.stdout.strip() or "?", bool(status.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and merge the results under ``--label``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--label", required=True, help="name of the code under test (before, after)")
    parser.add_argument("--code", type=Path, default=REPO_ROOT, help="root of the code under test")
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--concurrency", default="10,50,100")
    parser.add_argument("--duration", type=int, default=5, help="seconds per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per level (median kept)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--event", default="workflow_run.completed.failure", help="fixture stem")
    parser.add_argument("--no-write", action="store_true", help="print only; do not touch the results")
    parser.add_argument("--logs", type=Path, help="copy the servers' logs to this folder")
    args = parser.parse_args(argv)
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    if shutil.which("wrk") is None:
        parser.error("wrk is not installed (apt-get install wrk)")

    body_bytes = json.dumps(
        json.loads((FIXTURES / f"{args.event}.json").read_text()), separators=(",", ":")
    ).encode()
    sig = "sha256=" + hmac.new(SECRET.encode(), body_bytes, hashlib.sha256).hexdigest()
    commit, dirty = git_facts(args.code)
    run: dict[str, Any] = {
        "date": today(),
        "code": str(args.code),
        "code_commit": commit,
        "dirty": dirty,
        "event": args.event.split(".")[0] + " (" + args.event + ", " + f"{len(body_bytes)} bytes)",
        "workers": args.workers,
        "duration_s": args.duration,
        "rounds": args.rounds,
        "load_before": load_avg(),
        "backends": [],
    }
    with tempfile.TemporaryDirectory(prefix="arcs-bench-intake-") as tmp_name:
        tmp = Path(tmp_name)
        body = tmp / "body.json"
        body.write_bytes(body_bytes)
        for backend in args.backends.split(","):
            sub = tmp / backend
            sub.mkdir()
            measured = measure_backend(backend, args, sub, body, sig)
            if measured is not None:
                run["backends"].append(measured)
        if args.logs is not None:
            args.logs.mkdir(parents=True, exist_ok=True)
            for log in tmp.glob("*/*.log"):
                shutil.copy(log, args.logs / log.name)
    run["load_after"] = load_avg()
    print(json.dumps(run, indent=2))
    if args.no_write:
        return 0
    results = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    results["machine"] = machine_info()
    results.setdefault("runs", {})[args.label] = run
    RESULTS_JSON.write_text(json.dumps(results, indent=2) + "\n")
    update_results_md("Intake", "intake", markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
