"""The dedup indexes of a crawl: the exact stage's Bloom filter and the near-duplicate clusterer.

They are caches of the store, the truth: :meth:`DedupIndexes.rebuild` reads the stored fingerprints and the
centres of the stories active in the retention window back into them when a crawl opens (a distributed crawl's
writer, when it takes the role). E-Simhash's detector is also saved (:meth:`DedupIndexes.save`): its corpus
statistics cover every article seen, not only the centres a rebuild could re-add.
"""

from __future__ import annotations

import logging

from newsdedup.dedup.engine import ExactRef, ExactStage
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor, unpack_spots
from newsdedup.dedup.single_pass import ESimhashDetector, NearSettings, SinglePassClusterer, make_detector
from newsdedup.run import retention
from newsdedup.storage.base import ArticleStore

logger = logging.getLogger(__name__)


class DedupIndexes:
    def __init__(self, features: FeatureConfig, near: NearSettings, *, exact_error_rate: float,
                 retention_days: float | None) -> None:
        self.features = features
        self.near = near
        self.exact_error_rate = exact_error_rate
        self.retention_days = retention_days
        self.exact: ExactStage | None = None  # built by rebuild()
        self.clusterer: SinglePassClusterer | None = None

    def rebuild(self, store: ArticleStore, stats) -> None:
        """Both indexes from the store's rows of the retention window; ``stats``: the crawl's stats collector."""
        since = retention.window_start(self.retention_days)  # None: remember every stored story
        fingerprints = list(store.iter_fingerprints(since=since))

        def confirm(fingerprint: bytes) -> ExactRef | None:
            ref = store.find_by_fingerprint(fingerprint, since=since)
            return None if ref is None else ExactRef(ref, ref.cluster_id)

        self.exact = ExactStage(confirm, expected=2 * len(fingerprints) + 100_000, error_rate=self.exact_error_rate)
        for fingerprint in fingerprints:
            self.exact.add(fingerprint)
        self.clusterer = SinglePassClusterer(self._restore_detector(store))
        restored = isinstance(self.clusterer.detector, ESimhashDetector)
        recompute: FeatureExtractor | None = None
        in_window: list[int] = []  # the centres of stories active in the window
        for record in store.iter_cluster_centres(since=since):
            in_window.append(record.id)
            if restored and record.id in self.clusterer.detector:
                continue  # restored from the saved state, with its statistics
            features = DocFeatures(record.fingerprint, record.simhash, unpack_spots(record.spots))
            config = self.features
            if (
                (config.uses_simhash and features.simhash is None)
                or (config.uses_spotsigs and features.spots is None)
                or config.rebuilds_from_text  # E-Simhash words, DWDCS key concepts: not stored
            ):
                # Stored by another method or bit width: derive the missing features from the text once.
                recompute = recompute or FeatureExtractor(config)
                features = recompute.features(record.text)
            self.clusterer.add_centre(record.id, features)
        if restored:
            # The saved index holds every centre it ever indexed; a story past the retention window is no
            # longer matched (as with the other methods, rebuilt from the window's centres alone).
            self.clusterer.detector.retain(in_window)
        stats.set_value("newsdedup/exact/known_fingerprints", len(fingerprints))
        stats.set_value("newsdedup/near/known_centres", len(in_window))
        logger.info("dedup state rebuilt from the store: %d fingerprints, %d cluster centres%s",
                    len(fingerprints), len(in_window), f" (stories active since {since})" if since else "")

    def _state_name(self) -> str:
        return f"near/{self.near.method}"

    def _restore_detector(self, store: ArticleStore):
        """A fresh detector, or for E-Simhash the saved one."""
        near = self.near
        if near.method == "esimhash":
            blob = store.load_state(self._state_name())
            if blob is not None:
                return ESimhashDetector.from_bytes(
                    blob, max_distance=near.esimhash_max_distance, weight_cap=near.esimhash_weight_cap,
                    max_bigrams=near.esimhash_max_bigrams,
                )
        return make_detector(near)

    def save(self, store: ArticleStore) -> None:
        """Keep what a rebuild cannot recover (E-Simhash's detector); committed with the store's next flush."""
        detector = self.clusterer.detector if self.clusterer is not None else None
        if isinstance(detector, ESimhashDetector):
            store.save_state(self._state_name(), detector.to_bytes())

    def publish_stats(self, stats) -> None:
        if self.exact is not None:
            stats.set_value("newsdedup/exact/bloom_maybe", self.exact.stats.bloom_maybe)
            stats.set_value("newsdedup/exact/bloom_false_positive", self.exact.stats.bloom_false_positive)
            stats.set_value("newsdedup/exact/bloom_bytes", self.exact.bloom.size_bytes)


__all__ = ["DedupIndexes"]
