"""The ARCS store: deliveries, attempts, pull requests and events over SQLAlchemy.

SQLite (the default, a file under ``ARCS_HOME``) and PostgreSQL (``ARCS_DATABASE_URL``) behave
the same: every "only once" decision is a single ``INSERT … ON CONFLICT`` statement arbitrated by
a unique constraint, never read-then-write, so two web processes or N workers racing on one
delivery or one idempotency key get exactly one winner.

On SQLite every write transaction starts with its write statement (no read first), so the
database lock is taken at once and waits on ``busy_timeout`` instead of failing when a reader's
snapshot would have to be upgraded.

Objects returned by the read methods are detached snapshots: change rows with the ``update_*``
methods, not by assigning attributes.

Deliveries are an outbox: :meth:`Store.record_delivery` writes the row *with its jobs* in one
statement (status ``received``); the broker's confirmation moves it to ``enqueued``
(:meth:`Store.mark_enqueued`, batched off the request path); a row left in ``received`` longer
than ``relay_grace`` (its web process died between the two, or the broker failed) is claimed by
:meth:`Store.claim_stuck_deliveries` (the relay) or by a redelivery, and enqueued again.

The web process opens its store with ``timeout_s`` (every connect, statement, lock wait and pool
checkout bounded) and ``lazy=True`` (the schema is migrated at first use, retried at most once a
second while the database is down, so the process starts and answers 503 meanwhile).
"""

# Long (~1,200 lines): every write arbitrated by a unique constraint lives in one class, so the "only
# once" rules above can be read and reviewed together.

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import structlog
from sqlalchemy import (
    ColumnElement,
    Engine,
    Float,
    String,
    and_,
    bindparam,
    create_engine,
    func,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy import event as sa_event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from bot.errors import ConfigError
from bot.store.models import (
    ATTEMPT_STATUSES,
    DELIVERY_STATUSES,
    EVENT_KINDS,
    PR_STATES,
    TEST_ID_MAX,
    TEST_RUN_SOURCES,
    TRIGGERS,
    Attempt,
    DashboardSession,
    Delivery,
    Event,
    JoinedRun,
    Policy,
    PullRequest,
    TestRunRow,
)
from bot.web.ports import DeliveryRow, DeliveryStatus
from jobs.policy import user_cap_exceeded

# The admission values are the jobs' port types (re-exported: the store's callers name them here too).
from jobs.ports import Admission as Admission
from jobs.ports import PrLimits as PrLimits
from jobs.ports import PrTally as PrTally
from jobs.ports import UserCap as UserCap
from jobs.repair.flaky import Source, TestRun

log = structlog.get_logger("arcs.store")

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
# Any constant works; it only has to be the same in every ARCS process sharing a database.
_PG_MIGRATION_LOCK = 0x41524353  # "ARCS"
_SQLITE_BUSY_TIMEOUT_MS = 30_000
SCHEMA_RETRY_S = 1.0
"""A lazily migrated store tries the database again at most this often while it is down."""
RELAY_GRACE = dt.timedelta(seconds=30)
"""How long a ``received`` delivery belongs to the request that recorded it; after that a
redelivery or the relay may enqueue it again. Longer than any answer can take (5 s)."""
_CLIP = {"event": 64, "action": 64, "repo": 255, "workflow_name": 255}

Clock = Callable[[], dt.datetime]

_ATTEMPT_FIELDS = frozenset(c.key for c in inspect(Attempt).column_attrs) - {"id", "idempotency_key"}
POLICY_FIELDS: frozenset[str] = frozenset(
    {"paused", "monthly_usd", "max_prs_per_day", "quiet_start", "quiet_end", "timezone"}
)
"""The policy columns an admin sets (``None`` clears a field, so the owner's value applies)."""


class StoreUnavailable(ConnectionError):
    """The database cannot be reached (``/readyz`` answers 503, workers retry)."""


def utcnow() -> dt.datetime:
    """The current time, aware, in UTC."""
    return dt.datetime.now(dt.UTC)


def normalize_url(url: str) -> str:
    """Map the usual spellings to the installed drivers.

    ``postgresql://`` and ``postgres://`` use psycopg 3 (``postgresql+psycopg://``); an explicit
    driver (``postgresql+psycopg2://``) is kept as given.
    """
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _sqlite_pragmas(busy_timeout_ms: int) -> Callable[[Any, Any], None]:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            # WAL: readers never block the writer; busy_timeout: writers wait for each other.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    return on_connect


def postgres_timeouts(timeout_s: float) -> dict[str, Any]:
    """psycopg connect arguments bounding a connection's every wait by about ``timeout_s``.

    ``connect_timeout`` (whole seconds, at least 1) covers a server that accepts and never
    answers; ``statement_timeout`` and ``lock_timeout`` (server side) a slow statement or a lock
    held by someone else; ``tcp_user_timeout`` a peer that vanished with data unacknowledged.
    """
    ms = max(1, round(timeout_s * 1000))
    return {
        "connect_timeout": max(1, math.ceil(timeout_s)),
        # A lock wait gives up first, so the error names the lock rather than the statement.
        "options": f"-c statement_timeout={ms} -c lock_timeout={max(1, ms * 3 // 4)}",
        "tcp_user_timeout": ms,
        "keepalives": 1,
        "keepalives_idle": max(1, math.ceil(timeout_s)),
        "keepalives_interval": 1,
        "keepalives_count": 3,
    }


def create_store_engine(url: str, *, timeout_s: float | None = None) -> Engine:
    """An engine for ``url`` (SQLite or PostgreSQL) with the settings the store relies on.

    ``timeout_s`` bounds every wait (the web process: an answer must not wait on a hung
    database): PostgreSQL's connect, statement and lock timeouts (:func:`postgres_timeouts`),
    SQLite's busy timeout, and the wait for a pooled connection. ``None``: the defaults of the
    workers (30 s busy timeout on SQLite, no statement timeout).
    """
    url = normalize_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"ARCS_DATABASE_URL is not a database URL: {exc}") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ConfigError(f"ARCS_DATABASE_URL: unsupported database {backend!r} (use sqlite or postgresql)")
    try:
        if backend == "sqlite":
            busy_ms = _SQLITE_BUSY_TIMEOUT_MS if timeout_s is None else max(1, round(timeout_s * 1000))
            database = parsed.database or ""
            if database in ("", ":memory:"):
                # One shared in-memory database for every thread (tests, quick local runs).
                engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
            else:
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
                pool: dict[str, Any] = {} if timeout_s is None else {"pool_timeout": timeout_s}
                engine = create_engine(url, connect_args={"timeout": busy_ms / 1000}, **pool)
            sa_event.listen(engine, "connect", _sqlite_pragmas(busy_ms))
            return engine
        if timeout_s is None:
            return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        # No pre-ping (a round trip per checkout on the webhook's hot path): a connection that
        # died with the server fails once, which invalidates the pool, and the delivery insert
        # retries once on a fresh connection (Store.record_delivery).
        return create_engine(
            url,
            pool_pre_ping=False,
            pool_size=5,
            max_overflow=10,
            pool_timeout=timeout_s,
            connect_args=postgres_timeouts(timeout_s),
        )
    except (NoSuchModuleError, ImportError) as exc:
        raise ConfigError(f"ARCS_DATABASE_URL: the database driver is not installed ({exc})") from None


