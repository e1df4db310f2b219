"""Dashboard benchmark: the org dashboard's queries, its pages and ``/metrics`` over a large org.

``python -m bench.dashboard.run [--attempts 100000] [--reps 10] [--backends sqlite,postgresql] [--no-write]``

1. **Generate** a synthetic org history (:mod:`bench.dashboard.generate`, seeded: one owner, 200
   repositories, 100k attempts over 52 weeks, 30k pull requests, 20k events, 150k webhook
   deliveries; attempt payloads of realistic size) relative to ``now`` (the start of the run, or
   ``--now``).
2. **Load** it into a migrated store on each backend: a temporary SQLite file, and a throwaway
   PostgreSQL database on 127.0.0.1:5432 (created with a unique name, dropped at the end).
3. **Time** (warm: one untimed call first, then up to ``--reps`` calls within ``--budget-s`` per
   operation, at least 3; median and p95) each dashboard query as the pages call it, a full
   ``/metrics`` collection (``StoreCollector.collect``), and the pages end to end through the real
   app (:func:`bot.web.app.create_app` with the real store, the real cookie session and viewer
   middleware; a dashboard session row for a viewer who sees all the org's repositories, and a
   signed cookie naming it), with Starlette's ``TestClient`` (``GET /healthz`` through the same
   client is the floor: client, middleware and routing).
4. **Explain**: each operation runs once more with its SQL statements logged (count, time per
   statement; on SQLite the time of a statement also includes stepping through its rows);
   the slowest statements of the slow operations get ``EXPLAIN QUERY PLAN`` (SQLite) or
   ``EXPLAIN (ANALYZE, BUFFERS)`` (PostgreSQL).
5. **Experiments** (``--no-experiments`` skips them), in the benchmark's database only: candidate
   indexes are created (``bench_exp_*``) and the slow operations are timed again. They are
   proposals for a migration, not part of ARCS's schema.

Writes ``bench/results/dashboard.json`` and the generated block of ``## Dashboard and metrics at
scale`` in ``bench/RESULTS.md`` (``--no-write``: print only). Targets: the org page <= 500 ms server
time at 100k attempts, ``/metrics`` <= 1 s.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, text

from bench.common import RESULTS_DIR, machine_info, percentile, today, update_results_md
from bench.dashboard.generate import OrgHistory, OrgSpec, generate_org, load
from bench.dashboard.proposals import org_overview_onepass, same_overview

TARGETS = {"org_page_ms": 500.0, "metrics_ms": 1000.0}
PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SECTION = "Dashboard and metrics at scale"
SLOW_MS = 100.0
"""Operations slower than this (median) get their slowest statements explained."""

EXPERIMENTS: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = (
    (
        "covering indexes",
        ("sqlite", "postgresql"),
        "attempts(created_at, repo, status, cost_usd, failure_class, trigger) for the windowed "
        "aggregates; attempts(status, started_at, finished_at) for the /metrics duration histogram",
        (
            "CREATE INDEX bench_exp_attempts_window ON attempts "
            "(created_at, repo, status, cost_usd, failure_class, trigger)",
            "CREATE INDEX bench_exp_attempts_duration ON attempts (status, started_at, finished_at)",
        ),
    ),
    (
        "+ lower(repo) index",
        ("sqlite", "postgresql"),
        "attempts(lower(repo), created_at) for one repository's page (the queries compare lower(repo))",
        ("CREATE INDEX bench_exp_attempts_lower_repo ON attempts (lower(repo), created_at)",),
    ),
    (
        "+ ANALYZE",
        ("sqlite",),
        "SQLite statistics (ARCS never runs ANALYZE; PostgreSQL's autovacuum does)",
        ("ANALYZE",),
    ),
)
"""Cumulative: each experiment keeps the indexes of the previous ones (``(name, backends, why, ddl)``)."""
EXPERIMENT_OPS = (
    "org_overview_12w",
    "org_overview_12w_onepass",
    "owners_with_data",
    "repo_attempts_page1",
    "metrics_collect",
    "page_org_12w",
    "page_org_12w_onepass",
    "page_repo",
    "page_metrics",
)
PROPOSALS = ("org_overview_12w_onepass", "page_org_12w_onepass")
"""Operations that time a prototype (:mod:`bench.dashboard.proposals`), not ARCS's code."""


