"""The state newsdedup's pipelines share within one crawl: a Scrapy extension (``EXTENSIONS`` in newsdedup.settings).

Each pipeline is a thin Scrapy component that reaches the crawl's one :class:`CrawlState` through
``crawler.get_extension`` (:meth:`CrawlState.of`). The parts of a crawl, each owning one thing:

- :class:`CrawlState` (here): the store (opened with the first pipeline, taking the database's run lock, committed
  when the last pipeline closes, closed after the run's record), the order pages take through the dedup stages
  (:class:`~newsdedup.crawl.ordering.InOrder`), pages lost, and a request to stop the crawl;
- :class:`~newsdedup.crawl.indexes.DedupIndexes`: the exact and near-duplicate indexes, opened from the state folder
  (or rebuilt from the store) when the crawl opens and kept in step with each commit (the database is the truth,
  the indexes are caches);
- :class:`~newsdedup.crawl.templates.SiteTemplates`: the sites' learned templates, kept in the store;
- the analyse pipeline (:mod:`newsdedup.crawl.pipelines.analyse`): the worker pool and the pages held for a new
  site's template;
- :class:`~newsdedup.distributed.member.RunMember`, an extension of its own, in a distributed crawl
  (``NEWSDEDUP_REDIS_URL``): the run's membership, heartbeat, writer election and when the run is done; it attaches
  itself here as :attr:`CrawlState.distributed` when it joins the run;
- :class:`~newsdedup.crawl.verdict.RunVerdict`, an extension: the run's verdict (its own stats and the exit status),
  the ``site_runs`` record and the closing summary.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from newsdedup.clock import utc_iso, utc_now
from newsdedup.crawl import engine
from newsdedup.crawl.indexes import DedupIndexes
from newsdedup.crawl.ordering import InOrder
from newsdedup.crawl.outputs import handed_on
from newsdedup.crawl.templates import SiteTemplates
from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.extract.extractor import ExtractOptions
from newsdedup.extract.template import SiteTemplate
from newsdedup.run import options, retention, runstats
from newsdedup.run.retry import RetryPolicy
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleStore, StoreError

logger = logging.getLogger(__name__)

EXTENSION = "newsdedup.crawl.pipelines.state.CrawlState"


@dataclass
class CrawlSettings:
    storage_uri: str
    batch_size: int
    busy_timeout: float
    store_retries: int
    workers: int | None
    extract: ExtractOptions
    site_templates: bool
    extract_timeout: float | None
    retry: RetryPolicy
    max_http_error_share: float
    features: FeatureConfig
    near: NearSettings
    exact_error_rate: float
    retention_days: float | None = None
    reuse: bool = True  # the passage-reuse stage (newsdedup.crawl.reuse_index)
    redis_url: str | None = None  # a distributed crawl's Redis (docs/distributed.md)
    state_dir: Path | None = None  # where the dedup state persists (NEWSDEDUP_STATE_DIR); None: rebuilt each start
    alerts: str | None = None  # the watches file whose alerts are sent when the crawl closes (NEWSDEDUP_ALERTS)
    desk_url: str | None = None  # the desk's address for the alerts' links (NEWSDEDUP_DESK_URL)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CrawlSettings:
        """Every NEWSDEDUP_* setting of a crawl, checked (SettingError names a bad one)."""
        return cls(
            storage_uri=options.get_str(settings, "NEWSDEDUP_STORAGE_URI"),
            batch_size=options.get_int(settings, "NEWSDEDUP_STORAGE_BATCH_SIZE", minimum=1),
            busy_timeout=options.get_float(settings, "NEWSDEDUP_STORAGE_BUSY_TIMEOUT", minimum=0),
            store_retries=options.get_int(settings, "NEWSDEDUP_STORAGE_RETRIES", minimum=0),
            workers=options.workers(settings),
            extract=options.extract_options(settings),
            site_templates=options.get_bool(settings, "NEWSDEDUP_EXTRACT_SITE_TEMPLATES"),
            extract_timeout=options.extract_timeout(settings),
            retry=options.retry_policy(settings),
            max_http_error_share=options.share(settings, "NEWSDEDUP_MAX_HTTP_ERROR_SHARE"),
            features=options.feature_config(settings),
            near=options.near_settings(settings),
            exact_error_rate=options.get_float(settings, "NEWSDEDUP_EXACT_BLOOM_ERROR_RATE"),
            retention_days=retention.retention_days(settings),
            reuse=options.get_bool(settings, "NEWSDEDUP_REUSE"),
            redis_url=options.get_optional_str(settings, "NEWSDEDUP_REDIS_URL"),
            state_dir=options.state_dir(settings, options.get_str(settings, "NEWSDEDUP_STORAGE_URI")),
            alerts=options.get_optional_str(settings, "NEWSDEDUP_ALERTS"),
            desk_url=options.get_optional_str(settings, "NEWSDEDUP_DESK_URL"),
        )

    def open_store(self) -> ArticleStore:
        """The crawl's store: the one the crawl command opened and locked for this run (:func:`hand_over`), or a
        new one, not yet open."""
        prepared = _prepared.pop(self.storage_uri, None)
        if prepared is not None:
            return prepared
        return open_store(self.storage_uri, batch_size=self.batch_size, busy_timeout=self.busy_timeout,
                          retries=self.store_retries)


# The store the crawl command opened, checked and locked before Scrapy started, by storage URI. The crawl writes
# through that same store, so one connection holds the run lock from the check to the end: a second store in the
# same process would ask PostgreSQL for its session lock again on another connection and be refused (SQLite's
# flock registry hid this). Taken once, by the crawl's CrawlState.open.
_prepared: dict[str, ArticleStore] = {}


def hand_over(storage_uri: str, store: ArticleStore) -> None:
    """Give the crawl about to start in this process the store the command prepared (open, checked, locked)."""
    _prepared[storage_uri] = store


def take_back(store: ArticleStore) -> None:
    """The command's store after the crawl: forget it if the crawl never took it (the command closes it)."""
    for uri, prepared in list(_prepared.items()):
        if prepared is store:
            del _prepared[uri]