@contextlib.contextmanager
def _migration_lock(engine: Engine) -> Iterator[Any]:
    """A connection on which migrations run, serialized between processes sharing the database."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
            conn.commit()
            try:
                yield conn
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_MIGRATION_LOCK})
                conn.commit()
        return
    database = engine.url.database or ""
    if database in ("", ":memory:"):
        with engine.connect() as conn:
            yield conn
        return
    # pysqlite runs DDL outside a transaction, so two processes creating the tables at once
    # would collide: a lock file next to the database serializes them. It is taken before the
    # connection opens, because opening one switches the file to WAL, which needs the database
    # to itself and fails at once ("database is locked") while another opener is migrating.
    lock_path = Path(database).expanduser().with_name(Path(database).name + ".migrate.lock")
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            with engine.connect() as conn:
                yield conn
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def migrate(engine: Engine) -> None:
    """Upgrade the database to the newest schema (idempotent; safe with concurrent callers)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with _migration_lock(engine) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
        conn.commit()


_HEAD: list[str] = []


def head_revision() -> str:
    """The newest migration's revision (the schema this code needs), read once from the scripts."""
    if not _HEAD:
        from alembic.config import Config
        from alembic.script import ScriptDirectory

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        _HEAD.append(str(ScriptDirectory.from_config(config).get_current_head()))
    return _HEAD[0]


def _check(value: object, allowed: tuple[str, ...], what: str) -> None:
    if value is not None and value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")


def _check_attempt_fields(fields: Mapping[str, Any]) -> None:
    unknown = set(fields) - _ATTEMPT_FIELDS
    if unknown:
        raise TypeError(f"unknown attempt field(s): {', '.join(sorted(unknown))}")
    _check(fields.get("status"), ATTEMPT_STATUSES, "attempt status")
    _check(fields.get("trigger"), TRIGGERS, "attempt trigger")
    _check(fields.get("pr_state"), PR_STATES, "pr_state")
    for name, value in fields.items():
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            raise ValueError(f"{name}: naive datetime given to the store; pass an aware UTC datetime")


