"""State the newsdedup pipelines share within one crawl: store, worker pool, dedup stages, order.

Each pipeline is a thin Scrapy component; they find the one :class:`CrawlState` of their
crawler through :meth:`CrawlState.of`.  The state opens with the first pipeline and closes
with the last (reference counted), rebuilding the in-memory dedup indexes from the store when
it opens: the database is the truth, the indexes are caches.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from newsdedup import options, retention
from newsdedup.analysis import AnalysisPool, ExtractOptions
from newsdedup.dedup.engine import ExactRef, ExactStage
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor, unpack_spots
from newsdedup.ordering import InOrder
from newsdedup.dedup.single_pass import ESimhashDetector, NearSettings, SinglePassClusterer, make_detector
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleStore

logger = logging.getLogger(__name__)

_STATE_ATTRIBUTE = "_newsdedup_state"


@dataclass
class CrawlSettings:
    storage_uri: str
    batch_size: int
    workers: int | None
    extract: ExtractOptions
    features: FeatureConfig
    near: NearSettings
    exact_error_rate: float
    retention_days: float | None = None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CrawlSettings:
        return cls(
            storage_uri=options.get_str(settings, "NEWSDEDUP_STORAGE_URI"),
            batch_size=options.get_int(settings, "NEWSDEDUP_STORAGE_BATCH_SIZE", minimum=1),
            workers=options.workers(settings),
            extract=options.extract_options(settings),
            features=options.feature_config(settings),
            near=options.near_settings(settings),
            exact_error_rate=options.get_float(settings, "NEWSDEDUP_EXACT_BLOOM_ERROR_RATE"),
            retention_days=retention.retention_days(settings),
        )


class CrawlState:
    def __init__(self, crawler: Crawler, settings: CrawlSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.order = InOrder()
        self.store: ArticleStore | None = None
        self.pool: AnalysisPool | None = None
        self.exact: ExactStage | None = None
        self.clusterer: SinglePassClusterer | None = None
        self._users = 0
        crawler.signals.connect(self._finished, signal=signals.item_scraped)
        crawler.signals.connect(self._finished, signal=signals.item_dropped)
        crawler.signals.connect(self._finished, signal=signals.item_error)

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlState:
        state = getattr(crawler, _STATE_ATTRIBUTE, None)
        if state is None:
            state = cls(crawler, CrawlSettings.from_settings(crawler.settings))
            setattr(crawler, _STATE_ATTRIBUTE, state)
        return state

    def _finished(self, item, **kwargs) -> None:
        ticket = getattr(item, "ticket", None)
        if ticket is not None:
            self.order.finish(ticket)

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        self._users += 1
        if self._users > 1:
            return
        s = self.settings
        self.store = open_store(s.storage_uri, batch_size=s.batch_size)
        self.store.open()
        self.pool = AnalysisPool(s.features, workers=s.workers)
        self.pool.start()
        self._rebuild_indexes()

    def close(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        if self.pool is not None:
            self.pool.shutdown()
        if self.store is not None:
            self._save_detector()
            self.store.close()
        self._publish_stats()

    def _rebuild_indexes(self) -> None:
        store = self.store
        assert store is not None
        since = retention.window_start(self.settings.retention_days)  # None: remember every stored story
        fingerprints = list(store.iter_fingerprints(since=since))

        def confirm(fingerprint: bytes) -> ExactRef | None:
            ref = store.find_by_fingerprint(fingerprint, since=since)
            return None if ref is None else ExactRef(ref, ref.cluster_id)

        self.exact = ExactStage(
            confirm, expected=2 * len(fingerprints) + 100_000, error_rate=self.settings.exact_error_rate
        )
        for fingerprint in fingerprints:
            self.exact.add(fingerprint)
        self.clusterer = SinglePassClusterer(self._restore_detector())
        restored = isinstance(self.clusterer.detector, ESimhashDetector)
        recompute: FeatureExtractor | None = None
        centres = 0
        for record in store.iter_cluster_centres(since=since):
            if restored and record.id in self.clusterer.detector:
                centres += 1  # restored from the saved state, with its statistics
                continue
            features = DocFeatures(record.fingerprint, record.simhash, unpack_spots(record.spots))
            config = self.settings.features
            if (
                (config.uses_simhash and features.simhash is None)
                or (config.uses_spotsigs and features.spots is None)
                or config.rebuilds_from_text  # E-Simhash words, DWDCS key concepts: not stored
            ):
                # Stored by another method or bit width: derive the missing features from the text once.
                recompute = recompute or FeatureExtractor(config)
                features = recompute.features(record.text)
            self.clusterer.add_centre(record.id, features)
            centres += 1
        stats = self.crawler.stats
        stats.set_value("newsdedup/exact/known_fingerprints", len(fingerprints))
        stats.set_value("newsdedup/near/known_centres", centres)
        logger.info("dedup state rebuilt from the store: %d fingerprints, %d cluster centres%s",
                    len(fingerprints), centres, f" (stories active since {since})" if since else "")

    def _state_name(self) -> str:
        return f"near/{self.settings.near.method}"

    def _restore_detector(self):
        """A fresh detector, or for E-Simhash the saved one: its corpus statistics cover every
        article seen, not only the cluster centres a rebuild could re-add."""
        near = self.settings.near
        if near.method == "esimhash":
            blob = self.store.load_state(self._state_name())
            if blob is not None:
                return ESimhashDetector.from_bytes(
                    blob, max_distance=near.esimhash_max_distance, weight_cap=near.esimhash_weight_cap,
                    max_bigrams=near.esimhash_max_bigrams,
                )
        return make_detector(near)

    def _save_detector(self) -> None:
        detector = self.clusterer.detector if self.clusterer is not None else None
        if isinstance(detector, ESimhashDetector):
            self.store.save_state(self._state_name(), detector.to_bytes())

    def _publish_stats(self) -> None:
        stats = self.crawler.stats
        if self.exact is not None:
            bloom = self.exact.bloom
            stats.set_value("newsdedup/exact/bloom_maybe", self.exact.stats.bloom_maybe)
            stats.set_value("newsdedup/exact/bloom_false_positive", self.exact.stats.bloom_false_positive)
            stats.set_value("newsdedup/exact/bloom_bytes", bloom.size_bytes)

