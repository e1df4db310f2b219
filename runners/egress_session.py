"""One setup run's network: the egress folder a sandbox binds, and the plan a runner follows.

:class:`EgressSession` wraps an :class:`runners.egress_proxy.EgressProxy` with the folder the
sandbox binds at :data:`runners.egress.RELAY_DIR` (the proxy's socket, the relay script, Maven's
settings) and removes it afterwards. :func:`network_plan` turns a policy and a run's ``network``
flag into what a runner sets up (:class:`NetworkPlan`): the command (behind the relay), the
environment (the proxy variables), whether to share the host's network, the folder to bind.
Both :class:`runners.sandbox.LocalSandbox` and :class:`runners.docker.DockerRunner` use it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

import structlog

from runners.egress import (
    MAVEN_SETTINGS_NAME,
    RELAY_SCRIPT_NAME,
    RELAY_SOCKET_NAME,
    EgressPolicy,
    maven_settings,
    relay_command,
    with_proxy_env,
)
from runners.egress_proxy import EgressProxy, ProxyLimits, Resolver
from runners.limits import Supervised

log = structlog.get_logger(__name__)


class EgressSession:
    """The folder a sandbox binds at :data:`runners.egress.RELAY_DIR`, with a running proxy.

    ``with EgressSession(policy, root=...) as session:`` creates ``<root>/arcs-ws-<pid>-egress-*/egress``
    (0755 inside a private 0700 folder) holding the proxy's socket, the relay script and Maven's
    settings, and removes all of it on exit. The ``arcs-ws-<pid>-`` prefix lets the stale-workspace
    sweep remove it if this process is killed.
    """

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        root: Path,
        limits: ProxyLimits | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        """Nothing is created until the ``with`` block starts."""
        self.policy = policy
        self.root = Path(root)
        self.limits = limits
        self.resolver = resolver
        self._holder: Path | None = None
        self._proxy: EgressProxy | None = None

    @property
    def dir(self) -> Path:
        """The host folder to bind (read-only) at :data:`runners.egress.RELAY_DIR`."""
        assert self._holder is not None, "EgressSession used outside its with block"
        return self._holder / "egress"

    @property
    def proxy(self) -> EgressProxy:
        """The running proxy."""
        assert self._proxy is not None, "EgressSession used outside its with block"
        return self._proxy

    def notes(self) -> list[str]:
        """One line per refused connection, for the setup step's output."""
        return [event.note() for event in self.proxy.refusals]

    def __enter__(self) -> EgressSession:
        from runners.workspace import remove_tree

        holder = Path(tempfile.mkdtemp(prefix=f"arcs-ws-{os.getpid()}-egress-", dir=self.root))
        self._holder = holder
        try:
            folder = holder / "egress"
            folder.mkdir(mode=0o755)
            folder.chmod(0o755)  # whatever the umask
            relay = Path(__file__).with_name("egress_relay.py").read_bytes()
            for name, body in ((RELAY_SCRIPT_NAME, relay), (MAVEN_SETTINGS_NAME, maven_settings())):
                (folder / name).write_bytes(body)
                (folder / name).chmod(0o644)
            self._proxy = EgressProxy(
                self.policy, folder / RELAY_SOCKET_NAME, limits=self.limits, resolver=self.resolver
            ).start()
        except BaseException:
            remove_tree(holder)
            self._holder = None
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        from runners.workspace import remove_tree

        if self._proxy is not None:
            self._proxy.close()
        if self._holder is not None:
            remove_tree(self._holder)
            self._holder = None


# --------------------------------------------------------------------------- a run's network


@dataclass
class NetworkPlan:
    """One run's network: the command and environment to run, and what bwrap must set up."""

    command: str
    env: Mapping[str, str] | None
    share_net: bool = False
    """The host's network (the unsafe ``host`` setup mode)."""
    egress: Path | None = None
    """The egress session's folder to bind (the ``registries`` setup mode)."""
    notes: list[str] = field(default_factory=list)
    """Lines for the end of stderr: refused connections, a relay that could not run."""

    def annotate(self, done: Supervised) -> Supervised:
        """``done`` with :attr:`notes` (each once, at most 8) appended to its stderr."""
        notes = list(dict.fromkeys(self.notes))
        if not notes:
            return done
        shown = notes[:8] + ([f"arcs: ... and {len(notes) - 8} more refused"] if len(notes) > 8 else [])
        stderr = done.stderr if not done.stderr or done.stderr.endswith("\n") else done.stderr + "\n"
        return replace(done, stderr=stderr + "\n".join(shown) + "\n")


@contextlib.contextmanager
def network_plan(
    policy: EgressPolicy,
    network: bool,
    command: str,
    env: Mapping[str, str] | None,
    *,
    python: str | None,
    root: Path | None = None,
) -> Iterator[NetworkPlan]:
    """How one run gets its network under ``policy``; a proxy, if any, lives as long as the block.

    ``network`` is the caller's ask (the setup phase). ``registries`` starts an
    :class:`runners.egress_proxy.EgressSession` under ``root`` (default: the workspace root) and
    runs ``command`` behind the relay, started with ``python`` (None: no Python in the sandbox,
    so setup runs offline and says so).
    """
    if not network or policy.mode == "none":
        yield NetworkPlan(command, env)
        return
    if policy.mode == "host":
        yield NetworkPlan(command, env, share_net=True)
        return
    if python is None:
        note = "arcs: no python3 in the sandbox for the setup network relay: setup runs without network"
        log.warning("egress.unavailable", reason=note)
        yield NetworkPlan(command, env, notes=[note])
        return
    if root is None:
        from runners.workspace import default_root

        root = default_root()
    with EgressSession(policy, root=root) as session:
        plan = NetworkPlan(
            relay_command(command, python=python), with_proxy_env(env or {}), egress=session.dir
        )
        yield plan
        plan.notes.extend(session.notes())
