"""The published JSON schema of ``.arcs.yml``, generated from :class:`jobs.config_model.ArcsConfig`.

``python -m bot.config_schema --write`` rewrites ``docs/arcs.schema.json``; ``--check`` exits 1
when the committed file is out of date (``tests/jobs/test_config_schema.py`` runs the same
comparison); ``--catalog`` prints the entry for SchemaStore's ``catalog.json`` (the file names
editors should validate with it). Draft 2020-12; the ``$id`` is the address SchemaStore gives a
schema it hosts, so the file can be submitted as is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jobs.config import CONFIG_NAMES
from jobs.config_model import ArcsConfig

__all__ = ["CATALOG_ENTRY", "SCHEMA_PATH", "SCHEMA_URL", "main", "render", "schema"]

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "docs" / "arcs.schema.json"
SCHEMA_URL = "https://json.schemastore.org/arcs.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

CATALOG_ENTRY: dict[str, Any] = {
    "name": "ARCS",
    "description": "ARCS repository configuration (the bot that repairs failing CI and labelled issues)",
    "fileMatch": [f"**/{name}" for name in CONFIG_NAMES],
    "url": SCHEMA_URL,
}
"""What SchemaStore's ``catalog.json`` lists for this schema: the files editors check with it."""


_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


def _canonical(node: Any) -> Any:
    """One spelling whatever pydantic version wrote ``node`` (CI also runs the lowest allowed one):
    a ``$ref`` beside other keywords rather than wrapped in a one-item ``allOf`` (pydantic < 2.9),
    and integral bounds as integers (``0``, not ``0.0``). Both spellings mean the same in 2020-12."""
    if isinstance(node, list):
        return [_canonical(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _canonical(value) for key, value in node.items()}
    wrapped = out.get("allOf")
    if isinstance(wrapped, list) and len(wrapped) == 1 and set(wrapped[0]) == {"$ref"} and "$ref" not in out:
        out = {"$ref": wrapped[0]["$ref"], **{k: v for k, v in out.items() if k != "allOf"}}
    for key in _BOUNDS & out.keys():
        if isinstance(out[key], float) and out[key].is_integer():
            out[key] = int(out[key])
    return out


def schema() -> dict[str, Any]:
    """The JSON schema of ``.arcs.yml``: the model's own, with the dialect and ``$id`` first."""
    generated = _canonical(ArcsConfig.model_json_schema(mode="validation"))
    return {"$schema": DIALECT, "$id": SCHEMA_URL, **generated}


def render() -> str:
    """The text of ``docs/arcs.schema.json`` (stable: two-space indent, a final newline)."""
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``--write`` the schema file, ``--check`` it (exit 1 when stale), ``--catalog``, or print it."""
    args = list(sys.argv[1:] if argv is None else argv)
    text = render()
    if args == ["--write"]:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        return 0
    if args == ["--check"]:
        current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.is_file() else ""
        if current != text:
            sys.stderr.write(
                f"{SCHEMA_PATH.name} is out of date: run `python -m bot.config_schema --write`\n"
            )
            return 1
        return 0
    if args == ["--catalog"]:
        sys.stdout.write(json.dumps(CATALOG_ENTRY, indent=2) + "\n")
        return 0
    if args:
        sys.stderr.write("usage: python -m bot.config_schema [--write | --check | --catalog]\n")
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