class Store:
    """Persistence for the web side (deliveries) and the workers (attempts, PRs, events).

    Satisfies :class:`bot.web.ports.DeliveryStore`. Thread-safe: each call uses its own session.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock = utcnow,
        migrate_lazily: bool = False,
        relay_grace: dt.timedelta = RELAY_GRACE,
    ) -> None:
        self.engine = engine
        self._clock = clock
        self._sessionmaker = sessionmaker(engine, expire_on_commit=False)
        self.relay_grace = relay_grace
        self._schema_ready = not migrate_lazily
        self._schema_lock = threading.Lock()
        self._schema_retry_at = 0.0
        self._schema_error = "database unavailable"
        self._delivery_sql: _DeliveryStatements | None = None
        # Same pool; a checked-out connection autocommits (a client-side flag for both drivers).
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    @classmethod
    def open(
        cls,
        url: str,
        *,
        upgrade: bool = True,
        clock: Clock = utcnow,
        lazy: bool = False,
        timeout_s: float | None = None,
        relay_grace: dt.timedelta = RELAY_GRACE,
    ) -> Store:
        """Connect to ``url`` and (by default) upgrade the schema to head.

        ``lazy``: connect and upgrade at first use instead, so opening never fails on an
        unreachable database (calls raise :class:`StoreUnavailable` until it answers).
        ``timeout_s``: see :func:`create_store_engine`.
        """
        engine = create_store_engine(url, timeout_s=timeout_s)
        if lazy:
            return cls(engine, clock=clock, migrate_lazily=upgrade, relay_grace=relay_grace)
        if upgrade:
            from alembic.util.exc import CommandError

            try:
                migrate(engine)
            except SQLAlchemyError as exc:
                engine.dispose()
                raise StoreUnavailable(f"database unavailable: {_one_line(exc)}") from exc
            except CommandError as exc:
                engine.dispose()
                raise ConfigError(
                    f"the database schema is not one this ARCS knows ({_one_line(exc)}); "
                    "was it created by a newer version?"
                ) from exc
        return cls(engine, clock=clock, relay_grace=relay_grace)

    # --- plumbing ---------------------------------------------------------------------------

    def _sessions(self) -> Session:
        if not self._schema_ready:
            self._ensure_schema()
        return self._sessionmaker()

    def _ensure_schema(self) -> None:
        """Migrate a lazily opened store; one try per :data:`SCHEMA_RETRY_S` while it fails."""
        from alembic.util.exc import CommandError

        with self._schema_lock:
            if self._schema_ready:
                return
            now = time.monotonic()
            if now < self._schema_retry_at:
                raise StoreUnavailable(self._schema_error)
            try:
                migrate(self.engine)
            except (SQLAlchemyError, CommandError, OSError) as exc:
                self._schema_retry_at = now + SCHEMA_RETRY_S
                self._schema_error = f"database unavailable: {_one_line(exc)}"
                log.warning("store_schema_unavailable", error=self._schema_error)
                raise StoreUnavailable(self._schema_error) from exc
            self._schema_ready = True
            log.info("store_schema_ready")

    @contextlib.contextmanager
    def _write(self) -> Iterator[Session]:
        with self._sessions() as session, session.begin():
            yield session

    def _insert(self, model: type[Any]) -> postgresql.Insert | sqlite.Insert:
        if self.engine.dialect.name == "postgresql":
            return postgresql.insert(model)
        return sqlite.insert(model)

    def ping(self) -> None:
        """Return when the database answers with the schema this code needs (``/readyz``);
        raise :class:`StoreUnavailable` otherwise (unreachable, or not migrated to head)."""
        try:
            with self._sessions() as session:
                version = session.execute(text("SELECT version_num FROM alembic_version")).scalar()
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"database unavailable: {_one_line(exc)}") from exc
        if version != head_revision():
            raise StoreUnavailable(f"database schema is at {version}, this ARCS needs {head_revision()}")

    def close(self) -> None:
        """Release every pooled connection."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- deliveries -------------------------------------------------------------------------

    def record_delivery(
        self,
        delivery_id: str,
        event: str,
        action: str | None,
        installation_id: int | None,
        repo: str | None,
        payload_sha256: str,
        status: str,
        reason: str | None,
        *,
        jobs: Sequence[Mapping[str, Any]] | None = None,
        latency_ms: float | None = None,
    ) -> bool:
        """Record a webhook delivery once, with its ``jobs`` (the outbox); ``False`` for a duplicate.

        One statement. Re-claimable (recording again overwrites the row and returns ``True``, one
        winner among concurrent redeliveries): a delivery marked ``failed``, and one still
        ``received`` whose last claim is older than ``relay_grace`` (its jobs were never confirmed
        by the broker). ``event``, ``action`` and ``repo`` are clipped to their columns.
        """
        _check(status, DELIVERY_STATUSES, "delivery status")
        row = DeliveryRow(
            delivery_id,
            event,
            action,
            installation_id,
            repo,
            payload_sha256,
            cast(DeliveryStatus, status),
            reason,
            jobs,
            latency_ms,
        )
        return delivery_id in self.record_deliveries([row])

    def record_deliveries(self, rows: Sequence[DeliveryRow]) -> set[str]:
        """Record several deliveries in one statement, so one commit (one WAL flush) serves them
        all (the web process's group commit, :mod:`bot.web.intake`). Returns the ids that were
        fresh; same rules as :meth:`record_delivery` per row, an id given twice counts once."""
        if not rows:
            return set()
        # The hot path of every webhook: one prebuilt Core statement (a multi-row INSERT for a
        # batch), autocommitted: one round trip, no BEGIN/COMMIT, no ORM session.
        statement = self._delivery_statements().record
        for attempt in (1, 2):
            # Dated when sent (a retry too): the row's time starts its writer's claim.
            params = self.delivery_params(rows)
            if not params:
                return set()
            try:
                with self._connection(autocommit=True) as conn:
                    result = conn.execute(statement, params[0] if len(params) == 1 else params)
                    return {str(d) for d in result.scalars()}
            except DBAPIError as exc:
                # A pooled connection the server dropped (restart, failover): retry once on a
                # fresh one. Safe: if the first try did commit, the retry sees duplicates and the
                # rows stay "received", which the relay enqueues after the grace.
                if attempt == 2 or not exc.connection_invalidated:
                    raise
        raise AssertionError("unreachable")

    def delivery_params(self, rows: Sequence[DeliveryRow]) -> list[dict[str, Any]]:
        """The values of the record statement for ``rows`` (one dict per row, in order: the
        ``deliveries`` columns plus ``stale_before``, the re-claim cut-off): statuses checked,
        strings clipped to their columns, a repeated id kept once. Shared by
        :meth:`record_deliveries` and the web process's async PostgreSQL writer
        (:mod:`bot.web.pg_intake`), so both record exactly the same row."""
        now = self._clock()
        params: list[dict[str, Any]] = []
        seen: set[str] = set()
        for row in rows:
            _check(row.status, DELIVERY_STATUSES, "delivery status")
            if row.delivery_id in seen:
                continue  # PostgreSQL refuses to upsert one row twice in a statement
            seen.add(row.delivery_id)
            params.append(
                {
                    "delivery_id": row.delivery_id,
                    "event": _clip(row.event, "event"),
                    "action": _clip(row.action, "action"),
                    "installation_id": row.installation_id,
                    "repo": _clip(row.repo, "repo"),
                    "payload_sha256": row.payload_sha256,
                    "status": row.status,
                    "reason": row.reason,
                    "received_at": now,
                    "updated_at": now,
                    "latency_ms": row.latency_ms,
                    "jobs": [dict(job) for job in row.jobs] if row.jobs is not None else None,
                    "stale_before": now - self.relay_grace,
                }
            )
        return params

    @property
    def schema_ready(self) -> bool:
        """Whether the schema is known to be at head (always, unless opened lazily)."""
        return self._schema_ready

    def ensure_schema(self) -> None:
        """Migrate a lazily opened store now (no-op once done); raises :class:`StoreUnavailable`
        while the database does not answer."""
        if not self._schema_ready:
            self._ensure_schema()

    def mark_enqueued(self, confirmed: Sequence[tuple[str, float | None]]) -> int:
        """The broker took the jobs of these ``(delivery_id, latency_ms)``: ``received`` ->
        ``enqueued`` (and the answer's latency, when given), in one batched statement. Returns the
        number of rows changed (rows no longer ``received`` are left alone)."""
        if not confirmed:
            return 0
        now = self._clock()
        statements = self._delivery_statements()
        if statements.mark_many is not None:
            # PostgreSQL: one prebuilt statement whatever the batch size (arrays, unnest).
            arrays = {"ids": [d for d, _ in confirmed], "lats": [lat for _, lat in confirmed], "now": now}
            with self._connection() as conn:
                return max(0, int(conn.execute(statements.mark_many, arrays).rowcount))
        # SQLite runs in-process (no round trips): the prebuilt statement, once per row.
        params = [{"d": d, "l": latency, "now": now} for d, latency in confirmed]
        with self._connection() as conn:
            result = conn.execute(statements.mark, params)
            return max(0, int(result.rowcount))

    @contextlib.contextmanager
    def _connection(self, *, autocommit: bool = False) -> Iterator[Any]:
        if not self._schema_ready:
            self._ensure_schema()
        if autocommit:
            with self._autocommit.connect() as conn:
                yield conn
            return
        with self.engine.begin() as conn:
            yield conn

    def _delivery_statements(self) -> _DeliveryStatements:
        if self._delivery_sql is None:
            self._delivery_sql = _DeliveryStatements.build(self._insert(Delivery))
        return self._delivery_sql

    def claim_stuck_deliveries(self, limit: int = 100) -> list[tuple[str, list[dict[str, Any]]]]:
        """Claim up to ``limit`` deliveries left ``received`` longer than ``relay_grace``:
        ``[(delivery_id, jobs)]``, oldest first. A claim renews the grace, so concurrent relays
        (and redeliveries) never claim the same row twice within it."""
        now = self._clock()
        cutoff = now - self.relay_grace
        stuck = [Delivery.status == "received", Delivery.updated_at < cutoff]
        pick = select(Delivery.id).where(*stuck).order_by(Delivery.updated_at).limit(limit)
        if self.engine.dialect.name == "postgresql":
            pick = pick.with_for_update(skip_locked=True)
        stmt = (
            update(Delivery)
            .where(Delivery.id.in_(pick), *stuck)
            .values(updated_at=now)
            .returning(Delivery.delivery_id, Delivery.jobs)
        )
        with self._write() as session:
            rows = session.execute(stmt, execution_options={"synchronize_session": False}).all()
        return [(str(d), list(jobs or [])) for d, jobs in rows]

    def mark_delivery(self, delivery_id: str, status: str, reason: str | None) -> None:
        """Set the status of a recorded delivery; ``KeyError`` when it was never recorded."""
        _check(status, DELIVERY_STATUSES, "delivery status")
        stmt = (
            update(Delivery)
            .where(Delivery.delivery_id == delivery_id)
            .values(status=status, reason=reason, updated_at=self._clock())
        )
        with self._write() as session:
            if session.execute(stmt).rowcount == 0:  # type: ignore[attr-defined]
                raise KeyError(delivery_id)

    def set_delivery_latency(self, delivery_id: str, latency_ms: float) -> None:
        """Record how long answering the delivery took (``/metrics`` reads it); unknown ids are ignored."""
        stmt = update(Delivery).where(Delivery.delivery_id == delivery_id).values(latency_ms=latency_ms)
        with self._write() as session:
            session.execute(stmt)

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        """The recorded delivery, if any."""
        with self._sessions() as session:
            return session.scalars(select(Delivery).where(Delivery.delivery_id == delivery_id)).first()

    # --- attempts ---------------------------------------------------------------------------

    def claim_attempt(self, key: str, **fields: Any) -> tuple[Attempt, bool]:
        """Create the attempt for ``key`` unless it exists: ``(attempt, created)``.

        ``fields`` are :class:`~bot.store.models.Attempt` columns (``repo`` and ``trigger`` are
        needed to create; ``owner`` defaults to the part of ``repo`` before the slash). Exactly
        one concurrent caller per key gets ``created=True``; the others get the winner's row.
        """
        _check_attempt_fields(fields)
        values = dict(fields)
        values.setdefault("status", "queued")
        values.setdefault("created_at", self._clock())
        if "repo" in values and "owner" not in values:
            values["owner"] = str(values["repo"]).split("/", 1)[0]
        stmt = (
            self._insert(Attempt)
            .values(idempotency_key=key, **values)
            .on_conflict_do_nothing(index_elements=[Attempt.idempotency_key])
            .returning(Attempt.id)
        )
        with self._write() as session:
            inserted = session.execute(stmt).scalar_one_or_none()
            attempt = session.scalars(select(Attempt).where(Attempt.idempotency_key == key)).one()
        return attempt, inserted is not None

    def update_attempt(self, attempt_id: int, **fields: Any) -> Attempt:
        """Set columns of an attempt and return the updated row (``KeyError`` if unknown)."""
        _check_attempt_fields(fields)
        with self._write() as session:
            if fields:
                result = session.execute(update(Attempt).where(Attempt.id == attempt_id).values(**fields))
                if result.rowcount == 0:  # type: ignore[attr-defined]
                    raise KeyError(attempt_id)
            attempt = session.get(Attempt, attempt_id)
            if attempt is None:
                raise KeyError(attempt_id)
            return attempt

    def get_attempt(self, attempt_id: int) -> Attempt | None:
        """The attempt with this id, if any."""
        with self._sessions() as session:
            return session.get(Attempt, attempt_id)

    def get_attempt_by_key(self, key: str) -> Attempt | None:
        """The attempt claimed with this idempotency key, if any."""
        with self._sessions() as session:
            return session.scalars(select(Attempt).where(Attempt.idempotency_key == key)).first()

    def join_attempt(
        self,
        attempt_id: int,
        *,
        repo: str,
        run_id: int,
        workflow_name: str | None = None,
        delivery_id: str | None = None,
    ) -> bool:
        """Record that workflow run ``run_id`` failed as the attempt's own run did (same repository,
        commit and failure signature): ``True`` the first time, ``False`` when already recorded.

        One ``INSERT … ON CONFLICT DO NOTHING`` on ``(attempt_id, run_id)``: a redelivered run,
        or two workers joining it at once, record it once.
        """
        stmt = (
            self._insert(JoinedRun)
            .values(
                attempt_id=attempt_id,
                repo=repo,
                run_id=run_id,
                workflow_name=_clip(workflow_name, "workflow_name"),
                delivery_id=delivery_id,
                created_at=self._clock(),
            )
            .on_conflict_do_nothing(index_elements=[JoinedRun.attempt_id, JoinedRun.run_id])
            .returning(JoinedRun.id)
        )
        with self._write() as session:
            return session.execute(stmt).scalar_one_or_none() is not None

    def attempt_of_run(self, repo: str, run_id: int) -> Attempt | None:
        """The CI attempt that workflow run ``run_id`` of ``repo`` started or joined, if any
        (the newest, should a run have several)."""
        own = select(Attempt.id).where(Attempt.repo == repo, Attempt.run_id == run_id)
        joined = select(JoinedRun.attempt_id).where(JoinedRun.repo == repo, JoinedRun.run_id == run_id)
        stmt = (
            select(Attempt)
            .where(or_(Attempt.id.in_(own), Attempt.id.in_(joined)))
            .order_by(Attempt.id.desc())
            .limit(1)
        )
        with self._sessions() as session:
            return session.scalars(stmt).first()

    def record_test_runs(self, repo: str, runs: Sequence[TestRun], *, attempt_id: int | None = None) -> int:
        """Add test outcomes to ``repo``'s test history (``test_runs``); how many were new.

        One ``INSERT … ON CONFLICT DO NOTHING`` on ``(repo, run_key, test_id)``: a redelivered CI
        run or a retried job records its outcomes once. A row without a time gets the store's."""
        now = self._clock()
        rows = [
            {
                "repo": repo,
                "test_id": r.test_id[:TEST_ID_MAX],
                "sha": r.sha[:64],
                "env": r.env[:255],
                "source": r.source,
                "failed": bool(r.failed),
                "run_key": r.run_key[:128],
                "attempt_id": attempt_id,
                "created_at": r.at or now,
            }
            for r in runs
            if r.test_id and r.source in TEST_RUN_SOURCES
        ]
        if not rows:
            return 0
        stmt = (
            self._insert(TestRunRow)
            .values(rows)
            .on_conflict_do_nothing(index_elements=[TestRunRow.repo, TestRunRow.run_key, TestRunRow.test_id])
            .returning(TestRunRow.id)
        )
        with self._write() as session:
            return len(session.execute(stmt).all())

    def test_runs(self, repo: str, test_ids: Sequence[str], *, limit: int = 200) -> list[TestRun]:
        """The recorded outcomes of ``test_ids`` in ``repo``, oldest first: at most about
        ``limit`` per test (the newest)."""
        ids = sorted({t[:TEST_ID_MAX] for t in test_ids if t})
        if not ids:
            return []
        stmt = (
            select(TestRunRow)
            .where(TestRunRow.repo == repo, TestRunRow.test_id.in_(ids))
            .order_by(TestRunRow.created_at.desc(), TestRunRow.id.desc())
            .limit(max(1, limit) * len(ids))
        )
        with self._sessions() as session:
            found = list(session.scalars(stmt))
        return [
            TestRun(
                r.test_id, r.sha, r.env, cast(Source, r.source), r.failed, at=r.created_at, run_key=r.run_key
            )
            for r in reversed(found)
        ]

    def failing_tests(self, repo: str, *, since: dt.datetime, limit: int = 100) -> list[str]:
        """The tests of ``repo`` seen failing since ``since``, the most recently failing first
        (at most ``limit``): the candidates the flaky-test views classify."""
        last = func.max(TestRunRow.created_at)
        stmt = (
            select(TestRunRow.test_id)
            .where(TestRunRow.repo == repo, TestRunRow.failed.is_(True), TestRunRow.created_at >= since)
            .group_by(TestRunRow.test_id)
            .order_by(last.desc(), TestRunRow.test_id)
            .limit(max(1, limit))
        )
        with self._sessions() as session:
            return list(session.scalars(stmt))

    def joined_runs(self, attempt_id: int, *, limit: int = 1000) -> list[JoinedRun]:
        """The runs that joined the attempt, first joined first."""
        stmt = (
            select(JoinedRun)
            .where(JoinedRun.attempt_id == attempt_id)
            .order_by(JoinedRun.id)
            .limit(max(1, limit))
        )
        with self._sessions() as session:
            return list(session.scalars(stmt))

    def attempts(
        self,
        *,
        repo: str | None = None,
        issue_number: int | None = None,
        head_branch: str | None = None,
        branch: str | None = None,
        statuses: tuple[str, ...] | None = None,
        limit: int = 100,
    ) -> list[Attempt]:
        """The newest attempts first, filtered by repository, issue/PR, head branch, fix branch
        and status."""
        stmt = select(Attempt).order_by(Attempt.created_at.desc(), Attempt.id.desc()).limit(limit)
        if repo is not None:
            stmt = stmt.where(Attempt.repo == repo)
        if issue_number is not None:
            stmt = stmt.where(Attempt.issue_number == issue_number)
        if head_branch is not None:
            stmt = stmt.where(Attempt.head_branch == head_branch)
        if branch is not None:
            stmt = stmt.where(Attempt.branch == branch)
        if statuses is not None:
            stmt = stmt.where(Attempt.status.in_(statuses))
        with self._sessions() as session:
            return list(session.scalars(stmt))

    def begin_publish(self, attempt_id: int, *, stale_after: dt.timedelta) -> bool:
        """Take the right to publish an attempt's result: ``True`` for exactly one caller.

        Free when never published or after a failed publication; a ``publishing`` claim older
        than ``stale_after`` (a crashed worker) can be taken over. Mark the end with
        ``update_attempt(id, publish_state="published" | "failed")``.
        """
        now = self._clock()
        free: ColumnElement[bool] = or_(
            Attempt.publish_state.is_(None),
            Attempt.publish_state == "failed",
            and_(Attempt.publish_state == "publishing", Attempt.publish_started_at < now - stale_after),
        )
        stmt = (
            update(Attempt)
            .where(Attempt.id == attempt_id, free)
            .values(publish_state="publishing", publish_started_at=now)
        )
        with self._write() as session:
            return bool(session.execute(stmt).rowcount == 1)  # type: ignore[attr-defined]

    # --- pull requests ----------------------------------------------------------------------

    def record_pr(
        self,
        *,
        repo: str,
        number: int,
        url: str,
        branch: str,
        attempt_id: int | None = None,
        head_sha: str | None = None,
        state: str = "open",
    ) -> PullRequest:
        """Record (or update) a pull request ARCS opened, and link it to its attempt."""
        _check(state, PR_STATES, "pr state")
        now = self._clock()
        values: dict[str, Any] = {
            "repo": repo,
            "number": number,
            "url": url,
            "branch": branch,
            "head_sha": head_sha,
            "state": state,
            "created_at": now,
            "updated_at": now,
        }
        if attempt_id is not None:
            values["attempt_id"] = attempt_id
        insert = self._insert(PullRequest)
        keep = {"repo", "number", "created_at"}
        stmt = insert.values(**values).on_conflict_do_update(
            index_elements=[PullRequest.repo, PullRequest.number],
            set_={k: insert.excluded[k] for k in values if k not in keep},
        )
        with self._write() as session:
            session.execute(stmt)
            if attempt_id is not None:
                session.execute(
                    update(Attempt)
                    .where(Attempt.id == attempt_id)
                    .values(pr_number=number, pr_url=url, pr_state=state, branch=branch)
                )
            return session.scalars(
                select(PullRequest).where(PullRequest.repo == repo, PullRequest.number == number)
            ).one()

    def set_pr_state(self, repo: str, number: int, state: str, *, at: dt.datetime | None = None) -> bool:
        """Record that a pull request was merged, closed or reopened; ``False`` if ARCS did not open it."""
        _check(state, PR_STATES, "pr state")
        when = at or self._clock()
        values: dict[str, Any] = {"state": state, "updated_at": self._clock()}
        if state == "merged":
            values.update(merged_at=when, closed_at=when)
        elif state == "closed":
            values["closed_at"] = when
        else:
            values.update(merged_at=None, closed_at=None)
        with self._write() as session:
            result = session.execute(
                update(PullRequest)
                .where(PullRequest.repo == repo, PullRequest.number == number)
                .values(**values)
            )
            session.execute(
                update(Attempt)
                .where(Attempt.repo == repo, Attempt.pr_number == number)
                .values(pr_state=state)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def get_pr(self, repo: str, number: int) -> PullRequest | None:
        """The recorded pull request, if ARCS opened it."""
        with self._sessions() as session:
            return session.scalars(
                select(PullRequest).where(PullRequest.repo == repo, PullRequest.number == number)
            ).first()

    def arcs_pr_for_branch(self, repo: str, branch: str) -> PullRequest | None:
        """The newest pull request ARCS opened from ``branch`` (``None``: not ARCS's branch)."""
        with self._sessions() as session:
            return session.scalars(
                select(PullRequest)
                .where(PullRequest.repo == repo, PullRequest.branch == branch)
                .order_by(PullRequest.id.desc())
            ).first()

    # --- events -----------------------------------------------------------------------------

    def record_event(
        self,
        kind: str,
        message: str,
        *,
        attempt_id: int | None = None,
        delivery_id: str | None = None,
        installation_id: int | None = None,
        repo: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Event:
        """Record a refusal, an error or a notice (``kind`` is one of :data:`EVENT_KINDS`)."""
        _check(kind, EVENT_KINDS, "event kind")
        row = Event(
            kind=kind,
            message=message,
            attempt_id=attempt_id,
            delivery_id=delivery_id,
            installation_id=installation_id,
            repo=repo,
            data=dict(data) if data is not None else None,
            created_at=self._clock(),
        )
        with self._write() as session:
            session.add(row)
        return row

    def events(
        self,
        *,
        attempt_id: int | None = None,
        kind: str | None = None,
        repo: str | None = None,
        limit: int = 100,
    ) -> list[Event]:
        """Recorded events, oldest first, filtered by attempt, kind and repository."""
        stmt = select(Event).order_by(Event.id).limit(limit)
        if attempt_id is not None:
            stmt = stmt.where(Event.attempt_id == attempt_id)
        if kind is not None:
            stmt = stmt.where(Event.kind == kind)
        if repo is not None:
            stmt = stmt.where(Event.repo == repo)
        with self._sessions() as session:
            return list(session.scalars(stmt))

    # --- policies ---------------------------------------------------------------------------

    def get_policy(self, owner: str, repo: str = "") -> Policy | None:
        """The policy row of ``owner`` (``repo=''``) or of one repository (``owner/name``)."""
        with self._sessions() as session:
            return session.scalars(select(Policy).where(Policy.owner == owner, Policy.repo == repo)).first()

    def policies(self, owner: str) -> list[Policy]:
        """The owner's row (if any) first, then its repositories' rows by name."""
        stmt = select(Policy).where(Policy.owner == owner).order_by(Policy.repo)
        with self._sessions() as session:
            return list(session.scalars(stmt))

    def set_policy(
        self, owner: str, repo: str = "", *, updated_by: str | None = None, **fields: Any
    ) -> Policy:
        """Create or update a policy row; only the given ``fields`` change (``None`` clears one)."""
        unknown = set(fields) - POLICY_FIELDS
        if unknown:
            raise ValueError(f"unknown policy field(s): {', '.join(sorted(unknown))}")
        now = self._clock()
        values: dict[str, Any] = {"owner": owner, "repo": repo, "updated_by": updated_by, "updated_at": now}
        values.update(fields)
        insert = self._insert(Policy)
        stmt = insert.values(**values).on_conflict_do_update(
            index_elements=[Policy.owner, Policy.repo],
            set_={k: insert.excluded[k] for k in values if k not in ("owner", "repo")},
        )
        with self._write() as session:
            session.execute(stmt)
            return session.scalars(select(Policy).where(Policy.owner == owner, Policy.repo == repo)).one()

    # --- dashboard sessions -----------------------------------------------------------------

    def create_session(
        self,
        id_hash: str,
        *,
        login: str,
        user_id: int | None,
        scope: Mapping[str, Any],
        csrf: str,
        expires_at: dt.datetime,
    ) -> DashboardSession:
        """Record a dashboard login (``id_hash``: SHA-256 of the cookie's random id)."""
        row = DashboardSession(
            id_hash=id_hash,
            login=login,
            user_id=user_id,
            scope=dict(scope),
            csrf=csrf,
            created_at=self._clock(),
            expires_at=expires_at,
        )
        with self._write() as session:
            session.add(row)
        return row

    def get_session(self, id_hash: str) -> DashboardSession | None:
        """The live session with this id hash (``None`` when unknown or expired)."""
        stmt = select(DashboardSession).where(
            DashboardSession.id_hash == id_hash, DashboardSession.expires_at > self._clock()
        )
        with self._sessions() as session:
            return session.scalars(stmt).first()

    def delete_session(self, id_hash: str) -> None:
        """Log out: forget the session (and sweep expired ones)."""
        from sqlalchemy import delete

        with self._write() as session:
            session.execute(
                delete(DashboardSession).where(
                    or_(DashboardSession.id_hash == id_hash, DashboardSession.expires_at <= self._clock())
                )
            )

    # --- budget: monthly USD reservations, pull-request slots, deferred attempts -------------
    # Policy enforcement for the workers (jobs/policy.py decides; these methods count and
    # reserve). Check-then-claim runs in one transaction under a per-owner lock, so two workers
    # racing for the last dollars (or the last pull request of the day) cannot both get them.

    def usd_committed(self, owner: str, since: dt.datetime, repo: str | None = None) -> float:
        """USD spent by ``owner``'s attempts (``repo``'s only, when given) created since ``since``,
        plus what attempts still running hold in reserve (see :data:`RESERVATION_TTL`)."""
        with self._sessions() as session:
            return _usd_committed(session, owner, repo, since, self._clock())

    def reserve_usd(
        self,
        attempt_id: int,
        owner: str,
        repo: str,
        want: float,
        caps: Mapping[str | None, float],
        since: dt.datetime,
    ) -> float:
        """Reserve up to ``want`` USD for a starting attempt; return the grant (may be 0).

        ``caps`` maps a scope to its monthly limit: ``None`` -> all of ``owner``'s repositories
        together, ``"owner/name"`` -> that repository. The grant is ``min(want, what every cap
        still allows)`` (spend since ``since`` plus other running reservations), written to
        ``attempts.reserved_usd``; the check and the write are serialized per owner.
        """
        return self.admit_repair(attempt_id, owner, repo, want_usd=want, caps=caps, since=since).granted_usd

    def admit_repair(
        self,
        attempt_id: int,
        owner: str,
        repo: str,
        *,
        want_usd: float,
        caps: Mapping[str | None, float],
        since: dt.datetime,
        pr_limits: PrLimits | None = None,
        max_running: int | None = None,
        user_cap: UserCap | None = None,
    ) -> Admission:
        """Check the limits of ``repo`` and reserve USD, atomically per owner.

        With ``max_running``: when that many other attempts of ``repo`` are running and were
        admitted (``admitted_at`` set, started within :data:`RESERVATION_TTL`), nothing is
        reserved and :attr:`Admission.refused` is ``max_running`` (with the count in
        :attr:`Admission.running`). With ``pr_limits``: ARCS pull requests opened since
        ``pr_limits.since`` (and still open) plus the pull requests that admitted attempts may
        still open (running with a reservation, or fixed and not yet published) are counted; at a
        limit nothing is reserved and :attr:`Admission.refused` names it. Otherwise the USD grant
        is computed as in :meth:`reserve_usd`. With ``user_cap``: when that grant on top of what
        the user's other repairs of ``owner`` committed since ``user_cap.since`` (spent plus
        running reservations, by ``requested_by``) would pass its limit, nothing is reserved and
        :attr:`Admission.refused` is ``user_daily_usd`` (with :attr:`Admission.user_committed`
        and :attr:`Admission.user_oldest`). Otherwise the grant is written (a grant of 0 writes
        none) and the attempt is marked admitted.
        """
        with self._write() as session:
            self._budget_lock(session, owner, attempt_id)
            now = self._clock()
            if max_running is not None:
                running = _running_count(session, repo, now, exclude=attempt_id)
                if running >= max_running:
                    return Admission(0.0, None, "max_running", running=running)
            tally: PrTally | None = None
            if pr_limits is not None:
                tally = _pr_tally(session, repo, pr_limits.since, now, exclude=attempt_id)
                if pr_limits.per_day is not None and tally.opened_since + tally.pending >= pr_limits.per_day:
                    return Admission(0.0, tally, "max_prs_per_day")
                if pr_limits.open is not None and tally.open_now + tally.pending >= pr_limits.open:
                    return Admission(0.0, tally, "max_open_prs")
            grant = max(0.0, float(want_usd))
            for scope, limit in caps.items():
                used = _usd_committed(session, owner, scope, since, now, exclude=attempt_id)
                grant = min(grant, max(0.0, float(limit) - used))
            grant = round(grant, 6)
            by_user: float | None = None
            if user_cap is not None:
                login, since_ = user_cap.login, user_cap.since
                by_user = _usd_committed(session, owner, None, since_, now, exclude=attempt_id, user=login)
                if grant > 0 and user_cap_exceeded(user_cap.limit_usd, by_user, grant):
                    oldest = _user_oldest(session, owner, login, since_, exclude=attempt_id)
                    return Admission(
                        0.0,
                        tally,
                        "user_daily_usd",
                        user_committed=by_user,
                        user_oldest=oldest,
                        user_wanted=grant,
                    )
            admitted: dict[str, Any] = {"admitted_at": now}
            if grant > 0:
                admitted["reserved_usd"] = grant
            session.execute(update(Attempt).where(Attempt.id == attempt_id).values(**admitted))
            return Admission(grant, tally, None, user_committed=by_user)

    def release_usd(self, attempt_id: int, *, cost_usd: float | None = None) -> None:
        """The attempt's repair ended: record ``cost_usd`` (when given) and drop its reservation."""
        values: dict[str, Any] = {"reserved_usd": None}
        if cost_usd is not None:
            values["cost_usd"] = round(float(cost_usd), 6)
        with self._write() as session:
            session.execute(update(Attempt).where(Attempt.id == attempt_id).values(**values))

    def count_prs(self, repo: str, since: dt.datetime) -> PrTally:
        """ARCS pull requests of ``repo``: opened since ``since`` and open now (COUNT queries)."""
        with self._sessions() as session:
            return _pr_tally(session, repo, since, self._clock(), exclude=None, pending=False)

    def policy_rows(self, owner: str, repo: str) -> tuple[Policy | None, Policy | None]:
        """``(owner row, repository row)`` of the policy, matching names case-insensitively
        (GitHub's are; the dashboard may have saved another spelling)."""
        from sqlalchemy import func

        stmt = select(Policy).where(
            func.lower(Policy.owner) == owner.lower(), func.lower(Policy.repo).in_(["", repo.lower()])
        )
        with self._sessions() as session:
            rows = list(session.scalars(stmt.order_by(Policy.id)))
        return (
            next((r for r in rows if r.repo == ""), None),
            next((r for r in rows if r.repo != ""), None),
        )

    def defer_attempt(self, attempt_id: int) -> Attempt:
        """Put a running attempt back to ``queued`` for a delayed message (quiet hours)."""
        return self.update_attempt(
            attempt_id, status="queued", message_id=DEFERRED_MESSAGE, reserved_usd=None, admitted_at=None
        )

    def take_deferred(self, attempt_id: int, message_id: str | None) -> bool:
        """``True`` for exactly one delayed message resuming a deferred attempt (it becomes the
        attempt's message, so its own redelivery resumes it too)."""
        stmt = (
            update(Attempt)
            .where(
                Attempt.id == attempt_id,
                Attempt.status == "queued",
                Attempt.message_id == DEFERRED_MESSAGE,
            )
            .values(message_id=message_id)
        )
        with self._write() as session:
            return bool(session.execute(stmt).rowcount == 1)  # type: ignore[attr-defined]

    def _budget_lock(self, session: Session, owner: str, attempt_id: int) -> None:
        """Serialize admissions of one owner until the transaction ends."""
        if self.engine.dialect.name == "postgresql":
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _budget_lock_key(owner)})
            return
        # SQLite: a write statement first takes the database's write lock (waiting on
        # busy_timeout) before anything is read, so the whole check-and-claim is serialized.
        session.execute(
            update(Attempt).where(Attempt.id == attempt_id).values(reserved_usd=Attempt.reserved_usd)
        )


