"""Simhash fingerprints (Charikar 2002) over weighted features, and the feature extractors that feed it.

A fingerprint has ``bits`` bits; bit i is 1 when the features whose hash has bit i set outweigh those whose
hash has it clear. Near-identical documents get fingerprints a few bits apart (Hamming distance), so
near-duplicates are found with :class:`newsdedup.dedup.simhash_index.SimhashIndex`.

Which features and weights go in decides whether Simhash works: measured on the shared Sina corpus,
term-frequency weights over all words put unrelated articles close together, because the same frequent
words dominate every text. Drop stopwords and weight words by IDF (``default_idf()``, jieba's general-corpus
table) as :func:`word_features` does.

>>> tokens = "记者 报道 北京 大学 今天 发布 新 的 研究 成果".split()
>>> a = simhash(word_features(tokens, frozenset({"的", "记者", "报道"})))
>>> a == simhash({"北京": 1, "大学": 1, "今天": 1, "发布": 1, "新": 1, "研究": 1, "成果": 1})
True
>>> hamming(a, a ^ 0b1011)
3
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from newsdedup.text.hashing import hash64, hash128
from newsdedup.text.normalize import is_word

__all__ = [
    "SIMHASH_BITS",
    "char_shingle_features",
    "default_idf",
    "hamming",
    "shingle_features",
    "simhash",
    "word_features",
]

SIMHASH_BITS = (64, 128)

# Weights are summed as integers: all are scaled by the power of two that brings the largest into
# [2**23, 2**24) (a common scale does not change a Simhash) and rounded. A power of two keeps integer
# weights (term frequencies) exact, so exact ties stay ties; otherwise only weights closer than 2**-23 of
# the largest become indistinguishable.
_WEIGHT_BITS = 24

# Separator inside shingle features: a control character, which normalize_text() never leaves in text.
_SHINGLE_SEPARATOR = "\x1f"
# Numbers, dates, times, percentages and scores: digits with . , : / % + - between them.
_NUMERIC_TOKEN = re.compile(r"[+\-]?\d[\d.,:/%+\-]*")
_CJK_IDEOGRAPH = re.compile(
    "[\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\U00020000-\U0003FFFF]"
)


def simhash(features: Mapping[str, float] | Iterable[tuple[str, float]], bits: int = 64) -> int:
    """Unsigned ``bits``-bit Simhash of weighted features.

    ``features``: ``{feature: weight}`` or ``(feature, weight)`` pairs (repeated features add up). Each
    feature is hashed with MurmurHash3 (:func:`hash64` for 64 bits, :func:`hash128` for 128). Weights must
    be finite and >= 0; zero weights are ignored. No features (or all weights zero) gives 0. A bit whose
    weights balance exactly is 0.

    >>> simhash({"新闻": 2.0, "北京": 1.0}) == simhash([("北京", 1.0), ("新闻", 1.0), ("新闻", 1.0)])
    True
    >>> simhash({}), simhash({"新闻": 1.0}) == hash64("新闻")
    (0, True)
    """
    if bits not in SIMHASH_BITS:
        raise ValueError(f"simhash bits must be 64 or 128, got {bits!r}")
    items = features.items() if isinstance(features, Mapping) else features
    hash_feature = hash64 if bits == 64 else hash128
    hashed: list[tuple[int, float]] = []
    for feature, weight in items:
        weight = float(weight)
        if not (weight >= 0.0 and math.isfinite(weight)):
            raise ValueError(f"simhash weights must be finite and >= 0; feature {feature!r} has weight {weight!r}")
        if weight > 0.0:
            hashed.append((hash_feature(feature), weight))
    return weighted_fingerprint(hashed, bits)


def weighted_fingerprint(hashed: Iterable[tuple[int, float]], bits: int = 64) -> int:
    """Simhash of already hashed features: bit i is 1 when the weight of hashes with bit i set is larger.

    Weights are scaled so that the largest lies in [2**23, 2**24) and rounded, then summed exactly in
    int64, so an exact tie gives 0 and the result does not depend on the order of the features. The vote
    is one numpy product over the features' bit matrix (a per-bit Python loop cost 2-3 ms a document).

    >>> weighted_fingerprint([(0b0110, 2.0), (0b0011, 1.0)], bits=64)
    6
    """
    if bits not in SIMHASH_BITS:
        raise ValueError(f"simhash bits must be 64 or 128, got {bits!r}")
    feature_hashes, weights = [], []
    for feature_hash, weight in hashed:
        weight = float(weight)
        if not (weight >= 0.0 and math.isfinite(weight)):
            raise ValueError(f"weights must be finite and >= 0, got {weight!r}")
        if not 0 <= feature_hash < 1 << bits:
            raise ValueError(f"feature hashes must be unsigned {bits}-bit ints, got {feature_hash!r}")
        if weight > 0.0:
            feature_hashes.append(feature_hash)
            weights.append(weight)
    if not weights:
        return 0
    # Imported here, not with the module: every crawl process and worker imports this module, and the default method
    # (SpotSigs) computes no Simhash; numpy's import is ~70 ms of each process's start.
    import numpy as np

    scale_exponent = _WEIGHT_BITS - math.frexp(max(weights))[1]
    quantized = np.array([round(math.ldexp(w, scale_exponent)) for w in weights], dtype=np.int64)
    width = bits // 8
    raw = b"".join(h.to_bytes(width, "little") for h in feature_hashes)
    # Row f, column i: bit i of feature f's hash (little-endian bytes, little-endian bits).
    bit_matrix = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(-1, width), axis=1, bitorder="little")
    weight_with_bit = quantized @ bit_matrix.astype(np.int64)
    set_bits = np.packbits(2 * weight_with_bit > int(quantized.sum()), bitorder="little")
    return int.from_bytes(set_bits.tobytes(), "little")


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two unsigned fingerprints.

    >>> hamming(0b1100, 0b1010)
    2
    """
    if a < 0 or b < 0:
        raise ValueError(f"hamming expects unsigned fingerprints, got {a!r} and {b!r}; use from_signed64 first")
    return (a ^ b).bit_count()


