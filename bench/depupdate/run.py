"""Measure issue #27's pipeline on real breaking dependency bumps (bench/depupdate/cases.json).

Per case: the bump is recognised in a requirements change; both versions of the dependency are
fetched (download and unpack only, runners/distfetch.py) and compared (API difference, changelog);
tier 0's migration runs on the client release's own source; the result is re-checked outside the
loop, statically (nothing of the client or the dependency is run on the host): every use of a
broken symbol is gone, the file parses, and the replacement exists in the new API; and the rewrite
is compared with the client's own later release (the gold).

npm cases (``--cases cases_npm.json``): the bump is recognised in a package.json change, the API
difference comes from the type declarations, the migration is tier 0's import rewrite
(jobs/repair/tier0/migrate_js.py) on the client tarball's JS/TS files, and a use is an import or
``require`` of the symbol (``require('m').name``, ``x = require('m')`` then ``x.name``, a
destructuring, ``import { name }``; ``default``: the module itself imported or required).

Usage: PYTHONPATH=. python bench/depupdate/run.py [--cases cases.json] [--cache DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

from jobs.dependency_changes import what_changed
from jobs.repair.depupdate.apidiff import ApiChange, read_api
from jobs.repair.depupdate.changelog import mentioning
from jobs.repair.depupdate.context import section
from jobs.repair.depupdate.detect import detect_bumps
from jobs.repair.depupdate.npmapi import read_npm_api
from jobs.repair.tier0.migrate import migration_candidates
from jobs.repair.tier0.migrate_js import JS_SUFFIXES, migrate_js_text
from runners.distfetch import fetch, read_texts

HERE = Path(__file__).resolve().parent
# Where a replacement outside the bumped package is checked: the version the new release requires.
OTHER = {"markupsafe": "2.1.1"}


def _texts(pkg: str, version: str, cache: Path) -> dict[str, str]:
    return read_texts(fetch("pypi", pkg, version, cache_dir=cache).root)


def _uses(text: str, symbol: str) -> int:
    """References to ``module.name`` in a file: ``from module import name`` and ``module.name``."""
    module, _, name = symbol.rpartition(".")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return -1
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0:
            n += sum(a.name == name for a in node.names)
        elif isinstance(node, ast.Attribute) and node.attr == name and ast.unparse(node.value) == module:
            n += 1
    return n


def _exists(dotted: str, apis: dict[str, Any]) -> bool:
    module, _, name = dotted.rpartition(".")
    api = apis.get(module.split(".")[0], {})
    mod = api.get(module)
    return mod is not None and (name in mod.symbols or name in mod.shims)


def _strip_root(path: str) -> str:
    return path.split("/", 1)[1] if "/" in path else path


def run_case(case: dict[str, Any], cache: Path) -> dict[str, Any]:
    pkg, old, new = case["package"], case["old"], case["new"]
    bumps = detect_bumps({"requirements.txt": (f"{pkg}=={old}\n", f"{pkg}=={new}\n")})
    recognised = [(b.package, b.old, b.new) for b in bumps] == [(pkg, old, new)]
    dep = what_changed(bumps[0], cache_dir=cache)
    api, log = list(dep.api), list(dep.changelog)
    new_api = read_api(_texts(pkg, new, cache))
    apis = {pkg: new_api}
    for other, version in OTHER.items():
        if other != pkg:
            apis[other] = read_api(_texts(other, version, cache))
    by_symbol = {c.qualified: c for c in api if not c.keyword}
    client_pkg, client_ver = case["client"]
    client = {
        p: t
        for p, t in _texts(client_pkg, client_ver, cache).items()
        if p.endswith(".py") and "/tests/" not in p and "/docs/" not in p
    }
    cands = migration_candidates(pkg, f"{old} -> {new}", api, client, client.get)
    migrated = dict(client)
    if cands:
        for e in cands[0].proposal.edits:
            assert migrated[e.path].count(e.old) == 1, e.path
            migrated[e.path] = migrated[e.path].replace(e.old, e.new)
    gold_pkg, gold_ver = case["gold"]
    gold = {_strip_root(p): t for p, t in _texts(gold_pkg, gold_ver, cache).items() if p.endswith(".py")}
    breaks = []
    for br in case["breaks"]:
        sym, want = br["symbol"], br["replacement"]
        change: ApiChange | None = by_symbol.get(sym)
        files = [p for p, t in client.items() if _uses(t, sym) > 0]
        left = sum(max(_uses(migrated[p], sym), 0) for p in files)
        parses = all(_uses(migrated[p], sym) >= 0 for p in files)
        rewritten = [p for p in files if migrated[p] != client[p]]
        got = change.replacement if change else ""
        # strict: the gold file uses the replacement and no longer the old name; loose: it uses the
        # replacement (a gold may keep the old name as an ImportError fallback for old versions)
        strict, loose = [], []
        for p in rewritten:
            g = gold.get(_strip_root(p))
            if g is not None and want:
                uses_new = (
                    _uses(g, want) > 0
                    or re.search(rf"\b{re.escape(want.rsplit('.', 1)[1])}\b", g) is not None
                )
                loose.append(uses_new)
                strict.append(uses_new and _uses(g, sym) == 0)
        breaks.append(
            {
                "symbol": sym,
                "client_files": len(files),
                "named": change is not None,
                "kind": change.kind if change else "",
                "replacement": got,
                "replacement_right": bool(want) and got == want,
                "changelog_lines": mentioning(log, [sym]),
                "fixed_static": bool(files) and left == 0 and parses and (not got or _exists(got, apis)),
                "sites_left": left,
                "gold_files_compared": len(loose),
                "gold_files_agree_strict": sum(strict),
                "gold_files_agree_loose": sum(loose),
            }
        )
    used = {b["symbol"] for b in case["breaks"]}
    prompt = section(dep, used=used, budget_chars=6000)
    return {
        "id": case["id"],
        "split": case["split"],
        "bump": f"{pkg} {old} -> {new}",
        "client": f"{client_pkg} {client_ver}",
        "gold": f"{gold_pkg} {gold_ver}",
        "recognised": recognised,
        "api_changes": len(api),
        "changelog_sections": [s.version for s in log],
        "tier0_candidates": len(cands),
        "tier0_sites": cands[0].sites if cands else 0,
        "tier0_files": sorted(e.path for e in cands[0].proposal.edits) if cands else [],
        "prompt_chars": len(prompt),
        "prompt_names_all_breaks": all(s in prompt for s in used),
        "breaks": breaks,
    }


def _js_uses(text: str, symbol: str) -> int:
    """References to ``module.name`` in a JS/TS file (see the module docstring)."""
    module, _, name = symbol.rpartition(".")
    q = r"""['"]""" + re.escape(module) + r"""['"]"""
    req = r"require\(\s*" + q + r"\s*\)"
    if name == "default":
        default = rf"import\s+[\w$]+\s*(?:,\s*\{{[^}}]*\}})?\s*from\s*{q}|(?<![{{,])\s[\w$]+\s*=\s*{req}"
        return len(re.findall(default, text))
    n = len(re.findall(req + rf"\.{re.escape(name)}\b", text))
    for body in re.findall(r"import\s+(?:type\s+)?\{([^{}]*)\}\s*from\s*" + q, text):
        n += sum(
            re.split(r"\s+as\s+", s.strip().removeprefix("type "))[0].strip() == name for s in body.split(",")
        )
    for body in re.findall(r"\{([^{}]*)\}\s*=\s*" + req, text):
        n += sum(s.split(":")[0].strip() == name for s in body.split(","))
    for var in re.findall(r"([\w$]+)\s*=\s*" + req, text):
        n += len(re.findall(rf"(?<![\w$.]){re.escape(var)}\.{re.escape(name)}\b", text))
    return n


def _npm_texts(pkg: str, version: str, cache: Path) -> dict[str, str]:
    return read_texts(fetch("npm", pkg, version, cache_dir=cache).root)


def _npm_code(pkg: str, version: str, cache: Path) -> dict[str, str]:
    """The JS/TS files of an unpacked tarball (read_texts keeps only declarations: the API side)."""
    root = fetch("npm", pkg, version, cache_dir=cache).root
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name.endswith(JS_SUFFIXES):
            try:
                out[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
    return out


def run_npm_case(case: dict[str, Any], cache: Path) -> dict[str, Any]:
    pkg, old, new = case["package"], case["old"], case["new"]
    manifest = '{"name": "client", "dependencies": {"%s": "%s"}}\n'
    bumps = detect_bumps({"package.json": (manifest % (pkg, old), manifest % (pkg, new))})
    recognised = [(b.package, b.old, b.new) for b in bumps] == [(pkg, old, new)]
    dep = what_changed(bumps[0], cache_dir=cache)
    api, log = list(dep.api), list(dep.changelog)
    new_api = read_npm_api(_npm_texts(pkg, new, cache), pkg)
    by_symbol = {c.qualified: c for c in api if not c.keyword}
    client_pkg, client_ver = case["client"]
    dirs = tuple(case.get("client_dirs") or [""])
    client = {
        _strip_root(p): t
        for p, t in _npm_code(client_pkg, client_ver, cache).items()
        if _strip_root(p).startswith(dirs)
    }
    migrated, sites = {}, 0
    for p, t in client.items():
        migrated[p], n = migrate_js_text(t, api)
        sites += n
    gold_pkg, gold_ver = case["gold"]
    gold = {_strip_root(p): t for p, t in _npm_code(gold_pkg, gold_ver, cache).items()}
    breaks = []
    for br in case["breaks"]:
        sym, want = br["symbol"], br["replacement"]
        change: ApiChange | None = by_symbol.get(sym)
        files = [p for p, t in client.items() if _js_uses(t, sym) > 0]
        left = sum(_js_uses(migrated[p], sym) for p in files)
        rewritten = [p for p in files if migrated[p] != client[p]]
        got = change.replacement if change else ""
        right = bool(want) and got == want
        target_mod, _, target = got.rpartition(".")
        exists = bool(got) and target in new_api.get(target_mod, {})
        # the rewrite against the gold: the same file there uses the replacement (loose) and no
        # longer the old symbol (strict)
        strict, loose = [], []
        for p in rewritten:
            g = gold.get(p)
            if g is not None and want:
                uses_new = _js_uses(g, want) > 0
                loose.append(uses_new)
                strict.append(uses_new and _js_uses(g, sym) == 0)
        breaks.append(
            {
                "symbol": sym,
                "client_files": len(files),
                "client_uses": sum(_js_uses(client[p], sym) for p in files),
                "named": change is not None,
                "kind": change.kind if change else "",
                "replacement": got,
                "replacement_right": right,
                "changelog_lines": mentioning(log, [sym.rpartition(".")[2]]),
                "fixed_static": bool(files) and left == 0 and exists,
                "sites_left": left,
                "rewritten_files": rewritten,
                "gold_files_compared": len(loose),
                "gold_files_agree_strict": sum(strict),
                "gold_files_agree_loose": sum(loose),
                # files move between releases (msw-storybook-addon 2 split its dist): the gold
                # package as a whole uses the replacement and no longer the old symbol
                "gold_package_agrees": bool(want)
                and any(_js_uses(g, want) > 0 for g in gold.values())
                and not any(_js_uses(g, sym) > 0 for g in gold.values()),
            }
        )
    used = {b["symbol"] for b in case["breaks"]}
    prompt = section(dep, used=used | {s.rpartition(".")[2] for s in used}, budget_chars=6000)
    return {
        "id": case["id"],
        "split": case["split"],
        "bump": f"{pkg} {old} -> {new}",
        "client": f"{client_pkg} {client_ver}",
        "gold": f"{gold_pkg} {gold_ver}",
        "recognised": recognised,
        "api_changes": len(api),
        "api": [c.describe() for c in api][:40],
        "notes": list(dep.notes),
        "changelog_sections": [s.version for s in log],
        "client_files_scanned": len(client),
        "tier0_sites": sites,
        "prompt_chars": len(prompt),
        "prompt_names_all_breaks": all(s in prompt for s in used),
        "breaks": breaks,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="cases.json", help="a file in bench/depupdate")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/arcs-depupdate-cache"))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "results.json")
    args = ap.parse_args(argv)
    cases = json.loads((HERE / args.cases).read_text())["cases"]
    results = []
    for case in cases:
        try:
            run = run_npm_case if case.get("ecosystem") == "npm" else run_case
            results.append(run(case, args.cache))
        except Exception as exc:  # one case's failure is a result, not the end of the run
            results.append(
                {"id": case["id"], "split": case["split"], "error": f"{type(exc).__name__}: {exc}"}
            )
        print(json.dumps(results[-1])[:400], file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