# --- timing ------------------------------------------------------------------------------------


def timed_runs(fn: Callable[[], object], reps: int, budget_s: float, min_reps: int = 3) -> list[float]:
    """Milliseconds of up to ``reps`` calls after one untimed warm-up; stops early once the
    calls took ``budget_s`` in all and at least ``min_reps`` were made."""
    fn()
    out: list[float] = []
    spent = 0.0
    while len(out) < reps and (len(out) < min_reps or spent < budget_s):
        started = time.perf_counter()
        fn()
        seconds = time.perf_counter() - started
        spent += seconds
        out.append(seconds * 1000)
    return out


def summarize(samples: list[float]) -> dict[str, Any]:
    """median/p95/min/max (ms) and the sample count."""
    return {
        "n": len(samples),
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "min_ms": round(min(samples), 1),
        "max_ms": round(max(samples), 1),
    }


def load1() -> float:
    """The 1-minute load average."""
    return round(os.getloadavg()[0], 2)


@dataclass
class StatementLog:
    """SQL statements an engine ran while ``capture`` was on: text, parameters, milliseconds."""

    engine: Engine
    capture: bool = False
    rows: list[tuple[str, Any, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        event.listen(self.engine, "before_cursor_execute", self._before)
        event.listen(self.engine, "after_cursor_execute", self._after)

    def _before(self, conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        conn.info["bench_started"] = time.perf_counter()

    def _after(self, conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        if self.capture:
            started = conn.info.pop("bench_started", time.perf_counter())
            self.rows.append((statement, params, (time.perf_counter() - started) * 1000))

    @contextmanager
    def recording(self) -> Iterator[list[tuple[str, Any, float]]]:
        """Log the statements run inside the block."""
        self.rows = []
        self.capture = True
        try:
            yield self.rows
        finally:
            self.capture = False


def _short_sql(statement: str, limit: int = 200) -> str:
    flat = " ".join(statement.split())
    # The visible-repository lists are 200 parameters long: keep the shape, not the list.
    flat = _IN_LIST.sub(lambda m: "IN (…)" if m.group(1).count(",") > 5 else m.group(0), flat)
    return flat[:limit] + ("…" if len(flat) > limit else "")


_IN_LIST = re.compile(r"IN \(((?:[^()]|\([^()]*\))*)\)")


def explain(engine: Engine, statement: str, params: Any) -> list[str]:
    """The plan of one logged statement (PostgreSQL: executed, with buffers)."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            rows = conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, params).all()
            lines = [str(r[0]) for r in rows]
        else:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
            lines = [f"{'  ' * _depth(rows, r)}{r[-1]}" for r in rows]
    return [line if len(line) <= 240 else line[:240] + "…" for line in lines]


def _depth(rows: Sequence[Any], row: Any) -> int:
    parents = {r[0]: r[1] for r in rows}
    depth, parent = 0, row[1]
    while parent in parents and depth < 10:
        depth += 1
        parent = parents[parent]
    return depth


# --- the app -------------------------------------------------------------------------------------


class NullEnqueuer:
    """An enqueuer that is never used (the benchmark sends no webhook)."""

    def enqueue(self, job: object) -> None:
        """Refuse: nothing may be enqueued here."""
        raise RuntimeError("the dashboard benchmark enqueues nothing")

    def ping(self) -> None:
        """Always reachable."""


def app_client(store: Any, settings: Any, history: OrgHistory, viewer: Any) -> Any:
    """A TestClient of the real app (create_app) logged in as ``viewer`` through a real session row."""
    import itsdangerous
    from starlette.testclient import TestClient

    from bot.dashboard.auth import SESSION_COOKIE, SID_KEY, session_id_hash
    from bot.web.app import create_app

    sid = secrets.token_urlsafe(32)
    store.create_session(
        session_id_hash(sid),
        login=viewer.login,
        user_id=1,
        scope=viewer.scope_json(),
        csrf="bench-csrf",
        expires_at=dt.datetime.now(dt.UTC) + dt.timedelta(days=1),
    )
    # What Starlette's SessionMiddleware writes: base64(JSON) signed with a timestamp.
    payload = base64.b64encode(json.dumps({SID_KEY: sid}).encode("utf-8"))
    secret = settings.session_secret.get_secret_value()
    cookie = itsdangerous.TimestampSigner(secret).sign(payload).decode("utf-8")
    app = create_app(settings, store=store, enqueuer=NullEnqueuer())
    # Not entered as a context manager: the lifespan (githubkit warm-up) is not part of a request.
    return TestClient(app, cookies={SESSION_COOKIE: cookie}, follow_redirects=False)


def _get(client: Any, path: str) -> Callable[[], object]:
    def call() -> object:
        response = client.get(path)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path} answered {response.status_code}")
        return response

    return call


# --- the operations --------------------------------------------------------------------------------


def operations(store: Any, history: OrgHistory, client: Any) -> dict[str, Callable[[], object]]:
    """Every timed operation, as the pages call them (names are the JSON keys)."""
    from bot.dashboard import queries as q
    from bot.dashboard.metrics import StoreCollector
    from bot.dashboard.viewer import Viewer

    owner = history.spec.owner
    repos = frozenset(r.lower() for r in history.repos)
    viewer = Viewer.of("bench", owners=[owner], repos=history.repos, admin_of=[owner])
    visible = viewer.visible_repos(owner)
    now = history.now
    since12 = q.window_start(now, 12)
    busiest = history.busiest_repo()
    with_events = {e["attempt_id"] for e in history.events if e["attempt_id"] is not None}
    detail_id = max(p["attempt_id"] for p in history.pull_requests if p["attempt_id"] in with_events)
    collector = StoreCollector(store)
    org_path = f"/orgs/{quote(owner)}"
    page_org = _get(client, org_path)

    def page_org_onepass() -> object:
        # The page calls queries.org_overview through the module: swap in the prototype.
        real = q.org_overview
        setattr(q, "org_overview", org_overview_onepass)  # noqa: B010
        try:
            return page_org()
        finally:
            setattr(q, "org_overview", real)  # noqa: B010

    return {
        "owner_name": lambda: q.owner_name(store, owner),
        "org_overview_12w": lambda: q.org_overview(store, owner, visible, now=now, weeks=12),
        "org_overview_12w_onepass": lambda: org_overview_onepass(store, owner, visible, now=now, weeks=12),
        "org_overview_52w": lambda: q.org_overview(store, owner, visible, now=now, weeks=52),
        "per_repo_12w": lambda: q.per_repo(store, visible, since=since12),
        "failure_classes_12w": lambda: q.failure_classes(store, visible, since=since12),
        "problems_org_5": lambda: q.problems(store, visible, limit=5),
        "problems_page1": lambda: q.problems(store, visible, limit=51, offset=0),
        "policies": lambda: q.policies(store, owner, visible),
        "repo_attempts_page1": lambda: q.repo_attempts(
            store, q.repo_name(store, busiest), page=1, per_page=50
        ),
        "attempt_detail": lambda: q.attempt_detail(store, detail_id, repos),
        "owners_with_data": lambda: q.owners_with_data(store, viewer.repos, since=since12),
        "metrics_collect": lambda: list(collector.collect()),
        "page_healthz": _get(client, "/healthz"),
        "page_org_12w": page_org,
        "page_org_12w_onepass": page_org_onepass,
        "page_org_52w": _get(client, f"{org_path}?weeks=52"),
        "page_repo": _get(client, f"{org_path}/repos/{quote(busiest.split('/', 1)[1])}"),
        "page_events": _get(client, f"{org_path}/events"),
        "page_index": _get(client, "/"),
        "page_attempt": _get(client, f"/attempts/{detail_id}"),
        "page_metrics": _get(client, "/metrics"),
    }


def measure_ops(
    ops: dict[str, Callable[[], object]],
    names: Iterator[str] | list[str] | tuple[str, ...],
    reps: int,
    budget_s: float,
    say: Callable[[str], None],
) -> dict[str, dict[str, Any]]:
    """Time the named operations."""
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        before = load1()
        stats = summarize(timed_runs(ops[name], reps, budget_s))
        stats["load_1min"] = [before, load1()]
        out[name] = stats
        say(
            f"  {name:22s} median {stats['median_ms']:9.1f} ms  p95 {stats['p95_ms']:9.1f} ms  n={stats['n']}"
        )
    return out


def profile_ops(
    ops: dict[str, Callable[[], object]],
    timings: dict[str, dict[str, Any]],
    log: StatementLog,
    engine: Engine,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Statements per operation (one more call, logged) and the plans of the slow ones."""
    profiles: dict[str, Any] = {}
    plans: dict[str, Any] = {}
    for name, fn in ops.items():
        if name.startswith("page_"):
            continue  # the pages run the same queries as their operations
        with log.recording() as rows:
            fn()
        logged = list(rows)
        profiles[name] = {
            "statements": len(logged),
            "sql_ms": round(sum(ms for _, _, ms in logged), 1),
            "top": [
                {"ms": round(ms, 1), "sql": _short_sql(sql)}
                for sql, _, ms in sorted(logged, key=lambda r: -r[2])[:4]
            ],
        }
        if timings[name]["median_ms"] >= SLOW_MS:
            plans[name] = [
                {"ms": round(ms, 1), "sql": _short_sql(sql, 400), "plan": explain(engine, sql, params)}
                for sql, params, ms in sorted(logged, key=lambda r: -r[2])[:2]
            ]
    return profiles, plans


# --- backends ---------------------------------------------------------------------------------------


@contextmanager
def sqlite_url(tmp: Path) -> Iterator[str]:
    """A SQLite database file under ``tmp`` (removed with it)."""
    yield f"sqlite:///{tmp / 'arcs-bench.db'}"


@contextmanager
def postgres_url(admin_url: str) -> Iterator[str]:
    """A throwaway PostgreSQL database with a unique name, dropped at the end."""
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
    name = f"arcs_bench_dash_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = admin.url.set(database=name).render_as_string(hide_password=False)
            yield url.replace("postgresql+psycopg://", "postgresql://", 1)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def pg_unreachable(admin_url: str) -> str | None:
    """Why the PostgreSQL server cannot be used, or None."""
    engine = create_engine(admin_url, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        return " ".join(str(exc).split())[:300]
    finally:
        engine.dispose()
    return None


def pg_version(url: str) -> str:
    """``PostgreSQL 15.x`` of the server at ``url``."""
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            return "PostgreSQL " + str(conn.execute(text("SHOW server_version")).scalar_one())
    finally:
        engine.dispose()


def sizes(engine: Engine, url: str) -> dict[str, Any]:
    """On-disk size of the database and of the attempts table."""
    if engine.dialect.name == "sqlite":
        path = Path(url.removeprefix("sqlite:///"))
        files = [path, path.with_name(path.name + "-wal")]
        return {"database_mb": round(sum(p.stat().st_size for p in files if p.exists()) / 1e6, 1)}
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT pg_database_size(current_database()), pg_relation_size('attempts'), "
                "pg_total_relation_size('attempts'), pg_indexes_size('attempts')"
            )
        ).one()
    db, heap, total, indexes = (int(v) / 1e6 for v in row)
    return {
        "database_mb": round(db, 1),
        "attempts_heap_mb": round(heap, 1),
        "attempts_toast_mb": round(total - heap - indexes, 1),
        "attempts_indexes_mb": round(indexes, 1),
    }


def check_onepass(store: Any, history: OrgHistory) -> bool:
    """Whether the prototype and the real org_overview agree (12 and 52 weeks)."""
    from bot.dashboard import queries as q

    owner = history.spec.owner
    visible = frozenset(r.lower() for r in history.repos)
    return all(
        same_overview(
            q.org_overview(store, owner, visible, now=history.now, weeks=weeks),
            org_overview_onepass(store, owner, visible, now=history.now, weeks=weeks),
        )
        for weeks in (12, 52)
    )


def run_backend(
    backend: str,
    url: str,
    history: OrgHistory,
    args: argparse.Namespace,
    home: Path,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Load, time, explain and experiment on one backend."""
    from bot.dashboard.viewer import Viewer
    from bot.settings import load_settings
    from bot.store.store import Store

    result: dict[str, Any] = {"load_1min_start": load1()}
    store = Store.open(url)
    try:
        say(f"[{backend}] loading")
        started = time.perf_counter()
        result["load_s"] = load(store.engine, history, progress=say)
        result["load_s"]["total"] = round(time.perf_counter() - started, 2)
        result["sizes"] = sizes(store.engine, url)
        say(f"[{backend}] loaded in {result['load_s']['total']} s; {result['sizes']}")
        settings = load_settings(
            {
                "ARCS_HOME": str(home / backend),
                "ARCS_EMBEDDER": "hash",
                "ARCS_DATABASE_URL": url,
                "ARCS_SESSION_SECRET": secrets.token_urlsafe(32),
            }
        )
        owner = history.spec.owner
        viewer = Viewer.of("bench", owners=[owner], repos=history.repos, admin_of=[owner])
        client = app_client(store, settings, history, viewer)
        ops = operations(store, history, client)
        result["onepass_same_as_org_overview"] = check_onepass(store, history)
        say(
            f"[{backend}] prototype org_overview_onepass gives the same overview: {result['onepass_same_as_org_overview']}"
        )
        log = StatementLog(store.engine)
        say(f"[{backend}] timing (load {load1()})")
        result["ops"] = measure_ops(ops, list(ops), args.reps, args.budget_s, say)
        result["profile"], result["plans"] = profile_ops(ops, result["ops"], log, store.engine)
        result["experiments"] = []
        if not args.no_experiments:
            for name, where, why, ddl in EXPERIMENTS:
                if backend not in where:
                    continue
                say(f"[{backend}] experiment: {name}")
                started = time.perf_counter()
                with store.engine.begin() as conn:
                    for statement in ddl:
                        conn.execute(text(statement))
                    if backend == "postgresql":
                        conn.execute(text("ANALYZE attempts"))
                created = round(time.perf_counter() - started, 2)
                timings = measure_ops(ops, EXPERIMENT_OPS, args.reps, args.budget_s, say)
                with log.recording() as rows:
                    ops["org_overview_12w"]()
                logged = sorted(rows, key=lambda r: -r[2])[:2]
                plans = [
                    {
                        "ms": round(ms, 1),
                        "sql": _short_sql(sql, 400),
                        "plan": explain(store.engine, sql, params),
                    }
                    for sql, params, ms in logged
                ]
                result["experiments"].append(
                    {
                        "name": name,
                        "why": why,
                        "ddl": list(ddl),
                        "create_s": created,
                        "ops": timings,
                        "org_overview_12w_plans": plans,
                    }
                )
        result["load_1min_end"] = load1()
        client.close()
    finally:
        store.close()
    return result


# --- report ---------------------------------------------------------------------------------------


def verdicts(report: dict[str, Any]) -> dict[str, Any]:
    """Met / not met per backend for the two targets (baseline schema)."""
    out: dict[str, Any] = {}
    for backend, res in report["backends"].items():
        if "ops" not in res:
            continue
        org = res["ops"]["page_org_12w"]["median_ms"]
        metrics = res["ops"]["metrics_collect"]["median_ms"]
        page_metrics = res["ops"]["page_metrics"]["median_ms"]
        out[backend] = {
            "org_page_12w_median_ms": org,
            "org_page_met": org <= TARGETS["org_page_ms"],
            "metrics_median_ms": max(metrics, page_metrics),
            "metrics_met": max(metrics, page_metrics) <= TARGETS["metrics_ms"],
        }
        states = [("baseline", res["ops"]), *((e["name"], e["ops"]) for e in res.get("experiments", []))]
        best_page = min(states, key=lambda st: st[1]["page_org_12w_onepass"]["median_ms"])
        best_metrics = min(states, key=lambda st: st[1]["page_metrics"]["median_ms"])
        out[backend]["best_org_page"] = {
            "state": best_page[0] + " + onepass prototype",
            "median_ms": best_page[1]["page_org_12w_onepass"]["median_ms"],
        }
        out[backend]["best_metrics"] = {
            "state": best_metrics[0],
            "median_ms": best_metrics[1]["page_metrics"]["median_ms"],
        }
    return out


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A markdown table; numbers right-aligned with one decimal (ints as they are)."""

    def cell(value: object) -> str:
        return f"{value:,.1f}" if isinstance(value, float) else str(value)

    numeric = [bool(rows) and isinstance(rows[0][i], int | float) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join("---:" if n else ":---" for n in numeric) + " |",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render(report: dict[str, Any]) -> str:
    """The generated block of RESULTS.md: context, timings, targets, experiments."""
    spec = report["data"]
    machine = report["machine"]
    backends = {k: v for k, v in report["backends"].items() if "ops" in v}
    lines = [
        f"Run {report['date']}: `{report['command']}`; {machine['cpu']}, {machine['cpus_available']} CPUs, "
        f"Python {machine['python']}, SQLite {report['sqlite_version']}, {report.get('postgres_version', 'no PostgreSQL')}; "
        f"1-min load average {report['load_1min_start']} -> {report['load_1min_end']} (other jobs shared the machine); "
        f"whole run {report['run_s']:.0f} s.",
        "",
        f"Data (seed {report['seed']}): 1 owner, {spec['repos']} repositories, {spec['attempts']:,} attempts over "
        f"{spec['weeks']} weeks (busiest repository {spec['attempts_busiest_repo']:,}, median {spec['attempts_median_repo']:,}), "
        f"{spec['pull_requests']:,} pull requests, {spec['events']:,} events, {spec['deliveries']:,} webhook deliveries; "
        f"attempt payloads {'of realistic size' if spec['payload'] else 'left out'}. "
        + "; ".join(
            f"{b}: {r['sizes']['database_mb']:,.0f} MB, loaded in {r['load_s']['total']:.0f} s"
            for b, r in backends.items()
        )
        + ".",
        "",
        f"Warm timings in ms (one untimed call, then up to {report['reps']} calls within {report['budget_s']:.0f} s, "
        "at least 3; with n < 20 the p95 is close to the maximum). `page_*` rows are full requests "
        "through `create_app` (cookie session and viewer middleware, real store) with Starlette's TestClient.",
        "",
    ]
    names = list(next(iter(backends.values()))["ops"]) if backends else []
    headers = ["operation"]
    for b in backends:
        headers += [f"{b} median", f"{b} p95", f"{b} SQL stmts"]
    rows: list[list[object]] = []
    for name in names:
        row: list[object] = [f"`{name}`"]
        for res in backends.values():
            op = res["ops"][name]
            prof = res["profile"].get(name)
            row += [op["median_ms"], op["p95_ms"], prof["statements"] if prof else "-"]
        rows.append(row)
    lines += [table(headers, rows), ""]
    for backend, v in report["verdicts"].items():
        lines.append(
            f"* **{backend}**: org page (12 weeks) median {v['org_page_12w_median_ms']:,.0f} ms: target <= "
            f"{TARGETS['org_page_ms']:.0f} ms **{'met' if v['org_page_met'] else 'not met'}**; /metrics "
            f"{v['metrics_median_ms']:,.0f} ms: target <= {TARGETS['metrics_ms']:.0f} ms "
            f"**{'met' if v['metrics_met'] else 'not met'}**. Best measured with the experiments: org page "
            f"{v['best_org_page']['median_ms']:,.0f} ms ({v['best_org_page']['state']}), /metrics "
            f"{v['best_metrics']['median_ms']:,.0f} ms ({v['best_metrics']['state']})."
        )
    experiments = {b: r["experiments"] for b, r in backends.items() if r.get("experiments")}
    for b, exps in experiments.items():
        lines += [
            "",
            f"Experiments on {b} (created in the benchmark's database only, cumulative from left to right; "
            "medians in ms; `*_onepass` rows time the prototype in `bench/dashboard/proposals.py`, "
            f"which gave the same overview as `org_overview`: {backends[b]['onepass_same_as_org_overview']}):",
            "",
        ]
        headers = ["operation", "baseline", *(e["name"] for e in exps)]
        rows = [
            [f"`{name}`", backends[b]["ops"][name]["median_ms"], *(e["ops"][name]["median_ms"] for e in exps)]
            for name in EXPERIMENT_OPS
        ]
        lines += [table(headers, rows), ""]
        for e in exps:
            lines.append(f"* *{e['name']}* ({e['create_s']:.1f} s): {e['why']}; `{'`; `'.join(e['ddl'])}`")
    lines += [
        "",
        "Reproduce with `python -m bench.dashboard.run` (about 10 minutes; `--attempts 10000` for a "
        "smoke run); statements per operation and query plans are in `bench/results/dashboard.json`.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Generate, load, time and report."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    defaults = OrgSpec()
    parser.add_argument("--repos", type=int, default=defaults.repos)
    parser.add_argument("--attempts", type=int, default=defaults.attempts)
    parser.add_argument("--prs", type=int, default=defaults.pull_requests)
    parser.add_argument("--events", type=int, default=defaults.events)
    parser.add_argument("--deliveries", type=int, default=defaults.deliveries)
    parser.add_argument("--weeks", type=int, default=defaults.weeks)
    parser.add_argument("--no-payload", action="store_true", help="leave patch/files/trace/explanation NULL")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--now", default=None, help="ISO UTC time the history ends at (default: now)")
    parser.add_argument("--reps", type=int, default=10, help="timed calls per operation (at most)")
    parser.add_argument("--budget-s", type=float, default=6.0, help="stop timing an operation after this")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--pg-admin-url", default=PG_ADMIN_URL)
    parser.add_argument("--no-experiments", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="default: bench/results/dashboard.json")
    parser.add_argument("--no-write", action="store_true", help="do not write the JSON or RESULTS.md")
    parser.add_argument("--no-md", action="store_true", help="write the JSON but leave RESULTS.md alone")
    args = parser.parse_args(argv)

    import sqlite3

    import structlog

    # The app logs every request; the benchmark prints its own progress.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))

    def say(message: str) -> None:
        print(message, flush=True)

    run_started = time.perf_counter()
    now = (
        dt.datetime.fromisoformat(args.now).astimezone(dt.UTC)
        if args.now
        else dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    )
    spec = OrgSpec(
        repos=args.repos,
        attempts=args.attempts,
        pull_requests=args.prs,
        events=args.events,
        deliveries=args.deliveries,
        weeks=args.weeks,
        payload=not args.no_payload,
        seed=args.seed,
    )
    report: dict[str, Any] = {
        "benchmark": "dashboard",
        "date": today(),
        "command": " ".join(["python -m bench.dashboard.run", *(sys.argv[1:] if argv is None else argv)]),
        "machine": machine_info(),
        "sqlite_version": sqlite3.sqlite_version,
        "load_1min_start": load1(),
        "targets": TARGETS,
        "seed": args.seed,
        "reps": args.reps,
        "budget_s": args.budget_s,
    }
    report["machine"].pop("torch", None)
    report["machine"].pop("torch_threads", None)
    started = time.perf_counter()
    history = generate_org(spec, now)
    report["data"] = history.counts()
    report["generate_s"] = round(time.perf_counter() - started, 2)
    say(f"generated in {report['generate_s']} s: {json.dumps(report['data'])}")

    report["backends"] = {}
    with tempfile.TemporaryDirectory(prefix="arcs-bench-dash-") as tmp_name:
        tmp = Path(tmp_name)
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            if backend == "sqlite":
                with sqlite_url(tmp) as url:
                    report["backends"]["sqlite"] = run_backend("sqlite", url, history, args, tmp, say)
                    Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
            elif backend == "postgresql":
                reason = pg_unreachable(args.pg_admin_url)
                if reason is not None:
                    say(f"[postgresql] skipped: {reason}")
                    report["backends"]["postgresql"] = {"skipped": reason}
                    continue
                with postgres_url(args.pg_admin_url) as url:
                    report["postgres_version"] = pg_version(url)
                    report["backends"]["postgresql"] = run_backend("postgresql", url, history, args, tmp, say)
            else:
                parser.error(f"unknown backend {backend!r}")
    report["load_1min_end"] = load1()
    report["verdicts"] = verdicts(report)
    report["run_s"] = round(time.perf_counter() - run_started, 1)
    block = render(report)
    print()
    print(block)
    if not args.no_write:
        out = args.out or RESULTS_DIR / "dashboard.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        say(f"wrote {out}")
        if not args.no_md:
            update_results_md(SECTION, "dashboard", block)
            say(f"wrote the '## {SECTION}' block of bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
