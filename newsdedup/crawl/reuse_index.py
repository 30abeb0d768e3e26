"""The passage-reuse relation in a crawl: the stored stories' index, each new page's reuses of them (issue 26).

A story is indexed by its first stored article (the cluster's centre, whose id is the story's id): a story
reprinted five times is one source, not six, and a passage of it is not taken for boilerplate that many stories
hold (:class:`~newsdedup.dedup.reuse.ReuseIndex`'s ``max_sources``). The index keeps fingerprints only; the
source's text, read when a page shares seeds with it, comes from the store (the open batch included), so memory
follows the retention window's postings, not its texts.

Like the near-duplicate index, it is a cache rebuilt from the store when a crawl starts (or a distributed crawl's
writer takes its role), holding the stories active within ``NEWSDEDUP_RETENTION_DAYS``.
"""

from __future__ import annotations

import logging

from newsdedup.dedup.reuse import ReuseIndex
from newsdedup.dedup.status import UNIQUE
from newsdedup.storage.base import ArticleRecord, ArticleStore, ReuseRecord

logger = logging.getLogger(__name__)


class StoryReuse:
    """Finds the stored stories a page reuses passages of, and indexes each new story once it is stored."""

    def __init__(self, store: ArticleStore) -> None:
        self.store = store
        # A story's id that is not in the store (its page's record never committed) reads as an empty text.
        self.index = ReuseIndex(text_of=lambda story_id: store.article_text(int(story_id)) or "")

    @classmethod
    def rebuild(cls, store: ArticleStore, *, since: str | None) -> StoryReuse:
        """The index of the stories active since ``since`` (None: every story), from the store."""
        reuse = cls(store)
        for record in store.iter_cluster_centres(since=since):
            reuse.index.add(str(record.id), record.text, when=record.fetched_at)
        logger.info("passage-reuse index rebuilt from the store: %d stories, %d fingerprints",
                    len(reuse.index), reuse.index.postings)
        return reuse

    def find(self, text: str, *, story: int | None) -> list[ReuseRecord]:
        """What ``text`` reuses of the stored stories other than its own ``story`` (a near duplicate's cluster: a
        reprint is not a quotation of what it reprints), most characters first."""
        found = self.index.find(text, exclude=() if story is None else (str(story),))
        return [ReuseRecord(int(reuse.source), self.store.url_of(int(reuse.source)) or "", reuse.chars,
                            reuse.fraction, reuse.source_fraction,
                            tuple((p.start, p.length, p.source_start, p.source_length, p.chars) for p in reuse.passages))
                for reuse in found]

    def add(self, record: ArticleRecord) -> None:
        """Index a stored article when it starts a story (a near duplicate's text is its story's already)."""
        if record.status == UNIQUE:
            self.index.add(str(record.id), record.text, when=record.fetched_at)
