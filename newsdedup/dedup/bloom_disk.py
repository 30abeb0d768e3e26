"""A Bloom filter saved beside the store: opens in a fraction of a second, catches up from the store's rows,
and expires a retention window a day at a time.

Today a crawl start rebuilds the exact filter and the URL filter from every stored row of the window
(:class:`~newsdedup.dedup.bloom.BoundedBloomFilter`, about a microsecond and more a key). This filter keeps its
bit arrays in files instead, with the store rows they cover:

Generations
    Keys are filed by the time of their row (``generation_seconds``, a day by default): each generation is a
    list of fixed-size Bloom filters (a new one when the last is full, tightened by half as
    :class:`BoundedBloomFilter` does, so a generation's rate stays under its share). :meth:`expire` drops
    whole generations older than the window: no rebuild. A key of the window's first, partly expired day
    still answers "maybe" for up to a day; every caller confirms a "maybe" against the store, which knows
    the window exactly. The rate a lookup sees is at most the sum of its generations' shares: ``error_rate``
    while the window holds at most ``generations`` generations.

Marks (the store is the truth)
    Every added key names its source (e.g. ``"articles"``) and row id there; rows of a source come in
    ascending order. :meth:`save` writes the changed bit arrays to new files, then replaces the manifest
    atomically with the last row of each source it covers and each file's checksum (:meth:`open` verifies
    them: a damaged file is never used). :meth:`open` with the store's last committed
    rows (``store_marks``) then tells the caller, in :attr:`marks`, from which row of each source to feed
    the store's rows again:

    * behind the store (rows committed after the last save, then ``kill -9``): :attr:`marks` is the saved
      mark; the caller adds the store's rows above it.
    * ahead of the store (saved, then killed before the store committed): a Bloom filter cannot remove a
      key, so every generation holding a row above the store's mark is dropped and :attr:`marks` goes back
      to just before the first row those generations held; the caller re-adds the store's rows from there
      (the latest day or two: the rows above the mark are the newest).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     seen = PersistedBloomFilter.create(folder, capacity=1000, error_rate=1e-3)
...     seen.add("https://example.com/a", time=86_400 * 3, source="articles", row=1)
...     seen.save()
...     reopened = PersistedBloomFilter.open(folder, store_marks={"articles": 1})
...     "https://example.com/a" in reopened, "https://example.com/b" in reopened, reopened.marks
(True, False, {'articles': 1})
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from newsdedup.dedup.durable import StateDamaged, digest, fsync_folder, read_manifest, write_manifest

__all__ = ["PersistedBloomFilter"]

_FORMAT = 2  # 2: each bit array's checksum in the manifest, the manifest's own in it
_MANIFEST = "MANIFEST.json"
_TIGHTENING = 0.5  # as BoundedBloomFilter: sub-filter i of a generation gets share * 0.5 ** (i + 1)
_MASK64 = (1 << 64) - 1


def _digest(key: str | bytes) -> tuple[int, int]:
    """Two 64-bit hashes of ``key`` (BLAKE2b-128): bit ``i`` of a filter is ``h1 + i * h2`` modulo its size."""
    data = key.encode() if isinstance(key, str) else bytes(key)
    value = int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "little")
    return value & _MASK64, (value >> 64) | 1


class _Bits:
    """One fixed-size Bloom filter over a byte array (``hashes`` bits a key among ``size`` bits)."""

    def __init__(self, capacity: int, error_rate: float, array: np.ndarray | None = None, count: int = 0,
                 hashes: int | None = None, size: int | None = None) -> None:
        self.capacity, self.error_rate = capacity, error_rate
        self.hashes = hashes or max(1, math.ceil(-math.log2(error_rate)))
        # Size for the optimum at ``capacity`` keys with this many hashes: p = (1 - e^(-k n / m))^k.
        self.size = size or max(64, math.ceil(-self.hashes * capacity / math.log(1 - error_rate ** (1 / self.hashes))))
        self.array = np.zeros((self.size + 7) // 8, dtype=np.uint8) if array is None else array
        self.bytes = memoryview(self.array)  # single bits: a memoryview's items are plain ints, 5x numpy's speed
        self.count = count
        self.dirty = array is None
        self.file: str | None = None
        self.checksum: str | None = None  # of the file's bytes, as the manifest records it

    def positions(self, h1: int, h2: int) -> list[int]:
        return [(h1 + i * h2) % self.size for i in range(self.hashes)]

    def __contains__(self, digest: tuple[int, int]) -> bool:
        data, size, (h1, h2) = self.bytes, self.size, digest
        for i in range(self.hashes):  # most absent keys stop at the first or second bit
            p = (h1 + i * h2) % size
            if not data[p >> 3] >> (p & 7) & 1:
                return False
        return True

    def add(self, digest: tuple[int, int]) -> None:
        data = self.bytes
        for p in self.positions(*digest):
            data[p >> 3] |= 1 << (p & 7)
        self.count += 1
        self.dirty = True

    def add_many(self, h1: np.ndarray, h2: np.ndarray) -> None:
        """Vectorized :meth:`add` of many digests (uint64 arrays)."""
        size = np.uint64(self.size)
        with np.errstate(over="ignore"):
            for i in range(self.hashes):
                # (h1 + i h2) mod size in 64-bit arithmetic wraps where Python's integers do not: reduce first.
                p = (h1 % size + (np.uint64(i) * (h2 % size)) % size) % size
                np.bitwise_or.at(self.array, (p >> np.uint64(3)).astype(np.int64),
                                 (np.uint8(1) << (p & np.uint64(7)).astype(np.uint8)))
        self.count += len(h1)
        self.dirty = True

    @property
    def full(self) -> bool:
        return self.count >= self.capacity


@dataclass
class _Generation:
    start: int  # the generation's number: time // generation_seconds
    filters: list[_Bits] = field(default_factory=list)
    rows: dict[str, list[int]] = field(default_factory=dict)  # source -> [first row, last row] held


class PersistedBloomFilter:
    """A Bloom filter in generations, saved to a folder (see the module docstring).

    ``capacity``: keys a generation's first filter holds (a generation's expected keys: a day's articles);
    ``error_rate``: the false-positive rate of a lookup while at most ``generations`` generations are kept.
    """

    def __init__(self, path: str | Path, *, capacity: int, error_rate: float, generations: int,
                 generation_seconds: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity!r}")
        if not 0.0 < error_rate < 1.0:
            raise ValueError(f"error_rate must be between 0 and 1 (exclusive), got {error_rate!r}")
        if generations < 1 or generation_seconds < 1:
            raise ValueError(f"generations and generation_seconds must be >= 1, got {generations!r} and "
                             f"{generation_seconds!r}")
        self.path = Path(path)
        self.capacity, self.error_rate = int(capacity), float(error_rate)
        self.generations, self.generation_seconds = int(generations), int(generation_seconds)
        self._generations: dict[int, _Generation] = {}
        self.marks: dict[str, int] = {}
        self.window_start = 0
        self._version = 0

    # ------------------------------------------------------------------ creating and opening
    @classmethod
    def create(cls, path: str | Path, *, capacity: int, error_rate: float, generations: int = 31,
               generation_seconds: int = 86_400) -> PersistedBloomFilter:
        """A new, empty filter in ``path`` (an existing one there is replaced at the first :meth:`save`)."""
        bloom = cls(path, capacity=capacity, error_rate=error_rate, generations=generations,
                    generation_seconds=generation_seconds)
        bloom.path.mkdir(parents=True, exist_ok=True)
        return bloom

    @classmethod
    def open(cls, path: str | Path, *, store_marks: Mapping[str, int] | None = None) -> PersistedBloomFilter:
        """The filter saved in ``path``, rolled back to ``store_marks`` (each source's last committed row;
        None: trust the filter). Raises FileNotFoundError when nothing was saved there (build it from the
        store with :meth:`create`), :class:`~newsdedup.dedup.durable.StateDamaged` naming a file that is missing
        or whose bytes are not those saved (its checksum), ValueError for a filter saved otherwise."""
        path = Path(path)
        manifest = read_manifest(path / _MANIFEST)
        if manifest.get("format") != _FORMAT:
            raise ValueError(f"{path}: Bloom filter format {manifest.get('format')} is not {_FORMAT}: delete the "
                             f"folder to rebuild it from the store")
        bloom = cls(path, capacity=manifest["capacity"], error_rate=manifest["error_rate"],
                    generations=manifest["generations"], generation_seconds=manifest["generation_seconds"])
        bloom.marks = {source: int(row) for source, row in manifest["marks"].items()}
        bloom.window_start = manifest["window_start"]
        bloom._version = manifest["version"]
        for saved in manifest["generation_list"]:
            generation = _Generation(saved["start"], rows={s: list(r) for s, r in saved["rows"].items()})
            for part in saved["filters"]:
                try:
                    array = np.fromfile(path / part["file"], dtype=np.uint8)
                except FileNotFoundError:
                    raise StateDamaged(path / part["file"], "missing (deleted?)") from None
                if digest(array) != part.get("checksum"):  # hashed as read: the bytes used are the bytes checked
                    raise StateDamaged(path / part["file"], f"checksum mismatch (written over, cut or zeroed: "
                                                            f"{len(array)} bytes)")
                bits = _Bits(part["capacity"], part["error_rate"], array, part["count"], part["hashes"],
                             part["size"])
                if len(array) != (bits.size + 7) // 8:
                    raise ValueError(f"{path / part['file']}: {len(array)} bytes, expected {(bits.size + 7) // 8}: "
                                     f"delete the folder to rebuild it from the store")
                bits.file, bits.checksum = part["file"], part["checksum"]
                generation.filters.append(bits)
            bloom._generations[generation.start] = generation
        if store_marks is not None:
            bloom._roll_back(store_marks)
        return bloom

    def _roll_back(self, store_marks: Mapping[str, int]) -> None:
        """Drop every generation holding a row the store does not have; set each mark where to catch up from."""
        marks = {source: min(row, int(store_marks.get(source, -1))) for source, row in self.marks.items()}
        for start, generation in list(self._generations.items()):
            ahead = any(last > int(store_marks.get(source, -1)) for source, (_, last) in generation.rows.items())
            if ahead:
                for source, (first, _) in generation.rows.items():
                    marks[source] = min(marks.get(source, first - 1), first - 1)
                del self._generations[start]
        self.marks = marks

    # ------------------------------------------------------------------ keys
    def _generation_of(self, time: int) -> _Generation:
        start = int(time) // self.generation_seconds
        generation = self._generations.get(start)
        if generation is None:
            generation = self._generations[start] = _Generation(start)
        if not generation.filters or generation.filters[-1].full:
            share = self.error_rate / self.generations
            rate = share * _TIGHTENING ** (len(generation.filters) + 1)
            generation.filters.append(_Bits(self.capacity * 2 ** len(generation.filters), rate))
        return generation

    def _note_row(self, generation: _Generation, source: str, first: int, last: int) -> None:
        if not isinstance(source, str) or not source:
            raise ValueError(f"source must be a non-empty string naming the store's table, got {source!r}")
        mark = self.marks.get(source, -1)
        if first <= mark or last < first:
            raise ValueError(f"{source} row {first} is not above the mark {mark}: rows come in store order")
        held = generation.rows.setdefault(source, [first, last])
        held[1] = max(held[1], last)
        self.marks[source] = last

    def add(self, key: str | bytes, *, time: int, source: str, row: int) -> None:
        """File ``key`` (a URL, a content digest) of store row ``row`` of ``source``, fetched at ``time`` (s)."""
        row = _check_int("row", row)
        generation = self._generation_of(_check_int("time", time))
        self._note_row(generation, source, row, row)
        generation.filters[-1].add(_digest(key))

    def add_many(self, keys: Iterable[str | bytes], *, time: int, source: str, first_row: int) -> int:
        """:meth:`add` of consecutive rows ``first_row, first_row + 1, ...`` of one generation's time (a first
        build or a catch-up in batches); returns how many keys were added."""
        first_row = _check_int("first_row", first_row)
        generation = self._generation_of(_check_int("time", time))
        digests = [_digest(key) for key in keys]
        if not digests:
            return 0
        self._note_row(generation, source, first_row, first_row + len(digests) - 1)
        self._fill(time, digests)
        return len(digests)

    def _fill(self, time: int, digests: list[tuple[int, int]]) -> None:
        """Set the bits of ``digests`` in the generation of ``time``, a new filter each time one is full."""
        h1 = np.fromiter((d[0] for d in digests), dtype=np.uint64, count=len(digests))
        h2 = np.fromiter((d[1] for d in digests), dtype=np.uint64, count=len(digests))
        done = 0
        while done < len(digests):
            bits = self._generation_of(time).filters[-1]
            take = min(len(digests) - done, max(1, bits.capacity - bits.count))
            bits.add_many(h1[done: done + take], h2[done: done + take])
            done += take

    def add_rows(self, keys: list[str | bytes], rows: list[int], times: list[int], *, source: str,
                 again: bool = False) -> int:
        """Key ``i`` of store row ``rows[i]`` of ``source`` at ``times[i]``, for many keys of any times at once (a
        first build, a catch-up): rows ascending above the mark. ``again``: keys the filter holds already, filed
        anew in the generation of a later time (a story that got a new copy keeps its keys as long as it stays in
        the window) under the rows that caused it, which may be at or below the mark: a rollback past such a row
        drops the generation, and the caller's catch-up from before it files the keys again."""
        if not len(keys) == len(rows) == len(times):
            raise ValueError("need one row and one time a key")
        if not keys:
            return 0
        rows = [_check_int("row", row) for row in rows]
        if any(later < earlier for earlier, later in zip(rows, rows[1:])):
            raise ValueError(f"{source} rows must ascend: rows come in store order")
        mark = self.marks.get(source, -1)
        if rows[0] <= mark and not again:
            raise ValueError(f"{source} row {rows[0]} is not above the mark {mark}: rows come in store order")
        by_generation: dict[int, list[int]] = {}
        for i, time in enumerate(times):
            by_generation.setdefault(_check_int("time", time) // self.generation_seconds, []).append(i)
        for chosen in by_generation.values():
            time = times[chosen[0]]
            generation = self._generation_of(time)
            held = generation.rows.setdefault(source, [rows[chosen[0]], rows[chosen[-1]]])
            held[0], held[1] = min(held[0], rows[chosen[0]]), max(held[1], rows[chosen[-1]])
            self._fill(time, [_digest(keys[i]) for i in chosen])
        self.marks[source] = max(mark, rows[-1])
        return len(keys)

    def __contains__(self, key: str | bytes) -> bool:
        digest = _digest(key)
        return any(digest in bits for generation in self._generations.values() for bits in generation.filters)

    def expire(self, before: int) -> int:
        """Drop the generations wholly before ``before`` (the window's start, seconds); returns how many."""
        self.window_start = max(self.window_start, int(before))
        old = [start for start in self._generations if (start + 1) * self.generation_seconds <= self.window_start]
        for start in old:
            del self._generations[start]
        return len(old)

    # ------------------------------------------------------------------ saving
    def save(self) -> None:
        """Write the changed bit arrays to new files, then the manifest (atomically) with :attr:`marks`.

        Call it when the store has committed the rows added so far: a state saved ahead of the store is
        rolled back at the next :meth:`open` by dropping generations, which costs a re-read of their rows.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        self._version += 1
        for generation in self._generations.values():
            for number, bits in enumerate(generation.filters):
                if bits.dirty or bits.file is None:
                    name = f"g{generation.start}-{number}-v{self._version}.bits"
                    with open(self.path / name, "wb") as handle:
                        bits.array.tofile(handle)
                        handle.flush()
                        os.fsync(handle.fileno())
                    # The bytes just written, hashed from memory; the manifest written next records it.
                    bits.file, bits.checksum, bits.dirty = name, digest(bits.array), False
        manifest = {
            "format": _FORMAT, "capacity": self.capacity, "error_rate": self.error_rate,
            "generations": self.generations, "generation_seconds": self.generation_seconds,
            "marks": self.marks, "window_start": self.window_start, "version": self._version,
            "generation_list": [
                {"start": g.start, "rows": g.rows,
                 "filters": [{"file": b.file, "checksum": b.checksum, "capacity": b.capacity,
                              "error_rate": b.error_rate, "hashes": b.hashes, "size": b.size, "count": b.count}
                             for b in g.filters]}
                for g in sorted(self._generations.values(), key=lambda g: g.start)],
        }
        write_manifest(self.path / _MANIFEST, manifest)
        fsync_folder(self.path)
        referenced = {b.file for g in self._generations.values() for b in g.filters} | {_MANIFEST}
        for child in self.path.iterdir():  # older versions and files of an interrupted save
            if child.name not in referenced:
                child.unlink()

    # ------------------------------------------------------------------ figures
    @property
    def size_bytes(self) -> int:
        """Bytes of bit arrays held in memory."""
        return sum(len(b.array) for g in self._generations.values() for b in g.filters)

    def __len__(self) -> int:
        """Keys added to the generations still kept (a key added twice counts twice)."""
        return sum(b.count for g in self._generations.values() for b in g.filters)


def _check_int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return value
