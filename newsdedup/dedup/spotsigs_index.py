"""In-memory SpotSigs index: every stored document within a multiset-Jaccard threshold, exactly.

This is the search side of SpotSigs (Theobald et al., SIGIR 2008, Algorithm 1), turned from an all-pairs
batch into an online index that a crawl adds to and queries one article at a time:

* Documents are grouped into the paper's length partitions (:func:`length_partitions`). A stored document
  whose length ratio to the query is under ``tau`` can never reach ``tau``, so only the partitions that
  overlap ``[tau * |q|, |q| / tau]`` are searched: the query's own, the next one when
  ``p_{k+1} - |q| <= (1 - tau) p_{k+1}`` (the paper's rule), and, because a stream query also has to meet
  older, shorter documents, the previous one when its end is at least ``tau * |q|``.
* Each partition has an inverted list per spot, sorted by descending document length. All partitions of a
  spot share one list sorted that way, so a partition's list is a contiguous run found by bisection
  (half the dictionaries and no per-partition copies).
* The query's spots are taken in ascending document frequency within the partition, so the rare,
  telling spots come first. ``delta1`` is the query mass of the spots already taken: a document not met
  in those lists shares at most ``R = |q| - delta1`` spot occurrences with the query, so its Jaccard is at
  most ``min(x, R) / (|q| + x - min(x, R))`` for its length ``x``. That bound rules out lengths above a
  maximum that shrinks as ``delta1`` grows (the paper's ``delta2 < 0 ... continue``: longer documents are
  skipped, which bisection does in one step) and below ``tau * |q|`` (``delta2 >= 0 ... break``: the list
  is sorted by length, so the scan stops); once no length in the partition is left the partition is done
  (the paper's ``delta1 >= (1 - tau) max|d'|`` break).
* Every document that survives the bounds is compared in full, once.

The paper prints the "shorter document" rule as ``delta1 + delta2 > (1 - tau)|d_i|``; that rule is not exact
(query {a, b, c, d}, stored {b, c, d}, tau 0.6: Jaccard 0.75, yet after spot ``a`` it gives 1 + 1 > 1.6 and
stops). The bounds here are derived from the Jaccard formula itself and evaluated in the same floating
point arithmetic as :func:`multiset_jaccard`, so the result equals brute force exactly, ties included.

Memory. A news article has ~104 distinct spots; in a corpus of 8k Sina articles ~31 of them are new and
two thirds of all spots occur in one document only. Dictionaries, boxed ints and an array per spot cost
~5.6 KB per stored Sina article; everything here lives in flat C arrays instead, ~2.5 KB (measured with
benchmarks/index_scaling.py):

* A stored document is a *sequence number* (its insertion number, kept when its key is replaced). Its
  length and spots live in arrays indexed by it. Its spots are one ``array('I')`` of spot ids: the ids
  that occur once, then the ids that repeat, then the counts of those (most counts are 1 and not stored).
* Spots get dense 32-bit ids. Spots that are unsigned 64-bit ints (the pipeline hashes them) are looked
  up in an open-addressing table of ids (4 bytes a slot) whose values are kept once, in ``id -> spot``;
  any other hashable spot (strings) goes through a dictionary.
* The holders of a spot (:class:`_HolderLists`): the sequence number of its only holder, kept in the
  spot's 32-bit head (most spots), else sorted 64-bit postings ``rank << 32 | sequence number`` in a
  slab of a shared pool (up to 64 holders) or in an ``array('Q')`` of its own (frequent spots).

>>> from collections import Counter
>>> index = SpotSigsIndex(tau=0.5)
>>> index.add("a", Counter({"的:新闻": 2, "在:北京": 1, "了:发布": 1}))
True
>>> index.add("b", Counter({"的:新闻": 1, "是:今天": 1}))
True
>>> index.query(Counter({"的:新闻": 2, "在:北京": 1}))
[('a', 0.75)]
>>> index.jaccard("b", Counter({"的:新闻": 2, "在:北京": 1}))
0.25
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from itertools import repeat

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.dedup.spotsigs import containment_match, length_partitions

__all__ = ["SpotSigsIndex"]

_LENGTH_CAP = (1 << 24) - 1  # 16,777,215 spots per document
_PLAIN_INT = frozenset({int})  # the type of every spot and count in the common case (_positive_counts)
_ZEROS = repeat(0)

# A spot's 32-bit head: below _SHARED, the sequence number of its only holder; else
# _SHARED | kind << _KIND_SHIFT | number, where kind < _SLAB_KINDS names slab ``number`` of the pool of
# slabs holding up to _SLAB_CAPACITIES[kind] holders, and _ARRAY_KIND names array ``number``; _FREE_HEAD:
# an unused id.
_SHARED = 1 << 31
_SEQ_BITS = 32  # a posting is rank << 32 | sequence number
_SEQ_MASK = (1 << _SEQ_BITS) - 1
_MAX_SEQ = _SHARED - 1
_KIND_SHIFT = 28
_NUMBER_MASK = (1 << _KIND_SHIFT) - 1
_SLAB_CAPACITIES = (2, 4, 8, 16, 32, 64)
_SLAB_KINDS = len(_SLAB_CAPACITIES)
_ARRAY_KIND = 7
_FREE_HEAD = 0xFFFFFFFF
_MAX_NUMBER = _NUMBER_MASK - 1  # array number _NUMBER_MASK would read as _FREE_HEAD
_SLAB_WIDTHS = tuple(1 + capacity for capacity in _SLAB_CAPACITIES)  # a length, then the holders
_EMPTY_SLABS = tuple(array("Q", bytes(8 * width)) for width in _SLAB_WIDTHS)

# Hash-table slots hold a spot id, or one of these markers (ids stay below them).
_EMPTY = 0xFFFFFFFF
_DELETED = 0xFFFFFFFE
_MAX_SPOT_ID = _DELETED - 1
_U64_LIMIT = 1 << 64
_FIBONACCI = 0x9E3779B97F4A7C15  # 2**64 / golden ratio: spreads sequential ints over the table
_MIN_TABLE_BITS = 10


def _min_length(length: int, tau: float) -> int:
    """Smallest stored length ``x`` with ``x / length >= tau`` in floating point (the best a shorter doc gets)."""
    x = max(1, int(tau * length))
    while x > 1 and (x - 1) / length >= tau:
        x -= 1
    while x / length < tau:
        x += 1
    return x


def _max_length(length: int, remaining: int, tau: float) -> int:
    """Largest stored length that can still reach ``tau`` while sharing at most ``remaining`` occurrences.

    A document of length ``x >= remaining`` scores at most ``remaining / (length + x - remaining)``; the
    answer is the largest ``x`` for which that, computed in floating point like the real score, is
    ``>= tau``. Returns 0 when even ``x = remaining`` cannot reach ``tau`` (nothing unseen can match).
    """
    if remaining <= 0 or remaining / length < tau:
        return 0
    x = max(remaining, int(remaining * (1.0 + tau) / tau) - length)
    while remaining / (length + x + 1 - remaining) >= tau:
        x += 1
    while x > remaining and remaining / (length + x - remaining) < tau:
        x -= 1
    return x


class _HolderLists:
    """Per spot id, the documents holding it, as postings ``rank << 32 | seq`` in ascending order.

    ``rank`` is ``_LENGTH_CAP - length`` of document ``seq``, so the order is descending length, then
    insertion order, and a length range is a contiguous run of a list (:meth:`run`). Postings are 64-bit
    so that plain C bisection finds them (bisecting 32-bit numbers by a rank looked up per step cost
    three times as much).
    """

    def __init__(self, rank: array) -> None:
        self.heads = array("I")
        self.postings = 0
        self._rank = rank
        self._pools = [array("Q") for _ in range(_SLAB_KINDS)]
        self._free_slabs = [array("I") for _ in range(_SLAB_KINDS)]
        self._arrays: list[array | None] = []
        self._free_arrays = array("I")

    def span(self, held: int) -> tuple[array, int, int]:
        """All postings of a spot whose head is ``held`` (>= _SHARED): ``postings[start:stop]``."""
        kind, number = (held >> _KIND_SHIFT) & 7, held & _NUMBER_MASK
        if kind == _ARRAY_KIND:
            postings = self._arrays[number]
            return postings, 0, len(postings)  # type: ignore[arg-type]
        postings = self._pools[kind]
        start = number * _SLAB_WIDTHS[kind] + 1
        return postings, start, start + postings[start - 1]

    def run(self, held: int, low_rank: int, stop_rank: int) -> tuple[array, int, int]:
        """The postings with a rank in ``[low_rank, stop_rank)`` of a spot whose head is ``held``
        (>= _SHARED): ``postings[first:stop]``."""
        kind, number = (held >> _KIND_SHIFT) & 7, held & _NUMBER_MASK  # span(), inlined: a hot path
        if kind == _ARRAY_KIND:
            postings = self._arrays[number]
            start, stop = 0, len(postings)  # type: ignore[arg-type]
        else:
            postings = self._pools[kind]
            start = number * _SLAB_WIDTHS[kind] + 1
            stop = start + postings[start - 1]
        first = bisect_left(postings, low_rank << _SEQ_BITS, start, stop)  # type: ignore[arg-type]
        return postings, first, bisect_left(postings, stop_rank << _SEQ_BITS, first, stop)

    def add_document(self, seq: int, spot_ids: list[int]) -> None:
        """Add document ``seq`` (whose rank is set) to the holders of each of ``spot_ids`` (distinct ids).

        The hot loop of indexing, written out in one function (a call per posting doubled its cost).
        """
        heads, rank, pools = self.heads, self._rank, self._pools
        pairs, free_pairs, pair_width = pools[0], self._free_slabs[0], _SLAB_WIDTHS[0]
        posting = rank[seq] << _SEQ_BITS | seq
        for spot_id in spot_ids:
            held = heads[spot_id]
            if held == _FREE_HEAD:  # a new spot (two thirds of them stay with one holder)
                heads[spot_id] = seq
                continue
            if held < _SHARED:  # a second holder: a slab of two
                held_posting = rank[held] << _SEQ_BITS | held
                if free_pairs:
                    number = free_pairs.pop()
                else:
                    number = len(pairs) // pair_width
                    self._check_number(number)
                    pairs.extend(_EMPTY_SLABS[0])
                base = number * pair_width
                pairs[base] = 2
                if held_posting < posting:
                    pairs[base + 1], pairs[base + 2] = held_posting, posting
                else:
                    pairs[base + 1], pairs[base + 2] = posting, held_posting
                heads[spot_id] = _SHARED | number
                continue
            kind, number = (held >> _KIND_SHIFT) & 7, held & _NUMBER_MASK
            if kind == _ARRAY_KIND:
                insort(self._arrays[number], posting)  # type: ignore[arg-type]
                continue
            postings = pools[kind]
            start = number * _SLAB_WIDTHS[kind] + 1
            stop = start + postings[start - 1]
            position = bisect_left(postings, posting, start, stop)
            if stop - start < _SLAB_CAPACITIES[kind]:
                if position < stop:
                    postings[position + 1 : stop + 1] = postings[position:stop]
                postings[position] = posting
                postings[start - 1] += 1
            else:  # the slab is full: move to one twice as large
                grown = postings[start:position] + array("Q", (posting,)) + postings[position:stop]
                self._free_slabs[kind].append(number)
                heads[spot_id] = self._store(grown)
        self.postings += len(spot_ids)

    def remove(self, spot_id: int, seq: int) -> bool:
        """Remove document ``seq`` (rank unchanged since it was added); True when the spot has no holder left."""
        self.postings -= 1
        held = self.heads[spot_id]
        if held < _SHARED:
            self.heads[spot_id] = _FREE_HEAD
            return True
        postings, start, stop = self.span(held)
        position = bisect_left(postings, self._rank[seq] << _SEQ_BITS | seq, start, stop)
        kind, number = (held >> _KIND_SHIFT) & 7, held & _NUMBER_MASK
        if kind == _ARRAY_KIND:
            del postings[position]
        else:  # slabs do not shrink: a spot losing holders keeps its slab
            postings[position : stop - 1] = postings[position + 1 : stop]
            postings[start - 1] -= 1
        if stop - start == 2:  # one holder left: back into the head
            self.heads[spot_id] = postings[start] & _SEQ_MASK
            if kind == _ARRAY_KIND:
                self._arrays[number] = None
                self._free_arrays.append(number)
            else:
                self._free_slabs[kind].append(number)
        return False

    def nbytes(self) -> int:
        arrays = [postings for postings in self._arrays if postings is not None]
        return (
            sum(map(sys.getsizeof, arrays))
            + sum(map(sys.getsizeof, self._pools))
            + sum(map(sys.getsizeof, self._free_slabs))
            + sys.getsizeof(self._arrays)
            + sys.getsizeof(self._free_arrays)
            + sys.getsizeof(self.heads)
        )

    def _store(self, postings: array) -> int:
        """Put a sorted run of 2 or more postings in the smallest slab that takes it, or an array; its head."""
        for kind in range(_SLAB_KINDS):
            if len(postings) <= _SLAB_CAPACITIES[kind]:
                break
        else:
            if self._free_arrays:
                number = self._free_arrays.pop()
                self._arrays[number] = postings
            else:
                number = len(self._arrays)
                self._check_number(number)
                self._arrays.append(postings)
            return _SHARED | _ARRAY_KIND << _KIND_SHIFT | number
        pool, width = self._pools[kind], _SLAB_WIDTHS[kind]
        if self._free_slabs[kind]:
            number = self._free_slabs[kind].pop()
        else:
            number = len(pool) // width
            self._check_number(number)
            pool.extend(_EMPTY_SLABS[kind])
        base = number * width
        pool[base] = len(postings)
        pool[base + 1 : base + 1 + len(postings)] = postings
        return _SHARED | kind << _KIND_SHIFT | number

    @staticmethod
    def _check_number(number: int) -> None:
        if number > _MAX_NUMBER:
            raise ValueError("too many shared spots for 32-bit heads: split the index")


class SpotSigsIndex:
    """Exact multiset-Jaccard search over stored spot-signature multisets (see the module docstring).

    ``tau`` is the default threshold and fixes the length partitions; ``max_length`` is the length from
    which the last partition is open-ended (longer documents are still indexed and found);
    ``min_signatures`` is the fewest spot occurrences a document needs to be indexed or to query with:
    shorter ones have too little body text to judge (the original authors' code skips documents with
    fewer than 4 spots). Spots may be any hashable: unsigned 64-bit ints (hashed spots, as the pipeline
    makes them) are stored in flat arrays, other spots (strings) through a dictionary; a bool or int
    subclass is the int it equals, but a float equal to an int spot is a different spot. Counts are
    positive integers (non-positive counts are ignored, as ``+counter`` does).
    """

    def __init__(self, tau: float = defaults.NEWSDEDUP_SPOTSIGS_TAU, *, max_length: int = 100_000, min_signatures: int = 1) -> None:
        self.tau = self._check_tau(tau)
        if isinstance(min_signatures, bool) or not isinstance(min_signatures, int) or min_signatures < 1:
            raise ValueError(
                f"min_signatures must be an integer >= 1 (e.g. 4 to skip near-empty pages), got {min_signatures!r}"
            )
        self.min_signatures = min_signatures
        self.max_length = max_length
        self._partitions = length_partitions(self.tau, max_length)  # validates max_length
        self._starts = [start for start, _ in self._partitions]
        self._partition_sizes = [0] * len(self._partitions)
        # Documents, by sequence number.
        self._seq_of: dict[Hashable, int] = {}
        self._keys: list[Hashable] = []
        self._doc_spots: list[array | None] = []  # None once removed
        self._doc_repeated = array("I")  # how many of the document's spot ids carry a count
        self._rank = array("I")  # _LENGTH_CAP - length: ascending is the order of holder lists
        # Spot ids and their holders.
        self._holders = _HolderLists(self._rank)
        self._spot_value = array("Q")  # id -> its 64-bit spot (0 for the ids of other spots)
        self._free_ids = array("I")
        self._other_id_of: dict[Hashable, int] = {}
        self._other_spot_of: dict[int, Hashable] = {}
        # Open-addressing table (linear probing) of the ids of 64-bit spots, at most two thirds full.
        self._table_filled = 0  # live ids plus DELETED markers
        self._resize_table(_MIN_TABLE_BITS)
        self._queries = 0
        # The spots of the last query and their ids (-1: unknown), until an add or removal changes ids.
        self._last_lookup: tuple[dict[Hashable, int], list[int]] | None = None
        self._compared = 0  # documents compared in full over all queries (brute force: all of them)

    # ------------------------------------------------------------------ container protocol
    def __len__(self) -> int:
        return len(self._seq_of)

    def __contains__(self, key: object) -> bool:
        return key in self._seq_of

    @property
    def partitions(self) -> list[tuple[int, int | None]]:
        """The length partitions ``(start, end or None)`` this index was built with."""
        return list(self._partitions)

    # ------------------------------------------------------------------ updates
    def add(self, key: Hashable, signatures: Mapping[Hashable, int]) -> bool:
        """Store (or replace) the spot multiset of ``key``; its length ``|d|`` is the total count.

        A replaced key keeps its place in insertion order. Returns False, and stores nothing under
        ``key`` (forgetting any earlier entry), when the document has fewer than ``min_signatures`` spots.
        """
        spots = self._positive_counts(signatures)
        length = sum(spots.values())
        if length > _LENGTH_CAP:
            raise ValueError(f"a document has {length} spots, more than the {_LENGTH_CAP} supported: split it")
        seq = self._seq_of.get(key)
        if seq is not None:
            self._unindex(seq)
            if length < self.min_signatures:
                del self._seq_of[key]
                self._keys[seq] = None
                return False
        elif length < self.min_signatures:
            return False
        else:
            seq = len(self._keys)
            if seq > _MAX_SEQ:
                raise ValueError("insertion counter exhausted: rebuild the index")
            self._seq_of[key] = seq
            self._keys.append(key)
            self._doc_spots.append(None)
            self._doc_repeated.append(0)
            self._rank.append(0)

        self._rank[seq] = _LENGTH_CAP - length
        # Single-Pass queries a document, then adds it: reuse that lookup while no id has changed since.
        looked_up, self._last_lookup = self._last_lookup, None
        if looked_up is not None and looked_up[0] == spots:
            spot_ids = looked_up[1]
            if -1 in spot_ids:
                created = iter(self._spot_ids_creating([spot for spot, i in zip(spots, spot_ids) if i < 0]))
                spot_ids = [next(created) if spot_id < 0 else spot_id for spot_id in spot_ids]
        else:
            spot_ids = self._spot_ids_creating(list(spots))
        self._holders.add_document(seq, spot_ids)
        counts = list(spots.values())
        repeated = [spot_id for spot_id, count in zip(spot_ids, counts) if count > 1]
        if repeated:
            once = [spot_id for spot_id, count in zip(spot_ids, counts) if count == 1]
            spot_ids = once + repeated + [count for count in counts if count > 1]
        # One array built from a list: allocated to size (appending over-allocates).
        self._doc_spots[seq] = array("I", spot_ids)
        self._doc_repeated[seq] = len(repeated)
        self._partition_sizes[self._partition_of(length)] += 1
        return True

    def remove(self, key: Hashable) -> None:
        """Forget ``key``; raises KeyError when it is not stored (use :meth:`discard` to ignore that)."""
        seq = self._seq_of.pop(key, None)
        if seq is None:
            raise KeyError(f"{key!r} is not in the SpotSigs index")
        self._unindex(seq)
        self._keys[seq] = None

    def discard(self, key: Hashable) -> bool:
        """Forget ``key`` if stored; returns whether it was."""
        if key not in self._seq_of:
            return False
        self.remove(key)
        return True

    # ------------------------------------------------------------------ search
    def query(self, signatures: Mapping[Hashable, int], tau: float | None = None) -> list[tuple[Hashable, float]]:
        """Every stored document with multiset Jaccard ``>= tau`` to ``signatures``.

        Sorted by descending similarity, then insertion order. ``tau`` defaults to the index's; any other
        threshold is exact too (partitions only decide where to look). Returns [] for a query with fewer
        than ``min_signatures`` spots.
        """
        tau = self.tau if tau is None else self._check_tau(tau)
        spots = self._positive_counts(signatures)
        length = sum(spots.values())
        if length < self.min_signatures or not self._seq_of:
            return []

        query_counts, unknown_mass = self._query_counts(spots)
        min_len = _min_length(length, tau)
        max_len = min(_max_length(length, length - unknown_mass, tau), _LENGTH_CAP)
        if max_len < min_len:
            return []

        own = self._partition_of(length)
        first, last = self._partition_of(min_len), self._partition_of(max_len)
        # The query's own partition, then longer neighbours, then shorter ones (the paper visits own + next).
        order = [own] + list(range(own + 1, last + 1)) + list(range(own - 1, first - 1, -1))
        order = [k for k in order if first <= k <= last]

        heads, run, rank, keys = self._holders.heads, self._holders.run, self._rank, self._keys
        overlap_with = self._overlap
        checked: set[int] = set()
        found: list[tuple[int, Hashable, float]] = []
        for k in order:
            if not self._partition_sizes[k]:
                continue
            start, end = self._partitions[k]
            lo = max(min_len, start)
            part_hi = _LENGTH_CAP if end is None else end
            hi = min(max_len, part_hi)
            if hi < lo:
                continue
            # The partition's inverted list of a spot is the run of its holders with a length in [lo, hi],
            # i.e. a rank in [_LENGTH_CAP - hi, stop_rank).
            stop_rank = _LENGTH_CAP - lo + 1
            low_rank = _LENGTH_CAP - hi
            ordered: list[tuple[int, int, int]] = []
            delta1 = unknown_mass
            for spot_id, count in query_counts.items():
                held = heads[spot_id]
                if held < _SHARED:
                    frequency = low_rank <= rank[held] < stop_rank
                else:
                    _, first_holder, end_holder = run(held, low_rank, stop_rank)
                    frequency = end_holder - first_holder
                if frequency:
                    ordered.append((frequency, spot_id, count))
                else:
                    delta1 += count  # no document of this partition holds the spot
            ordered.sort()  # ascending document frequency in the partition
            for _, spot_id, count in ordered:
                hi = min(_max_length(length, length - delta1, tau), part_hi)
                if hi < lo:
                    break  # no unseen document of the partition can reach tau any more
                # Longer than hi: skipped (delta2 < 0 rule); shorter than lo: never reached (delta2 >= 0 rule).
                low_rank = _LENGTH_CAP - hi
                held = heads[spot_id]
                if held < _SHARED:
                    candidates: array | tuple[int, ...] = (held,) if low_rank <= rank[held] < stop_rank else ()
                else:
                    postings, first_holder, end_holder = run(held, low_rank, stop_rank)
                    candidates = postings[first_holder:end_holder]
                for seq in candidates:
                    seq &= _SEQ_MASK  # a posting (a bare sequence number is below 2**32 already)
                    if seq in checked:
                        continue
                    checked.add(seq)
                    overlap = overlap_with(seq, query_counts)
                    similarity = overlap / (length + _LENGTH_CAP - rank[seq] - overlap)
                    if similarity >= tau:
                        found.append((seq, keys[seq], similarity))
                delta1 += count
        self._queries += 1
        self._compared += len(checked)
        found.sort(key=lambda hit: (-hit[2], hit[0]))
        return [(key, similarity) for _, key, similarity in found]

    def contained(
        self,
        signatures: Mapping[Hashable, int],
        *,
        min_containment: float,
        min_spots: int = 1,
        min_ratio: float = 0.15,
        whole_below: float | None = None,
    ) -> list[tuple[Hashable, float]]:
        """Every stored document that contains, or is contained in, the query: exactly, without a scan.

        Containment is ``overlap / min(|q|, |d|)`` (multiset overlap over the smaller of the two lengths);
        a document is returned when it is ``>= min_containment``, the smaller length is ``>= min_spots``
        and the length ratio (shorter / longer) is ``>= min_ratio`` (a digest of many stories does not
        absorb each of them); with ``whole_below``, a pair whose length ratio is under it needs the smaller
        text wholly contained (:func:`~newsdedup.dedup.spotsigs.containment_match` decides each pair).
        Sorted by descending containment, then insertion order.

        Prefix filtering (Chaudhuri et al., ICDE 2006) instead of a wide Jaccard query: a document that
        shares ``t`` occurrences with the query shares a spot among the query's first ``|q| - t + 1``
        occurrences in any fixed order. The query's spots are taken rarest first (spots no document holds
        use up the prefix for free), so a longer document, which needs ``t = c|q|``, is looked for in the
        lists of the rarest ``(1 - c)|q|`` occurrences only, and a shorter one of length ``x``
        (``t = c x``) in the lists before position ``|q| - c x + 1``; each list is cut to the lengths still
        admissible by bisection, and every survivor is compared in full, once.
        """
        if not 0.0 < min_containment <= 1.0:
            raise ValueError(f"min_containment must be in (0, 1], got {min_containment!r}")
        if not 0.0 < min_ratio <= 1.0:
            raise ValueError(f"min_ratio must be in (0, 1], got {min_ratio!r}")
        if whole_below is not None and not 0.0 < whole_below <= 1.0:
            raise ValueError(f"whole_below must be in (0, 1] or None, got {whole_below!r}")
        spots = self._positive_counts(signatures)
        length = sum(spots.values())
        min_spots = max(1, min_spots)
        if length < max(min_spots, self.min_signatures) or not self._seq_of:
            return []

        def required(smaller: int) -> int:
            """Fewest shared occurrences giving ``overlap / smaller >= min_containment`` in floating point."""
            need = max(0, int(min_containment * smaller))
            while need > 0 and (need - 1) / smaller >= min_containment:
                need -= 1
            while need / smaller < min_containment:
                need += 1
            return need

        query_counts, unknown_mass = self._query_counts(spots)
        lo = max(min_spots, self.min_signatures, _min_length(length, min_ratio))
        longest = min(int(length / min_ratio), _LENGTH_CAP)
        while longest > length and length / longest < min_ratio:
            longest -= 1
        need_longer = required(length)  # a longer document must hold this much of the query
        heads, span, run, rank, keys = self._holders.heads, self._holders.span, self._holders.run, self._rank, self._keys
        ordered = []
        for spot_id, count in query_counts.items():
            held = heads[spot_id]
            if held < _SHARED:
                ordered.append((1, spot_id, count))
            else:
                _, start, stop = span(held)
                ordered.append((stop - start, spot_id, count))
        ordered.sort()  # rarest first

        checked: set[int] = set()
        found: list[tuple[int, Hashable, float]] = []
        prefix = unknown_mass  # query occurrences before the current spot in the order
        for _, spot_id, count in ordered:
            budget = length - prefix  # a document needing at most this many shared occurrences is admissible
            if budget >= need_longer:
                hi = longest
            else:  # only shorter documents, of a length x with required(x) <= budget
                hi = min(length - 1, int(budget / min_containment) + 1)
                while hi >= lo and required(hi) > budget:
                    hi -= 1
            if hi < lo:
                break  # the prefix only grows: nothing later is admissible either
            low_rank, stop_rank = _LENGTH_CAP - hi, _LENGTH_CAP - lo + 1
            held = heads[spot_id]
            if held < _SHARED:
                candidates: array | tuple[int, ...] = (held,) if low_rank <= rank[held] < stop_rank else ()
            else:
                postings, first, end = run(held, low_rank, stop_rank)
                candidates = postings[first:end]
            for seq in candidates:
                seq &= _SEQ_MASK
                if seq in checked:
                    continue
                checked.add(seq)
                stored = _LENGTH_CAP - rank[seq]
                if min(length, stored) < min_spots:  # containment_match says no: spare the overlap count
                    continue
                containment = containment_match(self._overlap(seq, query_counts), length, stored,
                                                min_containment=min_containment, min_spots=min_spots,
                                                min_ratio=min_ratio, whole_below=whole_below)
                if containment is not None:
                    found.append((seq, keys[seq], containment))
            prefix += count
        self._queries += 1
        self._compared += len(checked)
        found.sort(key=lambda hit: (-hit[2], hit[0]))
        return [(key, containment) for _, key, containment in found]

    def signatures(self, key: Hashable) -> Counter | None:
        """The spot multiset stored under ``key`` (a new Counter), or None when ``key`` is not stored."""
        seq = self._seq_of.get(key)
        if seq is None:
            return None
        ids = self._doc_spots[seq]
        repeated = self._doc_repeated[seq]
        distinct = len(ids) - repeated  # type: ignore[arg-type]
        once = distinct - repeated
        spots: Counter = Counter()
        for position in range(distinct):
            spot_id = ids[position]  # type: ignore[index]
            spot = self._other_spot_of[spot_id] if spot_id in self._other_spot_of else self._spot_value[spot_id]
            spots[spot] = 1 if position < once else ids[position + repeated]  # type: ignore[index]
        return spots

    def jaccard(self, key: Hashable, signatures: Mapping[Hashable, int]) -> float | None:
        """Multiset Jaccard of ``signatures`` with the document stored under ``key``; None when not stored.

        Equals ``multiset_jaccard(signatures, index.signatures(key))`` float for float, without rebuilding
        the stored multiset: a caller that scores a known key (the hybrid detector scoring a Simhash
        candidate) needs no copy of its own of the stored spots.
        """
        spots = self._positive_counts(signatures)
        seq = self._seq_of.get(key)
        if seq is None:
            return None
        query_counts, _ = self._query_counts(spots)
        overlap = self._overlap(seq, query_counts)
        return overlap / (sum(spots.values()) + _LENGTH_CAP - self._rank[seq] - overlap)

    # ------------------------------------------------------------------ reporting
    def stats(self) -> dict[str, int]:
        """Sizes for monitoring: documents, distinct spots, postings, an estimate of the bytes held, and
        how many queries ran and how many stored documents they compared in full (brute force compares
        every stored document on every query).

        The byte estimate counts the index's own structures (arrays, lists, dictionaries, boxed sequence
        numbers); not the keys, which callers share, nor spot objects other than 64-bit ints.
        """
        size = (
            self._holders.nbytes()
            + sum(sys.getsizeof(spots) for spots in self._doc_spots if spots is not None)
            + sum(
                map(
                    sys.getsizeof,
                    (
                        self._seq_of, self._keys, self._doc_spots, self._doc_repeated, self._rank,
                        self._spot_value, self._free_ids, self._other_id_of, self._other_spot_of, self._table,
                    ),
                )
            )
            + 32 * len(self._seq_of)  # the boxed sequence numbers in _seq_of
        )
        return {
            "documents": len(self._seq_of),
            "distinct_spots": len(self._holders.heads) - len(self._free_ids),
            "postings": self._holders.postings,
            "approx_bytes": size,
            "queries": self._queries,
            "compared": self._compared,
        }

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _check_tau(tau: float) -> float:
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau <= 1:
            raise ValueError(
                f"tau must be a Jaccard threshold with 0 < tau <= 1 (the paper uses 0.35-0.6), got {tau!r}"
            )
        return float(tau)

    @staticmethod
    def _positive_counts(signatures: Mapping[Hashable, int]) -> dict[Hashable, int]:
        if not isinstance(signatures, Mapping):
            raise ValueError(
                "signatures must be a mapping spot -> count (a Counter from spot_signatures), "
                f"got {type(signatures).__name__}"
            )
        counts = signatures.values()
        # A crawl's spots are 64-bit hashes counted in plain ints (each page's checked three times: query, containment,
        # add): checked by their types at C speed, ~30 us of a 300-spot page's loop below. Other keys take the loop.
        if set(map(type, counts)) <= _PLAIN_INT and set(map(type, signatures)) <= _PLAIN_INT:
            if not counts or min(counts) > 0:
                return dict(signatures)
            return {spot: count for spot, count in signatures.items() if count > 0}
        positive: dict[Hashable, int] = {}
        for spot, count in signatures.items():
            if isinstance(count, bool) or not isinstance(count, int):
                raise ValueError(f"spot counts must be integers, got {count!r} for {spot!r}")
            if count > 0:
                if type(spot) is not int and isinstance(spot, int):
                    spot = int(spot)  # a bool or other int subclass is the int it equals, as in a dict
                positive[spot] = count
        return positive

    def _query_counts(self, spots: dict[Hashable, int]) -> tuple[dict[int, int], int]:
        """The query as spot id -> count, and the mass of its spots that no stored document has."""
        query_counts: dict[int, int] = {}
        unknown_mass = 0
        spot_ids = self._spot_ids(spots)
        self._last_lookup = (spots, spot_ids)
        for spot_id, count in zip(spot_ids, spots.values()):
            if spot_id < 0:
                unknown_mass += count
            else:
                query_counts[spot_id] = count
        return query_counts, unknown_mass

    def _overlap(self, seq: int, query_counts: dict[int, int]) -> int:
        """Sum over spots of min(query count, stored count) for stored document ``seq``."""
        ids = self._doc_spots[seq]
        repeated = self._doc_repeated[seq]
        if not repeated:  # every stored count is 1: min(q, 1) is 1 for each spot the query has
            return sum(map(query_counts.__contains__, ids))  # type: ignore[arg-type]
        distinct = len(ids) - repeated  # type: ignore[arg-type]
        once = distinct - repeated
        return sum(map(query_counts.__contains__, ids[:once])) + sum(  # type: ignore[index]
            map(min, map(query_counts.get, ids[once:distinct], _ZEROS), ids[distinct:])  # type: ignore[index]
        )

    def _partition_of(self, length: int) -> int:
        return bisect_right(self._starts, length) - 1

    # -- spot ids: an open-addressing table for 64-bit spots, a dictionary for the others
    def _spot_ids(self, spots: Iterable[Hashable]) -> list[int]:
        """The ids of known spots, -1 for the others (one loop: a call per spot would double the cost)."""
        table, values, mask, shift = self._table, self._spot_value, self._table_mask, self._table_shift
        other_id = self._other_id_of.get
        ids: list[int] = []
        for spot in spots:
            if type(spot) is not int or not 0 <= spot < _U64_LIMIT:  # type: ignore[operator]
                ids.append(other_id(spot, -1))
                continue
            slot = (spot * _FIBONACCI >> shift) & mask
            while True:
                spot_id = table[slot]
                if spot_id < _DELETED:
                    if values[spot_id] == spot:
                        break
                elif spot_id == _EMPTY:
                    spot_id = -1
                    break
                slot = (slot + 1) & mask
            ids.append(spot_id)
        return ids

    def _spot_ids_creating(self, spots: list[Hashable]) -> list[int]:
        """The ids of distinct spots, giving new spots an id (their head stays free: the caller adds holders).

        Lookup and insertion share one probe: a missing 64-bit spot takes the empty slot that ended it.
        """
        if 3 * (self._table_filled + len(spots)) > 2 * len(self._table):
            # Room for three times the live ids: the table stays a third to two thirds full.
            live = len(self._holders.heads) - len(self._free_ids) - len(self._other_id_of) + len(spots)
            self._resize_table(max(_MIN_TABLE_BITS, (3 * live - 1).bit_length()))
        table, values, mask, shift = self._table, self._spot_value, self._table_mask, self._table_shift
        heads, free_ids, other_id_of = self._holders.heads, self._free_ids, self._other_id_of
        # Room for every spot to be new, trimmed below: one C call instead of two appends per new spot.
        next_id = len(values)
        if next_id + len(spots) > _MAX_SPOT_ID:
            raise ValueError("spot id space exhausted: rebuild the index")
        heads.extend(repeat(_FREE_HEAD, len(spots)))
        values.extend(repeat(0, len(spots)))
        filled = self._table_filled
        ids: list[int] = []
        for spot in spots:
            if type(spot) is not int or not 0 <= spot < _U64_LIMIT:  # type: ignore[operator]
                spot_id = other_id_of.get(spot, -1)
                if spot_id < 0:
                    if free_ids:
                        spot_id = free_ids.pop()
                    else:
                        spot_id, next_id = next_id, next_id + 1
                    other_id_of[spot] = spot_id
                    self._other_spot_of[spot_id] = spot
                ids.append(spot_id)
                continue
            slot = (spot * _FIBONACCI >> shift) & mask
            while True:
                spot_id = table[slot]
                if spot_id < _DELETED:
                    if values[spot_id] == spot:
                        break
                elif spot_id == _EMPTY:
                    if free_ids:
                        spot_id = free_ids.pop()
                    else:
                        spot_id, next_id = next_id, next_id + 1
                    values[spot_id] = spot
                    table[slot] = spot_id
                    filled += 1
                    break
                slot = (slot + 1) & mask
            ids.append(spot_id)
        del heads[next_id:]
        del values[next_id:]
        self._table_filled = filled
        return ids

    def _resize_table(self, bits: int) -> None:
        """Rebuild the table with 2**bits slots from the live ids of 64-bit spots (dropping DELETED marks).

        Ids whose head is free are skipped: unused, or being added (their caller places them).
        """
        self._table = table = array("I", [_EMPTY]) * (1 << bits)
        self._table_mask = mask = (1 << bits) - 1
        self._table_shift = shift = 64 - bits
        other, values, filled = self._other_spot_of, self._spot_value, 0
        for spot_id, held in enumerate(self._holders.heads):
            if held != _FREE_HEAD and spot_id not in other:
                slot = (values[spot_id] * _FIBONACCI >> shift) & mask
                while table[slot] != _EMPTY:
                    slot = (slot + 1) & mask
                table[slot] = spot_id
                filled += 1
        self._table_filled = filled

    def _free_spot_id(self, spot_id: int) -> None:
        """Forget a spot no stored document holds any more (its head is already free)."""
        self._free_ids.append(spot_id)
        if spot_id in self._other_spot_of:
            del self._other_id_of[self._other_spot_of.pop(spot_id)]
            return
        # A DELETED mark, not EMPTY: the probe sequences of other spots run through this slot.
        table, mask, value = self._table, self._table_mask, self._spot_value[spot_id]
        slot = (value * _FIBONACCI >> self._table_shift) & mask
        while table[slot] != spot_id:
            slot = (slot + 1) & mask
        table[slot] = _DELETED

    def _unindex(self, seq: int) -> None:
        """Drop a document's postings and spots (its key mapping is the caller's business)."""
        self._last_lookup = None  # ids may be freed
        ids = self._doc_spots[seq]
        distinct = len(ids) - self._doc_repeated[seq]  # type: ignore[arg-type]
        remove_holder = self._holders.remove
        for spot_id in ids[:distinct]:  # type: ignore[index]
            if remove_holder(spot_id, seq):
                self._free_spot_id(spot_id)
        self._doc_spots[seq] = None
        self._doc_repeated[seq] = 0
        self._partition_sizes[self._partition_of(_LENGTH_CAP - self._rank[seq])] -= 1
