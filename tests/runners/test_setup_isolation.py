"""The setup phase, attacked from inside the real sandbox: the bot's own services stay out of reach.

A repository's ``setup:`` step (or the ``setup.py`` a ``pip install -e .`` runs) is untrusted. These
tests run probes as that step in :class:`LocalSandbox` with ``network=True``, exactly as
:func:`runners.execute.run_in_workspace` runs setup, and check from the host that

* 127.0.0.1 on the Redis, PostgreSQL and RabbitMQ ports, a listener of the test on the host's
  loopback and one on the host's non-loopback address, and 169.254.169.254:80 are unreachable;
* asking the proxy to ``CONNECT 127.0.0.1:6379`` is answered 403 by the setup network policy;
* ``pip install`` from a package index the test serves on the host's loopback succeeds when the
  operator allow-lists that exact ``127.0.0.1:<port>``, and fails when nobody does or when only the
  repository's ``.arcs.yml`` does.

The listeners the test starts itself make every "refused" meaningful: the host reaches them (checked
first), and so does a setup step in the unsafe ``host`` mode (the behaviour before this policy).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import ipaddress
import json
import shutil
import socket
import sys
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runners.commands import ResolvedCommand
from runners.egress import EgressPolicy, host_addresses
from runners.execute import run_tests
from runners.sandbox import LocalSandbox

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
]

BOT_SERVICES = (("127.0.0.1", 6379), ("127.0.0.1", 5432), ("127.0.0.1", 5672))
METADATA = ("169.254.169.254", 80)

PROBE = r"""
import json, socket, sys
targets = json.loads(sys.argv[1])
out = {}
for host, port in targets:
    try:
        socket.create_connection((host, port), timeout=3).close()
        out[f"{host}:{port}"] = "open"
    except OSError as exc:
        out[f"{host}:{port}"] = type(exc).__name__
try:
    tunnel = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    tunnel.sendall(b"CONNECT 127.0.0.1:6379 HTTP/1.1\r\nHost: 127.0.0.1:6379\r\n\r\n")
    out["proxy"] = tunnel.recv(4096).decode("latin-1").split("\r\n")[0]
except OSError as exc:
    out["proxy"] = "no proxy: " + type(exc).__name__
print(json.dumps(out))
"""


@dataclass
class Targets:
    """What the probes aim at: the bot's services plus listeners the test controls."""

    loopback: tuple[str, int]
    external: tuple[str, int]
    all: list[tuple[str, int]]


