"""Value types shared by the chunker, the store and the retrievers.

Everything here is plain, immutable data: the chunker produces it, the store persists it as Qdrant
payloads, the retrievers return it. Line numbers are 1-based and inclusive.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

ChunkKind = Literal[
    "function",  # free function
    "method",  # function defined inside a class/impl/struct body
    "class",  # class, struct, interface, trait, enum, impl block (whole body)
    "class_skeleton",  # signatures-only view of a large class (methods elided)
    "module",  # top-level statements of a code file not covered by other chunks
    "section",  # a heading-delimited section of a markdown/rst document
    "window",  # fixed-size line window (config files, unparsable code)
]

NodeLevel = Literal["repo", "dir", "file", "chunk"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A syntactically complete unit of a file (or a text window), with its metadata."""

    path: str
    """Repository-relative POSIX path."""
    language: str
    """``python``, ``javascript``, ``typescript``, ``tsx``, ``go``, ``rust``, ``java``, ``markdown``, ``text``…"""
    kind: ChunkKind
    symbol: str
    """Simple name (``area``); empty for windows and module chunks."""
    qualified_name: str
    """Dotted name within the repository (``shapes.Circle.area``); windows use ``path#Lstart``."""
    start_line: int
    end_line: int
    text: str
    signature: str = ""
    docstring: str = ""
    defines: tuple[str, ...] = ()
    """Symbols this chunk defines (the symbol itself, nested functions, fields, constants)."""
    uses: tuple[str, ...] = ()
    """Identifiers referenced in the chunk (sorted, deduplicated, defines excluded)."""

    @property
    def content_hash(self) -> str:
        """Hash of what is embedded and stored; unchanged chunks keep their hash across commits."""
        h = hashlib.sha256()
        for part in (self.path, self.kind, self.qualified_name, self.signature, self.docstring, self.text):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def contains_line(self, line: int) -> bool:
        """True when ``line`` (1-based) falls inside this chunk."""
        return self.start_line <= line <= self.end_line


@dataclass(frozen=True, slots=True)
class FileChunks:
    """The chunker's result for one file."""

    path: str
    language: str
    chunks: tuple[Chunk, ...]
    module_docstring: str = ""
    imports: tuple[str, ...] = ()
    """Imported module/package names, as written (``os.path``, ``./util``, ``fmt``)."""
    defines: tuple[str, ...] = ()
    """Top-level symbols defined by the file."""
    line_count: int = 0
    parsed: bool = True
    """False when the file had syntax errors (it is then chunked by windows)."""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Location:
    """A file:line hint, e.g. a traceback frame. ``line`` 0 means 'somewhere in the file'."""

    path: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Optional restrictions on what a query may return."""

    path_prefix: str | None = None
    language: str | None = None
    kind: str | None = None


RetrievalMode = Literal["hybrid", "dense", "sparse"]


@dataclass(frozen=True, slots=True)
class Query:
    """A retrieval request. ``hints`` and ``symbols`` drive the locality boosts."""

    text: str
    k: int = 10
    mode: RetrievalMode = "hybrid"
    filters: SearchFilters = field(default_factory=SearchFilters)
    hints: tuple[Location, ...] = ()
    symbols: tuple[str, ...] = ()
    """Symbols named by the caller (e.g. from an error message); extracted from ``text`` when empty."""
    redundancy_threshold: float | None = 0.85
    """Drop a hit whose embedding has cosine > threshold with an earlier-ranked hit; None disables."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked result: the chunk, its final score, and why it matched."""

    chunk: Chunk
    score: float
    reasons: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        """The stable public shape used by ``arcs search --json``."""
        return {
            "path": self.chunk.path,
            "start_line": self.chunk.start_line,
            "end_line": self.chunk.end_line,
            "symbol": self.chunk.qualified_name or self.chunk.symbol,
            "kind": self.chunk.kind,
            "score": round(self.score, 6),
        }
