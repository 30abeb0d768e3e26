"""SimhashIndex: exact agreement with brute force, add/remove/replace semantics, argument checks."""

from __future__ import annotations

import random
from collections.abc import Hashable

import pytest

from newsdedup.dedup.simhash_index import SimhashIndex


def flip_bits(fingerprint: int, count: int, bits: int, rng: random.Random) -> int:
    for position in rng.sample(range(bits), count):
        fingerprint ^= 1 << position
    return fingerprint


def brute_force(stored: dict[Hashable, int], query: int, max_distance: int) -> list[tuple[Hashable, int]]:
    """Scan everything. ``stored`` is a dict, whose order is the index's insertion order by construction:
    assigning to a present key keeps its place, deleting and re-adding moves it last."""
    order = {key: position for position, key in enumerate(stored)}
    matches = [(key, (fp ^ query).bit_count()) for key, fp in stored.items()]
    return sorted(((k, d) for k, d in matches if d <= max_distance), key=lambda match: (match[1], order[match[0]]))


@pytest.mark.parametrize(
    ("bits", "max_distance", "blocks"),
    [(64, 3, None), (64, 1, None), (64, 6, None), (64, 3, 6), (128, 3, None), (128, 8, None), (128, 4, 7)],
)
def test_query_equals_brute_force(bits: int, max_distance: int, blocks: int | None) -> None:
    rng = random.Random(f"{bits}-{max_distance}-{blocks}")
    index = SimhashIndex(bits=bits, max_distance=max_distance, blocks=blocks)
    stored: dict[Hashable, int] = {}

    def add(key: Hashable, fingerprint: int) -> None:
        index.add(key, fingerprint)
        stored[key] = fingerprint

    for i in range(3000):
        add(i, rng.getrandbits(bits))
    # Planted neighbours of some stored fingerprints at every distance 0..k and at k+1 (must not match).
    centres = rng.sample(range(3000), 150)
    for centre in centres:
        for distance in range(max_distance + 2):
            add(("near", centre, distance), flip_bits(stored[centre], distance, bits, rng))
    # Remove some, replace some (keeps order), remove-and-re-add some (moves last).
    for key in rng.sample(sorted(stored, key=str), 400):
        index.remove(key)
        del stored[key]
    for key in rng.sample(sorted(stored, key=str), 200):
        add(key, flip_bits(stored[key], rng.randint(0, max_distance + 1), bits, rng))
    for key in rng.sample(sorted(stored, key=str), 100):
        index.remove(key)
        del stored[key]
        add(key, rng.getrandbits(bits))
    assert len(index) == len(stored)

    queries = [stored[key] for key in rng.sample(sorted(stored, key=str), 100)]
    queries += [flip_bits(stored[("near", c, 0)], 1, bits, rng) for c in centres if ("near", c, 0) in stored][:50]
    queries += [rng.getrandbits(bits) for _ in range(50)]
    matches = 0
    for query in queries:
        expected = brute_force(stored, query, max_distance)
        assert index.query(query) == expected
        for distance in range(max_distance):
            assert index.query(query, distance) == [match for match in expected if match[1] <= distance]
        matches += len(expected)
    assert matches > len(queries)  # the planted neighbours were actually found


def test_neighbour_at_k_plus_one_is_not_returned() -> None:
    index = SimhashIndex(bits=64, max_distance=3)
    index.add("k", 0b0111)
    index.add("k+1", 0b1111)
    assert index.query(0) == [("k", 3)]
    assert index.query(0, 2) == []


class CountingList(list):  # type: ignore[type-arg]
    reads = 0

    def __getitem__(self, slot):  # type: ignore[no-untyped-def]
        CountingList.reads += 1
        return super().__getitem__(slot)


def test_query_does_not_scan_every_fingerprint() -> None:
    rng = random.Random(7)
    index = SimhashIndex(bits=64, max_distance=3)
    for i in range(20_000):
        index.add(i, rng.getrandbits(64))
    index._fingerprint_words[0] = CountingList(index._fingerprint_words[0])  # white box: count distance checks
    CountingList.reads = 0
    for _ in range(100):
        index.query(rng.getrandbits(64))
    # 4 tables of 2**16 buckets: about 4 * 20,000 / 65,536 = 1.2 candidates per query, not 20,000.
    assert CountingList.reads < 100 * 20


