"""Text a reader of rendered GitHub Markdown cannot see, found before a prompt reads it.

A maintainer approves a repair by reading the *rendered* issue; the model reads its Markdown
source. Whatever the source holds that the page does not show is where a hidden instruction
hides. :func:`reveal` returns the source with each such construct removed or marked:

* image alt text and titles (``![alt](url "title")``, ``<img alt=…>``): the image becomes
  ``(image)`` — the picture is visible, its alt text is not;
* link titles (``[text](url "title")``): dropped, the text and the address stay; a link with no
  text at all (``[](url)``) shows nothing and is dropped whole;
* every HTML attribute (``title``, ``alt``, ``data-*``, ``aria-*``, ``href``…): a tag keeps its
  name only; a tag whose quoted attribute never ends swallows the rest of the page on GitHub, so
  from there the text is removed with a marker;
* the contents of ``<script>``, ``<style>``, ``<template>``… and processing instructions,
  declarations and CDATA sections: removed (GitHub drops them);
* collapsed ``<details>``: kept but marked (:data:`COLLAPSED`… :data:`COLLAPSED_END`). Bug
  reports put their tracebacks and logs there, the most useful text of the issue, and a reader
  sees the summary and can expand it in one click; the model is told the part was folded;
* numeric or named entities of invisible characters (``&#8203;``): removed;
* formulas that hide their text (``$\\color{white}{…}$``, ``\\phantom``): replaced by a marker.

Fenced code blocks and inline code spans show their text literally, so they are kept as they
are. Wherever this module's reading of the Markdown could differ from GitHub's, it errs towards
treating text as rendered (stripped): a fence only counts after a blank line, outside raw HTML
blocks and while its lines keep its indentation; a code span never spans lines and never
starts inside a raw HTML block. Losing an attribute of a visible example costs little; keeping
a hidden instruction is the failure this module exists to prevent. Every construct is bounded
(:data:`MAX_TAG_CHARS`, :data:`MAX_LITERAL_TAGS`) so one pass stays linear on hostile input.

Longer than 500 lines on purpose: it is one reader of one grammar (blocks, then inline text in
one left-to-right pass), whose parts only make sense together.
"""

from __future__ import annotations

import bisect
import html
import re
import unicodedata

IMAGE = "(image)"
COLLAPSED = "(collapsed in the issue: hidden until a reader expands it)"
COLLAPSED_END = "(end of the collapsed part)"
UNTERMINATED = "(the rest is hidden in the issue by an unterminated HTML tag and was removed)"
HIDDEN_FORMULA = "(a formula that hides its text was removed)"

# Zero-width and invisible formatting characters, and the bidi controls behind "Trojan Source".
_INVISIBLE = {
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e",
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
    "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c",
}  # fmt: skip
# Elements GitHub removes together with their content.
_DROPPED_WITH_CONTENT = frozenset(
    {"script", "style", "template", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
     "noscript", "object", "svg", "math"}
)  # fmt: skip
_IMAGES = frozenset({"img", "image"})
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_BLANK = re.compile(r"\n[ \t]*\n")
# A line that opens a raw HTML block: optional container markers, then "<" and a tag-ish start.
_RAW_LINE = re.compile(r"^(?:[ \t]*(?:>|(?:[-*+]|\d{1,9}[.)])(?=[ \t]|$)))*[ \t]*<([A-Za-z/?!])")
_RAW_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"<(?:pre|script|style|textarea)(?:[\s>]|$)", re.IGNORECASE),
        r"</(?:pre|script|style|textarea)>",
    ),
    (re.compile(r"<\?"), r"\?>"),
    (re.compile(r"<!\[CDATA\["), r"\]\]>"),
    (re.compile(r"<![A-Za-z]"), r">"),
)
_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*|[\w.!#$%&'*+/=?^`{|}~-]+@[\w.-]+)>")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_HIDING_MATH = re.compile(
    r"\\(?:[hv]?phantom|(?:text|math)?color|f?colorbox|pagecolor|style|class|cssId)(?![A-Za-z])"
)
_TAG_NAME = re.compile(r"[^\s/>]*")
_ANGLE_DEST = re.compile(r"(?:[^<>\n\\]|\\.)*>")
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def visible_char(ch: str) -> bool:
    """Whether ``ch`` shows as something (format, control and variation characters do not)."""
    if ch in "\n\t":
        return True
    if ch in _INVISIBLE or unicodedata.category(ch) in ("Cf", "Cc"):
        return False
    # Variation selectors have no glyph of their own and can smuggle bytes after any character.
    return not ("\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef")


