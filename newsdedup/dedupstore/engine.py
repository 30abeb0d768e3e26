"""A :class:`~newsdedup.dedup.engine.DedupEngine` over an article store: the crawl's and the library's.

The store is the truth and the engine's indexes are caches of it: :func:`engine_from_store` builds the exact
stage (a Bloom filter of the stored fingerprints, each "maybe" confirmed by the store) and the Single-Pass index
of the stored cluster centres; :func:`save_engine_state` keeps what cannot be rebuilt from rows (E-Simhash's
corpus statistics). The crawl (:mod:`newsdedup.crawl.pipelines.state`) and :class:`newsdedup.Deduplicator`
with a store both call them, so a store continues the same way whichever of them wrote it last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from newsdedup import defaults
from newsdedup.dedup.engine import DedupEngine, ExactRef, ExactStage
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor, pack_spots, unpack_spots
from newsdedup.dedup.single_pass import ESimhashDetector, NearDetector, NearSettings, SinglePassClusterer, make_detector
from newsdedup.storage.base import ArticleStore


class StoredEngine(NamedTuple):
    engine: DedupEngine
    known_fingerprints: int  # stored articles in the window, in the exact stage
    known_centres: int  # stories in the window, in the near index


def engine_from_store(
    store: ArticleStore, features: FeatureConfig, near: NearSettings, *, since: str | None = None,
    error_rate: float = defaults.NEWSDEDUP_EXACT_BLOOM_ERROR_RATE,
) -> StoredEngine:
    """The engine of what ``store`` holds (with ``since``: of the stories active since then, the retention window).

    The engine's keys are the store's: exact matches return the earlier article's
    :class:`~newsdedup.storage.base.StoredRef`, near matches its article id.
    """
    fingerprints = list(store.iter_fingerprints(since=since))
    exact = ExactStage(store_confirm(store, since), expected=2 * len(fingerprints) + 100_000, error_rate=error_rate)
    for fingerprint in fingerprints:
        exact.add(fingerprint)
    clusterer, known_centres = clusterer_from_store(store, features, near, since=since)
    return StoredEngine(DedupEngine(exact, clusterer), len(fingerprints), known_centres)


def store_confirm(store: ArticleStore, since: str | None) -> Callable[[bytes], ExactRef | None]:
    """The exact stage's confirmation of a Bloom "maybe": the store's latest article with the fingerprint in the window."""

    def confirm(fingerprint: bytes) -> ExactRef | None:
        ref = store.find_by_fingerprint(fingerprint, since=since)
        return None if ref is None else ExactRef(ref, ref.cluster_id)

    return confirm


def clusterer_from_store(store: ArticleStore, features: FeatureConfig, near: NearSettings, *,
                         since: str | None = None) -> tuple[SinglePassClusterer, int]:
    """The Single-Pass clusterer of the centres of the stories active since ``since``, and how many there are."""
    detector = _restore_detector(store, near)
    restored = detector if isinstance(detector, ESimhashDetector) else None  # with its statistics
    clusterer = SinglePassClusterer(detector)
    derive = CentreFeatures(features)
    in_window: list[int] = []  # the centres of stories active in the window
    for record in store.iter_cluster_centres(since=since):
        in_window.append(record.id)
        if restored is not None and record.id in restored:
            continue  # restored from the saved state, with its statistics
        clusterer.add_centre(record.id, derive(record.fingerprint, record.simhash, record.spots, lambda: record.text))
    if restored is not None:
        # The saved index holds every centre it ever indexed; a story past the retention window is no
        # longer matched (as with the other methods, rebuilt from the window's centres alone).
        restored.retain(in_window)
    return clusterer, len(in_window)


class CentreFeatures:
    """A stored centre's features for the near index: its stored columns, or derived from its text when the
    columns do not serve ``features`` (stored by another method or bit width; E-Simhash words and DWDCS key
    concepts are not stored)."""

    def __init__(self, features: FeatureConfig) -> None:
        self.features = features
        self._extractor: FeatureExtractor | None = None

    @property
    def from_text(self) -> bool:
        """Whether every centre's features come from its text (E-Simhash words, DWDCS key concepts: not stored)."""
        return self.features.rebuilds_from_text

    def __call__(self, fingerprint: bytes, simhash: int | None, spots: bytes | None,
                 text: Callable[[], str | None]) -> DocFeatures:
        features = self.features
        doc = DocFeatures(fingerprint, simhash, unpack_spots(spots))
        if (
            (features.uses_simhash and doc.simhash is None)
            or (features.uses_spotsigs and doc.spots is None)
            or self.from_text
        ):
            self._extractor = self._extractor or FeatureExtractor(features)
            doc = self._extractor.features(text() or "")
        return doc


def save_engine_state(store: ArticleStore, engine: DedupEngine) -> None:
    """Keep in ``store`` what its rows cannot rebuild: E-Simhash's corpus statistics of every article seen,
    not only of the cluster centres a rebuild re-adds. Committed with the store's next flush."""
    detector = engine.clusterer.detector
    if isinstance(detector, ESimhashDetector):
        store.save_state(_state_name(detector.method), detector.to_bytes())


def stored_features(features: DocFeatures) -> dict:
    """The ``simhash`` and ``spots`` columns of an :class:`~newsdedup.storage.base.ArticleRecord`."""
    simhash = features.simhash
    # The column holds 64-bit fingerprints; a 128-bit one is re-derived from the text on rebuild.
    return {"simhash": simhash if simhash is not None and simhash < 2**64 else None, "spots": pack_spots(features.spots)}


def _state_name(method: str) -> str:
    return f"near/{method}"


def _restore_detector(store: ArticleStore, near: NearSettings) -> NearDetector:
    """A fresh detector, or for E-Simhash the saved one (its statistics cover every article seen)."""
    if near.method == "esimhash":
        blob = store.load_state(_state_name(near.method))
        if blob is not None:
            return ESimhashDetector.from_bytes(
                blob, max_distance=near.esimhash_max_distance, weight_cap=near.esimhash_weight_cap,
                max_bigrams=near.esimhash_max_bigrams,
            )
    return make_detector(near)


__all__ = ["CentreFeatures", "StoredEngine", "clusterer_from_store", "engine_from_store", "save_engine_state",
           "store_confirm", "stored_features"]
