"""Build the verdict bench's case list (issue #23), once, before any run.

    .venv/bin/python -m bench.verdicts.build [--seed 23] [--per-package 4]

Per package of :data:`bench.verdicts.corpus.PACKAGES`, the outside corpus's builder
(:func:`bench.outside.build.build_package`) draws seeded one-line mutants and keeps those the
package's own tests detect (pytest exit 1 with failures, run directly), one per function, with a
test command as CI would write it (some with ``-x``/``--maxfail=1``). Every kept mutant becomes
three cases, one per mode (:data:`bench.verdicts.corpus.MODES`), and a split: mutants alternate
``tuning`` / ``held_out`` in their seeded order. The list is written to ``cases.jsonl`` and
committed before the first run; nothing in ARCS is changed after seeing a held-out result.
"""

from __future__ import annotations

import argparse
import json
import sys

from bench.outside.build import build_package
from bench.verdicts.corpus import CASES, MODES, PACKAGES


def main(argv: list[str] | None = None) -> int:
    """Write ``cases.jsonl``."""
    p = argparse.ArgumentParser(prog="python -m bench.verdicts.build", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=23)
    p.add_argument("--per-package", type=int, default=4)
    args = p.parse_args(argv)
    rows = []
    for pkg in PACKAGES:
        for kept in build_package(pkg, args.seed, args.per_package):
            mutation = kept["source"]["mutation"]
            for mode in MODES:
                rows.append(
                    {
                        "id": f"{kept['id']}-{mode}",
                        "mutant": kept["id"],
                        "mode": mode,
                        "split": kept["split"],
                        "package": pkg.name,
                        "version": pkg.version,
                        "test_command": kept["test_command"],
                        "mutation": mutation,
                        "description": kept["description"],
                    }
                )
    CASES.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    mutants = len({r["mutant"] for r in rows})
    print(f"wrote {len(rows)} cases ({mutants} mutants x {len(MODES)} modes) to {CASES}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
