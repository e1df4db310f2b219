"""runners.uids: a sandbox uid is never handed to two runs at once, whichever process runs them."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from runners.uids import UidLeaseError, UidLeases

BASE = 2_000_000_000


class Fixed(random.Random):
    def __init__(self, *picks: int) -> None:
        super().__init__()
        self.picks = list(picks)

    def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        return self.picks.pop(0)


HOLDER = """
import sys
from pathlib import Path
from runners.uids import UidLeases
leases = UidLeases(Path(sys.argv[1]), {base}, 1)
print(leases.acquire(), flush=True)
sys.stdin.read()
"""


def test_a_uid_held_by_another_process_is_skipped_and_freed_when_it_dies(tmp_path: Path) -> None:
    state = tmp_path / "uids"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(base=BASE + 7), str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert holder.stdout is not None and int(holder.stdout.readline()) == BASE + 7
        leases = UidLeases(state, BASE, 1 << 24, rng=Fixed(7, 7, 8))
        assert leases.acquire() == BASE + 8
    finally:
        holder.kill()
        holder.communicate()
    # SIGKILLed: the kernel dropped the lock, so the uid is free again (its stale file is reused).
    assert UidLeases(state, BASE + 7, 1).acquire() == BASE + 7


def test_release_unlinks_and_the_same_process_never_doubles(tmp_path: Path) -> None:
    leases = UidLeases(tmp_path / "uids", BASE, 1 << 24, rng=Fixed(1, 1, 2))
    first = leases.acquire()
    assert leases.acquire() == BASE + 2 and leases.held() == {first, BASE + 2}
    leases.release(first)
    assert not (tmp_path / "uids" / str(first)).exists() and leases.held() == {BASE + 2}
    leases.release(first)  # twice: harmless


def test_a_full_range_is_one_clear_error(tmp_path: Path) -> None:
    leases = UidLeases(tmp_path / "uids", BASE, 1)
    leases.acquire()
    with pytest.raises(UidLeaseError, match="no free sandbox uid"):
        leases.acquire()


def test_a_state_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "uids"
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    with pytest.raises(UidLeaseError, match="not a private folder"):
        UidLeases(state, BASE, 10).acquire()


def test_a_planted_symlink_lease_is_not_followed(tmp_path: Path) -> None:
    state = tmp_path / "uids"
    state.mkdir(mode=0o700)
    target = tmp_path / "victim"
    target.write_text("keep")
    (state / str(BASE + 3)).symlink_to(target)
    assert UidLeases(state, BASE, 1 << 24, rng=Fixed(3, 4)).acquire() == BASE + 4
    assert target.read_text() == "keep"
