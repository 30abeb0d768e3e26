"""The dedup indexes of a crawl: the exact stage's Bloom filter, the near-duplicate clusterer and the passage-reuse
index of the stored stories.

They are caches of the store, the truth: :meth:`DedupIndexes.rebuild` reads the stored fingerprints and the
centres of the stories active in the retention window back into them when a crawl opens (a distributed crawl's
writer, when it takes the role). E-Simhash's detector is also saved (:meth:`DedupIndexes.save`): its corpus
statistics cover every article seen, not only the centres a rebuild could re-add.
"""

from __future__ import annotations

import logging
from pathlib import Path

from newsdedup.crawl.reuse_index import StoryReuse
from newsdedup.dedup.engine import DedupEngine, ExactStage
from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer
from newsdedup.dedup.store_engine import engine_from_store, save_engine_state
from newsdedup.run import retention
from newsdedup.storage.base import ArticleStore

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
        self.state_dir = state_dir  # where indexes are saved and opened from (NEWSDEDUP_STATE_DIR); None: rebuilt

    @property
    def exact(self) -> ExactStage | None:
        """The engine's exact stage (None before :meth:`rebuild`)."""
        return None if self.engine is None else self.engine.exact

    @property
    def clusterer(self) -> SinglePassClusterer | None:
        """The engine's near-duplicate clusterer (None before :meth:`rebuild`)."""
        return None if self.engine is None else self.engine.clusterer

    def rebuild(self, store: ArticleStore, stats) -> None:
        """The indexes from the store's rows of the retention window; ``stats``: the crawl's stats collector."""
        since = retention.window_start(self.retention_days)  # None: remember every stored story
        rebuilt = engine_from_store(store, self.features, self.near, since=since, error_rate=self.exact_error_rate)
        self.engine = rebuilt.engine
        self.reuse = StoryReuse.open(store, None if self.state_dir is None else self.state_dir / "reuse",
                                     since=since) if self.reuse_enabled else None
        stats.set_value("newsdedup/exact/known_fingerprints", rebuilt.known_fingerprints)
        stats.set_value("newsdedup/near/known_centres", rebuilt.known_centres)
        logger.info("dedup state rebuilt from the store: %d fingerprints, %d cluster centres%s",
                    rebuilt.known_fingerprints, rebuilt.known_centres, f" (stories active since {since})" if since else "")

    def save(self, store: ArticleStore) -> None:
        """Keep what a rebuild cannot recover (E-Simhash's detector; committed with the store's next flush) and save
        the passage-reuse index to the state folder (its stories above the store's last commit are read again
        at the next open)."""
        if self.engine is not None:
            save_engine_state(store, self.engine)
        if self.reuse is not None:
            try:
                self.reuse.checkpoint()
            except OSError as error:  # the next start rebuilds it, or catches up from the previous snapshot
                logger.error("passage-reuse index not saved: %s", error)

    def publish_stats(self, stats) -> None:
        if self.exact is not None:
            stats.set_value("newsdedup/exact/bloom_maybe", self.exact.stats.bloom_maybe)
            stats.set_value("newsdedup/exact/bloom_false_positive", self.exact.stats.bloom_false_positive)
            stats.set_value("newsdedup/exact/bloom_bytes", self.exact.bloom.size_bytes)


__all__ = ["DedupIndexes"]
