"""Near-duplicate detectors over cluster centres, and Single-Pass clustering on top of them.

Single-Pass (the semantic-fingerprint paper): each new text is compared with the existing
cluster centres only; it joins the most similar centre within the threshold, else it starts a
cluster of its own and becomes that cluster's centre.  Comparing with centres only keeps a
chain of gradual edits from pulling unrelated texts into one cluster.

A detector keeps an index of centre features and answers "the best centre for these features".

Every match reports two numbers. ``similarity`` means the same for every method: an estimate, in
[0, 1], of how much of the two texts' features overlap (a Jaccard: shared / all); 1.0 is an exact
repeat. ``score`` is the method's own figure that made the decision, named by ``measure``:
``jaccard`` (SpotSigs multiset Jaccard), ``containment`` (share of the smaller text's spots found in
the larger), ``hamming`` (bits that differ between fingerprints) or ``cosine`` (DWDCS key concepts).
Rows of different methods stay comparable through ``similarity``; ``score`` explains each one.

- ``simhash``: Manku block tables over Simhash fingerprints; Charikar's fingerprints estimate the
  cosine of the weighted feature vectors as ``cos(pi * distance / bits)``, turned into a Jaccard.
- ``spotsigs``: the exact SpotSigs inverted index; similarity = multiset Jaccard.
- ``hybrid``: both indexes; the best SpotSigs match (Jaccard, then containment) when there is one,
  else the nearest centre whose Simhash lies within k bits.  SpotSigs keeps precision on pages that
  share boilerplate; Simhash adds lightly edited copies whose spot sets drifted.
- ``esimhash``: E-Simhash (:mod:`newsdedup.dedup.esimhash`), 128-bit fingerprints weighted with
  corpus statistics that the detector learns from every document it is shown.
- ``dwdcs``: DWDCS (:mod:`newsdedup.dedup.dwdcs`), key concepts of a concept network; cosine and
  position variance decide, an inverted index over key concepts finds the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Protocol

from newsdedup import defaults
from newsdedup.dedup.dwdcs import KeyConceptIndex
from newsdedup.dedup.esimhash import CorpusStatistics, ESimhashIndex
from newsdedup.dedup.features import DocFeatures
from newsdedup.dedup.simhash_index import SimhashIndex
from newsdedup.dedup.spotsigs import shared_of_longer
from newsdedup.dedup.spotsigs_index import SpotSigsIndex


@dataclass(frozen=True)
class Match:
    key: Hashable
    similarity: float  # estimated overlap (Jaccard) in [0, 1], comparable across methods
    score: float  # the method's own figure, as ``measure`` names it
    measure: str  # jaccard | containment | hamming | cosine


def jaccard_of_cosine(cosine: float) -> float:
    """The Jaccard of two equally large sets with this cosine: ``c / (2 - c)``.

    >>> jaccard_of_cosine(1.0), round(jaccard_of_cosine(0.9), 4)
    (1.0, 0.8182)
    """
    cosine = min(max(cosine, 0.0), 1.0)
    return cosine / (2.0 - cosine)


def hamming_match(key: Hashable, distance: int, bits: int) -> Match:
    """A fingerprint match: Simhash's expected cosine is ``cos(pi * d / b)`` (Charikar 2002).

    >>> hamming_match("a", 3, 64).similarity
    0.9786
    """
    similarity = jaccard_of_cosine(math.cos(math.pi * distance / bits))
    return Match(key, round(similarity, 4), float(distance), "hamming")


class NearDetector(Protocol):
    method: str

    def best_match(self, features: DocFeatures) -> Match | None: ...

    def add(self, key: Hashable, features: DocFeatures) -> None: ...

    def __len__(self) -> int: ...


class SimhashDetector:
    method = "simhash"

    def __init__(self, *, bits: int = defaults.NEWSDEDUP_SIMHASH_BITS, max_distance: int = defaults.NEWSDEDUP_SIMHASH_MAX_DISTANCE) -> None:
        self.bits = bits
        self.index = SimhashIndex(bits=bits, max_distance=max_distance)

    def best_match(self, features: DocFeatures) -> Match | None:
        if features.simhash is None:
            raise ValueError("these features carry no Simhash: extract them with method simhash or hybrid")
        hits = self.index.query(features.simhash)
        if not hits:
            return None
        key, distance = hits[0]
        return hamming_match(key, distance, self.bits)

    def add(self, key: Hashable, features: DocFeatures) -> None:
        if features.simhash is None:
            raise ValueError("these features carry no Simhash: extract them with method simhash or hybrid")
        self.index.add(key, features.simhash)

    def __len__(self) -> int:
        return len(self.index)


class SpotSigsMatcher:
    """SpotSigs over cluster centres: multiset Jaccard >= tau, then a containment fallback.

    Jaccard cannot see a short version of an article (its first third scores about 0.33) or a copy
    with much text added, yet the smaller text's spots are almost all in the larger one.  When no
    centre reaches tau, the index finds the centres whose containment (common spots / spots of the
    smaller text) is >= ``min_containment``, by prefix filtering, among centres at most
    1 / ``CONTAINMENT_MIN_RATIO`` times longer or shorter; the smaller
    text needs ``containment_min_spots`` spots so a headline-sized page is not "contained" in
    everything.  On the held-out half of the reprint benchmark (``newsdedup eval``, tau 0.5) the fallback
    at 0.8 raises pairwise F1 0.929 -> 0.971 and short-version recall 0.07 -> 0.96, no extra hard negative
    merged; at 0.7 it let one short, mostly-disclaimer centre absorb 15 articles carrying that disclaimer.
    ``containment_whole_below`` (off by default): a smaller text under that share of the larger's length must
    be wholly in it (:func:`~newsdedup.dedup.spotsigs.containment_match`). That keeps verbatim abridged copies
    and drops articles that took most of a shorter report but not all of it (real labelled pairs, test half, at
    0.6: F1 0.914 -> 0.939), but also short versions whose centre is an edited copy (synthetic F1 0.971 -> 0.962).
    """

    # Containment matches are looked for among documents at most this many times longer or shorter: a
    # short version is a third of the article, and a digest of many stories should not absorb each of them.
    CONTAINMENT_MIN_RATIO = 0.15

    def __init__(self, *, tau: float, min_signatures: int, min_containment: float | None,
                 containment_min_spots: int, containment_whole_below: float | None = None,
                 containment_min_share: float | None = None) -> None:
        if min_containment is not None and not 0.0 < min_containment <= 1.0:
            raise ValueError(f"min_containment must be in (0, 1] or None to switch it off, got {min_containment}")
        if containment_whole_below is not None and not 0.0 < containment_whole_below <= 1.0:
            raise ValueError("containment_whole_below must be in (0, 1] or None to switch it off, "
                             f"got {containment_whole_below}")
        self.tau = tau
        self.min_containment = min_containment
        self.containment_min_spots = containment_min_spots
        self.containment_whole_below = containment_whole_below
        if containment_min_share is not None and not 0.0 < containment_min_share <= 1.0:
            raise ValueError("containment_min_share must be in (0, 1] or None to switch it off, "
                             f"got {containment_min_share}")
        self.containment_min_share = containment_min_share
        self.index = SpotSigsIndex(tau=tau, min_signatures=min_signatures)

    def is_junk(self, spots) -> bool:
        """Too few spots to judge (script-only or headline-only text): never matched, never indexed."""
        return not spots or sum(spots.values()) < self.index.min_signatures

    def matches(self, spots) -> list[Match]:
        """Candidate centres, best first: Jaccard matches, else containment matches."""
        if self.is_junk(spots):
            return []
        hits = self.index.query(spots)
        if hits:
            return [Match(key, round(jaccard, 4), jaccard, "jaccard") for key, jaccard in hits]
        if self.min_containment is None:
            return []
        contained = self.index.contained(spots, min_containment=self.min_containment,
                                         min_spots=self.containment_min_spots, min_ratio=self.CONTAINMENT_MIN_RATIO,
                                         whole_below=self.containment_whole_below)
        # A short version is contained in its article but overlaps it only in part: similarity says how much.
        matches = [(key, self.jaccard(key, spots), containment) for key, containment in contained]
        if self.containment_min_share is not None:
            # The guideline's test (labels/GUIDELINE.md): a longer text whose own story outweighs what it shares
            # with the shorter one is another article reusing it, not a copy: no match, and the passage-reuse stage
            # records the relation.
            matches = [(key, jaccard, containment) for key, jaccard, containment in matches
                       if shared_of_longer(jaccard, containment) >= self.containment_min_share]
        return [Match(key, round(jaccard, 4), containment, "containment") for key, jaccard, containment in matches]

    def add(self, key: Hashable, spots) -> None:
        if not self.is_junk(spots):
            self.index.add(key, spots)

    def jaccard(self, key: Hashable, spots) -> float:
        value = self.index.jaccard(key, spots) if key in self.index else None
        return 0.0 if value is None else value


class SpotSigsDetector:
    method = "spotsigs"

    def __init__(self, *, tau: float = defaults.NEWSDEDUP_SPOTSIGS_TAU,
                 min_signatures: int = defaults.NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES,
                 min_containment: float | None = defaults.NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT,
                 containment_min_spots: int = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS,
                 containment_whole_below: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW,
                 containment_min_share: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SHARE) -> None:
        self.tau = tau
        self.spots = SpotSigsMatcher(tau=tau, min_signatures=min_signatures, min_containment=min_containment,
                                     containment_min_spots=containment_min_spots,
                                     containment_whole_below=containment_whole_below,
                                     containment_min_share=containment_min_share)

    def best_match(self, features: DocFeatures) -> Match | None:
        hits = self.spots.matches(features.spots)
        return hits[0] if hits else None

    def add(self, key: Hashable, features: DocFeatures) -> None:
        if features.spots is None:
            raise ValueError("these features carry no spot signatures: extract them with method spotsigs or hybrid")
        self.spots.add(key, features.spots)

    def __len__(self) -> int:
        return len(self.spots.index)


class HybridDetector:
    """SpotSigs (with its containment fallback); when it finds nothing, the nearest Simhash within k bits.

    Texts too short for SpotSigs to judge (script-only pages, bare headlines) are not matched by
    Simhash either: the reprint benchmark merged 40-68% of such junk through the Simhash path.
    """

    method = "hybrid"

    def __init__(self, *, bits: int = defaults.NEWSDEDUP_SIMHASH_BITS, max_distance: int = defaults.NEWSDEDUP_SIMHASH_MAX_DISTANCE,
                 tau: float = defaults.NEWSDEDUP_SPOTSIGS_TAU, min_signatures: int = defaults.NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES,
                 min_containment: float | None = defaults.NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT,
                 containment_min_spots: int = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS,
                 containment_whole_below: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW,
                 containment_min_share: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SHARE) -> None:
        self.bits = bits
        self.tau = tau
        self.simhash_index = SimhashIndex(bits=bits, max_distance=max_distance)
        self.spots = SpotSigsMatcher(tau=tau, min_signatures=min_signatures, min_containment=min_containment,
                                     containment_min_spots=containment_min_spots,
                                     containment_whole_below=containment_whole_below,
                                     containment_min_share=containment_min_share)

    def _check(self, features: DocFeatures) -> None:
        if features.simhash is None or features.spots is None:
            raise ValueError("hybrid needs Simhash and spot signatures: extract features with method hybrid")

    def best_match(self, features: DocFeatures) -> Match | None:
        self._check(features)
        if self.spots.is_junk(features.spots):
            return None
        hits = self.spots.matches(features.spots)
        if hits:
            # SpotSigs evidence first: an unrelated centre a few Simhash bits away must not outrank the
            # copy's own original (the papers' experiment b caught that in 27 of 5,400 copies).
            return hits[0]
        candidates = [(key, self.spots.jaccard(key, features.spots), distance)
                      for key, distance in self.simhash_index.query(features.simhash)]
        if not candidates:
            return None
        # Nearest fingerprint, then the larger Jaccard; the similarity is the better of the two overlap
        # estimates (spots, or what the fingerprint distance vouches for).
        key, jaccard, distance = min(candidates, key=lambda hit: (hit[2], -hit[1]))
        by_fingerprint = hamming_match(key, distance, self.bits)
        return Match(key, max(round(jaccard, 4), by_fingerprint.similarity), by_fingerprint.score, "hamming")

    def add(self, key: Hashable, features: DocFeatures) -> None:
        self._check(features)
        if self.spots.is_junk(features.spots):
            return
        self.simhash_index.add(key, features.simhash)
        self.spots.add(key, features.spots)

    def __len__(self) -> int:
        return len(self.simhash_index)


class ESimhashDetector:
    """E-Simhash over cluster centres; learns corpus statistics from every document it is shown.

    ``best_match`` first adds the document to the statistics (every document that reaches the near
    stage is stored, so the statistics are those of the stored articles), fingerprints it, then
    searches; ``add`` indexes that fingerprint. A document that ``best_match`` did not see (a centre
    restored from storage) is learnt by ``add``; a key already indexed (restored by :meth:`from_bytes`)
    is left as it is, so loading a snapshot then re-adding the stored centres counts nothing twice.
    """

    method = "esimhash"

    def __init__(
        self,
        *,
        bits: int = 128,
        max_distance: int = defaults.NEWSDEDUP_ESIMHASH_MAX_DISTANCE,
        weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP,
        tf: str = "count",
        max_bigrams: int = defaults.NEWSDEDUP_ESIMHASH_MAX_BIGRAMS,
        index: ESimhashIndex | None = None,
    ) -> None:
        self.index = index if index is not None else ESimhashIndex(
            bits=bits, max_distance=max_distance, weight_cap=weight_cap, tf=tf,
            statistics=CorpusStatistics(max_bigrams=max_bigrams),
        )
        self.bits = self.index.bits
        self._last: tuple[DocFeatures, int] | None = None  # the features best_match saw last, and their fingerprint

    def best_match(self, features: DocFeatures) -> Match | None:
        words = _content_words(features)
        fingerprint = self.index.learn(words)
        self._last = (features, fingerprint)
        hits = self.index.query(fingerprint)
        if not hits:
            return None
        key, distance = hits[0]
        return hamming_match(key, distance, self.bits)

    def add(self, key: Hashable, features: DocFeatures) -> None:
        if key in self.index:
            return
        if self._last is not None and self._last[0] is features:
            fingerprint = self._last[1]
        else:
            fingerprint = self.index.learn(_content_words(features))
        self._last = None
        self.index.add(key, fingerprint)

    def __contains__(self, key: object) -> bool:
        return key in self.index

    def __len__(self) -> int:
        return len(self.index)

    def retain(self, keys: Iterable[Hashable]) -> int:
        """Forget the centres not in ``keys`` (stories past the retention window); return how many."""
        return self.index.retain(keys)

    def to_bytes(self) -> bytes:
        """Corpus statistics and centre fingerprints (see :meth:`ESimhashIndex.to_bytes`)."""
        return self.index.to_bytes()

    @classmethod
    def from_bytes(
        cls, blob: bytes, *, max_distance: int = defaults.NEWSDEDUP_ESIMHASH_MAX_DISTANCE,
        weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP, tf: str = "count",
        max_bigrams: int = defaults.NEWSDEDUP_ESIMHASH_MAX_BIGRAMS,
    ) -> ESimhashDetector:
        return cls(index=ESimhashIndex.from_bytes(
            blob, max_distance=max_distance, weight_cap=weight_cap, tf=tf, max_bigrams=max_bigrams,
        ))


def _content_words(features: DocFeatures) -> list[str]:
    if features.content_words is None:
        raise ValueError("these features carry no content words: extract them with method esimhash")
    return features.content_words


class DWDCSDetector:
    """DWDCS over cluster centres: the key-concept inverted index; the score is the cosine."""

    method = "dwdcs"

    def __init__(self, *, cosine_threshold: float = defaults.NEWSDEDUP_DWDCS_COSINE,
                 max_variance: float = defaults.NEWSDEDUP_DWDCS_MAX_VARIANCE,
                 min_key_concepts: int = defaults.NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS) -> None:
        self.index = KeyConceptIndex(
            cosine_threshold=cosine_threshold, max_variance=max_variance, min_key_concepts=min_key_concepts
        )

    def best_match(self, features: DocFeatures) -> Match | None:
        hits = self.index.query(_key_concepts(features))
        if not hits:
            return None
        key, cosine = hits[0]
        return Match(key, round(jaccard_of_cosine(cosine), 4), cosine, "cosine")

    def add(self, key: Hashable, features: DocFeatures) -> None:
        self.index.add(key, _key_concepts(features))

    def __len__(self) -> int:
        return len(self.index)


def _key_concepts(features: DocFeatures):
    if features.key_concepts is None:
        raise ValueError("these features carry no key concepts: extract them with method dwdcs")
    return features.key_concepts


@dataclass(frozen=True)
class NearSettings:
    """The near-duplicate stage's parameters; defaults are the ``NEWSDEDUP_*`` ones of newsdedup.defaults."""

    method: str = defaults.NEWSDEDUP_NEAR_METHOD
    simhash_bits: int = defaults.NEWSDEDUP_SIMHASH_BITS
    simhash_max_distance: int = defaults.NEWSDEDUP_SIMHASH_MAX_DISTANCE
    spotsigs_tau: float = defaults.NEWSDEDUP_SPOTSIGS_TAU
    spotsigs_min_signatures: int = defaults.NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES
    spotsigs_min_containment: float | None = defaults.NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT
    spotsigs_containment_min_spots: int = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS
    spotsigs_containment_whole_below: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW
    spotsigs_containment_min_share: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SHARE
    esimhash_max_distance: int = defaults.NEWSDEDUP_ESIMHASH_MAX_DISTANCE
    esimhash_weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP
    esimhash_max_bigrams: int = defaults.NEWSDEDUP_ESIMHASH_MAX_BIGRAMS
    dwdcs_cosine: float = defaults.NEWSDEDUP_DWDCS_COSINE
    dwdcs_max_variance: float = defaults.NEWSDEDUP_DWDCS_MAX_VARIANCE
    dwdcs_min_key_concepts: int = defaults.NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS


