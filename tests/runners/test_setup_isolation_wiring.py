"""The setup network policy from settings and ``.arcs.yml`` to the runners' command lines.

bubblewrap's argv and the Docker runner's ``docker run`` argv need no sandbox or engine: the
Docker runner is driven through a fake ``docker`` executable (as in test_sandbox_factory.py) that,
for the setup run, talks to the egress proxy through the folder mounted at /run/arcs-egress while
the run is in progress. No Docker engine exists on this machine, so nothing here starts a container.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings
from jobs.config import parse as parse_arcs_config
from jobs.config import parse_repo_config
from runners.docker import DockerOptions, DockerRunner
from runners.egress import RELAY_DIR, EgressPolicy
from runners.limits import Limits
from runners.sandbox import LocalSandbox, sandbox_env
from tests.runners.test_sandbox_factory import docker_calls, fake_docker, flag_values

# --------------------------------------------------------------------------- settings and .arcs.yml


def test_settings_default_to_registries_and_parse_the_allow_list() -> None:
    settings = load_settings({})
    assert (settings.setup_network, settings.setup_network_allow) == ("registries", ())
    settings = load_settings(
        {"ARCS_SETUP_NETWORK": "none", "ARCS_SETUP_NETWORK_ALLOW": "pypi.internal:8443, *.corp.example.com"}
    )
    assert settings.setup_network == "none"
    assert settings.setup_network_allow == ("pypi.internal:8443", "*.corp.example.com")
    for bad in ({"ARCS_SETUP_NETWORK": "open"}, {"ARCS_SETUP_NETWORK_ALLOW": "https://pypi.internal"}):
        with pytest.raises(ConfigError, match="ARCS_SETUP_NETWORK"):
            load_settings(bad)


def test_arcs_yml_setup_network_allow() -> None:
    cfg = parse_repo_config(
        "setup: npm ci\nsetup_network:\n  allow: [npm.example.com, '*.example.org:8443']\n"
    )
    assert cfg.setup_allow == ("npm.example.com", "*.example.org:8443")
    assert "setup_network" not in cfg.extra
    assert parse_repo_config("setup: npm ci\n").setup_allow == ()
    app = parse_arcs_config("setup: npm ci\nsetup_network: {allow: [npm.example.com]}\n")
    assert app.setup_allow == ("npm.example.com",) and app.repo_config().setup_allow == ("npm.example.com",)


@pytest.mark.parametrize(
    "text",
    [
        "setup_network: registries\n",
        "setup_network: {allow: npm.example.com}\n",
        "setup_network: {allow: [3]}\n",
        "setup_network: {allow: ['http://x']}\n",
        "setup_network: {mode: host}\n",
    ],
)
def test_bad_setup_network_names_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match="`setup_network`"):
        parse_repo_config(text)
    with pytest.raises(ConfigError, match="setup_network") as caught:
        parse_arcs_config(text)
    assert getattr(caught.value, "key", None) == "setup_network"


def test_make_runner_joins_settings_and_the_repository(tmp_path: Path) -> None:
    from jobs.fix import _make_runner

    settings = load_settings(
        {
            "ARCS_HOME": str(tmp_path / "home"),
            "ARCS_EMBEDDER": "hash",
            "ARCS_SETUP_NETWORK_ALLOW": "127.0.0.1:3141",
        }
    )
    runner = _make_runner(settings, False, (), ("npm.example.com",))
    assert isinstance(runner, LocalSandbox)
    allow = {str(entry): entry.trusted for entry in runner.setup_network.allow}
    assert allow["127.0.0.1:3141"] is True and allow["npm.example.com"] is False and allow["pypi.org"] is True


def test_fix_passes_the_repositorys_allow_list_to_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jobs.fix

    seen: list[tuple[str, ...]] = []

    def fake_make_runner(
        settings: object, unsafe: bool, toolchains: object, setup_allow: tuple[str, ...] = ()
    ) -> None:
        seen.append(setup_allow)
        raise RuntimeError("stop here")

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".arcs.yml").write_text(
        "test: python -m pytest -q\nsetup_network: {allow: [npm.example.com]}\n", encoding="utf-8"
    )
    monkeypatch.setattr(jobs.fix, "_make_runner", fake_make_runner)
    settings = load_settings({"ARCS_HOME": str(tmp_path / "home"), "ARCS_EMBEDDER": "hash"})
    with pytest.raises(RuntimeError, match="stop here"):
        jobs.fix.fix(settings, jobs.fix.FixRequest(repo=repo, issue_text="x", tier="0"))
    assert seen == [("npm.example.com",)]


# --------------------------------------------------------------------------- bubblewrap argv


def bwrap_argv(box: LocalSandbox, *, network: bool, egress: Path | None) -> list[str]:
    return box.bwrap_argv(
        Path("/srv/ws"),
        "pip install -e .",
        mode="setpriv",
        uid=2_000_000_001,
        limits=Limits(timeout_s=5, memory_mb=256),
        network=network,
        env=sandbox_env(box.path, {}),
        data_fds={},
        etc_dir=Path("/stage/etc"),
        egress=egress,
    )


def pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, arg in enumerate(argv) if arg == flag]


def test_bwrap_argv_for_the_registries_mode() -> None:
    box = LocalSandbox(bwrap="/bin/true")
    box.setpriv = "/usr/bin/setpriv"
    argv = bwrap_argv(box, network=False, egress=Path("/srv/egress"))
    assert "--unshare-net" in argv and "--share-net" not in argv
    assert ("/srv/egress", RELAY_DIR) in pairs(argv, "--ro-bind")
    assert ("/srv/egress/maven-settings.xml", "/home/sandbox/.m2/settings.xml") in pairs(argv, "--ro-bind")
    assert not any(src == "/etc/resolv.conf" for src, _ in pairs(argv, "--ro-bind"))  # no DNS inside
    plain = bwrap_argv(box, network=False, egress=None)
    assert RELAY_DIR not in plain and "--unshare-net" in plain


def test_the_runner_passes_the_plan_to_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What LocalSandbox.run hands to _run for a setup step, per mode (no bwrap is started).
    calls: list[dict[str, object]] = []
    box = LocalSandbox(bwrap="/bin/true")
    box._mode = "setpriv"  # skip the probe

    def fake_run(workspace: Path, command: str, **kwargs: object) -> tuple[object, bool]:
        egress = kwargs["egress"]
        calls.append(
            {"command": command, **kwargs, "bound": egress is not None and Path(str(egress)).is_dir()}
        )
        from runners.limits import Supervised

        return Supervised(0, "", "", 0.1, None, False), True

    monkeypatch.setattr(box, "_run", fake_run)
    for mode in ("registries", "none", "host"):
        box.setup_network = EgressPolicy(mode=mode)  # type: ignore[arg-type]
        box.run(tmp_path, "pip install -e .", network=True, env={"CI": "1"})
    box.setup_network = EgressPolicy()
    box.run(tmp_path, "pytest", env={"CI": "1"})
    registries, none, host, tests = calls
    assert registries["network"] is False and registries["bound"] is True
    assert str(registries["command"]).endswith("\npip install -e .")
    env = registries["env"]
    assert isinstance(env, dict) and env["HTTPS_PROXY"] == "http://127.0.0.1:3128" and env["CI"] == "1"
    assert (none["network"], none["egress"], none["command"]) == (False, None, "pip install -e .")
    assert (host["network"], host["egress"]) == (True, None)
    assert (tests["network"], tests["egress"], tests["command"]) == (False, None, "pytest")


# --------------------------------------------------------------------------- docker

_PROBING_FAKE = """#!{python}
import json, os, socket, sys
argv = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(argv) + "\\n")
if argv[:1] == ["info"]:
    print("27.3.1")
    sys.exit(0)
