"""Fetch and unpack one published version of a dependency, never building or running it (issue #27).

The repair of a red dependency update reads both versions' sources (their API difference and
changelog). A distribution is untrusted input, so:

* PyPI: the file is chosen from the index's JSON simple page (PEP 691) — an sdist when there is
  one (it carries the changelog), else a wheel — downloaded and checked against the index's
  SHA-256. ``pip download`` is not used for sdists: it prepares their metadata, which runs the
  package's build backend on the host.
* npm: ``npm pack <name>@<version> --ignore-scripts`` (a registry spec is only downloaded).
* Unpacking (:func:`safe_extract`) takes regular files and folders only (no links, devices or
  FIFOs), refuses absolute paths and ``..``, and caps the member count, each file's size and the
  total; files are created exclusively under the destination.

Results are cached per ecosystem, package and version under ``cache_dir``; a finished unpack is
marked by a ``.complete`` file, so an interrupted one is redone.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tarfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from runners.errors import UsageError

DEFAULT_INDEX = "https://pypi.org/simple"
MAX_ARCHIVE_BYTES = 50_000_000
MAX_MEMBERS = 20_000
MAX_FILE_BYTES = 5_000_000
MAX_TOTAL_BYTES = 200_000_000
MAX_DECLARED_BYTES = 1_000_000_000
"""Sizes of all tar members together, skipped ones included."""
TIMEOUT_S = 120
TEXT_SUFFIXES = (".py", ".pyi", ".d.ts", ".d.mts", ".d.cts")
METADATA_NAMES = ("PKG-INFO", "METADATA")
"""A wheel's (or sdist's) metadata: its long description often carries the changelog."""
CHANGELOG = re.compile(
    r"^(changes|changelog|history|news|release[-_ ]?notes)(\.(rst|md|txt|markdown))?$", re.I
)
MAX_TEXT_CHARS = 1_000_000


class FetchError(UsageError):
    """The version could not be fetched or unpacked safely (one line, for the report)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    """One unpacked version."""

    ecosystem: str
    package: str
    version: str
    root: Path
    archive: str
    """The file name that was unpacked."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_PYPI_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,200}[A-Za-z0-9])?")
# npm's rules; capitals only for legacy names (JSONStream).
_NPM_NAME = re.compile(r"(?:@[a-z0-9~-][a-z0-9._~-]{0,100}/)?[A-Za-z0-9~-][A-Za-z0-9._~-]{0,213}")
_NAME = {"pypi": _PYPI_NAME, "npm": _NPM_NAME}
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]{0,63}")


def _safe_component(text: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._+-]", "_", text)[:100]
    return safe if safe.strip(".") else "_"


def member_path(name: str) -> PurePosixPath | None:
    """The relative path an archive member may be written to, or None when it must be refused."""
    if "\x00" in name or "\\" in name:
        return None
    p = PurePosixPath(name)
    if p.is_absolute() or any(part in ("..", "") for part in p.parts if part != ".") or not p.parts:
        return None
    parts = [part for part in p.parts if part != "."]
    return PurePosixPath(*parts) if parts else None


def safe_extract(archive: Path, dest: Path) -> int:
    """Unpack a .tar(.gz|.bz2|.xz), .tgz, .zip or .whl into ``dest`` (created, must not exist);
    returns the number of files written. Raises :class:`FetchError` on anything unsafe."""
    dest.mkdir(parents=True)
    total = 0
    count = 0

    def write(rel: PurePosixPath, data: bytes) -> None:
        nonlocal total, count
        count += 1
        total += len(data)
        if count > MAX_MEMBERS or total > MAX_TOTAL_BYTES:
            raise FetchError(f"{archive.name}: more than the unpacking caps allow")
        target = dest.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if (
            dest.resolve() not in target.parent.resolve().parents
            and target.parent.resolve() != dest.resolve()
        ):
            raise FetchError(f"{archive.name}: member {rel} leaves the destination")
        with open(target, "xb") as fh:  # never through an existing file or link
            fh.write(data)

    name = archive.name.lower()
    if name.endswith((".zip", ".whl")):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                rel = member_path(info.filename)
                mode = (info.external_attr >> 16) & 0o170000
                if rel is None or mode not in (0, 0o100000):
                    raise FetchError(f"{archive.name}: refused member {info.filename!r}")
                if info.file_size > MAX_FILE_BYTES:
                    continue  # a big data file: not source we read
                with zf.open(info) as src:
                    data = src.read(MAX_FILE_BYTES + 1)
                if len(data) <= MAX_FILE_BYTES:
                    write(rel, data)
        return count
    declared = 0
    with tarfile.open(archive, "r:*") as tf:
        for member in tf:
            declared += max(member.size, 0)
            if declared > MAX_DECLARED_BYTES:  # skipping a member still inflates it: a bomb is refused whole
                raise FetchError(f"{archive.name}: more than the unpacking caps allow")
            if member.isdir():
                continue
            rel = member_path(member.name)
            if rel is None or not member.isreg():
                raise FetchError(f"{archive.name}: refused member {member.name!r}")
            if member.size > MAX_FILE_BYTES:
                continue
            stream = tf.extractfile(member)
            if stream is not None:
                write(rel, stream.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES])
    return count


def _download(url: str, target: Path, sha256: str, index_url: str) -> None:
    # a local file only from a local index (a mirror on disk); never a file the page names
    allowed = ("https://", "file://") if index_url.startswith("file://") else ("https://",)
    if not url.startswith(allowed):
        raise FetchError(f"refused download URL {url[:80]}")
    digest = hashlib.sha256()
    size = 0
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp, open(target, "wb") as out:
        while chunk := resp.read(1 << 16):
            size += len(chunk)
            if size > MAX_ARCHIVE_BYTES:
                raise FetchError(f"{target.name}: larger than {MAX_ARCHIVE_BYTES} bytes")
            digest.update(chunk)
            out.write(chunk)
    if sha256 and digest.hexdigest() != sha256.lower():
        raise FetchError(f"{target.name}: SHA-256 does not match the index")


def pypi_files(package: str, index_url: str = DEFAULT_INDEX) -> list[dict[str, object]]:
    """The files of a project on a PEP 691 JSON simple index."""
    url = f"{index_url.rstrip('/')}/{_norm(package)}/"
    req = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            data = json.loads(resp.read(20_000_000))
    except (OSError, ValueError) as exc:
        raise FetchError(f"{package}: index page unreadable ({type(exc).__name__})") from exc
    files = data.get("files") if isinstance(data, dict) else None
    return [f for f in files if isinstance(f, dict)] if isinstance(files, list) else []


def choose_pypi_file(files: list[dict[str, object]], package: str, version: str) -> dict[str, object] | None:
    """The sdist of ``version`` when there is one, else a pure wheel, else any wheel (not yanked)."""
    stem = _norm(package)
    sdists: list[dict[str, object]] = []
    wheels: list[dict[str, object]] = []
    for f in files:
        fname = str(f.get("filename", ""))
        if f.get("yanked") not in (None, False):
            continue
        if fname.endswith((".tar.gz", ".zip")):
            base = fname.rsplit(".tar.gz", 1)[0] if fname.endswith(".tar.gz") else fname[:-4]
            name, _, ver = base.rpartition("-")
            if _norm(name) == stem and ver == version:
                sdists.append(f)
        elif fname.endswith(".whl"):
            parts = fname.split("-")
            if len(parts) >= 5 and _norm(parts[0]) == stem and parts[1] == version:
                wheels.append(f)
    if sdists:
        return sdists[0]
    wheels.sort(key=lambda f: not str(f.get("filename", "")).endswith("-none-any.whl"))
    return wheels[0] if wheels else None


def fetch(
    ecosystem: str,
    package: str,
    version: str,
    *,
    cache_dir: Path,
    index_url: str = DEFAULT_INDEX,
    npm: str = "npm",
) -> Fetched:
    """Download and unpack one version (cached). Raises :class:`FetchError`."""
    # Names and versions come from the repository's manifests: only registry names, never a path,
    # URL or `..` (`npm pack ../x` packs a host folder; `..` would climb out of the cache).
    name_ok = _NAME.get(ecosystem, _PYPI_NAME).fullmatch(package) is not None
    if not name_ok or not _VERSION.fullmatch(version) or not re.search(r"[A-Za-z0-9]", version):
        raise FetchError(f"refused package spec {package[:60]!r} {version[:30]!r}")
    home = cache_dir / "dists" / ecosystem / _safe_component(package) / _safe_component(version)
    root = home / "src"
    done = home / ".complete"
    if done.exists():
        return Fetched(ecosystem, package, version, root, done.read_text().strip())
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    if ecosystem == "pypi":
        chosen = choose_pypi_file(pypi_files(package, index_url), package, version)
        if chosen is None:
            raise FetchError(f"{package} {version}: no sdist or wheel on the index")
        fname = _safe_component(str(chosen["filename"]))
        hashes = chosen.get("hashes")
        sha = str(hashes.get("sha256", "")) if isinstance(hashes, dict) else ""
        archive = home / fname
        url = str(chosen.get("url", ""))
        if url.startswith("/"):
            url = urllib.parse.urljoin(index_url, url)
        _download(url, archive, sha, index_url)
    elif ecosystem == "npm":
        try:
            out = subprocess.run(
                [
                    npm,
                    "pack",
                    f"{package}@{version}",
                    "--ignore-scripts",
                    "--json",
                    "--pack-destination",
                    str(home),
                ],
                cwd=home,  # no repository's .npmrc is read
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=True,
            )
            fname = str(json.loads(out.stdout)[0]["filename"]).replace("/", "-").lstrip("@")
        except (subprocess.SubprocessError, OSError, ValueError, KeyError, IndexError) as exc:
            raise FetchError(f"{package}@{version}: npm pack failed ({type(exc).__name__})") from exc
        archive = home / fname
        if not archive.exists():
            found = sorted(home.glob("*.tgz"))
            if not found:
                raise FetchError(f"{package}@{version}: npm pack wrote no archive")
            archive = found[0]
    else:
        raise FetchError(f"{ecosystem}: fetching is not supported")
    safe_extract(archive, root)
    done.write_text(archive.name)
    return Fetched(ecosystem, package, version, root, archive.name)


def read_texts(root: Path, *, max_chars: int = 30_000_000) -> dict[str, str]:
    """``{relative path: text}`` of the sources (.py, .pyi, .d.ts), changelogs and package.json of
    an unpacked version (no link is followed; files that are not UTF-8 are skipped)."""
    out: dict[str, str] = {}
    used = 0
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        name = path.name
        wanted = (
            name.endswith(TEXT_SUFFIXES) or CHANGELOG.match(name) or name in ("package.json", *METADATA_NAMES)
        )
        if not wanted:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if len(text) > MAX_TEXT_CHARS or used + len(text) > max_chars:
            continue
        used += len(text)
        out[path.relative_to(root).as_posix()] = text
    return out


__all__ = [
    "DEFAULT_INDEX",
    "FetchError",
    "Fetched",
    "choose_pypi_file",
    "fetch",
    "member_path",
    "pypi_files",
    "read_texts",
    "safe_extract",
]
