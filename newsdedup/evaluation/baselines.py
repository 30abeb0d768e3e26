"""Baseline near-duplicate clusterers the evaluation compares the product with (not used by the crawl).

- :class:`MinHashLSHBaseline`: datasketch ``MinHashLSH`` over character 5-grams or given feature sets, candidates
  verified by their estimated Jaccard; :class:`ShinglingBaseline`: exact Jaccard of word 3-shingle sets.  Both
  cluster Single-Pass, as the product does (the most similar centre at or above the threshold, else a new one).
- :class:`IMatchBaseline`: I-Match (Chowdhury et al., ACM TOIS 2002): one SHA-1 of the sorted set of a
  document's words whose IDF over the collection lies in a middle band; equal digests are duplicates.

>>> items = [("a", "今天北京下了一场大雪，交通受到影响。"), ("b", "今天北京下了一场大雪，交通受到严重影响。"),
...          ("c", "上海明天晴到多云，气温回升。")]
>>> clusters = MinHashLSHBaseline(threshold=0.4).cluster(items)
>>> clusters["a"] == clusters["b"] != clusters["c"]
True
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import rjieba
from datasketch import MinHash, MinHashLSH

from newsdedup.dedup.single_pass import Match, SinglePassClusterer


def char_shingles(text: str, width: int = 5) -> set[str]:
    """Character ``width``-grams of the whitespace-free NFKC text (a shorter text is one shingle).

    >>> sorted(char_shingles("新 闻去重", 3))
    ['新闻去', '闻去重']
    """
    text = "".join(unicodedata.normalize("NFKC", text).split())
    return {text[i : i + width] for i in range(max(1, len(text) - width + 1))} if text else set()


def words(text: str) -> list[str]:
    """Lower-cased jieba-rs words of the NFKC text; tokens without a letter or digit dropped."""
    tokens = rjieba.cut(unicodedata.normalize("NFKC", text))
    return [t.lower() for t in tokens if any(unicodedata.category(ch)[0] in "LN" for ch in t)]


class _ThresholdDetector:
    """A baseline's index as a near-duplicate detector for the product's :class:`SinglePassClusterer`: ``query``
    gives the centres at or above the threshold with their Jaccard; the most similar wins, ties the earliest."""

    method = "baseline"

    def __init__(self, query: Callable[[Any], list[tuple[Hashable, float]]], add: Callable[[Hashable, Any], None]):
        self._query, self._add = query, add
        self._position: dict[Hashable, int] = {}  # centres in the order they came

    def best_match(self, signature: Any) -> Match | None:
        hits = self._query(signature)
        if not hits:
            return None
        key, jaccard = max(hits, key=lambda hit: (hit[1], -self._position[hit[0]]))
        return Match(key, jaccard, jaccard, "jaccard")

    def add(self, key: Hashable, signature: Any) -> None:
        self._position[key] = len(self._position)
        self._add(key, signature)

    def __len__(self) -> int:
        return len(self._position)


def _single_pass(items: Iterable[tuple[Hashable, Any]], sign: Callable[[Any], Any],
                 query: Callable[[Any], list[tuple[Hashable, float]]], add: Callable[[Hashable, Any], None]
                 ) -> dict[Hashable, Hashable]:
    """``doc id -> cluster`` by the product's Single-Pass; a document without a signature is its own cluster."""
    clusterer = SinglePassClusterer(_ThresholdDetector(query, add))
    clusters: dict[Hashable, Hashable] = {}
    for key, item in items:
        if key in clusters:
            raise ValueError(f"document id {key!r} appears twice: ids must be unique")
        signature = sign(item)
        clusters[key] = key if signature is None else clusterer.assign(key, signature).cluster_id
    return clusters


