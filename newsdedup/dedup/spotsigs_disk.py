"""A persistent SpotSigs index: exact search, memory-mapped segments, bounded memory, opens in seconds.

:class:`~newsdedup.dedup.spotsigs_index.SpotSigsIndex` keeps every posting in RAM (~2 KB a document) and is
rebuilt from the store at every crawl start (about 1 ms a centre). This index answers the same two questions
(:meth:`query`: every stored document with multiset Jaccard ``>= tau``; :meth:`contained`: every document
containing, or contained in, the query) with the same results, float for float, from files beside the store.

Why prefix filtering, not LSH
    MinHash-LSH banding finds pairs with a probability; tuned for Jaccard 0.5 at recall 0.99 it needs ~20-30
    bands, and it cannot serve the containment fallback at all: a third-length version of an article
    (containment 0.8 at a length ratio down to 0.15) has a Jaccard near 0.12, which no banding finds without
    hundreds of bands. Prefix filtering (Chaudhuri et al. ICDE 2006; Bayardo et al. WWW 2007 "AllPairs")
    is *lossless*: order tokens by a global order, rarest first; two sets sharing at least ``a`` tokens
    share a token among the first ``|x| - a + 1`` of each. So recall is 1 by construction, and the
    lists probed are those of rare tokens, which are short.

Tokens
    A multiset becomes a set of tokens: occurrence ``i`` of spot ``s`` is ``s`` for ``i = 1`` and
    ``mix(s, i)`` (a 64-bit bijective mix) after, so the multiset overlap sum(min counts) is the token
    overlap and prefix filtering applies unchanged. Tokens only find candidates; every candidate is verified
    against its exact spot multiset (64-bit spot hashes and counts on disk), with the Jaccard and containment
    formulas of :mod:`newsdedup.dedup.spotsigs` evaluated in the same float arithmetic.

Thresholds (``a`` is a lower bound on the overlap, taken one below the exact bound for float safety)
    * Jaccard ``>= tau``: the overlap is at least ``tau * max(|q|, |d|)``; the query probes its first
      ``|q| - a(|q|) + 1`` tokens against every document's first ``|d| - a(|d|) + 1`` tokens (the *prefix
      lists*).
    * containment ``>= c`` of a shorter document ``d``: the overlap is at least ``c |d|``; the query probes
      its tokens (all but those a shortest admissible ``d`` cannot need) against the prefix lists, keeping a
      posting only when its position in ``d`` is below ``|d| - a_c(|d|) + 1``.
    * containment of the query in a longer ``d``: the overlap is at least ``c |q|``; the query's first
      ``|q| - a_c(|q|) + 1`` tokens are probed against *all* tokens of the documents (the *full lists*),
      since ``d`` may hold only a sixth of its text in common.

Layout (a directory, e.g. ``articles.sqlite.near/``)
    * ``seg-N/``: an immutable segment, numpy ``.npy`` files opened memory-mapped: ``keys`` (int64, the
      store's row ids, ascending), ``spot_offsets`` + ``spots`` (uint64, sorted per document) + ``counts``
      (the exact multisets), ``tokens`` (sorted distinct tokens) with ``full_offsets``/``full_docs`` and
      ``prefix_offsets``/``prefix_docs``/``prefix_pos``; ``token_directory`` (where each bucket of tokens by
      their top bits starts: a lookup reads one bucket, not a binary search of the whole table; added on open
      to a segment written without it). Within a segment the global order is
      (document frequency in the segment, token), so each segment is self-contained and a query orders its
      own tokens by the segment's frequencies. Beside them, small mutable arrays kept in RAM:
      ``lengths`` (uint32), ``times`` (uint32 seconds: the story's last activity, for the retention window)
      and ``deleted`` (bool) -- 9 bytes a document; ``times`` and ``deleted`` are written under a new name at
      each checkpoint that changed them (``times-N.npy``), so the manifest written after them makes them current.
    * ``log-N``: the append-only log of what happened since the last checkpoint (add, touch, discard), one
      CRC-checked record each, in the store's row-id order. New documents also live in an in-memory
      :class:`SpotSigsIndex` (the *delta*, at most ``flush_docs`` of them) until a checkpoint writes them
      as a segment.
    * ``MANIFEST.json``: the segments (each with the checksum of every file of it), the current log and the
      high-water mark (the last store row id included), replaced atomically (write, fsync, rename) at each
      checkpoint, with the checksum of its own content. Opening verifies every file before it is used: one
      missing, cut or written over raises :class:`~newsdedup.dedup.durable.StateDamaged` naming it.

Consistency with the store (the store is the truth)
    Each record carries the row id it came from. Opening with ``store_mark`` (the store's last committed
    row id) drops log records above it and deletes segment documents above it (a state ahead of the store
    after ``kill -9`` is rolled back); a torn last record is cut off. The caller then feeds the store rows
    above :attr:`high_water_mark` (a state behind the store catches up). Call :meth:`checkpoint` only after
    the store has committed every row up to :attr:`high_water_mark`: the log can always be rolled back,
    a segment's time array is only ever raised.

Retention
    :meth:`expire` sets the window start: documents whose time is older are invisible at once; a checkpoint
    rewrites a segment whose visible share fell under half (tombstones and compaction, no full rebuild).
    :meth:`touch` raises a document's time when its story gets a new copy, as the store's
    ``clusters.last_fetched_at`` does.

Segments merge like an LSM tree: the newest merge while each older one is at most ``_MERGE_RATIO`` times the newer
ones together, and the partial segments merge into a full one as soon as they hold ``max_segment_docs`` together,
so a document is rewritten a few times and a query visits few segments.
A segment is written by an external sort in bounded memory: a chunk of documents at a time, the sorted runs spilled
to temporary files and merged a bucket of tokens at a time, so writing one of a million stories holds 12 bytes a
distinct token and a few hundred MB, not every token's sort keys. With ``background_merges`` a merge is
built in a thread while the index answers from the segments it merges; a later checkpoint swaps it in, carrying
over what changed in them meanwhile (touches, discards), so a writer never waits a minute for a large merge.

>>> import tempfile
>>> from collections import Counter
>>> with tempfile.TemporaryDirectory() as folder:
...     index = PersistentSpotSigsIndex(folder, tau=0.5, min_signatures=1)
...     index.add(1, Counter({11: 2, 12: 1, 13: 1}), time=100)
...     index.add(2, Counter({11: 1, 14: 1}), time=100)
...     index.checkpoint()
...     index.close()
...     reopened = PersistentSpotSigsIndex(folder, tau=0.5, min_signatures=1, store_mark=2)
...     reopened.query(Counter({11: 2, 12: 1})), reopened.high_water_mark
True
True
([(1, 0.75)], 2)
"""

from __future__ import annotations

import mmap
import os
import shutil
import struct
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from newsdedup import defaults
from newsdedup.dedup.durable import (StateDamaged, file_digest, fsync_folder, read_manifest, verify_file,
                                     write_durably, write_manifest)
from newsdedup.dedup.spotsigs import containment_match
from newsdedup.dedup.spotsigs_index import SpotSigsIndex

__all__ = ["PersistentSpotSigsIndex", "spot_tokens"]

_FORMAT = 2  # 2: every file's checksum in the manifest (verified at open), the segments' times and deleted versioned
_MANIFEST = "MANIFEST.json"
_U64 = np.uint64
_MIX_1 = _U64(0x9E3779B97F4A7C15)
_MIX_2 = _U64(0xBF58476D1CE4E5B9)
_MIX_3 = _U64(0x94D049BB133111EB)
_MAX_U32 = (1 << 32) - 1
_MAX_KEY = (1 << 63) - 1
#: Prefixes hold this many tokens more than the bare prefix-filtering bound, so a pair that can qualify shares
#: at least this many tokens in them (the l-prefix scheme of Wang, Li and Feng, SIGMOD 2012): a document met
#: through one common token only, the bulk of what the lists return, is dropped without reading its spots.
PREFIX_EXTENSION = 3
_POSITION_CAP = 65535
_MAX_SEGMENT_DOCS = (1 << 24) - 1  # document numbers and query positions are packed into 24 bits each
#: How much larger an older segment may be than the newer ones together and still merge with them: 8 keeps at most
#: two partial segments, the newest flush included (fewer segments for a query to visit), for about eight rewrites
#: of each story, ~0.8 ms of a background thread's CPU a story (2 would allow five, for four rewrites).
_MERGE_RATIO = 8
_MAX_QUERY_LENGTH = (1 << 24) - 1  # prefix positions are uint16; a larger one is stored as the cap (a spare candidate at worst)

# Log records: kind, row id, key, time, number of spots; then spots (uint64) and counts (uint32); then CRC32.
_HEADER = struct.Struct("<BqqII")
_CRC = struct.Struct("<I")
_ADD, _TOUCH, _DISCARD = 1, 2, 3

_SEGMENT_ARRAYS = ("keys", "spot_offsets", "spots", "counts", "tokens", "full_offsets", "full_docs",
                   "prefix_offsets", "prefix_docs", "prefix_pos")
_MUTABLE_ARRAYS = ("lengths", "times", "deleted")


def _mix(spots: np.ndarray, occurrence: np.ndarray) -> np.ndarray:
    """The token of occurrence ``i >= 2`` of a spot (splitmix64's finaliser over ``spot ^ i * phi``)."""
    with np.errstate(over="ignore"):
        x = spots ^ (occurrence.astype(_U64) * _MIX_1)
        x = (x ^ (x >> _U64(30))) * _MIX_2
        x = (x ^ (x >> _U64(27))) * _MIX_3
        return x ^ (x >> _U64(31))


