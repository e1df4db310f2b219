"""The setup network policy (runners.egress) and its proxy (runners.egress_proxy), without a sandbox.

The proxy runs on a Unix socket as in production; names resolve through a scripted resolver so
that "a registry that resolves to 127.0.0.1" needs no DNS, and the upstream servers are local.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runners.egress import (
    DEFAULT_REGISTRIES,
    RELAY_PORT,
    AllowEntry,
    EgressPolicy,
    IPAddress,
    PolicyError,
    address_class,
    host_addresses,
    parse_allow_entry,
    proxy_env,
    relay_command,
)
from runners.egress_proxy import BadRequest, EgressProxy, ProxyLimits, parse_request
from runners.egress_session import EgressSession, NetworkPlan, network_plan
from runners.limits import Supervised

# --------------------------------------------------------------------------- entries and names


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("pypi.org", "pypi.org", None),
        ("PyPI.org.", "pypi.org", None),
        ("npm.example.com:8443", "npm.example.com", 8443),
        ("127.0.0.1:8080", "127.0.0.1", 8080),
        ("[::1]:8080", "::1", 8080),
        ("::1", "::1", None),
        ("*.pythonhosted.org", "*.pythonhosted.org", None),
        ("*.example.org:8443", "*.example.org", 8443),
    ],
)
def test_allow_entries_parse(text: str, host: str, port: int | None) -> None:
    entry = parse_allow_entry(text, trusted=False)
    assert (entry.host, entry.port) == (host, port)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "*",
        "*.org",
        "http://pypi.org",
        "pypi.org/simple",
        "user@pypi.org",
        "pypi.org:0",
        "pypi.org:65536",
        "pypi.org:http",
        "bad_name.org",
        "-x.org",
        "a b",
        "127.1",
        "[::1",
        "*.10.0.0.1",
    ],
)
def test_bad_allow_entries_are_refused(text: str) -> None:
    with pytest.raises(PolicyError):
        parse_allow_entry(text, trusted=True)


def test_entries_match_names_and_ports() -> None:
    plain = parse_allow_entry("pypi.org", trusted=False)
    assert plain.matches("pypi.org", 443) and plain.matches("pypi.org", 80)
    assert not plain.matches("pypi.org", 8443)
    assert not plain.matches("evilpypi.org", 443) and not plain.matches("pypi.org.evil.com", 443)
    wild = parse_allow_entry("*.pythonhosted.org", trusted=False)
    assert wild.matches("files.pythonhosted.org", 443)
    assert not wild.matches("pythonhosted.org", 443) and not wild.matches("xpythonhosted.org", 443)
    exact = parse_allow_entry("127.0.0.1:8080", trusted=True)
    assert exact.exact and exact.matches("127.0.0.1", 8080) and not exact.matches("127.0.0.1", 8081)
    assert not plain.exact and not parse_allow_entry("*.a.org:1", trusted=True).exact
    assert str(parse_allow_entry("[::1]:80", trusted=True)) == "[::1]:80"


# --------------------------------------------------------------------------- addresses


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("100.64.0.1", "shared"),
        ("100.127.255.254", "shared"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("192.0.2.10", "private"),  # documentation range: never a registry
        ("240.0.0.1", ""),  # reserved (Python counts it private too)
    ],
)
def test_non_public_addresses_are_classified(address: str, why: str) -> None:
    found = address_class(ipaddress.ip_address(address))
    assert found is not None and why in found


@pytest.mark.parametrize("address", ["151.101.0.223", "8.8.8.8", "2606:4700:4700::1111", "172.32.0.1"])
def test_public_addresses_pass(address: str) -> None:
    assert address_class(ipaddress.ip_address(address)) is None


def test_a_public_address_of_this_host_is_refused() -> None:
    mine = ipaddress.ip_address("203.0.113.7")  # pretend: the host's public interface
    public = ipaddress.ip_address("151.101.0.223")
    assert address_class(public, {mine}) is None
    assert address_class(ipaddress.ip_address("8.8.4.4"), {ipaddress.ip_address("8.8.4.4")}) == (
        "an address of this host"
    )


def test_host_addresses_include_loopback_and_the_outbound_interface() -> None:
    found = host_addresses()
    assert ipaddress.ip_address("127.0.0.1") in found
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route
        except OSError:
            pytest.skip("no IPv4 route on this machine")
        outbound = ipaddress.ip_address(probe.getsockname()[0])
    assert outbound in found


# --------------------------------------------------------------------------- the policy

PUBLIC = ipaddress.ip_address("151.101.0.223")
LOOPBACK = ipaddress.ip_address("127.0.0.1")
PRIVATE = ipaddress.ip_address("10.0.0.5")


def test_default_policy_allows_the_registries_only() -> None:
    policy = EgressPolicy()
    assert policy.mode == "registries"
    for host in (
        "pypi.org",
        "files.pythonhosted.org",
        "registry.npmjs.org",
        "proxy.golang.org",
        "repo1.maven.org",
    ):
        assert host in DEFAULT_REGISTRIES
        assert policy.check(host, 443, [PUBLIC]).allowed
    refused = policy.check("evil.example.com", 443, [PUBLIC])
    assert not refused.allowed and "not on the allow-list" in refused.reason
    assert ".arcs.yml" in refused.hint and "ARCS_SETUP_NETWORK_ALLOW" in refused.hint
    assert not policy.check("pypi.org", 22, [PUBLIC]).allowed


def test_a_registry_name_that_resolves_to_a_private_address_is_refused() -> None:
    policy = EgressPolicy()
    for bad in (LOOPBACK, PRIVATE, ipaddress.ip_address("169.254.169.254")):
        verdict = policy.check("pypi.org", 443, [bad])
        assert not verdict.allowed and f"resolves to {bad}" in verdict.reason
        assert "only the operator" in verdict.hint
    # ANY bad address refuses, wherever it is in the answer (a rebinding answer mixes both).
    assert not policy.check("pypi.org", 443, [PUBLIC, LOOPBACK]).allowed
    assert not policy.check("pypi.org", 443, []).allowed


def test_only_an_operators_exact_entry_unlocks_a_private_address() -> None:
    operator = EgressPolicy.build(allow=["mirror.internal:8080", "wide.internal"])
    assert operator.check("mirror.internal", 8080, [PRIVATE]).allowed
    assert not operator.check("wide.internal", 443, [PRIVATE]).allowed  # no port: not exact
    repo = EgressPolicy.build(repo_allow=["127.0.0.1:6379", "mirror.internal:8080"])
    assert not repo.check("127.0.0.1", 6379, [LOOPBACK]).allowed
    assert not repo.check("mirror.internal", 8080, [PRIVATE]).allowed
    assert repo.check("mirror.internal", 8080, [PUBLIC]).allowed
    wild = EgressPolicy.build(allow=["*.corp.internal:8080"])
    assert not wild.check("a.corp.internal", 8080, [PRIVATE]).allowed


def test_other_modes_and_bad_modes() -> None:
    assert not EgressPolicy(mode="none").check("pypi.org", 443, [PUBLIC]).allowed
    assert EgressPolicy(mode="host").check("127.0.0.1", 6379, [LOOPBACK]).allowed
    with pytest.raises(PolicyError, match="mode"):
        EgressPolicy.build("everything")
    with pytest.raises(PolicyError, match="http://x"):
        EgressPolicy.build(allow=["http://x"])
    policy = EgressPolicy().with_repo_allow(["npm.example.com"])
    assert policy.check("npm.example.com", 443, [PUBLIC]).allowed
    assert AllowEntry("npm.example.com", None, False) in policy.allow


def test_sandbox_side_environment_and_command() -> None:
    env = proxy_env()
    url = f"http://127.0.0.1:{RELAY_PORT}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "https_proxy", "npm_config_https_proxy", "PIP_PROXY"):
        assert env[name] == url
    assert env["NO_PROXY"] == "" and "-Dhttps.proxyPort=3128" in env["JAVA_TOOL_OPTIONS"]
    command = relay_command("pip install -e .", python="/opt/py 3/bin/python3")
    first, second = command.split("\n")
    assert first.startswith(
        "'/opt/py 3/bin/python3' /run/arcs-egress/relay.py /run/arcs-egress/proxy.sock 3128"
    )
    assert "exit 125" in first and second == "pip install -e ."


# --------------------------------------------------------------------------- parsing requests


def test_parse_connect_and_absolute_forms() -> None:
    connect = parse_request(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n")
    assert (connect.method, connect.host, connect.port, connect.tunnel) == ("CONNECT", "pypi.org", 443, True)
    v6 = parse_request(b"CONNECT [::1]:6379 HTTP/1.1\r\n\r\n")
    assert (v6.host, v6.port) == ("::1", 6379)
    get = parse_request(b"GET http://Index.Test:8080/simple/x/?a=1#frag HTTP/1.1\r\nAccept: */*\r\n\r\n")
    assert (get.host, get.port, get.target, get.tunnel) == ("index.test", 8080, "/simple/x/?a=1", False)
    assert parse_request(b"HEAD http://index.test HTTP/1.0\r\n\r\n").target == "/"


@pytest.mark.parametrize(
    "head",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /simple/ HTTP/1.1\r\n\r\n",
        b"GET https://pypi.org/simple/ HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org:99999 HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org:443 HTTP/2.0\r\n\r\n",
        b"CONNECT pypi.org:443  HTTP/1.1\r\n\r\n",
        b"get http://pypi.org/ HTTP/1.1\r\n\r\n",
        b"GET http://user:pw@pypi.org/ HTTP/1.1\r\n\r\n",
        b"GET http://pyp\xc3\xaf.org/ HTTP/1.1\r\n\r\n",
        b"GET http://pypi.org/ HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET http://pypi.org/ HTTP/1.1\r\n folded: header\r\n\r\n",
        b"CONNECT bad_host:443 HTTP/1.1\r\n\r\n",
    ],
)
def test_malformed_requests_are_bad_requests(head: bytes) -> None:
    with pytest.raises(BadRequest):
        parse_request(head)


# --------------------------------------------------------------------------- the proxy, live


class Resolver:
    """Scripted name -> addresses, counting lookups."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append(host)
        if host not in self.table:
            raise OSError(f"no such host {host}")
        return [ipaddress.ip_address(a) for a in self.table[host]]


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # Unix socket paths are limited to ~100 bytes: pytest's tmp_path can be longer.
    folder = Path(tempfile.mkdtemp(prefix="arcs-eg-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def echo_server() -> Iterator[int]:
    """A TCP echo server on 127.0.0.1 (a stand-in for an upstream)."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return

            def echo(c: socket.socket = conn) -> None:
                with c:
                    while data := c.recv(65536):
                        c.sendall(data)

            threading.Thread(target=echo, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


@pytest.fixture
def http_server() -> Iterator[tuple[int, list[bytes]]]:
    """A one-answer-per-connection HTTP server on 127.0.0.1 recording each request head."""
    server = socket.create_server(("127.0.0.1", 0))
    heads: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                    data += chunk
                heads.append(data.split(b"\r\n\r\n")[0])
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], heads
    server.close()


ProxyFactory = Callable[..., EgressProxy]


@pytest.fixture
def start_proxy(short_dir: Path) -> Iterator[ProxyFactory]:
    started: list[EgressProxy] = []

    def start(policy: EgressPolicy, resolver: Resolver | None = None, **limits: float) -> EgressProxy:
        proxy = EgressProxy(
            policy,
            short_dir / f"p{len(started)}.sock",
            limits=ProxyLimits(**limits),  # type: ignore[arg-type]
            resolver=resolver or Resolver({}),
            local_addresses=(),
        ).start()
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.close()


def talk(proxy: EgressProxy, data: bytes, *, timeout: float = 20.0) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(str(proxy.socket_path))
    if data:
        sock.sendall(data)
    return sock


def read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def read_head(sock: socket.socket) -> bytes:
    out = b""
    while b"\r\n\r\n" not in out:
        chunk = sock.recv(1)
        if not chunk:
            break
        out += chunk
    return out


def test_connect_tunnels_to_an_operator_allowed_local_port(
    start_proxy: ProxyFactory, echo_server: int
) -> None:
    proxy = start_proxy(EgressPolicy.build(allow=[f"127.0.0.1:{echo_server}"]))
    with talk(proxy, f"CONNECT 127.0.0.1:{echo_server} HTTP/1.1\r\nHost: x\r\n\r\n".encode()) as sock:
        assert read_head(sock).startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"ping through the tunnel")
        assert sock.recv(100) == b"ping through the tunnel"
    (event,) = proxy.events
    assert event.allowed and event.address == "127.0.0.1" and event.port == echo_server


def test_connect_to_the_bots_redis_is_refused_with_a_clear_403(start_proxy: ProxyFactory) -> None:
    proxy = start_proxy(EgressPolicy())
    with talk(proxy, b"CONNECT 127.0.0.1:6379 HTTP/1.1\r\n\r\n") as sock:
        answer = read_all(sock).decode()
    status = answer.split("\r\n")[0]
    assert status.startswith(
        "HTTP/1.1 403 arcs: egress to 127.0.0.1:6379 refused by the setup network policy"
    )
    assert "loopback" in status and "ARCS_SETUP_NETWORK_ALLOW" in status
    assert answer.endswith("ARCS_SETUP_NETWORK_ALLOW\n")
    (event,) = proxy.refusals
    assert (event.host, event.port, event.allowed) == ("127.0.0.1", 6379, False)
    assert event.note().startswith("arcs: setup network refused CONNECT 127.0.0.1:6379: ")


def test_an_allow_listed_name_resolving_inside_is_refused_and_resolved_once(
    start_proxy: ProxyFactory,
) -> None:
    resolver = Resolver({"registry.npmjs.org": ["104.16.0.35", "127.0.0.1"], "evil.example": ["1.2.3.4"]})
    proxy = start_proxy(EgressPolicy(), resolver)
    with talk(proxy, b"CONNECT registry.npmjs.org:443 HTTP/1.1\r\n\r\n") as sock:
        assert b"resolves to 127.0.0.1, loopback" in read_all(sock)
    # A name that is not on the list is never looked up (a lookup leaks it to a DNS server).
    with talk(proxy, b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n") as sock:
        assert read_all(sock).startswith(b"HTTP/1.1 403 ")
    assert resolver.calls == ["registry.npmjs.org"]


def test_the_proxy_connects_to_the_address_it_checked(start_proxy: ProxyFactory, echo_server: int) -> None:
    # An exact operator entry for a local index name; the resolver would answer differently the
    # second time (DNS rebinding): the proxy asks once and connects to what it checked.
    answers = iter([["127.0.0.1"], ["10.9.9.9"]])

    class Rebinding(Resolver):
        async def __call__(self, host: str, port: int) -> list[IPAddress]:
            self.calls.append(host)
            return [ipaddress.ip_address(a) for a in next(answers)]

    resolver = Rebinding({})
    proxy = start_proxy(EgressPolicy.build(allow=[f"index.test:{echo_server}"]), resolver)
    with talk(proxy, f"CONNECT index.test:{echo_server} HTTP/1.1\r\n\r\n".encode()) as sock:
        assert read_head(sock).startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"x")
        assert sock.recv(10) == b"x"
    assert resolver.calls == ["index.test"]
    assert proxy.events[0].address == "127.0.0.1"


def test_absolute_uri_requests_are_forwarded_in_origin_form(
    start_proxy: ProxyFactory, http_server: tuple[int, list[bytes]]
) -> None:
    port, heads = http_server
    proxy = start_proxy(EgressPolicy.build(allow=[f"127.0.0.1:{port}"]))
    request = (
        f"GET http://127.0.0.1:{port}/simple/pkg/?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic c2VjcmV0\r\n"
        "Connection: keep-alive, X-Private\r\nX-Private: 1\r\nAccept: */*\r\n\r\n"
    )
    with talk(proxy, request.encode()) as sock:
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"hello")
    (head,) = heads
    lines = head.decode().split("\r\n")
    assert lines[0] == "GET /simple/pkg/?q=1 HTTP/1.1"
    assert f"Host: 127.0.0.1:{port}" in lines and "Accept: */*" in lines and "Connection: close" in lines
    assert not any(line.lower().startswith(("proxy-", "x-private", "connection: keep")) for line in lines)


def test_plain_http_to_a_refused_host_gets_403(start_proxy: ProxyFactory) -> None:
    proxy = start_proxy(EgressPolicy())
    with talk(proxy, b"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n") as sock:
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 403 arcs: egress to 169.254.169.254:80 refused")
    assert b"link-local" in answer


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
        b"GET https://pypi.org/ HTTP/1.1\r\n\r\n",
        b"\xff\xfe\r\n\r\n",
    ],
)
def test_malformed_requests_get_400(start_proxy: ProxyFactory, request_bytes: bytes) -> None:
    proxy = start_proxy(EgressPolicy())
    with talk(proxy, request_bytes) as sock:
        assert read_all(sock).startswith(b"HTTP/1.1 400 Bad Request")
    assert proxy.events == []


def test_a_huge_request_head_gets_431(start_proxy: ProxyFactory) -> None:
    proxy = start_proxy(EgressPolicy(), max_head_bytes=1024)
    head = b"CONNECT pypi.org:443 HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 4000 + b"\r\n\r\n"
    with talk(proxy, head) as sock:
        assert read_all(sock).startswith(b"HTTP/1.1 431 ")


def test_a_slow_request_head_gets_408(start_proxy: ProxyFactory) -> None:
    proxy = start_proxy(EgressPolicy(), head_timeout_s=0.3)
    with talk(proxy, b"CONNECT pypi.org:443 HTTP/1.1\r\n") as sock:
        assert read_all(sock).startswith(b"HTTP/1.1 408 ")


def test_an_idle_tunnel_is_closed(start_proxy: ProxyFactory, echo_server: int) -> None:
    proxy = start_proxy(EgressPolicy.build(allow=[f"127.0.0.1:{echo_server}"]), idle_timeout_s=0.3)
    with talk(proxy, f"CONNECT 127.0.0.1:{echo_server} HTTP/1.1\r\n\r\n".encode()) as sock:
        assert read_head(sock).startswith(b"HTTP/1.1 200 ")
        assert sock.recv(10) == b""  # closed by the proxy (the socket's own timeout is 20 s)


def test_connections_beyond_the_limit_get_503(start_proxy: ProxyFactory, echo_server: int) -> None:
    proxy = start_proxy(EgressPolicy.build(allow=[f"127.0.0.1:{echo_server}"]), max_connections=1)
    with talk(proxy, f"CONNECT 127.0.0.1:{echo_server} HTTP/1.1\r\n\r\n".encode()) as first:
        assert read_head(first).startswith(b"HTTP/1.1 200 ")
        with talk(proxy, b"") as second:  # answered at once, before it says anything
            assert read_all(second).startswith(b"HTTP/1.1 503 ")


def test_an_unresolvable_allowed_name_gets_502(start_proxy: ProxyFactory) -> None:
    proxy = start_proxy(EgressPolicy(), Resolver({}))
    with talk(proxy, b"CONNECT pypi.org:443 HTTP/1.1\r\n\r\n") as sock:
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 502 ") and b"cannot resolve pypi.org" in answer


# --------------------------------------------------------------------------- sessions and plans


def test_session_folder_is_bindable_and_removed(short_dir: Path) -> None:
    with EgressSession(EgressPolicy(), root=short_dir) as session:
        folder = session.dir
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755
        assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
        assert stat.S_ISSOCK((folder / "proxy.sock").stat().st_mode)
        assert stat.S_IMODE((folder / "proxy.sock").stat().st_mode) == 0o666
        assert (folder / "relay.py").read_text().startswith('"""The relay that runs INSIDE')
        assert b"<proxy>" in (folder / "maven-settings.xml").read_bytes()
        assert folder.parent.name.startswith("arcs-ws-")  # swept if this process is killed
    assert not folder.parent.exists()


def test_network_plans_per_mode(short_dir: Path) -> None:
    with network_plan(EgressPolicy(), False, "pytest", {"A": "1"}, python="python3") as plan:
        assert (plan.command, plan.share_net, plan.egress) == ("pytest", False, None)
    with network_plan(EgressPolicy(mode="none"), True, "pip install .", None, python="python3") as plan:
        assert (plan.command, plan.share_net, plan.egress) == ("pip install .", False, None)
    with network_plan(EgressPolicy(mode="host"), True, "pip install .", None, python="python3") as plan:
        assert plan.share_net and plan.egress is None
    with network_plan(
        EgressPolicy(), True, "pip install .", {"A": "1"}, python="python3", root=short_dir
    ) as plan:
        assert not plan.share_net and plan.egress is not None and plan.egress.is_dir()
        assert plan.command.endswith("\npip install .") and plan.env is not None
        assert plan.env["A"] == "1" and plan.env["HTTPS_PROXY"] == "http://127.0.0.1:3128"
    with network_plan(EgressPolicy(), True, "pip install .", None, python=None) as plan:
        assert plan.command == "pip install ." and plan.egress is None and not plan.share_net
        assert "no python3" in plan.notes[0]


def test_plan_notes_end_the_stderr() -> None:
    done = Supervised(
        exit_code=1, stdout="", stderr="pip: error", duration_s=1.0, killed_by=None, truncated=False
    )
    plan = NetworkPlan("x", None, notes=["arcs: a", "arcs: a", *(f"arcs: n{i}" for i in range(10))])
    lines = plan.annotate(done).stderr.splitlines()
    assert lines[0] == "pip: error" and lines[1:3] == ["arcs: a", "arcs: n0"]
    assert len(lines) == 10 and lines[-1] == "arcs: ... and 3 more refused"
    assert NetworkPlan("x", None).annotate(done) is done
