"""Text helpers for titles and excerpts."""

import re

_NON_WORD = re.compile(r"[^a-z0-9]+")


def slugify(title: str) -> str:
    """'Hello, World!' -> 'hello-world'."""
    return _NON_WORD.sub("-", title.lower()).strip("-")


def truncate_words(text: str, limit: int) -> str:
    words = text.split()
    if len(words) <= limit:
        return text
    return " ".join(words[:limit]) + " ..."