def spot_tokens(spots: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The set of tokens of a multiset: occurrence 1 of a spot is the spot, occurrence i its ``_mix``.

    >>> spot_tokens(np.array([5, 9], dtype=np.uint64), np.array([1, 2], dtype=np.uint32))[:2].tolist()
    [5, 9]
    """
    repeated = np.repeat(spots, counts)
    if len(repeated) == len(spots):
        return repeated
    first = np.repeat(np.cumsum(counts, dtype=np.int64) - counts, counts)
    occurrence = np.arange(len(repeated), dtype=np.int64) - first
    later = occurrence > 0
    repeated[later] = _mix(repeated[later], occurrence[later] + 1)
    return repeated


def _overlap_bound(threshold: float, lengths):
    """A lower bound on the overlap any pair reaching ``threshold`` against this length needs (>= 1).

    Exactly it is ``ceil(threshold * length)``; one less keeps float rounding from ever losing a pair.
    """
    return np.maximum(1, np.ceil(threshold * np.asarray(lengths, dtype=np.float64)).astype(np.int64) - 1)


def _pair_overlap_bound(tau: float, length: int, lengths: np.ndarray) -> np.ndarray:
    """A lower bound on the overlap of a pair with Jaccard ``>= tau``: ``tau (|q| + |d|) / (1 + tau)``, less one."""
    return np.maximum(1, np.ceil(tau * (length + lengths) / (1.0 + tau)).astype(np.int64) - 1)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Indices ``starts[i] .. starts[i] + lengths[i] - 1`` of every range, concatenated."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(starts.astype(np.int64) - (np.cumsum(lengths, dtype=np.int64) - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift


#: A segment's token directory: the tokens (uniform 64-bit hashes) fall into ``2**bits`` buckets by their top bits,
#: about this many a bucket, so finding a query token reads the directory and one or two cache lines of ``tokens``
#: instead of a binary search's ~25 random places in a table of 20 million (docs/performance.md).
_DIRECTORY_TOKENS_A_BUCKET = 16
_DIRECTORY = "token_directory.npy"


def _token_directory(tokens: np.ndarray) -> np.ndarray:
    """Where each bucket of ``tokens`` (sorted) starts, plus their length: ``2**bits + 1`` int64 offsets."""
    bits = max(1, int(np.ceil(np.log2(max(2.0, len(tokens) / _DIRECTORY_TOKENS_A_BUCKET)))))
    starts = np.arange(1 << bits, dtype=np.uint64) << _U64(64 - bits)
    return np.append(np.searchsorted(tokens, starts), len(tokens)).astype(np.int64)


def _locate(tokens: np.ndarray, directory: np.ndarray, steps: int, needles: np.ndarray) -> np.ndarray:
    """``np.searchsorted(tokens, needles)``: a binary search inside each needle's directory bucket, all needles at
    once (``steps`` halvings cover the largest bucket).

    >>> tokens = np.array([3, 9, 1 << 62, 1 << 63, (1 << 63) + 5], dtype=np.uint64)
    >>> needles = np.array([0, 9, 10, 1 << 63, (1 << 64) - 1], dtype=np.uint64)
    >>> directory = _token_directory(tokens)
    >>> found = _locate(tokens, directory, _directory_steps(directory), needles)
    >>> found.tolist() == np.searchsorted(tokens, needles).tolist()
    True
    """
    bits = int(len(directory) - 1).bit_length() - 1
    bucket = (needles >> _U64(64 - bits)).astype(np.int64)
    low, high = directory[bucket], directory[bucket + 1]
    last = len(tokens) - 1
    for _ in range(steps):
        middle, searching = (low + high) >> 1, low < high
        below = searching & (tokens[np.minimum(middle, last)] < needles)
        high = np.where(searching & ~below, middle, high)
        low = np.where(below, middle + 1, low)
    return low


def _directory_steps(directory: np.ndarray) -> int:
    """Halvings that narrow the largest bucket to one place."""
    return int(np.diff(directory).max(initial=0)).bit_length()


@dataclass
class _Docs:
    """Documents as flat arrays: what a segment is built from."""

    keys: np.ndarray  # int64, ascending
    times: np.ndarray  # uint32
    spot_offsets: np.ndarray  # int64, len(keys) + 1
    spots: np.ndarray  # uint64, sorted within each document
    counts: np.ndarray  # uint32

    def chunked(self) -> _Chunks:
        return self.selected(np.ones(len(self.keys), dtype=bool))

    def selected(self, kept: np.ndarray) -> _Chunks:
        """The documents ``kept`` selects, to build a segment from, a chunk at a time."""
        return _Chunks(int(kept.sum()), int(np.diff(self.spot_offsets)[kept].sum()), _kept_chunks(self, kept))


@dataclass
class _Chunks:
    """Documents to build a segment from, a chunk at a time (keys ascending across chunks), and how many."""

    documents: int
    spots: int
    chunks: Iterator[_Docs]


#: A segment is built a chunk of documents at a time, about this many spots a chunk, and its token space sorted a
#: bucket at a time, about this many tokens a bucket: what a build holds in RAM besides 12 bytes a distinct token
#: (see :func:`_build_segment` and docs/performance.md).
_BUILD_CHUNK_SPOTS = 2_000_000


def _kept_chunks(docs: _Docs, kept: np.ndarray) -> Iterator[_Docs]:
    """The documents of ``docs`` that ``kept`` selects, in chunks; ``docs.spot_offsets`` may start anywhere in
    ``docs.spots`` (a slice of a larger set), and nothing is copied but a chunk."""
    offsets, n, first = docs.spot_offsets, len(docs.keys), 0
    while first < n:
        last = max(first + 1, int(np.searchsorted(offsets, offsets[first] + _BUILD_CHUNK_SPOTS, side="right")) - 1)
        last = min(last, n)
        chosen = np.flatnonzero(kept[first:last]) + first
        if len(chosen):
            sizes = offsets[chosen + 1] - offsets[chosen]
            where = _ranges(offsets[chosen], sizes)
            chunk_offsets = np.zeros(len(chosen) + 1, dtype=np.int64)
            np.cumsum(sizes, out=chunk_offsets[1:])
            chunk = _Docs(docs.keys[chosen], docs.times[chosen], chunk_offsets, docs.spots[where], docs.counts[where])
            _release(docs.spots, docs.counts)  # a merge's input segment: the pages just copied
            yield chunk
        first = last


class MergeCancelled(Exception):
    """A segment build stopped because its merge was abandoned (the index is closing)."""


def _counted_union(runs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and summed counts of several sorted (values, counts) runs (a stable sort of the
    concatenation is a merge of the runs)."""
    values = np.concatenate([run[0] for run in runs])
    counts = np.concatenate([run[1] for run in runs])
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    del order
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1]))) if len(values) else \
        np.zeros(0, np.int64)
    return values[starts], np.add.reduceat(counts, starts) if len(starts) else counts[:0]


#: At most this many token buckets a segment build sorts one at a time (see :func:`_build_segment`).
_MAX_BUCKETS = 256


def _release(*arrays: np.ndarray) -> None:
    """Drop the pages of these memory-mapped arrays from the process's resident memory (the page cache keeps them:
    a later read maps them again). A merge reads its input segments through their maps, and every page it has
    read would otherwise stay resident until the map closes: a million stories' spots are 1.2 GB of them."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    for array in arrays:
        base = array
        while base is not None and not isinstance(base, mmap.mmap):
            if getattr(base, "mode", None) == "c":
                break  # copy-on-write: dropping a changed page would lose the change
            base = getattr(base, "base", None)  # a view's base is the np.memmap, whose base is the map
        if isinstance(base, mmap.mmap) and not base.closed:
            base.madvise(mmap.MADV_DONTNEED)


class _Runs:
    """Sorted runs spilled to a scratch file, one a chunk, each cut into the token buckets (the slices of a run
    whose tokens fall in each bucket), so a bucket's postings of every run can be read back together."""

    def __init__(self, folder: Path, name: str, dtypes: dict[str, np.dtype]) -> None:
        self.paths = {column: folder / f"{name}-{column}" for column in dtypes}
        self.dtypes = dtypes
        self.handles = {column: open(path, "wb") for column, path in self.paths.items()}
        self.cuts: list[np.ndarray] = []  # per run: where each bucket starts in the file (elements), and its end
        self.written = 0

    def append(self, cuts: np.ndarray, **columns: np.ndarray) -> None:
        for column, values in columns.items():
            values.astype(self.dtypes[column], copy=False).tofile(self.handles[column])
        self.cuts.append(cuts.astype(np.int64) + self.written)
        self.written += int(cuts[-1])

    def bucket(self, number: int) -> dict[str, np.ndarray]:
        """Every run's slice of bucket ``number``, in run order, one array a column."""
        for handle in self.handles.values():
            handle.close()
        read = {column: [] for column in self.paths}
        for column, path in self.paths.items():
            size = np.dtype(self.dtypes[column]).itemsize
            with open(path, "rb") as handle:
                for cuts in self.cuts:
                    start, end = int(cuts[number]), int(cuts[number + 1])
                    if end > start:
                        handle.seek(start * size)
                        read[column].append(np.fromfile(handle, dtype=self.dtypes[column], count=end - start))
        return {column: np.concatenate(parts) if parts else np.zeros(0, self.dtypes[column])
                for column, parts in read.items()}

    def remove(self) -> None:
        for column, handle in self.handles.items():
            handle.close()
            self.paths[column].unlink(missing_ok=True)


class _NpyWriter:
    """A ``.npy`` file of ``length`` elements written front to back (no map: written pages do not stay in the
    process's resident memory), readable back by range while it is written."""

    def __init__(self, path: Path, dtype, length: int) -> None:
        self.path, self.dtype, self.length, self.written = path, np.dtype(dtype), length, 0
        self.handle = open(path, "wb+")
        np.lib.format.write_array_header_1_0(self.handle, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                           "fortran_order": False, "shape": (length,)})
        self.header = self.handle.tell()

    def write(self, values: np.ndarray) -> None:
        self.handle.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())
        self.written += len(values)

    def read(self, start: int, end: int) -> np.ndarray:
        self.handle.flush()
        return np.fromfile(self.path, dtype=self.dtype, count=end - start,
                           offset=self.header + start * self.dtype.itemsize)

    def close(self) -> None:
        self.handle.close()
        if self.written != self.length:
            raise ValueError(f"{self.path.name}: {self.written} values written, not {self.length}")


