"""Deterministic generator of a large multi-language repository for the indexing benchmark.

The repository is assembled from two sources until it reaches the requested number of lines:

1. **Clones of the localization corpus** (``bench/localization/repos``: Python, TypeScript, Go,
   Rust, plus their docs). Clone ``i`` lives under ``clones/c<i>/<repo>/`` and every function,
   method and class name defined in the corpus repository is renamed with a clone-specific suffix
   (``reserve_stock`` -> ``reserve_stock_c3``, ``Money`` -> ``MoneyC3``), so no chunk text repeats
   and the embedding cache cannot short-cut the work. Clones make up about half of the lines.
2. **Synthetic modules** in Python, TypeScript and Go (and a markdown page per package): functions
   and classes assembled from a vocabulary and statement templates with a seeded ``random.Random``,
   so the same seed always yields byte-identical files.

Nothing here executes; the code only has to look and chunk like real code.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.localization.corpus import REPOS_DIR, repo_files, repo_names
from bench.localization.symbols import extract_symbols

NOUNS = (
    "order", "invoice", "customer", "account", "payment", "shipment", "ticket", "session", "report",
    "product", "warehouse", "supplier", "budget", "ledger", "refund", "coupon", "tenant", "webhook",
    "schedule", "quota", "profile", "catalog", "parcel", "route", "batch", "metric", "alert", "token",
)  # fmt: skip
VERBS = (
    "load", "save", "validate", "compute", "merge", "render", "sync", "apply", "resolve", "prune",
    "archive", "import", "export", "schedule", "notify", "reconcile", "split", "rank", "audit", "refresh",
)  # fmt: skip
ATTRS = ("amount", "status", "created_at", "owner", "region", "priority", "count", "limit", "weight", "score")


@dataclass(frozen=True)
class GeneratedRepo:
    """What was written."""

    root: Path
    files: int
    lines: int
    clone_lines: int
    synthetic_lines: int
    clones: int


def _suffix(name: str, tag: int) -> str:
    if name[:1].isupper():
        return f"{name}C{tag}"
    return f"{name}_c{tag}"


def _corpus_renames(repo: str) -> list[str]:
    """Names defined in a corpus repository (functions, methods' simple names, classes/types)."""
    names: set[str] = set()
    for rel in repo_files(repo):
        path = REPOS_DIR / repo / rel
        text = path.read_text(encoding="utf-8")
        for sym in extract_symbols(rel, text):
            for part in sym.name.split("."):
                if len(part) >= 4 and not part.startswith("__"):
                    names.add(part)
        names.update(
            m.group(1) for m in re.finditer(r"\b(?:class|struct|interface|type|enum)\s+([A-Z]\w{3,})", text)
        )
    # Language keywords and very common library names must survive.
    names -= {"main", "init", "self", "String", "Error", "error", "Result", "test", "name", "format", "parse"}
    return sorted(names, key=lambda n: (-len(n), n))


def _clone_text(text: str, pattern: re.Pattern[str], tag: int) -> str:
    return pattern.sub(lambda m: _suffix(m.group(0), tag), text)


def _clone_files(tag: int) -> Iterator[tuple[str, str]]:
    for repo in repo_names():
        names = _corpus_renames(repo)
        pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")
        for rel in repo_files(repo):
            text = (REPOS_DIR / repo / rel).read_text(encoding="utf-8")
            yield f"clones/c{tag:02d}/{repo}/{rel}", _clone_text(text, pattern, tag)


# -- synthetic code -------------------------------------------------------------------------------


def _camel(*words: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in words)


def _py_function(rng: random.Random, indent: str = "") -> list[str]:
    verb, noun, other = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(NOUNS)
    attr, attr2 = rng.sample(ATTRS, 2)
    name = f"{verb}_{noun}_{rng.choice(ATTRS)}"
    lines = [
        f"def {name}({'self, ' if indent else ''}{noun}s: list[dict], {other}_id: str, limit: int = {rng.randint(5, 500)}) -> dict:",
        f'    """{verb.capitalize()} the {noun}s of a {other} by {attr} (at most ``limit``)."""',
        "    result: dict = {}",
        "    seen = 0",
        f"    for item in sorted({noun}s, key=lambda x: x.get({attr!r}, 0)):",
    ]
    body = [
        f"        if item.get({attr2!r}) is None:",
        "            continue",
        f"        key = str(item.get({attr!r}, '')).lower()",
        f"        result.setdefault(key, []).append(item[{attr2!r}])",
        "        seen += 1",
        "        if seen >= limit:",
        "            break",
    ]
    lines += body[: rng.randint(4, len(body))]
    if rng.random() < 0.5:
        lines += [
            f"    if not result and {other}_id:",
            f'        raise LookupError(f"no {noun} for {other} {{{other}_id}}")',
        ]
    lines += [f"    return {{'{other}_id': {other}_id, 'count': seen, 'groups': result}}", ""]
    return [indent + line if line else line for line in lines]


def _py_module(rng: random.Random, package: str) -> str:
    noun = rng.choice(NOUNS)
    out = [
        f'"""{noun.capitalize()} helpers for the {package} package (generated)."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    for _ in range(rng.randint(6, 12)):
        if rng.random() < 0.25:
            cls = _camel(rng.choice(NOUNS), rng.choice(("Service", "Store", "Planner", "Index")))
            out += ["", f"class {cls}:", f'    """Groups operations on {noun}s."""', ""]
            out += ["    def __init__(self, client: object) -> None:", "        self.client = client", ""]
            for _ in range(rng.randint(2, 4)):
                out += _py_function(rng, indent="    ")
        else:
            out += ["", *_py_function(rng)]
    return "\n".join(out).rstrip() + "\n"


def _ts_function(rng: random.Random, method: bool = False) -> list[str]:
    verb, noun, other = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(NOUNS)
    attr = rng.choice(ATTRS)
    name = f"{verb}{_camel(noun, attr)}"
    head = f"  {name}(" if method else f"export function {name}("
    pad = "  " if method else ""
    lines = [
        f"{pad}/** {verb.capitalize()} {noun}s grouped by {other}. */",
        f"{head}{noun}s: Array<Record<string, unknown>>, {other}Id: string, limit = {rng.randint(5, 500)}): Map<string, unknown[]> {{",
        f"{pad}  const out = new Map<string, unknown[]>();",
        f"{pad}  for (const item of {noun}s.slice(0, limit)) {{",
        f"{pad}    const key = String(item[{attr!r}] ?? {other}Id);",
        f"{pad}    if (!out.has(key)) out.set(key, []);",
        f"{pad}    out.get(key)!.push(item);",
        f"{pad}  }}",
    ]
    if rng.random() < 0.5:
        lines += [f"{pad}  if (out.size === 0) throw new Error(`no {noun} for ${{{other}Id}}`);"]
    lines += [f"{pad}  return out;", f"{pad}}}", ""]
    return lines


def _ts_module(rng: random.Random, package: str) -> str:
    out = [f"// {package}: generated module", 'import { strict as assert } from "node:assert";', ""]
    for _ in range(rng.randint(6, 12)):
        if rng.random() < 0.25:
            cls = _camel(rng.choice(NOUNS), rng.choice(("Service", "Store", "Planner", "Index")))
            out += [
                f"export class {cls} {{",
                "  constructor(private readonly client: unknown) {",
                "    assert(client);",
                "  }",
                "",
            ]
            for _ in range(rng.randint(2, 4)):
                out += _ts_function(rng, method=True)
            out += ["}", ""]
        else:
            out += _ts_function(rng)
    return "\n".join(out).rstrip() + "\n"


def _go_function(rng: random.Random, receiver: str | None) -> list[str]:
    verb, noun, other = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(NOUNS)
    attr = _camel(rng.choice(ATTRS).replace("_", ""))
    name = _camel(verb, noun, attr)
    recv = f"(s *{receiver}) " if receiver else ""
    lines = [
        f"// {name} {verb}s {noun}s grouped by {other}.",
        f"func {recv}{name}(items []{_camel(noun)}, {other}ID string, limit int) (map[string]int, error) {{",
        "\tout := make(map[string]int)",
        "\tfor i, item := range items {",
        "\t\tif i >= limit {",
        "\t\t\tbreak",
        "\t\t}",
        f"\t\tout[item.{attr}]++",
        "\t}",
    ]
    if rng.random() < 0.5:
        lines += [
            "\tif len(out) == 0 {",
            f'\t\treturn nil, fmt.Errorf("no {noun} for {other} %s", {other}ID)',
            "\t}",
        ]
    lines += ["\treturn out, nil", "}", ""]
    return lines


def _go_module(rng: random.Random, package: str) -> str:
    pkg = re.sub(r"\W", "", package.rsplit("/", 1)[-1]) or "gen"
    nouns = sorted(set(NOUNS))
    out = [f"// Package {pkg} is generated.", f"package {pkg}", "", 'import "fmt"', ""]
    for noun in rng.sample(nouns, 3):
        fields = "\n".join(f"\t{_camel(a.replace('_', ''))} string" for a in ATTRS[:4])
        out += [f"type {_camel(noun)} struct {{", fields, "}", ""]
    for _ in range(rng.randint(6, 12)):
        receiver = _camel(rng.choice(NOUNS), "Service") if rng.random() < 0.3 else None
        out += _go_function(rng, receiver)
    return "\n".join(out).rstrip() + "\n"


def _doc(rng: random.Random, package: str) -> str:
    noun = rng.choice(NOUNS)
    out = [f"# {package}", "", f"Generated notes about {noun}s in `{package}`.", ""]
    for _ in range(rng.randint(3, 6)):
        verb, other = rng.choice(VERBS), rng.choice(NOUNS)
        out += [f"## {verb.capitalize()} {other}s", ""]
        out += [
            f"The `{verb}_{other}` step {verb}s every {other} of a {noun} and records the {rng.choice(ATTRS)}.",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def _synthetic_files(rng: random.Random, index: int) -> Iterator[tuple[str, str]]:
    package = f"gen/{rng.choice(NOUNS)}_{index:03d}"
    yield f"{package}/README.md", _doc(rng, package)
    for j in range(rng.randint(2, 4)):
        kind = rng.choice(("py", "ts", "go"))
        stem = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{j}"
        if kind == "py":
            yield f"{package}/{stem}.py", _py_module(rng, package)
        elif kind == "ts":
            yield f"{package}/{stem}.ts", _ts_module(rng, package)
        else:
            yield f"{package}/{stem}.go", _go_module(rng, package)


def generate_repo(root: Path, *, target_lines: int, seed: int = 7, clone_share: float = 0.5) -> GeneratedRepo:
    """Write a repository of about ``target_lines`` lines under ``root`` (which must not exist)."""
    root.mkdir(parents=True)
    rng = random.Random(seed)
    files = lines = clone_lines = synthetic_lines = clones = 0

    def write(rel: str, text: str) -> int:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return text.count("\n") + (0 if text.endswith("\n") else 1)

    while clone_lines < clone_share * target_lines:
        for rel, text in _clone_files(clones):
            n = write(rel, text)
            clone_lines += n
            files += 1
        clones += 1
    index = 0
    while clone_lines + synthetic_lines < target_lines:
        for rel, text in _synthetic_files(rng, index):
            synthetic_lines += write(rel, text)
            files += 1
        index += 1
    lines = clone_lines + synthetic_lines
    (root / ".gitignore").write_text("node_modules/\ntarget/\n", encoding="utf-8")
    return GeneratedRepo(root, files, lines, clone_lines, synthetic_lines, clones)
