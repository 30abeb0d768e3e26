"""E-Simhash: Simhash with entropy-weighted words and word positions (Zhang et al., 2019).

The paper (``papers/e-simhash-entropy-weighted-2019.txt``) changes three things in Simhash:

1. A word's weight is the quadratic mean of its TF-IDF and its neighbour entropy (formula 10)::

       w = sqrt((tfidf ** 2 + H ** 2) / 2),   H = (E_left + E_right) / 2   (formula 9)

   where ``E_left`` is the Shannon entropy (bits) of the words seen immediately left of it (formula 7),
   ``E_right`` the same on the right (formula 8), ``idf = log(|D| / (df + 1))`` (formula 4).
2. Weights above ``W_t`` are cut to ``W_t`` (formula 16; the paper uses ``W_t = 90``), so that one word
   cannot decide the fingerprint alone (its proof, formulas 11-15).
3. Each word's hash is XORed with its position before it votes, so that reordering changes the fingerprint.

Fingerprints have 128 bits; two documents are near-duplicates within a Hamming distance of about 10.

Where the paper is vague, this module chooses (each choice below is one the paper leaves open):

- **Corpus**: the IDF and the neighbour counts come from every document the statistics have observed
  (:class:`CorpusStatistics`, incremental and serialisable). A document is observed *before* it is
  fingerprinted, so a word met for the first time has ``df = 1`` and the neighbours of this document,
  as in the paper's batch setting where the collection includes the document itself.
- **Cold start**: document frequencies start from ``prior_documents`` pseudo-documents (default 1,000)
  distributed as jieba's general-corpus IDF table says (a word of jieba IDF ``i`` is in
  ``prior_documents * exp(-i)`` of them), so the first documents get sensible IDFs instead of
  ``log(1 / 2)`` for every word; the real corpus outweighs the prior once it is larger. Entropy has no
  prior: a word seen once has 0 bits, and its weight is then its TF-IDF alone (divided by sqrt 2).
- **tf**: formula 3 divides the count by the document's length, which makes ``tfidf`` about 0.01 next to
  ``H`` of 1-8 bits: the weight would ignore TF-IDF and ``W_t = 90`` could never bind. The cap of 90 the
  paper reports only makes sense with raw counts, so ``tf="count"`` (the default) uses the count
  ``n_jk``; ``tf="normalized"`` follows formula 3 literally.
- **log base**: natural log for IDF (jieba's table uses it too); log2 for entropy (formulas 6-8).
- **Words**: the segmented text minus punctuation, stopwords, numbers and single Latin letters
  (:func:`newsdedup.dedup.features.content_words`), lower-cased. Neighbours are the adjacent words of
  that sequence; the document's start and end count as one boundary neighbour.
- **Position**: "sorted by distribution, each hash XORed with its position": the distinct words are taken
  in order of first occurrence and word number ``k`` (1, 2, ...) contributes ``hash128(word) ^ k``. The
  XOR touches only the low ``bit_length(k)`` bits (about 9 for a news article), so position moves a few
  low bits and a reordered or shifted copy stays within the paper's Hamming threshold.
- **Votes**: bit i is 1 when the weights of the words whose (position-XORed) hash has bit i set exceed
  the others' (an exact tie gives 0), as in :func:`newsdedup.dedup.simhash.simhash`; the votes are one
  numpy product (the per-byte Python loop cost 3 ms a document).
- **Threshold**: the paper's Hamming distance of 10 (of 128 bits) is the default. Simhash flips a bit with
  probability about ``angle / pi`` between the two weighted word vectors, so 10 bits need a weighted
  cosine of about 0.97: copies with more than 5-10% of their words edited fall outside it (measured in
  ``newsdedup eval``; tuned on the Sina reprints, 34 bits finds far more of them).
- **Memory**: neighbour counts are kept per word pair (one dict entry, about 100 bytes each). Past
  ``max_bigrams`` pairs the rarest are dropped (lossy counting: pairs seen once, then twice, ...); a
  dropped pair seen again restarts at 1, which over-states that word's entropy slightly.

>>> stats = CorpusStatistics(prior_documents=0)
>>> stats.observe(["北京", "上海", "北京", "广州"])
>>> stats.left_entropy("北京"), stats.right_entropy("北京")   # left: boundary, 上海; right: 上海, 广州
(1.0, 1.0)
>>> entropy_weight(tfidf=3.0, entropy=4.0, cap=90.0) == math.sqrt((9 + 16) / 2)
True
"""