class MinHashLSHBaseline:
    """datasketch MinHashLSH (see the module docstring); ``bands`` and ``rows`` fix the banding (a pair is a
    candidate when all ``rows`` values of one band agree), else datasketch picks it for the threshold."""

    def __init__(self, *, threshold: float = 0.5, num_perm: int = 128, bands: int | None = None,
                 rows: int | None = None, features: Callable[[Any], Iterable[object]] = char_shingles) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold is a Jaccard in (0, 1], got {threshold}")
        if (bands is None) != (rows is None):
            raise ValueError("give bands and rows together (the SpotSigs paper's LSH: bands=32, rows=6), or neither")
        self.threshold, self.features = threshold, features
        self.params = (bands, rows) if bands and rows else None
        self.num_perm = bands * rows if bands and rows else num_perm

    def sketch(self, item: Any) -> MinHash | None:
        encoded = sorted({str(f).encode("utf-8") for f in self.features(item)})
        if not encoded:
            return None
        sketch = MinHash(num_perm=self.num_perm, seed=1)
        sketch.update_batch(encoded)
        return sketch

    def cluster(self, items: Iterable[tuple[Hashable, Any]]) -> dict[Hashable, Hashable]:
        """``doc id -> cluster`` (the id of its centre) for a stream of ``(id, text or feature item)``."""
        lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm, params=self.params)
        sketches: dict[Hashable, MinHash] = {}

        def query(sketch: MinHash) -> list[tuple[Hashable, float]]:
            hits = [(key, sketch.jaccard(sketches[key])) for key in lsh.query(sketch)]
            return [(key, j) for key, j in hits if j >= self.threshold]

        def add(key: Hashable, sketch: MinHash) -> None:
            lsh.insert(key, sketch)
            sketches[key] = sketch

        return _single_pass(items, self.sketch, query, add)


class ShinglingBaseline:
    """Word ``width``-shingles and their exact set Jaccard against every centre (an inverted index)."""

    def __init__(self, *, threshold: float = 0.5, width: int = 3) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold is a Jaccard in (0, 1], got {threshold}")
        self.threshold, self.width = threshold, width

    def shingles(self, text: str) -> frozenset[str] | None:
        w = words(text)
        return frozenset(" ".join(w[i : i + self.width]) for i in range(max(1, len(w) - self.width + 1))) or None

    def cluster(self, items: Iterable[tuple[Hashable, str]]) -> dict[Hashable, Hashable]:
        postings: dict[str, list[Hashable]] = {}
        sizes: dict[Hashable, int] = {}

        def query(shingles: frozenset[str]) -> list[tuple[Hashable, float]]:
            shared = Counter(key for s in shingles for key in postings.get(s, ()))
            hits = [(key, n / (len(shingles) + sizes[key] - n)) for key, n in shared.items()]
            return [hit for hit in hits if hit[1] >= self.threshold]

        def add(key: Hashable, shingles: frozenset[str]) -> None:
            sizes[key] = len(shingles)
            for s in shingles:
                postings.setdefault(s, []).append(key)

        return _single_pass(items, self.shingles, query, add)


class IMatchBaseline:
    """I-Match: words with ``min_nidf <= idf / idf_max <= max_nidf`` over the collection given to :meth:`cluster`
    (``idf = ln(N / df)``, ``idf_max = ln N``) are kept, dropping the most frequent and the one-off words.

    >>> imatch = IMatchBaseline(min_nidf=0.0, max_nidf=1.0)
    >>> clusters = imatch.cluster([("a", "北京今天下雪"), ("b", "今天北京下雪"), ("c", "上海明天晴朗")])
    >>> clusters["b"] == "a" != clusters["c"]
    True
    """

    def __init__(self, *, min_nidf: float = 0.2, max_nidf: float = 0.95,
                 tokenize: Callable[[str], list[str]] = words) -> None:
        if not 0.0 <= min_nidf <= max_nidf <= 1.0:
            raise ValueError(f"the IDF band must satisfy 0 <= min_nidf <= max_nidf <= 1, got {min_nidf}, {max_nidf}")
        self.min_nidf, self.max_nidf, self.tokenize = min_nidf, max_nidf, tokenize

    def cluster(self, items: Iterable[tuple[Hashable, str]]) -> dict[Hashable, Hashable]:
        """``doc id -> cluster`` (the first document with the same digest; no digest: a cluster of its own)."""
        terms: dict[Hashable, frozenset[str]] = {}
        for key, text in items:
            if key in terms:
                raise ValueError(f"document id {key!r} appears twice: ids must be unique")
            terms[key] = frozenset(self.tokenize(text))
        df = Counter(term for words_ in terms.values() for term in words_)
        top = math.log(len(terms)) if len(terms) > 1 else 0.0
        first: dict[bytes, Hashable] = {}
        clusters = {}
        for key, words_ in terms.items():
            kept = sorted(t for t in words_ if self.min_nidf <= (math.log(len(terms) / df[t]) / top if top else 1.0)
                          <= self.max_nidf)
            digest = hashlib.sha1("\x1f".join(kept).encode("utf-8")).digest() if kept else None
            clusters[key] = key if digest is None else first.setdefault(digest, key)
        return clusters
