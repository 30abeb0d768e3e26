"""What a rebuild from the store would hold, to compare a persisted dedup state (newsdedup.dedupstore.state) with.

Used by the unit tests of the state and by the crawl tests that kill a crawl and restart it or damage its state.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO_ROOT

from newsdedup.dedup.bloom_disk import PersistedBloomFilter
from newsdedup.dedup.features import unpack_spots
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.dedup.spotsigs_disk import PersistentSpotSigsIndex
from newsdedup.dedupstore.state import seconds


def rebuilt_centres(store, *, since: str | None = None, near: NearSettings = NearSettings()) -> dict[int, int]:
    """The near index a rebuild makes: centre id -> its story's last activity (seconds), junk left out."""
    activity = story_activity(store)
    found = {}
    for record in store.iter_cluster_centres():
        spots = unpack_spots(record.spots)
        if since is not None and activity[record.id] < since:
            continue
        if spots and sum(spots.values()) >= near.spotsigs_min_signatures:
            found[record.id] = seconds(activity[record.id])
    return found


def story_activity(store) -> dict[int, str]:
    """Each story's last activity: the latest fetch of its pages, articles and exact repeats, read from the pages'
    own rows (not from the clusters table the state and the store's activity query keep)."""
    last: dict[int, str] = {}
    for row in itertools.chain(store.iter_articles_after(0), store.iter_repeats_after(0)):
        if row.cluster_id is not None and row.fetched_at > last.get(row.cluster_id, ""):
            last[row.cluster_id] = row.fetched_at
    return last


def rebuilt_fingerprints(store, *, since: str | None = None) -> set[bytes]:
    return set(store.iter_fingerprints(since=since))


def stored_urls(store) -> set[str]:
    """Article and repeat URLs of the store (every one is handled for good)."""
    return {row.url for row in store.iter_articles_after(0)} | {row.url for row in store.iter_repeats_after(0)}


def saved_state(folder: Path, near: NearSettings = NearSettings()):
    """The state as saved in ``folder``, read as is (no catch-up): (marks, near index, exact filter, URL filter)."""
    window = json.loads((folder / "window.json").read_text())
    index = PersistentSpotSigsIndex(folder / "near", tau=near.spotsigs_tau,
                                    min_signatures=near.spotsigs_min_signatures,
                                    min_containment=near.spotsigs_min_containment)
    index.expire(window["window_start"])
    exact = PersistedBloomFilter.open(folder / "exact")
    urls = PersistedBloomFilter.open(folder / "urls") if (folder / "urls.json").exists() else None
    return window["marks"], index, exact, urls


def export(db) -> dict[str, tuple]:
    """Each page's (status, similarity, story), its story as the set of its pages (a story's first page depends on
    the order concurrent fetches arrive in; which pages make a story does not)."""
    result = subprocess.run([sys.executable, "-m", "newsdedup.cli", "export", "--storage", f"sqlite:///{db}"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    stories: dict[int, set[str]] = {}
    for row in rows:
        stories.setdefault(row["cluster_id"], set()).add(row["url"].split("/", 3)[3])
    return {row["url"].split("/", 3)[3]: (row["status"], row["similarity"], frozenset(stories[row["cluster_id"]]))
            for row in rows}


def damage(path: Path, how: str) -> None:
    """Damage a file as a disk or a person might: ``cut`` (to half its size), written over in place with
    ``random bytes`` or ``zeroed`` (the same inode and size, as a disk error or a stray write leaves it), or
    ``deleted``. The file's bytes always change: a damage that left them as they were would test nothing."""
    before = path.read_bytes()
    if how == "cut":
        os.truncate(path, len(before) // 2)
    elif how == "deleted":
        path.unlink()
    elif how in ("random bytes", "zeroed"):
        after = bytes(len(before))
        while how == "random bytes" and (after := os.urandom(len(before))) == before:
            pass  # only a file of a byte or two can draw its own bytes again
        with open(path, "r+b") as handle:
            handle.write(after)
    else:
        raise ValueError(f"unknown damage {how!r}")
    assert how == "deleted" or path.read_bytes() != before, f"{how} left {path} as it was"


@contextlib.contextmanager
def folder_held(folder: Path) -> Iterator[subprocess.Popen]:
    """Another process holding ``folder``'s lock (newsdedup.dedup.durable.lock_folder) for the block; it is killed
    with SIGKILL after it, and waited for, so the kernel has dropped the lock when the block's next line runs."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from newsdedup.dedup.durable import lock_folder
        lock_folder(Path({str(folder)!r}))
        print("held", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.kill()
        holder.wait()
        holder.stdin.close()
        holder.stdout.close()
