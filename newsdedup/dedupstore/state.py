"""The dedup state of a store's retention window, kept in a folder beside the store so that a crawl start and a
distributed writer's takeover open it in seconds instead of rebuilding it from every row of the window.

The store is the truth and this state a cache of it, written only from rows the store has committed:

``window.json`` and ``exact/``, ``near/`` (:class:`WindowState`)
    The exact stage's Bloom filter of fingerprints (:class:`~newsdedup.dedup.bloom_disk.PersistedBloomFilter`,
    filed by the day of their story's last activity) and, for SpotSigs, the near-duplicate index of the stories'
    centres (:class:`~newsdedup.dedup.spotsigs_disk.PersistentSpotSigsIndex`, each with its story's last
    activity as its time). Other near-duplicate methods keep rebuilding their index from the store.
``urls.json`` and ``urls/`` (:class:`UrlState`)
    The URL filter's Bloom filter of stored article and repeat URLs, filed by the day they were fetched. Skipped
    and failed pages become due again with time (a Bloom filter cannot forget one), so they are read from the
    store at each start (their tables are small).

Marks
    A state covers the store's articles and repeats up to two row ids (the *marks*, in the ``.json`` file, written
    after the parts were saved). Opening it checks them against the store's last committed rows: a state behind
    the store catches up from the rows above its marks (new centres added, stories that got a copy raised to
    their new last activity, fingerprints and URLs added); a state ahead of it (the store was restored from an
    older copy: a crash cannot cause it, nothing is written here before the store committed it) is rolled back
    (the parts drop what is above the store's rows, and the centres' times are set again from the store).
    A state that cannot be read, or was built for other thresholds, another method or a shorter retention
    window, is built again from the store, logged, never trusted.

Damage
    Every file of the state is listed with its checksum (XXH3-128) in the manifest that makes it part of the state
    (``window.json``, ``urls.json``, each part's ``MANIFEST.json``, which carry their own), and verified when the
    state opens, before it is used (:mod:`newsdedup.dedup.durable`). A file missing, cut, or written over (its size
    kept or not) is a warning naming it, and only its part is built again from the store: the exact filter, the
    near index (a segment, its log or its manifest), the URL filter; ``window.json`` or ``urls.json`` damaged,
    that state whole. The near index's log, appended between checkpoints, is checked by its records' CRCs up to
    the bytes made durable when the marks were last saved (``near_log`` in ``window.json``).

Lock
    A state opens only with its folder's lock held (``flock`` on ``<folder>/lock``, :func:`lock_folder`), so two
    processes never write one folder: a second writer (a distributed run's new writer while the old one still
    closes its state, a merge thread included; two crawls of one store) waits up to ``STATE_LOCK_WAIT`` seconds,
    then gets :class:`~newsdedup.dedup.durable.FolderBusy`: the crawl then keeps its indexes in memory, rebuilt
    from the store, and leaves the folder alone for that run (logged). The kernel drops the lock of a process that
    dies, ``kill -9`` included.

Retention
    :meth:`WindowState.expire` and :meth:`UrlState.expire` move the window's start: Bloom generations older than
    a day past it are dropped, older centres hidden (and compacted away at a checkpoint). No rebuild. A lookup
    the window's first day still answers "maybe" for is confirmed against the store, which knows the window
    exactly (the exact stage always confirms; the URL filter's keys of that day were handled anyway).

Pure Python and numpy over :class:`~newsdedup.storage.base.ArticleStore`; no Scrapy.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from newsdedup.clock import parse_instant
from newsdedup.dedup.bloom import BoundedBloomFilter
from newsdedup.dedup.bloom_disk import PersistedBloomFilter
from newsdedup.dedup.durable import FolderBusy, FolderLock, StateDamaged, lock_folder, read_manifest, write_manifest
from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.dedup.spotsigs_disk import PersistentSpotSigsIndex
from newsdedup.dedup.spotsigs_index import SpotSigsIndex
from newsdedup.dedupstore.engine import CentreFeatures
from newsdedup.storage.base import ArticleStore, StoredRow

logger = logging.getLogger(__name__)

FORMAT = 2  # 2: checksums (see Damage above)
ARTICLES, REPEATS = "articles", "repeats"  # the two row sequences a state follows
DAY = 86_400
#: Saves at most this often while a crawl commits (a state saved less often is only further behind after a
#: crash, and catches up); always when the crawl closes.
SAVE_EVERY = 10.0
CHUNK_ROWS = 100_000  # rows taken in at a time
#: The near index's largest segment: a query visits one more segment per this many stories (at 10,000,000 stories,
#: 40 segments of 250,000 gave a CPU p99 of 41 ms, 10 of 1,000,000 gave 12.9 ms). A segment is built by an
#: external sort in bounded memory: a million stories hold a few hundred MB while it is written (docs/performance.md).
#: Merges run in a thread (``background_merges``), so the writer never waits for one: a 1,000,000-story merge takes
#: ~80-90 s here.
NEAR_SEGMENT_DOCS = 1_000_000
#: Postings a near-duplicate search path reads across the persisted index, rarest spots first (PersistentSpotSigsIndex's
#: ``probe_budget``). It binds only on a large window (millions of stories), where it cuts a decision's tail (at
#: 10,000,000 stories in segments of a million: CPU p99 73.6 -> 12.9 ms). A near duplicate shares rare spots with
#: its original, so the pairs found stay the method's: at 10,000,000 synthetic stories every pair of a brute-force
#: scan (155 of 155; 5,000 found 153) and of the lossless search (808 of 808); on the 9,054 real Sina texts every
#: pair from a budget of 500 up; on the page-level benchmark's 1,640 texts no search changes even at 2,000
#: (benchmarks/dedup_state_scale.py, benchmarks/probe_budget_real.py; docs/performance.md).
NEAR_PROBE_BUDGET = 20_000
#: Seconds a state waits for its folder's lock before the crawl goes on without it (see Lock above): long enough for
#: a writer that lost its role to close its state (a merge in its thread stops at its next chunk, well under a
#: second); short, because the wait holds the process's event loop, and a distributed run counts a process whose
#: heartbeat stopped for 10 s (newsdedup.distributed.redis_run.LIVENESS) as dead.
STATE_LOCK_WAIT = 3.0


class StateUnusable(Exception):
    """The folder holds no state this crawl can use (missing, damaged, built for other settings)."""


class StateMissing(StateUnusable):
    """No state yet (the store's first crawl with one, or it was deleted)."""


def seconds(stored_time: str) -> int:
    """A stored time (ISO 8601, to the second) as whole seconds since 1970."""
    return int(parse_instant(stored_time).timestamp())


def _generations(retention_days: float | None) -> tuple[int, int]:
    """(seconds a Bloom generation, generations kept): a day each over the window, one for ever without one."""
    if retention_days is None:
        return 1 << 33, 1  # every time in one generation: nothing expires
    return DAY, math.ceil(retention_days) + 1


def _read_json(path: Path) -> dict:
    try:
        return read_manifest(path)
    except FileNotFoundError:
        raise StateMissing(f"no {path}") from None
    except OSError as exc:
        raise StateUnusable(f"{path} unreadable ({exc})") from None


def _write_json(path: Path, value: dict) -> None:
    """Replace ``path`` atomically (a crash leaves the old or the new file), with its checksum."""
    write_manifest(path, value)


@dataclass
class OpenReport:
    """How a state opened: the figures a crawl reports as ``newsdedup/state/*`` stats. ``rebuilt``: the whole
    state built from the store; ``rebuilt_parts``: the parts built again alone (a file of theirs was damaged)."""

    opened_s: float = 0.0
    caught_up_rows: int = 0
    rebuilt: bool = False
    rolled_back: bool = False
    rebuilt_parts: list[str] = field(default_factory=list)


class _FolderState:
    """What the two states share: a ``<name>.json`` (what it was built for, the marks, the window's start)
    beside its parts' folders; open or build, catch up, expire, save."""

    name = ""
    parts: tuple[str, ...] = ()

    def __init__(self, folder: Path, built_for: dict, since: str | None) -> None:
        self.folder = folder
        self.built_for = built_for
        self.window_start = 0 if since is None else seconds(since)
        self.marks = {ARTICLES: 0, REPEATS: 0}
        self._saved_at = 0.0
        self._saved: dict = {}  # the meta file as opened (what the parts need of it)
        self._meta_extra: dict = {}  # what the parts add to the meta file at each save
        self._rebuilt_parts: list[str] = []
        self._lock: FolderLock | None = None

    @property
    def meta_path(self) -> Path:
        return self.folder / f"{self.name}.json"

    # -- opening --------------------------------------------------------------------------------
    def _open(self, store: ArticleStore, lock_wait: float) -> OpenReport:
        started = time.perf_counter()
        self._lock = lock_folder(self.folder, wait=lock_wait)  # FolderBusy: another process writes the folder
        try:
            return self._open_locked(store, started)
        except BaseException:
            self.close()
            raise

    def _open_locked(self, store: ArticleStore, started: float) -> OpenReport:
        report = OpenReport()
        store_marks = {ARTICLES: store.last_article_id(), REPEATS: store.last_repeat_id()}
        try:
            meta = _read_json(self.meta_path)
            if meta.get("format") != FORMAT or meta.get("built_for") != self.built_for:
                raise StateUnusable(f"built for {meta.get('built_for')}, this crawl needs {self.built_for}")
            if self.window_start < meta["window_start"]:
                raise StateUnusable("the retention window grew: stories it expired are needed again")
            saved = {source: int(meta["marks"][source]) for source in (ARTICLES, REPEATS)}
            report.rolled_back = any(saved[source] > store_marks[source] for source in saved)
            self.marks = {source: min(saved[source], store_marks[source]) for source in saved}
            self._saved = meta
            self._load(store_marks)
        except (StateUnusable, OSError, ValueError, KeyError, TypeError) as exc:
            report.rolled_back = False
            # No state yet is the first crawl's lot; a meta file gone beside parts that were saved is damage.
            missing = isinstance(exc, StateMissing) and not any((self.folder / part).exists() for part in self.parts)
            logger.log(logging.INFO if missing else logging.WARNING,
                       "dedup state %s in %s: %s; building it from the store", self.name, self.folder, exc)
            self._close_parts()
            self._build(store)
            report.rebuilt = True
        if self._rebuilt_parts:  # their rows are read from the store again; the parts kept skip those they hold
            self.marks = {ARTICLES: 0, REPEATS: 0}
            report.rebuilt_parts = list(self._rebuilt_parts)
        report.caught_up_rows = self.sync(store, force_save=True, rolled_back=report.rolled_back)
        report.opened_s = time.perf_counter() - started
        return report

    def _damaged_part(self, part: str, exc: Exception) -> None:
        """A file of ``part`` cannot be trusted: a warning naming it, and the part goes, to be built again from the
        store (the other parts are kept)."""
        logger.warning("dedup state %s in %s: %s; building its %s part again from the store", self.name,
                       self.folder, exc, part)
        shutil.rmtree(self.folder / part, ignore_errors=True)
        self._rebuilt_parts.append(part)

    def _build(self, store: ArticleStore) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for part in self.parts:
            shutil.rmtree(self.folder / part, ignore_errors=True)
        self.meta_path.unlink(missing_ok=True)
        self.marks = {ARTICLES: 0, REPEATS: 0}
        self._create()

    # -- following the store --------------------------------------------------------------------
    def sync(self, store: ArticleStore, *, force_save: bool = False, rolled_back: bool = False) -> int:
        """Take in the rows the store committed above the marks; save when due. Returns the rows read."""
        last = {ARTICLES: store.last_article_id(), REPEATS: store.last_repeat_id()}
        articles = _up_to(store.iter_articles_after(self.marks[ARTICLES], spots=self._wants_spots), last[ARTICLES])
        repeats = _up_to(store.iter_repeats_after(self.marks[REPEATS]), last[REPEATS])
        count = self._apply(store, articles, repeats, rolled_back)
        self.marks = {source: max(self.marks[source], last[source]) for source in last}
        for bloom in self._filters():  # they cover the rows up to the marks (also those they had nothing to file for)
            for source, mark in self.marks.items():
                bloom.marks[source] = max(bloom.marks.get(source, -1), mark)
        if force_save or time.monotonic() - self._saved_at >= SAVE_EVERY:
            self.save()
        return count

    def expire(self, since: str | None) -> None:
        """Move the window's start to ``since`` (None: no window)."""
        if since is not None:
            self.window_start = max(self.window_start, seconds(since))
            self._expire(self.window_start)

    def save(self) -> None:
        """Save the parts, then the marks they cover (a crash between the two leaves the parts ahead of the marks:
        the rows between are taken in again, which changes nothing)."""
        self._save()
        _write_json(self.meta_path, {"format": FORMAT, "built_for": self.built_for, "marks": self.marks,
                                     "window_start": self.window_start, **self._meta_extra})
        self._saved_at = time.monotonic()

    # -- what a state supplies ------------------------------------------------------------------
    _wants_spots = False

    def _filters(self) -> list[PersistedBloomFilter]:
        raise NotImplementedError

    def _load(self, store_marks: dict[str, int]) -> None:
        raise NotImplementedError

    def _create(self) -> None:
        raise NotImplementedError

    def _apply(self, store: ArticleStore, articles: Iterator[StoredRow], repeats: Iterator[StoredRow],
               rolled_back: bool) -> int:
        raise NotImplementedError

    def _expire(self, before: int) -> None:
        raise NotImplementedError

    def _save(self) -> None:
        raise NotImplementedError

    def _close_parts(self) -> None:
        pass

    def close(self) -> None:
        """Close the parts' files and release the folder's lock (after them: a merge thread still writing holds it)."""
        try:
            self._close_parts()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def _up_to(rows: Iterator[StoredRow], last: int) -> Iterator[StoredRow]:
    """The rows up to ``last`` (the marks read before the rows: a row committed meanwhile waits for the next sync)."""
    for row in rows:
        if row.id > last:
            return
        yield row


def _chunks(rows: Iterator[StoredRow], size: int) -> Iterator[list[StoredRow]]:
    chunk: list[StoredRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _Centres:
    """Centres to add, as arrays: each one's distinct spots (ascending) and their counts."""

    def __init__(self) -> None:
        self.keys: list[int] = []
        self.times: list[int] = []
        self.spots: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []

    def add(self, key: int, time: int, spots: tuple[np.ndarray, np.ndarray]) -> None:
        self.keys.append(key), self.times.append(time), self.spots.append(spots[0]), self.counts.append(spots[1])

    def arrays(self) -> tuple[np.ndarray, ...]:
        """keys, times, offsets, spots, counts: what :meth:`PersistentSpotSigsIndex.bulk_add_arrays` takes."""
        offsets = np.zeros(len(self.keys) + 1, dtype=np.int64)
        np.cumsum([len(spots) for spots in self.spots], out=offsets[1:])
        return (np.array(self.keys, dtype=np.int64), np.array(self.times, dtype=np.int64), offsets,
                np.concatenate(self.spots), np.concatenate(self.counts))


class WindowState(_FolderState):
    """The exact stage's fingerprints and (SpotSigs) the near index's centres of the retention window."""

    name = "window"
    parts = ("exact", "near")

    def __init__(self, folder: Path, features: FeatureConfig, near: NearSettings, *, exact_error_rate: float,
                 retention_days: float | None, since: str | None) -> None:
        self.persists_near = near.method == "spotsigs"
        generation_seconds, generations = _generations(retention_days)
        built_for = {"exact_error_rate": exact_error_rate, "generation_seconds": generation_seconds,
                     "generations": generations, "near": None}
        if self.persists_near:
            built_for["near"] = {"method": near.method, "tau": near.spotsigs_tau,
                                 "min_signatures": near.spotsigs_min_signatures,
                                 "min_containment": self._index_containment(near)}
        super().__init__(folder, built_for, since)
        self.near_settings = near
        self.derive = CentreFeatures(features)
        self.exact: PersistedBloomFilter | None = None
        self.near: PersistentSpotSigsIndex | None = None

    @staticmethod
    def _index_containment(near: NearSettings) -> float:
        # The index answers containment queries from this bound up; without the fallback any valid value serves.
        return near.spotsigs_min_containment if near.spotsigs_min_containment is not None else 1.0

    @classmethod
    def open(cls, folder: str | Path, store: ArticleStore, features: FeatureConfig, near: NearSettings, *,
             exact_error_rate: float, retention_days: float | None, since: str | None,
             lock_wait: float = STATE_LOCK_WAIT) -> tuple[WindowState, OpenReport]:
        """The state in ``folder``, rolled back or caught up to ``store`` and expired to ``since``; built from the
        store when there is none fit for these settings, a part of it when a file of that part is damaged.
        FolderBusy when another process holds the folder past ``lock_wait`` seconds. :meth:`close` it."""
        state = cls(Path(folder), features, near, exact_error_rate=exact_error_rate, retention_days=retention_days,
                    since=since)
        report = state._open(store, lock_wait)
        state.expire(since)
        return state, report

    def _near_index(self, store_mark: int | None, log_synced: tuple[str, int] | None = None) -> PersistentSpotSigsIndex:
        settings = self.built_for["near"]
        return PersistentSpotSigsIndex(self.folder / "near", tau=settings["tau"],
                                       min_signatures=settings["min_signatures"],
                                       min_containment=settings["min_containment"], store_mark=store_mark,
                                       max_segment_docs=NEAR_SEGMENT_DOCS, auto_checkpoint=False,
                                       probe_budget=NEAR_PROBE_BUDGET, background_merges=True,
                                       log_synced=log_synced)

    def _load(self, store_marks: dict[str, int]) -> None:
        try:
            self.exact = PersistedBloomFilter.open(self.folder / "exact", store_marks=store_marks)
        except (OSError, ValueError, KeyError, TypeError) as exc:  # StateDamaged, a manifest deleted
            self._damaged_part("exact", exc)
            self._create_exact()
        else:
            for source in (ARTICLES, REPEATS):  # rolled back: take the dropped generations' rows in again
                self.marks[source] = min(self.marks[source], self.exact.marks.get(source, self.marks[source]))
        if self.persists_near:
            log = self._saved.get("near_log")
            try:
                if not (self.folder / "near" / "MANIFEST.json").exists():
                    raise StateDamaged(self.folder / "near" / "MANIFEST.json", "missing (deleted?)")
                self.near = self._near_index(store_marks[ARTICLES], tuple(log) if log else None)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self._damaged_part("near", exc)
                self.near = self._near_index(None)

    def _create_exact(self) -> None:
        generation_seconds, generations = self.built_for["generation_seconds"], self.built_for["generations"]
        self.exact = PersistedBloomFilter.create(self.folder / "exact", capacity=100_000,
                                                 error_rate=self.built_for["exact_error_rate"],
                                                 generations=generations, generation_seconds=generation_seconds)

    def _create(self) -> None:
        self._create_exact()
        self.near = self._near_index(None) if self.persists_near else None

    def _spots(self, row: StoredRow, store: ArticleStore) -> tuple[np.ndarray, np.ndarray]:
        """A centre's spot multiset as (distinct spots ascending, counts): from its stored column (the packed
        sorted occurrences), or derived from its text when the column does not serve the features."""
        if row.spots is not None and not self.derive.from_text:
            return np.unique(np.frombuffer(row.spots, dtype=np.uint64), return_counts=True)
        features = self.derive(row.fingerprint, None, row.spots, lambda: store.article_text(row.id))
        ordered = sorted((features.spots or {}).items())
        return (np.array([spot for spot, _ in ordered], dtype=np.uint64),
                np.array([count for _, count in ordered], dtype=np.int64))

    @property
    def _wants_spots(self) -> bool:
        return self.persists_near

    def _apply(self, store, articles, repeats, rolled_back) -> int:
        exact, near = self.exact, self.near
        old_mark = self.marks[ARTICLES]
        first_build = near is not None and old_mark == 0 and near.high_water_mark < 0
        touched: dict[int, int] = {}  # story -> its last activity now
        touched_by: dict[int, tuple[str, int]] = {}  # story -> the last row that gave it a copy
        count = 0
        for chunk in _chunks(articles, CHUNK_ROWS):  # memory bounded by a chunk, whatever the rows to take in
            count += len(chunk)
            keys, rows, times = [], [], []
            centres = _Centres()
            for row in chunk:
                active = seconds(row.active_at or row.fetched_at)
                if row.id > exact.marks.get(ARTICLES, -1):
                    keys.append(row.fingerprint), rows.append(row.id), times.append(active)
                if row.cluster_id is None:
                    continue
                if row.centre and row.cluster_id == row.id:
                    if near is not None and row.id > near.high_water_mark:
                        centres.add(row.id, active, self._spots(row, store))
                else:
                    touched[row.cluster_id] = active
                    touched_by[row.cluster_id] = (ARTICLES, row.id)
            exact.add_rows(keys, rows, times, source=ARTICLES)
            if centres.keys and first_build:
                near.bulk_add_arrays(*centres.arrays())  # straight into segments
            elif centres.keys:
                for key, active, spots, counts in zip(centres.keys, centres.times, centres.spots, centres.counts):
                    near.add(key, dict(zip(spots.tolist(), counts.tolist())), time=active)
                if near.needs_checkpoint:
                    near.checkpoint()  # every row taken in is committed: a checkpoint is always allowed
        for row in repeats:
            count += 1
            if row.cluster_id is not None:
                touched[row.cluster_id] = seconds(row.active_at or row.fetched_at)
                touched_by[row.cluster_id] = (REPEATS, row.id)
        if near is not None:
            for story, active in touched.items():
                near.touch(story, time=active)
            if rolled_back:
                # Times raised by rows the store does not have: set every centre's time again from the store.
                activity = np.array(list(store.iter_cluster_activity()), dtype=object).reshape(-1, 2)
                near.set_times(activity[:, 0].astype(np.int64),
                               np.array([seconds(t) for t in activity[:, 1]], dtype=np.int64))
        # A story that got a copy keeps the fingerprints of its earlier articles as long as it stays in the window:
        # they are filed again in the generation of its new activity.
        # Filed under the row that gave the story its copy: a rollback past that row drops them with it and the
        # catch-up from before it files them again.
        earlier = {story for story in touched if story <= old_mark}
        if earlier and old_mark > 0:
            again: dict[str, list[tuple[int, bytes, int]]] = {ARTICLES: [], REPEATS: []}
            for story, fingerprint in store.iter_cluster_fingerprints(earlier, up_to=old_mark):
                source, row = touched_by[story]
                again[source].append((row, fingerprint, touched[story]))
            for source, entries in again.items():
                entries.sort(key=lambda entry: entry[0])
                exact.add_rows([f for _, f, _ in entries], [row for row, _, _ in entries],
                               [t for _, _, t in entries], source=source, again=True)
        return count

    def _filters(self) -> list[PersistedBloomFilter]:
        return [self.exact]

    def _expire(self, before: int) -> None:
        self.exact.expire(before)
        if self.near is not None:
            self.near.expire(before)

    def _save(self) -> None:
        self.exact.save()
        if self.near is not None:
            if self.near.needs_checkpoint:
                self.near.checkpoint()
            # Its log holds what the last checkpoint does not: on disk before the marks, and its length with them
            # (a log read back shorter than that at the next open was damaged).
            self._meta_extra["near_log"] = self.near.sync_log()

    def checkpoint(self) -> None:
        """At the crawl's end: everything saved, the near index's log written into its segments (a merge still
        running is waited for and swapped in, so every run makes progress however short it is)."""
        if self.near is not None:
            self.near.checkpoint(wait=True)
        self.save()

    def _close_parts(self) -> None:
        if self.near is not None:
            self.near.close()
            self.near = None

    @property
    def known_fingerprints(self) -> int:
        return len(self.exact)


class UrlState(_FolderState):
    """The article and repeat URLs the URL filter knows (see the module docstring); ``key`` maps a URL to the
    form it is remembered by."""

    name = "urls"
    parts = ("urls",)

    def __init__(self, folder: Path, *, error_rate: float, retention_days: float | None, since: str | None,
                 key: Callable[[str], str]) -> None:
        generation_seconds, generations = _generations(retention_days)
        super().__init__(folder, {"error_rate": error_rate, "generation_seconds": generation_seconds,
                                  "generations": generations}, since)
        self.key = key
        self.since = since
        self.bloom: PersistedBloomFilter | None = None
        self.retry: BoundedBloomFilter | None = None  # skipped and failed pages not due again: read afresh

    @classmethod
    def open(cls, folder: str | Path, store: ArticleStore, *, error_rate: float, retention_days: float | None,
             since: str | None, key: Callable[[str], str],
             lock_wait: float = STATE_LOCK_WAIT) -> tuple[UrlState, OpenReport]:
        """The URL state in ``folder`` (see :meth:`WindowState.open`); :meth:`close` it."""
        state = cls(Path(folder), error_rate=error_rate, retention_days=retention_days, since=since, key=key)
        report = state._open(store, lock_wait)
        state.expire(since)
        retry = [key(url) for url in store.iter_retry_urls(since=since)]
        state.retry = BoundedBloomFilter.of(retry, expected=max(2 * len(retry), 100_000), error_rate=error_rate)
        return state, report

    def _load(self, store_marks: dict[str, int]) -> None:
        self.bloom = PersistedBloomFilter.open(self.folder / "urls", store_marks=store_marks)
        for source in (ARTICLES, REPEATS):
            self.marks[source] = min(self.marks[source], self.bloom.marks.get(source, self.marks[source]))

    def _create(self) -> None:
        self.bloom = PersistedBloomFilter.create(
            self.folder / "urls", capacity=100_000, error_rate=self.built_for["error_rate"],
            generations=self.built_for["generations"], generation_seconds=self.built_for["generation_seconds"])

    def _apply(self, store, articles, repeats, rolled_back) -> int:
        count = 0
        for source, rows in ((ARTICLES, articles), (REPEATS, repeats)):
            mark = self.bloom.marks.get(source, -1)
            for chunk in _chunks(rows, CHUNK_ROWS):  # a first build of 1,000,000 URLs held ~300 MB in lists at once
                keys, ids, times = [], [], []
                for row in chunk:
                    count += 1
                    fetched = seconds(row.fetched_at)
                    if row.id > mark and fetched >= self.window_start:
                        keys.append(self.key(row.url)), ids.append(row.id), times.append(fetched)
                self.bloom.add_rows(keys, ids, times, source=source)
        return count

    def _filters(self) -> list[PersistedBloomFilter]:
        return [self.bloom]

    def _expire(self, before: int) -> None:
        self.bloom.expire(before)

    def _save(self) -> None:
        self.bloom.save()

    def __contains__(self, key: str) -> bool:
        return key in self.bloom or (self.retry is not None and key in self.retry)

    def __len__(self) -> int:
        return len(self.bloom) + (0 if self.retry is None else len(self.retry))


class PendingBloom:
    """The exact stage's filter over a persisted one: the fingerprints this crawl added, until the store commits
    them and the state takes them in from its rows, are in a small in-memory filter beside it."""

    def __init__(self, persisted: PersistedBloomFilter, error_rate: float) -> None:
        self.persisted = persisted
        self.pending = BoundedBloomFilter(error_rate=error_rate)

    def __contains__(self, key: bytes) -> bool:
        return key in self.pending or key in self.persisted

    def add(self, key: bytes) -> None:
        self.pending.add(key)

    @property
    def size_bytes(self) -> int:
        return self.pending.size_bytes + self.persisted.size_bytes


class PendingSpotSigsIndex:
    """The near index over a persisted one: the centres this crawl added, until the store commits them and the
    state takes them in from its rows, are in an in-memory :class:`SpotSigsIndex` beside it. Answers as
    :class:`SpotSigsIndex` does (what :class:`~newsdedup.dedup.single_pass.SpotSigsMatcher` asks)."""

    def __init__(self, persisted: PersistentSpotSigsIndex) -> None:
        self.persisted = persisted
        self.pending = SpotSigsIndex(tau=persisted.tau, min_signatures=persisted.min_signatures)
        self.min_signatures = persisted.min_signatures
        self._pending_keys: list[int] = []  # ascending: article ids are given in order

    def settle(self) -> None:
        """Forget the pending centres the persisted index now holds (the store committed them)."""
        mark = self.persisted.high_water_mark
        while self._pending_keys and self._pending_keys[0] <= mark:
            self.pending.discard(self._pending_keys.pop(0))

    def add(self, key: int, spots) -> None:
        if self.pending.add(key, spots):
            self._pending_keys.append(key)

    @staticmethod
    def _merged(hits: list[tuple[int, float]]) -> list[tuple[int, float]]:
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits

    def query(self, spots, tau: float | None = None) -> list[tuple[int, float]]:
        return self._merged(self.persisted.query(spots, tau) + self.pending.query(spots, tau))

    def contained(self, spots, **limits) -> list[tuple[int, float]]:
        return self._merged(self.persisted.contained(spots, **limits) + self.pending.contained(spots, **limits))

    def jaccard(self, key: int, spots) -> float | None:
        return self.pending.jaccard(key, spots) if key in self.pending else self.persisted.jaccard(key, spots)

    def __contains__(self, key: object) -> bool:
        return key in self.pending or key in self.persisted

    def __len__(self) -> int:
        return len(self.pending) + len(self.persisted)


def default_state_dir(storage_uri: str, cache_home: str | None = None) -> Path | None:
    """Where a store's state lives by default: ``<database file>.state`` beside a SQLite file; for PostgreSQL a
    folder of this machine's cache named by host, port and database (each machine keeps its own copy and catches
    up from the database). None for an in-memory store."""
    from urllib.parse import urlsplit

    from newsdedup.storage import sqlite_file

    parts = urlsplit(storage_uri)
    if parts.scheme == "sqlite":
        path = sqlite_file(storage_uri)
        if not path or path == ":memory:" or path.startswith("file:"):
            return None
        return Path(path + ".state")
    base = Path(cache_home or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "newsdedup" / "state"
    database = parts.path.strip("/") or "postgres"
    return base / f"{parts.hostname or 'localhost'}-{parts.port or 5432}-{database}"


__all__ = ["FolderBusy", "OpenReport", "PendingBloom", "PendingSpotSigsIndex", "StateUnusable", "UrlState", "WindowState",
           "default_state_dir", "seconds"]
