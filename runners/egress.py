"""The setup phase's network policy: which hosts a repository's ``setup:`` step may reach.

The setup step (``.arcs.yml`` ``setup:``, a ``pip install -e .`` running a pull request's
``setup.py``) is untrusted code. It gets its own network namespace with nothing but a private
loopback, and one way out: an HTTP(S) proxy on the host side (:mod:`runners.egress_proxy`) that
the sandbox reaches through a Unix socket and a small relay on ``127.0.0.1:3128`` inside
(:mod:`runners.egress_relay`). The proxy allows a host only when

* the name matches the allow-list: the package registries (:data:`DEFAULT_REGISTRIES`), the
  operator's ``ARCS_SETUP_NETWORK_ALLOW`` and the repository's ``setup_network: {allow: [...]}``,
  on port 80 or 443 unless the entry names a port; and
* every address the name resolves to is public: not loopback, private (10/8, 172.16/12,
  192.168/16, fc00::/7), shared (100.64/10), link-local or cloud metadata (169.254/16, fe80::/10),
  multicast, unspecified, reserved, nor an address of this host. Only an operator entry naming an
  exact ``host:port`` (a mirror or a local index) lifts that, never a repository's entry.

The proxy connects to the very address it checked (no second lookup, so no DNS rebinding), tunnels
``CONNECT`` without looking inside TLS and forwards plain ``http://`` requests.

``ARCS_SETUP_NETWORK`` picks the mode: ``registries`` (the above, default), ``none`` (no network
at all) or ``host`` (the host's network, as before this policy: setup can then reach every
service of the host, the bot's own Redis and PostgreSQL included; only for trusted repositories).

This module is pure (no sockets, no threads): names, entries, address classes, the sandbox-side
environment. It takes plain values and imports nothing of ``bot``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import shlex
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SetupNetworkMode = Literal["none", "registries", "host"]
SETUP_NETWORK_MODES: tuple[SetupNetworkMode, ...] = ("none", "registries", "host")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_REGISTRIES: tuple[str, ...] = (
    # Python: the index and the files it links to
    "pypi.org",
    "files.pythonhosted.org",
    # JavaScript: npm and yarn
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    # Rust: the sparse index and the crate downloads
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    # Java: Maven Central, the Gradle plugin portal and wrapper distributions
    "repo.maven.apache.org",
    "repo1.maven.org",
    "plugins.gradle.org",
    "plugins-artifacts.gradle.org",
    "services.gradle.org",
    "downloads.gradle.org",
    # Go: the module proxy and the checksum database
    "proxy.golang.org",
    "sum.golang.org",
)
"""The package registries setup may reach by default (ports 80 and 443)."""

DEFAULT_PORTS: frozenset[int] = frozenset({80, 443})

RELAY_DIR = "/run/arcs-egress"
"""Where the sandbox sees the proxy's socket, the relay script and the Maven settings."""
RELAY_PORT = 3128
"""The relay's port on the sandbox's own loopback (its own network namespace: nothing else there)."""
RELAY_SOCKET_NAME = "proxy.sock"
RELAY_SCRIPT_NAME = "relay.py"
MAVEN_SETTINGS_NAME = "maven-settings.xml"
RELAY_FAILED_EXIT = 125
"""Exit status of a setup step whose relay could not start (no Python, no socket)."""

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class PolicyError(ValueError):
    """A malformed allow-list entry or mode (the message names the entry)."""


# --------------------------------------------------------------------------- names and entries


def normalize_host(text: str) -> str:
    """A host as the policy compares it: lowercase, no trailing dot, IPv6 without brackets.

    Raises :class:`PolicyError` for anything that is neither a DNS name nor an IP literal.
    """
    host = text.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise PolicyError(f"{text!r} is not an IPv6 address") from None
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(host))
    host = host.removesuffix(".")
    labels = host.split(".")
    if not host or len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise PolicyError(f"{text!r} is not a host name")
    if labels[-1].isdigit():
        # 127.1, 2130706433: forms the resolver turns into addresses; never a registry's name.
        raise PolicyError(f"{text!r} is not a host name")
    return host


