"""Passage reuse: which stored stories a new text quotes or repeats a passage of, and where (issue 26).

A reuse is a relation of its own, beside the near-duplicate one: a commentary quoting three paragraphs of a
report, a roundup stitched from several reports, a follow-up repeating yesterday's background.  Whole-text
similarity is low there (Jaccard 0.05-0.35), so the near-duplicate stages rightly keep both stories; this module
says which passages they share.  The pipeline decides near duplicates first; a page that is not a near duplicate
of a story may still reuse a passage of it.

How (the text-reuse recipe of passim and of MOSS, Schleimer, Wilkerson and Aiken, SIGMOD 2003):

1. *Seeds.* A text is normalised as the exact stage does (:func:`~newsdedup.text.normalize.exact_form_with_offsets`:
   NFKC, no whitespace, each character's raw offset kept).  Every character ``k``-gram is hashed, and winnowing
   keeps the minimum hash of each window of ``w`` consecutive k-grams (the rightmost on a tie), once per run:
   about ``2 / (w + 1)`` of the positions.  Two texts sharing a passage of ``w + k - 1`` characters or more
   share at least one kept fingerprint, whatever surrounds it.
2. *Index.* Fingerprint -> (story, position) postings of the stories within the retention window, held in
   sorted ``numpy`` arrays (16 bytes a posting: no Python object per posting), a log-structured set of
   segments that merge as they grow; a removed story's postings are dropped at the next merge.  A fingerprint
   that more than ``max_sources`` stored stories hold is page boilerplate (a footer, a disclaimer) and seeds
   nothing.
3. *Passages.* The seeds a new text shares with one story are chained along their offset diagonal (a few
   characters of drift and gaps of up to ``max_gap`` tolerated: a word changed, a clause cut); each chain of
   ``min_seeds`` or more is read in both texts: each seed is extended both ways while the characters agree
   (an exact block, its ends where the shared text ends), and the blocks of ``min_block`` characters or more
   that follow each other in both texts, across gaps of up to ``max_gap``, are one passage.  So a reported
   passage is text the two really share, found in time linear in its length (an alignment of the spans with
   :class:`difflib.SequenceMatcher`, tried first, is quadratic in the worst case and was a third of the query time).
4. *The bar* (:func:`qualify`).  The issue asks for "at least two sentences or 80 characters".  Characters,
   because a sentence count depends on how a page punctuates (figures, quotes, list items) and 80 characters
   is the labels' own bar; and per passage as well as in all: a passage counts when it holds ``min_passage``
   aligned characters or more (60: two sentences of news Chinese; shorter shared clauses are figures and set
   phrases that independent reports of one event share), and a source is reported when its passages hold
   ``min_chars`` (80) or more and are at least ``min_fraction`` (8%) of one of the two texts: what tells a
   quote from a form (admission brochures sharing mandated wording clause by clause, a few percent of each).
   A fingerprint held by more than ``max_sources`` (16) stories seeds nothing (a portal's footer or disclaimer,
   held by hundreds; an outlet's stock lead for ten reports of one forum still counts).  All four are chosen
   on the tune half of the labelled real pairs (:mod:`newsdedup.evaluation.reuse_scores`).  Passages that are
   mostly not Chinese (``min_cjk``: a page's script or style sheet read as text) do not count.
5. *Who quotes whom* (issue 34).  The story published first is the quoted one: each story's publication time is
   indexed with it, and a record whose stored story was published after the new text says so
   (:attr:`Reuse.direction` ``quoted_by``); unknown or equal times leave the arrival order (:attr:`Reuse.basis`).
6. *A site's boilerplate* (issue 34).  A passage the new text shares with a story of its own site (``group``) that
   opens or closes both texts and speaks of neither headline, or without headlines closes both and is held by
   ``group_sources`` more of the site's stories, is the site's template (a disclaimer, an editor's note), not a
   relation, long before ``max_sources`` stories hold it (:meth:`ReuseIndex._site_boilerplate`).

>>> report = ("国家统计局今天发布数据，十月份居民消费价格同比上涨百分之二点五，涨幅比上月回落零点一个百分点。"
...           "其中食品价格上涨百分之三点三，非食品价格上涨百分之二点三。专家认为物价总体平稳。")
>>> index = ReuseIndex()
>>> index.add("report", report, when=1_000.0)
True
>>> comment = "评论：物价走势如何看？" + report + "这意味着通胀压力可控，货币政策不必因此收紧。"
>>> [(r.source, r.chars, [(p.start, p.length, p.source_start, p.source_length) for p in r.passages])
...  for r in index.find(comment)]
[('report', 87, [(11, 87, 0, 87)])]
>>> index.find("今天天气晴朗，适合出门散步。") == []
True
>>> index.expire(before=2_000.0), len(index)
(1, 0)
"""

from __future__ import annotations

import math
import secrets
import zipfile
from bisect import bisect_left, bisect_right
import re
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from os.path import commonprefix
from pathlib import Path
from typing import NamedTuple

import numpy as np

from newsdedup.dedup.durable import StateDamaged, fsync_folder, read_manifest, verify_file, write_durably, write_manifest
from newsdedup.text.normalize import exact_form_with_offsets

__all__ = ["ARRIVAL", "PUBLISHED", "QUOTED_BY", "QUOTES", "Passage", "Reuse", "ReuseIndex", "ReuseTracker",
           "SnapshotDamaged", "SnapshotError", "qualify", "winnow"]

#: Defaults, chosen on the tune half of the labelled real pairs (``python -m newsdedup.evaluation.reuse_scores``).
K = 8
W = 16
MIN_CHARS = 80
MIN_PASSAGE = 60
MIN_FRACTION = 0.08
MAX_SOURCES = 16
#: A passage at the edge of both texts (see :data:`EDGE`) made of fingerprints that this many other stored stories of
#: the new text's own site (or series: its ``group``) hold is that site's boilerplate, however few stories hold it in
#: all: with the new text, three pages of one site carry it, the site template's own bar
#: (:data:`newsdedup.extract.template.MIN_PAGES`).
GROUP_SOURCES = 2
#: Texts an index keeps read (normalised, with offsets and fingerprints) for their next lookup or indexing: a crawl's
#: pages in flight between its passage-reuse and store stages, with room to spare (~70 KB a news article).
RECENT_TEXTS = 64
#: A site's boilerplate stands where a template puts it: it opens or closes the text (an editor's note, a risk
#: disclaimer, an authorisation line), within this many characters of the text's start or end (or this share of
#: its length). A same-site passage in the middle of either text (a follow-up repeating yesterday's background, a
#: statement two reports quote) is never taken for boilerplate.
EDGE = 20
EDGE_SHARE = 0.05

#: How a reuse record's direction was decided (:attr:`Reuse.basis`): by the two stories' publication times, or (a
#: time unknown, or both the same) by the order they arrived in.
PUBLISHED = "published"
ARRIVAL = "arrival"
#: :attr:`Reuse.direction`: the new text quotes the stored story, or the stored story (published later) quotes it.
QUOTES = "quotes"
QUOTED_BY = "quoted_by"

#: The saved index's layout (:meth:`ReuseIndex.save`); a change of it, or of how :func:`winnow` hashes, bumps it.
SNAPSHOT_FORMAT = 3  # 2: each file's checksum in the meta file, the meta file's own in it; 3: per-story publication times and groups
_META = "meta.json"
_SEGMENT_ARRAYS = {"keys": np.uint64, "seqs": np.uint32, "positions": np.uint32}
_STORY_ARRAYS = ("ids", "alive", "when", "counts", "published", "groups")

_U64 = np.uint64
_BASE = _U64(0x100000001B3)  # FNV prime: the polynomial base of the k-gram hash
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _mix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, vectorised: the polynomial hash's bits spread so that minima are random."""
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> _U64(33))


