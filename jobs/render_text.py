"""Text helpers of ARCS' GitHub messages (pure): untrusted text defused, cut to a limit, fenced.

:mod:`jobs.render` re-exports them; :mod:`jobs.render_change` and :mod:`jobs.revert_pr` use them
without importing the renderers.
"""

from __future__ import annotations

import re

__all__ = ["TRUNCATED", "defuse", "fenced", "one_line", "truncate"]

TRUNCATED = "\n\n… (truncated)"


_MENTION = re.compile(r"(?<![\w`])@(?=[A-Za-z0-9])")


def defuse(text: str) -> str:
    """Untrusted text made safe for Markdown outside code: no @mention pings, no HTML comments
    (which could forge ARCS' markers) or tags."""
    text = _MENTION.sub("@\u2060", text)
    return text.replace("<!--", "&lt;!--").replace("-->", "--&gt;").replace("<", "&lt;")


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def truncate(text: str, limit: int, *, note: str = TRUNCATED) -> str:
    """``text`` cut to at most ``limit`` characters, ending with ``note`` when cut."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(note))
    return text[:keep] + note[: max(0, limit - keep)]


def fenced(text: str, lang: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{lang}\n{body}{fence}"
