"""The dedup decision for one document: exact stage, then Single-Pass near-duplicate stage.

Shared by the crawl pipelines, :class:`newsdedup.Deduplicator` and ``newsdedup dedup`` so all decide alike.
Pure Python; the caller supplies how to confirm a fingerprint (the article store, or a dict for a stream).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

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
    """What a document is relative to the ones before it (the fields of ``newsdedup dedup``'s output, in order)."""

    id: Hashable
    """The document's key (a :class:`newsdedup.Deduplicator`'s ``id``; in the crawl, the article's)."""
    status: str
    """``unique`` (the first of its story), ``near_duplicate`` or ``exact_duplicate`` (:mod:`newsdedup.dedup.status`)."""
    duplicate_of: Hashable | None
    """The earlier document it matches: the centre of its story, or the one with the same text; None when unique."""
    cluster_id: Hashable | None
    """Its story: the key of the story's first document."""
    similarity: float | None
    """Estimated share of features the two texts have in common, in [0, 1], 4 decimals, the same measure for every
    method (:mod:`newsdedup.dedup.single_pass`); 1.0 for an exact duplicate, None when unique."""
    method: str
    """``exact`` for an exact duplicate, else the near-duplicate method (``spotsigs``, ``simhash``, ...)."""
    score: float | None = None
    """The method's own figure that decided, 4 decimals, named by :attr:`measure`."""
    measure: str | None = None
    """``exact``, ``jaccard``, ``containment`` (SpotSigs), ``hamming`` (Simhash bits apart) or ``cosine`` (DWDCS)."""
    reuses: tuple[dict, ...] = field(default=(), repr=False)
    """Passages it shares with earlier stories other than its own (:mod:`newsdedup.dedup.reuse`), most characters
    first, each in the form ``newsdedup export`` gives (``chars``, ``fraction``, ``source_fraction``, ``passages``,
    ``basis``) with ``source_id`` the other story's key; ``"quoted_by": true`` when that story, published after
    this document, quotes it (passages and fractions are then that story's view). Empty for an exact duplicate,
    and with reuse switched off (:class:`newsdedup.Deduplicator`'s ``reuse``)."""


class DedupEngine:
    """The decision for one document: the exact stage, then Single-Pass near-duplicate clustering.

    The one decision of every caller: the crawl's exact and near pipelines call :meth:`exact_verdict` and
    :meth:`near_verdict` (the article store confirms fingerprints and keeps the documents), so does
    :class:`newsdedup.Deduplicator` over a store; in memory it (and so ``newsdedup dedup``) and the evaluation call
    :meth:`process` of an engine built :meth:`in_memory`, which keeps the fingerprints of the documents it decided.
    """

    def __init__(self, exact: ExactStage, clusterer: SinglePassClusterer) -> None:
        self.exact = exact
        self.clusterer = clusterer
        self._first_by_fingerprint: dict[bytes, ExactRef] | None = None  # in memory: what confirms the Bloom filter

    @classmethod
    def in_memory(
        cls, clusterer: SinglePassClusterer, *, expected: int = 100_000,
        error_rate: float = defaults.NEWSDEDUP_EXACT_BLOOM_ERROR_RATE,
    ) -> DedupEngine:
        """An engine whose documents are kept in a dict (``expected`` of them sizes the Bloom filter)."""
        first_by_fingerprint: dict[bytes, ExactRef] = {}
        engine = cls(ExactStage(first_by_fingerprint.get, expected=expected, error_rate=error_rate), clusterer)
        engine._first_by_fingerprint = first_by_fingerprint
        return engine

    @property
    def method(self) -> str:
        return self.clusterer.method

    def exact_verdict(self, key: Hashable, fingerprint: bytes) -> Verdict | None:
        """An exact duplicate's verdict (``duplicate_of``: the key the confirming lookup returned), else None."""
        ref = self.exact.find(fingerprint)
        if ref is None:
            return None
        return Verdict(key, EXACT_DUPLICATE, ref.key, ref.cluster_id, 1.0, "exact", 1.0, "exact")

    def near_verdict(self, key: Hashable, features: DocFeatures, *,
                     confirm: Callable[[Hashable], bool] | None = None) -> Verdict:
        """Single-Pass: join the best matching story (near duplicate) or start one (unique, its own centre);
        ``confirm``: see :meth:`~newsdedup.dedup.single_pass.SinglePassClusterer.assign`."""
        assignment = self.clusterer.assign(key, features, confirm=confirm)
        match = assignment.match
        if match is None:
            return Verdict(key, UNIQUE, None, assignment.cluster_id, None, self.method)
        return Verdict(key, NEAR_DUPLICATE, assignment.duplicate_of, assignment.cluster_id, round(match.similarity, 4),
                       self.method, round(match.score, 4), match.measure)

    def process(self, key: Hashable, features: DocFeatures, *,
                confirm: Callable[[Hashable], bool] | None = None) -> Verdict:
        """Both stages, and the document kept (an engine built :meth:`in_memory`): a later copy of its text is an
        exact duplicate. Over a store, the caller stores the document and adds its fingerprint to :attr:`exact`."""
        if self._first_by_fingerprint is None:
            raise TypeError("process() keeps documents in memory: build the engine with DedupEngine.in_memory()")
        verdict = self.exact_verdict(key, features.fingerprint)
        if verdict is None:
            verdict = self.near_verdict(key, features, confirm=confirm)
            self._first_by_fingerprint[features.fingerprint] = ExactRef(key, verdict.cluster_id)
            self.exact.add(features.fingerprint)
        return verdict
