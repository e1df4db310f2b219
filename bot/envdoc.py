"""The environment reference, rendered from :class:`bot.settings.Settings` (one source of truth).

``python -m bot.envdoc --write docs/deploy.md`` rewrites the table between the two marker lines of
that file; ``--check`` exits 1 when it is out of date (``tests/deploy`` runs the same comparison).
Each row comes from a field: its variable (``ARCS_<NAME>``, or the Anthropic SDK's own name), its
default and its attribute docstring in ``bot/settings.py``.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic_core import PydanticUndefined

BEGIN_MARKER = (
    "<!-- BEGIN envdoc: generated from bot/settings.py by `python -m bot.envdoc --write docs/deploy.md` -->"
)
END_MARKER = "<!-- END envdoc -->"

FALLBACK_MEANINGS: Mapping[str, str] = {
    "qdrant_api_key": "API key of the Qdrant server (`ARCS_QDRANT_URL`).",
    "log_format": "`json`, `console`, or `auto` (console on a terminal, JSON otherwise).",
    "log_level": "Log level (`DEBUG`, `INFO`, `WARNING`, `ERROR`).",
    "webhook_secret": "The GitHub App's webhook secret; without it every delivery is refused (503).",
    "app_id": "The GitHub App's id.",
    "private_key_path": "The GitHub App's private key, a PEM file (or give its text in `ARCS_PRIVATE_KEY`).",
    "private_key": "The GitHub App's private key as PEM text (or a file: `ARCS_PRIVATE_KEY_PATH`).",
}
"""Meanings of the fields whose declaration in ``bot/settings.py`` has no docstring yet."""

_LONG_DEFAULT = 4


def field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Attribute docstrings of ``model`` (the string literal right after each annotated field)."""
    tree = ast.parse(inspect.getsource(model))
    docs: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or node.name != model.__name__:
            continue
        body = node.body
        for current, following in itertools.pairwise(body):
            if (
                isinstance(current, ast.AnnAssign)
                and isinstance(current.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[current.target.id] = following.value.value
        break
    return docs


def env_names(field: str, unprefixed: Mapping[str, str]) -> list[str]:
    """The variables that set ``field``: the SDK name first where there is one, then ``ARCS_<NAME>``."""
    prefixed = f"ARCS_{field.upper()}"
    return [unprefixed[field], prefixed] if field in unprefixed else [prefixed]


def _markdown(text: str) -> str:
    # reST literals to Markdown, one line, and no bare pipe that would split a table cell.
    one_line = " ".join(text.split())
    return re.sub(r"``(.+?)``", r"`\1`", one_line).replace("|", "\\|")


def _home_relative(value: str) -> str:
    home = str(Path.home())
    return "~" + value[len(home) :] if value == home or value.startswith(home + "/") else value


def render_default(value: Any) -> str:
    """A default as a table cell: ``unset`` for None, long tuples shortened, the home folder as ``~``."""
    if value is None or isinstance(value, SecretStr):
        return "unset"
    if isinstance(value, tuple | list):
        items = [f"`{item}`" for item in value]
        if len(items) > _LONG_DEFAULT:
            return ", ".join(items[:3]) + f", … ({len(items)} patterns)"
        return ", ".join(items) if items else "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        return f"`{_home_relative(str(value))}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{value:g}`"
    return f"`{value}`"


def field_default(model: type[BaseModel], name: str) -> Any:
    """The default of field ``name`` (its factory called where it has one)."""
    info = model.model_fields[name]
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return None if info.default is PydanticUndefined else info.default


def render_env_table(
    model: type[BaseModel] | None = None, unprefixed: Mapping[str, str] | None = None
) -> str:
    """The Markdown table ``| variable | default | meaning |`` of every field of ``model``.

    Raises ``ValueError`` naming the fields that have neither a docstring nor a fallback meaning.
    """
    from bot import settings as settings_module

    model = model or settings_module.Settings
    unprefixed = settings_module._UNPREFIXED if unprefixed is None else unprefixed
    docs = field_docstrings(model)
    missing = [name for name in model.model_fields if name not in docs and name not in FALLBACK_MEANINGS]
    if missing:
        raise ValueError(f"settings without a docstring: {', '.join(missing)} (add one in bot/settings.py)")
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name in model.model_fields:
        variables = " / ".join(f"`{var}`" for var in env_names(name, unprefixed))
        meaning = _markdown(docs.get(name) or FALLBACK_MEANINGS[name])
        rows.append(f"| {variables} | {render_default(field_default(model, name))} | {meaning} |")
    return "\n".join(rows) + "\n"


def replace_block(text: str, table: str) -> str:
    """``text`` with the lines between the markers replaced by ``table``; ``ValueError`` without markers."""
    begin = text.find(BEGIN_MARKER)
    end = text.find(END_MARKER)
    if begin < 0 or end < begin:
        raise ValueError(f"the markers {BEGIN_MARKER!r} and {END_MARKER!r} are missing or out of order")
    head = text[: begin + len(BEGIN_MARKER)]
    return f"{head}\n{table}{text[end:]}"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bot.envdoc [--write FILE | --check FILE]``; without options, print the table."""
    args = list(sys.argv[1:] if argv is None else argv)
    table = render_env_table()
    if not args:
        sys.stdout.write(table)
        return 0
    if len(args) != 2 or args[0] not in ("--write", "--check"):
        sys.stderr.write("usage: python -m bot.envdoc [--write FILE | --check FILE]\n")
        return 2
    path = Path(args[1])
    current = path.read_text(encoding="utf-8")
    wanted = replace_block(current, table)
    if args[0] == "--check":
        if wanted != current:
            sys.stderr.write(
                f"{path}: the environment table is out of date; run python -m bot.envdoc --write {path}\n"
            )
            return 1
        return 0
    if wanted != current:
        path.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