from __future__ import annotations

import json
import math
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.dedup.simhash import default_idf, weighted_fingerprint
from newsdedup.dedup.simhash_index import SimhashIndex
from newsdedup.text.hashing import hash64, hash128

__all__ = [
    "TF_MODES",
    "CorpusStatistics",
    "ESimhashIndex",
    "entropy_weight",
    "esimhash",
    "esimhash_weights",
    "neighbour_entropy",
    "weighted_fingerprint",
]

TF_MODES = ("count", "normalized")

# The document boundary as a neighbour: a control character, which normalised text never contains.
BOUNDARY = "\x02"
_BOUNDARY_HASH = hash64(BOUNDARY)

_MASK64 = (1 << 64) - 1
# Pair keys: a multiply-xor mix of the two words' 64-bit hashes (an odd multiplier keeps it a bijection in
# the right word); collisions between different pairs are as rare as between random 64-bit values.
_PAIR_MULTIPLIER = 0x9E3779B97F4A7C15

_BLOB_MAGIC = b"NDES"
_BLOB_VERSION = 1



def neighbour_entropy(counts: Iterable[int]) -> float:
    """Shannon entropy in bits of a neighbour distribution given as counts (formulas 6-8).

    >>> neighbour_entropy([1, 1]), neighbour_entropy([4]), neighbour_entropy([2, 1, 1])
    (1.0, 0.0, 1.5)
    """
    values = [c for c in counts if c]
    if any(c < 0 for c in values):
        raise ValueError(f"neighbour counts must be >= 0, got {values!r}")
    total = sum(values)
    if total == 0:
        return 0.0
    return max(0.0, math.log2(total) - sum(c * math.log2(c) for c in values) / total)


def entropy_weight(tfidf: float, entropy: float, cap: float) -> float:
    """E-Simhash word weight: ``min(sqrt((tfidf**2 + entropy**2) / 2), cap)`` (formulas 10 and 16).

    >>> entropy_weight(150.0, 10.0, cap=90.0)   # sqrt((150**2 + 10**2) / 2) = 106.3 > 90
    90.0
    """
    if not cap > 0:
        raise ValueError(f"the weight cap W_t must be > 0, got {cap!r}")
    return min(math.sqrt((tfidf * tfidf + entropy * entropy) / 2.0), cap)


def _c_log2_c(count: int) -> float:
    return count * math.log2(count) if count > 1 else 0.0


# c * log2(c) of small counts, the common case of every update.
_C_LOG2_C = tuple(_c_log2_c(c) for c in range(4096))


