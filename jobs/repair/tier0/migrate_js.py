"""Tier 0: migrate JavaScript/TypeScript imports across an npm package's renamed or moved
exports (issue #27). Pure; import statements are read with regular expressions.

Only the import is rewritten, so the file's uses of the name stay as they are:

* renamed: ``import { formatError } from 'pkg'`` -> ``import { formatMessage as formatError } from
  'pkg'``; ``const { formatError } = require('pkg')`` -> ``const { formatMessage: formatError } =
  require('pkg')``;
* moved: the name leaves its ``import { … } from 'pkg'`` (the statement goes when it was the
  only one) and ``import { name } from 'pkg/sub';`` follows it;
* ``require('pkg').name`` -> ``require('pkg/sub').target``;
* a default export (``export =``) now exported by name: ``const LRU = require('lru-cache')`` ->
  ``const { LRUCache: LRU } = require('lru-cache')``; ``import LRU from 'lru-cache'`` ->
  ``import { LRUCache as LRU } from 'lru-cache'``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from jobs.repair.depupdate.apidiff import ApiChange

JS_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
MAX_FILE_CHARS = 500_000


def _es_import(module: str) -> re.Pattern[str]:
    return re.compile(r"import\s+(type\s+)?\{([^{}]*)\}\s*from\s*(['\"])" + re.escape(module) + r"\3(\s*;)?")


def _require(module: str) -> re.Pattern[str]:
    return re.compile(r"\{([^{}]*)\}\s*=\s*require\(\s*(['\"])" + re.escape(module) + r"\2\s*\)")


def _split(target: str) -> tuple[str, str]:
    """``pkg/sub.name`` -> (``pkg/sub``, ``name``)."""
    module, _, name = target.rpartition(".")
    return module, name


def _specs(body: str) -> list[str]:
    return [s.strip() for s in body.split(",") if s.strip()]


def _rewrite_es(text: str, change: ApiChange) -> tuple[str, int]:
    target_mod, target = _split(change.replacement)
    sites = 0

    def one(m: re.Match[str]) -> str:
        nonlocal sites
        type_kw, specs, quote, semi = m.group(1) or "", _specs(m.group(2)), m.group(3), m.group(4) or ""
        kept: list[str] = []
        moved: list[str] = []
        for spec in specs:
            prefix = "type " if spec.startswith("type ") else ""
            bare = spec.removeprefix("type ").strip()
            name, _, alias = (p.strip() for p in bare.partition(" as "))
            if name != change.name:
                kept.append(spec)
                continue
            sites += 1
            local = alias or name
            if target_mod == change.module:
                kept.append(f"{prefix}{target} as {local}" if target != local else f"{prefix}{target}")
            else:
                moved.append(f"{prefix}{target} as {local}" if target != local else f"{prefix}{target}")
        if kept == specs:
            return m.group(0)  # not this statement: left exactly as written
        if not moved:
            return f"import {type_kw}{{ {', '.join(kept)} }} from {quote}{change.module}{quote}{semi}"
        extra = f"import {type_kw}{{ {', '.join(moved)} }} from {quote}{target_mod}{quote}{semi or ';'}"
        if not kept:
            return extra
        return f"import {type_kw}{{ {', '.join(kept)} }} from {quote}{change.module}{quote}{semi or ';'}\n{extra}"

    text = _es_import(change.module).sub(one, text)
    if target_mod == change.module:

        def req(m: re.Match[str]) -> str:
            nonlocal sites
            if not any(spec.partition(":")[0].strip() == change.name for spec in _specs(m.group(1))):
                return m.group(0)
            out: list[str] = []
            for spec in _specs(m.group(1)):
                name, _, alias = (p.strip() for p in spec.partition(":"))
                if name == change.name:
                    sites += 1
                    out.append(f"{target}: {alias or name}")
                else:
                    out.append(spec)
            return f"{{ {', '.join(out)} }} = require({m.group(2)}{change.module}{m.group(2)})"

        text = _require(change.module).sub(req, text)

    def member(m: re.Match[str]) -> str:
        nonlocal sites
        sites += 1
        return f"require({m.group(1)}{target_mod}{m.group(1)}).{target}"

    # ``require('pkg').name`` (what compilers emit for a named import): module and name together
    pattern = (
        r"require\(\s*(['\"])"
        + re.escape(change.module)
        + r"\1\s*\)\."
        + re.escape(change.name)
        + r"\b(?![\w$])"
    )
    return re.sub(pattern, member, text), sites


def _rewrite_default(text: str, change: ApiChange) -> tuple[str, int]:
    target_mod, target = _split(change.replacement)
    mod = re.escape(change.module)
    sites = 0

    def es(m: re.Match[str]) -> str:
        nonlocal sites
        sites += 1
        local = m.group(1)
        spec = target if local == target else f"{target} as {local}"
        return f"import {{ {spec} }} from {m.group(2)}{target_mod}{m.group(2)}"

    def req(m: re.Match[str]) -> str:
        nonlocal sites
        sites += 1
        local = m.group(2)
        spec = target if local == target else f"{target}: {local}"
        return f"{m.group(1)} {{ {spec} }} = require({m.group(3)}{target_mod}{m.group(3)})"

    text = re.sub(r"import\s+([A-Za-z_$][\w$]*)\s+from\s*(['\"])" + mod + r"\2", es, text)
    text = re.sub(
        r"\b(const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*require\(\s*(['\"])" + mod + r"\3\s*\)", req, text
    )
    return text, sites


def migrate_js_text(text: str, changes: list[ApiChange]) -> tuple[str, int]:
    """``text`` with ``changes`` (renamed/moved exports) applied to its imports, and the sites."""
    total = 0
    for change in changes:
        if change.kind not in ("renamed", "moved") or not change.replacement or "." in change.name:
            continue
        if change.module not in text:
            continue
        rewrite = _rewrite_default if change.name == "default" else _rewrite_es
        new, sites = rewrite(text, change)
        if sites:
            text, total = new, total + sites
    return text, total


def migrate_js(
    path: str, read: Callable[[str], str | None], changes: list[ApiChange]
) -> tuple[str, str, int] | None:
    """(old text, new text, sites) of one JS/TS file, or None when nothing changes."""
    if not path.endswith(JS_SUFFIXES):
        return None
    text = read(path)
    if text is None or len(text) > MAX_FILE_CHARS:
        return None
    new, sites = migrate_js_text(text, changes)
    return (text, new, sites) if sites and new != text else None


__all__ = ["JS_SUFFIXES", "migrate_js", "migrate_js_text"]
