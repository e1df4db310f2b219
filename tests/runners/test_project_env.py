"""The repository's own environment, found and said in one line (runners.toolchains, #23).

Real layouts: virtual environments made with ``python -m venv``, a real editable install made by
pip, and the sandboxed test run that has to import the package under test from the workspace copy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from runners.commands import resolve_test_command
from runners.execute import run_tests
from runners.sandbox import LocalSandbox
from runners.toolchains import detect_environment, poetry_env_name, source_folders, toolchain_paths
from tests.conftest import MakeRepo, sandbox_works

OFFLINE = ("-q", "--no-build-isolation", "-e")
needs_sandbox = pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
VERSION = ".".join(map(str, sys.version_info[:3]))
OWN = "/nonexistent/arcs-own-venv"
"""ARCS's own prefix in these tests: never one of the environments made here."""


def _venv(path: Path, *args: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *args, str(path)], check=True)
    return path


def test_a_src_layout_is_put_on_pythonpath(make_repo: MakeRepo) -> None:
    repo = make_repo({"src/pkg/__init__.py": "", "tests/test_a.py": "def test_a():\n    pass\n"})
    assert source_folders(repo) == (("src",), "")
    resolved = resolve_test_command(repo, explicit="python -m pytest")
    assert resolved.pythonpath == ("src",)
    assert resolved.shell.startswith('export ARCS_PYTHONPATH="$PWD/src')
    # Not for a JavaScript command, and not when src is itself a package.
    assert resolve_test_command(repo, explicit="node --test").pythonpath == ()
    flat = make_repo({"src/__init__.py": "", "src/a.py": "", "test_a.py": ""})
    assert source_folders(flat) == ((), "")


def test_package_dir_and_compiled_sources(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "pyproject.toml": '[tool.setuptools.package-dir]\n"" = "lib"\n',
            "lib/pkg/__init__.py": "",
            "src/ext/__init__.py": "",
            "src/ext/_speed.pyx": "",
        }
    )
    folders, note = source_folders(repo)
    assert folders == ("lib",)
    assert "src/ has compiled sources" in note


def test_the_repositorys_venv_is_found_and_said_in_one_line(make_repo: MakeRepo) -> None:
    repo = make_repo({"src/pkg/__init__.py": "", "tests/test_a.py": ""})
    venv = _venv(repo / ".venv")
    for name in ("pytest-8.3.0.dist-info", "pluggy-1.5.0.dist-info"):
        next(venv.glob("lib/python3*/site-packages")).joinpath(name).mkdir()
    found = detect_environment(repo, [], own_prefix=OWN)
    assert found.env is not None and found.env.path == venv
    assert found.toolchains[-1] == venv  # leads PATH
    # (lib64 -> lib is not counted twice)
    assert found.line == f"environment: .venv (Python {VERSION}, 2 packages), src layout → PYTHONPATH=src"