def _spotsigs_arguments(settings: NearSettings) -> dict:
    return {
        "tau": settings.spotsigs_tau,
        "min_signatures": settings.spotsigs_min_signatures,
        "min_containment": settings.spotsigs_min_containment,
        "containment_min_spots": settings.spotsigs_containment_min_spots,
        "containment_whole_below": settings.spotsigs_containment_whole_below,
        "containment_min_share": settings.spotsigs_containment_min_share,
    }


def make_detector(settings: NearSettings) -> NearDetector:
    if settings.method == "simhash":
        return SimhashDetector(bits=settings.simhash_bits, max_distance=settings.simhash_max_distance)
    if settings.method == "spotsigs":
        return SpotSigsDetector(**_spotsigs_arguments(settings))
    if settings.method == "hybrid":
        return HybridDetector(
            bits=settings.simhash_bits, max_distance=settings.simhash_max_distance, **_spotsigs_arguments(settings)
        )
    if settings.method == "esimhash":
        return ESimhashDetector(
            max_distance=settings.esimhash_max_distance,
            weight_cap=settings.esimhash_weight_cap,
            max_bigrams=settings.esimhash_max_bigrams,
        )
    if settings.method == "dwdcs":
        return DWDCSDetector(
            cosine_threshold=settings.dwdcs_cosine,
            max_variance=settings.dwdcs_max_variance,
            min_key_concepts=settings.dwdcs_min_key_concepts,
        )
    raise ValueError(
        f"unknown near-duplicate method {settings.method!r}: choose simhash, spotsigs, hybrid, esimhash or dwdcs"
    )


