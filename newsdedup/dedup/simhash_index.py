"""In-memory index answering "which stored Simhash fingerprints lie within k bits of this one?" without a scan.

Manku, Jain and Das Sarma (WWW 2007): split the ``bits`` bits into ``blocks`` blocks. Two fingerprints
within ``k`` bits of each other differ in at most ``k`` blocks, so they agree exactly on at least
``blocks - k`` of them (pigeonhole). One table per choice of ``blocks - k`` blocks, keyed on those blocks'
bits, therefore holds every match within ``k`` under the query's own key in at least one table. With the
default ``blocks = k + 1`` that is one table per block (k + 1 tables of bits/(k+1)-bit keys); more blocks
give longer keys and smaller buckets at the price of C(blocks, k) tables.

Candidates found under a key are checked with an exact Hamming distance, so results are exact: every stored
fingerprint within the distance, nothing else.

Bucket sizes: random fingerprints spread evenly (about n / 2**(bits/(k+1)) per bucket: 15 at a million
64-bit fingerprints with k = 3). Real Simhash fingerprints do not: near-duplicates share keys by design, and
weak features (plain term frequency, boilerplate, empty texts) pull documents into a few crowded buckets,
which every query landing there walks. Feature weighting and junk filtering keep buckets small (see
simhash.word_features).

>>> index = SimhashIndex(bits=64, max_distance=3)
>>> index.add("a", 0b1111)
>>> index.add("b", 0b0111)
>>> index.add("c", 2**63 | 0b1100)
>>> index.query(0b0011)
[('b', 1), ('a', 2)]
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Hashable, Iterator

from newsdedup import defaults  # the shipped defaults, written there only

__all__ = ["SimhashIndex"]

_MAX_TABLES = 256
_NO_SLOT = -1
# Slots live in C arrays of signed 32-bit ints.
_MAX_SLOTS = 2**31 - 1
# Each table is a hash table with chaining in flat arrays: bucket = the low bucket_bits bits of the table key
# (a coarser bucket only adds candidates, which the exact distance check filters). bucket_bits grows with
# the number of slots, like a dict resizing, up to the key width, where buckets become exact keys.
_MIN_BUCKET_BITS = 10
_WORD_BITS = 64
_WORD_MASK = (1 << _WORD_BITS) - 1


class _Removed:
    """Marks the slot of a removed or replaced key until the next compaction."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<removed>"


_REMOVED = _Removed()


