"""``arcs index`` (build or refresh a repository's index) and ``arcs search`` (query it)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.cli.context import Context
from bot.errors import UsageError
from indexing.model import Location, Query, RetrievalMode, SearchFilters, SearchHit

_MODES = ("hybrid", "dense", "sparse", "hierarchical")


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``index`` and ``search``."""
    p_index = sub.add_parser(
        "index",
        parents=[common],
        help="build or refresh the index of a git repository",
        description="Build the index of a git work tree, or refresh it incrementally.",
    )
    p_index.add_argument("path", metavar="PATH", help="the repository (any path inside its work tree)")
    p_index.add_argument("--full", action="store_true", help="rebuild from scratch (embeddings stay cached)")
    p_index.add_argument(
        "--mode",
        choices=("eager", "lazy"),
        default=None,
        help="eager: embed every chunk now; lazy: sparse + structure now, chunk bodies on demand "
        "(default: ARCS_INDEX_MODE)",
    )
    p_index.add_argument(
        "--fill",
        action="store_true",
        help="after refreshing, embed every chunk body a lazy index deferred (the background fill)",
    )
    p_index.set_defaults(handler=run_index)

    p_search = sub.add_parser(
        "search",
        parents=[common],
        help="search an indexed repository",
        description="Ranked code chunks for a query (the index is refreshed first).",
    )
    p_search.add_argument("path", metavar="PATH", help="the repository")
    p_search.add_argument("query", metavar="QUERY", help="what to look for")
    p_search.add_argument("-k", type=int, default=10, metavar="N", help="number of results (default 10)")
    p_search.add_argument("--mode", choices=_MODES, default="hybrid", help="retrieval mode (default hybrid)")
    p_search.add_argument("--depth", type=int, default=3, help="tree levels walked by --mode hierarchical")
    p_search.add_argument("--path-prefix", metavar="DIR", help="only chunks under this directory or file")
    p_search.add_argument("--language", help="only chunks of this language (python, go, …)")
    p_search.add_argument("--kind", help="only chunks of this kind (function, method, class, …)")
    p_search.add_argument(
        "--hint",
        action="append",
        default=[],
        metavar="FILE:LINE",
        help="a location to favour, e.g. from a traceback (repeatable)",
    )
    p_search.add_argument(
        "--no-refresh",
        action="store_true",
        help="query the index as it is (from its read snapshot when current: fast, and works while "
        "another process holds the embedded Qdrant store)",
    )
    p_search.set_defaults(handler=run_search)


def parse_hint(raw: str) -> Location:
    """``app/x.py:42`` -> Location; ``app/x.py`` -> line 0 (anywhere in the file)."""
    path, sep, line = raw.rpartition(":")
    if not sep or not line.isdigit():
        if not raw.strip():
            raise UsageError("search: --hint needs FILE:LINE")
        return Location(raw.strip(), 0)
    if not path:
        raise UsageError(f"search: bad --hint {raw!r} (expected FILE:LINE)")
    return Location(path, int(line))


def run_index(args: argparse.Namespace, ctx: Context) -> int:
    """Build or refresh the index and print what it did."""
    from indexing.index import RepoIndex

    filled = None
    with RepoIndex.open(ctx.settings, Path(args.path), mode=args.mode) as index:
        stats = index.refresh(full=args.full)
        if args.fill:
            filled = index.fill()
    for warning in stats.warnings:
        ctx.out.info(f"warning: {warning}")
    data = stats.as_dict()
    if filled is not None:
        data["fill"] = filled.as_dict()
    deferred = filled.remaining if filled is not None else stats.deferred
    ctx.out.emit(
        data,
        lambda: (
            f"indexed {stats.files} files, {stats.chunks} chunks "
            f"(embedded {stats.embedded}, cached {stats.cached}; changed {stats.changed_files}, "
            f"removed {stats.removed_files}) in {stats.seconds:.1f}s at {stats.commit[:12]}"
            + (" (full build)" if stats.full else "")
            + (f"; filled {filled.embedded} in {filled.seconds:.1f}s" if filled is not None else "")
            + (f"; {deferred} chunk bodies deferred (lazy)" if deferred else "")
        ),
    )
    if stats.unreadable:
        # The index is complete and consistent without them, but the run did not cover the repo.
        first = stats.unreadable[0]
        more = f" and {len(stats.unreadable) - 1} more" if len(stats.unreadable) > 1 else ""
        ctx.out.info(f"arcs: error: cannot read {first}{more} (permission denied); indexed the rest")
        return 2
    return 0


def _table(hits: list[SearchHit]) -> str:
    if not hits:
        return "no results"
    rows = [("#", "score", "location", "kind", "symbol")]
    for i, hit in enumerate(hits, start=1):
        c = hit.chunk
        rows.append(
            (
                str(i),
                f"{hit.score:.3f}",
                f"{c.path}:{c.start_line}-{c.end_line}",
                c.kind,
                c.qualified_name or c.symbol,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)).rstrip()
        for row in rows
    )


def run_search(args: argparse.Namespace, ctx: Context) -> int:
    """Refresh (unless told not to), query, print the ranked list."""
    from indexing.index import RepoIndex

    if args.k < 1:
        raise UsageError("search: -k must be at least 1")
    if not args.query.strip():
        raise UsageError("search: QUERY is empty")
    hints = tuple(parse_hint(h) for h in args.hint)
    mode: RetrievalMode = "hybrid" if args.mode == "hierarchical" else args.mode
    query = Query(
        text=args.query,
        k=args.k,
        mode=mode,
        filters=SearchFilters(path_prefix=args.path_prefix, language=args.language, kind=args.kind),
        hints=hints,
    )
    # --no-refresh reads the index's snapshot when it is current: no Qdrant open, no folder lock.
    with RepoIndex.open(ctx.settings, Path(args.path), read_only=args.no_refresh) as index:
        if not index.store.read_only and (not args.no_refresh or index.load_manifest() is None):
            stats = index.refresh()
            for warning in stats.warnings:
                ctx.out.info(f"warning: {warning}")
        retriever = index.retriever()
        hits = (
            retriever.hierarchical(query, args.depth)
            if args.mode == "hierarchical"
            else retriever.search(query)
        )
    ctx.out.emit([h.as_dict() for h in hits], lambda: _table(hits))
    return 0