def reveal(text: str) -> str:
    """``text`` (GitHub Markdown) with what its rendering hides removed or marked (see the module
    docstring). Idempotent: revealing the result again changes nothing."""
    return _reveal(text, [])


def _reveal(text: str, details: list[bool]) -> str:
    out: list[str] = []
    pos = 0
    for code, part in _blocks(text):
        if code:
            out.append(_fenced(part))
            pos += len(part)
            continue
        scanner = _Scanner(part, details)
        out.append(scanner.scan(0, len(part)))
        pos += len(part)
        if scanner.stop is None:
            continue
        if scanner.stop == "":
            break  # the rest is inside an unterminated tag
        # An element GitHub drops with its content is still open: it swallows what follows,
        # fenced code included, up to its closing tag.
        rest = text[pos:]
        closer = re.compile(rf"</{re.escape(scanner.stop)}(?=[\s/>])[^>]*>?", re.IGNORECASE).search(rest)
        if closer is None:
            out.append(UNTERMINATED)
            break
        out.append(_reveal(rest[closer.end() :], details))
        break
    return "".join(out)


# --- blocks: fenced code (shown literally) and the rest ------------------------------------------


def _raw_end(lines: list[str], k: int) -> int:
    """The index of the last line of the raw HTML block starting at line ``k``."""
    line = lines[k]
    for start, end in _RAW_KINDS:
        m = start.search(line)
        if m is not None and _RAW_LINE.fullmatch(line[: m.start() + 2]):
            closer = re.compile(end, re.IGNORECASE)
            for j in range(k, len(lines)):
                if closer.search(lines[j], m.end() if j == k else 0):
                    return j
            return len(lines) - 1
    j = k
    while j + 1 < len(lines) and lines[j + 1].strip():
        j += 1
    return j


