"""Request filter that also remembers article pages handled by earlier runs.

Scheduled monitoring runs fetch the start and list pages every time, but an article URL that an
earlier run already handled (stored, recorded as a repeat, or skipped or failed and not yet due for
another try, see :mod:`newsdedup.run.retry`) is not fetched again. The URLs are in a Bloom filter kept in the
store's state folder (``NEWSDEDUP_STATE_DIR``, :class:`newsdedup.dedupstore.state.UrlState`: caught up from the
store when the crawl opens, the run's URLs taken in when it closes) or, with ``none``, read from the article
store when the crawl opens into a Bloom filter sized for twice the stored count at
``NEWSDEDUP_URLFILTER_ERROR_RATE`` (default 1e-7, so fewer than one new article in a million is
wrongly skipped even after the filter grows; a false positive here can only skip a page, and it
costs nothing else). Only requests the spider marks ``meta["newsdedup_article"]`` are checked there.
With a retention window (``NEWSDEDUP_RETENTION_DAYS``) the Bloom filter holds only the URLs fetched
within it; a link it has not seen is looked up in the store, so older articles are not fetched again
either (see :mod:`newsdedup.run.retention`).

A distributed crawl (``NEWSDEDUP_REDIS_URL``) uses :class:`newsdedup.distributed.scheduler.SharedArticlesDupeFilter` instead:
the article URLs handled for good are in Redis (:class:`newsdedup.distributed.redis_run.UrlFilter`, written by the one writer after each
commit), a link Redis does not know is looked up in the store, and within a run scrapy-redis's ``SADD`` filter,
shared by the run's processes, keeps two of them from fetching one page.

Within a run Scrapy's fingerprint filter still applies, but in memory only, also with ``JOBDIR``:
Scrapy would write every scheduled request to ``requests.seen`` as it is scheduled, and after a
``kill -9`` that file names pages whose results were never committed (so a resumed job would never
fetch them) and list pages a resumed job must fetch again. The database is the one record of what
is done; ``JOBDIR`` keeps Scrapy's request queue.
"""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.dupefilters import RFPDupeFilter
from w3lib.url import canonicalize_url

from newsdedup.dedup.bloom import BoundedBloomFilter
from newsdedup.run import options
from newsdedup.run import retention
from newsdedup.run import runstats
from newsdedup.storage import open_store
from newsdedup.storage.base import StoreError

logger = logging.getLogger(__name__)

ARTICLE_META_KEY = "newsdedup_article"
SITE_META_KEY = "newsdedup_site"


def url_key(url: str) -> str:
    """The form under which article URLs are remembered (query order, fragments ignored)."""
    return canonicalize_url(url)


class KnownArticles:
    """What both filters do with a request the spider marked as an article: known -> not fetched, counted."""

    crawler = None

    def _known_article(self, url: str, *, count: bool = True) -> bool:
        raise NotImplementedError

    def knows_article(self, url: str) -> bool:
        """Whether an earlier run handled the article at ``url``; nothing is counted (the spider asks it to decide
        whether a list feed's next page is worth fetching)."""
        return self._known_article(url, count=False)

    def _filter_article(self, request: Request, seen_in_run) -> bool | None:
        """True: known from an earlier run (filtered and counted); None: not an article or not known."""
        if not request.meta.get(ARTICLE_META_KEY) or not self._known_article(request.url):
            return None
        self.crawler.stats.inc_value("newsdedup/urlfilter/filtered")
        site = request.meta.get(SITE_META_KEY)
        if site and not seen_in_run(request):  # count each known link once per site
            self.crawler.stats.inc_value(runstats.site_key(site, runstats.KNOWN))
        return True

    def request_seen(self, request: Request) -> bool:
        if self._filter_article(request, super().request_seen):  # type: ignore[misc] - the filter class's
            return True
        return super().request_seen(request)  # type: ignore[misc]

    _lookups_failed = False  # the store failed a lookup: not asked again this run

    def _known_before_window(self, store, url: str, count: bool) -> bool:
        if store is None or self._lookups_failed:
            return False
        try:
            known = store.knows_url(url)
        except StoreError as exc:
            # The store went away mid-run (its server stopped or killed): the crawl's own store stops the run as
            # it notices. Until then a link is taken as new rather than raise in the scheduler, and the store is
            # not asked again (each lookup could wait its connection timeout, holding the reactor).
            self._lookups_failed = True
            logger.warning("URL filter: links older than the retention window are no longer looked up in the store "
                           "this run (%s); a page stored before is recognised when its record is written", exc)
            return False
        if known and count:
            self.crawler.stats.inc_value("newsdedup/urlfilter/filtered_before_window")
        return known


