"""Turn an article body into everything the dedup stages compare: the CPU-heavy part.

One segmentation feeds both Simhash and SpotSigs.  :class:`FeatureExtractor` loads its
resources (segmenter dictionary, stopwords, IDF table, antecedents) once; the crawl runs one per
worker process, ``newsdedup dedup`` likewise, so the stages cost the same everywhere.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass

from newsdedup.dedup.simhash import char_shingle_features, default_idf, shingle_features, simhash, word_features
from newsdedup.dedup.spotsigs import load_antecedents, spot_signatures
from newsdedup.text.hashing import hash64, text_fingerprint
from newsdedup.text.normalize import is_word, normalize_text
from newsdedup.text.segment import get_segmenter
from newsdedup.text.stopwords import load_stopwords

METHODS = ("simhash", "spotsigs", "hybrid")
SIMHASH_FEATURES = ("words", "word_shingles", "chars")


@dataclass(frozen=True)
class FeatureConfig:
    """Plain, picklable settings of feature extraction (sent to worker processes)."""

    method: str = "hybrid"
    segmenter: str = "auto"
    user_dict: str | None = None
    stopwords: str | None = None
    simhash_bits: int = 64
    simhash_features: str = "words"
    antecedents: str = "optimized"
    spot_chain: int = 1
    spot_distance: int = 1

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown dedup method {self.method!r}: choose one of {', '.join(METHODS)}")
        if self.simhash_bits not in (64, 128):
            raise ValueError(f"simhash bits must be 64 or 128, got {self.simhash_bits}")
        if self.simhash_features not in SIMHASH_FEATURES:
            raise ValueError(
                f"unknown simhash features {self.simhash_features!r}: choose one of {', '.join(SIMHASH_FEATURES)}"
            )
        if self.spot_chain < 1 or self.spot_distance < 1:
            raise ValueError("SpotSigs chain length and distance must both be >= 1")

    @property
    def uses_simhash(self) -> bool:
        return self.method in ("simhash", "hybrid")

    @property
    def uses_spotsigs(self) -> bool:
        return self.method in ("spotsigs", "hybrid")


@dataclass
class DocFeatures:
    """What the exact and near-duplicate stages need of one document."""

    fingerprint: bytes
    simhash: int | None = None
    spots: Counter[int] | None = None


class FeatureExtractor:
    """Computes :class:`DocFeatures` for one configuration; build once per process."""

    def __init__(self, config: FeatureConfig) -> None:
        self.config = config
        self._segmenter = get_segmenter(config.segmenter, config.user_dict)
        self._stopwords = load_stopwords(config.stopwords)
        self._idf, self._default_idf = default_idf()
        self._antecedents = load_antecedents(config.antecedents) if config.uses_spotsigs else frozenset()

    def fingerprint(self, text: str) -> bytes:
        return text_fingerprint(normalize_text(text))

    def features(self, text: str) -> DocFeatures:
        normalized = normalize_text(text)
        doc = DocFeatures(fingerprint=text_fingerprint(normalized))
        config = self.config
        if not (config.uses_simhash or config.uses_spotsigs):
            return doc
        tokens = [t for t in self._segmenter.cut(normalized) if is_word(t)]
        if config.uses_simhash:
            if config.simhash_features == "words":
                weighted = word_features(tokens, self._stopwords, idf=self._idf, default_idf=self._default_idf)
            elif config.simhash_features == "word_shingles":
                weighted = shingle_features(tokens)
            else:
                weighted = char_shingle_features(normalized)
            doc.simhash = simhash(weighted, bits=config.simhash_bits)
        if config.uses_spotsigs:
            spots = spot_signatures(
                tokens, self._antecedents, chain_length=config.spot_chain, distance=config.spot_distance
            )
            # 64-bit hashes instead of strings: a tenth of the memory in the index, collisions negligible.
            hashed: Counter[int] = Counter()
            for spot, count in spots.items():
                hashed[hash64(spot)] += count
            doc.spots = hashed
        return doc


def pack_spots(spots: Counter[int] | None) -> bytes | None:
    """Serialise a spot multiset for storage (sorted uint64 hashes, repeated by count)."""
    if spots is None:
        return None
    return array("Q", sorted(spots.elements())).tobytes()


def unpack_spots(blob: bytes | None) -> Counter[int] | None:
    if blob is None:
        return None
    values = array("Q")
    values.frombytes(blob)
    return Counter(values)