def split_authority(text: str, *, default_port: int | None) -> tuple[str, int]:
    """``host:port`` / ``[v6]:port`` (/ ``host`` with a default) -> (normalized host, port)."""
    text = text.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise PolicyError(f"{text!r}: unclosed [")
        host, rest = text[: end + 1], text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise PolicyError(f"{text!r}: expected :port after ]")
        port_text = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, None
    if port_text is None:
        if default_port is None:
            raise PolicyError(f"{text!r}: a port is required")
        port = default_port
    else:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise PolicyError(f"{text!r}: the port must be a number from 1 to 65535")
        port = int(port_text)
    return normalize_host(host), port


@dataclass(frozen=True, slots=True)
class AllowEntry:
    """One allow-list entry: a host (or ``*.suffix``), a port (None: 80 and 443) and who said so."""

    host: str
    port: int | None = None
    trusted: bool = False
    """An operator's entry (settings); only those may name a non-public address, and only exactly."""

    @property
    def wildcard(self) -> bool:
        """``*.example.com``: any name below ``example.com`` (not ``example.com`` itself)."""
        return self.host.startswith("*.")

    @property
    def exact(self) -> bool:
        """Names one host and one port (what unlocks a non-public address for a trusted entry)."""
        return self.port is not None and not self.wildcard

    def matches(self, host: str, port: int) -> bool:
        """True when this entry allows ``host:port`` by name and port (addresses are checked apart)."""
        if port not in ((self.port,) if self.port is not None else DEFAULT_PORTS):
            return False
        if self.wildcard:
            return host.endswith(self.host[1:])
        return host == self.host

    def __str__(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"{shown}:{self.port}" if self.port is not None else shown


def parse_allow_entry(text: str, *, trusted: bool) -> AllowEntry:
    """``host``, ``host:port``, ``[v6]:port``, ``*.example.com[:port]`` -> :class:`AllowEntry`."""
    raw = text.strip()
    if not raw or "/" in raw or "@" in raw or any(c.isspace() for c in raw):
        raise PolicyError(f"allow-list entry {text!r}: expected host or host:port")
    wildcard = raw.startswith("*.")
    body = raw[2:] if wildcard else raw
    if ":" in body and not body.startswith("[") and body.count(":") > 1:
        body = f"[{body}]"  # a bare IPv6 address, no port
    try:
        if ":" in body.rsplit("]", 1)[-1]:
            host, port = split_authority(body, default_port=None)
            entry = AllowEntry(host, port, trusted)
        else:
            entry = AllowEntry(normalize_host(body), None, trusted)
    except PolicyError as exc:
        raise PolicyError(f"allow-list entry {text!r}: {exc}") from None
    if wildcard:
        if ip_or_none(entry.host) is not None or entry.host.count(".") < 1:
            raise PolicyError(f"allow-list entry {text!r}: a wildcard needs a domain of two labels or more")
        entry = AllowEntry(f"*.{entry.host}", entry.port, trusted)
    return entry


def parse_allow_list(items: Iterable[str], *, trusted: bool) -> tuple[AllowEntry, ...]:
    """Every entry parsed (duplicates dropped, order kept); :class:`PolicyError` names a bad one."""
    out: list[AllowEntry] = []
    for item in items:
        entry = parse_allow_entry(item, trusted=trusted)
        if entry not in out:
            out.append(entry)
    return tuple(out)


# --------------------------------------------------------------------------- addresses


def ip_or_none(text: str) -> IPAddress | None:
    """The address ``text`` spells, or None."""
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_class(ip: IPAddress, local: Iterable[IPAddress] = ()) -> str | None:
    """Why setup must not reach ``ip`` on its own (``"loopback"``, ``"private"``...), or None if public.

    ``local`` holds this host's addresses: a public address of the host still reaches the
    services it binds on all interfaces.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.teredo is not None:
            return "a Teredo tunnel address"
        inner = _embedded_v4(ip)
        if inner is not None:
            why = address_class(inner, local)
            return f"{why} (inside {ip})" if why else None
    checks: tuple[tuple[bool, str], ...] = (
        (ip.is_loopback, "loopback"),
        (ip.is_unspecified, "unspecified"),
        (ip.is_link_local, "link-local (cloud metadata lives there)"),
        (ip.is_multicast, "multicast"),
        (isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED, "shared address space (100.64/10)"),
        (ip.is_private, "private"),
        (ip.is_reserved, "reserved"),
        (not ip.is_global, "not globally routable"),
        (ip in set(local), "an address of this host"),
    )
    return next((why for hit, why in checks if hit), None)


def host_addresses() -> frozenset[IPAddress]:
    """This host's own addresses (every interface of this network namespace), best effort.

    Read from ``/proc/net/fib_trie`` (IPv4 ``LOCAL`` routes) and ``/proc/net/if_inet6``, plus what
    the host name resolves to; an unreadable source is skipped.
    """
    found: set[IPAddress] = set()
    with contextlib.suppress(OSError):
        previous = ""
        for line in Path("/proc/net/fib_trie").read_text(encoding="ascii", errors="replace").splitlines():
            text = line.strip()
            if text.startswith("/32 host LOCAL"):
                ip = ip_or_none(previous.split()[-1]) if previous.split() else None
                if ip is not None:
                    found.add(ip)
            previous = text
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/if_inet6").read_text(encoding="ascii", errors="replace").splitlines():
            word = line.split()[0] if line.split() else ""
            if len(word) == 32:
                with contextlib.suppress(ValueError):
                    found.add(ipaddress.IPv6Address(int(word, 16)))
    with contextlib.suppress(OSError, UnicodeError):
        for info in socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM):
            ip = ip_or_none(str(info[4][0]))
            if ip is not None:
                found.add(ip)
    return frozenset(found)


# --------------------------------------------------------------------------- the policy


@dataclass(frozen=True, slots=True)
class Verdict:
    """The policy's answer for one destination."""

    allowed: bool
    reason: str
    """Why (``"allow-listed (pypi.org)"``, ``"127.0.0.1 is loopback"``...)."""
    hint: str = ""
    """For a refusal: how to allow it, if it can be allowed."""


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """The setup phase's network: a mode and, for ``registries``, the allow-list."""

    mode: SetupNetworkMode = "registries"
    allow: tuple[AllowEntry, ...] = field(
        default_factory=lambda: parse_allow_list(DEFAULT_REGISTRIES, trusted=True)
    )

    @classmethod
    def build(
        cls,
        mode: str = "registries",
        allow: Sequence[str] = (),
        repo_allow: Sequence[str] = (),
        *,
        registries: Sequence[str] = DEFAULT_REGISTRIES,
    ) -> EgressPolicy:
        """The policy from plain values: ``allow`` is the operator's (trusted), ``repo_allow`` the
        repository's ``.arcs.yml`` (public addresses only). Raises :class:`PolicyError`."""
        if mode not in SETUP_NETWORK_MODES:
            raise PolicyError(
                f"setup network mode {mode!r}: expected one of {', '.join(SETUP_NETWORK_MODES)}"
            )
        entries = (
            *parse_allow_list(registries, trusted=True),
            *parse_allow_list(allow, trusted=True),
            *parse_allow_list(repo_allow, trusted=False),
        )
        return cls(mode=mode, allow=tuple(dict.fromkeys(entries)))

    def with_repo_allow(self, repo_allow: Sequence[str]) -> EgressPolicy:
        """This policy plus a repository's own (untrusted) entries."""
        extra = parse_allow_list(repo_allow, trusted=False)
        return EgressPolicy(mode=self.mode, allow=tuple(dict.fromkeys((*self.allow, *extra))))

    def entries_for(self, host: str, port: int) -> list[AllowEntry]:
        """The entries that allow ``host:port`` by name and port (empty: refused without a lookup)."""
        return [entry for entry in self.allow if entry.matches(host, port)]

    def check(
        self, host: str, port: int, addresses: Sequence[IPAddress], local: Iterable[IPAddress] = ()
    ) -> Verdict:
        """May setup connect to ``host:port``, which resolved to ``addresses``? (all of them count)

        For a name that is not on the allow-list the addresses only shape the hint (the proxy
        does not even look the name up: a lookup would leak the name to its DNS server).
        """
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if self.mode != "registries":
            return Verdict(self.mode == "host", f"setup network mode is {self.mode}")
        local_set = frozenset(local)
        bad = next(((ip, why) for ip in addresses if (why := address_class(ip, local_set))), None)
        operator_hint = (
            f"only the operator can allow it, by naming exactly {shown} in ARCS_SETUP_NETWORK_ALLOW"
        )
        entries = self.entries_for(host, port)
        if not entries:
            if bad is not None:
                return Verdict(
                    False, f"{shown} is not on the allow-list; {bad[0]} is {bad[1]}", operator_hint
                )
            return Verdict(
                False,
                f"{shown} is not on the allow-list",
                f"allow it with `setup_network: {{allow: [{shown}]}}` in .arcs.yml or ARCS_SETUP_NETWORK_ALLOW",
            )
        if not addresses:
            return Verdict(False, f"{host} has no address")
        if bad is not None and not any(entry.trusted and entry.exact for entry in entries):
            where = f"{host} is" if host == str(bad[0]) else f"{host} resolves to {bad[0]},"
            return Verdict(False, f"{where} {bad[1]}", operator_hint)
        return Verdict(True, f"allow-listed ({', '.join(str(e) for e in entries)})")


# --------------------------------------------------------------------------- the sandbox side


def proxy_env(port: int = RELAY_PORT) -> dict[str, str]:
    """The setup step's proxy variables (pip, npm, yarn, cargo, go, git, curl, the JVM)."""
    url = f"http://127.0.0.1:{port}"
    env = {
        name: url
        for name in (
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "PIP_PROXY",
            "npm_config_proxy",
            "npm_config_https_proxy",
            "YARN_HTTP_PROXY",
            "YARN_HTTPS_PROXY",
            "CARGO_HTTP_PROXY",
        )
    }
    # Nothing bypasses the proxy: the sandbox's own loopback holds only the relay.
    env.update({"NO_PROXY": "", "no_proxy": ""})
    props = " ".join(
        f"-D{scheme}.proxyHost=127.0.0.1 -D{scheme}.proxyPort={port}" for scheme in ("http", "https")
    )
    env["JAVA_TOOL_OPTIONS"] = props
    return env


def with_proxy_env(env: Mapping[str, str], port: int = RELAY_PORT) -> dict[str, str]:
    """``env`` with the proxy variables on top (a repository's own proxy settings cannot route around it)."""
    return {**env, **proxy_env(port)}


def maven_settings(port: int = RELAY_PORT) -> bytes:
    """``~/.m2/settings.xml`` naming the relay as Maven's proxy (Maven ignores the variables)."""
    proxies = "".join(
        f"<proxy><id>arcs-{scheme}</id><active>true</active><protocol>{scheme}</protocol>"
        f"<host>127.0.0.1</host><port>{port}</port></proxy>"
        for scheme in ("http", "https")
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<settings><proxies>{proxies}</proxies></settings>\n'.encode()


def relay_command(command: str, *, python: str, port: int = RELAY_PORT) -> str:
    """``command`` preceded by starting the relay (which detaches once it listens)."""
    script = f"{RELAY_DIR}/{RELAY_SCRIPT_NAME}"
    sock = f"{RELAY_DIR}/{RELAY_SOCKET_NAME}"
    message = "arcs: the setup network relay could not start (see above), so setup did not run"
    return (
        f"{shlex.quote(python)} {script} {sock} {port} "
        f"|| {{ echo '{message}' >&2; exit {RELAY_FAILED_EXIT}; }}\n{command}"
    )
