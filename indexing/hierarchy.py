"""The repository tree (repo -> directory -> file) with an abstract per node (seed 001, HCAG).

Without an LLM the abstracts are *structural*: module docstring, defined symbols, imports and sizes
for a file; child names, sizes and aggregated symbols for a directory. A :class:`Summarizer` may
rewrite them (an LLM later); :class:`CachedSummarizer` keys its answers by content hash so an
unchanged node is never summarised twice. Chunks (the leaves) live in the chunk collection.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from indexing.model import FileChunks, NodeLevel

_MAX_SYMBOLS_FILE = 40
_MAX_SYMBOLS_DIR = 60
_MAX_CHILDREN = 40
_MAX_DOC = 300


@dataclass(frozen=True, slots=True)
class FileSummary:
    """Structural facts about one indexed file (kept in the manifest, so unchanged files need no re-parse)."""

    path: str
    language: str
    line_count: int
    chunk_count: int
    module_docstring: str = ""
    imports: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    """Qualified names of the file's chunks (functions, methods, classes), in file order."""

    @classmethod
    def from_chunks(cls, fc: FileChunks) -> FileSummary:
        """Summarise the chunker's result for one file."""
        symbols = tuple(
            dict.fromkeys(
                c.qualified_name
                for c in fc.chunks
                if c.symbol and c.kind not in ("window", "module", "section")
            )
        )
        line_count = fc.line_count or max((c.end_line for c in fc.chunks), default=0)
        return cls(
            path=fc.path,
            language=fc.language,
            line_count=line_count,
            chunk_count=len(fc.chunks),
            module_docstring=fc.module_docstring,
            imports=tuple(fc.imports),
            defines=tuple(fc.defines),
            symbols=symbols,
        )

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form for the manifest."""
        # Spelled out: dataclasses.asdict deep-copies every field, which dominates large manifests.
        return {
            "path": self.path,
            "language": self.language,
            "line_count": self.line_count,
            "chunk_count": self.chunk_count,
            "module_docstring": self.module_docstring,
            "imports": list(self.imports),
            "defines": list(self.defines),
            "symbols": list(self.symbols),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileSummary:
        """Inverse of :meth:`to_json`."""
        return cls(
            path=str(data["path"]),
            language=str(data.get("language", "")),
            line_count=int(data.get("line_count", 0)),
            chunk_count=int(data.get("chunk_count", 0)),
            module_docstring=str(data.get("module_docstring", "")),
            imports=tuple(data.get("imports", ())),
            defines=tuple(data.get("defines", ())),
            symbols=tuple(data.get("symbols", ())),
        )


@dataclass(frozen=True, slots=True)
class NodeDraft:
    """What a summariser gets for one node: its structural abstract plus raw material."""

    level: NodeLevel
    path: str
    structural: str
    children: tuple[str, ...] = ()
    """Abstracts of the child nodes (directories and the repository)."""
    source: str | None = None
    """The file's text (file nodes, when available)."""

    def cache_key(self) -> str:
        """Content hash of everything a summary may depend on."""
        h = hashlib.sha256()
        for part in (self.level, self.path, self.structural, self.source or "", *self.children):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()


@runtime_checkable
class Summarizer(Protocol):
    """Writes the abstract of a tree node."""

    name: str
    """Stable id (model and prompt version); part of the cache key and of the manifest."""

    def summarize(self, node: NodeDraft) -> str:
        """Return the abstract of ``node``."""
        ...


class StructuralSummarizer:
    """The default: the structural abstract, as is (no model, deterministic)."""

    name = "structural-v1"

    def summarize(self, node: NodeDraft) -> str:
        """Return ``node.structural``."""
        return node.structural


class CachedSummarizer:
    """A :class:`Summarizer` with a persistent SQLite cache keyed by (name, :meth:`NodeDraft.cache_key`)."""

    def __init__(self, inner: Summarizer, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=30.0)
        try:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS summaries (name TEXT NOT NULL, key TEXT NOT NULL,"
                " abstract TEXT NOT NULL, PRIMARY KEY (name, key)) WITHOUT ROWID"
            )
            self._db.commit()
        except sqlite3.Error:
            self._db.close()
            raise

    def summarize(self, node: NodeDraft) -> str:
        """Cached :meth:`Summarizer.summarize`."""
        key = node.cache_key()
        row = self._db.execute(
            "SELECT abstract FROM summaries WHERE name = ? AND key = ?", (self.name, key)
        ).fetchone()
        if row is not None:
            return str(row[0])
        abstract = self.inner.summarize(node)
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO summaries (name, key, abstract) VALUES (?, ?, ?)",
                (self.name, key, abstract),
            )
        return abstract

    def close(self) -> None:
        """Close the cache database."""
        self._db.close()

    def __enter__(self) -> CachedSummarizer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A repo, directory or file node with its abstract."""

    level: NodeLevel
    path: str
    """``""`` for the repository, else the repository-relative path."""
    parent: str
    """Path of the parent node (``""`` for top-level entries and for the repository itself)."""
    abstract: str
    children: tuple[str, ...] = ()
    language: str = ""
    defines: tuple[str, ...] = ()
    line_count: int = 0
    file_count: int = 0

    @property
    def name(self) -> str:
        """Last path component (``""`` for the repository)."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def abstract_hash(self) -> str:
        """Hash of the abstract (part of the node's point id)."""
        return hashlib.sha256(self.abstract.encode("utf-8", "surrogatepass")).hexdigest()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _listing(label: str, names: Sequence[str], limit: int) -> str:
    if not names:
        return ""
    shown = list(names[:limit])
    more = f" (+{len(names) - limit} more)" if len(names) > limit else ""
    return f"{label}: {', '.join(shown)}{more}"


