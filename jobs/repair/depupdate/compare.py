"""Compare two versions' public Python APIs (:mod:`jobs.repair.depupdate.apidiff`). Pure."""

from __future__ import annotations

from collections.abc import Mapping

from jobs.repair.depupdate.apidiff import ApiChange, ChangeKind, Module, Params, Symbol, read_api

MAX_CHANGES = 500
"""A major rewrite lists at most this many changes (the first ones, by module)."""


def diff_sources(
    old: Mapping[str, str], new: Mapping[str, str], *, stated: Mapping[str, str] | None = None
) -> list[ApiChange]:
    """:func:`diff_api` of two unpacked distributions ``{path: source}``."""
    return diff_api(read_api(old), read_api(new), stated=stated)


def diff_api(
    old: Mapping[str, Module], new: Mapping[str, Module], *, stated: Mapping[str, str] | None = None
) -> list[ApiChange]:
    """Every breaking change from ``old`` to ``new`` (see the module docstring of apidiff).
    ``stated``: replacements the changelog states (:func:`~jobs.repair.depupdate.changelog.replacements`),
    used for a removed name when the code itself names none (a bump across the release that
    deprecated it leaves no shim to read)."""
    out: list[ApiChange] = []
    ours = {m.split(".")[0] for m in [*old, *new]}
    for name in sorted(old):
        if any(part.startswith("_") for part in name.split(".")):
            continue
        before = old[name]
        after = new.get(name)
        if after is None:
            out.append(ApiChange("module_removed", name, ""))
            continue
        public = before.public()
        for sym_name, sym in sorted(public.items()):
            kept = after.symbols.get(sym_name)
            if kept is None:
                if sym_name in after.shims or (
                    sym.kind == "method" and sym_name.split(".")[0] not in after.symbols
                ):
                    continue  # still answered (deprecated), or its class is reported instead
                out.append(_gone(name, sym, before, old, new, ours, stated or {}))
            elif sym.params is not None and kept.params is not None:
                out += _signature(name, sym_name, sym.params, kept.params)
        if len(out) >= MAX_CHANGES:
            break
    return out[:MAX_CHANGES]


def _gone(
    module: str,
    sym: Symbol,
    before: Module,
    old: Mapping[str, Module],
    new: Mapping[str, Module],
    ours: set[str],
    stated: Mapping[str, str],
) -> ApiChange:
    hints = list(sym.hints) + before.shims.get(sym.name, [])
    evidence = "the old version points at it" if hints else ""
    if sym.kind == "import" and sym.origin:
        if sym.origin.split(".")[0] in ours:
            chased = _definition(sym.origin, old)
            if chased is not None and chased.hints:
                hints += chased.hints
                evidence = f"its old definition {sym.origin} points at it"
        else:
            hints.insert(0, sym.origin)
            evidence = f"was a re-export of {sym.origin}"
    own = sym.name.split(".")[-1]
    for hint in hints:
        target = _locate(hint, module, sym, new, ours)
        if target and not any(p.startswith("_") for p in target.split(".")):
            kind: ChangeKind = "moved" if target.split(".")[-1] == own else "renamed"
            return ApiChange(kind, module, sym.name, target, evidence=evidence)
    for key in (f"{module}.{sym.name}", sym.name):
        hint = stated.get(key, "")
        target = _locate(hint, module, sym, new, ours) if hint else ""
        if target and not any(p.startswith("_") for p in target.split(".")):
            kind = "moved" if target.split(".")[-1] == own else "renamed"
            return ApiChange(kind, module, sym.name, target, evidence="the changelog says so")
    if sym.kind != "method":
        elsewhere = sorted(
            (
                m
                for m, mod in new.items()
                if not any(p.startswith("_") for p in m.split("."))
                and (s := mod.symbols.get(sym.name)) is not None
                and s.kind in ("function", "class", "assign")
            ),
            key=lambda m: (len(m.split(".")), m),
        )
        if elsewhere:
            return ApiChange(
                "moved", module, sym.name, f"{elsewhere[0]}.{sym.name}", evidence="defined there now"
            )
    return ApiChange("removed", module, sym.name)


def _definition(dotted: str, api: Mapping[str, Module], hops: int = 4) -> Symbol | None:
    """The symbol a (re-exported) dotted name is defined as, following imports a few hops."""
    for _ in range(hops):
        head, _, last = dotted.rpartition(".")
        mod = api.get(head)
        sym = mod.symbols.get(last) if mod is not None else None
        if sym is None or sym.kind != "import":
            return sym
        dotted = sym.origin
    return None


def _locate(hint: str, module: str, sym: Symbol, new: Mapping[str, Module], ours: set[str]) -> str:
    """The full dotted name ``hint`` means in the new version ('' when it names nothing there)."""
    hint = hint.strip(".")
    if not hint or hint == sym.name:
        return ""
    here = new.get(module)
    if sym.kind == "method":
        cls = sym.name.split(".")[0]
        last = hint.split(".")[-1]
        if here is not None and f"{cls}.{last}" in here.symbols:
            return f"{module}.{cls}.{last}"
        return ""
    if "." not in hint:
        if here is not None and hint in here.symbols:
            return f"{module}.{hint}"
        return ""
    top = hint.split(".")[0]
    if top not in ours:
        # another package's name (jinja2 re-exported markupsafe.Markup): trusted as written when
        # it looks like a module path plus a name
        return hint if len(hint.split(".")) >= 2 and top not in ("self", "cls", "t", "typing") else ""
    head, _, last = hint.rpartition(".")
    mod = new.get(head)
    if mod is not None and last in mod.symbols:
        return hint
    if here is not None and hint.split(".")[-1] in here.symbols and head == module:
        return hint
    return ""


def _signature(module: str, name: str, old: Params, new: Params) -> list[ApiChange]:
    out: list[ApiChange] = []
    old_names = [*old.positional, *old.keyword_only]
    new_names = [*new.positional, *new.keyword_only]
    removed = [n for n in old_names if n not in new_names]
    added = [n for n in new_names if n not in old_names]
    for r in removed:
        partner = ""
        if r in old.positional:
            i = old.positional.index(r)
            if i < len(new.positional) and new.positional[i] in added:
                partner = new.positional[i]
        if not partner and len(removed) == 1 and len(added) == 1:
            partner = added[0]
        if partner:
            out.append(ApiChange("keyword_renamed", module, name, partner, keyword=r))
            added.remove(partner)
        elif not new.var_keyword:
            out.append(ApiChange("keyword_removed", module, name, keyword=r))
    if not old.var_positional:  # (*args, **kwargs) took anything: a new name is no break for callers
        out += [ApiChange("required_added", module, name, keyword=n) for n in added if n in new.required]
    return out


__all__ = ["MAX_CHANGES", "diff_api", "diff_sources"]