class SeenArticlesDupeFilter(KnownArticles, RFPDupeFilter):
    @classmethod
    def from_crawler(cls, crawler):
        # No job directory: nothing about this run's requests is written to requests.seen (module doc).
        dupefilter = cls(None, crawler.settings.getbool("DUPEFILTER_DEBUG"), fingerprinter=crawler.request_fingerprinter)
        dupefilter.crawler = crawler
        dupefilter.storage_uri = options.get_str(crawler.settings, "NEWSDEDUP_STORAGE_URI")
        dupefilter.error_rate = options.get_float(crawler.settings, "NEWSDEDUP_URLFILTER_ERROR_RATE")
        dupefilter.retention_days = retention.retention_days(crawler.settings)
        dupefilter.state_dir = options.state_dir(crawler.settings, dupefilter.storage_uri) \
            if dupefilter.storage_uri else None
        dupefilter.seen_articles = None
        dupefilter.looks_up_older = False
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
            known = self._persisted_urls(store, since) if self.state_dir is not None else None
            if known is None:
                known = self._urls(store, since)
        except BaseException:
            store.close()
            raise
        self.looks_up_older = since is not None  # URLs older than the window are looked up in the store
        if since is None and self.state_dir is None:
            store.close()
        else:
            self.store = store  # also for the persisted URLs to take in this run's at the end
        self.crawler.stats.set_value("newsdedup/urlfilter/known", known)
        logger.info("URL filter: %d article pages known from earlier runs", known)

    def _urls(self, store, since: str | None) -> int:
        urls = [url_key(u) for u in store.iter_fetched_urls(since=since)]
        self.seen_articles = BoundedBloomFilter.of(
            urls, expected=max(2 * len(urls), 100_000), error_rate=self.error_rate
        )
        return len(urls)

    def _persisted_urls(self, store, since: str | None) -> int | None:
        """The URLs from the state folder (newsdedup.dedupstore.state.UrlState), caught up with the store."""
        from newsdedup.dedupstore.state import FolderBusy, UrlState

        try:
            self.seen_articles, report = UrlState.open(self.state_dir, store, error_rate=self.error_rate,
                                                       retention_days=self.retention_days, since=since, key=url_key)
        except FolderBusy as exc:  # another process writes the folder: left alone for this run
            logger.warning("URL filter state: %s; read from the store for this run", exc)
            self.state_dir = None
            return None
        except OSError as exc:  # a folder it cannot write: this run reads the URLs, as without one
            logger.error("URL filter state in %s unusable (%s): read from the store for this run", self.state_dir, exc)
            self.state_dir = None
            return None
        self.crawler.stats.set_value("newsdedup/state/urls_opened_s", round(report.opened_s, 3))
        self.crawler.stats.set_value("newsdedup/state/urls_caught_up_rows", report.caught_up_rows)
        self.crawler.stats.set_value("newsdedup/state/urls_rebuilt", int(report.rebuilt))
        return len(self.seen_articles)

    def _known_article(self, url: str, *, count: bool = True) -> bool:
        if self.seen_articles is None:
            return False
        # A link the Bloom filter has not seen may have been handled before the retention window.
        return url_key(url) in self.seen_articles or \
            self._known_before_window(self.store if self.looks_up_older else None, url, count)

    def close(self, reason: str) -> None:
        if self.store is not None:
            try:
                if self.state_dir is not None and self.seen_articles is not None:
                    self.seen_articles.sync(self.store, force_save=True)  # this run's URLs: not read at the next start
            except (OSError, StoreError) as exc:
                logger.error("URL filter state in %s not saved (%s): the next crawl catches up", self.state_dir, exc)
            finally:
                if self.state_dir is not None and self.seen_articles is not None:
                    self.seen_articles.close()  # releases the state folder's lock
                try:
                    self.store.close()
                except StoreError as exc:  # a read-only use: nothing pending to lose
                    logger.warning("%s", exc)
                self.store = None
        return super().close(reason)
