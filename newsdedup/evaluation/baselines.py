"""Baseline near-duplicate clusterers to compare the dedup core with.

- :class:`MinHashLSHBaseline`: datasketch ``MinHashLSH`` over character 5-grams of the
  whitespace-free NFKC text (threshold 0.5, 128 permutations by default).  LSH candidates are
  verified by their estimated Jaccard (``verify=True``) so the threshold means what it says.
- :class:`ShinglingJaccardBaseline`: Broder shingling with the exact Jaccard of the shingle
  sets, found through an inverted index (exact: every indexed document at or above the threshold
  is found).  Shingles are ``width`` consecutive words (jieba-rs, else jieba) or characters.

Both cluster a stream in one of two ways (``linkage``):

- ``"single_pass"`` (default, as the dedup core does): only cluster centres are indexed; a
  document joins the most similar centre at or above the threshold, else it becomes a centre;
- ``"union_find"``: every document is indexed and joined with *all* earlier documents at or
  above the threshold; clusters are the connected components (so chains of edits link up).

Only the evaluation uses these (``datasketch`` is an evaluation dependency).

>>> items = [("a", "今天北京下了一场大雪，交通受到影响。"), ("b", "今天北京下了一场大雪，交通受到严重影响。"),
...          ("c", "上海明天晴到多云，气温回升。")]
>>> clusters = ShinglingJaccardBaseline(threshold=0.5, unit="chars", width=3).cluster(items)
>>> clusters["a"] == clusters["b"] != clusters["c"]
True
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol

from datasketch import MinHash, MinHashLSH

__all__ = [
    "LINKAGES",
    "MinHashLSHBaseline",
    "ShinglingJaccardBaseline",
    "char_shingles",
    "default_tokenizer",
    "word_shingles",
]

LINKAGES = ("single_pass", "union_find")


def _squeeze(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


def char_shingles(text: str, width: int = 5) -> set[str]:
    """Character ``width``-grams of the whitespace-free NFKC text (a shorter text is one shingle).

    >>> sorted(char_shingles("新 闻去重", 3))
    ['新闻去', '闻去重']
    """
    if width < 1:
        raise ValueError(f"shingle width must be >= 1, got {width}")
    text = _squeeze(text)
    if len(text) <= width:
        return {text} if text else set()
    return {text[i : i + width] for i in range(len(text) - width + 1)}


def default_tokenizer() -> Callable[[str], list[str]]:
    """jieba-rs (``rjieba``) when installed, else jieba: the same Chinese splits, 26x faster."""
    try:
        import rjieba

        return rjieba.cut
    except ImportError:  # pragma: no cover - rjieba is a declared dependency
        import jieba

        return jieba.lcut


def word_shingles(tokens: Iterable[str], width: int = 3) -> set[str]:
    """``width`` consecutive words (punctuation and spaces dropped) joined by a space.

    >>> sorted(word_shingles(["新闻", "，", "去重", "算法", "比较"], 2))
    ['去重 算法', '新闻 去重', '算法 比较']
    """
    if width < 1:
        raise ValueError(f"shingle width must be >= 1, got {width}")
    words = [t for t in tokens if any(unicodedata.category(ch)[0] in "LN" for ch in t)]
    if len(words) <= width:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + width]) for i in range(len(words) - width + 1)}


class _Index(Protocol):
    def query(self, signature: object) -> list[tuple[Hashable, float]]: ...

    def add(self, key: Hashable, signature: object) -> None: ...


def _cluster_stream(
    items: Iterable[tuple[Hashable, str]],
    sign: Callable[[str], object | None],
    index: _Index,
    linkage: str,
) -> dict[Hashable, Hashable]:
    if linkage not in LINKAGES:
        raise ValueError(f"unknown linkage {linkage!r}: choose one of {', '.join(LINKAGES)}")
    parent: dict[Hashable, Hashable] = {}

    def find(key: Hashable) -> Hashable:
        root = key
        while parent[root] != root:
            root = parent[root]
        while parent[key] != root:
            parent[key], key = root, parent[key]
        return root

    position: dict[Hashable, int] = {}
    for key, text in items:
        if key in parent:
            raise ValueError(f"document id {key!r} appears twice: ids must be unique")
        position[key] = len(position)
        parent[key] = key
        signature = sign(text)
        if signature is None:  # nothing to compare (empty text): a cluster of its own
            continue
        hits = index.query(signature)
        if linkage == "single_pass":
            if hits:
                # Most similar centre; the earliest one on ties.
                best = max(hits, key=lambda hit: hit[1])
                parent[key] = best[0]
            else:
                index.add(key, signature)
        else:
            for other, _ in hits:
                # The earlier root stays the root, so a cluster is named after its first document.
                a, b = sorted((find(other), find(key)), key=position.__getitem__)
                if a != b:
                    parent[b] = a
            index.add(key, signature)
    return {key: find(key) for key in position}


class _MinHashIndex:
    def __init__(self, threshold: float, num_perm: int, verify: bool) -> None:
        self.threshold = threshold
        self.verify = verify
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self.sketches: dict[Hashable, MinHash] = {}
        self.position: dict[Hashable, int] = {}

    def query(self, signature: object) -> list[tuple[Hashable, float]]:
        assert isinstance(signature, MinHash)
        hits = []
        # LSH returns a set: sort by insertion so ties go to the earliest document.
        for key in sorted(self.lsh.query(signature), key=self.position.__getitem__):
            similarity = signature.jaccard(self.sketches[key])
            if similarity >= self.threshold or not self.verify:
                hits.append((key, similarity))
        return hits

    def add(self, key: Hashable, signature: object) -> None:
        assert isinstance(signature, MinHash)
        self.lsh.insert(key, signature)
        self.sketches[key] = signature
        self.position[key] = len(self.position)


class MinHashLSHBaseline:
    """datasketch MinHashLSH over character n-grams (see the module docstring)."""

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        num_perm: int = 128,
        ngram: int = 5,
        seed: int = 1,
        verify: bool = True,
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold is a Jaccard in (0, 1], got {threshold}")
        if num_perm < 16:
            raise ValueError(f"num_perm must be >= 16 (datasketch's default is 128), got {num_perm}")
        if ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {ngram}")
        self.threshold = threshold
        self.num_perm = num_perm
        self.ngram = ngram
        self.seed = seed
        self.verify = verify

    @property
    def name(self) -> str:
        return f"minhash-lsh char{self.ngram} t={self.threshold} perm={self.num_perm}"

    def sketch(self, text: str) -> MinHash | None:
        shingles = char_shingles(text, self.ngram)
        if not shingles:
            return None
        sketch = MinHash(num_perm=self.num_perm, seed=self.seed)
        sketch.update_batch([s.encode("utf-8") for s in shingles])
        return sketch

    def cluster(self, items: Iterable[tuple[Hashable, str]], *, linkage: str = "single_pass") -> dict[Hashable, Hashable]:
        """``doc id -> cluster id`` (the id of the cluster's first document) for a stream of ``(id, text)``."""
        index = _MinHashIndex(self.threshold, self.num_perm, self.verify)
        return _cluster_stream(items, self.sketch, index, linkage)


class _JaccardIndex:
    """Inverted index from shingle to documents: exact Jaccard against every indexed document."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.postings: dict[int, list[Hashable]] = {}
        self.sizes: dict[Hashable, int] = {}

    def query(self, signature: object) -> list[tuple[Hashable, float]]:
        assert isinstance(signature, frozenset)
        shared: Counter[Hashable] = Counter()
        for shingle in signature:
            shared.update(self.postings.get(shingle, ()))
        size = len(signature)
        hits = []
        for key, common in shared.items():  # insertion order: earlier documents first
            similarity = common / (size + self.sizes[key] - common)
            if similarity >= self.threshold:
                hits.append((key, similarity))
        return hits

    def add(self, key: Hashable, signature: object) -> None:
        assert isinstance(signature, frozenset)
        self.sizes[key] = len(signature)
        for shingle in signature:
            self.postings.setdefault(shingle, []).append(key)


class ShinglingJaccardBaseline:
    """Shingling + exact Jaccard (see the module docstring)."""

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        unit: str = "words",
        width: int = 3,
        tokenize: Callable[[str], list[str]] | None = None,
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold is a Jaccard in (0, 1], got {threshold}")
        if unit not in ("words", "chars"):
            raise ValueError(f"unit must be 'words' or 'chars', got {unit!r}")
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.threshold = threshold
        self.unit = unit
        self.width = width
        self._tokenize = tokenize

    @property
    def name(self) -> str:
        return f"shingling {self.unit}{self.width} jaccard t={self.threshold}"

    def shingles(self, text: str) -> frozenset[int] | None:
        if self.unit == "chars":
            shingles = char_shingles(text, self.width)
        else:
            if self._tokenize is None:
                self._tokenize = default_tokenizer()
            shingles = word_shingles(self._tokenize(unicodedata.normalize("NFKC", text)), self.width)
        # Python's str hash is stable within a process, which is all an in-memory index needs.
        return frozenset(hash(s) for s in shingles) or None

    def cluster(self, items: Iterable[tuple[Hashable, str]], *, linkage: str = "single_pass") -> dict[Hashable, Hashable]:
        """``doc id -> cluster id`` (the id of the cluster's first document) for a stream of ``(id, text)``."""
        return _cluster_stream(items, self.shingles, _JaccardIndex(self.threshold), linkage)
