"""A process's membership of a distributed crawl: a Scrapy extension (``EXTENSIONS`` in newsdedup.settings).

With ``NEWSDEDUP_REDIS_URL`` set (otherwise ``NotConfigured``: the extension is left out) the process only extracts
and publishes its pages to the run's result stream (:meth:`RunMember.publish`). :class:`RunMember` owns:

- the run (:class:`~newsdedup.distributed.redis_run.RedisRun`), which the scheduler joins when it opens
  (:func:`newsdedup.distributed.scheduler.run_of`), and leaves after the run's record (:meth:`RunMember.leave`);
- the heartbeat: this process's membership, its share of the per-site counters, and the writer role
  (:mod:`newsdedup.distributed.writer`), taken when the stream has entries and the store's run lock is free;
- the run's processes that die: the requests a dead process had taken off the queue and not finished (its record,
  :meth:`~newsdedup.distributed.redis_run.RedisRun.requeue_dead`) go back on the queue, so its pages are fetched in
  this run; and Redis losing the run's state mid-run, which fails the run (exit status 5);
- the close protocol: the spider stays open while the run has work anywhere (queued requests, a busy process,
  a process holding pages for a site's template, entries not yet committed), and the run's verdict is judged on
  every process's counters;
- the sharing of a new site's first pages between the processes' templates
  (:mod:`newsdedup.distributed.shared_templates`).

It joins when the spider opens, after newsdedup's pipelines opened the store, and attaches itself to the crawl's
state (:attr:`newsdedup.crawl.pipelines.state.CrawlState.distributed`), where the pipelines find it.
This module is loaded for every crawl (it is in ``EXTENSIONS``): Redis is imported only once the setting is on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured

from newsdedup.clock import utc_iso
from newsdedup.crawl import engine
from newsdedup.crawl.analysis import PageSkipped
from newsdedup.crawl.items import FetchFailure
from newsdedup.crawl.pipelines.analyse import AnalysePipeline
from newsdedup.crawl.pipelines.state import CrawlState
from newsdedup.distributed.addon import redis_url
from newsdedup.distributed.shared_templates import SharedTemplates
from newsdedup.run import options, retention, runstats

logger = logging.getLogger(__name__)

# Per-site counters of what a process requested itself (and its failed and skipped pages, counted as it publishes
# them). Each process shares its own in Redis, and judges the run's sites on every process's sum: one process's
# share of a small site's requests is too small a sample (one 404 among four requests is 25%), and links found by
# one process are fetched by another. Stored pages are counted by the writer that stored them.
_CRAWL_SIDE = (runstats.LIST_PAGES, runstats.LIST_FAILED, runstats.ARTICLE_LINKS, runstats.KNOWN, runstats.FETCHED,
               runstats.ROBOTS, runstats.IGNORED, runstats.DEPTH_LIMITED)

# 1 when Redis lost the run's state mid-run (RunMember._lost).
REDIS_LOST = "newsdedup/redis/lost"
REDIS_UNREACHABLE = "newsdedup/redis/unreachable"  # this process gave up on Redis (RunMember._unreachable)

# Requests a dead process had taken and not finished, queued again by this process (RunMember._requeue_dead).
REQUEUED = "newsdedup/distributed/requeued"

# Stored pages, counted by the writer that committed them; shared too, so every process's summary is the run's.
_STORED = (runstats.UNIQUE, runstats.NEAR, runstats.REPEAT, runstats.REUSED)


class RunMember:
    def __init__(self, crawler: Crawler, url: str) -> None:
        from newsdedup.distributed import redis_run

        self.crawler = crawler
        self.run = redis_run.RedisRun(redis_run.connect(url), options.get_str(crawler.settings, "NEWSDEDUP_REDIS_PREFIX"))
        self.retention_days = retention.retention_days(crawler.settings)
        self.state: CrawlState | None = None  # once joined
        self.stream = None  # the run's result stream, URL filter and verdict board, once joined
        self.urls = None
        self.verdicts = None
        self.writer = None  # the writer role, when this process has it
        self._stopping_since: float | None = None  # when this process was asked to stop (SIGTERM), if it was
        self._looked_done_at: int | None = None  # when the run first looked done (Redis ms), until it did not
        self._tasks: list[asyncio.Task] = []
        # What of the run's state in Redis was found gone mid-run (Redis restarted empty): its verdict is then
        # "pages not processed" (newsdedup.run.verdict), whatever this process saw of the rest.
        self.redis_lost: str | None = None
        # Since when (monotonic) Redis could not be reached at any beat, while it cannot; how long that may last.
        self._unreachable_since: float | None = None
        self.give_up_after = options.get_float(crawler.settings, "NEWSDEDUP_REDIS_GIVE_UP_AFTER", minimum=0.0)
        self.redis_unreachable: str | None = None  # why this process stopped, once it gave up on Redis
        crawler.signals.connect(self._join, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RunMember:
        url = redis_url(crawler.settings)
        if not url:
            raise NotConfigured  # a crawl on one machine
        return cls(crawler, url)

    def _join(self, spider) -> None:
        from newsdedup.distributed import redis_run

        state = CrawlState.of(self.crawler)
        if not state.opened:
            return  # a spider without newsdedup's pipelines: nothing to publish
        self.state = state
        state.started_at = utc_iso(self.run.started_at)  # every process records the run under the run's start
        self.stream = redis_run.ResultStream(
            self.run.client, self.run.prefix,
            on_undecodable=self._undecodable, on_lost=self._lost)
        self.urls = redis_run.UrlFilter(self.run.client, self.run.prefix, retention_days=self.retention_days)
        self.verdicts = redis_run.VerdictBoard(self.run.client, self.run.key("verdicts"))
        state.templates.share = SharedTemplates(self.run.client, self.run.key("template"), self.run.worker)
        state.distributed = self
        self._tasks.append(asyncio.ensure_future(self._heartbeat()))

    def _lost(self, what: str) -> None:
        """Redis lost the run's state (``what`` was found gone): requests queued, the request filter, the records
        of requests taken and the results not yet applied went with it. Said once; the run goes on with what the
        processes still hold, and every process that saw it exits 5: the next run fetches the pages lost."""
        if self.redis_lost is None:
            logger.error("distributed crawl: %s in Redis is gone (Redis restarted empty or flushed?): the run's queued "
                         "requests, its request filter and the results not yet stored are lost; this run ends with "
                         "exit status 5 and the next run fetches those pages", what)
        self.redis_lost = self.redis_lost or what
        self.crawler.stats.set_value(REDIS_LOST, 1)
        # The pages waiting for their verdicts may have been among the results lost: no verdict would ever come,
        # and their items would hold the crawl open for ever. Those published since the loss are stored all the same.
        self.verdicts.give_up({"dropped": "its result may have been lost with Redis's data: `newsdedup export` lists "
                                          "it if it was stored, otherwise the next run fetches it",
                               "log_level": "WARNING"})

    def _undecodable(self, _entry_id: bytes, _error) -> None:
        """A stream entry the writer dropped unread: counted, and shared at once (as every process's counters are,
        at each beat) so that every process's verdict is the run's, even if this process dies next."""
        self.crawler.stats.inc_value(runstats.REDIS_UNDECODABLE)
        self._share_counters()

    def _share_counters(self) -> None:
        self.run.client.hset(self.run.key("sites"), self.run.worker, json.dumps(self._own_site_counters()))

    def publish(self, entry) -> str:
        """Hand an analysed page (or a failed fetch) to the run's writer, through the stream.

        A failed fetch or a skipped page counts in this process's per-site stats now: each process's verdict
        judges the requests it made itself (its share of failed requests, its pages not processed), not the
        writer's commits, which are every process's. Returns the entry's id.

        The request the entry came from is forgotten in the same step (RedisRun.finished): from now on the stream
        holds it, and a process that dies has not lost it."""
        taken = entry.taken if isinstance(entry, FetchFailure) else entry[0].taken
        entry_id = self.stream.publish(
            entry, finished=None if taken is None else lambda pipe: self.run.finished([taken], pipe))
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

    # -- the heartbeat and the writer role --------------------------------------------------------
    async def _heartbeat(self) -> None:
        import redis

        from newsdedup.distributed.redis_run import HEARTBEAT

        while True:
            try:
                self._beat()
                self._unreachable_since = None
            except redis.ConnectionError as exc:  # TimeoutError too: Redis down, restarting, or the network
                self._unreachable(exc)
            except Exception:  # noqa: BLE001 - a Redis hiccup must not end the heartbeat; the next beat retries
                logger.exception("distributed crawl: heartbeat failed")
            await asyncio.sleep(HEARTBEAT)

    def _unreachable(self, exc: Exception) -> None:
        """Redis could not be reached at this beat. A restart or a failover is waited out; past
        NEWSDEDUP_REDIS_GIVE_UP_AFTER seconds this process stops (exit 5) rather than wait for ever: a scheduled
        run must end, and the next one fetches the pages this one had not handed over."""
        now = time.monotonic()
        if self._unreachable_since is None:
            self._unreachable_since = now
            logger.warning("distributed crawl: Redis cannot be reached (%s); waiting up to %g s for it", exc,
                           self.give_up_after)
            return
        if self.redis_unreachable is not None or now - self._unreachable_since < self.give_up_after:
            return
        self.redis_unreachable = (f"Redis could not be reached for {self.give_up_after:g} s "
                                  f"(NEWSDEDUP_REDIS_GIVE_UP_AFTER; {' '.join(str(exc).split())})")
        logger.error("distributed crawl: %s: this process stops; the pages it had not handed over and the results "
                     "not yet stored are fetched again by the next run", self.redis_unreachable)
        self.crawler.stats.set_value(REDIS_UNREACHABLE, 1)
        # No verdict can come through Redis now: the pages waiting for theirs are released.
        self.verdicts.give_up({"dropped": "Redis could not be reached for its verdict: `newsdedup export` lists it "
                                          "if it was stored, otherwise the next run fetches it",
                               "log_level": "WARNING"})
        self.state.stop_crawl("redis_unreachable")

    def _beat(self) -> None:
        crawl_engine = self.crawler.engine
        idle = crawl_engine is not None and crawl_engine.spider is not None and crawl_engine.spider_is_idle()
        # The counters before the busy flag: a process seen idle has shared its final counters.
        self._share_counters()
        # Pages held for a site's template (the analyse pipeline) leave the engine idle, but the run is not done
        # while a process holds pages: it reads them again once no other process may still teach the template.
        holding = idle and self._holding() > 0
        kept = self.run.beat(busy=not idle, holding=holding,
                             keep=[*getattr(self.run, "keep", ()), self.run.key("sites"), self.run.key("verdicts"),
                                   self.run.taken_key(), *self.state.templates.share.keys()])
        if not kept:
            self._lost("the run's state")
            self.run.rejoin()
        self._requeue_dead()
        self._give_up_verdicts_when_stopped_long()
        if self.writer is None and len(self.stream):
            self._try_to_become_writer()
        if idle:
            # Scrapy's idle engine looks at its scheduler, and asks whether to close, only every 5 s: another
            # process may have queued requests, or the run may be done (the last page committed). Look now: a
            # run of several processes then ends within a heartbeat of its last commit, not up to 5 s later.
            engine.wake(self.crawler)

    def _requeue_dead(self) -> int:
        """The requests a dead process had taken and not finished, back on the run's queue; how many.

        A process that stops beating (kill -9, its machine lost) leaves the pages it was fetching, extracting or
        holding for a site's template unpublished; they are in the run's request filter, so nobody would fetch
        them again in this run. Every live process looks at each beat (and before it decides the run is done);
        the first to see the death queues them again. What the dead process had published is in the stream, and
        what it had applied there as the writer and not committed stays pending for the next writer."""
        if self.crawler.engine is None or not self.crawler.crawling:
            return 0  # stopping: no more requests will be taken here
        requeued = self.run.requeue_dead(self.run.key("requests"))
        for worker, count in requeued.items():
            logger.warning("distributed crawl: process %s stopped beating with %d request(s) taken and not finished "
                           "(pages it was fetching, extracting or holding); queued again for this run", worker, count)
            self.crawler.stats.inc_value(REQUEUED, count)
            self.state.templates.share.forget_dead(worker)  # its held pages are read (and taught) again
        if requeued:
            engine.wake(self.crawler)
        return sum(requeued.values())

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
        # Entries of the run's Redis it dropped unread (as the writer, or queued requests it took): a problem of
        # the run, in every process's verdict.
        undecodable = self.crawler.stats.get_value(runstats.REDIS_UNDECODABLE, 0)
        if undecodable:
            counters[runstats.REDIS_UNDECODABLE] = undecodable
        # What this process stored while it was the writer (the skips and failures it committed are every
        # process's, counted by each process above).
        for (site, what), count in self.state.store.committed.items():
            if what in _STORED:
                counters[runstats.site_key(site, what)] = count
        return counters

    def _holding(self) -> int:
        analyse = self.crawler.get_item_pipeline(AnalysePipeline)
        return analyse.holding if analyse is not None else 0

    def others_at_work(self) -> bool:
        """Whether requests are queued or another process is busy: it may still fetch and read pages of any site."""
        return bool(self._queued() or self.run.others_busy())

    def _try_to_become_writer(self) -> None:
        from newsdedup.distributed.writer import StreamWriter
        from newsdedup.storage.base import StoreInUse

        store = self.state.store
        try:
            store.lock_for_run()
        except StoreInUse:
            return  # another process writes
        store.refresh()  # article ids continue after the last writer's
        self.state.indexes.rebuild(store, self.crawler.stats)
        self.writer = StreamWriter(self.crawler, store, self.stream, self.urls, self.verdicts,
                                   indexes=self.state.indexes)
        self._tasks.append(asyncio.ensure_future(self._write()))
        logger.info("distributed crawl: this process (%s) is the writer now", self.run.worker)

    async def _write(self) -> None:
        while True:
            try:
                await self.writer.run(lambda: True)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the store or Redis failing (a page a stage fails on costs that page
                # only: StreamWriter.apply): the entries stay pending in the stream; tried again
                logger.exception("distributed crawl: the writer failed; trying again in 1 s")
                await asyncio.sleep(1.0)

    # -- the close protocol ------------------------------------------------------------------------
    def _spider_idle(self, spider) -> None:
        """Stay open while the run has work anywhere: queued requests, a busy process, uncommitted entries.

        The run is done only when it still looks done after every other process has beaten again: the busy flags
        read are up to a heartbeat old, and a process seen idle may since have taken the last queued request (this
        one would then close on counters without that page)."""
        if self.state is None:
            return
        try:
            done = (not self._requeue_dead() and not self._queued() and not self.run.others_busy()
                    and not len(self.stream) and not self.run.others_holding())
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

    def _queued(self) -> int:
        return self.run.client.zcard(self.run.key("requests"))

    def stop(self) -> None:
        """The pipelines close: no more beats, no more stream batches (what was applied is committed next)."""
        for task in self._tasks:
            task.cancel()

    def commit(self) -> None:
        """The writer's last batch, committed and acknowledged (or left pending for the next writer)."""
        if self.writer is None:
            return
        self.writer.commit()
        stats = self.crawler.stats  # what applying the stream cost this process
        stats.set_value("newsdedup/writer/applied", self.writer.applied)
        stats.set_value("newsdedup/writer/cpu_seconds", round(self.writer.cpu_seconds, 3))

    def add_run_counters(self) -> None:
        """Every other process's shared counters into this one's stats, for the run's verdict and summary."""
        import redis

        stats = self.crawler.stats
        try:
            for worker, counters in self.run.client.hgetall(self.run.key("sites")).items():
                if worker.decode() != self.run.worker:
                    for key, value in json.loads(counters).items():
                        stats.inc_value(key, value)
        except redis.ConnectionError as exc:  # Redis gone: judge this process's own requests
            logger.warning("distributed crawl: the other processes' counters could not be read (%s)", exc)
        except Exception:  # noqa: BLE001 - the same, for any other failure, with its traceback
            logger.exception("distributed crawl: the other processes' counters could not be read")
        undecodable = stats.get_value(runstats.REDIS_UNDECODABLE, 0)  # the run's, whoever dropped them
        if undecodable:
            logger.warning("distributed crawl: %d stream entr(ies) or queued request(s) in Redis were not data a "
                           "crawl process wrote and were dropped unread (%s): who else writes to this Redis?",
                           undecodable, runstats.REDIS_UNDECODABLE)

    def leave(self) -> None:
        import redis

        try:
            self.run.leave()
        except redis.ConnectionError as exc:  # the others see this process's beats stop, as after a kill
            logger.warning("distributed crawl: could not leave the run in Redis (%s)", exc)


def run_of(crawler: Crawler):
    """The crawl's run (:class:`~newsdedup.distributed.redis_run.RedisRun`), owned by its :class:`RunMember`."""
    member = crawler.get_extension(RunMember)
    if member is None:
        raise RuntimeError("a distributed crawl needs its extension: keep 'newsdedup.distributed.member.RunMember' "
                           "in EXTENSIONS (newsdedup/settings.py)")
    return member.run


__all__ = ["RunMember", "run_of"]
