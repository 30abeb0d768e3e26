"""Request filter that also remembers article pages fetched by earlier runs.

Scheduled monitoring runs fetch the start and list pages every time, but an article URL that an
earlier run already handled (stored, recorded as a repeat, or skipped) is not fetched again.
With a retention window (``NEWSDEDUP_RETENTION_DAYS``) the Bloom filter holds only the URLs fetched
within it; a link it has not seen is looked up in the store, so older articles are not fetched again
either (see :mod:`newsdedup.retention`).
The URLs are read from the article store when the crawl opens into a Bloom filter sized for
twice the stored count at ``NEWSDEDUP_URLFILTER_ERROR_RATE`` (default 1e-7, so fewer than one
new article in a million is wrongly skipped even after the filter grows; a false positive here
can only skip a page, and it costs nothing else).  Within a run Scrapy's own fingerprint filter
still applies.  Only requests the spider marks ``meta["newsdedup_article"]`` are checked.
"""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.dupefilters import RFPDupeFilter
from w3lib.url import canonicalize_url

from newsdedup import options, retention
from newsdedup.dedup.bloom import BoundedBloomFilter
from newsdedup.storage import open_store

logger = logging.getLogger(__name__)

ARTICLE_META_KEY = "newsdedup_article"


def url_key(url: str) -> str:
    """The form under which article URLs are remembered (query order, fragments ignored)."""
    return canonicalize_url(url)


class SeenArticlesDupeFilter(RFPDupeFilter):
    @classmethod
    def from_crawler(cls, crawler):
        dupefilter = super().from_crawler(crawler)
        dupefilter.crawler = crawler
        dupefilter.storage_uri = options.get_str(crawler.settings, "NEWSDEDUP_STORAGE_URI")
        dupefilter.error_rate = options.get_float(crawler.settings, "NEWSDEDUP_URLFILTER_ERROR_RATE")
        dupefilter.retention_days = retention.retention_days(crawler.settings)
        dupefilter.seen_articles = None
        dupefilter.store = None  # open during the crawl when a window is on: URLs older than it are looked up
        return dupefilter

    def open(self) -> None:
        super().open()
        if not self.storage_uri:
            return
        since = retention.window_start(self.retention_days)
        store = open_store(self.storage_uri)
        store.open()
        try:
            urls = [url_key(u) for u in store.iter_fetched_urls(since=since)]
        except BaseException:
            store.close()
            raise
        if since is None:
            store.close()
        else:
            self.store = store
        self.seen_articles = BoundedBloomFilter.of(
            urls, expected=max(2 * len(urls), 100_000), error_rate=self.error_rate
        )
        self.crawler.stats.set_value("newsdedup/urlfilter/known", len(urls))
        logger.info("URL filter: %d article pages known from earlier runs", len(urls))

    def request_seen(self, request: Request) -> bool:
        if self.seen_articles is not None and request.meta.get(ARTICLE_META_KEY):
            if url_key(request.url) in self.seen_articles:
                self.crawler.stats.inc_value("newsdedup/urlfilter/filtered")
                return True
            if self.store is not None and self.store.knows_url(request.url):  # fetched before the window
                self.crawler.stats.inc_value("newsdedup/urlfilter/filtered")
                self.crawler.stats.inc_value("newsdedup/urlfilter/filtered_before_window")
                return True
        return super().request_seen(request)

    def close(self, reason: str) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
        return super().close(reason)