_RECORD_COLUMNS = (
    "delivery_id",
    "event",
    "action",
    "installation_id",
    "repo",
    "payload_sha256",
    "status",
    "reason",
    "received_at",
    "updated_at",
    "latency_ms",
    "jobs",
)


@dataclass(frozen=True, slots=True)
class _DeliveryStatements:
    """The webhook hot path's statements, built once per store (compiled once, then cached)."""

    record: Any
    mark: Any
    mark_many: Any
    """PostgreSQL only: :attr:`mark` for a whole batch in one statement."""

    @classmethod
    def build(cls, insert: postgresql.Insert | sqlite.Insert) -> _DeliveryStatements:
        columns = Delivery.__table__.c
        record = (
            insert.values({name: bindparam(name, type_=columns[name].type) for name in _RECORD_COLUMNS})
            .on_conflict_do_update(
                index_elements=[Delivery.delivery_id],
                set_={name: insert.excluded[name] for name in _RECORD_COLUMNS if name != "delivery_id"},
                # Re-claimable: an old "failed" row, or one the broker never confirmed in time.
                where=or_(
                    Delivery.status == "failed",
                    and_(
                        Delivery.status == "received",
                        Delivery.updated_at < bindparam("stale_before", type_=columns["updated_at"].type),
                    ),
                ),
            )
            .returning(Delivery.delivery_id)
        )
        mark = (
            update(Delivery)
            .where(Delivery.delivery_id == bindparam("d"), Delivery.status == "received")
            .values(
                status="enqueued",
                updated_at=bindparam("now", type_=columns["updated_at"].type),
                latency_ms=func.coalesce(bindparam("l", type_=Float), Delivery.latency_ms),
            )
        )
        mark_many = None
        if isinstance(insert, postgresql.Insert):
            mark_many = text(
                "UPDATE deliveries SET status = 'enqueued', updated_at = :now,"
                " latency_ms = coalesce(confirmed.l, deliveries.latency_ms)"
                " FROM unnest(:ids, :lats) AS confirmed(d, l)"
                " WHERE deliveries.delivery_id = confirmed.d AND deliveries.status = 'received'"
            ).bindparams(
                bindparam("ids", type_=postgresql.ARRAY(String)),
                bindparam("lats", type_=postgresql.ARRAY(Float)),
                bindparam("now", type_=columns["updated_at"].type),
            )
        return cls(record=record, mark=mark, mark_many=mark_many)


