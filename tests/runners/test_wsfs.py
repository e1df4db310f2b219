"""runners.wsfs: the one way the host touches a workspace (issue #22)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from runners import wsfs
from runners.workspace import private_folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    return root


@pytest.fixture
def host(tmp_path: Path) -> Path:
    folder = tmp_path / "host"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    (folder / "secret.txt").write_text("host secret\n")
    return folder


def test_reads_refuse_links_at_every_component(ws: Path, host: Path) -> None:
    (ws / "out").symlink_to(host)
    (ws / "src" / "leak.txt").symlink_to(host / "secret.txt")
    (ws / "src" / "inside.py").symlink_to(ws / "src" / "a.py")
    assert wsfs.read_text(ws, "src/a.py") == "print('a')\n"
    for rel in ("out/secret.txt", "src/leak.txt", "src/inside.py"):
        with pytest.raises(wsfs.Refused, match="symlink"):
            wsfs.read_bytes(ws, rel, limit=100)
        assert wsfs.text_or_none(ws, rel) is None
    for rel in ("../host/secret.txt", str(host / "secret.txt"), "src/../../host/secret.txt", "a\0b"):
        with pytest.raises(wsfs.Refused):
            wsfs.read_bytes(ws, rel, limit=100)
    with pytest.raises(FileNotFoundError):
        wsfs.read_bytes(ws, "src/missing.py", limit=100)
    with pytest.raises(wsfs.Refused, match="folder"):
        wsfs.read_bytes(ws, "src", limit=100)


def test_a_fifo_is_refused_at_once(ws: Path) -> None:
    os.mkfifo(ws / "log")
    errors: list[BaseException] = []

    def read() -> None:
        try:
            wsfs.read_bytes(ws, "log", limit=100)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():  # release the blocked reader before failing
        os.close(os.open(ws / "log", os.O_WRONLY | os.O_NONBLOCK))
    assert not thread.is_alive() and len(errors) == 1
    assert isinstance(errors[0], wsfs.Refused) and "not a regular file" in str(errors[0])


def test_reads_are_bounded_head_tail_or_whole(ws: Path) -> None:
    (ws / "big.log").write_bytes(b"".join(b"line %d\n" % i for i in range(100_000)))
    assert wsfs.read_bytes(ws, "big.log", limit=7) == b"line 0\n"
    assert wsfs.read_bytes(ws, "big.log", limit=11, tail=True) == b"line 99999\n"
    with pytest.raises(wsfs.TooLarge, match="more than the 100 bytes allowed"):
        wsfs.read_bytes(ws, "big.log", limit=100, whole=True)
    assert wsfs.text_or_none(ws, "big.log", limit=100) is None
    assert len(wsfs.read_bytes(ws, "big.log", limit=1 << 30, whole=True)) == (ws / "big.log").stat().st_size


def test_writes_replace_a_planted_link_instead_of_writing_through_it(ws: Path, host: Path) -> None:
    (ws / "src" / "b.py").symlink_to(host / "secret.txt")
    wsfs.write_text(ws, "src/b.py", "b = 1\n")
    assert (host / "secret.txt").read_text() == "host secret\n"
    assert not (ws / "src" / "b.py").is_symlink() and (ws / "src" / "b.py").read_text() == "b = 1\n"
    (ws / "out").symlink_to(host)
    with pytest.raises(wsfs.Refused):
        wsfs.write_text(ws, "out/new.txt", "x")
    with pytest.raises(wsfs.Refused):
        wsfs.make_dirs(ws, "out/sub")
    assert sorted(p.name for p in host.iterdir()) == ["secret.txt"]
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "run.sh").chmod(0o755)
    wsfs.write_text(ws, "run.sh", "#!/bin/sh\necho\n")  # the mode of the file it replaces is kept
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == 0o755
    wsfs.write_text(ws, "deep/er/new.txt", "new\n", mode=0o600)
    assert stat.S_IMODE((ws / "deep/er/new.txt").stat().st_mode) == 0o600
    with pytest.raises(IsADirectoryError):
        wsfs.write_text(ws, "src", "x")
    assert not [p for p in ws.rglob("*.arcs-*")]  # no temporary file left behind


def test_chmod_unlink_and_remove_never_follow(ws: Path, host: Path) -> None:
    (ws / "hang").symlink_to(host)
    with pytest.raises(wsfs.Refused):
        wsfs.chmod(ws, "hang", 0o777)
    with pytest.raises(wsfs.Refused):
        wsfs.unlink(ws, "hang/secret.txt")
    wsfs.remove(ws, "hang")  # the link goes, not what it points to
    assert not (ws / "hang").exists() and (host / "secret.txt").exists()
    assert stat.S_IMODE(host.stat().st_mode) == 0o700
    wsfs.chmod(ws, "src", 0o750)
    assert stat.S_IMODE((ws / "src").stat().st_mode) == 0o750
    os.mkfifo(ws / "fifo")
    with pytest.raises(wsfs.Refused):
        wsfs.chmod(ws, "fifo", 0o777)


def test_remove_tree_keeps_what_links_point_to(ws: Path, host: Path) -> None:
    (ws / "src" / "out").symlink_to(host)
    (ws / "src" / "file-link").symlink_to(host / "secret.txt")
    deep = ws / "deep"
    for i in range(200):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (ws / "locked").mkdir()
    (ws / "locked" / "f").write_text("x")
    (ws / "locked").chmod(0o500)
    wsfs.remove_tree(ws)
    assert not ws.exists()
    assert (host / "secret.txt").read_text() == "host secret\n" and stat.S_IMODE(host.stat().st_mode) == 0o700
    wsfs.remove_tree(ws)  # missing is fine


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to drop to uid 65534"
)
def test_remove_tree_as_an_unprivileged_owner_opens_locked_folders_through_their_descriptor(
    request: pytest.FixtureRequest,
) -> None:
    # As root nothing is locked; as the owner of a tree with mode-000 and read-only folders (what a
    # test can leave), removal must make them accessible through descriptors and still not follow
    # the link to a folder it may not touch.
    top = Path(tempfile.mkdtemp(prefix="arcs-wsfs-test-"))  # pytest's own folders are 0700
    request.addfinalizer(lambda: shutil.rmtree(top, ignore_errors=True))
    top.chmod(0o755)
    base = top / "nobody"
    base.mkdir()
    outside = top / "outside"
    outside.mkdir()
    (outside / "keep").write_text("k")
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from runners import wsfs\n"
        "ws = Path(sys.argv[1]) / 'ws'\n"
        "(ws / 'a' / 'b').mkdir(parents=True)\n"
        "(ws / 'a' / 'b' / 'f').write_text('x')\n"
        "(ws / 'a' / 'link').symlink_to(sys.argv[2])\n"
        "(ws / 'a' / 'b').chmod(0)\n"
        "(ws / 'a').chmod(0o500)\n"
        "wsfs.remove_tree(ws)\n"
        "print('gone' if not ws.exists() else 'left')\n"
    )
    os.chown(base, 65534, 65534)
    done = subprocess.run(
        [
            "setpriv",
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            sys.executable,
            "-c",
            script,
            str(base),
            str(outside),
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": os.environ.get("PATH", "")},
        check=False,
        timeout=60,
    )
    assert done.stdout.strip() == "gone", done.stderr
    assert (outside / "keep").read_text() == "k"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_chown_tree_changes_links_themselves(ws: Path, host: Path) -> None:
    (ws / "src" / "leak").symlink_to(host / "secret.txt")
    (ws / "src" / "dir-link").symlink_to(host)
    wsfs.chown_tree(ws, 12345, 12345)
    assert (ws / "src" / "a.py").stat().st_uid == 12345
    assert os.lstat(ws / "src" / "leak").st_uid == 12345
    assert (host / "secret.txt").stat().st_uid == 0 and host.stat().st_uid == 0


def test_listdir_and_entry_stat_do_not_follow(ws: Path, host: Path) -> None:
    (ws / "out").symlink_to(host)
    assert wsfs.listdir(ws) == ["out", "src"]
    with pytest.raises(wsfs.Refused):
        wsfs.listdir(ws, "out")
    info = wsfs.entry_stat(ws, "out")
    assert info is not None and stat.S_ISLNK(info.st_mode)
    assert wsfs.entry_stat(ws, "out/secret.txt") is None
    assert wsfs.entry_stat(ws, "missing") is None


def test_the_private_folder_is_outside_the_workspace_and_goes_away(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with private_folder(root) as private:
        assert private.parent == root and private.name.startswith(f"arcs-ws-{os.getpid()}-private-")
        assert stat.S_IMODE(private.stat().st_mode) == 0o755
        (private / "hang").mkdir()
        (private / "hang" / "x").symlink_to(tmp_path)
    assert not private.exists() and tmp_path.exists()


def test_a_linked_venv_is_not_bound_into_the_sandbox(tmp_path: Path) -> None:
    from jobs.engine_ports import repo_toolchains

    host_venv = tmp_path / "host-venv"
    (host_venv / "bin").mkdir(parents=True)
    (host_venv / "bin" / "python").symlink_to(sys.executable)
    (host_venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".venv").symlink_to(host_venv)
    assert repo_toolchains(repo) == ()  # a committed link to a host folder is not exposed
    (repo / "venv").mkdir()
    (repo / "venv" / "bin").mkdir()
    (repo / "venv" / "bin" / "python").symlink_to(sys.executable)
    (repo / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert repo_toolchains(repo) == ((repo / "venv").absolute(),)  # a real one still is
