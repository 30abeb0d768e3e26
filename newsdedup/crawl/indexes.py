"""The dedup indexes of a crawl: the exact stage's Bloom filter, the near-duplicate clusterer and the passage-reuse
index of the stored stories.

They are caches of the store, the truth. With a state folder (``state_dir``, ``NEWSDEDUP_STATE_DIR``) the exact
filter and SpotSigs' near index persist there (:mod:`newsdedup.dedupstore.state`), and the passage-reuse index in
its ``reuse/`` (:meth:`newsdedup.crawl.reuse_index.StoryReuse.open`): :meth:`DedupIndexes.rebuild`
opens them (rolled back or caught up to the store, expired to the retention window) instead of rebuilding them,
and :meth:`DedupIndexes.after_commit` takes in each batch the store commits and saves them every few seconds, so a
crawl killed mid-run costs the next start only the rows stored after the last save; all are saved when it closes.
Without one, and for the other near-duplicate methods' index, :meth:`DedupIndexes.rebuild` reads the stored
fingerprints and the centres of the stories active in the retention window back into memory when a crawl opens (a
distributed crawl's writer, when it takes the role). E-Simhash's detector is also saved (:meth:`DedupIndexes.save`): its corpus statistics cover
every article seen, not only the centres a rebuild could re-add.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from newsdedup.crawl.reuse_index import StoryReuse
from newsdedup.dedup.engine import DedupEngine, ExactStage
from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.reuse import PendingSave
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector
from newsdedup.dedupstore.engine import clusterer_from_store, engine_from_store, save_engine_state, store_confirm
from newsdedup.dedupstore.state import SAVE_EVERY, FolderBusy, PendingBloom, PendingSpotSigsIndex, WindowState
from newsdedup.run import retention
from newsdedup.storage.base import ArticleStore, StoreError

logger = logging.getLogger(__name__)


class DedupIndexes:
    def __init__(self, features: FeatureConfig, near: NearSettings, *, exact_error_rate: float,
                 retention_days: float | None, reuse: bool = True, state_dir: Path | None = None) -> None:
        self.features = features
        self.near = near
        self.exact_error_rate = exact_error_rate
        self.retention_days = retention_days
        self.engine: DedupEngine | None = None  # the dedup decision, built by rebuild(); exact and clusterer are its stages
        self.reuse_enabled = reuse
        self.reuse: StoryReuse | None = None  # built by rebuild(); stays None with NEWSDEDUP_REUSE off
        self.state_dir = state_dir  # where the exact, near and reuse state persist; None: rebuilt at every start
        self.window: WindowState | None = None  # that state, opened by rebuild()
        self.following = True  # whether it takes in the store's commits (off after a failed write)
        self._reuse_saved_at = 0.0  # when the passage-reuse snapshot was last saved (time.monotonic())
        self._reuse_saves = True  # whether it is saved while the crawl commits (off after a failed save)
        self._reuse_save: _BackgroundSave | None = None  # the save being written in a thread
        self._stats = None  # the crawl's stats collector, from rebuild()

    @property
    def exact(self) -> ExactStage | None:
        """The engine's exact stage (None before :meth:`rebuild`)."""
        return None if self.engine is None else self.engine.exact

    @property
    def clusterer(self) -> SinglePassClusterer | None:
        """The engine's near-duplicate clusterer (None before :meth:`rebuild`)."""
        return None if self.engine is None else self.engine.clusterer

    def rebuild(self, store: ArticleStore, stats) -> None:
        """The indexes from the store's rows of the retention window; ``stats``: the crawl's stats collector.
        With a state folder the exact filter and SpotSigs' index are opened from it (caught up with the store)."""
        since = retention.window_start(self.retention_days)  # None: remember every stored story
        self.close()
        opened = None
        state_dir = self.state_dir  # None for this run when another process holds it
        if state_dir is not None:
            try:
                opened = self._open_state(store, stats, since)
            except FolderBusy as exc:  # another writer still closing it, or another crawl of the store
                logger.warning("dedup state: %s; this run keeps its indexes in memory, rebuilt from the store, and "
                               "leaves the folder alone", exc)
                stats.set_value("newsdedup/state/busy", 1)
                state_dir = None
            except OSError as exc:  # a folder it cannot write: this run rebuilds, as without one
                logger.error("dedup state in %s unusable (%s): rebuilt from the store for this run", self.state_dir, exc)
                self.close()
        if opened is None:
            rebuilt = engine_from_store(store, self.features, self.near, since=since, error_rate=self.exact_error_rate)
            self.engine = rebuilt.engine
            opened = rebuilt.known_fingerprints, rebuilt.known_centres
        known_fingerprints, known_centres = opened
        started = time.perf_counter()
        self.reuse = StoryReuse.open(store, None if state_dir is None else state_dir / "reuse",
                                     since=since) if self.reuse_enabled else None
        self._reuse_saved_at, self._reuse_saves, self._stats = time.monotonic(), True, stats
        stats.set_value("newsdedup/state/reuse_opened_s", round(time.perf_counter() - started, 3))
        if self.reuse is not None:
            stats.set_value("newsdedup/state/reuse_stories_read", self.reuse.stories_read)
        stats.set_value("newsdedup/exact/known_fingerprints", known_fingerprints)
        stats.set_value("newsdedup/near/known_centres", known_centres)
        logger.info("dedup state %s: %d fingerprints, %d cluster centres%s",
                    "rebuilt from the store" if self.window is None else f"opened from {self.state_dir}",
                    known_fingerprints, known_centres, f" (stories active since {since})" if since else "")

    def _open_state(self, store: ArticleStore, stats, since: str | None) -> tuple[int, int]:
        window, report = WindowState.open(self.state_dir, store, self.features, self.near,
                                          exact_error_rate=self.exact_error_rate,
                                          retention_days=self.retention_days, since=since)
        self.window, self.following = window, True
        exact = ExactStage(store_confirm(store, since), expected=1000, error_rate=self.exact_error_rate)
        exact.bloom = PendingBloom(window.exact, self.exact_error_rate)
        if window.near is not None:
            detector = make_detector(self.near)
            detector.spots.index = PendingSpotSigsIndex(window.near)
            clusterer, known_centres = SinglePassClusterer(detector), len(window.near)
        else:  # the other methods' index is rebuilt from the store
            clusterer, known_centres = clusterer_from_store(store, self.features, self.near, since=since)
        self.engine = DedupEngine(exact, clusterer)
        stats.set_value("newsdedup/state/opened_s", round(report.opened_s, 3))
        stats.set_value("newsdedup/state/caught_up_rows", report.caught_up_rows)
        stats.set_value("newsdedup/state/rebuilt", int(report.rebuilt or bool(report.rebuilt_parts)))
        logger.info("dedup state in %s %s in %.2f s, %d rows caught up%s", self.state_dir,
                    "built from the store" if report.rebuilt else
                    f"opened ({', '.join(report.rebuilt_parts)} built again: damaged)" if report.rebuilt_parts else
                    "opened", report.opened_s, report.caught_up_rows,
                    " (it was ahead of the store: rolled back)" if report.rolled_back else "")
        return window.known_fingerprints, known_centres

    def after_commit(self, store: ArticleStore) -> None:
        """The store committed a batch: the persisted state takes in its rows (saved every few seconds)."""
        self._save_reuse_when_due()
        if self.window is None or not self.following:
            return
        try:
            self.window.sync(store)
        except OSError as exc:
            # The store committed; only the cache lags. It stops following for this run (what the crawl adds stays
            # in memory beside it) and the next start catches up from the store.
            logger.error("dedup state in %s: %s; the next crawl catches up from the store", self.state_dir, exc)
            self.following = False
            return
        index = self.clusterer.detector.spots.index if self.window.near is not None else None
        if isinstance(index, PendingSpotSigsIndex):
            index.settle()

    def _save_reuse_when_due(self) -> None:
        """Save the passage-reuse snapshot every ``SAVE_EVERY`` seconds of a crawl that commits. Right after a commit
        (its mark then covers every story indexed), the index is copied in the reactor (the per-story arrays: 9 ms
        at a million stories) and its files are written in a thread (a dozen fsyncs, and after a merge a
        segment of up to 256 MB: 0.1 s to seconds, which the crawl does not wait for)."""
        reuse = self.reuse
        if reuse is None or reuse.folder is None or not self._reuse_saves:
            return
        if self._reuse_save is not None:
            if self._reuse_save.thread.is_alive():
                return
            self._end_reuse_save()
        if time.monotonic() - self._reuse_saved_at < SAVE_EVERY or not self._reuse_saves:
            return
        try:
            pending = reuse.begin_checkpoint()
        except (OSError, StoreError) as error:
            self._reuse_save_failed(error)
            return
        self._reuse_save = _BackgroundSave(pending)

    def _end_reuse_save(self) -> None:
        """The thread's save is written (or failed): take it in, in the reactor."""
        save, self._reuse_save = self._reuse_save, None
        save.thread.join()
        self._reuse_saved_at = time.monotonic()
        if save.error is not None:
            self._reuse_save_failed(save.error)
            return
        self.reuse.end_checkpoint(save.pending, save.seconds)
        if self._stats is not None:
            self._stats.inc_value("newsdedup/state/reuse_saves")

    def _reuse_save_failed(self, error: Exception) -> None:
        # The saved snapshot stays the last whole one (its meta is replaced last). No more tries this run but the
        # one at the close: the next start catches up from the store.
        logger.error("passage-reuse index not saved (%s): the next crawl reads the stories stored since its last save",
                     error)
        self._reuse_saves = False

    def close(self) -> None:
        """Save the persisted state whole (the crawl's end, after the store's last commit, so the saved state holds
        every committed story) and close its files."""
        if self._reuse_save is not None:
            self._end_reuse_save()  # waits for its thread: the save below writes the same folder
        if self.reuse is not None:
            try:
                self.reuse.checkpoint()
            except (OSError, StoreError) as error:  # the next start rebuilds it, or catches up from the last snapshot
                logger.error("passage-reuse index not saved: %s", error)
        if self.window is not None:
            try:
                if self.following:
                    self.window.checkpoint()
            except (OSError, StoreError) as exc:
                logger.error("dedup state in %s not saved (%s): the next crawl catches up from the store",
                             self.state_dir, exc)
            finally:
                self.window.close()
                self.window = None

    def save(self, store: ArticleStore) -> None:
        """Keep what a rebuild cannot recover (E-Simhash's detector); committed with the store's next flush."""
        if self.engine is not None:
            save_engine_state(store, self.engine)

    def publish_stats(self, stats) -> None:
        if self.exact is not None:
            stats.set_value("newsdedup/exact/bloom_maybe", self.exact.stats.bloom_maybe)
            stats.set_value("newsdedup/exact/bloom_false_positive", self.exact.stats.bloom_false_positive)
            stats.set_value("newsdedup/exact/bloom_bytes", self.exact.bloom.size_bytes)


class _BackgroundSave:
    """A passage-reuse snapshot written in a thread of its own (its files only: the index is not touched there)."""

    def __init__(self, pending: PendingSave) -> None:
        self.pending = pending
        self.error: Exception | None = None
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._write, name="newsdedup-reuse-save", daemon=True)
        self.thread.start()

    def _write(self) -> None:
        started = time.perf_counter()
        try:
            self.pending.write()
        except (OSError, ValueError) as error:  # a full disk, a folder gone, an id no integer: told in the reactor
            self.error = error
        self.seconds = time.perf_counter() - started


__all__ = ["DedupIndexes"]