def test_an_active_or_named_venv_wins_over_the_repositorys(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo({"a.py": ""})
    _venv(repo / "venv")
    active = _venv(tmp_path / "active")
    given = toolchain_paths([], prefix=OWN, base_prefix=OWN, environ={"VIRTUAL_ENV": str(active)})
    found = detect_environment(repo, given, own_prefix=OWN)
    assert found.env is not None and found.env.path == active
    assert repo / "venv" not in found.toolchains
    assert found.line.startswith(f"environment: {active} (Python {VERSION}")


def test_poetry_pdm_hatch_tox_environments(make_repo: MakeRepo, tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = make_repo({"pyproject.toml": '[tool.poetry]\nname = "My Pkg"\n'})
    name = poetry_env_name("My Pkg", repo)
    assert name.startswith("my_pkg-") and len(name) == len("my_pkg-") + 8
    poetry = _venv(home / ".cache/pypoetry/virtualenvs" / f"{name}-py3.11")
    found = detect_environment(repo, [], own_prefix=OWN, home=home)
    assert found.env is not None and found.env.path == poetry and "poetry" in found.line
    # Without a home folder only the repository is looked at.
    assert detect_environment(repo, [], own_prefix=OWN).env is None

    pdm_env = _venv(tmp_path / "pdm-env")
    pdm = make_repo({".pdm-python": f"{pdm_env}/bin/python\n"})
    got = detect_environment(pdm, [], own_prefix=OWN)
    assert got.env is not None and got.env.path == pdm_env and "pdm" in got.line

    tox = make_repo({"tox.ini": "[tox]\n"})
    _venv(tox / ".tox" / "py311")
    got = detect_environment(tox, [], own_prefix=OWN)
    assert got.env is not None and got.env.path == tox / ".tox" / "py311" and "tox" in got.line

    hatch = make_repo({"pyproject.toml": '[project]\nname = "h"\n'})
    _venv(hatch / ".hatch" / "default")
    got = detect_environment(hatch, [], own_prefix=OWN)
    assert got.env is not None and got.env.path == hatch / ".hatch" / "default"


def test_no_environment_falls_back_to_arcs_own(make_repo: MakeRepo) -> None:
    repo = make_repo({"a.py": ""})
    own = sys.prefix if sys.prefix != sys.base_prefix else OWN
    found = detect_environment(repo, [], own_prefix=own)
    if own != OWN:
        assert found.line.startswith("environment: ARCS's own environment (Python")
    else:
        assert found.env is None


def _editable_venv(tmp_path: Path, repo: Path) -> Path:
    """A real venv with ``repo`` installed editable by pip (offline: setuptools from the base Python)."""
    venv = _venv(tmp_path / "user-venv")
    # pip and a recent setuptools come from the running interpreter's packages (offline).
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "_host.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n", encoding="utf-8")
    done = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "--no-index", "--no-deps", *OFFLINE, str(repo)],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    if done.returncode != 0:
        pytest.skip(f"pip could not make an editable install offline here: {done.stderr[-300:]}")
    return venv


# setup.py's package_dir is not read by source_folders: only the editable install says where it is.
UNUSUAL_LAYOUT = {
    "setup.py": "from setuptools import setup\nsetup(name='minipkg', version='0.1.0', "
    "packages=['minipkg'], package_dir={'': 'python'})\n",
    "python/minipkg/__init__.py": "def add(a, b):\n    return a - b\n",
    "tests/test_add.py": (
        "import os\nimport minipkg\n\n\ndef test_from_the_copy():\n"
        "    assert not minipkg.__file__.startswith(os.environ['HOST_REPO'])\n\n\n"
        "def test_add():\n    assert minipkg.add(2, 3) == 5\n"
    ),
}


@pytest.mark.slow
@needs_sandbox
def test_an_editable_install_imports_the_workspace_copy(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo(UNUSUAL_LAYOUT)
    venv = _editable_venv(tmp_path, repo)
    found = detect_environment(repo, toolchain_paths([venv], prefix=OWN, base_prefix=OWN, environ={}))
    assert found.pythonpath == ("python",)
    assert "), editable install → PYTHONPATH=python" in found.line
    resolved = resolve_test_command(repo, explicit="python -m pytest").with_pythonpath(found.pythonpath)
    runner = LocalSandbox(toolchain_paths=found.toolchains)
    run = run_tests(runner, repo, resolved, timeout_s=120, env={"HOST_REPO": str(repo)})
    assert run.environment == ""
    assert run.passed_ids == ["tests/test_add.py::test_from_the_copy"]
    assert run.failed_ids == ["tests/test_add.py::test_add"]


def test_what_the_venv_needs_outside_is_exposed_read_only(make_repo: MakeRepo, tmp_path: Path) -> None:
    """The interpreter a venv was made from (uv's or pyenv's, outside /usr) and an editable sibling
    project; a setuptools finder's mapping into the repository becomes a PYTHONPATH folder."""
    repo = make_repo({"pkgs/minipkg/__init__.py": ""})
    python_home = tmp_path / "uv-python" / "cpython-3.11"
    (python_home / "bin").mkdir(parents=True)
    sibling = tmp_path / "work" / "sibling" / "src"
    sibling.mkdir(parents=True)
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "pyvenv.cfg").write_text(f"home = {python_home}/bin\nversion = 3.11.9\n", encoding="utf-8")
    (site / "__editable__.sibling-1.0.pth").write_text(f"{sibling}\n", encoding="utf-8")
    (site / "__editable___minipkg_0_1_finder.py").write_text(
        f"MAPPING: dict[str, str] = {{'minipkg': '{repo}/pkgs/minipkg'}}\n", encoding="utf-8"
    )
    found = detect_environment(repo, [venv], own_prefix=OWN)
    assert found.toolchains == (python_home, sibling, venv)
    assert found.pythonpath == ("pkgs",)
    assert found.line == (
        f"environment: {venv} (Python 3.11.9, 0 packages), editable install → PYTHONPATH=pkgs, "
        f"{sibling} (on its sys.path) exposed read-only"
    )