def _blocks(text: str) -> list[tuple[bool, str]]:
    """``text`` split into (is fenced code, part); the parts concatenate to ``text``."""
    lines = text.split("\n")
    parts: list[tuple[bool, list[str]]] = []

    def add(code: bool, line: str) -> None:
        if parts and parts[-1][0] == code:
            parts[-1][1].append(line)
        else:
            parts.append((code, [line]))

    k = 0
    previous_blank = True
    while k < len(lines):
        line = lines[k]
        if _RAW_LINE.match(line):
            end = _raw_end(lines, k)
            for j in range(k, end + 1):
                add(False, lines[j])
            previous_blank = not lines[end].strip()
            k = end + 1
            continue
        fence = _FENCE_OPEN.match(line)
        if fence is None or not previous_blank or (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            add(False, line)
            previous_blank = not line.strip()
            k += 1
            continue
        indent, marker = len(fence.group(1)), fence.group(2)
        closer = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
        block = [line]
        k += 1
        while k < len(lines):
            body = lines[k]
            if body.strip() and len(body) - len(body.lstrip(" ")) < indent:
                break  # a list item ended: so did its fence
            block.append(body)
            k += 1
            if closer.match(body):
                break
        for body in block:
            add(True, body)
        previous_blank = True
    out: list[tuple[bool, str]] = []
    for i, (code, group) in enumerate(parts):
        joined = "\n".join(group)
        out.append((code, joined + ("\n" if i + 1 < len(parts) else "")))
    return out


def _fenced(block: str) -> str:
    """A fenced code block as it is, except a ``math`` block that hides its text."""
    first = block.split("\n", 1)[0].strip().lstrip("`~").strip().lower()
    if first.startswith("math") and _HIDING_MATH.search(block):
        return HIDDEN_FORMULA + ("\n" if block.endswith("\n") else "")
    return block


# --- inline: tags, images, links, entities, formulas ---------------------------------------------

MAX_TAG_CHARS = 4_000
"""A tag, a link destination or a link title longer than this is taken as never ending (the rest
is removed): real ones are short, and the bound keeps one pass linear on hostile input."""
MAX_LITERAL_TAGS = 256
"""Unterminated ``<name…`` in running text show as text on GitHub; after this many the rest of
the text is taken as hidden (bounds the work; no real issue has so many)."""


class _Scanner:
    """One left-to-right pass over rendered (non-code) Markdown, as CommonMark reads inline text:
    whichever construct starts first wins."""

    def __init__(self, text: str, details: list[bool]) -> None:
        self.text = text
        self.details = details
        """Open ``<details>`` of the whole text: True when collapsed."""
        self.stop: str | None = None
        """Why the scan ended early: '' (an unterminated tag hides the rest) or the name of an
        element dropped with its content whose closing tag is not in this part."""
        self.literal_tags = 0
        self.raw = _raw_ranges(text)
        self.runs = _backtick_runs(text)
        self.brackets: dict[int, int | None] = {}
        """``[`` position -> its ``]`` (None: unmatched), filled as brackets are walked."""

    def stopped(self) -> bool:
        """The scan ended early (see :attr:`stop`)."""
        return self.stop is not None

    def _in_raw(self, i: int) -> bool:
        k = bisect.bisect_right(self.raw, (i, len(self.text) + 1)) - 1
        return k >= 0 and self.raw[k][0] <= i < self.raw[k][1]

    def scan(self, start: int, end: int) -> str:
        """The revealed text of ``self.text[start:end]``."""
        text, out, i = self.text, [], start
        links: list[tuple[int, str, int]] = []
        """Open links, innermost last: (their ``]``, what replaces ``](…)``, where to go on)."""
        while i < end and self.stop is None:
            if links and i >= links[-1][0]:
                _, suffix, i = links.pop()
                out.append(suffix)
                continue
            bound = links[-1][0] if links else end
            ch = text[i]
            step: tuple[str, int] | None = None
            if ch == "\\" and i + 1 < bound and text[i + 1] in _PUNCT:
                step = (text[i : i + 2], i + 2)
            elif ch == "`":
                step = self._code(i, bound)
            elif ch == "<":
                step = self._html(i, bound)
            elif ch == "!" and text.startswith("![", i):
                step = self._image(i, bound)
            elif ch == "[":
                link = self._link(i, bound)
                if link is not None and not text[i + 1 : link[0]].strip():
                    step = ("", link[2])  # nothing to see, nothing to hover over
                elif link is not None:
                    links.append((link[0], f"]({link[1]})", link[2]))
                    step = ("[", i + 1)
                elif self.stopped():  # a link that never ends hides the rest
                    step = (UNTERMINATED, end)
            elif ch == "&":
                step = self._entity(i)
            elif ch == "$":
                step = self._formula(i, bound)
            if step is None:
                out.append(ch)
                i += 1
            else:
                out.append(step[0])
                i = step[1]
        if self.stop is None:
            out.extend(suffix for _, suffix, _ in reversed(links))
        return "".join(out)

    # code spans ---------------------------------------------------------------------------------

    def _code(self, i: int, end: int) -> tuple[str, int]:
        """A code span starting at ``i`` (kept as it is), or its backticks as plain text."""
        text = self.text
        j = i
        while j < end and text[j] == "`":
            j += 1
        if self._in_raw(i):
            return text[i:j], j
        line = bisect.bisect_right(self.runs[0], i) - 1
        same = self.runs[1].get((line, j - i), [])
        k = bisect.bisect_left(same, j)
        if k < len(same) and same[k] + (j - i) <= end:
            close = same[k] + (j - i)
            return text[i:close], close
        return text[i:j], j

    # HTML -----------------------------------------------------------------------------------------

    def _html(self, i: int, end: int) -> tuple[str, int] | None:
        text = self.text
        auto = _AUTOLINK.match(text, i, end)
        if auto is not None:
            return auto.group(0), auto.end()
        for opener, closer in (("<!--", "-->"), ("<?", "?>"), ("<![CDATA[", "]]>")):
            if text.startswith(opener, i):
                stop = text.find(closer, i + len(opener), end)
                return ("", stop + len(closer)) if stop >= 0 else self._unterminated(end)
        if text.startswith("<!", i) and i + 2 < end and text[i + 2].isalpha():
            stop = text.find(">", i + 2, end)
            return ("", stop + 1) if stop >= 0 else self._unterminated(end)
        closing = text.startswith("</", i)
        name_at = i + 2 if closing else i + 1
        if name_at >= end or not text[name_at].isascii() or not text[name_at].isalpha():
            return None
        m = _TAG_NAME.match(text, name_at, end)
        assert m is not None  # it matches the empty string
        name = m.group(0).lower()
        close = _tag_end(text, m.end(), end)
        if close is not None and close > 0 and _BLANK.search(text, i, close):
            close = None  # a tag in running text ends within its paragraph
        if close is None or close < 0:
            # GitHub shows an unterminated tag in running text as text, but in a raw HTML block
            # the browser reads on past the block, hiding what follows.
            self.literal_tags += 1
            if not self._in_raw(i) and self.literal_tags <= MAX_LITERAL_TAGS and _text_only(text, i, end):
                return None
            return self._unterminated(end)
        if closing:
            return self._closing(name), close
        attributes = text[m.end() : close - 1]
        if name in _IMAGES:
            return IMAGE, close
        if name in _DROPPED_WITH_CONTENT:
            after = re.compile(rf"</{re.escape(name)}(?=[\s/>])", re.IGNORECASE).search(text, close, end)
            if after is None:
                self.stop = name
                return "", end
            past = _tag_end(text, after.end(), end)
            return "", past if past is not None and past > 0 else end
        if name == "details":
            collapsed = re.search(r"(?:^|[\s/])open(?:[\s/=]|$)", attributes, re.IGNORECASE) is None
            self.details.append(collapsed)
            return (COLLAPSED if collapsed else ""), close
        return f"<{name}>", close

    def _closing(self, name: str) -> str:
        if name != "details":
            return f"</{name}>"
        if not self.details:
            return ""
        return COLLAPSED_END if self.details.pop() else ""

    def _unterminated(self, end: int) -> tuple[str, int]:
        self.stop = ""
        return UNTERMINATED, end

    # images and links -----------------------------------------------------------------------------

    def _image(self, i: int, end: int) -> tuple[str, int] | None:
        close = self._bracket_end(i + 1, end)
        if close is None:
            return None
        after = close + 1
        tail = self._tail(after, end)
        if tail is not None:
            return IMAGE, tail[1]
        if after < end and self.text[after] == "[":
            label = self._bracket_end(after, end)
            if label is not None:
                return IMAGE, label + 1
        return (IMAGE, after) if self.stop is None else (UNTERMINATED, end)

    def _link(self, i: int, end: int) -> tuple[int, str, int] | None:
        """An inline link at ``i``: its ``]``, its destination, the index past its ``)``."""
        close = self._bracket_end(i, end)
        if close is None:
            return None
        tail = self._tail(close + 1, end)
        return None if tail is None else (close, tail[0], tail[1])

    def _tail(self, i: int, end: int) -> tuple[str, int] | None:
        tail = _link_tail(self.text, i, end)
        if tail is not None and tail[1] < 0:
            self.stop = ""  # a title that never ends: taken as hiding the rest
            return None
        return tail

    def _bracket_end(self, i: int, end: int) -> int | None:
        """The ``]`` matching the ``[`` at ``i``: one walk to the end of the block records every
        bracket it passes (escapes, code spans and tags skipped), so each is walked once."""
        if i in self.brackets:
            found = self.brackets[i]
            return found if found is not None and found < end else None
        text, stack, j = self.text, [i], i + 1
        while j < len(text) and stack:
            ch = text[j]
            if ch == "\\":
                j += 2
                continue
            if ch == "`":
                j = self._code(j, len(text))[1]
                continue
            if ch == "<" and j + 1 < len(text) and text[j + 1].isalpha():
                close = _tag_end(text, j + 1, len(text))
                if close is not None and close > 0 and not _BLANK.search(text, j, close):
                    j = close
                    continue
            if ch == "[":
                if j in self.brackets:  # walked before, from an outer bracket
                    inner = self.brackets[j]
                    if inner is None:
                        break
                    j = inner + 1
                    continue
                stack.append(j)
            elif ch == "]":
                self.brackets[stack.pop()] = j
            elif ch == "\n" and _BLANK.match(text, j):
                break
            j += 1
        for k in stack:
            self.brackets[k] = None
        found = self.brackets[i]
        return found if found is not None and found < end else None

    # entities and formulas ------------------------------------------------------------------------

    def _entity(self, i: int) -> tuple[str, int] | None:
        m = _ENTITY.match(self.text, i)
        if m is None:
            return None
        decoded = html.unescape(m.group(0))
        if decoded != m.group(0) and not any(visible_char(c) for c in decoded):
            return "", m.end()
        return m.group(0), m.end()

    def _formula(self, i: int, end: int) -> tuple[str, int] | None:
        text = self.text
        double = text.startswith("$$", i)
        width = 2 if double else 1
        stop = text.find("$$" if double else "$", i + width, end)
        if stop < 0 or (not double and "\n" in text[i:stop]) or _BLANK.search(text, i, stop):
            return None
        if _HIDING_MATH.search(text, i, stop):
            return HIDDEN_FORMULA, stop + width
        return None


def _text_only(text: str, i: int, end: int) -> bool:
    """A ``<`` at ``i`` that did not read as a tag stays text: no ``>`` follows it in its paragraph
    (a tag too long to read could still end at one)."""
    gt = text.find(">", i, end)
    if gt < 0:
        return True
    blank = _BLANK.search(text, i, gt)
    return blank is not None or gt - i <= MAX_TAG_CHARS


def _raw_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges of ``text`` inside raw HTML blocks (there, code spans do not exist)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    ranges: list[tuple[int, int]] = []
    k = 0
    while k < len(lines):
        if _RAW_LINE.match(lines[k]):
            last = _raw_end(lines, k)
            ranges.append((starts[k], starts[last + 1]))
            k = last + 1
        else:
            k += 1
    return ranges


def _backtick_runs(text: str) -> tuple[list[int], dict[tuple[int, int], list[int]]]:
    """Line start offsets, and the start of every backtick run by (line, run length). Inside a
    code span a backslash is literal, so any run may close one."""
    line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
    runs: dict[tuple[int, int], list[int]] = {}
    for m in re.finditer("`+", text):
        line = bisect.bisect_right(line_starts, m.start()) - 1
        runs.setdefault((line, m.end() - m.start()), []).append(m.start())
    return line_starts, runs


def _tag_end(text: str, j: int, end: int) -> int | None:
    """Past the ``>`` that ends a tag whose name ends at ``j``, read the way a browser reads
    attributes (quoted values may hold ``>``); None when ``end`` comes first, -1 when the tag
    runs past :data:`MAX_TAG_CHARS`."""
    state, limit = "before", min(end, j + MAX_TAG_CHARS)
    if text.find(">", j, limit) < 0:  # nothing can end it: no need to read it
        return None if limit == end else -1
    while j < limit:
        c = text[j]
        if state == "value":
            if c.isspace():
                j += 1
                continue
            if c in "\"'":
                stop = text.find(c, j + 1, end)
                if stop < 0:
                    return None
                if stop >= limit:
                    return -1
                j, state = stop + 1, "before"
                continue
            state = "unquoted"
        if c == ">":
            return j + 1
        if state == "unquoted":
            state = "before" if c.isspace() else state
        elif state == "name":
            if c == "=":
                state = "value"
            elif c.isspace() or c == "/":
                state = "after"
        elif state == "after" and c == "=":
            state = "value"
        elif not (c.isspace() or c == "/"):
            state = "name"
        j += 1
    return None if limit == end else -1


def _link_tail(text: str, i: int, end: int) -> tuple[str, int] | None:
    """``(destination, index past ")")`` of an inline link's ``(dest "title")`` at ``i``; the
    index is -1 when the destination or the title runs past :data:`MAX_TAG_CHARS`."""
    if i >= end or text[i] != "(":
        return None
    j = _skip_space(text, i + 1, end)
    if j < end and text[j] == "<":
        stop = _ANGLE_DEST.match(text, j + 1, end)
        if stop is None:
            return None
        dest, j = text[j : stop.end()], stop.end()
    else:
        start, depth, limit = j, 0, min(end, j + MAX_TAG_CHARS)
        while j < limit and not text[j].isspace() and ord(text[j]) >= 0x20:
            c = text[j]
            if c == "\\" and j + 1 < end:
                j += 2
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            j += 1
        if j >= limit and limit < end:
            return "", -1
        dest = text[start:j]
    after = _skip_space(text, j, end)
    if after < end and text[after] in "\"'(" and after > j:
        closer = ")" if text[after] == "(" else text[after]
        k, limit = after + 1, min(end, after + MAX_TAG_CHARS)
        while k < limit and text[k] != closer:
            k += 2 if text[k] == "\\" else 1
        if k >= limit:
            return ("", -1) if limit < end else None
        if _BLANK.search(text, after, k):
            return None
        after = _skip_space(text, k + 1, end)
    if after >= end or text[after] != ")":
        return None
    return dest, after + 1


def _skip_space(text: str, j: int, end: int) -> int:
    """Past spaces and tabs and at most one line ending."""
    newline = False
    while j < end and text[j] in " \t\n":
        if text[j] == "\n":
            if newline:
                break
            newline = True
        j += 1
    return j


__all__ = ["COLLAPSED", "COLLAPSED_END", "HIDDEN_FORMULA", "IMAGE", "UNTERMINATED", "reveal", "visible_char"]
