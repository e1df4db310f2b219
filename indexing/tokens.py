"""Code-aware lexical tokens and the sparse vectors built from them.

Identifiers are kept whole (``parse_config``) *and* split into their words (``parse``, ``config``),
so a query can hit either the exact symbol or its parts. Everything is lowercased; a small stop-list
drops words that carry no signal in code search. Term ids are a stable 31-bit hash of the token, so
sparse vectors need no vocabulary file and are identical across processes and machines.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

_IDENT = re.compile(r"[^\W\d]\w*")
# Words inside an identifier: "HTTPServerError2" -> HTTP, Server, Error, 2.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")

STOP_WORDS: frozenset[str] = frozenset(
    {
        # English glue words that show up in comments, docstrings and queries
        "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have",
        "how", "in", "is", "it", "its", "of", "on", "or", "so", "that", "the", "there", "this",
        "to", "was", "we", "what", "when", "where", "which", "why", "with", "can", "will", "should",
        # keywords and receiver names present in almost every chunk of their language
        "def", "self", "cls", "return", "import", "pass", "none", "true", "false", "null", "nil",
        "let", "const", "var", "func", "fn", "pub", "public", "private", "protected", "static",
        "void", "new", "if", "else", "elif", "end", "while", "try", "except", "catch", "not", "but",
    }
)  # fmt: skip

_MIN_LEN = 2
# BM25-style saturation of document term frequencies. The IDF half of BM25 is applied by Qdrant
# (sparse vector ``modifier=IDF``); the average document length is a fixed constant so that a
# chunk's vector never depends on the rest of the corpus (which would break incremental updates).
_BM25_K1 = 1.2
_BM25_B = 0.75
_BM25_AVGDL = 120.0


def split_identifier(identifier: str) -> list[str]:
    """Split ``snake_case``, ``camelCase``, ``PascalCase`` and digit runs into lowercased words."""
    words: list[str] = []
    for part in identifier.split("_"):
        words.extend(w.lower() for w in _WORD.findall(part))
    return [w for w in words if w]


def _keep(token: str) -> bool:
    return len(token) >= _MIN_LEN and token not in STOP_WORDS and not token.isdigit()


@lru_cache(maxsize=262_144)
def _expand(ident: str) -> tuple[str, ...]:
    # Identifiers repeat a lot within a repository; expanding each distinct one once is most of the speed.
    whole = ident.lower().strip("_")
    parts = split_identifier(ident)
    out = [whole] if _keep(whole) else []
    if len(parts) > 1:
        out.extend(p for p in parts if _keep(p))
    return tuple(out)


def code_tokens(text: str) -> list[str]:
    """Lexical tokens of ``text``, repeated as often as they occur (term frequency matters).

    Each identifier yields its lowercased whole form and, when it has several words, each word.
    """
    out: list[str] = []
    for ident in _IDENT.findall(text):
        out.extend(_expand(ident))
    return out


@lru_cache(maxsize=262_144)
def term_id(token: str) -> int:
    """Stable 31-bit id of a token (sparse vector index)."""
    digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class SparseVec:
    """A sparse vector with ascending, unique indices."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.indices)


def _to_sparse(weights: dict[int, float]) -> SparseVec:
    items = sorted(weights.items())
    return SparseVec(tuple(i for i, _ in items), tuple(v for _, v in items))


def document_vector(text: str) -> SparseVec:
    """Sparse vector of an indexed document: BM25-saturated term frequencies per term id."""
    tokens = code_tokens(text)
    if not tokens:
        return SparseVec((), ())
    length_norm = 1.0 - _BM25_B + _BM25_B * (len(tokens) / _BM25_AVGDL)
    weights: dict[int, float] = {}
    for token, tf in Counter(tokens).items():
        value = tf * (_BM25_K1 + 1.0) / (tf + _BM25_K1 * length_norm)
        tid = term_id(token)
        # Distinct tokens colliding on one id simply add up (rare at 31 bits).
        weights[tid] = weights.get(tid, 0.0) + value
    return _to_sparse(weights)


def query_vector(text: str) -> SparseVec:
    """Sparse vector of a query: each distinct term once, weighted by ``1 + log(tf)``."""
    weights: dict[int, float] = {}
    for token, tf in Counter(code_tokens(text)).items():
        tid = term_id(token)
        weights[tid] = weights.get(tid, 0.0) + 1.0 + math.log(tf)
    return _to_sparse(weights)


_DOTTED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)+")
_CALL = re.compile(r"([^\W\d]\w*)\s*\(")
_QUOTED = re.compile(r"[`'\"]([^\W\d][\w.]*)[`'\"]")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]|[A-Z][a-z0-9]+[A-Z]")
_FILE_SUFFIXES = frozenset({"py", "js", "ts", "tsx", "jsx", "go", "rs", "java", "md", "txt", "json", "toml"})


def _looks_like_symbol(word: str) -> bool:
    core = word.strip("_")
    if not core or word.lower() in STOP_WORDS:
        return False
    return "_" in core or bool(_CAMEL.search(word))


def query_symbols(text: str) -> tuple[str, ...]:
    """Identifier-like names mentioned in free text (error messages, issue titles).

    Picks ``snake_case``, ``camelCase``/``PascalCase`` with an inner capital, dotted names
    (``pkg.mod.func``: the full name and its last part), calls (``foo()``) and quoted names
    (``'foo'``, backticks). Plain English words are not symbols. Order of first mention.
    """
    found: list[str] = []

    def add(names: Iterable[str]) -> None:
        for name in names:
            if len(name) >= _MIN_LEN and name not in found and name.lower() not in STOP_WORDS:
                found.append(name)

    for match in _DOTTED.finditer(text):
        dotted = match.group(0)
        parts = dotted.split(".")
        if parts[-1].lower() in _FILE_SUFFIXES or min(len(p) for p in parts) < _MIN_LEN:
            continue  # "app/util.py" is a file name, not a member access
        add([dotted, parts[-1]])
    for match in _CALL.finditer(text):
        add([match.group(1)])
    for match in _QUOTED.finditer(text):
        name = match.group(1)
        add([name, name.rsplit(".", 1)[-1]] if "." in name else [name])
    for match in _IDENT.finditer(text):
        word = match.group(0)
        if _looks_like_symbol(word):
            add([word])
    return tuple(found)