def winnow(form: str, k: int = K, w: int = W) -> tuple[np.ndarray, np.ndarray]:
    """The winnowed fingerprints of a normalised string: ``(hashes, positions)`` (``uint64``, ``int64``).

    Each ``k``-gram of characters is hashed (a polynomial over its code points, then mixed; hashing in
    ``numpy`` costs ~0.1 ms for a 2,000-character text where a call per k-gram would cost ~1 ms); of each
    window of ``w`` consecutive k-gram hashes the minimum is kept, the rightmost on a tie, and recorded once
    however many windows select it.  A text of fewer than ``w`` k-grams keeps its minimum; one shorter than
    ``k`` keeps nothing.

    >>> hashes, positions = winnow("甲乙丙丁戊己庚辛壬癸" * 3, k=4, w=4)
    >>> positions.tolist() == sorted(set(positions.tolist())) and len(hashes) == len(positions)
    True
    >>> a, _ = winnow("前文不同。" + "共有的一段文字在这里出现了两次。", k=4, w=4)
    >>> b, _ = winnow("共有的一段文字在这里出现了两次。" + "后文也不同", k=4, w=4)
    >>> bool(set(a.tolist()) & set(b.tolist()))  # a shared run of w + k - 1 = 7 characters shares a seed
    True
    """
    if k < 1 or w < 1:
        raise ValueError(f"winnow: k and w must be >= 1, got k={k}, w={w}")
    codes = np.frombuffer(form.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(_U64)
    grams = len(codes) - k + 1
    if grams <= 0:
        return np.empty(0, _U64), np.empty(0, np.int64)
    h = np.zeros(grams, _U64)
    for j in range(k):
        h = h * _BASE + codes[j : j + grams]
    h = _mix(h)
    if grams <= w:
        at = np.array([grams - 1 - int(np.argmin(h[::-1]))])
    else:
        windows = np.lib.stride_tricks.sliding_window_view(h, w)
        # argmin gives the first minimum; over the reversed window that is the rightmost one.
        at = np.arange(grams - w + 1) + (w - 1 - np.argmin(windows[:, ::-1], axis=1))
        at = at[np.concatenate(([True], at[1:] != at[:-1]))]
    return h[at], at.astype(np.int64)


@dataclass(frozen=True)
class Passage:
    """One shared passage: ``length`` raw characters at ``start`` of the new text, ``source_length`` at
    ``source_start`` of the source, and the ``chars`` (non-whitespace) characters aligned between them."""

    start: int
    length: int
    source_start: int
    source_length: int
    chars: int

    def quoted(self, text: str) -> str:
        """The passage as the new text has it (``text``: the new text, raw, as the offsets count)."""
        return text[self.start : self.start + self.length]

    def quoting(self, source_text: str) -> str:
        """The passage as the source has it."""
        return source_text[self.source_start : self.source_start + self.source_length]


@dataclass(frozen=True)
class Reuse:
    """What a new text reuses of one stored story: its passages (in the new text's order), the aligned
    characters they hold in all, and the fraction of each text's non-whitespace characters that is."""

    source: Hashable  # the stored story's id, as it was indexed
    passages: tuple[Passage, ...]
    chars: int
    fraction: float
    source_fraction: float
    text_chars: int  # the new text's non-whitespace characters
    source_chars: int  # the source's
    #: QUOTES: the new text quotes the stored story (published after it, or, times unknown, arriving after it);
    #: QUOTED_BY: the stored story quotes the new text, which was published first though it arrived later.
    direction: str = QUOTES
    basis: str = ARRIVAL  # PUBLISHED: the publication times decided the direction; ARRIVAL: the arrival order did

    def as_record(self) -> dict:
        """JSON-ready, one relation: what a store keeps of it (see :class:`ReuseTracker` for the table)."""
        return {"source": self.source, "chars": self.chars, "fraction": self.fraction,
                "source_fraction": self.source_fraction, "text_chars": self.text_chars,
                "source_chars": self.source_chars, "passages": [asdict(p) for p in self.passages],
                "direction": self.direction, "basis": self.basis}

    @classmethod
    def from_record(cls, record: Mapping) -> Reuse:
        """The record :meth:`as_record` wrote (read back from a store or an export)."""
        return cls(record["source"], tuple(Passage(**p) for p in record["passages"]), record["chars"],
                   record["fraction"], record["source_fraction"], record["text_chars"], record["source_chars"],
                   record.get("direction", QUOTES), record.get("basis", ARRIVAL))

    def quoting_view(self) -> tuple[tuple[Passage, ...], float, float]:
        """The passages and the two fractions as the quoting story sees them: offsets into the quoting text first,
        its fraction first (the stored form of a relation, whichever of the two texts arrived first)."""
        if self.direction == QUOTES:
            return self.passages, self.fraction, self.source_fraction
        flipped = tuple(sorted((Passage(p.source_start, p.source_length, p.start, p.length, p.chars)
                                for p in self.passages), key=lambda p: (p.start, p.source_start)))
        return flipped, self.source_fraction, self.fraction


class _Offsets:
    """Each normalised character's raw offset, compactly: the offset minus the index changes only where the
    normalisation dropped whitespace or expanded a character, so only those points are kept (a few per text,
    where a list of ints would take 36 bytes a character)."""

    __slots__ = ("_starts", "_shifts")

    def __init__(self, offsets: Sequence[int]) -> None:
        shift = np.asarray(offsets, np.int64) - np.arange(len(offsets))
        changes = np.flatnonzero(np.diff(shift)) + 1
        self._starts = np.concatenate(([0], changes)).tolist()
        self._shifts = shift[self._starts].tolist() if len(shift) else [0]

    def __getitem__(self, i: int) -> int:
        return i + self._shifts[bisect_right(self._starts, i) - 1]


class _About(NamedTuple):
    """What a caller says of a story besides its text: its publication time, its site (group) and headline."""

    published: datetime | float | str | None = None
    group: Hashable | None = None
    title: str | None = None


class _Prepared(NamedTuple):
    """A text read once for both a lookup and its indexing."""

    form: str  # the normalised text
    offsets: list[int]  # each of its characters' raw offset
    hashes: np.ndarray  # the winnowed fingerprints
    positions: np.ndarray  # where they are in the normalised text
    text: str = ""  # the raw text (what passages' offsets index)


def _linked(seqs: np.ndarray, q: np.ndarray, s: np.ndarray, *, reach: int, drift: int, steps: int = 16
            ) -> np.ndarray:
    """Which seeds (sorted by story, then query position) have another seed of the same story at most ``reach``
    characters before or after them in the new text, on a diagonal within ``drift``: only those can be in a
    chain (:meth:`ReuseIndex._chains`).  Vectorised: most shared fingerprints are scattered common phrases, and
    dropping them here spares the Python loop over them.  A seed whose neighbourhood holds more than ``steps``
    seeds is kept unchecked (a necessary condition only, never a loss)."""
    n = len(q)
    linked = np.zeros(n, bool)
    diagonal = s - q
    for m in range(1, min(steps, n - 1) + 1):
        gap = q[m:] - q[:-m]
        within = (seqs[m:] == seqs[:-m]) & (gap <= reach)
        if not within.any():
            break
        near = within & (gap > 0) & (np.abs(diagonal[m:] - diagonal[:-m]) <= drift)
        linked[m:] |= near
        linked[:-m] |= near
    else:
        if n - 1 > steps:  # neighbourhoods not scanned to their end: keep their seeds
            m = steps
            crowded = (seqs[m:] == seqs[:-m]) & (q[m:] - q[:-m] <= reach)
            linked[m:] |= crowded
            linked[:-m] |= crowded
    return linked


class _StoryIds:
    """Story id <-> sequence number (a story's row in the per-story arrays and the postings).

    Stories added in this process are a dict; the stories of an opened snapshot (:meth:`ReuseIndex.open`) are
    integer ids in one ``int64`` array looked up by bisection (a dict of a million ints would take ~100 MB
    and a second to build at every start)."""

    __slots__ = ("_base", "_base_sorted", "_base_order", "_base_live", "_base_count", "_seq_of", "_later")

    def __init__(self, base: np.ndarray | None = None, live: np.ndarray | None = None) -> None:
        self._base = np.empty(0, np.int64) if base is None else base
        self._base_order = np.argsort(self._base, kind="stable")
        self._base_sorted = self._base[self._base_order]
        self._base_live = np.ones(len(self._base), bool) if live is None else live[: len(self._base)].copy()
        self._base_count = int(self._base_live.sum())
        self._seq_of: dict[Hashable, int] = {}
        self._later: list[Hashable | None] = []  # ids of the sequence numbers after the base's

    def __len__(self) -> int:
        return self._base_count + len(self._seq_of)

    def __contains__(self, story_id: object) -> bool:
        return self.get(story_id) is not None

    def _base_seq(self, story_id: object) -> int | None:
        if not len(self._base) or not isinstance(story_id, (int, np.integer)) or isinstance(story_id, bool):
            return None
        at = int(np.searchsorted(self._base_sorted, story_id))
        if at < len(self._base_sorted) and self._base_sorted[at] == story_id:
            seq = int(self._base_order[at])
            return seq if self._base_live[seq] else None
        return None

    def get(self, story_id: object) -> int | None:
        seq = self._seq_of.get(story_id)  # type: ignore[arg-type]
        return seq if seq is not None else self._base_seq(story_id)

    def add(self, story_id: Hashable) -> int:
        seq = len(self._base) + len(self._later)
        self._later.append(story_id)
        self._seq_of[story_id] = seq
        return seq

    def pop(self, story_id: Hashable) -> int | None:
        seq = self._seq_of.pop(story_id, None)
        if seq is not None:
            self._later[seq - len(self._base)] = None
            return seq
        seq = self._base_seq(story_id)
        if seq is not None:
            self._base_live[seq] = False
            self._base_count -= 1
        return seq

    def id_of(self, seq: int) -> Hashable | None:
        if seq < len(self._base):
            return int(self._base[seq]) if self._base_live[seq] else None
        return self._later[seq - len(self._base)]

    @property
    def count(self) -> int:
        """Sequence numbers given out (removed stories' included)."""
        return len(self._base) + len(self._later)

    def as_array(self) -> np.ndarray:
        """Every sequence number's id as ``int64`` (a removed story's: -1); ValueError when an id is no integer."""
        return self.frozen()()

    def frozen(self) -> Callable[[], np.ndarray]:
        """:meth:`as_array` in two steps: this one quick (the base's ids, a copy of the list of the later ones), then
        the function it returns, which may run in another thread (the later ids' conversion is a Python loop:
        0.4 s for a million stories added in this process)."""
        base = np.where(self._base_live, self._base, -1)
        later = list(self._later)

        def as_array() -> np.ndarray:
            ids = [-1 if i is None else i for i in later]
            if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
                raise ValueError("ReuseIndex.save: story ids must be integers (a store's article ids)")
            return np.concatenate((base, np.array(ids, np.int64)))

        return as_array


class SnapshotError(Exception):
    """A saved index that cannot be opened as it is (none there, unreadable, saved with other parameters): the
    caller rebuilds the index instead."""


class SnapshotDamaged(SnapshotError):
    """A file of a saved index is missing or is not what was saved (its checksum): :attr:`path` names it."""

    def __init__(self, damaged: StateDamaged) -> None:
        self.path = damaged.path
        super().__init__(str(damaged))


@dataclass
class _Segment:
    keys: np.ndarray  # uint64, sorted
    seqs: np.ndarray  # uint32: the story's sequence number
    positions: np.ndarray  # uint32: the fingerprint's position in the story's normalised text
    file: str | None = None  # the saved segment's file name stem (its arrays memory-mapped), None while in RAM only

    def __len__(self) -> int:
        return len(self.keys)


def _mapped(path: Path) -> np.ndarray:
    """A saved array, memory-mapped read-only (a plain ndarray view: numpy's memmap subclass costs on every slice)."""
    return np.load(path, mmap_mode="r").view(np.ndarray)


def _seconds(when: datetime | float | str | None) -> float:
    """A story's time as seconds since the epoch: a datetime, an ISO string (as the store writes) or a number."""
    if when is None:
        return math.nan
    if isinstance(when, str):
        when = datetime.fromisoformat(when)
    if isinstance(when, datetime):
        # A time without a zone is UTC (the store writes UTC), not the machine's local time.
        return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()
    return float(when)


@dataclass
class PendingSave:
    """A snapshot of a :class:`ReuseIndex` taken by :meth:`ReuseIndex.begin_save`, to be written to ``folder``."""

    folder: Path
    segments: list[_Segment]
    files: list[str]  # each segment's file name stem (a segment saved before keeps its own)
    ids: Callable[[], np.ndarray]  # the stories' ids (_StoryIds.frozen)
    arrays: dict[str, np.ndarray]  # the other per-story arrays
    meta: dict
    checksums: dict[str, str]  # the files' checksums, those of the files written here added by write()

    def write(self) -> None:
        """Write the files the snapshot lacks, then its meta file (last, atomically: it makes them the snapshot),
        then delete an earlier snapshot's files. Touches nothing of the index: it may run in any thread."""
        folder = self.folder
        for segment, file in zip(self.segments, self.files):
            if segment.file is None:
                for name in _SEGMENT_ARRAYS:
                    self.checksums[f"{file}-{name}.npy"] = write_durably(
                        folder / f"{file}-{name}.npy",
                        lambda handle, values=getattr(segment, name): np.save(handle, values))
        stories = f"stories-{secrets.token_hex(8)}.npz"
        arrays = {"ids": self.ids(), **self.arrays}
        self.checksums[stories] = write_durably(folder / stories, lambda handle: np.savez(handle, **arrays))
        wanted = {stories} | {f"{file}-{name}.npy" for file in self.files for name in _SEGMENT_ARRAYS}
        self.checksums = {file: checksum for file, checksum in self.checksums.items() if file in wanted}
        write_manifest(folder / _META, {**self.meta, "stories": stories, "checksums": self.checksums})
        fsync_folder(folder)
        wanted.add(_META)
        for path in folder.iterdir():
            if path.name not in wanted and path.name.startswith(("segment-", "stories-")):
                path.unlink()  # an earlier snapshot's (a mapped file stays readable until unmapped)


class ReuseIndex:
    """The stored stories' fingerprints, and the passages a new text shares with them.

    ``text_of(story_id)`` gives a stored story's text back when a text shares seeds with it (a crawl reads it
    from its store); without it the index keeps each added text normalised, with a compact map of its raw
    offsets.  Parameters: see the module; :class:`ReuseTracker` is the interface a crawl calls.
    """

    def __init__(self, *, k: int = K, w: int = W, min_chars: int = MIN_CHARS, min_passage: int = MIN_PASSAGE,
                 min_fraction: float = MIN_FRACTION, max_sources: int = MAX_SOURCES, min_seeds: int = 3,
                 min_block: int = 8, max_gap: int = 40, drift: int = 8, min_cjk: float = 0.3,
                 text_of: Callable[[Hashable], str] | None = None, max_segment_postings: int = 1 << 24,
                 group_sources: int = GROUP_SOURCES, title_of: Callable[[Hashable], str | None] | None = None) -> None:
        if min(k, w, min_seeds, min_block, max_sources, max_segment_postings) < 1 or min(min_chars, min_passage, max_gap, drift) < 0 \
                or not 0 <= min_fraction <= 1:
            raise ValueError("ReuseIndex: k, w, min_seeds, min_block, max_sources, max_segment_postings must be >= 1; "
                             "min_chars, min_passage, max_gap, drift >= 0; min_fraction in [0, 1]")
        self.k, self.w, self.min_chars, self.max_sources = k, w, min_chars, max_sources
        self.min_passage, self.min_fraction = min_passage, min_fraction
        self.min_seeds, self.min_block, self.max_gap, self.drift, self.min_cjk = (
            min_seeds, min_block, max_gap, drift, min_cjk)
        self._text_of = text_of
        self.group_sources = group_sources
        # A stored story's headline, for the same-site boilerplate test (see _site_boilerplate): read through
        # title_of (a crawl's store), else kept from add() when one was given.
        self._title_of = title_of
        self._titles: dict[Hashable, str] = {}
        self._group_codes: dict[Hashable, int] = {}  # a site's (group's) name -> its code in _groups
        self._group_names: list = []
        # A merge builds its segment in memory: capped, a saved index of a million stories (160 million postings in
        # ten 16-million segments of 256 MB) never reads its segments into one 2.5 GB array.
        self.max_segment_postings = max_segment_postings
        self._shifts = sorted(range(-drift, drift + 1), key=abs)
        self._forms: dict[Hashable, tuple[str, _Offsets]] = {}  # without text_of: each story's normalised text
        # The texts read last, by their text: a crawl looks a page up (find) and indexes it once it is stored (add) a
        # few pages later, and a page's near copies and quotations align against it as a source soon after; each was
        # read (normalised and winnowed, ~0.2 ms for 1,700 characters) two or three times. The text is the key, so
        # a story whose text changed is read again.
        self._recent: dict[str, _Prepared] = {}
        self._ids = _StoryIds()
        self._when = np.empty(0, np.float64)
        self._published = np.empty(0, np.float64)  # publication time (epoch seconds), NaN when unknown
        self._groups = np.empty(0, np.int32)  # the story's site (group) code, -1 when none was given
        self._alive = np.empty(0, bool)
        self._counts = np.empty(0, np.int64)  # postings a story added (its dead ones counted without a scan)
        self._oldest = math.inf  # no live story's time is before this (expire's fast path)
        self._segments: list[_Segment] = []
        self._checksums: dict[str, str] = {}  # a saved file's name -> the checksum of its bytes
        self._dead_postings = 0
        self._postings = 0

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, story_id: object) -> bool:
        return story_id in self._ids

    @property
    def postings(self) -> int:
        """Fingerprint postings held (removed stories' ones included until their segments merge)."""
        return self._postings

    def _prepared(self, text: str) -> _Prepared:
        prepared = self._recent.get(text)
        if prepared is None:
            form, offsets = exact_form_with_offsets(text)
            hashes, positions = winnow(form, self.k, self.w)
            hashes.flags.writeable = positions.flags.writeable = False  # shared by the text's next readers
            prepared = self._recent[text] = _Prepared(form, offsets, hashes, positions, text)
            if len(self._recent) > RECENT_TEXTS:
                del self._recent[next(iter(self._recent))]  # the oldest (dicts keep their insertion order)
        return prepared

    def add(self, story_id: Hashable, text: str, when: datetime | float | str | None = None, *,
            published: datetime | float | str | None = None, group: Hashable | None = None,
            title: str | None = None) -> bool:
        """Index a story (``when``: its time, for :meth:`expire`; ``published``: its publication time, which
        orders the quotations; ``group``: its site or series, whose shared passages are boilerplate; ``title``: its
        headline); False when the id is already indexed."""
        return self._add(story_id, text, self._prepared(text), when, _About(published, group, title))

    def find_and_add(self, story_id: Hashable, text: str, when: datetime | float | str | None = None, *,
                     exclude: Iterable[Hashable] = (), add: bool = True,
                     published: datetime | float | str | None = None, group: Hashable | None = None,
                     title: str | None = None) -> list[Reuse]:
        """:meth:`find` (the story's own id excluded), then :meth:`add` when ``add``: the text is read once."""
        prepared, about = self._prepared(text), _About(published, group, title)
        found = self._find(prepared, (story_id, *exclude), about)
        if add:
            self._add(story_id, text, prepared, when, about)
        return found

    def _group_code(self, group: Hashable | None, *, create: bool) -> int:
        if group is None:
            return -1
        code = self._group_codes.get(group)
        if code is None:
            if not create:
                return -1
            code = self._group_codes[group] = len(self._group_names)
            self._group_names.append(group)
        return code

    def _add(self, story_id: Hashable, text: str, prepared: _Prepared, when: datetime | float | str | None,
             about: _About) -> bool:
        if story_id in self._ids:
            return False
        hashes, positions = prepared.hashes, prepared.positions
        seq = self._ids.add(story_id)
        if seq >= len(self._alive):  # grow the per-story arrays by a quarter: an opened million would take 17 MB more
            size = max(1024, len(self._alive) + len(self._alive) // 4)
            self._alive = np.concatenate((self._alive, np.zeros(size - len(self._alive), bool)))
            self._when = np.concatenate((self._when, np.full(size - len(self._when), math.nan)))
            self._published = np.concatenate((self._published, np.full(size - len(self._published), math.nan)))
            self._groups = np.concatenate((self._groups, np.full(size - len(self._groups), -1, np.int32)))
            self._counts = np.concatenate((self._counts, np.zeros(size - len(self._counts), np.int64)))
        self._alive[seq] = True
        self._when[seq] = _seconds(when)
        self._published[seq] = _seconds(about.published)
        self._groups[seq] = self._group_code(about.group, create=True)
        if about.title and self._title_of is None:
            self._titles[story_id] = about.title
        self._counts[seq] = len(hashes)
        self._oldest = min(self._oldest, self._when[seq])  # a NaN time leaves it as it was
        if self._text_of is None:
            self._forms[story_id] = prepared.form, _Offsets(prepared.offsets)
        if not len(hashes):  # shorter than k: nothing to find it by (and no empty segment)
            return True
        order = np.argsort(hashes, kind="stable")
        self._segments.append(_Segment(hashes[order], np.full(len(hashes), seq, np.uint32),
                                       positions[order].astype(np.uint32)))
        self._postings += len(hashes)
        # Log-structured: a segment merges into the one before it while that one is not twice as large, so there
        # are O(log n) segments and every posting is rewritten O(log n) times; up to max_segment_postings.
        while len(self._segments) > 1 and len(self._segments[-2]) <= 2 * len(self._segments[-1]) \
                and len(self._segments[-2]) + len(self._segments[-1]) <= self.max_segment_postings:
            last = self._segments.pop()
            self._segments[-1] = self._merge([self._segments[-1], last])
        return True

    def _merge(self, segments: Sequence[_Segment]) -> _Segment:
        keys = np.concatenate([s.keys for s in segments])
        seqs = np.concatenate([s.seqs for s in segments])
        positions = np.concatenate([s.positions for s in segments])
        live = self._alive[seqs]
        if not live.all():
            self._dead_postings -= int((~live).sum())
            self._postings -= int((~live).sum())
            keys, seqs, positions = keys[live], seqs[live], positions[live]
        order = np.argsort(keys, kind="stable")
        return _Segment(keys[order], seqs[order], positions[order])

    def _compacted(self, segment: _Segment) -> _Segment:
        """The segment without its removed stories' postings (itself, still mapped if saved, when it has none)."""
        live = self._alive[segment.seqs]
        if live.all():
            return segment
        dead = int((~live).sum())
        self._dead_postings -= dead
        self._postings -= dead
        return _Segment(segment.keys[live], segment.seqs[live], segment.positions[live])  # still sorted

    def remove(self, story_id: Hashable) -> bool:
        """Forget a story (its postings go at the next merge); False when it is not indexed."""
        seq = self._ids.pop(story_id)
        if seq is None:
            return False
        self._alive[seq] = False
        self._forms.pop(story_id, None)
        self._titles.pop(story_id, None)
        self._dead_postings += int(self._counts[seq])
        if self._dead_postings * 2 > self._postings:  # mostly dead: rewrite each segment once, without them
            compacted = (self._compacted(segment) for segment in self._segments)
            self._segments = [segment for segment in compacted if len(segment)]
        return True

    def touch(self, story_id: Hashable, when: datetime | float | str) -> bool:
        """Move a story's time on to ``when`` if that is later (a copy of it was fetched: as the near-duplicate
        stage keeps a cluster while copies keep arriving); False when it is not indexed."""
        seq = self._ids.get(story_id)
        if seq is None:
            return False
        later = _seconds(when)
        if not self._when[seq] >= later:  # NaN (no time yet) or earlier
            self._when[seq] = later
            self._oldest = min(self._oldest, later)
        return True

    def expire(self, before: datetime | float | str) -> int:
        """Forget every story whose time is before ``before`` (the retention window's start); the count removed.

        Stories added without a time stay.  Cheap when nothing is that old (one comparison), so a crawl may call
        it for every page."""
        cutoff = _seconds(before)
        if not cutoff > self._oldest:
            return 0
        old = np.flatnonzero(self._alive & (self._when < cutoff))
        for seq in old.tolist():
            self.remove(self._ids.id_of(seq))
        times = self._when[: self._ids.count][self._alive[: self._ids.count]]
        times = times[~np.isnan(times)]
        self._oldest = float(times.min()) if len(times) else math.inf
        return len(old)

    def save(self, folder: Path | str, *, extra: Mapping[str, object] | None = None) -> None:
        """Write the index to ``folder`` (created if need be), so that :meth:`open` gives it back in a fraction of
        the time a rebuild takes; ``extra``: the caller's fields kept in its meta file (a crawl's store mark).

        Each segment is written once, as three ``.npy`` arrays that :meth:`open` memory-maps (a segment is
        immutable: a merge makes a new one, and the files no snapshot names any more are deleted); the
        per-story arrays (ids, alive, time, postings: 21 bytes a story) are rewritten each time.  The meta file
        (parameters, format, the files, ``extra``) is replaced last, atomically: a crash while saving leaves the
        previous snapshot whole.  Only an index reading its texts through ``text_of`` is saved (the texts stay
        in their store), with integer story ids.  :meth:`begin_save` splits it in three, to write in a thread."""
        pending = self.begin_save(folder, extra=extra)
        pending.write()
        self.end_save(pending)

    def begin_save(self, folder: Path | str, *, extra: Mapping[str, object] | None = None) -> PendingSave:
        """What :meth:`save` writes, taken from the index now (a copy of the per-story arrays, the segments, which
        are immutable): its :meth:`PendingSave.write` may then run in another thread while this one goes on adding
        and finding stories, and :meth:`end_save`, back in this thread, maps the segments it wrote."""
        if self._text_of is None:
            raise ValueError("ReuseIndex.save: only an index that reads its texts through text_of is saved")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._segments = [segment for segment in self._segments if len(segment)]
        n = self._ids.count
        arrays = {"alive": self._alive[:n].copy(), "when": self._when[:n].copy(),
                  "counts": self._counts[:n].copy(), "published": self._published[:n].copy(),
                  "groups": self._groups[:n].copy()}
        # A name no other snapshot used for each segment not saved yet: a rebuild writing over a stale snapshot's
        # files could otherwise mix them under its meta, were it to be read before the new meta replaces it.
        files = [segment.file or f"segment-{secrets.token_hex(8)}" for segment in self._segments]
        meta = {**(extra or {}), "format": SNAPSHOT_FORMAT, "k": self.k, "w": self.w, "count": n, "segments": files,
                "postings": self._postings, "dead_postings": self._dead_postings, "groups": list(self._group_names)}
        return PendingSave(folder, list(self._segments), files, self._ids.frozen(), arrays, meta, dict(self._checksums))

    def end_save(self, pending: PendingSave) -> None:
        """After ``pending`` was written: its new segments are read from their files from now on (their memory goes
        back to the page cache), and the checksums are the saved snapshot's."""
        for segment, file in zip(pending.segments, pending.files):
            if segment.file is None:
                segment.file = file
                for name in _SEGMENT_ARRAYS:
                    setattr(segment, name, _mapped(pending.folder / f"{file}-{name}.npy"))
        self._checksums = dict(pending.checksums)

    @classmethod
    def open(cls, folder: Path | str, **settings) -> tuple[ReuseIndex, dict]:
        """The index :meth:`save` wrote to ``folder``, and its meta (``extra`` included): segments memory-mapped,
        per-story arrays in RAM.  ``settings``: as for a new index; ``k`` and ``w`` must be the saved ones.
        Stories added afterwards are held in RAM and written by the next :meth:`save`.  SnapshotError when
        there is no snapshot, it cannot be read or it was saved with other parameters; SnapshotDamaged naming the
        file when one is missing or its bytes are not those saved (every file is verified against the checksum the
        meta file holds, and the meta file against its own, before it is used)."""
        index = cls(**settings)
        folder = Path(folder)
        try:
            meta = read_manifest(folder / _META)
        except FileNotFoundError:
            raise SnapshotError(f"no saved index in {folder}") from None
        except StateDamaged as damaged:
            raise SnapshotDamaged(damaged) from None
        if not isinstance(meta, dict) or meta.get("format") != SNAPSHOT_FORMAT:
            found = meta.get("format") if isinstance(meta, dict) else meta
            raise SnapshotError(f"{folder} holds another format ({found!r}; this version reads {SNAPSHOT_FORMAT})")
        if (meta.get("k"), meta.get("w")) != (index.k, index.w):
            raise SnapshotError(f"{folder} was saved with k={meta.get('k')}, w={meta.get('w')}; "
                                f"the index now has k={index.k}, w={index.w}")
        try:
            checksums = meta["checksums"]
            for file in [meta["stories"], *(f"{name}-{array}.npy" for name in meta["segments"]
                                            for array in _SEGMENT_ARRAYS)]:
                verify_file(folder / file, checksums.get(file))
            with np.load(folder / meta["stories"]) as stored:
                stories = {name: stored[name] for name in _STORY_ARRAYS}
            count = int(meta["count"])
            if any(len(values) != count for values in stories.values()):
                raise ValueError(f"per-story arrays of another length than {count}")
            for name in meta["segments"]:
                arrays = {array: _mapped(folder / f"{name}-{array}.npy") for array in _SEGMENT_ARRAYS}
                if len({len(values) for values in arrays.values()}) != 1 or any(
                        arrays[array].dtype != dtype for array, dtype in _SEGMENT_ARRAYS.items()):
                    raise ValueError(f"segment {name}'s arrays do not match")
                index._segments.append(_Segment(**arrays, file=name))
            postings, dead = int(meta["postings"]), int(meta["dead_postings"])
            groups = list(meta["groups"])
        except StateDamaged as damaged:
            raise SnapshotDamaged(damaged) from None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, EOFError,
                zipfile.BadZipFile) as error:  # torn, truncated
            raise SnapshotError(f"the index saved in {folder} cannot be read: {error}") from None
        live = stories["alive"] & (stories["ids"] >= 0)
        index._ids = _StoryIds(stories["ids"], live)
        index._alive, index._when = live, stories["when"]
        index._published, index._groups = stories["published"], stories["groups"].astype(np.int32, copy=False)
        index._group_names = groups
        index._group_codes = {name: code for code, name in enumerate(groups)}
        index._counts = stories["counts"].astype(np.int64, copy=False)
        times = index._when[live]
        times = times[~np.isnan(times)]
        index._oldest = float(times.min()) if len(times) else math.inf
        index._postings, index._dead_postings = postings, dead
        index._checksums = dict(checksums)
        return index, meta

    def live_ids(self) -> np.ndarray:
        """The ids of the stories held (integers: see :meth:`save`), as ``int64``, in the order they were added."""
        ids = self._ids.as_array()
        return ids[self._alive[: len(ids)] & (ids >= 0)]

    def _seed_matches(self, hashes: np.ndarray, exclude: np.ndarray, group: int = -1
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(query fingerprint number, story seq, story position)`` of every usable seed: postings of live,
        not excluded stories, of fingerprints no more than ``max_sources`` stories hold; and, per query fingerprint,
        whether ``group_sources`` or more stories of the new text's own ``group`` hold it."""
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        raw = np.zeros(len(hashes), np.int64)
        ranges = []
        for segment in self._segments:
            if not len(segment):  # every posting of it removed at a merge
                continue
            lo = np.searchsorted(segment.keys, hashes, "left")
            hi = lo.copy()
            # Most fingerprints of a text are in no segment: the run's end is looked up for the ones found only.
            present = np.flatnonzero(segment.keys[np.minimum(lo, len(segment.keys) - 1)] == hashes)
            hi[present] = np.searchsorted(segment.keys, hashes[present], "right")
            raw += hi - lo
            ranges.append((segment, lo, hi))
        # A fingerprint held far more often than max_sources is boilerplate: do not even gather its postings
        # (dead postings and repeats inside one story are why the bar is not max_sources itself).
        wanted = (raw > 0) & (raw <= 4 * self.max_sources + 4)
        for segment, lo, hi in ranges:
            counts = np.where(wanted, hi - lo, 0)
            total = int(counts.sum())
            if not total:
                continue
            query = np.repeat(np.arange(len(hashes)), counts)
            starts = np.repeat(lo, counts)
            offset = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            at = starts + offset
            found.append((query, segment.seqs[at], segment.positions[at]))
        if not found:
            empty = np.empty(0, np.int64)
            return empty, empty, empty, np.zeros(len(hashes), bool)
        query = np.concatenate([f[0] for f in found])
        seqs = np.concatenate([f[1] for f in found]).astype(np.int64)
        positions = np.concatenate([f[2] for f in found]).astype(np.int64)
        keep = self._alive[seqs]
        if len(exclude):
            keep &= ~np.isin(seqs, exclude)
        query, seqs, positions = query[keep], seqs[keep], positions[keep]
        # Document frequency: distinct stories per fingerprint (by hash value: a query may repeat one).
        _, value = np.unique(hashes, return_inverse=True)
        held = np.unique((value[query].astype(np.int64) << 32) | seqs)
        common = np.bincount(held >> 32, minlength=len(hashes)) > self.max_sources
        site_common = np.zeros(len(hashes), bool)
        if group >= 0:
            own = held[self._groups[held & 0xFFFFFFFF] == group]
            site_common = (np.bincount(own >> 32, minlength=len(hashes)) >= self.group_sources)[value]
        keep = ~common[value[query]]
        return query[keep], seqs[keep], positions[keep], site_common

    def find(self, text: str, *, exclude: Iterable[Hashable] = (), published: datetime | float | str | None = None,
             group: Hashable | None = None, title: str | None = None) -> list[Reuse]:
        """The stored stories ``text`` shares passages with, most characters first; ``exclude``: story ids not to
        report (the text's own id, the stories it is a near duplicate of) nor to count as holders of a
        fingerprint.  ``published``, ``group`` and ``title``: as for :meth:`add` (the direction of each record, and
        the same site's boilerplate, see :meth:`_site_boilerplate`)."""
        return self._find(self._prepared(text), exclude, _About(published, group, title)) if len(self._ids) else []

    def _find(self, prepared: _Prepared, exclude: Iterable[Hashable], about: _About = _About()) -> list[Reuse]:
        form, offsets, hashes, positions, _ = prepared
        if not len(hashes) or not len(self._ids):
            return []
        excluded = np.array([seq for seq in map(self._ids.get, exclude) if seq is not None], np.int64)
        group = self._group_code(about.group, create=False)
        query, seqs, source_positions, site_common = self._seed_matches(hashes, excluded, group)
        if not len(seqs):
            return []
        found = []
        order = np.lexsort((positions[query], seqs))
        seqs, query_positions, source_positions = seqs[order], positions[query][order], source_positions[order]
        linked = _linked(seqs, query_positions, source_positions, reach=self.max_gap + self.k, drift=self.drift)
        seqs, query_positions, source_positions = seqs[linked], query_positions[linked], source_positions[linked]
        bounds = np.flatnonzero(np.diff(seqs)) + 1
        for start, end in zip(np.concatenate(([0], bounds)).tolist(), np.concatenate((bounds, [len(seqs)])).tolist()):
            if end - start < self.min_seeds:
                continue
            seq = int(seqs[start])
            story_id = self._ids.id_of(seq)
            reuse = self._reuse(story_id, form, offsets, query_positions[start:end].tolist(),
                                source_positions[start:end].tolist())
            if reuse is not None and group >= 0 and self._groups[seq] == group:
                reuse = self._site_boilerplate(reuse, prepared, about.title, positions[site_common])
            if reuse is not None:
                found.append(self._directed(reuse, seq, about.published))
        return sorted(found, key=lambda r: (-r.chars, r.source))

    def _site_boilerplate(self, reuse: Reuse, prepared: _Prepared, title: str | None,
                          site_common: np.ndarray) -> Reuse | None:
        """``reuse`` of a story of the new text's own site without the passages that are the site's boilerplate,
        or None when nothing else is left.  A boilerplate passage opens or closes both texts (:data:`EDGE`), and
        either speaks of neither page's headline (the site template's test,
        :func:`~newsdedup.extract.template.speaks_of_headline`: a risk disclaimer, an editor's note, an
        authorisation line; a follow-up repeating yesterday's background speaks of both stories' subject), which
        tells it from two pages on, or, without both headlines, is mostly fingerprints that ``group_sources``
        other stories of the site hold (``site_common``: their positions in the new text's normalised form)."""
        source_title = self._titles.get(reuse.source) if self._title_of is None else self._title_of(reuse.source)
        text, offsets = prepared.text, prepared.offsets
        source_length = self._raw_length(reuse.source)
        common_at = [offsets[i] for i in site_common.tolist()]

        def boilerplate(p: Passage) -> bool:
            if not (_at_edge(p.start, p.length, len(text)) and _at_edge(p.source_start, p.source_length, source_length)):
                return False
            if title and source_title:
                from newsdedup.extract.template import speaks_of_headline  # the template's own judgement

                quoted = p.quoted(text)
                return not (speaks_of_headline(title, quoted) or speaks_of_headline(source_title, quoted))
            if not (_at_edge(p.start, p.length, len(text), closing=True)
                    and _at_edge(p.source_start, p.source_length, source_length, closing=True)):
                return False  # an opening both share and other pages too may be the outlet's stock lead: reuse
            inside = bisect_right(common_at, p.start + p.length - 1) - bisect_left(common_at, p.start)
            return inside * (self.w + 1) >= p.chars  # winnowing keeps about 2 / (w + 1) of the positions: half

        kept = tuple(p for p in reuse.passages if not boilerplate(p))
        if len(kept) == len(reuse.passages):
            return reuse
        return qualify(reuse.source, kept, reuse.text_chars, reuse.source_chars, min_passage=self.min_passage,
                       min_chars=self.min_chars, min_fraction=self.min_fraction)

    def _raw_length(self, story_id: Hashable) -> int:
        form, offsets = self._source_form(story_id)
        return offsets[len(form) - 1] + 1 if len(form) else 0

    def _directed(self, reuse: Reuse, seq: int, published: datetime | float | str | None) -> Reuse:
        """The record with its direction: the story published first is the quoted one, when both times are known
        and differ; else the one that arrived first (the stored story)."""
        new, stored = _seconds(published), float(self._published[seq])
        if math.isnan(new) or math.isnan(stored) or new == stored:
            return reuse
        return replace(reuse, direction=QUOTED_BY if new < stored else QUOTES, basis=PUBLISHED)

    def _source_form(self, story_id: Hashable) -> tuple[str, Sequence[int]]:
        """A stored story's normalised text and its characters' raw offsets: kept from :meth:`add` (normalising
        the source again was a third of the lookup's time), or read back through ``text_of``."""
        if self._text_of is None:
            return self._forms[story_id]
        text = self._text_of(story_id)
        prepared = self._recent.get(text)
        return (prepared.form, prepared.offsets) if prepared is not None else exact_form_with_offsets(text)

    def _chains(self, query_positions: list[int], source_positions: list[int]) -> list[list[tuple[int, int]]]:
        """The seeds (query position, source position) in chains: each seed joins the latest chain whose last
        seed is on its diagonal (within ``drift``) and at most ``max_gap`` characters before it, in both texts;
        chains of fewer than ``min_seeds`` are dropped (scattered common phrases, not a passage)."""
        chains: list[list[tuple[int, int]]] = []
        latest: dict[int, list[tuple[int, int]]] = {}  # diagonal -> the latest chain ending on it
        for q, s in sorted(zip(query_positions, source_positions)):
            diagonal = s - q
            for shift in self._shifts:  # its own diagonal first, then the nearest ones
                chain = latest.get(diagonal + shift)
                if chain is not None and 0 < q - chain[-1][0] <= self.max_gap + self.k and 0 < s - chain[-1][1]:
                    chain.append((q, s))
                    break
            else:
                chain = [(q, s)]
                chains.append(chain)
            latest[diagonal] = chain
        return [chain for chain in chains if len(chain) >= self.min_seeds]

    def _reuse(self, story_id: Hashable, form: str, offsets: list[int], query_positions: list[int],
               source_positions: list[int]) -> Reuse | None:
        chains = self._chains(query_positions, source_positions)
        if not chains:
            return None
        source_form, source_offsets = self._source_form(story_id)
        # Each seed extended both ways along its diagonal while the characters agree: exact blocks (q, s, length).
        blocks: set[tuple[int, int, int]] = set()
        reach: dict[int, int] = {}  # diagonal -> where the last block on it ends in the new text
        for chain in chains:
            for q, s in chain:
                if q < reach.get(s - q, -1):
                    continue  # inside a block already found
                left = _common_suffix(form, q, source_form, s)
                right = _common_prefix(form, q, source_form, s)
                reach[s - q] = q + right
                if left + right >= self.min_block:
                    blocks.add((q - left, s - left, left + right))
        # Blocks that follow each other in both texts, with gaps of up to max_gap (a word changed, a clause cut),
        # are one passage: (q start, q end, s start, s end, aligned characters).
        spans: list[list[int]] = []
        for q, s, n in sorted(blocks):
            last = spans[-1] if spans else None
            if last and -self.drift <= q - last[1] <= self.max_gap and -self.drift <= s - last[3] <= self.max_gap \
                    and q + n > last[1] and s + n > last[3]:
                last[4] += min(n, q + n - last[1], s + n - last[3])
                last[1], last[3] = max(last[1], q + n), max(last[3], s + n)
            else:
                spans.append([q, q + n, s, s + n, n])
        # One stretch of either text counts once (a text repeating a passage offers it twice): the longest wins,
        # so the alignment is one to one and neither fraction can pass 1.  A span whose end only reaches into a
        # longer one is cut back to where that one ends: a block extended over the characters two passages share
        # at their seam (the full stop before a deleted sentence and the one before the next) overlaps its
        # neighbour by a character or two, and dropping it lost the whole passage after a deleted sentence.
        taken, source_taken = _Stretches(), _Stretches()
        kept: list[list[int]] = []
        for span in sorted(spans, key=lambda item: -item[4]):
            left = max(taken.end_over(span[0]) - span[0], source_taken.end_over(span[2]) - span[2])
            right = max(span[1] - taken.start_before(span[0], span[1]),
                        span[3] - source_taken.start_before(span[2], span[3]))
            if left or right:
                span = [span[0] + left, span[1] - right, span[2] + left, span[3] - right, span[4] - left - right]
                if span[4] < self.min_block:
                    continue
            if taken.overlaps(span[0], span[1]) or source_taken.overlaps(span[2], span[3]):
                continue
            if len(_CJK.findall(form, span[0], span[1])) >= self.min_cjk * (span[1] - span[0]):
                taken.add(span[0], span[1])
                source_taken.add(span[2], span[3])
                kept.append(span)
        if not kept:
            return None
        passages = tuple(Passage(offsets[q0], offsets[q1 - 1] + 1 - offsets[q0], source_offsets[s0],
                                 source_offsets[s1 - 1] + 1 - source_offsets[s0], n)
                         for q0, q1, s0, s1, n in sorted(kept))
        return qualify(story_id, passages, len(form), len(source_form), min_passage=self.min_passage,
                       min_chars=self.min_chars, min_fraction=self.min_fraction)


def _at_edge(start: int, length: int, total: int, *, closing: bool = False) -> bool:
    """Whether ``[start, start + length)`` opens or closes a text of ``total`` characters (see :data:`EDGE`); with
    ``closing``, whether it closes it."""
    edge = max(EDGE, EDGE_SHARE * total)
    return (start <= edge and not closing) or start + length >= total - edge


class _Stretches:
    """Disjoint ``[start, end)`` stretches of one text, sorted, for an overlap test by bisection."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        at = bisect_right(self._starts, start)
        return (at > 0 and self._ends[at - 1] > start) or (at < len(self._starts) and self._starts[at] < end)

    def end_over(self, start: int) -> int:
        """Where the stretch holding ``start`` ends, else ``start``."""
        at = bisect_right(self._starts, start)
        return self._ends[at - 1] if at > 0 and self._ends[at - 1] > start else start

    def start_before(self, start: int, end: int) -> int:
        """Where the first stretch beginning after ``start`` and before ``end`` begins, else ``end``."""
        at = bisect_right(self._starts, start)
        return self._starts[at] if at < len(self._starts) and self._starts[at] < end else end

    def add(self, start: int, end: int) -> None:
        at = bisect_right(self._starts, start)
        self._starts.insert(at, start)
        self._ends.insert(at, end)


def qualify(source: Hashable, passages: Sequence[Passage], text_chars: int, source_chars: int, *, min_passage: int,
            min_chars: int, min_fraction: float) -> Reuse | None:
    """The reuse record of ``source`` from its aligned passages (in the new text's order), or None when it does
    not pass the bar: only passages of ``min_passage`` aligned characters or more count; together they must hold
    ``min_chars`` or more, and be at least ``min_fraction`` of one of the two texts (``text_chars`` and
    ``source_chars``: their non-whitespace lengths).

    The fraction is what tells a quote from a form.  Admission brochures, exam notices and tender results share
    the mandated wording clause by clause: passages of 80-300 characters, each a few percent of two long
    documents; a commentary quoting a report, or a follow-up repeating a lead, takes a good share of one of the
    two.  Both bars are chosen on the tune half of the labelled real pairs
    (:mod:`newsdedup.evaluation.reuse_scores`); :class:`ReuseIndex` applies this, and the evaluation applies it
    to records found with every bar off.

    >>> p = Passage(start=0, length=90, source_start=10, source_length=90, chars=90)
    >>> qualify("s", [p], 300, 2000, min_passage=60, min_chars=80, min_fraction=0.1).fraction
    0.3
    >>> qualify("s", [p], 1000, 2000, min_passage=60, min_chars=80, min_fraction=0.1) is None  # 9% and 4.5%
    True
    """
    counted = tuple(p for p in passages if p.chars >= min_passage)
    chars = sum(p.chars for p in counted)
    if not counted or chars < min_chars:
        return None
    fraction, source_fraction = chars / max(1, text_chars), chars / max(1, source_chars)
    if max(fraction, source_fraction) < min_fraction:
        return None
    return Reuse(source, counted, chars, round(fraction, 4), round(source_fraction, 4), text_chars, source_chars)


def _common_prefix(a: str, i: int, b: str, j: int) -> int:
    """How many characters ``a[i:]`` and ``b[j:]`` share at their start (compared in growing slices, in C)."""
    n, step = 0, 32
    while True:
        x, y = a[i + n : i + n + step], b[j + n : j + n + step]
        if x != y or len(x) < step:
            return n + len(commonprefix((x, y)))
        n, step = n + step, step * 2


def _common_suffix(a: str, i: int, b: str, j: int) -> int:
    """How many characters ``a[:i]`` and ``b[:j]`` share at their end."""
    n, step = 0, 32
    while True:
        x, y = a[max(0, i - n - step) : i - n], b[max(0, j - n - step) : j - n]
        if x != y or len(x) < step or len(y) < step:
            return n + len(commonprefix((x[::-1], y[::-1])))
        n, step = n + step, step * 2


def overlaps(passages: Collection[Passage], start: int, end: int, source_start: int, source_end: int) -> bool:
    """Whether any passage overlaps both ``[start, end)`` of the new text and ``[source_start, source_end)`` of the
    source (how a labelled passage counts as found)."""
    return any(p.start < end and start < p.start + p.length
               and p.source_start < source_end and source_start < p.source_start + p.source_length
               for p in passages)


class ReuseTracker:
    """The passage-reuse stage as a crawl calls it: one :meth:`process` call per new story, in arrival order.

    It holds a :class:`ReuseIndex` of the stories within the retention window.  For a new story it forgets the
    stories that fell out of the window, finds the earlier stories the text reuses passages of, indexes the
    story, and gives back the records (:class:`Reuse`: the source story's id, each passage's raw offsets in
    both texts, the characters reused, the fraction of each text).  No Scrapy, no store: the caller keeps the
    records and says which story is which.

    How a crawl uses it (the near-duplicate stage decides first):

    * a *new story* (unique page): ``records = tracker.process(article_id, text, fetched_at)``; each record is
      stored as one reuse of ``record.source`` by ``article_id`` (:meth:`Reuse.as_record` is JSON-ready);
    * a *near duplicate* of stored story ``s`` is no new story: no call, or ``tracker.touch(s, fetched_at)`` to
      keep ``s`` in the window while copies of it keep arriving (as the near-duplicate index keeps a cluster);
    * at *start-up*, :meth:`restore` with the stored stories of the window (the cluster centres with their
      texts and times, as the exact and near-duplicate stages rebuild theirs): a restart then finds reuse of
      the stories stored before it.

    Storing a record: one row a relation, ``reuses(article_id, source_id, chars, fraction, source_fraction,
    passages, basis)`` with ``passages`` the JSON list of :meth:`Reuse.as_record` (raw offsets into both stories'
    stored texts: the text given here must be the text stored), primary key ``(article_id, source_id)`` (applying a
    story twice writes the same row) and an index on ``source_id`` (a story's "quoted by"); the row of a
    ``quoted_by`` record is the stored story's (:meth:`Reuse.quoting_view` turns its passages around).

    ``retention_days``: a story is forgotten once it is older than that, counted back from the newest time
    :meth:`process` was given (the crawl's clock is its pages' fetch times; a page fetched out of order does
    not move the window back); None keeps every story.  The settings go to :class:`ReuseIndex` (``text_of``
    there lets a crawl read source texts back from its store instead of holding them in memory).

    Cost (:func:`newsdedup.evaluation.reuse_scores.cost`, the 9,054 Sina texts in their order): about four
    fifths of the SpotSigs decision's CPU in the same run (3.0 against 3.9 ms a story on a shared, loaded
    machine; SpotSigs takes 3.3 ms on a quiet one, a page of the crawl benchmark 27-31 ms in all); restoring
    costs about 0.4 ms a story.  Memory: 16 bytes a fingerprint posting (about 2 / 17 of a story's characters,
    ~160 a Sina story) and, unless ``text_of``, each story's normalised text.

    >>> tracker = ReuseTracker(retention_days=7)
    >>> report = "国家统计局今天发布数据，十月份居民消费价格同比上涨百分之二点五，涨幅比上月回落零点一个百分点。" * 2
    >>> tracker.process(1, report, "2026-11-01T08:00:00+00:00")
    []
    >>> [r.source for r in tracker.process(2, "评论：" + report + "物价总体平稳。", "2026-11-02T08:00:00+00:00")]
    [1]
    >>> tracker.process(3, "又一篇：" + report, "2026-11-20T08:00:00+00:00"), len(tracker)  # 1 and 2 expired
    ([], 1)
    """

    def __init__(self, *, retention_days: float | None = None, **settings) -> None:
        if retention_days is not None and not retention_days > 0:
            raise ValueError(f"ReuseTracker: retention_days must be > 0 (None keeps every story), got {retention_days}")
        self.retention_seconds = None if retention_days is None else retention_days * 86_400.0
        self.index = ReuseIndex(**settings)
        self._now = -math.inf  # the newest time seen

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, story_id: object) -> bool:
        return story_id in self.index

    def process(self, story_id: Hashable, text: str, when: datetime | float | str, *,
                exclude: Iterable[Hashable] = (), published: datetime | float | str | None = None,
                group: Hashable | None = None, title: str | None = None) -> list[Reuse]:
        """The reuse records of a new story (most characters first), after which the story is indexed.

        ``when``: the story's time (a datetime, an ISO string as the store writes it, or epoch seconds).
        ``exclude``: stored stories not to report (the story's own id is always left out, so applying the same
        story twice, as a distributed crawl's next writer may, gives the same records and indexes it once).
        ``published``: its publication time when known (a record's :attr:`Reuse.direction` follows the
        publication order, else the arrival order); ``group``: its site or series and ``title`` its headline
        (passages the site's own pages share are boilerplate, not a relation)."""
        at = self._time(when)
        self._now = max(self._now, at)
        if self.retention_seconds is not None:
            self.index.expire(before=self._now - self.retention_seconds)
        in_window = self.retention_seconds is None or at >= self._now - self.retention_seconds
        return self.index.find_and_add(story_id, text, at, exclude=exclude, add=in_window, published=published,
                                       group=group, title=title)

    def find(self, text: str, *, exclude: Iterable[Hashable] = (), published: datetime | float | str | None = None,
             group: Hashable | None = None, title: str | None = None) -> list[Reuse]:
        """The reuse records of ``text`` (most characters first) without indexing it: a caller that indexes a
        story only once it is stored (a crawl, :meth:`add`) looks it up first with this."""
        return self.index.find(text, exclude=exclude, published=published, group=group, title=title)

    def add(self, story_id: Hashable, text: str, when: datetime | float | str, published: datetime | float | str |
            None = None, group: Hashable | None = None, title: str | None = None) -> bool:
        """Index a stored story without looking for reuse (its records are found or stored already); False when
        it is indexed already.  The window is applied by the next :meth:`process` (or at the end of
        :meth:`restore`)."""
        at = self._time(when)
        self._now = max(self._now, at)
        return self.index.add(story_id, text, when=at, published=published, group=group, title=title)

    def restore(self, stories: Iterable[tuple]) -> int:
        """Index stored stories ``(id, text, time)``, or ``(id, text, time, published, group, title)``, without
        looking for reuse among them (a restart: their records are stored already); the count indexed.  Stories
        outside the window are left out."""
        added = sum(self.add(*story) for story in stories)
        if self.retention_seconds is not None:
            added -= self.index.expire(before=self._now - self.retention_seconds)
        return added

    def save(self, folder: Path | str, *, extra: Mapping[str, object] | None = None) -> None:
        """Write the index to ``folder`` (:meth:`ReuseIndex.save`: a tracker whose settings give ``text_of``, with
        integer story ids), with the newest time seen and ``extra`` in its meta."""
        pending = self.begin_save(folder, extra=extra)
        pending.write()
        self.index.end_save(pending)

    def begin_save(self, folder: Path | str, *, extra: Mapping[str, object] | None = None) -> PendingSave:
        """:meth:`save` in three steps (:meth:`ReuseIndex.begin_save`): this one, the pending save's ``write()`` in
        any thread, and ``index.end_save(pending)`` back in this one."""
        now = self._now if math.isfinite(self._now) else None
        return self.index.begin_save(folder, extra={**(extra or {}), "now": now})

    @classmethod
    def open(cls, folder: Path | str, *, retention_days: float | None = None, **settings) -> tuple[ReuseTracker, dict]:
        """The tracker :meth:`save` wrote, and its meta (``extra`` included); SnapshotError when there is none
        to open as it is (see :meth:`ReuseIndex.open`)."""
        tracker = cls(retention_days=retention_days, **settings)
        tracker.index, meta = ReuseIndex.open(folder, **settings)
        now = meta.get("now")
        tracker._now = float(now) if isinstance(now, (int, float)) else -math.inf
        return tracker, meta

    def touch(self, story_id: Hashable, when: datetime | float | str) -> bool:
        """A copy of a stored story arrived at ``when``: the story stays in the window from then on."""
        at = self._time(when)
        self._now = max(self._now, at)
        return self.index.touch(story_id, at)

    def forget(self, story_id: Hashable) -> bool:
        """Remove a story (deleted from the store, say); False when it was not indexed."""
        return self.index.remove(story_id)

    @staticmethod
    def _time(when: datetime | float | str) -> float:
        try:
            at = _seconds(when)
        except (TypeError, ValueError) as error:
            raise ValueError(f"ReuseTracker: a story's time must be a datetime, an ISO 8601 string or epoch seconds, "
                             f"got {when!r}") from error
        if math.isnan(at):
            raise ValueError("ReuseTracker: every story needs a time (the retention window counts from it), got None")
        return at
