"""The dedup decision for one document: exact stage, then Single-Pass near-duplicate stage.

Shared by the crawl pipelines and ``newsdedup dedup`` so both decide alike.  Pure Python; the
caller supplies how to confirm a fingerprint (the article store, or a dict for a stream).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.dedup.bloom import BoundedBloomFilter
from newsdedup.dedup.features import DocFeatures
from newsdedup.dedup.single_pass import SinglePassClusterer
from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE, UNIQUE


@dataclass(frozen=True)
class ExactRef:
    """The earlier document an exact fingerprint belongs to."""

    key: Hashable
    cluster_id: Hashable | None


@dataclass
class ExactStats:
    checked: int = 0
    bloom_maybe: int = 0
    bloom_false_positive: int = 0
    repeats: int = 0


class ExactStage:
    """Bloom filter in front of an exact lookup: a Bloom "maybe" is confirmed, never trusted.

    ``confirm`` returns the earlier document with this fingerprint or None; only a confirmed
    repeat is reported, so a Bloom false positive costs one lookup and never loses a document.
    """

    def __init__(
        self,
        confirm: Callable[[bytes], ExactRef | None],
        *,
        expected: int = 100_000,
        error_rate: float = defaults.NEWSDEDUP_EXACT_BLOOM_ERROR_RATE,
    ) -> None:
        self._confirm = confirm
        self.bloom = BoundedBloomFilter(initial_capacity=max(expected, 1000), error_rate=error_rate)
        self.stats = ExactStats()

    def find(self, fingerprint: bytes) -> ExactRef | None:
        self.stats.checked += 1
        if fingerprint not in self.bloom:
            return None
        self.stats.bloom_maybe += 1
        ref = self._confirm(fingerprint)
        if ref is None:
            self.stats.bloom_false_positive += 1
            return None
        self.stats.repeats += 1
        return ref

    def add(self, fingerprint: bytes) -> None:
        self.bloom.add(fingerprint)


@dataclass(frozen=True)
class Verdict:
    status: str
    duplicate_of: Hashable | None
    cluster_id: Hashable | None
    similarity: float | None  # estimated overlap in [0, 1] (see newsdedup.dedup.single_pass)
    method: str
    score: float | None = None  # the method's own figure, named by ``measure``
    measure: str | None = None  # exact | jaccard | containment | hamming | cosine


class Deduplicator:
    """Exact stage then Single-Pass clustering, with an in-memory fingerprint table.

    For streams (``newsdedup dedup``); the crawl keeps its fingerprints in the article store
    and calls the two stages from separate pipelines.
    """

    def __init__(self, clusterer: SinglePassClusterer, *, expected: int = 100_000) -> None:
        self._first_by_fingerprint: dict[bytes, ExactRef] = {}
        self.exact = ExactStage(self._first_by_fingerprint.get, expected=expected)
        self.clusterer = clusterer

    def process(self, key: Hashable, features: DocFeatures) -> Verdict:
        ref = self.exact.find(features.fingerprint)
        if ref is not None:
            return Verdict(EXACT_DUPLICATE, ref.key, ref.cluster_id, 1.0, "exact", 1.0, "exact")
        assignment = self.clusterer.assign(key, features)
        self._first_by_fingerprint[features.fingerprint] = ExactRef(key, assignment.cluster_id)
        self.exact.add(features.fingerprint)
        match = assignment.match
        return Verdict(
            NEAR_DUPLICATE if match else UNIQUE, assignment.duplicate_of, assignment.cluster_id,
            match and match.similarity, self.clusterer.method, match and match.score, match and match.measure,
        )