def _clip(value: str | None, column: str) -> str | None:
    limit = _CLIP[column]
    return value[:limit] if value is not None and len(value) > limit else value


def _one_line(exc: BaseException) -> str:
    text_ = str(getattr(exc, "orig", None) or exc)
    return " ".join(text_.split())[:300]


# --- budget ---------------------------------------------------------------------------------------
# Helpers of the Store's budget section (monthly USD reservations, pull-request slots).

RESERVATION_TTL = dt.timedelta(hours=6)
"""Reservations of attempts started longer ago than this are not counted (their worker died;
repairs have a one-hour time limit)."""
DEFERRED_MESSAGE = "deferred"
"""``attempts.message_id`` of an attempt waiting for its delayed message (quiet hours)."""


def _budget_lock_key(owner: str) -> int:
    digest = hashlib.blake2b(f"arcs-budget:{owner.lower()}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _usd_committed(
    session: Session,
    owner: str,
    repo: str | None,
    since: dt.datetime,
    now: dt.datetime,
    *,
    exclude: int | None = None,
    user: str | None = None,
) -> float:
    from sqlalchemy import func

    scope: list[ColumnElement[bool]] = [Attempt.owner == owner]
    if repo is not None:
        scope.append(Attempt.repo == repo)
    if user is not None:
        scope.append(Attempt.requested_by == user)
    if exclude is not None:
        scope.append(Attempt.id != exclude)
    spent = select(func.coalesce(func.sum(Attempt.cost_usd), 0.0)).where(*scope, Attempt.created_at >= since)
    held = select(func.coalesce(func.sum(Attempt.reserved_usd), 0.0)).where(
        *scope,
        Attempt.status == "running",
        Attempt.reserved_usd.is_not(None),
        Attempt.started_at >= now - RESERVATION_TTL,
    )
    total = (session.execute(spent).scalar_one() or 0.0) + (session.execute(held).scalar_one() or 0.0)
    return round(float(total), 6)


