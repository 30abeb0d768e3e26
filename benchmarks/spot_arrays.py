"""Synthetic spot multisets in flat numpy arrays, millions at a time: ``index_scaling.SpotDocuments``'s
distribution without a Python object a spot (that generator makes ~5,000 documents a second: 10,000,000
would take over half an hour before any index is built).

The same draws, vectorized: lognormal lengths (median 81 occurrences, sigma 0.86, 4 to 5,000); each occurrence
repeats an earlier one of the same document (10%, not the first), is a one-off 64-bit value (15%), or a spot
of the same piecewise Zipf vocabulary of 150,000 values (exponents 0.37 / 0.6 / 0.9 at ranks 1 / 100 / 1,000;
the very values ``SpotDocuments`` uses); 5% of documents are near-copies: an earlier document of the same
chunk with 10-30% of its occurrences replaced by fresh ones (``SpotDocuments`` draws the original from all
earlier documents; within a chunk of a million it is the same shape). ``python benchmarks/spot_arrays.py``
prints both generators' statistics side by side.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_scaling import SpotDocuments, spot_statistics  # noqa: E402


@dataclass
class SpotChunk:
    """Documents as flat arrays: document ``i``'s distinct spots (ascending) and their counts are
    ``spots[offsets[i]:offsets[i + 1]]`` and ``counts[...]``."""

    offsets: np.ndarray
    spots: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def doc(self, i: int) -> dict[int, int]:
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return dict(zip(self.spots[start:end].tolist(), self.counts[start:end].tolist()))


class SpotArrays:
    """``chunk(c, n)``: documents ``c * n .. (c + 1) * n - 1``, the same on every call."""

    REPEAT, ONE_OFF, COPIES = 0.10, 0.25, 0.05

    def __init__(self, seed: int = 2018) -> None:
        self.seed = seed
        reference = SpotDocuments(seed)
        self.values = np.array(reference._values, dtype=np.uint64)
        self.cumulative = np.array(reference._cumulative)
        edges, exponents = reference.EDGES, reference.EXPONENTS
        self.lo = np.array([edges[k] ** (1 - s) for k, s in enumerate(exponents)])
        self.hi = np.array([edges[k + 1] ** (1 - s) for k, s in enumerate(exponents)])
        self.inverse = np.array([1 / (1 - s) for s in exponents])

    def _occurrences(self, rng: np.random.Generator, lengths: np.ndarray) -> np.ndarray:
        """Each document's occurrences (before counting), concatenated."""
        total = int(lengths.sum())
        starts = np.cumsum(lengths) - lengths
        position = np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)
        roll = rng.random(total)
        repeat = (roll < self.REPEAT) & (position > 0)
        one_off = (roll < self.ONE_OFF) & ~repeat
        k = np.minimum(np.searchsorted(self.cumulative, rng.random(total)), len(self.lo) - 1)
        rank = ((rng.random(total) * (self.hi[k] - self.lo[k]) + self.lo[k]) ** self.inverse[k]).astype(np.int64)
        values = self.values[np.minimum(rank, len(self.values) - 1)]
        values[one_off] = rng.integers(0, np.iinfo(np.uint64).max, size=int(one_off.sum()), dtype=np.uint64,
                                       endpoint=True)
        # A repeat copies a uniformly chosen earlier occurrence of its document, itself maybe a repeat:
        # resolve the chains from their start (references always point backwards).
        where = np.flatnonzero(repeat)
        source = np.repeat(starts, lengths)[where] + (rng.random(len(where)) * position[where]).astype(np.int64)
        pending = np.ones(len(where), dtype=bool)
        while pending.any():
            ready = pending & ~repeat[source]
            values[where[ready]] = values[source[ready]]
            repeat[where[ready]] = False
            pending &= ~ready
        return values

    def chunk(self, c: int, n: int) -> SpotChunk:
        rng = np.random.default_rng([self.seed, c])
        lengths = np.clip(rng.lognormal(np.log(81), 0.86, n).astype(np.int64), 4, 5000)
        occurrences = self._occurrences(rng, lengths)
        bounds = np.append(0, np.cumsum(lengths))
        docs = [occurrences[bounds[i]:bounds[i + 1]] for i in range(n)]
        # Near-copies: an earlier document of the chunk, shuffled, 10-30% of it replaced by the copy's own draws.
        for i in np.flatnonzero(rng.random(n) < self.COPIES):
            if i == 0:
                continue
            original = rng.permutation(docs[rng.integers(i)])
            replaced = int(len(original) * rng.uniform(0.1, 0.3))
            docs[i] = np.concatenate([original[replaced:], docs[i][:replaced]])
        return _count(docs)


def _count(docs: list[np.ndarray]) -> SpotChunk:
    """Occurrence lists to multisets: distinct ascending spots and their counts per document."""
    lengths = np.array([len(doc) for doc in docs], dtype=np.int64)
    values = np.concatenate(docs)
    # One sort of a packed (document, rank of the value) key instead of a lexsort: ranks keep the values' order.
    distinct, rank = np.unique(values, return_inverse=True)
    key = np.repeat(np.arange(len(docs), dtype=np.uint64), lengths) << np.uint64(32) | rank.astype(np.uint64)
    key.sort()
    owner = (key >> np.uint64(32)).astype(np.int64)
    values = distinct[(key & np.uint64(0xFFFFFFFF)).astype(np.int64)]
    new = np.concatenate(([True], key[1:] != key[:-1]))
    firsts = np.flatnonzero(new)
    counts = np.diff(np.append(firsts, len(values))).astype(np.uint32)
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner[firsts], minlength=len(docs)), out=offsets[1:])
    return SpotChunk(offsets, values[firsts], counts)


def main() -> None:
    from collections import Counter

    n = 9054  # as many as the real Sina texts index_scaling.py calibrates against
    chunk = SpotArrays().chunk(0, n)
    arrays = [Counter(chunk.doc(i)) for i in range(n)]
    reference = SpotDocuments()
    print("SpotDocuments:", json.dumps(spot_statistics([reference.doc(i) for i in range(n)])))
    print("SpotArrays:   ", json.dumps(spot_statistics(arrays)))


if __name__ == "__main__":
    main()