class SimhashIndex:
    """All stored fingerprints within ``max_distance`` bits of a query, exactly, by Manku et al.'s block tables.

    bits: fingerprint width (64 or 128 for :func:`newsdedup.dedup.simhash.simhash`; any width >= 1 works).
    max_distance: the largest Hamming distance a query may ask for (k). Near-duplicate Simhash: 3.
    blocks: how many blocks the bits are split into, from ``max_distance + 1`` (default: k + 1 tables) up to
        ``bits``; the index keeps C(blocks, max_distance) tables (at most 256).

    Keys are any hashable values (article ids, URLs). ``add`` of a present key replaces its fingerprint and
    keeps its place in insertion order, like assigning to a dict key; ``remove`` then ``add`` moves it last.

    Memory: one dict entry (key -> slot) and a slot int per stored fingerprint, plus flat arrays: the
    fingerprint (8 bytes per 64 bits), its insertion rank (8) and per table a chain link (4) and on average
    4-8 bytes of bucket heads. Measured with benchmarks/index_scaling.py (int keys, k = 3): about
    112 bytes per fingerprint at 1M for 64 bits, 136 for 128 bits. Removed entries are reclaimed by a rebuild
    once they outnumber the live ones.
    """

    def __init__(self, bits: int = defaults.NEWSDEDUP_SIMHASH_BITS, max_distance: int = defaults.NEWSDEDUP_SIMHASH_MAX_DISTANCE,
                 blocks: int | None = None) -> None:
        if not _is_int(bits) or bits < 1:
            raise ValueError(f"bits must be a positive int (64 or 128 for simhash), got {bits!r}")
        if not _is_int(max_distance) or not 0 <= max_distance < bits:
            raise ValueError(f"max_distance must be an int in [0, bits={bits}), got {max_distance!r}")
        if blocks is None:
            blocks = max_distance + 1
        if not _is_int(blocks) or not max_distance + 1 <= blocks <= bits:
            raise ValueError(
                f"blocks must be an int in [max_distance + 1, bits] = [{max_distance + 1}, {bits}] so that every"
                f" fingerprint within {max_distance} bits shares a block exactly, got {blocks!r}"
            )
        table_count = math.comb(blocks, max_distance)
        if table_count > _MAX_TABLES:
            raise ValueError(
                f"blocks={blocks} with max_distance={max_distance} needs {table_count} tables (limit {_MAX_TABLES});"
                f" use fewer blocks (default max_distance + 1)"
            )
        self.bits = bits
        self.max_distance = max_distance
        self.blocks = blocks
        self._words = -(-bits // _WORD_BITS)

        # Block j covers bits [edges[j], edges[j+1]); the first bits % blocks blocks get one extra bit.
        width, extra = divmod(bits, blocks)
        edges = [0]
        for j in range(blocks):
            edges.append(edges[-1] + width + (1 if j < extra else 0))
        block_masks = [((1 << (edges[j + 1] - edges[j])) - 1) << edges[j] for j in range(blocks)]
        # Table t is keyed on the bits of one combination of blocks - max_distance blocks, shifted down to bit 0.
        self._table_masks: list[int] = []
        self._table_shifts: list[int] = []
        for combination in itertools.combinations(range(blocks), blocks - max_distance):
            mask = 0
            for j in combination:
                mask |= block_masks[j]
            self._table_masks.append(mask)
            self._table_shifts.append(edges[combination[0]])
        self._table_key_bits = [mask.bit_length() - shift for mask, shift in zip(self._table_masks, self._table_shifts)]
        self._max_bucket_bits = max(self._table_key_bits)
        self._reset(expected=0)

    # ----------------------------------------------------------------------------------------- storage --

    def _reset(self, expected: int) -> None:
        """Empty the index, with buckets sized for ``expected`` fingerprints."""
        self._slot_of: dict[Hashable, int] = {}  # live key -> its slot
        self._keys: list[object] = []  # slot -> key, or _REMOVED
        # slot -> fingerprint, as 64-bit words (word i holds bits 64i .. 64i+63).
        self._fingerprint_words: list[array[int]] = [array("Q") for _ in range(self._words)]
        self._ranks: array[int] = array("q")  # slot -> insertion order of its key
        self._next_rank = 0
        self._removed_slots = 0
        # Per table: bucket -> newest slot in it (heads), slot -> previous slot in the same bucket (chains).
        self._chains: list[array[int]] = [array("i") for _ in self._table_masks]
        self._set_bucket_bits(min(self._max_bucket_bits, max(_MIN_BUCKET_BITS, expected.bit_length())))

    def _set_bucket_bits(self, bucket_bits: int) -> None:
        """(Re)build every table's heads and chains with ``2**bucket_bits`` buckets (capped at its key width)."""
        self._bucket_bits = bucket_bits
        self._bucket_masks = [(1 << min(bucket_bits, key_bits)) - 1 for key_bits in self._table_key_bits]
        self._heads: list[array[int]] = [array("i", [_NO_SLOT]) * (mask + 1) for mask in self._bucket_masks]
        fingerprints = [self._fingerprint_at(slot) for slot in range(len(self._keys))]
        for table, chain in enumerate(self._chains):
            chain[:] = array("i", [_NO_SLOT]) * len(fingerprints)
            mask, shift, bucket_mask = self._table_masks[table], self._table_shifts[table], self._bucket_masks[table]
            heads = self._heads[table]
            for slot, fingerprint in enumerate(fingerprints):
                if self._keys[slot] is not _REMOVED:
                    bucket = ((fingerprint & mask) >> shift) & bucket_mask
                    chain[slot] = heads[bucket]
                    heads[bucket] = slot

    def _fingerprint_at(self, slot: int) -> int:
        fingerprint = 0
        for word, words in enumerate(self._fingerprint_words):
            fingerprint |= words[slot] << (word * _WORD_BITS)
        return fingerprint

    def _append(self, key: Hashable, fingerprint: int, rank: int) -> None:
        slot = len(self._keys)
        if slot >= _MAX_SLOTS:
            raise OverflowError(f"SimhashIndex holds at most {_MAX_SLOTS} slots; split the data over several indexes")
        self._slot_of[key] = slot
        self._keys.append(key)
        for word, words in enumerate(self._fingerprint_words):
            words.append((fingerprint >> (word * _WORD_BITS)) & _WORD_MASK)
        self._ranks.append(rank)
        for mask, shift, bucket_mask, heads, chain in zip(
            self._table_masks, self._table_shifts, self._bucket_masks, self._heads, self._chains
        ):
            bucket = ((fingerprint & mask) >> shift) & bucket_mask
            chain.append(heads[bucket])
            heads[bucket] = slot
        if slot >= 1 << self._bucket_bits and self._bucket_bits < self._max_bucket_bits:
            # Keep about one slot per bucket, as a dict does; doubling keeps the rebuilds' cost amortised O(1).
            self._set_bucket_bits(self._bucket_bits + 1)

    def _maybe_compact(self) -> None:
        # Removed slots stay in the chains (unlinking needs a walk) and are skipped by queries; rebuild once
        # they outnumber the live ones, which keeps the amortised cost of add/remove constant.
        if self._removed_slots > max(1024, len(self._slot_of)):
            live = sorted((self._ranks[slot], key, self._fingerprint_at(slot)) for key, slot in self._slot_of.items())
            next_rank = self._next_rank
            self._reset(expected=len(live))
            self._next_rank = next_rank
            for rank, key, fingerprint in live:
                self._append(key, fingerprint, rank)

    def _check_fingerprint(self, fingerprint: int) -> None:
        if not _is_int(fingerprint) or fingerprint < 0 or fingerprint >> self.bits:
            raise ValueError(
                f"fingerprint must be an unsigned {self.bits}-bit int, got {fingerprint!r};"
                f" convert signed values read from SQL with newsdedup.text.hashing.from_signed64"
            )

    # -------------------------------------------------------------------------------------- public API --

    def add(self, key: Hashable, fingerprint: int) -> None:
        """Store ``fingerprint`` under ``key``; a present key gets the new fingerprint and keeps its order."""
        self._check_fingerprint(fingerprint)
        slot = self._slot_of.get(key)
        if slot is not None:
            if self._fingerprint_at(slot) == fingerprint:
                return
            rank = self._ranks[slot]
            self._keys[slot] = _REMOVED
            self._removed_slots += 1
        else:
            rank = self._next_rank
            self._next_rank += 1
        self._append(key, fingerprint, rank)
        self._maybe_compact()

    def remove(self, key: Hashable) -> None:
        """Remove ``key``; raises KeyError when it is not stored."""
        slot = self._slot_of.pop(key)
        self._keys[slot] = _REMOVED
        self._removed_slots += 1
        self._maybe_compact()

    def query(self, fingerprint: int, max_distance: int | None = None) -> list[tuple[Hashable, int]]:
        """Every stored ``(key, distance)`` with Hamming distance <= ``max_distance`` (default: the index's).

        Sorted by distance, then insertion order. ``max_distance`` cannot exceed the index's: the tables
        only guarantee matches up to it.
        """
        self._check_fingerprint(fingerprint)
        if max_distance is None:
            max_distance = self.max_distance
        elif not _is_int(max_distance) or not 0 <= max_distance <= self.max_distance:
            raise ValueError(
                f"max_distance must be an int in [0, {self.max_distance}], got {max_distance!r};"
                f" build the index with SimhashIndex(max_distance=...) at least as large"
            )
        keys = self._keys
        hits: dict[int, int] = {}  # slot -> distance; a match can sit in several tables
        if self._words == 1:
            fingerprints = self._fingerprint_words[0]
            for mask, shift, bucket_mask, heads, chain in zip(
                self._table_masks, self._table_shifts, self._bucket_masks, self._heads, self._chains
            ):
                slot = heads[((fingerprint & mask) >> shift) & bucket_mask]
                while slot != _NO_SLOT:
                    distance = (fingerprints[slot] ^ fingerprint).bit_count()
                    if distance <= max_distance and keys[slot] is not _REMOVED:
                        hits[slot] = distance
                    slot = chain[slot]
        else:
            query_words = [
                (words, (fingerprint >> (word * _WORD_BITS)) & _WORD_MASK)
                for word, words in enumerate(self._fingerprint_words)
            ]
            for mask, shift, bucket_mask, heads, chain in zip(
                self._table_masks, self._table_shifts, self._bucket_masks, self._heads, self._chains
            ):
                slot = heads[((fingerprint & mask) >> shift) & bucket_mask]
                while slot != _NO_SLOT:
                    distance = 0
                    for words, query_word in query_words:
                        distance += (words[slot] ^ query_word).bit_count()
                    if distance <= max_distance and keys[slot] is not _REMOVED:
                        hits[slot] = distance
                    slot = chain[slot]
        ranks = self._ranks
        ordered = sorted(hits.items(), key=lambda hit: (hit[1], ranks[hit[0]]))
        return [(keys[slot], distance) for slot, distance in ordered]

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._slot_of
        except TypeError:  # unhashable: cannot be stored
            return False

    def __iter__(self) -> Iterator[Hashable]:
        """Stored keys in insertion order."""
        slots = sorted(self._slot_of.values(), key=self._ranks.__getitem__)
        return (self._keys[slot] for slot in slots)  # type: ignore[misc]

    def __repr__(self) -> str:
        return (
            f"SimhashIndex(bits={self.bits}, max_distance={self.max_distance}, blocks={self.blocks})"
            f" with {len(self)} fingerprints in {len(self._table_masks)} tables"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