@dataclass(frozen=True)
class Assignment:
    """Where Single-Pass put a document: its own new cluster, or an existing centre's."""

    cluster_id: Hashable
    duplicate_of: Hashable | None  # the centre it matched; None when it starts a cluster
    match: Match | None = None

    @property
    def similarity(self) -> float | None:
        return None if self.match is None else self.match.similarity

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

    def assign(self, key: Hashable, features: DocFeatures, *,
               confirm: Callable[[Hashable], bool] | None = None) -> Assignment:
        """Join the best matching centre, or start a cluster. ``confirm(centre)``, when given, may refuse the match
        on what the features do not hold (two caption pages of one event share their caption formula's spots,
        :mod:`newsdedup.dedup.captions`): the document then starts a cluster of its own."""
        match = self.detector.best_match(features)
        if match is not None and (confirm is None or confirm(match.key)):
            return Assignment(cluster_id=match.key, duplicate_of=match.key, match=match)
        self.detector.add(key, features)
        return Assignment(cluster_id=key, duplicate_of=None)

    def add_centre(self, key: Hashable, features: DocFeatures) -> None:
        """Restore a centre from storage (rebuilding the index when a crawl starts)."""
        self.detector.add(key, features)

    def __len__(self) -> int:
        return len(self.detector)


__all__ = [
    "Assignment",
    "DWDCSDetector",
    "ESimhashDetector",
    "HybridDetector",
    "Match",
    "NearDetector",
    "NearSettings",
    "SimhashDetector",
    "SinglePassClusterer",
    "SpotSigsDetector",
    "make_detector",
]
