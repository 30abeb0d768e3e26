"""Near-duplicate detectors over cluster centres, and Single-Pass clustering on top of them.

Single-Pass (the semantic-fingerprint paper): each new text is compared with the existing
cluster centres only; it joins the most similar centre within the threshold, else it starts a
cluster of its own and becomes that cluster's centre.  Comparing with centres only keeps a
chain of gradual edits from pulling unrelated texts into one cluster.

A detector keeps an index of centre features and answers "the best centre for these features".
Three are offered:

- ``simhash``: Manku block tables over Simhash fingerprints; similarity ``1 - distance / bits``.
- ``spotsigs``: the exact SpotSigs inverted index; similarity = multiset Jaccard.
- ``hybrid``: both indexes; a centre is a match when its SpotSigs Jaccard reaches tau *or* its
  Simhash lies within k bits; the best match is ranked by Jaccard.  SpotSigs keeps precision on
  pages that share boilerplate, Simhash adds the reordered or lightly edited copies whose spot
  sets drifted.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

from newsdedup.dedup.features import DocFeatures
from newsdedup.dedup.simhash_index import SimhashIndex
from newsdedup.dedup.spotsigs import multiset_jaccard
from newsdedup.dedup.spotsigs_index import SpotSigsIndex


@dataclass(frozen=True)
class Match:
    key: Hashable
    similarity: float


class NearDetector(Protocol):
    method: str

    def best_match(self, features: DocFeatures) -> Match | None: ...

    def add(self, key: Hashable, features: DocFeatures) -> None: ...

    def __len__(self) -> int: ...


class SimhashDetector:
    method = "simhash"

    def __init__(self, *, bits: int = 64, max_distance: int = 3) -> None:
        self.bits = bits
        self.index = SimhashIndex(bits=bits, max_distance=max_distance)

    def best_match(self, features: DocFeatures) -> Match | None:
        if features.simhash is None:
            raise ValueError("these features carry no Simhash: extract them with method simhash or hybrid")
        hits = self.index.query(features.simhash)
        if not hits:
            return None
        key, distance = hits[0]
        return Match(key, 1.0 - distance / self.bits)

    def add(self, key: Hashable, features: DocFeatures) -> None:
        if features.simhash is None:
            raise ValueError("these features carry no Simhash: extract them with method simhash or hybrid")
        self.index.add(key, features.simhash)

    def __len__(self) -> int:
        return len(self.index)


class SpotSigsDetector:
    method = "spotsigs"

    def __init__(self, *, tau: float = 0.5, min_signatures: int = 4) -> None:
        self.tau = tau
        self.index = SpotSigsIndex(tau=tau, min_signatures=min_signatures)

    def best_match(self, features: DocFeatures) -> Match | None:
        if not features.spots:
            return None
        hits = self.index.query(features.spots)
        return Match(*hits[0]) if hits else None

    def add(self, key: Hashable, features: DocFeatures) -> None:
        if features.spots is None:
            raise ValueError("these features carry no spot signatures: extract them with method spotsigs or hybrid")
        if features.spots:
            self.index.add(key, features.spots)

    def __len__(self) -> int:
        return len(self.index)


class HybridDetector:
    method = "hybrid"

    def __init__(self, *, bits: int = 64, max_distance: int = 3, tau: float = 0.5, min_signatures: int = 4) -> None:
        self.bits = bits
        self.tau = tau
        self.simhash_index = SimhashIndex(bits=bits, max_distance=max_distance)
        self.spots_index = SpotSigsIndex(tau=tau, min_signatures=min_signatures)
        # Centre features, needed to score a Simhash candidate by Jaccard.
        self._centre_spots: dict[Hashable, object] = {}

    def best_match(self, features: DocFeatures) -> Match | None:
        if features.simhash is None or features.spots is None:
            raise ValueError("hybrid needs Simhash and spot signatures: extract features with method hybrid")
        candidates: dict[Hashable, float] = {}
        if features.spots:
            for key, similarity in self.spots_index.query(features.spots):
                candidates[key] = similarity
        for key, distance in self.simhash_index.query(features.simhash):
            if key not in candidates:
                spots = self._centre_spots.get(key)
                jaccard = multiset_jaccard(features.spots, spots) if spots else 0.0
                # Reported similarity stays a Jaccard, but never below what Simhash vouches for.
                candidates[key] = max(jaccard, 1.0 - distance / self.bits)
        if not candidates:
            return None
        key = max(candidates, key=candidates.__getitem__)  # dict order breaks ties: earliest centre
        return Match(key, candidates[key])

    def add(self, key: Hashable, features: DocFeatures) -> None:
        if features.simhash is None or features.spots is None:
            raise ValueError("hybrid needs Simhash and spot signatures: extract features with method hybrid")
        self.simhash_index.add(key, features.simhash)
        if features.spots:
            self.spots_index.add(key, features.spots)
            self._centre_spots[key] = features.spots

    def __len__(self) -> int:
        return len(self.simhash_index)


@dataclass(frozen=True)
class NearSettings:
    method: str = "hybrid"
    simhash_bits: int = 64
    simhash_max_distance: int = 3
    spotsigs_tau: float = 0.5
    spotsigs_min_signatures: int = 4


def make_detector(settings: NearSettings) -> NearDetector:
    if settings.method == "simhash":
        return SimhashDetector(bits=settings.simhash_bits, max_distance=settings.simhash_max_distance)
    if settings.method == "spotsigs":
        return SpotSigsDetector(tau=settings.spotsigs_tau, min_signatures=settings.spotsigs_min_signatures)
    if settings.method == "hybrid":
        return HybridDetector(
            bits=settings.simhash_bits,
            max_distance=settings.simhash_max_distance,
            tau=settings.spotsigs_tau,
            min_signatures=settings.spotsigs_min_signatures,
        )
    raise ValueError(f"unknown near-duplicate method {settings.method!r}: choose simhash, spotsigs or hybrid")


@dataclass(frozen=True)
class Assignment:
    """Where Single-Pass put a document: its own new cluster, or an existing centre's."""

    cluster_id: Hashable
    duplicate_of: Hashable | None  # the centre it matched; None when it starts a cluster
    similarity: float | None

    @property
    def is_near_duplicate(self) -> bool:
        return self.duplicate_of is not None


class SinglePassClusterer:
    """Single-Pass clustering; the cluster id is the key of the cluster's first document."""

    def __init__(self, detector: NearDetector) -> None:
        self.detector = detector

    @property
    def method(self) -> str:
        return self.detector.method

    def assign(self, key: Hashable, features: DocFeatures) -> Assignment:
        match = self.detector.best_match(features)
        if match is not None:
            return Assignment(cluster_id=match.key, duplicate_of=match.key, similarity=match.similarity)
        self.detector.add(key, features)
        return Assignment(cluster_id=key, duplicate_of=None, similarity=None)

    def add_centre(self, key: Hashable, features: DocFeatures) -> None:
        """Restore a centre from storage (rebuilding the index when a crawl starts)."""
        self.detector.add(key, features)

    def __len__(self) -> int:
        return len(self.detector)


__all__ = [
    "Assignment",
    "HybridDetector",
    "Match",
    "NearDetector",
    "NearSettings",
    "SimhashDetector",
    "SinglePassClusterer",
    "SpotSigsDetector",
    "make_detector",
]