def outbound_ipv4() -> str:
    """The host's non-loopback IPv4 address (the route's source; no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
        except OSError:
            address = ""
    if address and not ipaddress.ip_address(address).is_loopback:
        return str(address)
    others = [a for a in host_addresses() if a.version == 4 and not a.is_loopback]
    if not others:
        pytest.skip("the host has no non-loopback IPv4 address")
    return str(others[0])


def listener(host: str) -> socket.socket:
    server = socket.create_server((host, 0))
    threading.Thread(target=_accept_forever, args=(server,), daemon=True).start()
    return server


def _accept_forever(server: socket.socket) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        conn.close()


@pytest.fixture(scope="module")
def targets() -> Iterator[Targets]:
    external_host = outbound_ipv4()
    inside = listener("127.0.0.1")
    everywhere = listener("0.0.0.0")  # like a service bound on all interfaces
    loopback = ("127.0.0.1", inside.getsockname()[1])
    external = (external_host, everywhere.getsockname()[1])
    for host, port in (loopback, external):
        socket.create_connection((host, port), timeout=3).close()  # the host itself reaches both
    yield Targets(loopback, external, [*BOT_SERVICES, loopback, external, METADATA])
    inside.close()
    everywhere.close()


def probe_setup(box: LocalSandbox, ws: Path, targets: Targets) -> dict[str, str]:
    (ws / "probe.py").write_text(PROBE, encoding="utf-8")
    argument = json.dumps(targets.all).replace("'", "'\\''")
    result = box.run(ws, f"python3 probe.py '{argument}'", network=True, timeout_s=120)
    assert result.ok, result.stderr
    found: dict[str, str] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


# --------------------------------------------------------------------------- the probes


def test_setup_cannot_reach_the_host_services_loopback_or_metadata(ws: Path, targets: Targets) -> None:
    found = probe_setup(LocalSandbox(), ws, targets)
    for host, port in targets.all:
        assert found[f"{host}:{port}"] != "open", f"setup reached {host}:{port}"
    assert found["proxy"].startswith(
        "HTTP/1.1 403 arcs: egress to 127.0.0.1:6379 refused by the setup network policy"
    ), found["proxy"]


def test_setup_in_userns_mode_is_cut_off_too(ws: Path, targets: Targets) -> None:
    box = LocalSandbox(privilege="userns")
    found = probe_setup(box, ws, targets)
    assert all(found[f"{h}:{p}"] != "open" for h, p in targets.all), found
    assert found["proxy"].startswith("HTTP/1.1 403 arcs: egress to 127.0.0.1:6379 refused"), found["proxy"]


def test_the_host_mode_escape_hatch_reaches_everything(ws: Path, targets: Targets) -> None:
    # What setup could do before this policy, and still can with ARCS_SETUP_NETWORK=host: the
    # probes work, so the refusals above are the policy's doing.
    found = probe_setup(LocalSandbox(setup_network=EgressPolicy(mode="host")), ws, targets)
    assert found[f"{targets.loopback[0]}:{targets.loopback[1]}"] == "open"
    assert found[f"{targets.external[0]}:{targets.external[1]}"] == "open"
    assert found["proxy"].startswith("no proxy")


def test_mode_none_has_no_way_out(ws: Path, targets: Targets) -> None:
    found = probe_setup(LocalSandbox(setup_network=EgressPolicy(mode="none")), ws, targets)
    assert all(found[f"{h}:{p}"] != "open" for h, p in targets.all), found
    assert found["proxy"].startswith("no proxy")


def test_the_test_phase_has_no_proxy_either(ws: Path, targets: Targets) -> None:
    (ws / "probe.py").write_text(PROBE, encoding="utf-8")
    argument = json.dumps(targets.all)
    result = LocalSandbox().run(ws, f"python3 probe.py '{argument}'", timeout_s=120)
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert all(found[f"{h}:{p}"] != "open" for h, p in targets.all), found
    assert found["proxy"].startswith("no proxy")


def test_setup_through_run_tests_reports_the_refusal(tmp_path: Path, targets: Targets) -> None:
    # The path every repair takes: run_tests -> run_in_workspace -> runner.run(setup, network=True).
    repo = tmp_path / "repo"
    repo.mkdir()
    host, port = targets.loopback
    setup = (
        f"python3 -c \"import urllib.request; urllib.request.urlopen('http://{host}:{port}/', timeout=10)\""
    )
    resolved = ResolvedCommand(command="true", source="config", setup=setup)
    run = run_tests(LocalSandbox(), repo, resolved, timeout_s=120)
    (error,) = run.errors
    assert error.id == "<setup>"
    assert (
        f"arcs: setup network refused GET {host}:{port}: {host}:{port} is not on the allow-list"
        in error.message
    )


# --------------------------------------------------------------------------- an allow-listed install


def build_wheel(index: Path) -> None:
    """A tiny pure-Python wheel ``arcsprobe 1.0`` under ``index/simple/arcsprobe/`` (PEP 503 layout)."""
    folder = index / "simple" / "arcsprobe"
    folder.mkdir(parents=True)
    name = "arcsprobe-1.0-py3-none-any.whl"
    files = {
        "arcsprobe/__init__.py": b"VALUE = 42\n",
        "arcsprobe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: arcsprobe\nVersion: 1.0\n",
        "arcsprobe-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: arcs-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }

    def digest(body: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()

    record = "".join(f"{path},{digest(body)},{len(body)}\n" for path, body in files.items())
    with zipfile.ZipFile(folder / name, "w") as wheel:
        for path, body in files.items():
            wheel.writestr(path, body)
        wheel.writestr("arcsprobe-1.0.dist-info/RECORD", record + "arcsprobe-1.0.dist-info/RECORD,,\n")
    (folder / "index.html").write_text(f'<html><body><a href="{name}">{name}</a></body></html>\n')


@pytest.fixture(scope="module")
def index_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root = tmp_path_factory.mktemp("index")
    build_wheel(root)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def pip_install(box: LocalSandbox, ws: Path, port: int) -> tuple[bool, str]:
    command = (
        f"python3 -m pip install --no-cache-dir --disable-pip-version-check --retries 0 --timeout 20 "
        f"--target ./deps --index-url http://127.0.0.1:{port}/simple/ arcsprobe "
        "&& python3 -c 'import sys; sys.path.insert(0, \"deps\"); import arcsprobe; print(arcsprobe.VALUE)'"
    )
    result = box.run(ws, command, network=True, timeout_s=180)
    return result.ok and result.stdout.strip().endswith("42"), result.stdout + result.stderr


@pytest.fixture(scope="module")
def has_pip() -> None:
    box = LocalSandbox()
    python = box.relay_python()
    if python is None or not Path(python).with_name("pip3").exists():
        pytest.skip("no pip next to the sandbox's python3")


@pytest.mark.usefixtures("has_pip")
def test_install_from_an_operator_allow_listed_local_index_succeeds(ws: Path, index_port: int) -> None:
    box = LocalSandbox(setup_network=EgressPolicy.build(allow=[f"127.0.0.1:{index_port}"]))
    ok, output = pip_install(box, ws, index_port)
    assert ok, output


@pytest.mark.usefixtures("has_pip")
def test_install_from_a_local_index_fails_without_the_allow_list(ws: Path, index_port: int) -> None:
    ok, output = pip_install(LocalSandbox(), ws, index_port)
    assert not ok
    assert f"arcs: setup network refused GET 127.0.0.1:{index_port}" in output
    assert not (ws / "deps" / "arcsprobe").exists()


@pytest.mark.usefixtures("has_pip")
def test_a_repository_cannot_allow_list_a_loopback_index(ws: Path, index_port: int) -> None:
    # `.arcs.yml` `setup_network: {allow: ["127.0.0.1:PORT"]}` comes from the pull request: it
    # must not open the host's loopback (the bot's Redis is one port away).
    policy = EgressPolicy.build(repo_allow=[f"127.0.0.1:{index_port}"])
    ok, output = pip_install(LocalSandbox(setup_network=policy), ws, index_port)
    assert not ok
    assert "127.0.0.1 is loopback" in output and "only the operator can allow it" in output


def test_without_python_setup_runs_offline_and_says_so(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    box = LocalSandbox()
    monkeypatch.setattr(box, "relay_python", lambda: None)
    result = box.run(ws, "echo setup ran", network=True, timeout_s=60)
    assert result.ok and result.stdout == "setup ran\n"
    assert "no python3 in the sandbox for the setup network relay" in result.stderr


def test_relay_that_cannot_start_fails_setup_loudly(ws: Path) -> None:
    box = LocalSandbox()
    box.relay_python = lambda: "/nonexistent/python3"  # type: ignore[method-assign]
    result = box.run(ws, "echo should not run", network=True, timeout_s=60)
    assert result.exit_code == 125 and "should not run" not in result.stdout
    assert "the setup network relay could not start" in result.stderr


def test_the_relay_runs_on_arcs_own_python_not_the_repositorys(tmp_path: Path) -> None:
    # A repository's .venv (a toolchain the sandbox exposes) is the repository's code: the relay
    # prefers the interpreter running ARCS, then the system's.
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").write_text("#!/bin/sh\nexit 0\n")
    (venv / "bin" / "python3").chmod(0o755)
    python = LocalSandbox(toolchain_paths=[venv]).relay_python()
    assert python == str(Path(sys.base_prefix) / "bin" / "python3")
    assert LocalSandbox(toolchain_paths=[venv], bind_python=False).relay_python() in (
        "/usr/bin/python3",
        "/usr/local/bin/python3",
        str(venv / "bin" / "python3"),
    )