def _build_segment(folder: Path, chunks: Iterable[_Docs], *, documents: int, spots: int, tau: float,
                   min_containment: float, cancelled: threading.Event | None = None) -> dict[str, str]:
    """Write a segment of the documents in ``chunks`` (``documents`` of them, ``spots`` distinct spots in all,
    keys ascending across chunks) into ``folder`` (created; the caller renames it into place); returns each
    file's checksum, for the manifest.

    An external sort in bounded memory, whatever the segment's size. The token space is cut into buckets by the
    tokens' top bits (uniform hashes: about ``_BUILD_CHUNK_SPOTS`` tokens a bucket). Pass 1, a chunk of documents
    at a time: the documents are written out, and the chunk's distinct tokens with their counts are spilled as a
    sorted run. Then a bucket at a time, its slices of every run are merged: the distinct tokens and their
    document frequencies. Pass 2, a chunk at a time: the chunk's postings sorted by token (documents ascend within
    a token: chunks come in key order) and each document's prefix (its first tokens in the segment's order) are
    spilled as runs. Step 3, a bucket at a time: its slices of the runs, stably sorted by token, are the full and
    prefix lists of its tokens, written in order. Every output is written front to back (no map stays resident).
    RAM: 12 bytes a distinct token of the segment (the tokens and their frequencies), a chunk's arrays and a
    bucket's; the runs are temporary files (~20 bytes a token) removed before the checksums.
    ``cancelled``: raise :class:`MergeCancelled` at the next chunk once it is set.
    """
    def check() -> None:
        if cancelled is not None and cancelled.is_set():
            raise MergeCancelled

    folder.mkdir(parents=True)
    scratch = folder / "scratch"
    scratch.mkdir()
    chunk_spots = _BUILD_CHUNK_SPOTS
    bits = min(_MAX_BUCKETS.bit_length() - 1, max(0, int(np.ceil(np.log2(max(1.0, spots / chunk_spots))))))
    bucket_starts = np.arange(1 << bits, dtype=np.uint64) << _U64(64 - bits) if bits else np.zeros(1, np.uint64)
    buckets = len(bucket_starts)

    def cut(sorted_values: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.append(np.searchsorted(sorted_values, starts), len(sorted_values))

    keys, times = np.empty(documents, np.int64), np.empty(documents, np.uint32)
    lengths, spot_offsets = np.empty(documents, np.uint32), np.zeros(documents + 1, np.int64)
    spot_values = _NpyWriter(folder / "spots.npy", np.uint64, spots)
    spot_counts = _NpyWriter(folder / "counts.npy", np.uint32, spots)
    token_runs = _Runs(scratch, "tokens", {"values": np.uint64, "counts": np.uint32})
    # Pass 1: the documents, and each chunk's distinct tokens with their documents, a sorted run on disk.
    doc, spot = 0, 0
    for chunk in chunks:
        check()
        n, size = len(chunk.keys), len(chunk.spots)
        if doc + n > documents or spot + size > spots:
            raise ValueError(f"the chunks held more than {documents} documents and {spots} spots")
        keys[doc:doc + n], times[doc:doc + n] = chunk.keys, chunk.times
        spot_offsets[doc + 1:doc + n + 1] = chunk.spot_offsets[1:] + spot
        spot_values.write(chunk.spots), spot_counts.write(chunk.counts)
        lengths[doc:doc + n] = _lengths(chunk.spot_offsets, chunk.counts)
        values, counts = np.unique(spot_tokens(chunk.spots.astype(np.uint64), chunk.counts.astype(np.uint32)),
                                   return_counts=True)
        token_runs.append(cut(values, bucket_starts), values=values, counts=counts)
        doc, spot = doc + n, spot + size
    if (doc, spot) != (documents, spots):
        raise ValueError(f"the chunks held {doc} documents and {spot} spots, not {documents} and {spots}")
    for name, array in (("keys", keys), ("times", times), ("lengths", lengths), ("spot_offsets", spot_offsets)):
        np.save(folder / f"{name}.npy", array)
    del keys, times
    np.save(folder / "deleted.npy", np.zeros(documents, dtype=bool))
    # The distinct tokens and their document frequencies, a bucket at a time (buckets ascend: so do the tokens).
    # Spilled too, then read whole: a list of the buckets' arrays and their concatenation would hold them twice.
    with open(scratch / "distinct", "wb") as distinct_file, open(scratch / "frequency", "wb") as frequency_file:
        for number in range(buckets):
            check()
            run = token_runs.bucket(number)
            values, counts = _counted_union([(run["values"], run["counts"])])
            values.tofile(distinct_file), counts.astype(np.uint32).tofile(frequency_file)
    token_runs.remove()
    distinct = np.fromfile(scratch / "distinct", dtype=np.uint64)
    frequency = np.fromfile(scratch / "frequency", dtype=np.uint32)
    (scratch / "distinct").unlink(), (scratch / "frequency").unlink()
    np.save(folder / "tokens.npy", distinct)
    np.save(folder / _DIRECTORY, _token_directory(distinct))
    first_ids = np.append(np.searchsorted(distinct, bucket_starts), len(distinct))  # each bucket's first token id
    full_offsets = _NpyWriter(folder / "full_offsets.npy", np.int64, len(distinct) + 1)
    total = 0
    full_offsets.write(np.zeros(1, np.int64))
    for number in range(buckets):
        ends = np.cumsum(frequency[first_ids[number]:first_ids[number + 1]], dtype=np.int64) + total
        full_offsets.write(ends)
        total = int(ends[-1]) if len(ends) else total
    full_offsets.close()
    # Pass 2: each chunk's postings by token, and its documents' prefixes in the segment's order (rarest first,
    # then by token), as runs.
    full_runs = _Runs(scratch, "full", {"ids": np.uint32, "docs": np.uint32})
    prefix_runs = _Runs(scratch, "prefix", {"ids": np.uint32, "docs": np.uint32, "positions": np.uint16})
    chunk_docs = _chunk_docs(lengths)
    for first in range(0, documents, chunk_docs):
        check()
        last = min(documents, first + chunk_docs)
        start, end = int(spot_offsets[first]), int(spot_offsets[last])
        doc_lengths = lengths[first:last].astype(np.int64)
        tokens = spot_tokens(spot_values.read(start, end), spot_counts.read(start, end))
        doc_of = np.repeat(np.arange(first, last, dtype=np.uint32), doc_lengths)
        order = np.argsort(tokens, kind="stable")  # documents ascend within a token
        by_token = np.searchsorted(distinct, tokens[order])
        del tokens
        full_runs.append(cut(by_token, first_ids), ids=by_token, docs=doc_of[order])
        ids = np.empty(len(order), dtype=np.int64)
        ids[order] = by_token
        # The chunk's tokens ranked by (frequency, token): the segment's order among them.
        new = np.concatenate(([True], by_token[1:] != by_token[:-1])) if len(by_token) else np.zeros(0, bool)
        present = by_token[new]
        rank = np.empty(len(present), dtype=np.uint64)
        rank[np.argsort(frequency[present], kind="stable")] = np.arange(len(present), dtype=np.uint64)
        local = np.empty(len(order), dtype=np.int64)
        local[order] = np.cumsum(new) - 1
        del order, by_token, new, present
        in_doc_order = np.argsort((doc_of.astype(np.uint64) << _U64(32)) | rank[local])
        del rank, local
        ids, doc_of = ids[in_doc_order], doc_of[in_doc_order]
        del in_doc_order
        position = np.arange(len(ids), dtype=np.int64) - np.repeat(np.cumsum(doc_lengths) - doc_lengths, doc_lengths)
        keep = position < np.repeat(doc_lengths - _prefix_overlap(doc_lengths, tau, min_containment)
                                    + PREFIX_EXTENSION, doc_lengths)
        ids, doc_of, position = ids[keep], doc_of[keep], np.minimum(position[keep], _POSITION_CAP)
        order = np.argsort(ids, kind="stable")  # documents still ascend within a token
        ids = ids[order]
        prefix_runs.append(cut(ids, first_ids), ids=ids, docs=doc_of[order], positions=position[order])
    spot_values.close(), spot_counts.close()
    del spot_offsets, lengths, distinct, frequency
    # Step 3: the full and prefix lists, a bucket at a time: its slices of the runs, stably sorted by token.
    full_docs = _NpyWriter(folder / "full_docs.npy", np.uint32, total)
    prefixes = prefix_runs.written
    prefix_docs = _NpyWriter(folder / "prefix_docs.npy", np.uint32, prefixes)
    prefix_pos = _NpyWriter(folder / "prefix_pos.npy", np.uint16, prefixes)
    prefix_offsets = _NpyWriter(folder / "prefix_offsets.npy", np.int64, int(first_ids[-1]) + 1)
    prefix_offsets.write(np.zeros(1, np.int64))
    placed = 0
    for number in range(buckets):
        check()
        run = full_runs.bucket(number)
        full_docs.write(run["docs"][np.argsort(run["ids"], kind="stable")])
        run = prefix_runs.bucket(number)
        order = np.argsort(run["ids"], kind="stable")
        prefix_docs.write(run["docs"][order]), prefix_pos.write(run["positions"][order])
        low, high = int(first_ids[number]), int(first_ids[number + 1])
        ends = np.cumsum(np.bincount(run["ids"].astype(np.int64) - low, minlength=high - low), dtype=np.int64)
        prefix_offsets.write(ends + placed)
        placed += int(ends[-1]) if len(ends) else 0
    for writer in (full_docs, prefix_docs, prefix_pos, prefix_offsets):
        writer.close()
    full_runs.remove(), prefix_runs.remove()
    scratch.rmdir()
    fsync_folder(folder, files=True)
    # Hashed as written (read back from the page cache, ~1 s a million stories, in the merge thread when it merges).
    return {child.name: file_digest(child) for child in sorted(folder.iterdir())}


def _lengths(spot_offsets: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each document's number of spot occurrences (documents ``spot_offsets[i]:spot_offsets[i + 1]``)."""
    lengths = np.zeros(len(spot_offsets) - 1, dtype=np.int64)
    nonempty = np.diff(spot_offsets) > 0
    lengths[nonempty] = np.add.reduceat(counts.astype(np.int64), spot_offsets[:-1][nonempty])
    return lengths


def _chunk_docs(lengths: np.ndarray) -> int:
    """Documents a chunk of pass 2: about ``_BUILD_CHUNK_SPOTS`` tokens at the segment's mean length."""
    return max(1, int(_BUILD_CHUNK_SPOTS * len(lengths) // max(1, int(lengths.sum(dtype=np.int64)))))


def _prefix_overlap(lengths, tau: float, min_containment: float):
    """The overlap bound that sets how much of each document the prefix lists hold (the smaller bound wins)."""
    return np.minimum(_overlap_bound(tau, lengths), _overlap_bound(min_containment, lengths))


@dataclass
class _Postings:
    """What one segment's lists give a query: prefix postings (document, its length, query and document
    positions) and full-list postings of longer documents; document numbers are the segment's own until
    :func:`_candidates` numbers them across segments."""

    prefix_docs: np.ndarray
    prefix_lengths: np.ndarray
    prefix_query_position: np.ndarray
    prefix_doc_position: np.ndarray
    full_docs: np.ndarray
    full_lengths: np.ndarray
    full_query_position: np.ndarray
    jaccard_probe: int = 0  # query positions under these were probed for each search (the budget may cut them)
    shorter_probe: int = 0

    @staticmethod
    def empty() -> _Postings:
        nothing = np.zeros(0, dtype=np.int64)
        return _Postings(nothing, nothing, nothing, nothing, nothing, nothing, nothing)


def _candidates(parts: list[tuple[int, _Postings]], query: _Query) -> np.ndarray:
    """The documents, numbered across segments (a segment's first number plus its own), whose probed postings
    can still reach a hit of ``query``: one pass of the positional filters over every segment's postings (a
    query costs a few array operations in all, not a few per segment)."""
    def joined(name: str, numbered: bool = False) -> np.ndarray:
        return np.concatenate([getattr(p, name) + (first if numbered else 0) for first, p in parts])

    length, found = query.length, []
    docs, lengths = joined("prefix_docs", True), joined("prefix_lengths")
    query_position, doc_position = joined("prefix_query_position"), joined("prefix_doc_position")
    counts = [len(p.prefix_docs) for _, p in parts]
    if len(docs) and query.tau is not None:
        probed = np.repeat([p.jaccard_probe for _, p in parts], counts)
        keep = (query_position < probed) & (lengths >= query.jaccard_low) & (lengths <= query.jaccard_high)
        found.append(_positional(
            docs[keep], lengths[keep], query_position[keep], doc_position[keep], query,
            needed=lambda lengths: _pair_overlap_bound(query.tau, length, lengths),
            shared=lambda lengths: np.maximum(_overlap_bound(query.tau, lengths), query.jaccard_side)))
    if len(docs) and query.containment is not None:
        probed = np.repeat([p.shorter_probe for _, p in parts], counts)
        cut = lengths - _overlap_bound(query.containment, lengths) + PREFIX_EXTENSION
        keep = (query_position < probed) & (doc_position < cut) & (lengths <= length) & (lengths >= query.shorter_low)
        bound = lambda lengths: _overlap_bound(query.containment, lengths)  # noqa: E731
        found.append(_positional(docs[keep], lengths[keep], query_position[keep], doc_position[keep], query,
                                 needed=bound, shared=bound))
    docs = joined("full_docs", True)
    if len(docs):
        need = int(_overlap_bound(query.containment, length))
        found.append(_positional(docs, joined("full_lengths"), joined("full_query_position"), None, query,
                                 needed=lambda lengths: need, shared=lambda lengths: need))
    return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def _positional(docs: np.ndarray, lengths: np.ndarray, query_position: np.ndarray, doc_position: np.ndarray | None,
                query: _Query, *, needed, shared) -> np.ndarray:
    """The documents whose matches in the probed prefixes can still reach the overlap ``needed(lengths)``.

    Two exact filters. The l-prefix bound: prefixes ``PREFIX_EXTENSION`` tokens longer than the overlap
    bound ``a = shared(lengths)`` of the prefix lengths share ``min(PREFIX_EXTENSION, a)`` tokens or
    more in any qualifying pair. PPJoin's positional filter (Xiao et al. WWW 2008): query and document
    order tokens alike (the segment's order), so every common token before a document's last match was
    matched too; after ``m`` matches, the last at query position ``i`` and document position ``j``, the
    overlap is at most ``m + min(|q| - i - 1, |d| - j - 1)`` (``j`` unknown for the full lists: unused).
    """
    if not len(docs):
        return docs
    # One sort of a packed key (document, query position, document position) when it fits 64 bits.
    query_bits = max(1, query.length.bit_length())
    if int(docs.max()) < 1 << (64 - query_bits - 16):
        key = (docs.astype(np.uint64) << _U64(query_bits + 16)) | (query_position.astype(np.uint64) << _U64(16))
        if doc_position is not None:
            key |= doc_position.astype(np.uint64)
        order = np.argsort(key)
    else:
        order = np.lexsort((doc_position if doc_position is not None else query_position, query_position, docs))
    docs, lengths, query_position = docs[order], lengths[order], query_position[order]
    first = np.flatnonzero(np.concatenate(([True], docs[1:] != docs[:-1])))
    matches = np.diff(np.append(first, len(docs)))
    last = np.append(first[1:], len(docs)) - 1
    unique, lengths = docs[first], lengths[first]
    room = query.length - query_position[last] - 1
    if doc_position is not None:
        room = np.minimum(room, lengths - doc_position[order][last] - 1)
    keep = (matches >= np.minimum(PREFIX_EXTENSION, shared(lengths))) & (matches + room >= needed(lengths))
    return unique[keep]


class _Segment:
    """One immutable segment, memory-mapped, with its small mutable arrays in RAM (see the module docstring).

    ``checksums``: each file's, as the manifest lists them (``verify``: every file is hashed and compared before
    anything is read: a damaged segment raises :class:`StateDamaged` naming the file). ``saved``: the files
    holding the mutable ``times`` and ``deleted`` (written anew under a new name at each save, so that the
    manifest written after them is what makes them current: a crash between the two leaves the old, whole ones).
    """

    def __init__(self, folder: Path, checksums: dict[str, str], saved: dict[str, str] | None = None, *,
                 verify: bool = True) -> None:
        self.folder = folder
        self.name = folder.name
        self.checksums = dict(checksums)
        self.saved = dict(saved or {name: f"{name}.npy" for name in ("times", "deleted")})
        wanted = {f"{name}.npy" for name in (*_SEGMENT_ARRAYS, "lengths")} | {_DIRECTORY, *self.saved.values()}
        for file in sorted(wanted):
            if file not in self.checksums:
                raise StateDamaged(folder / file, "not listed in the manifest with its checksum")
            if verify:
                verify_file(folder / file, self.checksums[file])
        for name in _SEGMENT_ARRAYS:
            # A plain ndarray view of the map: numpy's memmap subclass costs ~10 us on every slice.
            setattr(self, name, np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray))
        for name in _MUTABLE_ARRAYS:  # in RAM: read on every query, changed in place
            setattr(self, name, np.load(folder / self.saved.get(name, f"{name}.npy")))
        self.token_directory = np.load(folder / _DIRECTORY, mmap_mode="r").view(np.ndarray)
        self.directory_steps = _directory_steps(self.token_directory)
        self.dirty = False
        self.size = len(self.keys)

    def find(self, key: int) -> int:
        """The local number of ``key``, or -1."""
        position = int(np.searchsorted(self.keys, key))
        return position if position < self.size and int(self.keys[position]) == key else -1

    def visible(self, window_start: int) -> np.ndarray:
        return ~self.deleted & (self.times >= window_start)

    def shows(self, local: int, window_start: int) -> bool:
        return local >= 0 and not self.deleted[local] and int(self.times[local]) >= window_start

    def chunks(self, mask: np.ndarray) -> _Chunks:
        """The documents selected by ``mask`` (for a merge), as flat arrays a chunk at a time."""
        return _Docs(self.keys, self.times, self.spot_offsets, self.spots, self.counts).selected(mask)

    def save_mutable(self, number: int) -> None:
        """Write ``times`` and ``deleted`` to new files (``times-<number>.npy``), for the next manifest to name."""
        for name in ("times", "deleted"):
            file = f"{name}-{number}.npy"
            checksum = write_durably(self.folder / file, lambda handle, name=name: np.save(handle, getattr(self, name)))
            self.checksums.pop(self.saved[name], None)
            self.saved[name], self.checksums[file] = file, checksum
        fsync_folder(self.folder)  # their names durable before the manifest names them (a power cut in between)
        self.dirty = False

    def entry(self) -> dict:
        """What the manifest lists of this segment."""
        return {"name": self.name, "checksums": self.checksums, "saved": self.saved}

    def remove_unlisted(self) -> None:
        """Delete the files no manifest names any more (earlier saves of ``times`` and ``deleted``)."""
        for child in self.folder.iterdir():
            if child.name not in self.checksums:
                child.unlink(missing_ok=True)

    def close(self) -> None:
        for name in _SEGMENT_ARRAYS:
            setattr(self, name, None)
        self.token_directory = None

    def postings(self, query: _Query, budget: int | None = None) -> _Postings | None:
        """The postings here that may lead to a hit of ``query``, rarest tokens first, at most ``budget`` a search
        path (None: every posting the lossless bound needs); None when there are none."""
        if not len(self.tokens):
            return None
        positions = _locate(self.tokens, self.token_directory, self.directory_steps, query.tokens)
        clipped = np.minimum(positions, len(self.tokens) - 1)
        ids = clipped[(positions < len(self.tokens)) & (self.tokens[clipped] == query.tokens)]
        # The segment's order, rarest first: the query's tokens absent here (frequency 0) come first and hold no
        # postings; the present ones follow by frequency, ties by token value (query.tokens ascend).
        ids = ids[np.argsort(self.full_offsets[ids + 1] - self.full_offsets[ids], kind="stable")]
        absent = len(query.tokens) - len(ids)
        found = _Postings.empty()
        # Prefix lists: Jaccard candidates (query prefix against document prefixes), and shorter documents
        # the query may contain (query tokens against each document's containment prefix).
        probe = max(query.jaccard_probe, query.shorter_probe)
        chosen, sizes = self._within_budget(ids[:max(0, probe - absent)], self.prefix_offsets, budget)
        if len(chosen):
            probe = absent + len(chosen)
            starts = self.prefix_offsets[chosen]
            where = _ranges(starts, sizes)
            found.prefix_docs = np.asarray(self.prefix_docs[where]).astype(np.int64)
            found.prefix_lengths = self.lengths[found.prefix_docs].astype(np.int64)
            found.prefix_query_position = np.repeat(np.arange(absent, probe), sizes)
            found.prefix_doc_position = np.asarray(self.prefix_pos[where]).astype(np.int64)
            found.jaccard_probe = min(query.jaccard_probe, probe)
            found.shorter_probe = min(query.shorter_probe, probe)
        # Full lists: longer documents that may contain the query.
        if query.containment is not None:
            chosen, sizes = self._within_budget(ids[:max(0, query.longer_probe - absent)], self.full_offsets, budget)
            if len(chosen):
                docs = np.asarray(self.full_docs[_ranges(self.full_offsets[chosen], sizes)]).astype(np.int64)
                lengths = self.lengths[docs].astype(np.int64)
                keep = (lengths >= query.length) & (lengths <= query.longer_high)
                found.full_docs, found.full_lengths = docs[keep], lengths[keep]
                found.full_query_position = np.repeat(np.arange(absent, absent + len(chosen)), sizes)[keep]
        return found if len(found.prefix_docs) or len(found.full_docs) else None

    @staticmethod
    def _within_budget(ids: np.ndarray, offsets: np.ndarray, budget: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The first of ``ids`` (rarest first) whose lists hold at most ``budget`` postings together (None: all of
        them, the lossless bound), and their list sizes."""
        sizes = offsets[ids + 1] - offsets[ids]
        if budget is not None:
            over = np.flatnonzero(np.cumsum(sizes) > budget)
            if len(over):
                ids, sizes = ids[:over[0]], sizes[:over[0]]
        return ids, sizes

    def hits(self, candidates: np.ndarray, query: _Query, window_start: int) -> list[tuple[int, float, str]]:
        """The exact decisions on ``candidates`` (local numbers) that are in the window: (key, score, kind)."""
        candidates = candidates[~self.deleted[candidates] & (self.times[candidates] >= window_start)]
        if not len(candidates):
            return []
        overlap = self._overlap(candidates, query)
        return query.judge(np.asarray(self.keys[candidates]), self.lengths[candidates].astype(np.int64), overlap)

    def _overlap(self, candidates: np.ndarray, query: _Query) -> np.ndarray:
        """Exact multiset overlap sum(min counts) of each candidate with the query."""
        starts = self.spot_offsets[candidates]
        sizes = self.spot_offsets[candidates + 1] - starts
        where = _ranges(starts, sizes)
        spots, counts = np.asarray(self.spots[where]), np.asarray(self.counts[where])
        position = np.minimum(np.searchsorted(query.spots, spots), len(query.spots) - 1)
        shared = np.where(query.spots[position] == spots, np.minimum(counts, query.counts[position]), 0)
        owner = np.repeat(np.arange(len(candidates)), sizes)
        return np.bincount(owner, weights=shared, minlength=len(candidates)).astype(np.int64)

    def overlap_of(self, local: int, query: _Query) -> int:
        return int(self._overlap(np.array([local]), query)[0])


class _Query:
    """A query multiset as sorted arrays, with the probe lengths its thresholds allow."""

    def __init__(self, spots: dict[int, int], tau: float, containment: float | None,
                 min_spots: int = 1, min_ratio: float = 1.0, whole_below: float | None = None) -> None:
        items = sorted(spots.items())
        self.spots = np.array([spot for spot, _ in items], dtype=np.uint64)
        self.counts = np.array([count for _, count in items], dtype=np.uint32)
        self.length = length = int(self.counts.sum())
        if length > _MAX_QUERY_LENGTH:
            raise ValueError(f"a query of {length} spots is longer than the {_MAX_QUERY_LENGTH} supported: split it")
        self.tokens = np.sort(spot_tokens(self.spots, self.counts))  # ascending: ties of a segment's order
        self.tau, self.containment, self.min_spots, self.min_ratio = tau, containment, min_spots, min_ratio
        self.whole_below = whole_below
        self.jaccard_side = int(_overlap_bound(tau, length)) if tau is not None else 0
        self.jaccard_probe = length - self.jaccard_side + PREFIX_EXTENSION if tau is not None else 0
        # Length bounds, one wider than exact each side (the judge decides exactly).
        self.jaccard_low = int(tau * length) - 1 if tau is not None else 0
        self.jaccard_high = int(length / tau) + 1 if tau is not None else -1
        self.shorter_probe = self.longer_probe = 0
        self.shorter_low, self.longer_high = 0, -1
        if containment is not None:
            self.shorter_low = max(1, min_spots, int(min_ratio * length) - 1)
            self.shorter_probe = length - int(_overlap_bound(containment, self.shorter_low)) + PREFIX_EXTENSION
            self.longer_probe = length - int(_overlap_bound(containment, length)) + PREFIX_EXTENSION
            self.longer_high = int(length / min_ratio) + 1

    def judge(self, keys: np.ndarray, lengths: np.ndarray, overlap: np.ndarray) -> list[tuple[int, float, str]]:
        """The exact decisions, in the float arithmetic of :func:`multiset_jaccard` and SpotSigsIndex."""
        hits = []
        for key, other, common in zip(keys.tolist(), lengths.tolist(), overlap.tolist()):
            if self.tau is not None and common / (self.length + other - common) >= self.tau:
                hits.append((key, common / (self.length + other - common), "jaccard"))
            if self.containment is not None:
                containment = containment_match(common, self.length, other, min_containment=self.containment,
                                                min_spots=self.min_spots, min_ratio=self.min_ratio,
                                                whole_below=self.whole_below)
                if containment is not None:
                    hits.append((key, containment, "containment"))
        return hits


class _MergePlan:
    """Segments to be rewritten as one (consecutive in the index's list), keeping the documents ``masks`` select."""

    def __init__(self, index: PersistentSpotSigsIndex, inputs: list[_Segment], masks: list[np.ndarray]) -> None:
        self.index, self.inputs, self.masks = index, inputs, masks
        self.name = index._new_name("seg") if any(mask.any() for mask in masks) else None
        self.cancelled = threading.Event()

    def build(self) -> _Segment | None:
        if self.name is None:
            return None
        return self.index._write_segment(*(segment.chunks(mask) for segment, mask in zip(self.inputs, self.masks)),
                                         name=self.name, cancelled=self.cancelled)

    def run(self) -> _RunningMerge:
        done: Future = Future()
        done.set_result(self.build())
        return _RunningMerge(self, done)

    def start(self, thread: ThreadPoolExecutor) -> _RunningMerge:
        return _RunningMerge(self, thread.submit(self.build))


class _RunningMerge:
    """A merge being built (in a thread) while the index answers from its inputs."""

    def __init__(self, plan: _MergePlan, future: Future) -> None:
        self.plan, self.future = plan, future

    def swapped_into(self, segments: list[_Segment]) -> list[_Segment]:
        """``segments`` with the inputs replaced by the merged segment; what changed in the inputs while it was
        built (times raised by a touch, documents discarded, times set anew) is carried over."""
        merged = self.future.result()  # a failed build raises here (e.g. OSError: disk full), in the caller
        inputs = self.plan.inputs
        at = next(number for number, segment in enumerate(segments) if segment is inputs[0])
        if segments[at:at + len(inputs)] != inputs:
            raise RuntimeError("segments changed under a running merge")
        window_start = self.plan.index.window_start
        if any((s.visible(window_start) & ~mask).any() for s, mask in zip(inputs, self.plan.masks)):
            self.abandon()  # a touch brought back a document the merge left out as expired: planned again later
            return segments
        if merged is not None:
            merged.times = np.concatenate([s.times[mask] for s, mask in zip(inputs, self.plan.masks)])
            merged.deleted = np.concatenate([s.deleted[mask] for s, mask in zip(inputs, self.plan.masks)])
            merged.dirty = True
        return segments[:at] + ([merged] if merged is not None else []) + segments[at + len(inputs):]

    def abandon(self) -> None:
        self.plan.cancelled.set()  # the build stops at its next chunk
        try:
            merged = self.future.result()
        except Exception:  # noqa: BLE001 - its files are gone either way (removed on failure)
            return
        if merged is not None:
            merged.close()
            shutil.rmtree(merged.folder, ignore_errors=True)


class PersistentSpotSigsIndex:
    """Exact SpotSigs search over memory-mapped segments plus an in-memory delta (see the module docstring).

    Keys are the store's row ids (int), added in ascending order; spots are unsigned 64-bit hashes (as the
    pipeline makes them) with positive integer counts; times are seconds since the epoch.
    ``store_mark``: the store's last committed row id, when opening an existing state (None: trust the state).
    ``auto_checkpoint``: checkpoint as soon as the delta holds ``flush_docs`` documents; a writer whose store
    commits in batches passes False and calls :meth:`checkpoint` after a commit when :attr:`needs_checkpoint`.
    ``probe_budget``: at most this many postings a search path reads across the index, rarest tokens first, each
    segment its share by its number of documents (None: the lossless prefix bound). It bounds the tail of long
    queries against a large store; a pair is then found when it shares ``PREFIX_EXTENSION`` tokens among the
    query's rarest ones, which a near-duplicate almost always does (the benchmark measures the recall against brute
    force; short texts whose spots are all frequent are the ones a small budget misses); every hit is still
    verified exactly.
    ``background_merges``: a checkpoint starts merges in a thread and swaps a finished one in at a later checkpoint
    (``checkpoint(wait=True)`` waits for it); :meth:`close` cancels one still running (planned again next time).
    ``log_synced``: what :meth:`sync_log` returned when the caller last saved its own marks (the log's name and the
    bytes made durable): the log must hold intact records up to there, else it was damaged.

    Opening verifies every file against the checksums in the manifest (the manifest's own included) before using
    it: a missing or damaged file raises :class:`~newsdedup.dedup.durable.StateDamaged` naming it (the caller
    builds the index again); so does a log whose records the CRCs cut short of ``log_synced``.
    """

    def __init__(self, path: str | Path, *, tau: float = defaults.NEWSDEDUP_SPOTSIGS_TAU,
                 min_signatures: int = defaults.NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES,
                 min_containment: float = defaults.NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT,
                 flush_docs: int = 20_000, max_segment_docs: int = 1_000_000,
                 store_mark: int | None = None, auto_checkpoint: bool = True,
                 probe_budget: int | None = None, background_merges: bool = False,
                 log_synced: tuple[str, int] | None = None) -> None:
        if probe_budget is not None and (isinstance(probe_budget, bool) or not isinstance(probe_budget, int)
                                         or probe_budget < 1):
            raise ValueError(f"probe_budget must be a positive int or None, got {probe_budget!r}")
        self.probe_budget = probe_budget
        self.tau = SpotSigsIndex._check_tau(tau)
        if not 0.0 < min_containment <= 1.0:
            raise ValueError(f"min_containment must be in (0, 1], got {min_containment!r}")
        if flush_docs < 1 or not flush_docs <= max_segment_docs <= _MAX_SEGMENT_DOCS // 2:
            raise ValueError(f"need 1 <= flush_docs <= max_segment_docs <= {_MAX_SEGMENT_DOCS // 2}, got {flush_docs} "
                             f"and {max_segment_docs}")
        self.min_containment = float(min_containment)
        self.min_signatures = min_signatures
        self.flush_docs, self.max_segment_docs = flush_docs, max_segment_docs
        self.auto_checkpoint = auto_checkpoint
        self.background_merges = background_merges
        self._merge: _RunningMerge | None = None
        self._merge_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spotsigs-merge") \
            if background_merges else None
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.window_start = 0
        self.segments: list[_Segment] = []
        self._delta = SpotSigsIndex(tau=self.tau, min_signatures=min_signatures)
        self._delta_docs: dict[int, tuple[dict[int, int], int]] = {}  # key -> (spots, time), insertion order
        self._next_segment = 0
        self.high_water_mark = -1
        self._log = None
        self._open(store_mark, log_synced)

    # ------------------------------------------------------------------ opening and the log
    def _open(self, store_mark: int | None, log_synced: tuple[str, int] | None) -> None:
        try:
            manifest = read_manifest(self.path / _MANIFEST)
        except FileNotFoundError:
            manifest = None
        if manifest is not None:
            if manifest.get("format") != _FORMAT:
                raise ValueError(f"{self.path}: near-duplicate state format {manifest.get('format')} is not "
                                 f"{_FORMAT}: delete the folder to rebuild it from the store")
            if manifest.get("prefix_extension") != PREFIX_EXTENSION:
                raise ValueError(f"{self.path}: built with prefixes extended by {manifest.get('prefix_extension')}, "
                                 f"this version uses {PREFIX_EXTENSION}: delete the folder to rebuild it")
            built = (manifest["tau"], manifest["min_containment"])
            if built != (self.tau, self.min_containment):
                raise ValueError(f"{self.path}: built for tau {built[0]} and containment {built[1]}, asked for "
                                 f"{self.tau} and {self.min_containment}: delete the folder to rebuild it")
            try:
                for entry in manifest["segments"]:
                    self.segments.append(_Segment(self.path / entry["name"], entry["checksums"], entry["saved"]))
            except BaseException:
                self.close()
                raise
            self._next_segment = manifest["next_segment"]
            self.window_start = manifest["window_start"]
            self.high_water_mark = manifest["high_water_mark"]
            log_name = manifest["log"]
        else:
            log_name = self._new_name("log")
        records = self._read_log(self.path / log_name, store_mark,
                                 log_synced[1] if log_synced is not None and log_synced[0] == log_name else 0)
        referenced = {segment.name for segment in self.segments} | {log_name, _MANIFEST}
        for leftover in self.path.iterdir():  # an interrupted checkpoint's files
            if leftover.name not in referenced:
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        for segment in self.segments:
            segment.remove_unlisted()
        if store_mark is not None and self.high_water_mark > store_mark:
            for segment in self.segments:  # rows the store never committed: gone for good
                above = np.asarray(segment.keys) > store_mark
                if above.any():
                    segment.deleted |= above
                    segment.dirty = True
            self.high_water_mark = store_mark
        self._log_path = self.path / log_name
        self._log = open(self._log_path, "ab")
        if manifest is None:
            self._write_manifest()
        for kind, row, key, time, spots in records:
            self._apply(kind, row, key, time, spots, log=False)
        if self._delta_docs or any(segment.dirty for segment in self.segments):
            self.checkpoint()

    def _read_log(self, path: Path, store_mark: int | None, synced: int = 0) -> list[tuple]:
        """The log's intact records up to ``store_mark``; the file is cut after the last one kept. ``synced``: bytes
        known durable, which must all be intact records (a torn record after them is a crash mid-write; one before
        them is damage: :class:`StateDamaged`, the file left as it is)."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            if synced:
                raise StateDamaged(path, f"missing (deleted?), {synced} bytes of it were saved") from None
            data = b""
        records, offset, kept_end, ahead = [], 0, 0, False
        while offset + _HEADER.size <= len(data):
            kind, row, key, time, n = _HEADER.unpack_from(data, offset)
            end = offset + _HEADER.size + 12 * n + _CRC.size
            if end > len(data) or zlib.crc32(data[offset:end - _CRC.size]) != _CRC.unpack_from(data, end - _CRC.size)[0]:
                break  # torn by a crash mid-write (or damaged: see below)
            if store_mark is not None and row > store_mark:
                ahead = True
                break  # records are in row order: the rest is ahead of the store too
            spots = None
            if kind == _ADD:
                body = offset + _HEADER.size
                values = np.frombuffer(data, dtype="<u8", count=n, offset=body)
                counts = np.frombuffer(data, dtype="<u4", count=n, offset=body + 8 * n)
                spots = dict(zip(values.tolist(), counts.tolist()))
            records.append((kind, row, key, time, spots))
            offset = kept_end = end
        if not ahead and kept_end < synced:
            raise StateDamaged(path, f"its records are intact up to byte {kept_end} of {len(data)}, but {synced} "
                                     f"bytes were saved (written over or cut)")
        if kept_end < len(data):
            with open(path, "r+b") as handle:
                handle.truncate(kept_end)
        return records

    def _append(self, kind: int, row: int, key: int, time: int, spots: dict[int, int] | None = None) -> None:
        body = b""
        n = 0
        if spots is not None:
            n = len(spots)
            body = np.fromiter(spots.keys(), dtype="<u8", count=n).tobytes() + \
                np.fromiter(spots.values(), dtype="<u4", count=n).tobytes()
        record = _HEADER.pack(kind, row, key, time, n) + body
        self._log.write(record + _CRC.pack(zlib.crc32(record)))
        self._log.flush()  # in the OS's hands: survives kill -9 (not a power cut; checkpoints fsync)

    def _new_name(self, prefix: str) -> str:
        name = f"{prefix}-{self._next_segment}"
        self._next_segment += 1
        return name

    def _write_manifest(self) -> None:
        manifest = {"format": _FORMAT, "tau": self.tau, "min_containment": self.min_containment,
                    "prefix_extension": PREFIX_EXTENSION,
                    "segments": [segment.entry() for segment in self.segments], "log": self._log_path.name,
                    "next_segment": self._next_segment, "window_start": self.window_start,
                    "high_water_mark": self.high_water_mark}
        write_manifest(self.path / _MANIFEST, manifest)
        fsync_folder(self.path)

    # ------------------------------------------------------------------ updates
    def add(self, key: int, signatures: Mapping[int, int], *, time: int) -> bool:
        """Store document ``key`` (a row id above :attr:`high_water_mark`); False when too short to index."""
        spots = _positive_spots(signatures)
        key = _check_row(key, self.high_water_mark)
        _check_time(time)
        return self._apply(_ADD, key, key, int(time), spots)

    def touch(self, key: int, *, time: int, row: int | None = None) -> bool:
        """Raise document ``key``'s time to ``time`` (its story got a copy, stored as ``row``); False if unknown."""
        row = self.high_water_mark if row is None else _check_row(row, self.high_water_mark - 1)
        _check_time(time)
        return self._apply(_TOUCH, row, int(key), int(time), None)

    def discard(self, key: int, *, row: int | None = None) -> bool:
        """Forget document ``key``; returns whether it was stored."""
        row = self.high_water_mark if row is None else _check_row(row, self.high_water_mark - 1)
        return self._apply(_DISCARD, row, int(key), 0, None)

    def expire(self, before: int) -> None:
        """Hide documents whose time is before ``before`` (the retention window's start), from now on."""
        self.window_start = max(self.window_start, int(before))
        for key, (_, time) in list(self._delta_docs.items()):
            if time < self.window_start:
                self._delta.discard(key)
                del self._delta_docs[key]

    def _apply(self, kind: int, row: int, key: int, time: int, spots: dict[int, int] | None, *, log: bool = True) -> bool:
        if kind == _ADD:
            length = sum(spots.values())
            if length < self.min_signatures or length > _MAX_U32:
                changed = False
            else:
                changed = True
                if log:  # a replayed log goes straight into a segment: no delta index to build
                    self._append(_ADD, row, key, time, spots)
                    self._delta.add(key, spots)
                self._delta_docs[key] = (spots, time)
        else:
            changed = self._change(kind, key, time)
            if changed and log:
                self._append(kind, row, key, time)
        self.high_water_mark = max(self.high_water_mark, row)
        if kind == _ADD and log and self.auto_checkpoint and self.needs_checkpoint:
            self.checkpoint()
        return changed

    def _change(self, kind: int, key: int, time: int) -> bool:
        if key in self._delta_docs:
            if kind == _TOUCH:
                spots, old = self._delta_docs[key]
                self._delta_docs[key] = (spots, max(old, time))
            else:
                del self._delta_docs[key]
                self._delta.discard(key)
            return True
        for segment in self.segments:
            local = segment.find(key)
            if local >= 0 and not segment.deleted[local]:
                if kind == _TOUCH:
                    segment.times[local] = max(int(segment.times[local]), time)
                else:
                    segment.deleted[local] = True
                segment.dirty = True
                return True
        return False

    def set_times(self, keys: np.ndarray, times: np.ndarray) -> None:
        """Set every document's time anew: ``times[i]`` for ``keys[i]`` (ascending), 0 (hidden) for a document
        not listed; then a checkpoint. For a state that was ahead of its store: a time raised by a row the
        store does not have cannot be undone by a rollback, only set again from the store."""
        keys, times = np.asarray(keys, dtype=np.int64), np.asarray(times, dtype=np.int64)
        for key, (spots, _) in list(self._delta_docs.items()):
            position = int(np.searchsorted(keys, key))
            listed = position < len(keys) and int(keys[position]) == key
            self._delta_docs[key] = (spots, int(times[position]) if listed else 0)
        for segment in self.segments:
            position = np.minimum(np.searchsorted(keys, segment.keys), max(len(keys) - 1, 0))
            listed = (keys[position] == segment.keys) if len(keys) else np.zeros(segment.size, dtype=bool)
            segment.times = np.where(listed, times[position] if len(keys) else 0, 0).astype(np.uint32)
            segment.dirty = True
        self.checkpoint()

    def bulk_add(self, rows: Iterable[tuple[int, Mapping[int, int], int]]) -> int:
        """Add many ``(key, spots, time)`` rows at once, straight into segments of ``max_segment_docs``
        (the first build from an existing store, or a benchmark); returns how many were indexed.

        No log: the rows become durable at the checkpoint that ends the call.
        """
        self.checkpoint()
        added = 0
        chunk: list[tuple[int, dict[int, int], int]] = []

        def write() -> None:
            nonlocal chunk
            if chunk:
                self._delta_docs = {key: (spots, time) for key, spots, time in chunk}
                self.segments.append(self._write_segment(self._delta_as_docs().chunked()))
                self._delta_docs, chunk = {}, []

        for key, signatures, time in rows:
            spots = _positive_spots(signatures)
            self.high_water_mark = _check_row(key, self.high_water_mark)
            _check_time(time)
            if sum(spots.values()) >= self.min_signatures:
                chunk.append((key, spots, int(time)))
                added += 1
                if len(chunk) >= self.max_segment_docs:
                    write()
        write()
        self.checkpoint()
        return added

    def bulk_add_arrays(self, keys: np.ndarray, times: np.ndarray, spot_offsets: np.ndarray, spots: np.ndarray,
                        counts: np.ndarray) -> int:
        """:meth:`bulk_add` for documents already in flat arrays (no Python object a spot: a first build of
        millions of stories from a store's columns, or a benchmark); returns how many were indexed.

        ``keys`` ascending row ids above :attr:`high_water_mark`, ``times`` their seconds, document ``i``'s
        spots ``spots[spot_offsets[i]:spot_offsets[i + 1]]`` (distinct and ascending within it) with positive
        ``counts``. Call it with at most ``max_segment_docs`` documents at a time to bound memory: each call
        writes its own segments.
        """
        keys, times = np.asarray(keys, dtype=np.int64), np.asarray(times)
        spot_offsets, spots = np.asarray(spot_offsets, dtype=np.int64), np.asarray(spots, dtype=np.uint64)
        counts = np.asarray(counts)
        n = len(keys)
        if len(times) != n or len(spot_offsets) != n + 1 or spot_offsets[0] != 0 or \
                spot_offsets[-1] != len(spots) or len(counts) != len(spots) or np.any(np.diff(spot_offsets) < 0):
            raise ValueError("need len(times) == len(keys), spot_offsets of len(keys) + 1 from 0 to len(spots), "
                             "and one count a spot")
        if not n:
            return 0
        if keys[0] <= max(self.high_water_mark, -1) or np.any(np.diff(keys) <= 0) or keys[-1] > _MAX_KEY:
            raise ValueError(f"keys must ascend above the high-water mark {self.high_water_mark}: rows come in "
                             f"store order")
        if np.any(times < 0) or np.any(times > _MAX_U32):
            raise ValueError("times must be whole seconds since 1970 that fit 32 bits")
        if len(counts) and (counts.min() < 1 or counts.max() > _MAX_U32):
            raise ValueError("spot counts must be positive and fit 32 bits")
        starts = np.zeros(len(spots), dtype=bool)
        starts[spot_offsets[:-1][np.diff(spot_offsets) > 0]] = True
        if np.any((spots[1:] <= spots[:-1]) & ~starts[1:]):
            raise ValueError("each document's spots must be distinct and ascending")
        lengths = _lengths(spot_offsets, counts)
        kept = (lengths >= self.min_signatures) & (lengths <= _MAX_U32)
        self.checkpoint()
        times, counts = times.astype(np.uint32, copy=False), counts.astype(np.uint32, copy=False)
        ends = np.cumsum(kept)
        for first in range(0, int(ends[-1]), self.max_segment_docs):  # documents kept before ``first``: ``first``
            begin = int(np.searchsorted(ends, first, side="right"))
            end = int(np.searchsorted(ends, first + self.max_segment_docs, side="right"))
            part = _Docs(keys[begin:end], times[begin:end], spot_offsets[begin:end + 1], spots, counts)
            self.segments.append(self._write_segment(part.selected(kept[begin:end])))
        self.high_water_mark = int(keys[-1])
        self.checkpoint()
        return int(ends[-1])

    def signatures(self, key: int) -> dict[int, int] | None:
        """The spot multiset of the visible document ``key`` (spot -> count), or None."""
        if key in self._delta_docs:
            return dict(self._delta_docs[key][0])
        for segment in self.segments:
            local = segment.find(key)
            if segment.shows(local, self.window_start):
                start, end = int(segment.spot_offsets[local]), int(segment.spot_offsets[local + 1])
                return dict(zip(segment.spots[start:end].tolist(), segment.counts[start:end].tolist()))
        return None

    # ------------------------------------------------------------------ checkpoints
    @property
    def needs_checkpoint(self) -> bool:
        """The delta holds ``flush_docs`` documents: time to write it as a segment (see :meth:`checkpoint`)."""
        return len(self._delta_docs) >= self.flush_docs

    def checkpoint(self, *, wait: bool = False) -> None:
        """Write the delta as a segment, merge and compact segments, start a new log (all atomic).

        Call it only when the store has committed every row up to :attr:`high_water_mark`. With
        ``background_merges``, a merge runs in a thread while the index keeps answering from the segments it
        merges; a later checkpoint swaps its segment in (``wait``: wait for a running merge and swap it in now,
        starting no other, as at a crawl's end).
        """
        new_segments = list(self.segments)
        if self._merge is not None and (wait or self._merge.future.done()):
            merge, self._merge = self._merge, None  # a failed build raises once; the next checkpoint plans again
            new_segments = merge.swapped_into(new_segments)
        if self._delta_docs:
            new_segments.append(self._write_segment(self._delta_as_docs().chunked()))
        if not self.background_merges:
            while (plan := self._merge_plan(new_segments)) is not None:
                new_segments = plan.run().swapped_into(new_segments)
                for segment in plan.inputs:
                    if segment not in self.segments:  # written in this checkpoint, already merged: never published
                        segment.close()
                        shutil.rmtree(segment.folder, ignore_errors=True)
        elif self._merge is None and not wait and (plan := self._merge_plan(new_segments)) is not None:
            self._merge = plan.start(self._merge_thread)
        saves = self._next_segment
        self._next_segment += 1
        for segment in new_segments:
            if segment.dirty:
                segment.save_mutable(saves)
        old_log = self._log_path
        self._log.close()
        self._log_path = self.path / self._new_name("log")
        self._log = open(self._log_path, "ab")
        dropped = [segment for segment in self.segments if segment not in new_segments]
        self.segments = new_segments
        self._write_manifest()
        old_log.unlink(missing_ok=True)
        for segment in new_segments:
            segment.remove_unlisted()
        for segment in dropped:
            segment.close()
            shutil.rmtree(segment.folder, ignore_errors=True)
        self._delta = SpotSigsIndex(tau=self.tau, min_signatures=self.min_signatures)
        self._delta_docs = {}

    def _delta_as_docs(self) -> _Docs:
        """The delta's documents as flat arrays, spots sorted within each (one numpy sort for all)."""
        entries = self._delta_docs
        keys = np.fromiter(entries, dtype=np.int64, count=len(entries))
        times = np.fromiter((time for _, time in entries.values()), dtype=np.uint32, count=len(entries))
        sizes = np.fromiter((len(spots) for spots, _ in entries.values()), dtype=np.int64, count=len(entries))
        total = int(sizes.sum())
        spots = np.fromiter(chain.from_iterable(spots for spots, _ in entries.values()), dtype=np.uint64, count=total)
        counts = np.fromiter(chain.from_iterable(spots.values() for spots, _ in entries.values()), dtype=np.uint32,
                             count=total)
        order = np.lexsort((spots, np.repeat(np.arange(len(keys)), sizes)))
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return _Docs(keys, times, offsets, spots[order], counts[order])

    def _write_segment(self, *sources: _Chunks, name: str | None = None,
                       cancelled: threading.Event | None = None) -> _Segment:
        """A new segment of the documents of ``sources``, in their order (``cancelled``: stop between chunks)."""
        name = name or self._new_name("seg")
        temporary = self.path / f"{name}.tmp"
        try:
            checksums = _build_segment(temporary, chain.from_iterable(source.chunks for source in sources),
                                       cancelled=cancelled,
                           documents=sum(source.documents for source in sources),
                           spots=sum(source.spots for source in sources), tau=self.tau,
                           min_containment=self.min_containment)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        os.replace(temporary, self.path / name)
        return _Segment(self.path / name, checksums, verify=False)  # hashed as it was written

    def _merge_plan(self, segments: list[_Segment]) -> _MergePlan | None:
        """The next rewrite the segments need, or None.

        A segment less than half visible (expired or deleted documents) is rewritten alone (dropped when nothing is
        visible). The segments after the last full one (``max_segment_docs`` visible, less one flush) are merged into
        one as soon as they hold ``max_segment_docs`` together, so a full segment holds about that many, never a
        fraction of it. Until then the newest of them merge while each older one is at most ``_MERGE_RATIO`` times the newer
        ones together (an LSM tree): at most two partial segments, the newest flush included (one more for each flush
        written while a background merge runs), each story rewritten about eight times in all (docs/performance.md).
        """
        visible = [segment.visible(self.window_start) for segment in segments]
        live = [int(mask.sum()) for mask in visible]
        for number, (segment, count) in enumerate(zip(segments, live)):
            if count < segment.size / 2:
                return _MergePlan(self, [segment], [visible[number]])
        full = self.max_segment_docs - self.flush_docs  # a segment written whole (bulk) is full, less its short texts
        start = max((number + 1 for number, count in enumerate(live) if count >= full), default=0)
        end = len(segments)
        if end - start >= 2 and sum(live[start:]) >= self.max_segment_docs:
            while sum(live[start:end]) > 2 * self.max_segment_docs and end - start > 2:
                end -= 1  # a flush larger than a segment (a late checkpoint): it stays a segment of its own
            return _MergePlan(self, segments[start:end], visible[start:end])
        first, together = end - 1, live[-1] if live else 0
        while first > start and live[first - 1] <= _MERGE_RATIO * together:
            first -= 1
            together += live[first]
        if first >= end - 1:
            return None
        return _MergePlan(self, segments[first:], visible[first:])

    def sync_log(self) -> tuple[str, int] | None:
        """Make the log durable (fsync): what it holds survives a power cut too, not only ``kill -9``. Returns the
        log's name and its bytes now (a caller's ``log_synced`` when it opens the index again)."""
        if self._log is None:
            return None
        self._log.flush()
        os.fsync(self._log.fileno())
        return self._log_path.name, self._log.tell()

    def close(self) -> None:
        if self._merge is not None:  # not swapped in: its files go, and the next open plans it again
            self._merge.abandon()
            self._merge = None
        if self._merge_thread is not None:
            self._merge_thread.shutdown()
        if self._log is not None:
            self._log.close()
            self._log = None
        for segment in self.segments:
            segment.close()

    # ------------------------------------------------------------------ search
    def query(self, signatures: Mapping[int, int], tau: float | None = None) -> list[tuple[int, float]]:
        """Every visible document with multiset Jaccard ``>= tau`` (default and minimum: the index's), best
        first, then by key (insertion order), as :meth:`SpotSigsIndex.query`."""
        tau = self.tau if tau is None else SpotSigsIndex._check_tau(tau)
        if tau < self.tau:
            raise ValueError(f"this index was built for tau >= {self.tau}, got {tau}")
        spots = _positive_spots(signatures)
        if sum(spots.values()) < self.min_signatures:
            return []
        hits = self._search(_Query(spots, tau, None))
        if self._delta_docs:
            hits += self._delta.query(spots, tau)
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits

    def contained(self, signatures: Mapping[int, int], *, min_containment: float, min_spots: int = 1,
                  min_ratio: float = 0.15, whole_below: float | None = None) -> list[tuple[int, float]]:
        """Every visible document containing, or contained in, the query, as :meth:`SpotSigsIndex.contained`."""
        if not self.min_containment <= min_containment <= 1.0:
            raise ValueError(f"this index was built for containment >= {self.min_containment}, got {min_containment}")
        if not 0.0 < min_ratio <= 1.0:
            raise ValueError(f"min_ratio must be in (0, 1], got {min_ratio!r}")
        spots = _positive_spots(signatures)
        length = sum(spots.values())
        min_spots = max(1, min_spots)
        if length < max(min_spots, self.min_signatures):
            return []
        hits = self._search(_Query(spots, None, min_containment, min_spots, min_ratio, whole_below))
        if self._delta_docs:
            hits += self._delta.contained(spots, min_containment=min_containment, min_spots=min_spots,
                                      min_ratio=min_ratio, whole_below=whole_below)
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits

    def _search(self, query: _Query) -> list[tuple[int, float]]:
        """The segments' hits. Each segment reads its share of ``probe_budget`` by its number of documents (a
        query reads about as many postings against ten segments as against one of their size); the filters
        then run once over all their postings, and only segments with candidates verify any."""
        total = max(1, sum(segment.size for segment in self.segments))
        parts, firsts, first = [], [], 0
        for segment in self.segments:
            found = segment.postings(query, None if self.probe_budget is None else
                                     max(1, self.probe_budget * segment.size // total))
            if found is not None:
                parts.append((first, found))
            firsts.append(first)
            first += segment.size
        if not parts:
            return []
        candidates = _candidates(parts, query)
        owner = np.searchsorted(np.array(firsts), candidates, side="right") - 1
        hits = []
        for number in np.unique(owner).tolist():
            local = candidates[owner == number] - firsts[number]
            hits += [(key, score) for key, score, _ in self.segments[number].hits(local, query, self.window_start)]
        return hits

    def jaccard(self, key: int, signatures: Mapping[int, int]) -> float | None:
        """Multiset Jaccard of ``signatures`` with the visible document ``key``; None when not stored."""
        spots = _positive_spots(signatures)
        if key in self._delta_docs:
            return self._delta.jaccard(key, spots)
        for segment in self.segments:
            local = segment.find(key)
            if segment.shows(local, self.window_start):
                query = _Query(spots, None, None)
                common = segment.overlap_of(local, query)
                return common / (query.length + int(segment.lengths[local]) - common)
        return None

    def documents(self) -> dict[int, int]:
        """Every visible document's key and time (to compare the index with a rebuild from the store)."""
        found = {key: time for key, (_, time) in self._delta_docs.items() if time >= self.window_start}
        for segment in self.segments:
            shown = segment.visible(self.window_start)
            found.update(zip(np.asarray(segment.keys)[shown].tolist(), segment.times[shown].tolist()))
        return found

    def __len__(self) -> int:
        return len(self._delta_docs) + sum(int(s.visible(self.window_start).sum()) for s in self.segments)

    def __contains__(self, key: object) -> bool:
        if key in self._delta_docs:
            return True
        if isinstance(key, bool) or not isinstance(key, int):
            return False
        for segment in self.segments:
            if segment.shows(segment.find(key), self.window_start):
                return True
        return False

    def stats(self) -> dict[str, int]:
        """Documents, segments, the delta's size and the bytes on disk."""
        on_disk = sum(child.stat().st_size for child in self.path.rglob("*") if child.is_file())
        return {"documents": len(self), "segments": len(self.segments), "delta": len(self._delta_docs),
                "bytes_on_disk": on_disk, "high_water_mark": self.high_water_mark}


def _positive_spots(signatures: Mapping[int, int]) -> dict[int, int]:
    """The spots with a positive count, checked: unsigned 64-bit spots, integer counts."""
    if not isinstance(signatures, Mapping):
        raise ValueError(f"signatures must be a mapping spot -> count, got {type(signatures).__name__}")
    if not signatures:
        return {}
    # Fast path, in C loops: plain ints in range, positive counts (what the pipeline always passes).
    if {*map(type, signatures), *map(type, signatures.values())} == {int} and min(signatures) >= 0 and \
            max(signatures) < 1 << 64 and 0 < min(signatures.values()) and max(signatures.values()) <= _MAX_U32:
        return dict(signatures)
    spots: dict[int, int] = {}
    for spot, count in signatures.items():
        if isinstance(count, bool) or not isinstance(count, int):
            raise ValueError(f"spot counts must be integers, got {count!r} for {spot!r}")
        if isinstance(spot, bool) or not isinstance(spot, int) or not 0 <= spot < 1 << 64:
            raise ValueError(f"spots must be unsigned 64-bit hashes (as the pipeline makes them), got {spot!r}")
        if count > _MAX_U32:
            raise ValueError(f"a spot count of {count} does not fit 32 bits")
        if count > 0:
            spots[int(spot)] = count
    return spots


def _check_row(row: int, high_water_mark: int) -> int:
    if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row <= _MAX_KEY:
        raise ValueError(f"keys and rows must be the store's row ids (ints >= 0), got {row!r}")
    if row <= high_water_mark:
        raise ValueError(f"row {row} is not above the high-water mark {high_water_mark}: rows come in store order")
    return row


def _check_time(time: int) -> None:
    if isinstance(time, bool) or not isinstance(time, int) or not 0 <= time <= _MAX_U32:
        raise ValueError(f"time must be whole seconds since 1970 that fit 32 bits, got {time!r}")