def _user_oldest(
    session: Session, owner: str, user: str, since: dt.datetime, *, exclude: int
) -> dt.datetime | None:
    """When the oldest of ``user``'s repairs of ``owner`` created since ``since`` was created."""
    from sqlalchemy import func

    stmt = select(func.min(Attempt.created_at)).where(
        Attempt.owner == owner,
        Attempt.requested_by == user,
        Attempt.id != exclude,
        Attempt.created_at >= since,
        (Attempt.cost_usd > 0) | Attempt.reserved_usd.is_not(None),
    )
    oldest = session.execute(stmt).scalar_one_or_none()
    return oldest if isinstance(oldest, dt.datetime) else None


def _running_count(session: Session, repo: str, now: dt.datetime, *, exclude: int) -> int:
    """Admitted attempts of ``repo`` still running (those started longer ago than
    :data:`RESERVATION_TTL` are not counted: their worker died)."""
    from sqlalchemy import func

    stmt = select(func.count(Attempt.id)).where(
        Attempt.repo == repo,
        Attempt.id != exclude,
        Attempt.status == "running",
        Attempt.admitted_at.is_not(None),
        Attempt.started_at >= now - RESERVATION_TTL,
    )
    return int(session.execute(stmt).scalar_one())


def _pr_tally(
    session: Session,
    repo: str,
    since: dt.datetime,
    now: dt.datetime,
    *,
    exclude: int | None,
    pending: bool = True,
) -> PrTally:
    from sqlalchemy import func

    count = func.count(PullRequest.id)
    opened = session.execute(
        select(count).where(PullRequest.repo == repo, PullRequest.created_at >= since)
    ).scalar_one()
    open_now = session.execute(
        select(count).where(PullRequest.repo == repo, PullRequest.state == "open")
    ).scalar_one()
    waiting = 0
    if pending:
        mine: list[ColumnElement[bool]] = [Attempt.repo == repo]
        if exclude is not None:
            mine.append(Attempt.id != exclude)
        admitted = or_(
            and_(
                Attempt.status == "running",
                Attempt.reserved_usd.is_not(None),
                Attempt.started_at >= now - RESERVATION_TTL,
            ),
            and_(
                Attempt.status == "fixed",
                Attempt.pr_number.is_(None),
                Attempt.finished_at >= since,
            ),
        )
        waiting = session.execute(select(func.count(Attempt.id)).where(*mine, admitted)).scalar_one()
    return PrTally(opened_since=int(opened), open_now=int(open_now), pending=int(waiting))


if TYPE_CHECKING:
    # The jobs see the store only through this port (checked by mypy, nothing runs).
    from jobs.ports import AttemptStore

    def _conforms(store: Store) -> AttemptStore:
        return store