def file_structural(summary: FileSummary) -> str:
    """Structural abstract of a file."""
    lines = [
        f"file {summary.path} ({summary.language}, {summary.line_count} lines, {summary.chunk_count} chunks)"
    ]
    if summary.module_docstring:
        lines.append(_clip(summary.module_docstring, _MAX_DOC))
    top = list(summary.defines)
    nested = [s for s in summary.symbols if s.rsplit(".", 1)[-1] not in top]
    lines.append(_listing("defines", top, _MAX_SYMBOLS_FILE))
    lines.append(_listing("members", nested, _MAX_SYMBOLS_FILE))
    lines.append(_listing("imports", list(summary.imports), 20))
    return "\n".join(line for line in lines if line)


def file_node(summary: FileSummary, abstract: str) -> TreeNode:
    """The tree node of one file."""
    parent = summary.path.rsplit("/", 1)[0] if "/" in summary.path else ""
    return TreeNode(
        level="file",
        path=summary.path,
        parent=parent,
        abstract=abstract,
        language=summary.language,
        defines=tuple(dict.fromkeys((*summary.defines, *(s.rsplit(".", 1)[-1] for s in summary.symbols)))),
        line_count=summary.line_count,
        file_count=1,
    )


def build_tree(
    files: Mapping[str, FileSummary],
    file_abstracts: Mapping[str, str],
    summarizer: Summarizer,
    *,
    repo_name: str,
) -> list[TreeNode]:
    """All nodes above the chunks: file nodes (given abstracts), directories and the repository.

    Directories and the repository are summarised bottom-up so a summariser sees its children's
    abstracts. The result is sorted by (level, path) and is a pure function of its inputs.
    """
    nodes: dict[str, TreeNode] = {}
    children: dict[str, list[str]] = {"": []}
    for path in sorted(files):
        summary = files[path]
        node = file_node(summary, file_abstracts.get(path) or file_structural(summary))
        nodes[path] = node
        parts = path.split("/")
        for depth in range(len(parts) - 1):
            d = "/".join(parts[: depth + 1])
            parent = "/".join(parts[:depth])
            if d not in children:
                children[d] = []
                children.setdefault(parent, []).append(d)
        children.setdefault(node.parent, []).append(path)

    dir_languages: dict[str, Counter[str]] = {}
    dirs = sorted((d for d in children if d), key=lambda d: (-d.count("/"), d))
    for d in [*dirs, ""]:
        kids = sorted(children[d])
        kid_nodes = [nodes[k] for k in kids]
        level: NodeLevel = "repo" if d == "" else "dir"
        symbols: list[str] = []
        languages: Counter[str] = Counter()
        for kid in kid_nodes:
            symbols.extend(kid.defines)
            if kid.level == "file":
                languages[kid.language] += 1
            else:
                languages.update(dir_languages.get(kid.path, Counter()))
        symbols = list(dict.fromkeys(symbols))
        file_count = sum(k.file_count for k in kid_nodes)
        line_count = sum(k.line_count for k in kid_nodes)
        names = [k.name + ("/" if k.level == "dir" else "") for k in kid_nodes]
        subdirs = sum(1 for k in kid_nodes if k.level == "dir")
        head = (
            f"repository {repo_name}" if level == "repo" else f"directory {d}"
        ) + f": {file_count} files, {subdirs} subdirectories, {line_count} lines"
        langs = ", ".join(
            f"{lang} ({n})" for lang, n in sorted(languages.items(), key=lambda i: (-i[1], i[0]))
        )
        about = [_first_line(k) for k in kid_nodes if k.level == "file" and _first_line(k)]
        lines = [
            head,
            f"languages: {langs}" if langs else "",
            _listing("contains", names, _MAX_CHILDREN),
            _listing("defines", symbols, _MAX_SYMBOLS_DIR),
            _listing("about", about, 3),
        ]
        structural = "\n".join(line for line in lines if line)
        draft = NodeDraft(
            level=level, path=d, structural=structural, children=tuple(k.abstract for k in kid_nodes)
        )
        parent = d.rsplit("/", 1)[0] if "/" in d else ""
        nodes[d] = TreeNode(
            level=level,
            path=d,
            parent=parent,
            abstract=summarizer.summarize(draft),
            children=tuple(kids),
            language=languages.most_common(1)[0][0] if languages else "",
            defines=tuple(symbols[: _MAX_SYMBOLS_DIR * 4]),
            line_count=line_count,
            file_count=file_count,
        )
        dir_languages[d] = languages
    order = {"repo": 0, "dir": 1, "file": 2, "chunk": 3}
    return sorted(nodes.values(), key=lambda n: (order[n.level], n.path))


def _first_line(node: TreeNode) -> str:
    # A file abstract's second line is its module docstring, when it has one.
    lines = node.abstract.split("\n")
    if len(lines) > 1 and not lines[1].startswith(("defines:", "members:", "imports:")):
        return f"{node.name}: {_clip(lines[1], 80)}"
    return ""
