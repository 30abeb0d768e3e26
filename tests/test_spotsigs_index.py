"""SpotSigsIndex must return exactly what brute force returns, and behave like a keyed container."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Hashable

import pytest

from newsdedup.dedup.spotsigs import multiset_jaccard
from newsdedup.dedup.spotsigs_index import SpotSigsIndex


def brute_force(stored: dict[Hashable, Counter], query: Counter, tau: float) -> list[tuple[Hashable, float]]:
    """Every stored multiset with Jaccard >= tau, by (-similarity, insertion order): the reference."""
    order = {key: i for i, key in enumerate(stored)}
    hits = [(key, multiset_jaccard(query, doc)) for key, doc in stored.items()]
    hits = [(key, sim) for key, sim in hits if sim >= tau]
    hits.sort(key=lambda hit: (-hit[1], order[hit[0]]))
    return hits


class Reference:
    """A plainly exact reference that scales: overlaps accumulated over every document sharing a spot.

    Documents sharing no spot have Jaccard 0, below any tau; the others get sum(min) / sum(max) in full.
    """

    def __init__(self) -> None:
        self.docs: dict[Hashable, Counter] = {}
        self.sizes: dict[Hashable, int] = {}
        self.holders: dict[Hashable, dict[Hashable, int]] = {}

    def add(self, key: Hashable, doc: Counter) -> None:
        if key in self.docs:
            for spot in self.docs[key]:
                del self.holders[spot][key]
        self.docs[key] = doc  # a replaced key keeps its position, like the index
        self.sizes[key] = sum(doc.values())
        for spot, count in doc.items():
            self.holders.setdefault(spot, {})[key] = count

    def remove(self, key: Hashable) -> None:
        for spot in self.docs.pop(key):
            del self.holders[spot][key]
        del self.sizes[key]

    def query(self, query: Counter, tau: float) -> list[tuple[Hashable, float]]:
        overlap: Counter = Counter()
        for spot, count in query.items():
            for key, held in self.holders.get(spot, {}).items():
                overlap[key] += min(count, held)
        size = sum(query.values())
        order = {key: i for i, key in enumerate(self.docs)}
        hits = [(key, common / (size + self.sizes[key] - common)) for key, common in overlap.items()]
        hits = [(key, sim) for key, sim in hits if sim >= tau]
        hits.sort(key=lambda hit: (-hit[1], order[hit[0]]))
        return hits


def _variant(rng: random.Random, base: Counter, vocabulary: list[str]) -> Counter:
    """Edit a multiset: drop and add occurrences so that Jaccard to the base spreads over (0, 1]."""
    doc = Counter(base)
    size = sum(base.values())
    for _ in range(rng.randint(0, max(1, size * 3 // 4))):
        spot = rng.choice(list(doc.elements())) if doc else None
        if spot is not None and rng.random() < 0.5:
            doc[spot] -= 1
        else:
            doc[rng.choice(vocabulary)] += 1
    return +doc


def _corpus(rng: random.Random, n: int) -> list[Counter]:
    """Clusters of near-copies with lengths from 1 to ~400 (many partitions, repeated spots)."""
    vocabulary = [f"s{i}" for i in range(600)]
    docs: list[Counter] = []
    bases: list[Counter] = []
    while len(docs) < n:
        if bases and rng.random() < 0.7:
            docs.append(_variant(rng, rng.choice(bases + docs[-20:]), vocabulary))
            continue
        size = int(rng.lognormvariate(3.0, 1.1)) + 1
        # A skewed draw from a narrow band of the vocabulary: repeated spots and long shared posting lists.
        offset = rng.randrange(len(vocabulary))
        base = Counter(vocabulary[(offset + int(rng.paretovariate(1.0))) % len(vocabulary)] for _ in range(min(size, 400)))
        bases.append(base)
        docs.append(base)
    return docs


@pytest.mark.parametrize("tau", [0.35, 0.5, 0.6, 0.8])
def test_query_equals_brute_force_on_a_random_stream(tau: float) -> None:
    rng = random.Random(int(tau * 1000))
    docs = _corpus(rng, 2500)
    index = SpotSigsIndex(tau, max_length=rng.choice([60, 261, 100_000]))
    reference = Reference()
    straddling = near_boundary = hits = 0
    for i, doc in enumerate(docs):
        query_tau = tau if i % 3 else rng.choice([0.35, 0.5, 0.6, 0.8, 0.95])
        got = index.query(doc, query_tau)
        nearby = reference.query(doc, query_tau - 0.1)
        expected = [(key, sim) for key, sim in nearby if sim >= query_tau]
        assert got == expected, f"doc {i}, tau {query_tau}"
        hits += len(expected)
        # How demanding the stream is: pairs within 0.1 of the threshold, such pairs across partitions.
        for key, similarity in nearby:
            if similarity <= query_tau + 0.1:
                straddling += 1
                near_boundary += index._partition_of(sum(doc.values())) != index._partition_of(reference.sizes[key])
        # Mostly new keys, sometimes a replacement, sometimes a removal.
        roll = rng.random()
        if roll < 0.05 and len(reference.docs) > 1:
            victim = rng.choice(list(reference.docs))
            index.remove(victim)
            reference.remove(victim)
        key = rng.choice(list(reference.docs)) if roll > 0.93 and reference.docs else i
        if index.add(key, doc):
            reference.add(key, doc)
        else:  # an empty multiset is not indexed, and replacing with one forgets the key
            assert not doc
            if key in reference.docs:
                reference.remove(key)
        assert len(index) == len(reference.docs)
    assert hits > 1000 and straddling > 1000 and near_boundary > 300, (hits, straddling, near_boundary)


def test_full_brute_force_with_exact_ties() -> None:
    """Small vocabulary and lengths: many pairs sit exactly at tau (1/2, 3/5, 7/20, 4/5)."""
    rng = random.Random(7)
    stored: dict[int, Counter] = {}
    indexes = {tau: SpotSigsIndex(tau, max_length=30) for tau in (0.35, 0.5, 0.6, 0.8)}
    exact_ties = 0
    for i in range(600):
        doc = +Counter({f"t{rng.randrange(8)}": rng.randint(1, 3) for _ in range(rng.randint(1, 6))})
        for tau, index in indexes.items():
            expected = brute_force(stored, doc, tau)
            assert index.query(doc) == expected
            exact_ties += sum(1 for _, sim in expected if sim == tau)
        stored[i] = doc
        for index in indexes.values():
            index.add(i, doc)
    assert exact_ties > 100


def test_paper_shorter_document_rule_counterexample_is_found() -> None:
    # The printed rule "delta1 + delta2 > (1 - tau)|d_i| -> break" would miss this pair (Jaccard 0.75).
    index = SpotSigsIndex(0.6)
    index.add("short", Counter({"b": 1, "c": 1, "d": 1}))
    index.add("other", Counter({"x": 1, "y": 1, "z": 1, "a": 1, "w": 1}))
    assert index.query(Counter({"a": 1, "b": 1, "c": 1, "d": 1})) == [("short", 0.75)]


def test_results_sorted_by_similarity_then_insertion_order_and_include_boundary() -> None:
    index = SpotSigsIndex(0.5)
    index.add("c", Counter({"x": 1, "y": 1}))  # 2/2 overlap... Jaccard 2/4 with the query below
    index.add("a", Counter({"x": 1, "y": 1, "z": 1, "w": 1}))  # identical to the query
    index.add("b", Counter({"y": 1, "x": 1}))
    index.add("far", Counter({"q": 1}))
    assert index.query(Counter({"x": 1, "y": 1, "z": 1, "w": 1})) == [("a", 1.0), ("c", 0.5), ("b", 0.5)]
    assert index.query(Counter({"x": 1, "y": 1, "z": 1, "w": 1}), tau=0.51) == [("a", 1.0)]


def test_repeated_spots_count_as_a_multiset() -> None:
    index = SpotSigsIndex(0.5)
    index.add("thrice", Counter({"的:新闻": 3}))
    assert index.query(Counter({"的:新闻": 1})) == []  # 1/3 as a multiset, 1.0 as a set
    assert index.query(Counter({"的:新闻": 2})) == [("thrice", 2 / 3)]


def test_add_remove_replace_and_container_protocol() -> None:
    index = SpotSigsIndex(0.5)
    doc1, doc2 = Counter({"a": 2, "b": 1}), Counter({"c": 1, "d": 1})
    assert index.add("k1", doc1) is True
    assert index.add("k2", doc2) is True
    assert len(index) == 2 and "k1" in index and "nope" not in index
    assert index.query(doc1) == [("k1", 1.0)]

    index.add("k1", doc2)  # replace: the old spots are gone, the key keeps its place
    assert len(index) == 2
    assert index.query(doc1) == []
    assert index.query(doc2) == [("k1", 1.0), ("k2", 1.0)]

    index.remove("k1")
    assert "k1" not in index and len(index) == 1
    assert index.query(doc2) == [("k2", 1.0)]
    with pytest.raises(KeyError):
        index.remove("k1")
    assert index.discard("k1") is False and index.discard("k2") is True
    assert len(index) == 0 and index.query(doc2) == []
    assert index.stats()["distinct_spots"] == 0 and index.stats()["postings"] == 0

    index.add("k3", doc1)  # spot ids freed above are reused
    assert index.query(doc1) == [("k3", 1.0)]


def test_min_signatures_skips_short_documents_and_queries() -> None:
    index = SpotSigsIndex(0.5, min_signatures=4)
    assert index.add("short", Counter({"a": 1, "b": 2})) is False
    assert "short" not in index and len(index) == 0
    assert index.add("long", Counter({"a": 1, "b": 2, "c": 1})) is True
    assert index.query(Counter({"a": 1, "b": 2})) == []  # too short to judge
    assert index.add("long", Counter({"a": 1})) is False  # replacing with too little forgets the key
    assert "long" not in index and len(index) == 0


def test_empty_and_unknown_queries() -> None:
    index = SpotSigsIndex(0.5)
    assert index.query(Counter({"a": 1})) == []
    index.add(1, Counter({"a": 1}))
    assert index.query(Counter()) == []
    assert index.query(Counter({"zzz": 5})) == []
    assert index.add(2, Counter()) is False


def test_hashed_integer_spots_and_long_documents_beyond_max_length() -> None:
    index = SpotSigsIndex(0.5, max_length=20)
    big = Counter({(1 << 63) + i: 1 for i in range(300)})  # unsigned 64-bit hashes
    index.add("big", big)
    near = Counter(big)
    for i in range(100):
        del near[(1 << 63) + i]
    assert index.query(near) == [("big", 200 / 300)]
    assert index.query(big, tau=0.8) == [("big", 1.0)]


def test_pruning_compares_far_fewer_documents_than_share_a_spot() -> None:
    # Zipf-distributed spots as in text: the frequent ones are shared by nearly every document.
    rng = random.Random(3)
    vocabulary = [f"v{i}" for i in range(50_000)]
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(vocabulary))))
    docs = [Counter(rng.choices(vocabulary, cum_weights=cumulative, k=rng.randint(20, 200))) for _ in range(1500)]
    index, reference = SpotSigsIndex(0.5), Reference()
    for i, doc in enumerate(docs):
        index.add(i, doc)
        reference.add(i, doc)
    sharing = 0
    for doc in docs[:50]:
        assert index.query(doc) == reference.query(doc, 0.5)
        sharing += len({key for spot in doc for key in reference.holders[spot]})
    stats = index.stats()
    assert stats["documents"] == 1500 and stats["queries"] == 50
    assert sharing > 0.9 * 50 * 1500  # a plain inverted index would compare nearly everything
    assert stats["compared"] < 0.2 * sharing, (stats, sharing)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: SpotSigsIndex(0), "tau"),
        (lambda: SpotSigsIndex(1.2), "tau"),
        (lambda: SpotSigsIndex(0.5, min_signatures=0), "min_signatures"),
        (lambda: SpotSigsIndex(0.5, max_length=0), "max_length"),
        (lambda: SpotSigsIndex(0.5).query(Counter({"a": 1}), tau=0), "tau"),
        (lambda: SpotSigsIndex(0.5).add("k", ["a", "b"]), "mapping"),
        (lambda: SpotSigsIndex(0.5).add("k", {"a": 1.5}), "integers"),
    ],
)
def test_arguments_are_validated(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
