"""Keeping the render cache under its bound removes only its own entries (issue 31, item 4).

The cache directory may hold files btp-gitops did not write (a user's, another tool's, planted):
the scan that bounds it counts and removes only files that are entries by name (a hex shard
directory, a hex key, `.json`), by kind (a regular file, no link followed) and by header (their
own key). Run through the CLI: a render that writes entries into a directory without a ledger
scans it, and a sparse file of 2 GiB puts it over the 1 GiB bound.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.conftest import EXAMPLES, RunCli
from tests.support.forged_cache import entries, without_packs

DAY = 24 * 3600


def _aged(path: Path, days: float) -> Path:
    when = time.time() - days * DAY
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def test_the_scan_over_the_bound_removes_nothing_but_entries(run_cli: RunCli, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the cache's")
    (cache / "zz").mkdir(parents=True)
    (cache / "ab").mkdir()
    notes, sparse = cache / "zz" / "notes.txt", cache / "ab" / ("0" * 62 + ".json")
    notes.write_text("a user's notes")  # a file in a two-character directory
    with sparse.open("wb") as handle:  # named as an entry, without an entry's header
        handle.truncate(2 << 30)  # 2 GiB that take no disk: over the 1 GiB bound
    planted = [_aged(notes, 3), _aged(sparse, 2)]  # used least recently, were they entries
    (cache / "cd").symlink_to(outside, target_is_directory=True)  # a link where a shard would be
    (cache / "ab" / ("1" * 62 + ".json")).symlink_to(outside / "keep.txt")

    without_packs(cache)  # the render keeps its records in entries
    result = run_cli("render", EXAMPLES / "cap-app", "--stdout", "--cache-dir", cache)
    assert result.returncode == 0, result.stderr
    # The render wrote an entry per tenant record and scanned (no ledger yet); the planted file
    # does not count, so they stay.
    clean = without_packs(tmp_path / "clean")
    assert run_cli("render", EXAMPLES / "cap-app", "--stdout", "--cache-dir", clean).returncode == 0
    own = [p for p in entries(cache) if not p.is_symlink() and p.stat().st_size < 1 << 20]
    assert len(own) == len(entries(clean))
    assert (cache / "usage").is_file()
    for path in planted:
        assert path.exists(), f"{path.name} was removed"
    assert planted[0].read_text() == "a user's notes"
    assert (outside / "keep.txt").read_text() == "not the cache's"
    assert (cache / "ab" / ("1" * 62 + ".json")).is_symlink()
