"""SpotSigsIndex must return exactly what brute force returns, and behave like a keyed container."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Hashable, Sequence

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


def _corpus(rng: random.Random, n: int, vocabulary: Sequence[Hashable] | None = None) -> list[Counter]:
    """Clusters of near-copies with lengths from 1 to ~400 (many partitions, repeated spots)."""
    vocabulary = vocabulary or [f"s{i}" for i in range(600)]
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


def _check_stream(
    index: SpotSigsIndex, docs: list[Counter], tau: float, rng: random.Random, removals: float
) -> tuple[int, int, int]:
    """Query then add each document, comparing with the reference; returns (hits, straddling, near_boundary)."""
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
        if roll < removals and len(reference.docs) > 1:
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
    for key, doc in reference.docs.items():  # what the index keeps is what was added
        assert index.signatures(key) == doc
    return hits, straddling, near_boundary


@pytest.mark.parametrize("tau", [0.35, 0.5, 0.6, 0.8])
def test_query_equals_brute_force_on_a_random_stream(tau: float) -> None:
    rng = random.Random(int(tau * 1000))
    docs = _corpus(rng, 2500)
    index = SpotSigsIndex(tau, max_length=rng.choice([60, 261, 100_000]))
    hits, straddling, near_boundary = _check_stream(index, docs, tau, rng, removals=0.05)
    assert hits > 1000 and straddling > 1000 and near_boundary > 300, (hits, straddling, near_boundary)


def _vocabulary(kind: str, rng: random.Random) -> list[Hashable]:
    if kind == "hashes":  # what the pipeline stores: unsigned 64-bit hashes, half of them >= 2**63
        return [rng.getrandbits(64) for _ in range(600)]
    if kind == "small ints":  # consecutive values: the hash table must spread them itself
        return list(range(600))
    # Strings and ints in one index, with ints outside 64 unsigned bits (kept like strings).
    return [f"s{i}" if i % 3 == 0 else -i if i % 3 == 1 else (1 << 64) + i if i % 30 == 2 else i for i in range(600)]


@pytest.mark.parametrize("kind", ["hashes", "small ints", "mixed"])
def test_query_equals_brute_force_with_integer_spots_and_many_removals(kind: str) -> None:
    """The integer spots go through the open-addressing table: growth, DELETED marks, reused ids."""
    rng = random.Random(kind)
    docs = _corpus(rng, 1500, _vocabulary(kind, rng))
    index = SpotSigsIndex(0.5, max_length=261)
    hits, straddling, _ = _check_stream(index, docs, 0.5, rng, removals=0.3)
    assert hits > 500 and straddling > 500, (hits, straddling)


def test_table_and_holder_lists_survive_growth_and_emptying() -> None:
    """One spot held by 150 documents (past every slab into an array) and 20,000 rare 64-bit spots (table
    resizes), then everything removed in random order: the index must agree with brute force throughout
    and end empty, with spot ids reused afterwards."""
    rng = random.Random(5)
    common = (1 << 64) - 1
    stored: dict[int, Counter] = {}
    index = SpotSigsIndex(0.5, min_signatures=1)
    for i in range(150):
        doc = Counter({common: rng.randint(1, 3)})
        doc.update(rng.getrandbits(64) for _ in range(rng.randint(0, 250)))
        stored[i] = doc
        assert index.add(i, doc)
    assert index.stats()["postings"] == sum(len(doc) for doc in stored.values())
    probe = Counter({common: 2})
    order = list(stored)
    rng.shuffle(order)
    for key in order:
        assert index.query(probe, tau=0.01) == brute_force(stored, probe, 0.01)
        index.remove(key)
        del stored[key]
    stats = index.stats()
    assert len(index) == 0 and stats["distinct_spots"] == 0 and stats["postings"] == 0
    assert index.query(probe) == []
    index.add("again", probe)
    assert index.query(probe) == [("again", 1.0)] and index.stats()["distinct_spots"] == 1


def contained_brute_force(
    stored: dict[Hashable, Counter], query: Counter, min_containment: float, min_spots: int, min_ratio: float
) -> list[tuple[Hashable, float]]:
    """Every stored multiset containing or contained in the query, by (-containment, insertion order)."""
    order = {key: i for i, key in enumerate(stored)}
    size = sum(query.values())
    hits = []
    for key, doc in stored.items():
        other = sum(doc.values())
        smaller, larger = min(size, other), max(size, other)
        if smaller < min_spots or smaller / larger < min_ratio:
            continue
        containment = sum((query & doc).values()) / smaller
        if containment >= min_containment:
            hits.append((key, containment))
    hits.sort(key=lambda hit: (-hit[1], order[hit[0]]))
    return hits


@pytest.mark.parametrize("min_containment", [0.5, 0.7, 0.9])
def test_contained_equals_brute_force_on_a_random_stream(min_containment: float) -> None:
    """Prefix filtering must find every containing and contained document a scan finds, and nothing else."""
    rng = random.Random(int(min_containment * 100))
    docs = _corpus(rng, 700)
    # Short versions (a prefix of a stored document) and stored documents with text added: the cases the
    # containment fallback exists for.
    for i in range(0, len(docs), 7):
        elements = sorted(docs[i].elements())
        docs.insert(i + 1, Counter(elements[: max(1, len(elements) // 3)]) if i % 2 else docs[i] + _corpus(rng, 1)[0])
    index = SpotSigsIndex(0.5, min_signatures=3)
    stored: dict[Hashable, Counter] = {}
    hits = 0
    for i, doc in enumerate(docs):
        min_spots, min_ratio = rng.choice([(1, 0.15), (10, 0.15), (5, 0.3)])
        got = index.contained(doc, min_containment=min_containment, min_spots=min_spots, min_ratio=min_ratio)
        expected = contained_brute_force(stored, doc, min_containment, max(min_spots, 3), min_ratio)
        if sum(doc.values()) < 3:
            expected = []
        assert got == expected, f"doc {i}"
        hits += len(expected)
        if index.add(i, doc):
            stored[i] = doc
    assert hits > 200, hits


def test_signatures_and_jaccard_of_a_stored_key() -> None:
    rng = random.Random(9)
    vocabulary = _vocabulary("mixed", rng) + _vocabulary("hashes", rng)
    index = SpotSigsIndex(0.5)
    docs = {i: Counter(rng.choices(vocabulary, k=rng.randint(1, 60))) for i in range(200)}
    for key, doc in docs.items():
        index.add(key, doc)
    for key, doc in docs.items():
        assert index.signatures(key) == doc
        other = docs[rng.randrange(200)]
        assert index.jaccard(key, other) == multiset_jaccard(other, doc)  # float for float
        assert index.jaccard(key, doc) == 1.0
    assert index.signatures("absent") is None and index.jaccard("absent", docs[0]) is None
    assert index.jaccard(0, Counter({"unseen": 3})) == 0.0
    with pytest.raises(ValueError, match="mapping"):
        index.jaccard(0, ["a"])


def test_bools_and_int_subclasses_are_the_ints_they_equal() -> None:
    index = SpotSigsIndex(0.5)
    index.add("k", Counter({1: 2, 0: 1, 7: 1}))
    assert index.query(Counter({True: 2, False: 1, 7: 1})) == [("k", 1.0)]


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
        # 64-bit spots, as a crawl hashes them, are checked as strictly (their counts by type, not value)
        (lambda: SpotSigsIndex(0.5).add("k", {1: 2, 7: 1.0}), "integers"),
        (lambda: SpotSigsIndex(0.5).query(Counter({1: 2, 7: True})), "integers"),
    ],
)
def test_arguments_are_validated(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_contained_with_the_whole_rule_equals_brute_force() -> None:
    """Below ``whole_below`` a pair needs containment >= 0.99; the index decides as a scan with that rule."""
    rng = random.Random(60)
    docs = _corpus(rng, 500)
    for i in range(0, len(docs), 5):  # short versions, verbatim or with a few spots changed
        elements = sorted(docs[i].elements())
        short = elements[: max(1, len(elements) // 3)]
        if i % 2:
            short = short[:-2] + ["edited", "spots"]
        docs.insert(i + 1, Counter(short))
    index = SpotSigsIndex(0.5, min_signatures=3)
    stored: dict[Hashable, Counter] = {}
    dropped = kept_short = 0
    for i, doc in enumerate(docs):
        got = index.contained(doc, min_containment=0.7, min_spots=5, whole_below=0.6)
        expected = [(key, containment) for key, containment in contained_brute_force(stored, doc, 0.7, 5, 0.15)
                    if containment >= 0.99 or min(sum(doc.values()), sum(stored[key].values()))
                    / max(sum(doc.values()), sum(stored[key].values())) >= 0.6]
        if sum(doc.values()) < 5:
            expected = []
        assert got == expected, f"doc {i}"
        everything = index.contained(doc, min_containment=0.7, min_spots=5)
        dropped += len(everything) - len(got)
        kept_short += sum(min(sum(doc.values()), sum(stored[key].values()))
                          / max(sum(doc.values()), sum(stored[key].values())) < 0.6 for key, _ in got)
        if index.add(i, doc):
            stored[i] = doc
    assert dropped > 20 and kept_short > 20, (dropped, kept_short)
    with pytest.raises(ValueError, match="whole_below"):
        index.contained(docs[0], min_containment=0.7, whole_below=1.5)


def test_integer_spots_without_a_positive_count_are_left_out() -> None:
    index = SpotSigsIndex(0.5)
    index.add("k", Counter({11: 2, 12: 0, 13: -1, 14: 1}))
    assert index.query(Counter({11: 2, 14: 1})) == [("k", 1.0)]
    assert index.query(Counter({11: 2, 14: 1, 12: 5, 13: -3}), tau=0.3) == [("k", 3 / 8)]  # 12 counts, 13 does not
