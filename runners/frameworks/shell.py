"""Shell-line helpers shared by :mod:`runners.commands`, :mod:`runners.failfast` and the rows'
test selection: the last simple command of a line, whether flags can be appended to it, quoting."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

NPM_TEST = re.compile(r"^npm\s+(?:run\s+)?test(?=\s|$)")
"""``npm test`` / ``npm run test`` at the start of a simple command."""


def unquoted(text: str) -> list[tuple[int, str]]:
    """(index, char) of the characters of ``text`` outside single/double quotes."""
    out: list[tuple[int, str]] = []
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
            continue
        if ch == "\\" and quote != "'":
            escaped = True
            continue
        if quote is not None:
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
            continue
        out.append((i, ch))
    return out


def last_segment(command: str) -> str:
    """The last simple command of a shell line (after the last unquoted ``&&``, ``||``, ``;`` or newline)."""
    text = command.strip()
    chars = unquoted(text)
    cut = 0
    for k, (i, ch) in enumerate(chars):
        nxt = chars[k + 1] if k + 1 < len(chars) else None
        if ch in ";\n":
            cut = i + 1
        elif ch in "&|" and nxt is not None and nxt[1] == ch and nxt[0] == i + 1:
            cut = i + 2
    return text[cut:].strip()


def plain(segment: str) -> bool:
    # Appending flags is only safe when nothing after the command would receive them instead
    # (no unquoted pipe, redirection, background job or command substitution).
    chars = unquoted(segment)
    if any(ch in "|<>&`" for _, ch in chars):
        return False
    return not any(ch == "$" and segment[i + 1 : i + 2] == "(" for i, ch in chars)


def regex_escape(text: str) -> str:
    # Escape only regex metacharacters: JS (jest -t) and RE2 (go -run) both accept these escapes.
    return re.sub(r"([.*+?^${}()|\[\]\\/])", r"\\\1", text)


def quote_all(args: Iterable[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def split_last(command: str) -> tuple[str, str]:
    """(everything before the last shell segment, the last segment)."""
    last = last_segment(command)
    head = command.rstrip()[: len(command.rstrip()) - len(last)]
    return head, last


def append_to_last(command: str, extra: str) -> str:
    """``command`` with ``extra`` appended (to its last simple command)."""
    return command.rstrip() + " " + extra


__all__ = [
    "NPM_TEST",
    "append_to_last",
    "last_segment",
    "plain",
    "quote_all",
    "regex_escape",
    "split_last",
    "unquoted",
]