def _is_punctuation_or_symbol(token: str) -> bool:
    return not is_word(token)


def _is_dropped_token(token: str) -> bool:
    """True for tokens that carry no topic: punctuation/symbols, numbers, single non-CJK characters."""
    if _is_punctuation_or_symbol(token) or _NUMERIC_TOKEN.fullmatch(token):
        return True
    return len(token) == 1 and not _CJK_IDEOGRAPH.match(token)


@functools.cache
def default_idf() -> tuple[dict[str, float], float]:
    """jieba's general-corpus IDF table (``jieba/analyse/idf.txt``, 270k words) and its median IDF.

    The median is the weight jieba's own TF-IDF gives unseen words. Loaded once per process; the returned
    dict is shared, do not modify it.

    >>> table, median = default_idf()
    >>> table["的"] < table["记者"] < median
    True
    """
    resource = importlib.resources.files("jieba").joinpath("analyse", "idf.txt")
    table: dict[str, float] = {}
    with resource.open("r", encoding="utf-8") as lines:
        for line in lines:
            word, _, value = line.strip().rpartition(" ")
            if word:
                table[word] = float(value)
    return table, statistics.median(table.values())


def word_features(
    tokens: Sequence[str],
    stopwords: frozenset[str],
    *,
    idf: Mapping[str, float] | None = None,
    default_idf: float | None = None,
) -> dict[str, float]:
    """Weighted word features: term frequency, times IDF when ``idf`` is given.

    Tokens are lower-cased; stopwords, punctuation/symbols, numbers (``2018``, ``10.5%``, ``12:30``) and
    single non-CJK characters are dropped. ``idf`` maps words to IDF weights (see :func:`default_idf`);
    words missing from it get ``default_idf``, which defaults to the median of ``idf`` (computed on each
    call unless ``idf`` is the table returned by :func:`default_idf`: pass it for other large tables).

    >>> word_features(["北京", "的", "北京", "2018", "a", "，", "AI"], frozenset({"的"}))
    {'北京': 2.0, 'ai': 1.0}
    >>> word_features(["北京", "火星"], frozenset(), idf={"北京": 2.0}, default_idf=10.0)
    {'北京': 2.0, '火星': 10.0}
    """
    if isinstance(tokens, str):
        raise ValueError("word_features expects a sequence of tokens, got a str; segment the text first")
    counts = Counter(
        word
        for word in (token.lower() for token in tokens)
        if word not in stopwords and not _is_dropped_token(word)
    )
    if idf is None:
        if default_idf is not None:
            raise ValueError("default_idf is only used together with idf=; pass idf= as well or drop it")
        return {word: float(count) for word, count in counts.items()}
    unseen_weight = default_idf if default_idf is not None else _median_idf(idf)
    if not (unseen_weight >= 0.0 and math.isfinite(unseen_weight)):
        raise ValueError(f"default_idf must be finite and >= 0, got {unseen_weight!r}")
    return {word: count * idf.get(word, unseen_weight) for word, count in counts.items()}


def _median_idf(idf: Mapping[str, float]) -> float:
    packaged_table, packaged_median = _default_idf_table()
    if idf is packaged_table:
        return packaged_median
    if not idf:
        raise ValueError("idf is empty; pass default_idf= for unseen words or a non-empty idf table")
    return statistics.median(idf.values())


# word_features' keyword argument shadows the function name inside it.
_default_idf_table = default_idf


def shingle_features(tokens: Sequence[str], k: int = 3) -> dict[str, float]:
    """Word k-shingles (k consecutive tokens) with their counts.

    Tokens are lower-cased; whitespace and punctuation-only tokens are skipped first, so punctuation edits
    do not change the shingles. Fewer than k tokens give one shingle of all of them.

    >>> shingle_features(["我", "爱", "，", "北京"], k=2) == {"我\\x1f爱": 1.0, "爱\\x1f北京": 1.0}
    True
    """
    if isinstance(tokens, str):
        raise ValueError("shingle_features expects a sequence of tokens, got a str; segment the text first")
    _check_k(k)
    words = [token.lower() for token in tokens if token.strip() and not _is_punctuation_or_symbol(token)]
    if not words:
        return {}
    if len(words) < k:
        return {_SHINGLE_SEPARATOR.join(words): 1.0}
    counts = Counter(_SHINGLE_SEPARATOR.join(words[i : i + k]) for i in range(len(words) - k + 1))
    return {shingle: float(count) for shingle, count in counts.items()}


def char_shingle_features(text: str, k: int = 4) -> dict[str, float]:
    """Character k-shingles of ``text`` with their counts, ignoring whitespace and punctuation.

    Needs no segmenter. Text shorter than k characters gives one shingle of all of it.

    >>> char_shingle_features("北京，北京大学", k=4)
    {'北京北京': 1.0, '京北京大': 1.0, '北京大学': 1.0}
    """
    if not isinstance(text, str):
        raise ValueError(f"char_shingle_features expects str, got {type(text).__name__}")
    _check_k(k)
    chars = "".join(char for char in text.lower() if not _is_punctuation_or_symbol(char))
    if not chars:
        return {}
    if len(chars) < k:
        return {chars: 1.0}
    counts = Counter(chars[i : i + k] for i in range(len(chars) - k + 1))
    return {shingle: float(count) for shingle, count in counts.items()}


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"shingle size k must be an int >= 1, got {k!r}")
