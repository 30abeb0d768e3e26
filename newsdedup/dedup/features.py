"""Turn an article body into everything the dedup stages compare: the CPU-heavy part.

One segmentation feeds every method (Simhash, SpotSigs, E-Simhash, DWDCS).  Only per-document work
happens here: E-Simhash weighs words with statistics of the whole corpus, which evolve from document to
document, so the worker hands over the content words and the detector in the main process weighs them.
:class:`FeatureExtractor` loads its resources (segmenter dictionary, stopwords, IDF table, antecedents)
once; the crawl runs one per worker process, ``newsdedup dedup`` likewise, so the stages cost the same
everywhere.
"""

from __future__ import annotations

import os
from array import array
from collections import Counter
from dataclasses import dataclass

from newsdedup import defaults
from newsdedup.dedup.dwdcs import KeyConceptExtractor, KeyConcepts, load_synonyms
from newsdedup.dedup.simhash import (  # _is_dropped_token: the one filter of word_features, shared
    _is_dropped_token,
    char_shingle_features,
    default_idf,
    shingle_features,
    simhash,
    word_features,
)
from newsdedup.dedup.spotsigs import load_antecedents, spot_signatures
from newsdedup.text.hashing import hash64, text_fingerprint
from newsdedup.text.normalize import exact_form, find_letter_or_number, normalize_text
from newsdedup.text.segment import get_segmenter
from newsdedup.text.stopwords import load_stopwords

METHODS = ("simhash", "spotsigs", "hybrid", "esimhash", "dwdcs")
SIMHASH_FEATURES = ("words", "word_shingles", "chars")


@dataclass(frozen=True)
class FeatureConfig:
    """Plain, picklable settings of feature extraction (sent to worker processes)."""

    # Defaults are the NEWSDEDUP_* settings of newsdedup.defaults, the one place they are written.
    method: str = defaults.NEWSDEDUP_NEAR_METHOD
    segmenter: str = defaults.NEWSDEDUP_SEGMENTER
    user_dict: str | None = defaults.NEWSDEDUP_SEGMENTER_USER_DICT
    stopwords: str | None = defaults.NEWSDEDUP_STOPWORDS
    simhash_bits: int = defaults.NEWSDEDUP_SIMHASH_BITS
    simhash_features: str = defaults.NEWSDEDUP_SIMHASH_FEATURES
    antecedents: str = defaults.NEWSDEDUP_SPOTSIGS_ANTECEDENTS
    spot_chain: int = defaults.NEWSDEDUP_SPOTSIGS_CHAIN
    spot_distance: int = defaults.NEWSDEDUP_SPOTSIGS_DISTANCE
    # DWDCS key concept extraction (see newsdedup.dedup.dwdcs for each parameter).
    dwdcs_key_concepts: int = defaults.NEWSDEDUP_DWDCS_KEY_CONCEPTS
    dwdcs_hub_candidates: int = defaults.NEWSDEDUP_DWDCS_HUB_CANDIDATES
    dwdcs_min_frequency: int = defaults.NEWSDEDUP_DWDCS_MIN_FREQUENCY
    dwdcs_merge_threshold: float = defaults.NEWSDEDUP_DWDCS_MERGE_THRESHOLD
    dwdcs_max_nodes: int = defaults.NEWSDEDUP_DWDCS_MAX_NODES
    dwdcs_synonyms: str | None = defaults.NEWSDEDUP_DWDCS_SYNONYMS

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
        if self.uses_key_concepts:
            if self.dwdcs_synonyms is not None and not os.path.isfile(self.dwdcs_synonyms):
                raise ValueError(f"DWDCS synonym file not found: {self.dwdcs_synonyms!r}; pass an existing file or none")
            # Fail here, in the parent, with the parameter's name rather than in every worker.
            KeyConceptExtractor(**self._key_concept_options())

    def _key_concept_options(self) -> dict:
        return {
            "key_concepts": self.dwdcs_key_concepts, "hub_candidates": self.dwdcs_hub_candidates,
            "min_frequency": self.dwdcs_min_frequency, "merge_threshold": self.dwdcs_merge_threshold,
            "max_nodes": self.dwdcs_max_nodes,
        }

    @property
    def uses_simhash(self) -> bool:
        return self.method in ("simhash", "hybrid")

    @property
    def uses_spotsigs(self) -> bool:
        return self.method in ("spotsigs", "hybrid")

    @property
    def uses_content_words(self) -> bool:
        """E-Simhash: the worker returns the content words, the detector weighs them."""
        return self.method == "esimhash"

    @property
    def uses_key_concepts(self) -> bool:
        return self.method == "dwdcs"

    @property
    def rebuilds_from_text(self) -> bool:
        """True when stored records lack this method's features, so a rebuild re-derives them from the text."""
        return self.uses_content_words or self.uses_key_concepts


@dataclass
class DocFeatures:
    """What the exact and near-duplicate stages need of one document."""

    fingerprint: bytes
    simhash: int | None = None
    spots: Counter[int] | None = None
    content_words: list[str] | None = None  # E-Simhash: see content_words()
    key_concepts: KeyConcepts | None = None  # DWDCS


class FeatureExtractor:
    """Computes :class:`DocFeatures` for one configuration; build once per process."""

    def __init__(self, config: FeatureConfig) -> None:
        self.config = config
        self._segmenter = get_segmenter(config.segmenter, config.user_dict)
        self._stopwords = load_stopwords(config.stopwords)
        # jieba's IDF table (270k words, ~0.4 s CPU to read) weighs Simhash's words only: a worker of another
        # method never reads it.
        weighs_words = config.uses_simhash and config.simhash_features == "words"
        self._idf, self._default_idf = default_idf() if weighs_words else ({}, 0.0)
        self._antecedents = load_antecedents(config.antecedents) if config.uses_spotsigs else frozenset()
        self._key_concepts: KeyConceptExtractor | None = None
        if config.uses_key_concepts:
            synonyms = load_synonyms(config.dwdcs_synonyms) if config.dwdcs_synonyms else None
            self._key_concepts = KeyConceptExtractor(**config._key_concept_options(), synonyms=synonyms)

    def fingerprint(self, text: str) -> bytes:
        return text_fingerprint(exact_form(normalize_text(text)))

    def features(self, text: str) -> DocFeatures:
        normalized = normalize_text(text)
        doc = DocFeatures(fingerprint=text_fingerprint(exact_form(normalized)))
        config = self.config
        if not (config.uses_simhash or config.uses_spotsigs or config.uses_content_words or config.uses_key_concepts):
            return doc
        tokens = list(filter(find_letter_or_number, self._segmenter.cut(normalized)))
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
        if config.uses_content_words or config.uses_key_concepts:
            words = content_words(tokens, self._stopwords)
            if config.uses_content_words:
                doc.content_words = words
            if self._key_concepts is not None:
                doc.key_concepts = self._key_concepts.extract(words)
        return doc


def content_words(tokens: list[str], stopwords: frozenset[str]) -> list[str]:
    """The words that carry content, lower-cased, in text order: what E-Simhash and DWDCS work on.

    Drops what :func:`newsdedup.dedup.simhash.word_features` drops: stopwords, punctuation and symbols,
    numbers, single non-Chinese characters.

    >>> content_words(["北京", "的", "AI", "2018", "，", "a", "大学"], frozenset({"的"}))
    ['北京', 'ai', '大学']
    """
    words = (token.lower() for token in tokens)
    return [word for word in words if word not in stopwords and not _is_dropped_token(word)]


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
