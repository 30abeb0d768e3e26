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

from newsdedup.analysis import AnalysisPool, ExtractOptions
from newsdedup.dedup.engine import ExactRef, ExactStage
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor, unpack_spots
from newsdedup.ordering import InOrder
from newsdedup.dedup.single_pass import ESimhashDetector, NearSettings, SinglePassClusterer, make_detector
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleStore

logger = logging.getLogger(__name__)

_STATE_ATTRIBUTE = "_newsdedup_state"


def feature_config_from_settings(settings: BaseSettings) -> FeatureConfig:
    return FeatureConfig(
        method=settings.get("NEWSDEDUP_NEAR_METHOD", "spotsigs"),
        segmenter=settings.get("NEWSDEDUP_SEGMENTER", "auto"),
        user_dict=settings.get("NEWSDEDUP_SEGMENTER_USER_DICT"),
        stopwords=settings.get("NEWSDEDUP_STOPWORDS"),
        simhash_bits=settings.getint("NEWSDEDUP_SIMHASH_BITS", 64),
        simhash_features=settings.get("NEWSDEDUP_SIMHASH_FEATURES", "words"),
        antecedents=settings.get("NEWSDEDUP_SPOTSIGS_ANTECEDENTS", "optimized"),
        spot_chain=settings.getint("NEWSDEDUP_SPOTSIGS_CHAIN", 1),
        spot_distance=settings.getint("NEWSDEDUP_SPOTSIGS_DISTANCE", 1),
        dwdcs_key_concepts=settings.getint("NEWSDEDUP_DWDCS_KEY_CONCEPTS", 20),
        dwdcs_hub_candidates=settings.getint("NEWSDEDUP_DWDCS_HUB_CANDIDATES", 30),
        dwdcs_min_frequency=settings.getint("NEWSDEDUP_DWDCS_MIN_FREQUENCY", 2),
        dwdcs_merge_threshold=settings.getfloat("NEWSDEDUP_DWDCS_MERGE_THRESHOLD", 0.6),
        dwdcs_max_nodes=settings.getint("NEWSDEDUP_DWDCS_MAX_NODES", 400),
        dwdcs_synonyms=settings.get("NEWSDEDUP_DWDCS_SYNONYMS") or None,
    )


def _optional_float(value) -> float | None:
    """A float setting where None / "none" / "" switches the feature off (``-s NAME=none``)."""
    if value is None or str(value).strip().lower() in ("", "none", "off"):
        return None
    return float(value)


def near_settings_from_settings(settings: BaseSettings) -> NearSettings:
    return NearSettings(
        method=settings.get("NEWSDEDUP_NEAR_METHOD", "spotsigs"),
        simhash_bits=settings.getint("NEWSDEDUP_SIMHASH_BITS", 64),
        simhash_max_distance=settings.getint("NEWSDEDUP_SIMHASH_MAX_DISTANCE", 3),
        spotsigs_tau=settings.getfloat("NEWSDEDUP_SPOTSIGS_TAU", 0.5),
        spotsigs_min_signatures=settings.getint("NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES", 5),
        spotsigs_min_containment=_optional_float(settings.get("NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT", 0.8)),
        spotsigs_containment_min_spots=settings.getint("NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS", 10),
        esimhash_max_distance=settings.getint("NEWSDEDUP_ESIMHASH_MAX_DISTANCE", 10),
        esimhash_weight_cap=settings.getfloat("NEWSDEDUP_ESIMHASH_WEIGHT_CAP", 90.0),
        esimhash_max_bigrams=settings.getint("NEWSDEDUP_ESIMHASH_MAX_BIGRAMS", 2_000_000),
        dwdcs_cosine=settings.getfloat("NEWSDEDUP_DWDCS_COSINE", 0.9),
        dwdcs_max_variance=settings.getfloat("NEWSDEDUP_DWDCS_MAX_VARIANCE", 0.01),
        dwdcs_min_key_concepts=settings.getint("NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS", 5),
    )


@dataclass
class CrawlSettings:
    storage_uri: str
    batch_size: int
    workers: int | None
    extract: ExtractOptions
    features: FeatureConfig
    near: NearSettings
    exact_error_rate: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CrawlSettings:
        workers = settings.get("NEWSDEDUP_WORKERS")
        return cls(
            storage_uri=settings.get("NEWSDEDUP_STORAGE_URI", "sqlite:///newsdedup.sqlite"),
            batch_size=settings.getint("NEWSDEDUP_STORAGE_BATCH_SIZE", 100),
            workers=None if workers in (None, "") else int(workers),
            extract=ExtractOptions(
                min_chars=settings.getint("NEWSDEDUP_EXTRACT_MIN_CHARS", 150),
                max_bytes=settings.getint("NEWSDEDUP_EXTRACT_MAX_BYTES", 5_000_000),
            ),
            features=feature_config_from_settings(settings),
            near=near_settings_from_settings(settings),
            exact_error_rate=settings.getfloat("NEWSDEDUP_EXACT_BLOOM_ERROR_RATE", 1e-3),
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
        fingerprints = list(store.iter_fingerprints())

        def confirm(fingerprint: bytes) -> ExactRef | None:
            ref = store.find_by_fingerprint(fingerprint)
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
        for record in store.iter_cluster_centres():
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
        logger.info("dedup state rebuilt from the store: %d fingerprints, %d cluster centres",
                    len(fingerprints), centres)

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

