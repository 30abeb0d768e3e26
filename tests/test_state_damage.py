"""A damaged dedup state is never trusted (issue 33), in real crawls (``scrapy crawl portal`` subprocesses against a
local site): a file of the state folder cut, written over in place with random bytes or zeros (its size kept) or
deleted between two crawls; the second crawl names the file in a warning, builds that part again from the store, and stores
what a crawl over an undamaged state stores (every page once, the same statuses, similarities and stories). And a
state folder another process holds: the crawl waits, then decides from indexes rebuilt in memory, leaving the
folder alone.

One first crawl (70 distinct stories) makes the state every test damages a copy of; the second crawl finds 20
reprints of the first stories (even: exact, odd: near), decided against that state alone. The unit tests of each
file kind, on SQLite and PostgreSQL, are in tests/test_store_state.py, tests/test_spotsigs_disk.py,
tests/test_bloom_disk.py and tests/test_reuse_state.py.
"""

from __future__ import annotations

import shutil

import pytest

from faultsite import FaultSite, count, run_crawl
from state_helpers import damage, export, folder_held

REPRINTS = {n: (n - 70, "exact" if n % 2 == 0 else "near") for n in range(71, 91)}
DB = "news.sqlite"


def recorded(db) -> int:
    return count(db, "articles") + count(db, "repeats")


@pytest.fixture(scope="module")
def first_crawl(tmp_path_factory):
    """(the site, the folder of the first crawl's store and state, the clean second crawl's decisions)."""
    root = tmp_path_factory.mktemp("state-damage")
    with FaultSite(70, per_list=30, reprints=REPRINTS) as site:
        sites = site.write_sites(root)
        first = root / "first"
        first.mkdir()
        result = run_crawl(sites, first / DB)
        assert result.returncode == 0, result.stderr[-3000:]
        assert (first / f"{DB}.state" / "near" / "MANIFEST.json").exists()
        site.articles = 90  # the reprints appear on the list pages
        clean = copy_of(first, root / "clean")
        result = run_crawl(sites, clean / DB)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "'newsdedup/state/rebuilt': 0" in result.stderr and recorded(clean / DB) == 90
        decided = export(clean / DB)
        assert {status for status, *_ in decided.values()} == {"unique", "near_duplicate", "exact_duplicate"}
        yield site, sites, first, decided


def copy_of(first, folder):
    folder.mkdir()
    shutil.copy2(first / DB, folder / DB)
    shutil.copytree(first / f"{DB}.state", folder / f"{DB}.state")
    return folder


#: One file of each kind a state folder holds (the largest where there are several).
KINDS = {
    "near segment array": "near/seg-*/spots.npy",
    "exact Bloom generation": "exact/g*.bits",
    "reuse snapshot": "reuse/segment-*-keys.npy",
    "manifest": "near/MANIFEST.json",
}


@pytest.mark.parametrize("how", ["cut", "random bytes", "zeroed", "deleted"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_crawl_over_a_damaged_state_names_the_file_rebuilds_it_and_decides_as_over_a_whole_one(
        first_crawl, tmp_path, kind, how):
    site, sites, first, decided = first_crawl
    folder = copy_of(first, tmp_path / "run")
    target = sorted((folder / f"{DB}.state").glob(KINDS[kind]), key=lambda path: path.stat().st_size)[-1]
    damage(target, how)
    result = run_crawl(sites, folder / DB)
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line and str(target) in line]
    assert warnings, result.stderr[-3000:]
    if kind != "reuse snapshot":
        assert "'newsdedup/state/rebuilt': 1" in result.stderr
    assert recorded(folder / DB) == 90
    assert export(folder / DB) == decided


def test_a_state_folder_another_process_holds_is_left_alone_and_the_crawl_decides_as_over_it(first_crawl, tmp_path):
    """The second writer waits for the lock (STATE_LOCK_WAIT), then keeps its indexes in memory, rebuilt from the
    store, for this run: the same decisions, the folder untouched."""
    site, sites, first, decided = first_crawl
    folder = copy_of(first, tmp_path / "run")
    state = folder / f"{DB}.state"
    before = {path: path.read_bytes() for path in state.rglob("*") if path.is_file() and path.name != "lock"}
    with folder_held(state) as holder:
        result = run_crawl(sites, folder / DB)
    assert result.returncode == 0, result.stderr[-3000:]
    busy = [line for line in result.stderr.splitlines() if "WARNING" in line and f"pid {holder.pid}" in line]
    assert len(busy) == 2, result.stderr[-3000:]  # the dedup indexes' state and the URL filter's
    assert "'newsdedup/state/busy': 1" in result.stderr
    assert recorded(folder / DB) == 90
    assert export(folder / DB) == decided
    assert {path: path.read_bytes() for path in state.rglob("*") if path.is_file() and path.name != "lock"} == before