class CorpusStatistics:
    """Document frequencies and left/right neighbour counts of every document observed, kept incrementally.

    For each word: its document frequency and, per side, the number of neighbour occurrences ``n`` and
    ``s = sum(c * log2(c))`` over its neighbour counts ``c``, so that its entropy is
    ``log2(n) - s / n`` without a pass over its neighbours; one table of word-pair counts updates both
    (a pair ``a b`` is a right neighbour of ``a`` and a left neighbour of ``b``). Words and pairs are kept
    as 64-bit hashes.

    prior_documents: pseudo-documents behind the IDF, spread by ``prior_idf`` (the cold start; 0 = none).
    prior_idf: ``(table, default)``, IDF by word and for words missing from it; default jieba's table.
    max_bigrams: bound on the pair table (lossy counting beyond it, see the module docstring).
    """

    def __init__(
        self,
        *,
        prior_documents: int = 1000,
        prior_idf: tuple[Mapping[str, float], float] | None = None,
        max_bigrams: int = defaults.NEWSDEDUP_ESIMHASH_MAX_BIGRAMS,
    ) -> None:
        if not isinstance(prior_documents, int) or isinstance(prior_documents, bool) or prior_documents < 0:
            raise ValueError(f"prior_documents must be an int >= 0 (0 = no prior), got {prior_documents!r}")
        if not isinstance(max_bigrams, int) or isinstance(max_bigrams, bool) or max_bigrams < 1000:
            raise ValueError(f"max_bigrams must be an int >= 1000 (about 100 bytes each), got {max_bigrams!r}")
        self.prior_documents = prior_documents
        self.max_bigrams = max_bigrams
        self._prior_idf = prior_idf
        self.documents = 0
        self._slot: dict[int, int] = {}  # word hash -> slot in the arrays below
        self._df = array("Q")
        self._left_n = array("Q")
        self._right_n = array("Q")
        self._left_s = array("d")
        self._right_s = array("d")
        self._pairs: dict[int, int] = {}  # pair key -> count
        self.pruned_below = 0  # pairs with counts up to this were dropped at least once (0: never)

    # -- learning ----------------------------------------------------------------------------
    def observe(self, words: Sequence[str]) -> None:
        """Add one document (its content words in order) to the statistics."""
        if isinstance(words, str):
            raise ValueError("observe expects a sequence of words, got a str; segment the text first")
        self.documents += 1
        hash_of = {word: hash64(word) for word in set(words)}
        boundary = _BOUNDARY_HASH
        hashes = [boundary, *(hash_of[word] for word in words), boundary]
        slot_of = self._slot
        for word_hash in hash_of.values():
            self._df[self._slot_for(word_hash)] += 1
        pairs = self._pairs
        left_n, right_n, left_s, right_s = self._left_n, self._right_n, self._left_s, self._right_s
        table = _C_LOG2_C
        for index in range(len(hashes) - 1):
            left, right = hashes[index], hashes[index + 1]
            key = ((left * _PAIR_MULTIPLIER) & _MASK64) ^ right
            count = pairs.get(key, 0) + 1
            pairs[key] = count
            delta = (table[count] - table[count - 1]) if count < 4096 else (_c_log2_c(count) - _c_log2_c(count - 1))
            left_slot = slot_of.get(left)
            if left_slot is None:
                left_slot = self._slot_for(left)
            right_slot = slot_of.get(right)
            if right_slot is None:
                right_slot = self._slot_for(right)
            right_n[left_slot] += 1
            right_s[left_slot] += delta
            left_n[right_slot] += 1
            left_s[right_slot] += delta
        if len(pairs) > self.max_bigrams:
            self._prune()

    def _slot_for(self, word_hash: int) -> int:
        slot = self._slot.get(word_hash)
        if slot is None:
            slot = self._slot[word_hash] = len(self._df)
            self._df.append(0)
            self._left_n.append(0)
            self._right_n.append(0)
            self._left_s.append(0.0)
            self._right_s.append(0.0)
        return slot

    def _prune(self) -> None:
        # Lossy counting: drop the rarest pairs until the table is at most three quarters full, so the
        # next prune is far away (amortised O(1) per observed pair).
        target = self.max_bigrams * 3 // 4
        threshold = max(1, self.pruned_below)
        while len(self._pairs) > target:
            self._pairs = {key: count for key, count in self._pairs.items() if count > threshold}
            self.pruned_below = max(self.pruned_below, threshold)
            threshold += 1

    # -- queries -----------------------------------------------------------------------------
    def document_frequency(self, word: str) -> int:
        slot = self._slot.get(hash64(word))
        return 0 if slot is None else self._df[slot]

    def idf(self, word: str) -> float:
        """``log((|D| + m) / (df + m * exp(-prior_idf) + 1))`` (formula 4 with ``m`` prior documents)."""
        return self._idf(word, self._slot.get(hash64(word)))

    def _idf(self, word: str, slot: int | None) -> float:
        prior = 0.0
        if self.prior_documents:
            table, default = self._prior()
            prior = self.prior_documents * math.exp(-table.get(word, default))
        df = 0 if slot is None else self._df[slot]
        return math.log((self.documents + self.prior_documents) / (df + prior + 1.0))

    def _prior(self) -> tuple[Mapping[str, float], float]:
        if self._prior_idf is None:
            self._prior_idf = default_idf()
        return self._prior_idf

    def left_entropy(self, word: str) -> float:
        """Entropy (bits) of the words seen immediately left of ``word`` (formula 7)."""
        slot = self._slot.get(hash64(word))
        return 0.0 if slot is None else _entropy(self._left_n[slot], self._left_s[slot])

    def right_entropy(self, word: str) -> float:
        """Entropy (bits) of the words seen immediately right of ``word`` (formula 8)."""
        slot = self._slot.get(hash64(word))
        return 0.0 if slot is None else _entropy(self._right_n[slot], self._right_s[slot])

    def entropy(self, word: str) -> float:
        """``H = (E_left + E_right) / 2`` (formula 9)."""
        return self._entropy(self._slot.get(hash64(word)))

    def _entropy(self, slot: int | None) -> float:
        if slot is None:
            return 0.0
        return (_entropy(self._left_n[slot], self._left_s[slot]) + _entropy(self._right_n[slot], self._right_s[slot])) / 2

    def _weight_terms(self, word: str, word_hash64: int) -> tuple[float, float]:
        """``(idf, H)`` of a word whose :func:`hash64` is known."""
        slot = self._slot.get(word_hash64)
        return self._idf(word, slot), self._entropy(slot)

    @property
    def words(self) -> int:
        return len(self._slot)

    @property
    def bigrams(self) -> int:
        return len(self._pairs)

    # -- persistence -------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The counts as a versioned, zlib-compressed blob (the prior table is not included)."""
        return _pack(
            {"kind": "statistics", "documents": self.documents, "pruned_below": self.pruned_below},
            self._arrays(),
        )

    def _arrays(self) -> list[array]:
        return [
            array("Q", self._slot.keys()), self._df, self._left_n, self._right_n, self._left_s, self._right_s,
            array("Q", self._pairs.keys()), array("Q", self._pairs.values()),
        ]

    @classmethod
    def from_bytes(
        cls,
        blob: bytes,
        *,
        prior_documents: int = 1000,
        prior_idf: tuple[Mapping[str, float], float] | None = None,
        max_bigrams: int = defaults.NEWSDEDUP_ESIMHASH_MAX_BIGRAMS,
    ) -> CorpusStatistics:
        """Statistics saved by :meth:`to_bytes`; the keyword arguments are as for the constructor."""
        header, arrays = _unpack(blob, "statistics", _STATISTICS_TYPECODES)
        stats = cls(prior_documents=prior_documents, prior_idf=prior_idf, max_bigrams=max_bigrams)
        stats._restore(header, arrays)
        return stats

    def _restore(self, header: dict, arrays: list[array]) -> None:
        words, df, left_n, right_n, left_s, right_s, pair_keys, pair_counts = arrays
        if not len(words) == len(df) == len(left_n) == len(right_n) == len(left_s) == len(right_s):
            raise ValueError("corrupt E-Simhash statistics: the word arrays differ in length")
        if len(pair_keys) != len(pair_counts):
            raise ValueError("corrupt E-Simhash statistics: the pair arrays differ in length")
        self.documents = int(header["documents"])
        self.pruned_below = int(header.get("pruned_below", 0))
        self._slot = {key: slot for slot, key in enumerate(words)}
        self._df, self._left_n, self._right_n, self._left_s, self._right_s = df, left_n, right_n, left_s, right_s
        self._pairs = dict(zip(pair_keys, pair_counts))

    def __repr__(self) -> str:
        return f"CorpusStatistics({self.documents} documents, {self.words} words, {self.bigrams} word pairs)"


