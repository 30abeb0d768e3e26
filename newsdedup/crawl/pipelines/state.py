"""State the newsdedup pipelines share within one crawl: store, worker pool, dedup stages, order.

Each pipeline is a thin Scrapy component; they find the one :class:`CrawlState` of their
crawler through :meth:`CrawlState.of`.  The state opens with the first pipeline (taking the
database's run lock) and closes with the last (reference counted), rebuilding the in-memory dedup
indexes from the store when it opens: the database is the truth, the indexes are caches.

In a distributed crawl (``NEWSDEDUP_REDIS_URL``) the process only extracts and publishes its pages to the run's
result stream; a heartbeat keeps its membership of the run, and takes the writer role
(:mod:`newsdedup.distributed.writer`) when the stream has entries and the store's run lock is free. The spider
stays open while the run has work anywhere: queued requests, a busy process, entries not yet committed.

When the spider closes, the state turns what was committed into per-site stats, judges the run
(:mod:`newsdedup.run.verdict`: exit status and problems), records one ``site_runs`` row per site, and
logs the closing summary (:mod:`newsdedup.run.runstats`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.settings import BaseSettings

from newsdedup.crawl import scheduler

from newsdedup.run import options

from newsdedup.run import retention

from newsdedup.run import runstats
from newsdedup.crawl.analysis import AnalysisPool, ExtractOptions, PageSkipped
from newsdedup.dedup.engine import DedupEngine, ExactStage
from newsdedup.crawl.items import ArticlePage, FetchFailure
from newsdedup.dedup.features import FeatureConfig
from newsdedup.crawl.ordering import InOrder
from newsdedup.crawl.reuse_index import StoryReuse
from newsdedup.crawl.outputs import OutputWatch, feed_storage_failures, handed_on
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer
from newsdedup.dedup.store_engine import engine_from_store, save_engine_state
from newsdedup.extract.template import SiteTemplate
from newsdedup.run.retry import RetryPolicy
from newsdedup.clock import utc_iso, utc_now
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleStore, SiteRunRecord, StoreError, StoreInUse
from newsdedup.run.verdict import ExitCode, RunFacts, Verdict, judge

logger = logging.getLogger(__name__)

# Per-site counters of what a process requested itself (and its failed and skipped pages, counted as it publishes
# them). In a distributed crawl each process shares its own in Redis, and judges the run's sites on every process's
# sum: one process's share of a small site's requests is too small a sample (one 404 among four requests is 25%),
# and links found by one process are fetched by another. Stored pages are counted by the writer that stored them.
_CRAWL_SIDE = (runstats.LIST_PAGES, runstats.LIST_FAILED, runstats.ARTICLE_LINKS, runstats.KNOWN, runstats.FETCHED,
               runstats.ROBOTS, runstats.IGNORED, runstats.DEPTH_LIMITED)

# Stored pages, counted by the writer that committed them; shared too, so every process's summary is the run's.
_STORED = (runstats.UNIQUE, runstats.NEAR, runstats.REPEAT, runstats.REUSED)

_STATE_ATTRIBUTE = "_newsdedup_state"


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
        )

    def open_store(self) -> ArticleStore:
        """The crawl's store, not yet open."""
        return open_store(self.storage_uri, batch_size=self.batch_size, busy_timeout=self.busy_timeout,
                          retries=self.store_retries)


def _template_state(site: str) -> str:
    return f"extract/template/{site}"