def test_add_remove_replace_semantics() -> None:
    index = SimhashIndex(bits=64, max_distance=3)
    assert len(index) == 0 and "a" not in index and index.query(0) == []
    index.add("a", 0b0001)
    index.add("b", 0b0011)
    index.add("c", 0b0001)
    assert len(index) == 3 and "a" in index and list(index) == ["a", "b", "c"]
    assert index.query(0) == [("a", 1), ("c", 1), ("b", 2)]  # ties by insertion order

    far = 0b1111 << 60
    index.add("a", far)  # replace: new fingerprint, same place in the order
    assert len(index) == 3 and list(index) == ["a", "b", "c"]
    assert index.query(0) == [("c", 1), ("b", 2)]
    assert index.query(far) == [("a", 0)]
    index.add("a", 0b0001)
    assert index.query(0) == [("a", 1), ("c", 1), ("b", 2)]
    index.add("a", 0b0001)  # same fingerprint again: no change
    assert len(index) == 3

    index.remove("a")
    assert "a" not in index and len(index) == 2
    assert index.query(0) == [("c", 1), ("b", 2)]
    index.add("a", 0b0001)  # re-added after removal: last in the order
    assert index.query(0) == [("c", 1), ("a", 1), ("b", 2)]
    assert list(index) == ["b", "c", "a"]
    with pytest.raises(KeyError):
        index.remove("missing")
    assert [] not in index  # unhashable keys are never present


def test_many_removals_compact_and_stay_correct() -> None:
    rng = random.Random(11)
    index = SimhashIndex(bits=128, max_distance=3)
    stored = {i: rng.getrandbits(128) for i in range(5000)}
    for key, fingerprint in stored.items():
        index.add(key, fingerprint)
    for key in range(0, 5000, 5):
        index.add(key, stored[key])  # unchanged re-adds
    for key in range(4000):
        index.remove(key)
        del stored[key]
    assert len(index._keys) < 5000  # the removed slots were reclaimed
    assert len(index) == 1000 and list(index) == list(stored)
    for key in rng.sample(sorted(stored), 50):
        assert index.query(stored[key])[0] == (key, 0)


def test_default_blocks_and_tables() -> None:
    assert SimhashIndex().blocks == 4 and len(SimhashIndex()._table_masks) == 4
    assert SimhashIndex(bits=128, max_distance=6).blocks == 7
    assert len(SimhashIndex(bits=64, max_distance=3, blocks=6)._table_masks) == 20  # C(6, 3)
    assert SimhashIndex(bits=64, max_distance=0).query(0) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bits": 0}, "bits must be a positive int"),
        ({"bits": 64.0}, "bits must be a positive int"),
        ({"max_distance": -1}, "max_distance must be an int"),
        ({"max_distance": 64}, "max_distance must be an int"),
        ({"max_distance": True}, "max_distance must be an int"),
        ({"max_distance": 3, "blocks": 3}, "blocks must be an int in"),
        ({"max_distance": 3, "blocks": 65}, "blocks must be an int in"),
        ({"max_distance": 10, "blocks": 40}, "tables"),
    ],
)
def test_invalid_constructor_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SimhashIndex(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("fingerprint", [-1, 2**64, 1.5, "0", None, True])
def test_invalid_fingerprints(fingerprint: object) -> None:
    index = SimhashIndex(bits=64)
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        index.add("a", fingerprint)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        index.query(fingerprint)  # type: ignore[arg-type]


def test_query_distance_cannot_exceed_the_index() -> None:
    index = SimhashIndex(bits=64, max_distance=3)
    with pytest.raises(ValueError, match="at least as large"):
        index.query(0, 4)
    with pytest.raises(ValueError, match="max_distance must be an int"):
        index.query(0, -1)