def _entropy(total: int, sum_c_log_c: float) -> float:
    if total == 0:
        return 0.0
    # Rounding can leave a tiny negative value for a single neighbour (exactly 0 bits).
    return max(0.0, math.log2(total) - sum_c_log_c / total)


def esimhash_weights(
    words: Sequence[str],
    statistics: CorpusStatistics,
    *,
    weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP,
    tf: str = "count",
) -> list[tuple[str, float]]:
    """``(word, weight)`` of each distinct word in order of first occurrence (formulas 3-10 and 16).

    ``statistics`` should already have observed ``words`` (the detector observes, then weighs).
    """
    return [(word, weight) for word, _, weight in _weighted_words(words, statistics, weight_cap, tf)]


def _weighted_words(
    words: Sequence[str], statistics: CorpusStatistics, weight_cap: float, tf: str
) -> list[tuple[str, int, float]]:
    """``(word, hash128(word), weight)`` per distinct word, in order of first occurrence."""
    if isinstance(words, str):
        raise ValueError("esimhash expects a sequence of words, got a str; segment the text first")
    if tf not in TF_MODES:
        raise ValueError(f"unknown tf mode {tf!r}: choose one of {', '.join(TF_MODES)}")
    counts = Counter(words)  # insertion order = first occurrence
    length = len(words)
    weighted = []
    for word, count in counts.items():
        word_hash = hash128(word)
        # hash128's low 64 bits are hash64: the statistics' key of the word.
        idf, entropy = statistics._weight_terms(word, word_hash & _MASK64)
        term_frequency = count if tf == "count" else count / length
        weighted.append((word, word_hash, entropy_weight(term_frequency * idf, entropy, weight_cap)))
    return weighted