class CrawlState:
    def __init__(self, crawler: Crawler, settings: CrawlSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.order = InOrder()
        self.store: ArticleStore | None = None
        self.pool: AnalysisPool | None = None
        self.engine: DedupEngine | None = None  # the dedup decision; exact and clusterer are its two stages
        self.exact: ExactStage | None = None
        self.clusterer: SinglePassClusterer | None = None
        self.reuse: StoryReuse | None = None  # None when NEWSDEDUP_REUSE is off
        self.templates: dict[str, SiteTemplate] = {}
        self._users = 0
        self.started_at = utc_iso(utc_now())
        self.store_error: str | None = None  # why the final commit failed
        self.lost: dict[str, int] = {}  # pages fetched but never recorded, by site
        self._closing = False
        # Pages of sites whose template is still cold, kept (body compressed) to be read again (pipelines/analyse.py).
        self.held: dict[str, list[ArticlePage]] = {}
        self.stages: dict[str, object] = {}  # the pipelines by stage name
        # A distributed crawl: the run, its result stream and URL filter, the writer role when this process has it.
        self.run = None
        self.stream = None
        self.urls = None
        self.writer = None
        self.verdicts = None  # the run's verdict board (newsdedup.distributed.redis_run.VerdictBoard)
        self._stopping_since: float | None = None  # when this process was asked to stop (SIGTERM), if it was
        self._looked_done_at: int | None = None  # when the run first looked done (Redis ms), until it did not
        self._tasks: list[asyncio.Task] = []
        if settings.redis_url:
            crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self._finished, signal=signals.item_scraped)
        crawler.signals.connect(self._finished, signal=signals.item_dropped)
        crawler.signals.connect(self._finished, signal=signals.item_error)
        crawler.signals.connect(self._lost_in_pipeline, signal=signals.item_error)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        # Failures after our pipelines (the user's item pipelines, feed exports), for the run's verdict.
        self.outputs = OutputWatch(crawler)
        self._facts: RunFacts | None = None  # what the verdict was judged on, once it was
        crawler.signals.connect(self._feeds_closed, signal=signals.feed_exporter_closed)

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlState:
        state = getattr(crawler, _STATE_ATTRIBUTE, None)
        if state is None:
            state = cls(crawler, CrawlSettings.from_settings(crawler.settings))
            setattr(crawler, _STATE_ATTRIBUTE, state)
        return state

    def _finished(self, item, **kwargs) -> None:
        ticket = getattr(item, "ticket", None)
        if ticket is not None:
            self.order.finish(ticket)

    def _lost_in_pipeline(self, item, **kwargs) -> None:
        if handed_on(item):  # stored; an item pipeline after ours failed (OutputWatch counts it)
            return
        site = getattr(item, "site", None)
        if site is not None:
            self.page_lost(site)

    def page_lost(self, site: str, count: int = 1) -> None:
        """Fetched pages that will not be recorded in this run (the next run fetches them again)."""
        self.lost[site] = self.lost.get(site, 0) + count

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

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        self._users += 1
        if self._users > 1:
            return
        s = self.settings
        self.store = s.open_store()
        self.store.open()
        if s.redis_url:
            self._join_distributed_crawl()
        else:
            self.store.lock_for_run()
        self.pool = AnalysisPool(s.features, workers=s.workers, timeout=s.extract_timeout)
        self.pool.start()
        if not s.redis_url:  # a distributed crawl's writer builds them when it takes the role
            self._rebuild_indexes()

    def close(self) -> None:
        """The last pipeline closes: stop the workers and commit; the store stays open for the run's record."""
        self._users -= 1
        if self._users > 0:
            return
        if self.pool is not None:
            self.pool.shutdown()
        for task in self._tasks:
            task.cancel()
        if self.store is not None:
            try:
                if self.engine is not None:
                    save_engine_state(self.store, self.engine)
                if not self.settings.redis_url or self.writer is not None:
                    # In a distributed crawl only the writer writes the store; the templates the other processes
                    # learned from their own pages are learned again next run.
                    for site, template in self.templates.items():
                        self.store.save_state(_template_state(site), template.to_bytes())
                if self.writer is not None:
                    self.writer.commit()  # what it applied is committed and acknowledged, or left pending
                self.store.flush()
            except StoreError as exc:
                self.store_error = str(exc)
                logger.error("%s", exc)
        self._publish_stats()

    # -- a distributed crawl -------------------------------------------------------------------
    def _join_distributed_crawl(self) -> None:
        from newsdedup.distributed import redis_run
        from newsdedup.distributed.scheduler import run_of

        self.run = run_of(self.crawler)  # joined by the scheduler, which opens before the pipelines
        self.started_at = utc_iso(self.run.started_at)  # every process records the run under the run's start
        self.stream = redis_run.ResultStream(
            self.run.client, self.run.prefix,
            on_undecodable=lambda _entry_id, _error: self.crawler.stats.inc_value(runstats.REDIS_UNDECODABLE))
        self.urls = redis_run.UrlFilter(self.run.client, self.run.prefix, retention_days=self.settings.retention_days)
        self.verdicts = redis_run.VerdictBoard(self.run.client, self.run.key("verdicts"))
        self._tasks.append(asyncio.ensure_future(self._heartbeat()))

    def publish(self, entry) -> str:
        """Hand an analysed page (or a failed fetch) to the run's writer, through the stream.

        A failed fetch or a skipped page counts in this process's per-site stats now: each process's verdict
        judges the requests it made itself (its share of failed requests, its pages not processed), not the
        writer's commits, which are every process's. Returns the entry's id."""
        entry_id = self.stream.publish(entry)
        if isinstance(entry, FetchFailure):
            self.crawler.stats.inc_value(runstats.site_key(entry.site, f"failed/{entry.kind}"))
        elif isinstance(entry[1], PageSkipped):
            self.crawler.stats.inc_value(runstats.site_key(entry[0].site, f"skipped/{entry[1].reason}"))
        return entry_id

    async def verdict_of(self, entry_id: str) -> dict:
        """The run's writer's verdict on the page this process published as ``entry_id`` (the fields of
        ArticlePage.verdict(), or ``dropped``: why the writer dropped it, e.g. stored by an earlier run).

        Waiting is the price of items with a verdict: the page's item stays in Scrapy's scraper until the writer
        committed the page, a batch at a time (about a tenth of a second); the process meanwhile goes on with
        other pages. A process asked to stop waits for its last verdicts up to LIVENESS seconds (see _beat)."""
        verdict = await self.verdicts.wait(entry_id)
        if verdict is None:
            return {"dropped": "this process stopped before the run's writer gave the page's verdict (the writer "
                               "stores it all the same: `newsdedup export` lists it)", "log_level": "WARNING"}
        return verdict

    async def _heartbeat(self) -> None:
        from newsdedup.distributed.redis_run import HEARTBEAT

        while True:
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - a Redis hiccup must not end the heartbeat; the next beat retries
                logger.exception("distributed crawl: heartbeat failed")
            await asyncio.sleep(HEARTBEAT)

    def _beat(self) -> None:
        engine = self.crawler.engine
        idle = engine is not None and engine.spider is not None and engine.spider_is_idle()
        # The counters before the busy flag: a process seen idle has shared its final counters.
        self.run.client.hset(self.run.key("sites"), self.run.worker, json.dumps(self._own_site_counters()))
        self.run.beat(busy=not idle, keep=[*getattr(self.run, "keep", ()), self.run.key("sites"),
                                           self.run.key("verdicts")])
        self._give_up_verdicts_when_stopped_long()
        if self.writer is None and len(self.stream):
            self._try_to_become_writer()
        if idle:
            # Scrapy's idle engine looks at its scheduler, and asks whether to close, only every 5 s: another
            # process may have queued requests, or the run may be done (the last page committed). Look now: a
            # run of several processes then ends within a heartbeat of its last commit, not up to 5 s later.
            engine._slot.nextcall.schedule()  # noqa: SLF001 - no public way to wake an idle engine

    def _give_up_verdicts_when_stopped_long(self) -> None:
        """A process asked to stop (SIGTERM, Ctrl-C) waits for the verdicts of its last pages while the run's writer
        gives them, but not for ever (a writer that cannot commit would hold the stop): LIVENESS seconds."""
        from newsdedup.distributed.redis_run import LIVENESS

        if self.crawler.crawling or not self.verdicts.waiting():
            return
        now = time.monotonic()
        self._stopping_since = self._stopping_since or now
        if now - self._stopping_since > LIVENESS:
            logger.warning("distributed crawl: stopping without the verdicts of %d page(s)", self.verdicts.waiting())
            self.verdicts.give_up()

    def _own_site_counters(self) -> dict[str, int]:
        counters = {}
        for key, value in self.crawler.stats.get_stats().items():
            if key.startswith(runstats.SITE_PREFIX) and isinstance(value, int):
                what = key[len(runstats.SITE_PREFIX):].split("/", 1)[-1]
                if what in _CRAWL_SIDE or what.startswith(("failed/", "skipped/")):
                    counters[key] = value
        # What this process stored while it was the writer (the skips and failures it committed are every
        # process's, counted by each process above).
        for (site, what), count in self.store.committed.items():
            if what in _STORED:
                counters[runstats.site_key(site, what)] = count
        return counters

    def _add_other_processes_site_counters(self) -> None:
        """Every other process's shared counters into this one's stats: the summary and verdict are the run's."""
        for worker, counters in self.run.client.hgetall(self.run.key("sites")).items():
            if worker.decode() != self.run.worker:
                for key, value in json.loads(counters).items():
                    self.crawler.stats.inc_value(key, value)

    def _queued(self) -> int:
        return self.run.client.zcard(self.run.key("requests"))

    def _try_to_become_writer(self) -> None:
        from newsdedup.distributed.writer import StreamWriter

        try:
            self.store.lock_for_run()
        except StoreInUse:
            return  # another process writes
        self.store.refresh()  # article ids continue after the last writer's
        self._rebuild_indexes()
        self.writer = StreamWriter(self, self.stream, self.urls, self.verdicts)
        self._tasks.append(asyncio.ensure_future(self._write()))
        logger.info("distributed crawl: this process (%s) is the writer now", self.run.worker)

    async def _write(self) -> None:
        while True:
            try:
                await self.writer.run(lambda: True)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - entries stay pending in the stream; tried again
                logger.exception("distributed crawl: the writer failed; trying again in 1 s")
                await asyncio.sleep(1.0)

    def _spider_idle(self, spider) -> None:
        """Stay open while the run has work anywhere: queued requests, a busy process, uncommitted entries.

        The run is done only when it still looks done after every other process has beaten again: the busy flags
        read are up to a heartbeat old, and a process seen idle may since have taken the last queued request (this
        one would then close on counters without that page)."""
        try:
            done = not self._queued() and not self.run.others_busy() and not len(self.stream)
            if not done:
                self._looked_done_at = None
            elif self._looked_done_at is None:
                self._looked_done_at = self.run.now_ms()
                done = False
            else:
                done = self.run.others_beaten_since(self._looked_done_at)
        except Exception:  # noqa: BLE001 - Redis unreachable for a moment: ask again later
            logger.exception("distributed crawl: cannot tell whether the run is done")
            done = False
        if not done:
            raise DontCloseSpider

    # -- the run's verdict ---------------------------------------------------------------------
    def _spider_closed(self, spider, reason: str) -> None:
        if self.store is None:
            return
        stats = self.crawler.stats
        not_saved = self.store.pending_count()
        for site, pages in self.held.items():  # stopped before they were read again: the next run fetches them
            stats.set_value(runstats.site_key(site, runstats.HELD_AT_STOP), len(pages))
        self.held.clear()
        for (site, what), count in self.store.committed.items():
            if self.run is not None and what.startswith(("skipped/", "failed/")):
                continue  # a distributed crawl's process counts its own (publish()); the writer commits everyone's
            stats.set_value(runstats.site_key(site, what), count)
        for site, count in self.lost.items():
            stats.set_value(runstats.site_key(site, runstats.LOST), count)
        if self.run is not None:
            undecodable = stats.get_value(runstats.REDIS_UNDECODABLE, 0)
            if undecodable:
                logger.warning("distributed crawl: %d stream entr(ies) or queued request(s) in Redis were not data a "
                               "crawl process wrote and were dropped unread (%s): who else writes to this Redis?",
                               undecodable, runstats.REDIS_UNDECODABLE)
            try:
                self._add_other_processes_site_counters()
            except Exception:  # noqa: BLE001 - Redis gone: judge this process's own requests
                logger.exception("distributed crawl: the other processes' counters could not be read")
        sites = [s.name for s in getattr(spider, "sites", ())] or runstats.sites_in(stats.get_stats())
        tallies = runstats.tallies_of(stats.get_stats(), sites)
        had_links = {t.site: self.store.site_had_article_links(t.site) for t in tallies
                     if t.list_pages and not t.article_links}
        self._facts = RunFacts(
            finish_reason=reason, sites=tallies, not_saved=not_saved, store_error=self.store_error,
            worker_lost=self.pool.lost if self.pool is not None else None, had_links_before=had_links,
            requests_lost=stats.get_value(scheduler.STATS_PREFIX + "requests_lost", 0),
            max_http_error_share=self.settings.max_http_error_share,
            output_failures=[*self.outputs.problems(), *feed_storage_failures(stats.get_stats())],
        )
        verdict = judge(self._facts)
        finished_at = utc_iso(utc_now())
        for tally in tallies:
            self.store.add_site_run(SiteRunRecord(
                run_started_at=self.started_at, site=tally.site, finished_at=finished_at, finish_reason=reason,
                exit_code=int(verdict.code), list_pages=tally.list_pages, article_links=tally.article_links,
                fetched=tally.fetched, stored=tally.stored, repeats=tally.repeats, skipped=tally.skipped_total,
                failed=tally.failed_total,
            ))
        try:
            self.store.close()
        except StoreError as exc:
            if not not_saved:  # only the run's own record was lost: say so, the pages are safe
                logger.error("%s", exc)
        if self.run is not None:
            self.run.leave()
        self._set_verdict(verdict, reason)
        summary = runstats.format_summary(stats.get_stats(), sites)
        logger.log(logging.INFO if verdict.code == ExitCode.OK else logging.WARNING, "%s", summary)

    def _set_verdict(self, verdict: Verdict, reason: str) -> None:
        stats = self.crawler.stats
        stats.set_value("newsdedup/run/exit_code", int(verdict.code))
        stats.set_value("newsdedup/run/verdict", verdict.name)
        stats.set_value("newsdedup/run/problems", verdict.problems)
        if verdict.code != ExitCode.OK and reason == "finished":
            stats.set_value("finish_reason", verdict.name)  # Scrapy's 'finished' would say all went well

    def _feeds_closed(self) -> None:
        """Scrapy stores the feeds after the spider closed, so after the summary: a feed it could not store changes
        the verdict then (one more line in the log, the exit status)."""
        failed = feed_storage_failures(self.crawler.stats.get_stats())
        if self._facts is None or not failed or set(failed) <= set(self._facts.output_failures):
            return
        self._facts.output_failures = [*self._facts.output_failures, *failed]
        verdict = judge(self._facts)
        self._set_verdict(verdict, self._facts.finish_reason)
        logger.warning("newsdedup run %s: exit status %d (%s)\n%s", self._facts.finish_reason, int(verdict.code),
                       verdict.name, "\n".join(f"problem: {p}" for p in verdict.problems))

    def _rebuild_indexes(self) -> None:
        since = retention.window_start(self.settings.retention_days)  # None: remember every stored story
        rebuilt = engine_from_store(self.store, self.settings.features, self.settings.near, since=since,
                                    error_rate=self.settings.exact_error_rate)
        self.engine = rebuilt.engine
        self.exact, self.clusterer = self.engine.exact, self.engine.clusterer
        self.reuse = StoryReuse.rebuild(self.store, since=since) if self.settings.reuse else None
        stats = self.crawler.stats
        stats.set_value("newsdedup/exact/known_fingerprints", rebuilt.known_fingerprints)
        stats.set_value("newsdedup/near/known_centres", rebuilt.known_centres)
        logger.info("dedup state rebuilt from the store: %d fingerprints, %d cluster centres%s",
                    rebuilt.known_fingerprints, rebuilt.known_centres, f" (stories active since {since})" if since else "")

    def template(self, site: str) -> SiteTemplate | None:
        """The learned template of ``site`` (restored from the store the first time), None when switched off."""
        if not self.settings.site_templates:
            return None
        template = self.templates.get(site)
        if template is None:
            blob = self.store.load_state(_template_state(site))
            try:
                template = SiteTemplate.from_bytes(blob) if blob is not None else SiteTemplate()
            except ValueError as exc:
                logger.warning("site template of %s not restored (%s): learning it again", site, exc)
                template = SiteTemplate()
            self.templates[site] = template
        return template

    def _publish_stats(self) -> None:
        stats = self.crawler.stats
        committed = self.store.committed if self.store is not None else {}
        totals: dict[str, int] = {}
        for (_, what), count in committed.items():
            group = {runstats.UNIQUE: "articles", runstats.NEAR: "articles", runstats.REPEAT: "repeats"}.get(
                what, what.split("/", 1)[0])
            totals[group] = totals.get(group, 0) + count
        for group in ("articles", "repeats", "skipped", "failed"):
            stats.set_value(f"newsdedup/store/{group}", totals.get(group, 0))  # committed rows only
        if self.pool is not None:
            for name, count in self.pool.counts.items():
                stats.set_value(f"newsdedup/workers/{name}", count)
        if self.writer is not None:  # a distributed crawl's writer: what applying the stream cost this process
            stats.set_value("newsdedup/writer/applied", self.writer.applied)
            stats.set_value("newsdedup/writer/cpu_seconds", round(self.writer.cpu_seconds, 3))
        if self.exact is not None:
            bloom = self.exact.bloom
            stats.set_value("newsdedup/exact/bloom_maybe", self.exact.stats.bloom_maybe)
            stats.set_value("newsdedup/exact/bloom_false_positive", self.exact.stats.bloom_false_positive)
            stats.set_value("newsdedup/exact/bloom_bytes", bloom.size_bytes)