class CrawlState:
    def __init__(self, crawler: Crawler, settings: CrawlSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.order = InOrder()
        self.store: ArticleStore | None = None
        self.indexes = DedupIndexes(settings.features, settings.near, exact_error_rate=settings.exact_error_rate,
                                    retention_days=settings.retention_days, reuse=settings.reuse,
                                    state_dir=settings.state_dir)
        self.templates = SiteTemplates(settings.site_templates)
        self.started_at = utc_iso(utc_now())  # a distributed crawl's member sets the run's start
        self.store_error: str | None = None  # why the final commit failed
        self.open_error: StoreError | None = None  # why the store could not be opened and locked for this run
        # A distributed crawl's membership (newsdedup.distributed.member.RunMember), once it joined the run: its
        # pages go to the run's writer instead of this process's dedup stages.
        self.distributed = None
        self._users = 0
        self._closing = False
        crawler.signals.connect(self._finished, signal=signals.item_scraped)
        crawler.signals.connect(self._finished, signal=signals.item_dropped)
        crawler.signals.connect(self._finished, signal=signals.item_error)
        crawler.signals.connect(self._lost_in_pipeline, signal=signals.item_error)
        crawler.signals.connect(self._check_engine, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlState:
        return cls(crawler, CrawlSettings.from_settings(crawler.settings))

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlState:
        """The crawl's state (its extension instance); a clear error when ``EXTENSIONS`` left it out."""
        state = crawler.get_extension(cls)
        if state is None:
            raise RuntimeError(f"newsdedup's pipelines need their extension: keep {EXTENSION!r} in EXTENSIONS "
                               "(newsdedup/settings.py; a settings file or -s that sets EXTENSIONS replaces the dict)")
        return state

    @property
    def opened(self) -> bool:
        """Whether newsdedup's pipelines opened the store in this crawl (not so for a spider without them)."""
        return self.store is not None

    def _check_engine(self, spider) -> None:
        if self.opened and not engine.reachable(self.crawler):
            logger.warning("this Scrapy's engine lacks what newsdedup.crawl.engine reads: a crawl stopped by a "
                           "CLOSESPIDER_* limit may hold pages, and a distributed run ends up to 5 s later")

    def _finished(self, item, **kwargs) -> None:
        ticket = getattr(item, "ticket", None)
        if ticket is not None:
            self.order.finish(ticket)

    def _lost_in_pipeline(self, item, **kwargs) -> None:
        if handed_on(item):  # stored; an item pipeline after ours failed (the verdict's OutputWatch counts it)
            return
        site = getattr(item, "site", None)
        if site is not None:
            self.page_lost(site)

    def page_lost(self, site: str, count: int = 1) -> None:
        """Fetched pages that will not be recorded in this run (the next run fetches them again)."""
        self.crawler.stats.inc_value(runstats.site_key(site, runstats.LOST), count)

    @property
    def closing(self) -> bool:
        """True once :meth:`stop_crawl` asked the crawl to close."""
        return self._closing

    def stop_crawl(self, reason: str) -> None:
        """Close the spider with ``reason`` (once), e.g. when the worker pool cannot be rebuilt."""
        if self._closing:
            return
        self._closing = True
        asyncio.ensure_future(self.crawler.engine.close_spider_async(reason=reason))

    def template(self, site: str) -> SiteTemplate | None:
        """The learned template of ``site``, None when switched off."""
        return self.templates.of(site, self.store)

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        """The first pipeline opens the store; a distributed crawl's processes take the run lock in turns (the
        writer's; newsdedup.distributed.member), a single process for the whole run, and rebuilds the indexes."""
        self._users += 1
        if self._users > 1:
            return
        store = self.settings.open_store()
        try:
            store.open()
            if not self.settings.redis_url:
                store.lock_for_run()
        except StoreError as exc:
            # Not this crawl's store: nothing is judged or recorded in it (the summary would speak for another
            # run), and the crawl stops; the crawl command exits with the status of the error.
            self.open_error = exc
            logger.error("%s", exc)  # Scrapy may not log a failed open_spider (CrawlerProcess drops it)
            store.close()
            raise
        self.store = store
        # A store that lost its run lock (PostgreSQL stopped or restarted) writes no more: stop fetching pages the
        # crawl could not save; the verdict says what was not saved (exit status 4) and the next run fetches it.
        store.on_lock_lost(lambda message: self.stop_crawl("run_lock_lost"))
        if not self.settings.redis_url:
            # The persisted state follows the store's commits (a distributed crawl's writer calls it after each
            # batch's acknowledgement instead: newsdedup.distributed.writer).
            store.on_commit(lambda: self.indexes.after_commit(store))
            self.indexes.rebuild(store, self.crawler.stats)

    def close(self) -> None:
        """The last pipeline closes: commit; the store stays open for the run's record (:meth:`finish`)."""
        self._users -= 1
        if self._users > 0 or self.store is None:
            return
        member = self.distributed
        if member is not None:
            member.stop()  # its heartbeat and writer tasks
        try:
            self.indexes.save(self.store)
            if member is None or (member.writer is not None and member.redis_lost is None
                                  and member.redis_unreachable is None):
                # In a distributed crawl only the writer writes the store; the templates the other processes
                # learned from their own pages are learned again next run. Not after Redis lost the run's state
                # or could not be reached: the templates learned pages whose results were lost, which the next run
                # fetches and teaches again (a page taught twice makes its reprints look like text recurring on
                # the site's pages).
                self.templates.save(self.store)
            if member is not None:
                member.commit()  # what its writer applied is committed and acknowledged, or left pending
            self.store.flush()
        except StoreError as exc:
            self.store_error = str(exc)
            logger.error("%s", exc)
        finally:
            started = time.perf_counter()
            self.indexes.close()  # the persisted state saved whole (what the store did not commit is not in it)
            self.crawler.stats.set_value("newsdedup/state/saved_s", round(time.perf_counter() - started, 3))
        self._publish_stats()

    def report_committed(self) -> None:
        """What the store committed in this run into the per-site stats (the summary counts committed rows only)."""
        stats = self.crawler.stats
        for (site, what), count in self.store.committed.items():
            if self.distributed is not None and what.startswith(("skipped/", "failed/")):
                continue  # a distributed crawl's process counts its own (RunMember.publish); the writer commits everyone's
            stats.set_value(runstats.site_key(site, what), count)

    def finish(self, *, not_saved: int) -> None:
        """After the run's record: close the store (releasing the run lock) and leave a distributed run."""
        try:
            self.store.close()
        except StoreError as exc:
            if not not_saved:  # only the run's own record was lost: say so, the pages are safe
                logger.error("%s", exc)
        if self.distributed is not None:
            self.distributed.leave()

    def _publish_stats(self) -> None:
        stats = self.crawler.stats
        totals: dict[str, int] = {}
        for (_, what), count in self.store.committed.items():
            group = {runstats.UNIQUE: "articles", runstats.NEAR: "articles", runstats.REPEAT: "repeats"}.get(
                what, what.split("/", 1)[0])
            totals[group] = totals.get(group, 0) + count
        for group in ("articles", "repeats", "skipped", "failed"):
            stats.set_value(f"newsdedup/store/{group}", totals.get(group, 0))  # committed rows only
        self.indexes.publish_stats(stats)


__all__ = ["CrawlSettings", "CrawlState", "EXTENSION", "hand_over", "take_back"]
