"""Per-candidate workspace cost with and without sharing node_modules (issue 30).

    PYTHONPATH=. python -m bench.outside_js.copy_time REPO [REPO...] [--runs N]

For each repository: N alternating timings of ``ephemeral_workspace`` (enter + exit: copy, then
removal) copying everything vs sharing ``node_modules``; prints medians, the ratio and the load.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

from runners.workspace import ephemeral_workspace, tree_size


def _once(repo: Path, share: tuple[str, ...]) -> float:
    t0 = time.monotonic()
    with ephemeral_workspace(repo, share=share):
        pass
    return time.monotonic() - t0


def main(argv: list[str]) -> int:
    """Entry point."""
    runs = 5
    if "--runs" in argv:
        at = argv.index("--runs")
        runs = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
    for name in argv:
        repo = Path(name)
        full: list[float] = []
        shared: list[float] = []
        load0 = os.getloadavg()[0]
        for _ in range(runs):
            full.append(_once(repo, ()))
            shared.append(_once(repo, ("node_modules",)))
        row = {
            "repo": repo.name,
            "node_modules_mb": round(tree_size(repo / "node_modules") / 2**20, 1),
            "files": sum(len(f) for _, _, f in os.walk(repo / "node_modules")),
            "copy_s_median": round(statistics.median(full), 3),
            "shared_s_median": round(statistics.median(shared), 3),
            "ratio": round(statistics.median(full) / statistics.median(shared), 1),
            "copy_s": [round(x, 2) for x in full],
            "shared_s": [round(x, 3) for x in shared],
            "load_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
        }
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
