"""ARCS settings: one object, read once from the environment (prefix ``ARCS_``) and injected.

Nothing here runs at import time; call :func:`load_settings` at the edge (CLI ``main``, the web
app factory, the worker entry point) and pass the result down.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from bot.errors import ConfigError
from indexing.config import IndexConfig
from runners.limits import SandboxLimits

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git/",
    "node_modules/",
    "vendor/",
    "third_party/",
    "dist/",
    "build/",
    "target/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.lock",
    "package-lock.json",
    "*_pb2.py",
    "*.pb.go",
    "*.generated.*",
)


def github_web_url_for(api_url: str) -> str:
    """The web URL of the GitHub that serves ``api_url`` (github.com, GHE.com or GHES)."""
    parts = urlsplit(api_url.rstrip("/"))
    host = parts.netloc
    if host == "api.github.com":
        return "https://github.com"
    if host.startswith("api.") and parts.path in ("", "/"):
        # GHE.com data residency: api.SUBDOMAIN.ghe.com -> SUBDOMAIN.ghe.com
        return f"{parts.scheme}://{host.removeprefix('api.')}"
    # GHES: https://HOST/api/v3 -> https://HOST
    return f"{parts.scheme}://{host}{parts.path.removesuffix('/api/v3')}"


class Settings(BaseModel):
    """Process-wide configuration. Every field maps to an ``ARCS_<NAME>`` variable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    home: Path = Field(default_factory=lambda: Path.home() / ".arcs")
    """Where ARCS keeps its state: local Qdrant, caches, traces (``ARCS_HOME``)."""

    qdrant_url: str | None = None
    """A Qdrant server URL; unset means the embedded local store under ``home/qdrant``."""

    qdrant_api_key: str | None = None

    embedder: Literal["onnx", "onnx-int8", "minilm", "hash"] = "onnx"
    """``onnx`` (all-MiniLM-L6-v2 from the bundled weights through ONNX Runtime: the CPU fast path,
    same vectors as ``minilm``), ``onnx-int8`` (its int8-quantised graph: faster, slightly lower
    recall), ``minilm`` (the model through torch/sentence-transformers) or ``hash`` (fast, lexical;
    tests and tiny hosts)."""

    embed_threads: int = Field(default=0, ge=0, le=64)
    """CPU threads of one embedding call (``onnx``/``minilm``); 0: the runtime's default (one per core;
    ONNX Runtime's threads do not spin, so they hold up when test suites share the cores -- torch's do
    not: set 1 with ``minilm`` on a busy host; bench/RESULTS.md, Indexing)."""

    embed_max_tokens: int = Field(default=128, ge=16, le=256)
    """Word pieces of a chunk the model reads (path, name, signature, docstring, then code); the cost
    of an embedding grows with it. Part of the embedding cache identity."""

    index_mode: Literal["eager", "lazy"] = "lazy"
    """``lazy``: index sparse vectors and structure at once, embed file/directory abstracts, and embed
    chunk bodies when a query first needs them (or in the background fill); ``eager``: embed every
    chunk while indexing."""

    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    """gitignore-style patterns never indexed, on top of each repository's own ``.gitignore``."""

    max_file_bytes: int = 1_000_000
    """Files larger than this are treated as generated/data and skipped by the indexer."""

    log_format: Literal["auto", "json", "console"] = "auto"
    log_level: str = "INFO"

    # --- the LLM (repair engine) -------------------------------------------------------------
    anthropic_api_key: SecretStr | None = None
    """``ANTHROPIC_API_KEY`` (also accepted as ``ARCS_ANTHROPIC_API_KEY``); unset means tier 0 only."""
    anthropic_base_url: str | None = None
    """``ANTHROPIC_BASE_URL``: a gateway or a local Anthropic-compatible server."""
    model: str = "claude-sonnet-4-6"
    """``ARCS_MODEL``: the model the proposer and the LLM roles use."""

    # --- the GitHub App --------------------------------------------------------------------------
    webhook_secret: SecretStr | None = None
    app_id: str | None = None
    private_key_path: Path | None = None
    private_key: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    """GitHub Enterprise Server: ``https://HOST/api/v3``."""
    public_url: str = "http://localhost:8000"
    """Where this deployment is reachable (webhook URL, dashboard links, manifest flow)."""
    bot_login: str = "arcs[bot]"
    """The app's bot account, whose own comments are ignored."""
    github_web_url: str | None = None
    """Where users log in and the manifest flow creates the app; unset: derived from
    ``ARCS_GITHUB_API_URL`` (``https://api.github.com`` → ``https://github.com``, GHES
    ``https://HOST/api/v3`` → ``https://HOST``)."""
    # Code reads :attr:`web_url`, which applies that default.
    client_id: str | None = None
    """The app's OAuth client id (dashboard login with GitHub); the manifest flow writes it."""
    client_secret: SecretStr | None = None
    """The app's OAuth client secret."""
    session_secret: SecretStr | None = None
    """Key that signs dashboard session cookies; unset: a random key made once and kept in
    ``$ARCS_HOME/session.key`` (0600), shared by every web process using that ``ARCS_HOME``
    (set it when web processes run on several hosts)."""
    session_hours: float = 12.0
    """How long a dashboard login lasts."""
    metrics_token: SecretStr | None = None
    """When set, ``/metrics`` wants ``Authorization: Bearer <token>``; unset, it is open (keep it
    on an internal network: it carries no org or repo names)."""
    setup_token: SecretStr | None = None
    """One-time token the manifest flow (``/setup``) requires; ``arcs serve`` makes one and prints
    it when the app is not configured yet."""

    # --- infrastructure ---------------------------------------------------------------------------
    broker_url: str | None = None
    """``redis://…`` (default broker), ``amqp://…`` (RabbitMQ) or unset/``stub://`` (in-process)."""
    database_url: str | None = None
    """SQLAlchemy URL; unset means SQLite under ``home/arcs.db``."""
    broker_requeue_s: float = 120.0
    """Redis broker: a message held by a worker that stopped heartbeating (killed, host lost) is
    redelivered after this many seconds (5 s to 7 days; dramatiq's own default, a 60 s heartbeat
    checked on 0.1% of broker commands, takes a quarter of an hour or more in practice)."""
    database_timeout_s: float = Field(default=2.0, gt=0, le=60)
    """The web process's bound on each database wait: connecting, a statement, a lock, SQLite's
    busy wait and the wait for a pooled connection (a webhook answer must come within 5 s)."""
    broker_timeout_s: float = Field(default=1.0, gt=0, le=60)
    """The web process's bound on connecting to and waiting for the broker (Redis socket timeouts)."""
    checks_grace_s: float = Field(default=900.0, ge=0, le=7 * 24 * 3600)
    """After ARCS pushed a fix, how long the pull request's checks may take to start before its
    status comment says none did (pushes made with ``GITHUB_TOKEN`` start no workflows; runs on a
    bot's branch may wait for approval). 0 turns the check off."""
    relay_grace_s: float = Field(default=30.0, ge=0.5, le=3600)
    """A delivery whose jobs the broker has not confirmed this long after it was recorded is
    enqueued again by the relay (or by GitHub's redelivery); keep it above the 5 s answer bound."""
    relay_interval_s: float = Field(default=5.0, gt=0, le=3600)
    """How often each web process looks for such deliveries."""
    webhook_read_timeout_s: float = Field(default=10.0, gt=0, le=600)
    """A webhook body must arrive within this long (GitHub gives up after 10 s anyway): 408."""
    webhook_body_budget_mb: float = Field(default=64.0, gt=0)
    """Bytes of webhook bodies not yet verified that one web process holds at once; a request
    that would exceed it is refused with 503 (slow or large unsigned uploads cannot pile up)."""
    max_running_per_repo: int = Field(default=2, ge=1, le=1000)
    """Repairs of one repository that may run at once (clone, sandbox, model); another one is
    deferred and re-queued every 5 minutes until a slot frees (said on its check run or status
    comment), and refused with that message if none frees before the request expires (24 h)."""
    user_daily_usd: float = Field(default=0.0, ge=0, le=1_000_000)
    """USD the repairs one person triggers may commit (spent plus reserved) in any 24 hours, across
    the repositories of one installation; 0 = no cap. A repair whose reservation would go past
    what is left is refused (said on its check run or status comment). Counted against whoever
    asked (``/arcs`` commands, buttons, issue labels) and, for a failed workflow run, its
    triggering actor (who pushed or re-ran it); runs a bot started, other checks apps' suites and
    requests by bot accounts count against nobody (the human behind them is not known)."""

    # --- the test runner ---------------------------------------------------------------------------
    runner: Literal["bubblewrap", "docker"] = "bubblewrap"
    """How repairs run the repository's tests: ``bubblewrap`` (a sandbox on the worker itself, with
    the worker's toolchains) or ``docker`` (one throwaway container per command from
    ``ARCS_RUNNER_IMAGE``, through the ``docker`` CLI: no network, read-only root, no capabilities;
    needs a container engine the worker can reach). ``arcs fix --unsafe-no-sandbox`` overrides both."""
    runner_image: str | None = None
    """The image test commands run in when ``ARCS_RUNNER=docker`` (required then): it must hold the
    toolchains the repositories' tests need (``deploy/runner/Dockerfile`` builds one)."""
    runner_runtime: str | None = None
    """Container runtime for ``ARCS_RUNNER=docker`` (``docker run --runtime``), e.g. ``runsc`` for
    gVisor; unset: the engine's default. The engine must have it registered."""
    setup_network: Literal["none", "registries", "host"] = "registries"
    """The network of the ``setup:`` step (dependency installs): ``registries`` (its own network
    namespace; an allow-listing proxy lets it reach the package registries and
    ``ARCS_SETUP_NETWORK_ALLOW`` only, never loopback, private or link-local addresses), ``none``
    (offline), or ``host`` (the host's network: UNSAFE, setup can then reach this host's Redis and
    PostgreSQL; only for repositories you trust)."""
    setup_network_allow: tuple[str, ...] = ()
    """Hosts the setup step may reach on top of the registries, comma-separated ``host``,
    ``host:port`` or ``*.domain``. An exact ``host:port`` here may be a private or loopback address
    (an internal mirror); a repository's ``.arcs.yml`` ``setup_network.allow`` never can."""

    # --- limits of each sandboxed run (bubblewrap; `arcs doctor` says which mechanism holds each) ---
    sandbox_disk_mb: int = Field(default=4096, ge=0)
    """How much one sandboxed command may grow its workspace and temp space (``/tmp``, ``$HOME``)
    together, in MiB; past it the command is stopped (a watcher on the host) and the verdict says
    so. 0: no quota (only the 1 GiB per-file limit)."""
    sandbox_cpus: float = Field(default=2.0, ge=0, le=4096)
    """CPU cores one sandboxed command's processes may use together (a cgroup's ``cpu.max``; it is
    throttled beyond). 0: no limit. Needs a writable cgroup (docs/deploy.md, Sandbox limits)."""
    sandbox_memory_mb: int = Field(default=4096, ge=0)
    """Memory of one sandboxed command's whole process tree in MiB, page cache and tmpfs included, no
    swap (a cgroup's ``memory.max``); the kernel kills it past that. 0: only the per-process limit
    (``.arcs.yml`` ``memory_mb``, default 2048)."""
    sandbox_processes: int = Field(default=512, ge=2, le=1_000_000)
    """Processes and threads of one sandboxed command (a cgroup's ``pids.max``, else
    ``RLIMIT_NPROC`` per sandbox uid); a fork past it stops the command."""
    sandbox_total_processes: int = Field(default=4096, ge=0, le=4_000_000)
    """Processes of all sandboxes together, of every worker process sharing the cgroup (its
    ``arcs-sandboxes/pids.max``). 0: no shared cap. At least ``ARCS_SANDBOX_PROCESSES``."""
    sandbox_cgroup: Path | None = None
    """The cgroup folder run cgroups are created under (e.g. ``/sys/fs/cgroup/arcs.slice``, delegated
    to the worker's user); unset: the worker's own cgroup."""

    @field_validator("exclude", mode="before")
    @classmethod
    def _split_exclude(cls, value: object) -> object:
        # ARCS_EXCLUDE="a/,b/" is friendlier than a JSON list in an env file.
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("setup_network_allow", mode="before")
    @classmethod
    def _split_allow(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("setup_network_allow")
    @classmethod
    def _check_allow(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from runners.egress import PolicyError, parse_allow_list

        try:
            parse_allow_list(value, trusted=True)
        except PolicyError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("model")
    @classmethod
    def _check_model(cls, value: str) -> str:
        # The same rule as the Action's `model` input: a name, never a line of shell or markup.
        from jobs.repair.pricing import model_name_problem

        problem = model_name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("sandbox_memory_mb")
    @classmethod
    def _check_sandbox_memory(cls, value: int) -> int:
        if 0 < value < 16:
            raise ValueError("must be 0 (off) or at least 16 MiB")
        return value

    @field_validator("sandbox_cpus")
    @classmethod
    def _check_sandbox_cpus(cls, value: float) -> float:
        if 0 < value < 0.01:
            raise ValueError("must be 0 (off) or at least 0.01 cores")
        return value

    @field_validator("sandbox_total_processes")
    @classmethod
    def _check_total_processes(cls, value: int, info: ValidationInfo) -> int:
        per_run = info.data.get("sandbox_processes")
        if value and isinstance(per_run, int) and value < per_run:
            raise ValueError(f"must be 0 (off) or at least ARCS_SANDBOX_PROCESSES ({per_run})")
        return value

    @field_validator("sandbox_cgroup")
    @classmethod
    def _check_sandbox_cgroup(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_absolute():
            raise ValueError("must be an absolute path (a cgroup folder)")
        return value

    @field_validator("runner_image", "runner_runtime")
    @classmethod
    def _check_container_word(cls, value: str | None) -> str | None:
        # Both end up as single words of the `docker run` command line: a leading "-" would be
        # read as an option, whitespace is never part of an image reference or a runtime name.
        if value is not None and (not value or value.startswith("-") or any(c.isspace() for c in value)):
            raise ValueError("must be one word that does not start with '-'")
        return value

    @property
    def web_url(self) -> str:
        """The GitHub web URL (``ARCS_GITHUB_WEB_URL``, else derived from the API URL), no trailing slash."""
        return (self.github_web_url or github_web_url_for(self.github_api_url)).rstrip("/")

    @property
    def qdrant_path(self) -> Path:
        """Folder of the embedded Qdrant store."""
        return self.home / "qdrant"

    @property
    def sqlalchemy_url(self) -> str:
        """The database URL to use (SQLite under ``home`` by default)."""
        return self.database_url or f"sqlite:///{self.home / 'arcs.db'}"

    @property
    def traces_dir(self) -> Path:
        """Folder of repair traces (JSON)."""
        return self.home / "traces"

    @property
    def cache_dir(self) -> Path:
        """Folder for content-addressed caches (embeddings, summaries)."""
        return self.home / "cache"

    @property
    def index_dir(self) -> Path:
        """Folder for per-repository index manifests."""
        return self.home / "index"

    def sandbox_limits(self) -> SandboxLimits:
        """The per-run sandbox limits as the plain values :mod:`runners` takes (0 turns one off)."""
        return SandboxLimits(
            disk_mb=self.sandbox_disk_mb or None,
            cpus=self.sandbox_cpus or None,
            memory_mb=self.sandbox_memory_mb or None,
            processes=self.sandbox_processes,
            total_processes=self.sandbox_total_processes or None,
            cgroup_parent=self.sandbox_cgroup,
        )

    def index_config(self) -> IndexConfig:
        """The plain values the ``indexing`` layer runs on (it never sees the settings)."""
        return IndexConfig(
            index_dir=self.index_dir,
            cache_dir=self.cache_dir,
            qdrant_path=self.qdrant_path,
            qdrant_url=self.qdrant_url,
            qdrant_api_key=self.qdrant_api_key,
            embedder=self.embedder,
            embed_threads=self.embed_threads,
            embed_max_tokens=self.embed_max_tokens,
            index_mode=self.index_mode,
            exclude=self.exclude,
            max_file_bytes=self.max_file_bytes,
        )


_UNPREFIXED = {"anthropic_api_key": "ANTHROPIC_API_KEY", "anthropic_base_url": "ANTHROPIC_BASE_URL"}


def load_settings(environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Read settings once.

    ``environ`` defaults to the process environment; tests pass an explicit mapping.
    Raises :class:`ConfigError` with the offending variable named.
    """
    import os

    env = dict(os.environ if environ is None else environ)
    values: dict[str, object] = {}
    for name in Settings.model_fields:
        key = f"ARCS_{name.upper()}"
        if key in env and env[key] != "":
            values[name] = env[key]
    # The Anthropic SDK's own variable names are what users already have set.
    for name, key in _UNPREFIXED.items():
        if name not in values and env.get(key):
            values[name] = env[key]
    values.update(overrides)
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"]) or "?"
        raise ConfigError(f"invalid setting ARCS_{loc.upper()}: {first['msg']}") from exc
