"""Git-style unified diffs: writing, parsing, stats, and a normalized key for deduplication.

Everything works on text held in memory; nothing here touches the file system. Paths are
repository-relative POSIX paths. Line numbers are 1-based.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

CONTEXT_LINES = 3
DEFAULT_MODE = 0o100644
_NO_NEWLINE = "\\ No newline at end of file"
_NULL_SHA = "0000000"

# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def unified_diff(
    before: Mapping[str, str | None],
    after: Mapping[str, str | None],
    *,
    modes: Mapping[str, int] | None = None,
    context: int = CONTEXT_LINES,
) -> str:
    """A git-style unified diff from ``before`` to ``after`` (path -> text, None = absent).

    Files are ordered by path; a path missing from one mapping counts as absent there.
    ``modes`` gives git file modes (``0o100755``) for paths that are not ``0o100644``.
    The output is accepted by ``git apply`` (new/deleted file headers, ``\\ No newline at end
    of file`` markers, C-quoted unusual path names).
    """
    modes = modes or {}
    out: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        out.extend(_file_diff(path, old, new, modes.get(path, DEFAULT_MODE), context))
    return "".join(out)


def _file_diff(path: str, old: str | None, new: str | None, mode: int, context: int) -> list[str]:
    a_name, b_name = _quote("a/" + path), _quote("b/" + path)
    tab = "\t" if " " in path else ""  # git marks names with spaces this way on ---/+++ lines
    lines = [f"diff --git {a_name} {b_name}\n"]
    if old is None:
        lines.append(f"new file mode {mode:o}\n")
        lines.append(f"index {_NULL_SHA}..{_blob_sha(new or '')}\n")
    elif new is None:
        lines.append(f"deleted file mode {mode:o}\n")
        lines.append(f"index {_blob_sha(old)}..{_NULL_SHA}\n")
    else:
        lines.append(f"index {_blob_sha(old)}..{_blob_sha(new)} {mode:o}\n")
    old_lines, new_lines = _split_lines(old or ""), _split_lines(new or "")
    if not old_lines and not new_lines:
        return lines  # empty file created or deleted: git writes no ---/+++ and no hunk
    lines.append(f"--- {a_name if old is not None else '/dev/null'}{tab if old is not None else ''}\n")
    lines.append(f"+++ {b_name if new is not None else '/dev/null'}{tab if new is not None else ''}\n")
    for group in _grouped_opcodes(old_lines, new_lines, context):
        first, last = group[0], group[-1]
        old_range = _format_range(first[1], last[2])
        new_range = _format_range(first[3], last[4])
        lines.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(_hunk_lines(" ", old_lines[i1:i2]))
                continue
            if tag in ("replace", "delete"):
                lines.extend(_hunk_lines("-", old_lines[i1:i2]))
            if tag in ("replace", "insert"):
                lines.extend(_hunk_lines("+", new_lines[j1:j2]))
    return lines


Opcode = tuple[str, int, int, int, int]


def _grouped_opcodes(old: list[str], new: list[str], context: int) -> Iterator[list[Opcode]]:
    """difflib's grouped opcodes, made fast for large files with a small change.

    The common prefix and suffix are cut off first (SequenceMatcher is quadratic on long runs of
    repeated lines such as blanks), and only the middle is matched; popular lines are junked
    there, as difflib does by default. Any alignment yields a correct patch.
    """
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    codes: list[Opcode] = []
    _emit(codes, ("equal", 0, head, 0, head))
    for tag, i1, i2, j1, j2 in _match(old[head : len(old) - tail], new[head : len(new) - tail]):
        _emit(codes, (tag, head + i1, head + i2, head + j1, head + j2))
    _emit(codes, ("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    yield from _group(codes, context)


_DIRECT_MATCH = 1_000_000
"""Above this many line pairs, split at lines unique to both sides first (patience diff)."""
_GIVE_UP_MATCH = 25_000_000
"""Above this many pairs with no unique common line, write one replace block (still a valid patch)."""


def _emit(codes: list[Opcode], code: Opcode) -> None:
    tag, i1, i2, j1, j2 = code
    if i1 == i2 and j1 == j2:
        return
    if codes and codes[-1][0] == tag == "equal":
        prev = codes.pop()
        code = ("equal", prev[1], i2, prev[3], j2)
    codes.append(code)


def _match(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    """Opcodes turning ``old`` into ``new``; near-linear for large inputs made of unique lines."""
    pairs = len(old) * len(new)
    if pairs <= _DIRECT_MATCH:
        return _difflib(old, new)
    anchors = _unique_common(old, new)
    if not anchors:
        if pairs > _GIVE_UP_MATCH:
            return [("replace", 0, len(old), 0, len(new))]
        return _difflib(old, new)
    codes: list[Opcode] = []
    i0 = j0 = 0
    for i, j in [*anchors, (len(old), len(new))]:
        for tag, a1, a2, b1, b2 in _match(old[i0:i], new[j0:j]):
            _emit(codes, (tag, i0 + a1, i0 + a2, j0 + b1, j0 + b2))
        _emit(codes, ("equal", i, min(i + 1, len(old)), j, min(j + 1, len(new))))
        i0, j0 = i + 1, j + 1
    return codes


def _difflib(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    codes: list[Opcode] = []
    codes.extend(SequenceMatcher(None, old, new).get_opcodes())
    return codes


def _unique_common(old: Sequence[str], new: Sequence[str]) -> list[tuple[int, int]]:
    """The longest increasing chain of (i, j) with old[i] == new[j] unique on both sides."""
    old_count, new_count = Counter(old), Counter(new)
    where = {line: j for j, line in enumerate(new) if new_count[line] == 1}
    pairs = [(i, where[line]) for i, line in enumerate(old) if old_count[line] == 1 and line in where]
    tails: list[int] = []  # patience sorting on j
    tail_index: list[int] = []
    back = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_index.append(k)
        else:
            tails[pos] = j
            tail_index[pos] = k
        back[k] = tail_index[pos - 1] if pos else -1
    chain: list[tuple[int, int]] = []
    k = tail_index[-1] if tail_index else -1
    while k != -1:
        chain.append(pairs[k])
        k = back[k]
    return chain[::-1]


def _group(codes: list[Opcode], n: int) -> Iterator[list[Opcode]]:
    """Split opcodes into hunks with ``n`` lines of context (difflib.get_grouped_opcodes's rule)."""
    if not codes:
        return
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _split_lines(text: str) -> list[str]:
    # Only "\n" separates lines for git; str.splitlines would also split on \f, \x1c, \u2028...
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _hunk_lines(prefix: str, lines: list[str]) -> Iterator[str]:
    for line in lines:
        if line.endswith("\n"):
            yield prefix + line
        else:
            yield f"{prefix}{line}\n{_NO_NEWLINE}\n"


def _format_range(start: int, stop: int) -> str:
    # Same convention as difflib / GNU diff: a one-line range omits its length, an empty range
    # names the line before it.
    beginning, length = start + 1, stop - start
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _blob_sha(text: str) -> str:
    data = text.encode("utf-8", "surrogateescape")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()[:7]


_C_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n"}
_C_ESCAPES |= {"\v": "\\v", "\f": "\\f", "\r": "\\r"}


def _quote(name: str) -> str:
    """Quote a path the way git does (core.quotePath): C escapes and octal bytes for non-ASCII."""
    if all(0x20 <= ord(ch) < 0x7F and ch not in '"\\' for ch in name):
        return name
    out = []
    for ch in name:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif 0x20 <= ord(ch) < 0x7F:
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8", "surrogateescape"))
    return '"' + "".join(out) + '"'


def _unquote(name: str) -> str:
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    body, raw, i = name[1:-1], bytearray(), 0
    simple = {v[1]: k for k, v in _C_ESCAPES.items()}
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
                raw.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            raw.extend(simple.get(nxt, nxt).encode())
            i += 2
            continue
        raw.extend(ch.encode("utf-8"))
        i += 1
    return raw.decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

LineKind = Literal[" ", "-", "+"]


@dataclass(frozen=True, slots=True)
class HunkLine:
    """One line of a hunk. ``old_line``/``new_line`` are 0 on the side the line is absent from."""

    kind: LineKind
    text: str
    """Without the prefix and without the line terminator."""
    old_line: int
    new_line: int


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` block."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[HunkLine, ...]


FileStatus = Literal["added", "deleted", "modified", "renamed"]


@dataclass(frozen=True, slots=True)
class FilePatch:
    """The part of a patch about one file. ``old_path`` is None for a new file, ``new_path`` for a deleted one."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False

    @property
    def path(self) -> str:
        """The path after the change (before it, for a deleted file)."""
        return self.new_path or self.old_path or ""

    @property
    def status(self) -> FileStatus:
        """``added``, ``deleted``, ``renamed`` or ``modified``."""
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "deleted"
        if self.old_path != self.new_path:
            return "renamed"
        return "modified"

    def lines(self, kind: LineKind) -> Iterator[HunkLine]:
        """All hunk lines of one kind, in order."""
        for hunk in self.hunks:
            for line in hunk.lines:
                if line.kind == kind:
                    yield line


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class _Pending:
    old_path: str | None = None
    new_path: str | None = None
    is_new: bool = False
    is_deleted: bool = False
    binary: bool = False
    hunks: list[Hunk] | None = None

    def finish(self) -> FilePatch:
        old = None if self.is_new else self.old_path
        new = None if self.is_deleted else self.new_path
        if old is None and new is None:  # defensive: keep a name for malformed headers
            new = self.new_path or self.old_path
        return FilePatch(old_path=old, new_path=new, hunks=tuple(self.hunks or ()), binary=self.binary)


def parse_patch(diff: str) -> tuple[FilePatch, ...]:
    """Parse a (git-style or plain) unified diff into per-file patches, in order of appearance.

    Understands ``diff --git`` headers, new/deleted file modes, renames, quoted names,
    ``/dev/null``, binary markers and ``\\ No newline at end of file``. Unknown lines between
    files are ignored, so ``git format-patch`` mail text parses too.
    """
    patches: list[FilePatch] = []
    current: _Pending | None = None
    # Only "\n" ends a line: content may hold \f, \x1c or \u2028, which str.splitlines would split on.
    lines = [line.removesuffix("\r") for line in diff.split("\n")]
    if lines and not lines[-1]:
        lines.pop()
    i = 0

    def flush() -> None:
        nonlocal current
        if current is not None:
            patches.append(current.finish())
        current = None

    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            flush()
            current = _Pending()
            names = _split_git_names(line[len("diff --git ") :])
            if names:
                current.old_path, current.new_path = names
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if current is None or current.hunks is not None:
                flush()
                current = _Pending()
            old, new = _header_name(line[4:]), _header_name(lines[i + 1][4:])
            current.is_new = current.is_new or old is None
            current.is_deleted = current.is_deleted or new is None
            current.old_path = old if old is not None else current.old_path or new
            current.new_path = new if new is not None else current.new_path or old
            current.hunks = []
            i += 1
        elif current is not None and (m := _HUNK_HEADER.match(line)):
            if current.hunks is None:
                current.hunks = []
            hunk, i = _parse_hunk(lines, i, m)
            current.hunks.append(hunk)
            continue
        elif current is not None:
            _parse_extended_header(current, line)
        i += 1
    flush()
    return tuple(patches)


def _parse_extended_header(current: _Pending, line: str) -> None:
    if line.startswith("new file mode"):
        current.is_new = True
    elif line.startswith("deleted file mode"):
        current.is_deleted = True
    elif line.startswith("rename from "):
        current.old_path = _unquote(line[len("rename from ") :])
    elif line.startswith("rename to "):
        current.new_path = _unquote(line[len("rename to ") :])
    elif line.startswith("Binary files ") or line == "GIT binary patch":
        current.binary = True


def _parse_hunk(lines: list[str], i: int, m: re.Match[str]) -> tuple[Hunk, int]:
    old_start, new_start = int(m.group(1)), int(m.group(3))
    old_len = int(m.group(2)) if m.group(2) is not None else 1
    new_len = int(m.group(4)) if m.group(4) is not None else 1
    old_no, new_no = old_start if old_len else old_start + 1, new_start if new_len else new_start + 1
    old_left, new_left = old_len, new_len
    body: list[HunkLine] = []
    i += 1
    while i < len(lines) and (old_left > 0 or new_left > 0):
        raw = lines[i]
        tag, text = (raw[0], raw[1:]) if raw else (" ", "")  # some tools strip blank context lines
        if tag == "\\":
            i += 1
            continue
        if tag == " " and old_left > 0 and new_left > 0:
            body.append(HunkLine(" ", text, old_no, new_no))
            old_no, new_no, old_left, new_left = old_no + 1, new_no + 1, old_left - 1, new_left - 1
        elif tag == "-" and old_left > 0:
            body.append(HunkLine("-", text, old_no, 0))
            old_no, old_left = old_no + 1, old_left - 1
        elif tag == "+" and new_left > 0:
            body.append(HunkLine("+", text, 0, new_no))
            new_no, new_left = new_no + 1, new_left - 1
        else:
            break  # malformed or truncated hunk: keep what was read
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    return Hunk(old_start, old_len, new_start, new_len, tuple(body)), i


def _header_name(field: str) -> str | None:
    # Unquoted: drop "\t" + timestamp (GNU diff) or git's marker for names with spaces.
    name = _unquote(field[: _closing_quote(field) + 1]) if field.startswith('"') else field.split("\t", 1)[0]
    if name == "/dev/null":
        return None
    return _strip_prefix(name)


def _strip_prefix(name: str) -> str:
    return name[2:] if name[:2] in ("a/", "b/") else name


def _closing_quote(text: str) -> int:
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return len(text) - 1


def _split_git_names(rest: str) -> tuple[str, str] | None:
    if rest.startswith('"'):
        end = _closing_quote(rest)
        old = _unquote(rest[: end + 1])
        new_field = rest[end + 1 :].strip()
        new = _unquote(new_field) if new_field.startswith('"') else new_field
        return _strip_prefix(old), _strip_prefix(new)
    if rest.endswith('"') and ' "' in rest:
        cut = rest.index(' "')
        return _strip_prefix(rest[:cut]), _strip_prefix(_unquote(rest[cut + 1 :]))
    # Unquoted names may contain spaces; git's own rule: both halves are equal for non-renames.
    half = len(rest) // 2
    if rest[half : half + 1] == " " and _strip_prefix(rest[:half]) == _strip_prefix(rest[half + 1 :]):
        return _strip_prefix(rest[:half]), _strip_prefix(rest[half + 1 :])
    parts = rest.split(" b/", 1)
    if len(parts) == 2:
        return _strip_prefix(parts[0]), parts[1]
    return None


# ---------------------------------------------------------------------------------------------
# Stats and normalization
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiffStats:
    """Size of a patch."""

    files: int
    added: int
    removed: int

    @property
    def lines(self) -> int:
        """Changed lines (added + removed)."""
        return self.added + self.removed


def diff_stats(diff: str) -> DiffStats:
    """Files touched and lines added/removed by ``diff``."""
    patches = parse_patch(diff)
    added = sum(1 for p in patches for _ in p.lines("+"))
    removed = sum(1 for p in patches for _ in p.lines("-"))
    return DiffStats(files=len(patches), added=added, removed=removed)


# Files whose indentation carries meaning: there, re-indenting a line is a real change.
_INDENT_SENSITIVE = re.compile(r"(\.(py|pyi|pyx|yml|yaml|nim|coffee|haml|slim|pug|sass|mk)|(^|/)Makefile)$")
_SPACE_RUN = re.compile(r"\s+")
_SPACE_AT_PUNCT = re.compile(r" ?([^\w ]) ?")


def _normalize_line(text: str, *, keep_indent: bool) -> str:
    body = text.strip()
    if not body:
        return ""
    body = _SPACE_AT_PUNCT.sub(r"\1", _SPACE_RUN.sub(" ", body))
    if keep_indent:
        indent = len(text.expandtabs(8)) - len(text.expandtabs(8).lstrip())
        return f"{indent}|{body}"
    return body


def normalize_patch(diff: str) -> str:
    """A canonical text of what ``diff`` changes, for comparing proposals.

    Context lines, hunk boundaries, line numbers of the new side and whitespace-only changes are
    dropped: blank lines, trailing spaces, runs of spaces and spaces next to punctuation do not
    count. Indentation still counts in indentation-sensitive files (Python, YAML, Makefiles).
    Each remaining change is anchored at its line in the *base* file, which every proposal
    shares, so the same edit made at two different places does not collapse.
    """
    blocks: list[str] = []
    for patch in sorted(parse_patch(diff), key=lambda p: (p.path, p.old_path or "")):
        keep_indent = bool(_INDENT_SENSITIVE.search(patch.path))
        if patch.status == "deleted":
            blocks.append(f"deleted {patch.old_path}\n")
            continue
        head = {
            "added": f"new {patch.new_path}\n",
            "renamed": f"renamed {patch.old_path} -> {patch.new_path}\n",
            "modified": f"modified {patch.new_path}\n",
        }[patch.status]
        body = "".join(_normalized_changes(patch, keep_indent=keep_indent))
        if body or patch.status != "modified":
            blocks.append(head + body)
    return "".join(blocks)


def _normalized_changes(patch: FilePatch, *, keep_indent: bool) -> Iterator[str]:
    for hunk in patch.hunks:
        old_no = hunk.old_start if hunk.old_len else hunk.old_start + 1
        run_start = old_no
        removed: list[str] = []
        added: list[str] = []
        for line in (*hunk.lines, HunkLine(" ", "", 0, 0)):  # sentinel closes the last run
            if line.kind == " ":
                if removed or added:
                    yield from _normalized_run(run_start, removed, added, keep_indent=keep_indent)
                    removed, added = [], []
                old_no = line.old_line + 1
                run_start = old_no
            elif line.kind == "-":
                if not removed and not added:
                    run_start = line.old_line
                removed.append(line.text)
            else:
                if not removed and not added:
                    run_start = old_no
                added.append(line.text)


def _normalized_run(start: int, removed: list[str], added: list[str], *, keep_indent: bool) -> Iterator[str]:
    old = [_normalize_line(t, keep_indent=keep_indent) for t in removed]
    new = [_normalize_line(t, keep_indent=keep_indent) for t in added]
    old_kept = [(k, t) for k, t in enumerate(old) if t]
    new_kept = [t for t in new if t]
    for tag, i1, i2, j1, j2 in _match([t for _, t in old_kept], new_kept):
        if tag == "equal":
            continue
        anchor = start + (old_kept[i1][0] if i1 < len(old_kept) else len(old))
        yield f"@{anchor}\n"
        yield from (f"-{t}\n" for _, t in old_kept[i1:i2])
        yield from (f"+{t}\n" for t in new_kept[j1:j2])


def patch_key(diff: str) -> str:
    """A short stable hash of :func:`normalize_patch` (16 hex digits): equal for equivalent patches."""
    return hashlib.sha256(normalize_patch(diff).encode("utf-8", "surrogateescape")).hexdigest()[:16]