def esimhash(
    words: Sequence[str],
    statistics: CorpusStatistics,
    *,
    bits: int = 128,
    weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP,
    tf: str = "count",
) -> int:
    """The E-Simhash fingerprint of a document's content words, weighed with ``statistics``.

    Word number k (1-based, in order of first occurrence) votes with ``hash(word) ^ k``, where the hash
    is :func:`hash128` (or :func:`hash64` for ``bits=64``).
    """
    _check_bits(bits)
    mask = (1 << bits) - 1
    weighted = _weighted_words(words, statistics, weight_cap, tf)
    return weighted_fingerprint(
        (((word_hash & mask) ^ position, weight) for position, (_, word_hash, weight) in enumerate(weighted, 1)),
        bits=bits,
    )


def _check_bits(bits: int) -> None:
    if bits not in (64, 128):
        raise ValueError(f"E-Simhash bits must be 64 or 128 (the paper uses 128), got {bits!r}")


class ESimhashIndex:
    """E-Simhash over a growing corpus: the statistics, and the fingerprints of indexed documents.

    :meth:`learn` observes a document and returns its fingerprint; :meth:`query` finds indexed
    fingerprints within ``max_distance`` bits (Manku et al.'s tables, :class:`SimhashIndex`, exact);
    :meth:`add` indexes a fingerprint under a key. :meth:`to_bytes` saves statistics and fingerprints
    together (keys must then be ints or strs), :meth:`from_bytes` restores them.
    """

    def __init__(
        self,
        *,
        bits: int = 128,
        max_distance: int = defaults.NEWSDEDUP_ESIMHASH_MAX_DISTANCE,
        weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP,
        tf: str = "count",
        statistics: CorpusStatistics | None = None,
    ) -> None:
        _check_bits(bits)
        if tf not in TF_MODES:
            raise ValueError(f"unknown tf mode {tf!r}: choose one of {', '.join(TF_MODES)}")
        if not (isinstance(weight_cap, (int, float)) and weight_cap > 0):
            raise ValueError(f"the weight cap W_t must be > 0 (the paper uses 90), got {weight_cap!r}")
        self.bits = bits
        self.weight_cap = float(weight_cap)
        self.tf = tf
        self.statistics = statistics if statistics is not None else CorpusStatistics()
        self.index = SimhashIndex(bits=bits, max_distance=max_distance)
        # key -> fingerprint, for to_bytes() (SimhashIndex does not hand its fingerprints back).
        self._fingerprints: dict[Hashable, int] = {}

    @property
    def max_distance(self) -> int:
        return self.index.max_distance

    def fingerprint(self, words: Sequence[str]) -> int:
        """The fingerprint under the current statistics, without learning from ``words``."""
        return esimhash(words, self.statistics, bits=self.bits, weight_cap=self.weight_cap, tf=self.tf)

    def learn(self, words: Sequence[str]) -> int:
        """Observe a document, then return its fingerprint."""
        self.statistics.observe(words)
        return self.fingerprint(words)

    def query(self, fingerprint: int) -> list[tuple[Hashable, int]]:
        return self.index.query(fingerprint)

    def add(self, key: Hashable, fingerprint: int) -> None:
        self.index.add(key, fingerprint)
        self._fingerprints[key] = fingerprint

    def retain(self, keys: Iterable[Hashable]) -> int:
        """Keep only the fingerprints of ``keys`` (the statistics stay whole); return how many were dropped."""
        keep = set(keys)
        gone = [key for key in self._fingerprints if key not in keep]
        for key in gone:
            self.index.remove(key)
            del self._fingerprints[key]
        return len(gone)

    def __contains__(self, key: object) -> bool:
        return key in self.index

    def __len__(self) -> int:
        return len(self.index)

    def to_bytes(self) -> bytes:
        """Statistics and indexed fingerprints as one versioned, zlib-compressed blob."""
        keys = list(self._fingerprints)
        if not all(isinstance(key, (int, str)) and not isinstance(key, bool) for key in keys):
            raise ValueError("only int or str keys can be saved; index documents by article id or URL")
        fingerprints = self._fingerprints.values()
        words = -(-self.bits // 64)
        packed = array("Q", ((fp >> (64 * w)) & _MASK64 for fp in fingerprints for w in range(words)))
        header = {
            "kind": "esimhash", "documents": self.statistics.documents,
            "pruned_below": self.statistics.pruned_below, "bits": self.bits, "keys": keys,
        }
        return _pack(header, [*self.statistics._arrays(), packed])

    @classmethod
    def from_bytes(
        cls,
        blob: bytes,
        *,
        max_distance: int = defaults.NEWSDEDUP_ESIMHASH_MAX_DISTANCE,
        weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP,
        tf: str = "count",
        prior_documents: int = 1000,
        max_bigrams: int = defaults.NEWSDEDUP_ESIMHASH_MAX_BIGRAMS,
    ) -> ESimhashIndex:
        """An index saved by :meth:`to_bytes` (bits come from the blob; the rest as for the constructor)."""
        header, arrays = _unpack(blob, "esimhash", (*_STATISTICS_TYPECODES, "Q"))
        statistics = CorpusStatistics(prior_documents=prior_documents, max_bigrams=max_bigrams)
        statistics._restore(header, arrays[:-1])
        bits = int(header["bits"])
        index = cls(bits=bits, max_distance=max_distance, weight_cap=weight_cap, tf=tf, statistics=statistics)
        words = -(-bits // 64)
        packed, keys = arrays[-1], header["keys"]
        if len(packed) != words * len(keys):
            raise ValueError("corrupt E-Simhash blob: fingerprints and keys differ in number")
        for number, key in enumerate(keys):
            fingerprint = 0
            for w in range(words):
                fingerprint |= packed[number * words + w] << (64 * w)
            index.add(key, fingerprint)
        return index


_STATISTICS_TYPECODES = ("Q", "Q", "Q", "Q", "d", "d", "Q", "Q")


def _pack(header: dict, arrays: list[array]) -> bytes:
    """``magic, version, zlib(json header line + raw little-endian arrays)``."""
    header = {**header, "arrays": [[a.typecode, len(a)] for a in arrays]}
    parts = [json.dumps(header, ensure_ascii=False).encode("utf-8"), b"\n"]
    for values in arrays:
        if sys.byteorder != "little":
            values = array(values.typecode, values)
            values.byteswap()
        parts.append(values.tobytes())
    return _BLOB_MAGIC + bytes([_BLOB_VERSION]) + zlib.compress(b"".join(parts), 6)


def _unpack(blob: bytes, kind: str, typecodes: Sequence[str]) -> tuple[dict, list[array]]:
    if not isinstance(blob, (bytes, bytearray, memoryview)) or bytes(blob[:4]) != _BLOB_MAGIC:
        raise ValueError("not an E-Simhash blob (bad magic); pass what to_bytes() returned")
    version = blob[4]
    if version != _BLOB_VERSION:
        raise ValueError(f"E-Simhash blob version {version} is not supported (this code reads {_BLOB_VERSION})")
    try:
        raw = zlib.decompress(bytes(blob[5:]))
    except zlib.error as exc:
        raise ValueError(f"corrupt E-Simhash blob: {exc}") from exc
    header_line, _, payload = raw.partition(b"\n")
    header = json.loads(header_line)
    if header.get("kind") != kind:
        raise ValueError(f"this blob holds {header.get('kind')!r}, not {kind!r}: use the matching from_bytes()")
    layout = header["arrays"]
    if [code for code, _ in layout] != list(typecodes):
        raise ValueError("corrupt E-Simhash blob: unexpected array layout")
    arrays: list[array] = []
    offset = 0
    for code, length in layout:
        values = array(code)
        size = values.itemsize * length
        values.frombytes(payload[offset : offset + size])
        if len(values) != length:
            raise ValueError("corrupt E-Simhash blob: truncated")
        if sys.byteorder != "little":
            values.byteswap()
        arrays.append(values)
        offset += size
    return header, arrays
