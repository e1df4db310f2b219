"""The repair corpus: ``case.json`` files, their variants, and materializing a case as a repository.

Two corpora share one format:

* ``ours`` — ``bench/repair/cases/<id>/``: the files of a small repository plus ``case.json``. A
  case may be a *variant* (``variant_of``: another case's id): its folder holds only ``case.json``,
  the files come from the parent, and every field it does not set is the parent's (used for the
  fail-fast variants and for environment cases built on an existing tree); files next to the
  variant's ``case.json`` (e.g. an ``.arcs.yml``) are copied over the parent's.
* ``outside`` — ``bench/outside/cases/<id>/case.json`` only: ``source`` names a pinned PyPI sdist
  and one mutation (file, line, original, mutated); ``bench.outside.corpus`` unpacks the sdist from
  its cache and applies the mutation.

Extra fields used by the verdict measurements: ``tags`` (``fail_fast``, ``multi_bug``, ``hang``,
``environment``, ``mutant``), ``expect_verdict`` (``environment`` cases: that verdict with zero
candidates), ``split`` (outside corpus: ``tuning`` or ``held_out``, fixed when the case was
generated, before any run).
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, init_git_repo

CASES_DIR = Path(__file__).resolve().parent / "cases"
OUTSIDE_CASES_DIR = REPO_ROOT / "bench" / "outside" / "cases"
INJECTED_CASES_DIR = REPO_ROOT / "bench" / "outside" / "injected"
CORPORA = {"ours": CASES_DIR, "outside": OUTSIDE_CASES_DIR, "injected": INJECTED_CASES_DIR}


@dataclass(frozen=True)
class CaseFix:
    """A patch as the model would propose it: an explanation and ``propose_patch`` edits."""

    explanation: str
    edits: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Case:
    """One broken repository of the corpus (``case.json`` plus where its files come from)."""

    id: str
    language: str
    bug_class: str
    description: str
    test_command: str
    expected_path: str
    expected_contains: str
    llm_fix: CaseFix | None
    llm_wrong_fix: CaseFix | None
    root: Path
    """Where the files are copied from (the parent's folder for a variant)."""
    corpus: str = "ours"
    tags: tuple[str, ...] = ()
    expect_verdict: str = ""
    split: str = ""
    variant_of: str = ""
    source: dict[str, Any] | None = field(default=None, compare=False)
    folder: Path | None = None
    """The case's own folder; a variant's files there (e.g. ``.arcs.yml``) overlay the parent's."""

    @property
    def is_llm_case(self) -> bool:
        """Scripted-LLM cases: those with a plausible wrong first answer."""
        return self.llm_wrong_fix is not None and self.llm_fix is not None

    @property
    def group(self) -> str:
        """The reporting group: ``environment``, ``hang``, ``multi_bug``, ``fail_fast`` or ``base``."""
        for tag in ("environment", "hang", "multi_bug", "fail_fast"):
            if tag in self.tags:
                return tag
        return "base"


def _fix_of(data: object, where: str) -> CaseFix | None:
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("edits"), list) or not data["edits"]:
        raise SystemExit(f"{where}: expected {{explanation, edits: [...]}}")
    for e in data["edits"]:
        if not isinstance(e, dict) or not {"path", "old", "new"} <= set(e):
            raise SystemExit(f"{where}: every edit needs path, old and new")
    return CaseFix(str(data.get("explanation", "")), tuple(dict(e) for e in data["edits"]))


def _read_meta(folder: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    if meta.get("id") != folder.name:
        raise SystemExit(f"{folder}/case.json: id {meta.get('id')!r} differs from the folder name")
    return meta


def load_case(folder: Path, corpus: str = "ours") -> Case:
    """Read ``folder/case.json`` (merged over its parent's for a variant); exits when a field is missing."""
    meta = _read_meta(folder)
    root = folder
    if meta.get("variant_of"):
        parent_folder = folder.parent / str(meta["variant_of"])
        parent = _read_meta(parent_folder)
        if parent.get("variant_of"):
            raise SystemExit(f"{folder}/case.json: the parent {parent['id']} is itself a variant")
        meta = {**parent, **meta}
        root = parent_folder
    environment = meta.get("expect_verdict") == "environment"
    required = ["id", "language", "bug_class", "description", "test_command"]
    if not environment:
        required.append("expected_fix")
    missing = [k for k in required if not meta.get(k)]
    if missing:
        raise SystemExit(f"{folder}/case.json: missing {', '.join(missing)}")
    expected = meta.get("expected_fix") or {"path": "", "contains": ""}
    return Case(
        id=meta["id"],
        language=meta["language"],
        bug_class=meta["bug_class"],
        description=meta["description"],
        test_command=meta["test_command"],
        expected_path=expected["path"],
        expected_contains=expected["contains"],
        llm_fix=_fix_of(meta.get("llm_fix"), f"{folder.name}: llm_fix"),
        llm_wrong_fix=_fix_of(meta.get("llm_wrong_fix"), f"{folder.name}: llm_wrong_fix"),
        root=root,
        corpus=corpus,
        tags=tuple(str(t) for t in meta.get("tags", ())),
        expect_verdict=str(meta.get("expect_verdict", "")),
        split=str(meta.get("split", "")),
        variant_of=str(meta.get("variant_of", "")),
        source=meta.get("source"),
        folder=folder,
    )


def load_cases(patterns: str | None = None, corpora: tuple[str, ...] = ("ours",)) -> list[Case]:
    """Every case of ``corpora`` (sorted by id) whose id matches one of the comma-separated globs."""
    globs = [p.strip() for p in (patterns or "*").split(",") if p.strip()]
    cases: list[Case] = []
    for name in corpora:
        folder = CORPORA[name]
        if not folder.is_dir():
            continue
        cases += [
            load_case(sub, name)
            for sub in sorted(folder.iterdir())
            if (sub / "case.json").is_file() and any(fnmatch.fnmatch(sub.name, g) for g in globs)
        ]
    if not cases:
        raise SystemExit(f"no case of {', '.join(corpora)} matches {patterns!r}")
    return cases


def find_case(case_id: str) -> Case:
    """The case ``case_id`` of whichever corpus has it."""
    for name, folder in CORPORA.items():
        if (folder / case_id / "case.json").is_file():
            return load_case(folder / case_id, name)
    raise SystemExit(f"no case {case_id!r}")


def copy_case(case: Case, dest: Path, *, git: bool = True) -> Path:
    """The case's files (not ``case.json``) in ``dest``, committed as a git repository."""
    if case.source is not None:
        from bench.outside.corpus import materialize

        materialize(case.source, dest)
    else:
        shutil.copytree(case.root, dest, ignore=shutil.ignore_patterns("case.json", "__pycache__"))
        if case.folder is not None and case.folder != case.root:
            ignore = shutil.ignore_patterns("case.json", "__pycache__")
            shutil.copytree(case.folder, dest, ignore=ignore, dirs_exist_ok=True)
    if git:
        init_git_repo(dest, f"{case.id}: broken")
    return dest


def apply_case_fix(repo: Path, fix: CaseFix) -> None:
    """Apply ``fix``'s replace edits in order (each ``old`` must occur exactly once)."""
    for e in fix.edits:
        path = repo / e["path"]
        text = path.read_text(encoding="utf-8")
        if text.count(e["old"]) != 1:
            raise ValueError(f"{e['path']}: old text occurs {text.count(e['old'])} times")
        path.write_text(text.replace(e["old"], e["new"], 1), encoding="utf-8")
