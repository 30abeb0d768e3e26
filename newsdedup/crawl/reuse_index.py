"""The passage-reuse relation in a crawl: the stored stories' index, each new page's reuses of them (issue 26).

A story is indexed by its first stored article (the cluster's centre, whose id is the story's id): a story
reprinted five times is one source, not six, and a passage of it is not taken for boilerplate that many stories
hold (:class:`~newsdedup.dedup.reuse.ReuseIndex`'s ``max_sources``). The index keeps fingerprints only; the
source's text, read when a page shares seeds with it, comes from the store (the open batch included), so memory
follows the retention window's postings, not its texts. The stage itself is the library's
:class:`~newsdedup.dedup.reuse.ReuseTracker`; this module is its store glue.

Like the near-duplicate index, it is a cache of the store, holding the stories active within
``NEWSDEDUP_RETENTION_DAYS`` when a crawl starts (or a distributed crawl's writer takes its role). Rebuilt, that
re-reads and winnows every story of the window (~0.7 ms a story: 35 s at 50,000). With a state folder
(:meth:`StoryReuse.open`) it is saved at each :meth:`StoryReuse.checkpoint` (while the crawl commits and when it
closes: :class:`~newsdedup.crawl.indexes.DedupIndexes`) and opened back memory-mapped, then brought level with the
store, the truth:

* the snapshot's *mark* is the store's last committed article id when it was written; a store whose last id is
  below it (restored from a backup, another database) gets a full rebuild, as does a snapshot that cannot be
  read or was written with other winnowing parameters, and one with a file missing or damaged (each file's
  checksum is verified before use: a warning names the file);
* stories the snapshot holds above its mark (indexed while their batch was still open: the crawl stopped before
  the commit) are dropped, then the centres stored after the mark are read and indexed (the catch-up);
* the retention window is the store's: the stories whose cluster is no longer active since the window's start
  (``clusters.last_fetched_at``, which a copy or a repeat raises) are dropped, and a story whose cluster is
  active again is read back, so the index holds exactly the stories a rebuild would.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

import numpy as np

from newsdedup.dedup.reuse import QUOTED_BY, PendingSave, ReuseTracker, SnapshotDamaged, SnapshotError
from newsdedup.dedup.status import UNIQUE
from newsdedup.storage.base import ArticleRecord, ArticleStore, ReuseRecord
from newsdedup.storage.origin import FETCHED, date_of

logger = logging.getLogger(__name__)



class StoryReuse:
    """Finds the stored stories a page reuses passages of, and indexes each new story once it is stored."""

    def __init__(self, store: ArticleStore, tracker: ReuseTracker | None = None, *, folder: Path | None = None,
                 since: str | None = None) -> None:
        self.store = store
        self.tracker = tracker if tracker is not None else ReuseTracker(**_readers(store))
        self.folder = folder  # where checkpoint() saves the index; None: never saved
        self.since = since  # the window's start when the crawl opened: the index holds the stories active since
        self.stories_read = 0  # stories read from the store when it opened (all of them when rebuilt)

    @property
    def index(self):
        return self.tracker.index

    @classmethod
    def rebuild(cls, store: ArticleStore, *, since: str | None, folder: Path | None = None) -> StoryReuse:
        """The index of the stories active since ``since`` (None: every story), from the store."""
        reuse = cls(store, folder=folder, since=since)
        reuse.stories_read = reuse.tracker.restore(_stories(store.iter_cluster_centres(since=since)))
        logger.info("passage-reuse index rebuilt from the store: %d stories, %d fingerprints",
                    len(reuse.index), reuse.index.postings)
        return reuse

    @classmethod
    def open(cls, store: ArticleStore, folder: Path | None, *, since: str | None) -> StoryReuse:
        """The index of the stories active since ``since``: opened from the snapshot in ``folder`` and brought level
        with the store (see the module), else rebuilt; ``folder`` None: rebuilt, never saved."""
        if folder is None:
            return cls.rebuild(store, since=since)
        started = time.perf_counter()
        try:
            tracker, meta = ReuseTracker.open(folder, **_readers(store))
        except SnapshotError as error:  # a damaged file is a warning naming it; none yet (a first crawl) is not
            logger.log(logging.WARNING if isinstance(error, SnapshotDamaged) else logging.INFO,
                       "passage-reuse index: %s; rebuilding it from the store", error)
            return cls.rebuild(store, since=since, folder=folder)
        mark, last = meta.get("mark"), store.last_article_id()
        if not isinstance(mark, int) or mark > last:
            logger.warning("passage-reuse index in %s was saved at article %s, past the store's last article %d (a "
                           "store restored from a backup, or another database's state): rebuilding it from the store",
                           folder, mark, last)
            return cls.rebuild(store, since=since, folder=folder)
        reuse = cls(store, tracker, folder=folder, since=since)
        counts = reuse._level_with_store(mark, since=since, saved_since=meta.get("since"),
                                         repeats_mark=meta.get("repeats_mark"))
        reuse.stories_read = counts[2] + counts[3]  # back in the window, stored since the mark
        logger.info("passage-reuse index opened from %s in %.1f s: %d stories, %d fingerprints (%d rolled back, "
                    "%d left the window, %d back in it, %d stored since)", folder, time.perf_counter() - started,
                    len(reuse.index), reuse.index.postings, *counts)
        return reuse

    def _level_with_store(self, mark: int, *, since: str | None, saved_since: str | None,
                          repeats_mark: int | None = None) -> tuple[int, int, int, int]:
        """Bring the opened snapshot (saved at ``mark``) to the stories a rebuild since ``since`` would hold;
        the counts rolled back, expired, read back into the window and caught up."""
        index = self.index
        held = index.live_ids()
        ahead = held[held > mark]
        for story_id in ahead.tolist():
            index.remove(story_id)
        expired = back = 0
        if since is not None or saved_since is not None:  # without a window, nothing leaves it or comes back
            held = index.live_ids()
            if (since is not None and saved_since is not None and since >= saved_since
                    and isinstance(repeats_mark, int) and repeats_mark <= self.store.last_repeat_id()):
                # The snapshot held the stories active since ``saved_since`` (level with the store when saved; a
                # story's activity only rises): those that left the window since are the clusters last active
                # between the two starts (a range of the clusters' activity index), and a story can be back in it
                # only through a copy or a repeat stored after the save (the rows above its marks). Not every id of
                # the window: that read was 0.35-1.4 s of a scheduled run's start at 1,000,000 stories.
                left = np.fromiter(self.store.iter_centre_ids(since=saved_since, before=since), np.int64)
                gone = left[np.isin(left, held)]
                rows = chain(self.store.iter_articles_after(mark), self.store.iter_repeats_after(repeats_mark))
                active = np.array(sorted({row.cluster_id for row in rows if row.cluster_id is not None
                                          and row.active_at is not None and row.active_at >= since}), np.int64)
            else:
                active = np.fromiter(self.store.iter_centre_ids(since=since), np.int64)
                gone = held[~np.isin(held, active, assume_unique=True)]
            for story_id in gone.tolist():
                index.remove(story_id)
            expired = len(gone)
            missing = active[(active <= mark) & ~np.isin(active, held, assume_unique=True)]
            if len(missing):
                # Rare (a window wider than the snapshot's): read them with the window's centres from the first one.
                wanted = set(missing.tolist())
                centres = self.store.iter_cluster_centres(since=since, after=int(missing.min()) - 1)
                back = self.tracker.restore(_stories(record for record in centres if record.id in wanted))
        caught_up = self.tracker.restore(_stories(self.store.iter_cluster_centres(since=since, after=mark)))
        return len(ahead), expired, back, caught_up

    def checkpoint(self) -> None:
        """Save the index to its folder (nothing without one), atomically (the snapshot's meta file, checksums and
        all, replaced last). Its mark is the store's last committed article: stories indexed above it (their batch
        still open) are dropped and read again at the next open, and a crawl killed after it reads only the stories
        stored after it."""
        pending = self.begin_checkpoint()
        if pending is not None:
            started = time.perf_counter()
            pending.write()
            self.end_checkpoint(pending, time.perf_counter() - started)

    def begin_checkpoint(self) -> PendingSave | None:
        """:meth:`checkpoint`'s first step, quick (a copy of the per-story arrays): its ``write()`` may run in a
        thread while the crawl goes on, then :meth:`end_checkpoint` in this one. None without a folder."""
        if self.folder is None:
            return None
        return self.tracker.begin_save(self.folder, extra={"mark": self.store.last_article_id(), "since": self.since,
                                                           "repeats_mark": self.store.last_repeat_id()})

    def end_checkpoint(self, pending: PendingSave, seconds: float) -> None:
        """The written snapshot's segments are read from their files from now on; ``seconds``: the write's time."""
        self.tracker.index.end_save(pending)
        logger.info("passage-reuse index saved to %s at article %d in %.2f s: %d stories", self.folder,
                    pending.meta["mark"], seconds, len(self.index))

    def find(self, text: str, *, story: int | None, url: str | None = None, site: str | None = None,
             title: str | None = None, published_at: str | None = None, fetched_at: str | None = None
             ) -> list[ReuseRecord]:
        """The passages ``text`` shares with the stored stories other than its own ``story`` (a near duplicate's
        cluster: a reprint is not a quotation of what it reprints), most characters first. ``site`` and ``title``
        tell the site's boilerplate (never a relation); the page's publication time (``published_at``, checked as
        the origin checks it, :func:`~newsdedup.storage.origin.date_of`) says which of the two quotes the other: a
        record of a stored story published after the page is ``quoted_by`` (that story quotes the page)."""
        published = published_time(published_at, fetched_at, url) if fetched_at else None
        found = self.tracker.find(text, exclude=() if story is None else (story,), published=published,
                                  group=site, title=title)
        # Ties in characters in the order of the ids as text, as when the index held them as strings.
        found.sort(key=lambda reuse: (-reuse.chars, str(reuse.source)))
        records = []
        for reuse in found:
            passages, fraction, source_fraction = reuse.quoting_view()
            records.append(ReuseRecord(
                reuse.source, self.store.url_of(reuse.source) or "", reuse.chars, fraction, source_fraction,
                tuple((p.start, p.length, p.source_start, p.source_length, p.chars) for p in passages),
                basis=reuse.basis, quoted_by=reuse.direction == QUOTED_BY))
        return records

    def add(self, record: ArticleRecord) -> None:
        """Index a stored article when it starts a story (a near duplicate's text is its story's already)."""
        if record.status == UNIQUE:
            self.tracker.add(*_story(record))


def published_time(published_at: str | None, fetched_at: str, url: str | None) -> str | None:
    """When a page counts as published for ordering quotations: its own plausible publication time (to the day
    when it gives only the day), None when it gives none (the arrival order decides then)."""
    dated = date_of(published_at, fetched_at, url)
    return None if dated.basis == FETCHED else dated.at


def _story(record: ArticleRecord) -> tuple:
    """A stored centre as the tracker takes it: (story id, text, time, publication time, site, title)."""
    return (record.id, record.text, record.fetched_at, published_time(record.published_at, record.fetched_at,
                                                                       record.url), record.site, record.title)


def _stories(records: Iterable[ArticleRecord]) -> Iterator[tuple]:
    return map(_story, records)


def _readers(store: ArticleStore) -> dict:
    # A story's id that is not in the store (its page's record never committed) reads as an empty text.
    return {"text_of": lambda story_id: store.article_text(int(story_id)) or "",
            "title_of": lambda story_id: store.article_title(int(story_id))}