mounts = [v for k, v in zip(argv, argv[1:]) if k == "--volume"]
egress = [m.split(":")[0] for m in mounts if m.split(":")[1] == "{relay_dir}"]
if egress:
    # What the relay inside the container would do: ask the proxy, through the mounted socket.
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(egress[0], "proxy.sock"))
    s.sendall(b"CONNECT 127.0.0.1:6379 HTTP/1.1\\r\\n\\r\\n")
    print(s.recv(4096).decode().split("\\r\\n")[0])
sys.exit(0)
"""


@pytest.fixture
def probing_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = bin_dir / "docker-calls.jsonl"
    script = bin_dir / "docker"
    script.write_text(_PROBING_FAKE.format(python=sys.executable, log=str(log), relay_dir=RELAY_DIR))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return script, log


def test_docker_setup_is_offline_behind_the_proxy(probing_docker: tuple[Path, Path], tmp_path: Path) -> None:
    script, log = probing_docker
    runner = DockerRunner(DockerOptions(image="arcs-runner:0.1.0"), docker=str(script))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    setup = runner.run(workspace, "pip install -e .", network=True, env={"CI": "1"}, timeout_s=60)
    tests = runner.run(workspace, "pytest -q", env={"CI": "1"}, timeout_s=60)
    (setup_run, test_run) = [call for call in docker_calls(log) if call[0] == "run"]
    assert flag_values(setup_run, "--network") == ["none"]
    mounts = flag_values(setup_run, "--volume")
    egress = [m for m in mounts if m.endswith(f":{RELAY_DIR}:ro")]
    assert len(egress) == 1
    assert any(m.endswith(":/home/sandbox/.m2/settings.xml:ro") for m in mounts)
    assert any(t.startswith("/home/sandbox/.m2:") for t in flag_values(setup_run, "--tmpfs"))
    env = dict(item.split("=", 1) for item in flag_values(setup_run, "--env"))
    assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://127.0.0.1:3128" and env["CI"] == "1"
    assert setup_run[-1].startswith(f"python3 {RELAY_DIR}/relay.py {RELAY_DIR}/proxy.sock 3128 ||")
    assert setup_run[-1].endswith("\npip install -e .")
    # The proxy was live during the run and refused the bot's Redis; the folder is gone afterwards.
    assert setup.stdout.startswith("HTTP/1.1 403 arcs: egress to 127.0.0.1:6379 refused")
    assert "arcs: setup network refused CONNECT 127.0.0.1:6379" in setup.stderr
    assert not Path(egress[0].split(":")[0]).exists()
    # The test phase: no network, no proxy.
    assert flag_values(test_run, "--network") == ["none"]
    assert not any(RELAY_DIR in m for m in flag_values(test_run, "--volume"))
    assert "HTTPS_PROXY" not in " ".join(flag_values(test_run, "--env"))
    assert test_run[-1] == "pytest -q" and tests.stdout == ""


@pytest.mark.parametrize(("mode", "network"), [("none", "none"), ("host", "bridge")])
def test_docker_setup_in_the_other_modes(
    mode: str, network: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    log = fake_docker(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    runner = DockerRunner(docker=str(bin_dir / "docker"), setup_network=EgressPolicy(mode=mode))  # type: ignore[arg-type]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runner.run(workspace, "pip install -e .", network=True, timeout_s=60)
    (run,) = [call for call in docker_calls(log) if call[0] == "run"]
    assert flag_values(run, "--network") == [network]
    assert not any(RELAY_DIR in m for m in flag_values(run, "--volume"))
    assert run[-1] == "pip install -e ."
    assert json.dumps(run).count("HTTPS_PROXY") == 0
