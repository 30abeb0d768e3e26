"""In-memory SpotSigs index: every stored document within a multiset-Jaccard threshold, exactly.

This is the search side of SpotSigs (Theobald et al., SIGIR 2008, Algorithm 1), turned from an all-pairs
batch into an online index that a crawl adds to and queries one article at a time:

* Documents are grouped into the paper's length partitions (:func:`length_partitions`). A stored document
  whose length ratio to the query is under ``tau`` can never reach ``tau``, so only the partitions that
  overlap ``[tau * |q|, |q| / tau]`` are searched: the query's own, the next one when
  ``p_{k+1} - |q| <= (1 - tau) p_{k+1}`` (the paper's rule), and, because a stream query also has to meet
  older, shorter documents, the previous one when its end is at least ``tau * |q|``.
* Each partition has an inverted list per spot, sorted by descending document length. All partitions of a
  spot share one array sorted that way, so a partition's list is a contiguous slice found by bisection
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

>>> from collections import Counter
>>> index = SpotSigsIndex(tau=0.5)
>>> index.add("a", Counter({"的:新闻": 2, "在:北京": 1, "了:发布": 1}))
True
>>> index.add("b", Counter({"的:新闻": 1, "是:今天": 1}))
True
>>> index.query(Counter({"的:新闻": 2, "在:北京": 1}))
[('a', 0.75)]
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Hashable, Mapping

from newsdedup.dedup.spotsigs import length_partitions

__all__ = ["SpotSigsIndex"]

# A posting is one unsigned 64-bit integer: (LENGTH_CAP - length) in the high bits and the document's
# insertion number in the low bits, so ascending order is descending length, then insertion order.
_SEQ_BITS = 40
_SEQ_MASK = (1 << _SEQ_BITS) - 1
_LENGTH_CAP = (1 << (64 - _SEQ_BITS)) - 1  # 16,777,215 spots per document


def _posting_key(length: int) -> int:
    """The smallest posting of a document of ``length`` (postings of shorter documents sort after it)."""
    return (_LENGTH_CAP - length) << _SEQ_BITS


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


class _Doc:
    """One stored document: its key, multiset size and spots as parallel arrays of spot ids and counts."""

    __slots__ = ("key", "length", "ids", "counts")

    def __init__(self, key: Hashable, length: int, ids: array, counts: array) -> None:
        self.key = key
        self.length = length
        self.ids = ids
        self.counts = counts


class SpotSigsIndex:
    """Exact multiset-Jaccard search over stored spot-signature multisets (see the module docstring).

    ``tau`` is the default threshold and fixes the length partitions; ``max_length`` is the length from
    which the last partition is open-ended (longer documents are still indexed and found);
    ``min_signatures`` is the fewest spot occurrences a document needs to be indexed or to query with:
    shorter ones have too little body text to judge (the original authors' code skips documents with
    fewer than 4 spots). Spots may be any hashable (strings, or 64-bit hashes to save memory); counts are
    positive integers (non-positive counts are ignored, as ``+counter`` does).
    """

    def __init__(self, tau: float = 0.5, *, max_length: int = 100_000, min_signatures: int = 1) -> None:
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
        self._seq_of: dict[Hashable, int] = {}  # key -> insertion number (kept when a key is replaced)
        self._docs: dict[int, _Doc] = {}
        self._next_seq = 0
        # Spot vocabulary: dense integer ids, so documents store 4-byte ids instead of spot objects.
        self._id_of: dict[Hashable, int] = {}
        self._spot_of: list[Hashable] = []
        # spot id -> its postings sorted ascending (see _posting_key); a spot held by one document (most
        # of them: about two thirds on news) keeps its single posting as a bare int instead of an array.
        self._postings: list[array | int | None] = []
        self._free_ids: list[int] = []
        self._queries = 0
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
                return False
        elif length < self.min_signatures:
            return False
        else:
            seq = self._next_seq
            if seq > _SEQ_MASK:
                raise ValueError("insertion counter exhausted: rebuild the index")
            self._next_seq += 1
            self._seq_of[key] = seq

        posting = _posting_key(length) | seq
        ids: list[int] = []
        id_of, postings = self._id_of, self._postings
        for spot, count in spots.items():
            spot_id = id_of.get(spot)
            if spot_id is None:
                spot_id = self._new_spot_id(spot)
                postings[spot_id] = posting
            else:
                held = postings[spot_id]
                if type(held) is int:
                    postings[spot_id] = array("Q", (held, posting) if held < posting else (posting, held))
                else:
                    insort(held, posting)
            ids.append(spot_id)
        # Arrays built from lists are allocated to size (appending over-allocates).
        self._docs[seq] = _Doc(key, length, array("I", ids), array("I", spots.values()))
        self._partition_sizes[self._partition_of(length)] += 1
        return True

    def remove(self, key: Hashable) -> None:
        """Forget ``key``; raises KeyError when it is not stored (use :meth:`discard` to ignore that)."""
        seq = self._seq_of.pop(key, None)
        if seq is None:
            raise KeyError(f"{key!r} is not in the SpotSigs index")
        self._unindex(seq)

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
        if length < self.min_signatures or not self._docs:
            return []

        query_counts: dict[int, int] = {}
        unknown_mass = 0  # spots no stored document has: no candidate shares them
        id_of = self._id_of
        for spot, count in spots.items():
            spot_id = id_of.get(spot)
            if spot_id is None:
                unknown_mass += count
            else:
                query_counts[spot_id] = count
        min_len = _min_length(length, tau)
        max_len = min(_max_length(length, length - unknown_mass, tau), _LENGTH_CAP)
        if max_len < min_len:
            return []

        own = self._partition_of(length)
        first, last = self._partition_of(min_len), self._partition_of(max_len)
        # The query's own partition, then longer neighbours, then shorter ones (the paper visits own + next).
        order = [own] + list(range(own + 1, last + 1)) + list(range(own - 1, first - 1, -1))
        order = [k for k in order if first <= k <= last]

        postings, docs = self._postings, self._docs
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
            stop_key = _posting_key(lo - 1)  # first posting of a document shorter than lo
            # The partition's inverted list of a spot is the slice of its postings within [lo, hi].
            ordered: list[tuple[int, int, int]] = []
            delta1 = unknown_mass
            for spot_id, count in query_counts.items():
                plist = postings[spot_id]
                if type(plist) is int:
                    plist = (plist,)
                frequency = bisect_left(plist, stop_key) - bisect_left(plist, _posting_key(hi))
                if frequency:
                    ordered.append((frequency, spot_id, count))
                else:
                    delta1 += count  # no document of this partition holds the spot
            ordered.sort()  # ascending document frequency in the partition
            for _, spot_id, count in ordered:
                hi = min(_max_length(length, length - delta1, tau), part_hi)
                if hi < lo:
                    break  # no unseen document of the partition can reach tau any more
                plist = postings[spot_id]
                if type(plist) is int:
                    plist = (plist,)
                # Longer than hi: skipped (delta2 < 0 rule); shorter than lo: never reached (delta2 >= 0 rule).
                for posting in plist[bisect_left(plist, _posting_key(hi)) : bisect_left(plist, stop_key)]:
                    seq = posting & _SEQ_MASK
                    if seq in checked:
                        continue
                    checked.add(seq)
                    doc = docs[seq]
                    overlap = 0
                    for doc_spot, doc_count in zip(doc.ids, doc.counts):
                        query_count = query_counts.get(doc_spot)
                        if query_count:
                            overlap += query_count if query_count < doc_count else doc_count
                    similarity = overlap / (length + doc.length - overlap)
                    if similarity >= tau:
                        found.append((seq, doc.key, similarity))
                delta1 += count
        self._queries += 1
        self._compared += len(checked)
        found.sort(key=lambda hit: (-hit[2], hit[0]))
        return [(key, similarity) for _, key, similarity in found]

    # ------------------------------------------------------------------ reporting
    def stats(self) -> dict[str, int]:
        """Sizes for monitoring: documents, distinct spots, postings, an estimate of the bytes held, and
        how many queries ran and how many stored documents they compared in full (brute force compares
        every stored document on every query).

        The byte estimate counts the index's own structures (arrays, dictionaries, document records,
        vocabulary slots), not the spot objects themselves, which callers share (hashed spots are ints).
        """
        live = [p for p in self._postings if p is not None]
        postings = sum(1 if type(p) is int else len(p) for p in live)
        size = (
            sum(sys.getsizeof(p) for p in live)
            + sys.getsizeof(self._postings)
            + sys.getsizeof(self._spot_of)
            + sys.getsizeof(self._id_of)
            + sys.getsizeof(self._docs)
            + sys.getsizeof(self._seq_of)
            + sum(sys.getsizeof(d) + sys.getsizeof(d.ids) + sys.getsizeof(d.counts) for d in self._docs.values())
        )
        return {
            "documents": len(self._docs),
            "distinct_spots": len(live),
            "postings": postings,
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
        positive: dict[Hashable, int] = {}
        for spot, count in signatures.items():
            if isinstance(count, bool) or not isinstance(count, int):
                raise ValueError(f"spot counts must be integers, got {count!r} for {spot!r}")
            if count > 0:
                positive[spot] = count
        return positive

    def _partition_of(self, length: int) -> int:
        return bisect_right(self._starts, length) - 1

    def _new_spot_id(self, spot: Hashable) -> int:
        if self._free_ids:
            spot_id = self._free_ids.pop()
            self._spot_of[spot_id] = spot
        else:
            spot_id = len(self._spot_of)
            self._spot_of.append(spot)
            self._postings.append(None)
        self._id_of[spot] = spot_id
        return spot_id

    def _unindex(self, seq: int) -> None:
        """Drop a document's postings and record (its key mapping is the caller's business)."""
        doc = self._docs.pop(seq)
        posting = _posting_key(doc.length) | seq
        for spot_id in doc.ids:
            plist = self._postings[spot_id]
            if type(plist) is not int:
                del plist[bisect_left(plist, posting)]
                if len(plist) == 1:
                    self._postings[spot_id] = plist[0]
            else:  # last holder of the spot: free its id
                self._postings[spot_id] = None
                del self._id_of[self._spot_of[spot_id]]
                self._spot_of[spot_id] = None
                self._free_ids.append(spot_id)
        self._partition_sizes[self._partition_of(doc.length)] -= 1
