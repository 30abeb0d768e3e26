"""Thin Scrapy glue around the pure dedup library: one pipeline a stage.

    analyse (extract + fingerprint, worker processes) -> exact (Bloom + confirm)
        -> near (Single-Pass over Simhash/SpotSigs) -> store (hands on the page's ArticleVerdict)

All of them share the crawl's :class:`~newsdedup.crawl.pipelines.state.CrawlState`, a Scrapy extension.
"""

from __future__ import annotations

from scrapy.crawler import Crawler

from newsdedup.crawl.items import ArticlePage
from newsdedup.crawl.pipelines.state import CrawlState


class StagePipeline:
    """Base of the newsdedup pipelines: shared state, opened and closed with the spider."""

    stage = "stage"

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