def _planted_venv(venv: Path, home: Path, pth: Path) -> None:
    """A committed ``.venv`` whose ``pyvenv.cfg`` and ``.pth`` name host folders the attacker chose."""
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "pyvenv.cfg").write_text(f"home = {home}/bin\nversion = 3.11.9\n", encoding="utf-8")
    (site / "evil.pth").write_text(f"{pth}\n", encoding="utf-8")


def test_an_untrusted_repository_environment_exposes_no_host_folder(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    """From the attacker's side (#22/#23): a clone the App repairs commits a ``.venv`` whose
    ``home`` and ``.pth`` lines name host folders; nothing of them may become a read-only mount."""
    secrets = tmp_path / "host" / "operator" / "secrets"
    (secrets / "bin").mkdir(parents=True)
    (secrets / "token.txt").write_text("s3cret", encoding="utf-8")
    repo = make_repo({"pkg/__init__.py": ""})
    _planted_venv(repo / ".venv", secrets, secrets)
    found = detect_environment(repo, [], own_prefix=OWN, trusted=False)
    assert not any(p == secrets or p.is_relative_to(secrets) for p in found.toolchains), found.toolchains
    assert "not exposed" in found.line
    # The same repository on the user's own machine (`arcs fix`) is trusted: both are exposed.
    mine = detect_environment(repo, [], own_prefix=OWN)
    assert secrets in mine.toolchains


def test_an_untrusted_linked_venv_or_pdm_path_is_not_used(make_repo: MakeRepo, tmp_path: Path) -> None:
    host_venv = _venv(tmp_path / "host" / "tenant-venv")
    repo = make_repo({"pkg/__init__.py": ""})
    (repo / ".venv").symlink_to(host_venv)
    (repo / ".pdm-python").write_text(f"{host_venv}/bin/python\n", encoding="utf-8")
    found = detect_environment(repo, [], own_prefix=OWN, trusted=False)
    exposed = {p.resolve() for p in found.toolchains}
    assert host_venv.resolve() not in exposed, found.toolchains
    assert found.env is None or found.env.path.resolve() != host_venv.resolve()
    (repo / ".venv").unlink()  # the link gone, `.pdm-python` alone names the host folder
    found = detect_environment(repo, [], own_prefix=OWN, trusted=False)
    assert host_venv.resolve() not in {p.resolve() for p in found.toolchains}, found.toolchains
    assert detect_environment(repo, [], own_prefix=OWN).env is not None  # trusted: the user's own pdm


def test_an_untrusted_venv_may_still_name_a_real_python_installation(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    python_home = tmp_path / "uv-python" / "cpython-3.11"
    (python_home / "bin").mkdir(parents=True)
    (python_home / "bin" / "python3.11").write_text("", encoding="utf-8")
    (python_home / "lib" / "python3.11").mkdir(parents=True)
    repo = make_repo({"pkg/__init__.py": ""})
    _planted_venv(repo / ".venv", python_home, tmp_path / "elsewhere")
    found = detect_environment(repo, [], own_prefix=OWN, trusted=False)
    assert python_home in found.toolchains
