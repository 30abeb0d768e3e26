"""Thin Scrapy glue around the pure dedup library: one pipeline a stage.

    analyse (extract + fingerprint, worker processes) -> exact (Bloom + confirm)
        -> near (Single-Pass over Simhash/SpotSigs) -> store (hands on the page's ArticleVerdict)

All of them share the crawl's :class:`~newsdedup.crawl.pipelines.state.CrawlState`, a Scrapy extension.
"""

from __future__ import annotations

import functools
import inspect

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from newsdedup.crawl.items import ArticlePage
from newsdedup.crawl.pipelines.state import CrawlState
from newsdedup.storage.base import RunLockLost


class NotSaved(DropItem):
    """The store lost its run lock: the page cannot be saved in this run (counted; the next run fetches it)."""


def _not_saved(pipeline: StagePipeline, item, exc: RunLockLost) -> NotSaved:
    site = getattr(item, "site", None)
    if site is not None:
        pipeline.state.page_lost(site)
    return NotSaved(str(exc), log_level="DEBUG")  # said once by the store and in the verdict, not a page at a time


def _dropped_when_lock_lost(method):
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def process_item(self, item):
            try:
                return await method(self, item)
            except RunLockLost as exc:
                raise _not_saved(self, item, exc) from None
    else:
        @functools.wraps(method)
        def process_item(self, item):
            try:
                return method(self, item)
            except RunLockLost as exc:
                raise _not_saved(self, item, exc) from None
    return process_item


class StagePipeline:
    """Base of the newsdedup pipelines: shared state, opened and closed with the spider.

    Each pipeline's ``process_item`` is wrapped (:meth:`__init_subclass__`) so that a page met after the store lost
    its run lock is dropped and counted as not processed, instead of a traceback a page while the crawl stops.
    """

    stage = "stage"

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "process_item" in cls.__dict__:
            cls.process_item = _dropped_when_lock_lost(cls.__dict__["process_item"])

    def __init__(self, *, crawler: Crawler, state: CrawlState) -> None:
        self.crawler = crawler
        self.state = state

    @classmethod
    def from_crawler(cls, crawler: Crawler):
        return cls(crawler=crawler, state=CrawlState.of(crawler))

    def open_spider(self) -> None:
        self.state.open()

    def close_spider(self) -> None:
        self.state.close()

    def inc(self, event: str, count: int = 1) -> None:
        self.crawler.stats.inc_value(f"newsdedup/{self.stage}/{event}", count)

    @staticmethod
    def handles(item: object) -> bool:
        return isinstance(item, ArticlePage)

    def process_item(self, item):
        """Dedup stages see analysed article pages this process decides, not decided yet; anything else (an exact
        repeat after the exact stage, a distributed crawl's page its writer decides) passes through."""
        if not self.handles(item) or item.analysis is None or item.status is not None or item.entry_id is not None:
            return item
        return self.process_page(item)

    def process_page(self, page: ArticlePage) -> ArticlePage:
        raise NotImplementedError


StagePipeline.process_item = _dropped_when_lock_lost(StagePipeline.process_item)
