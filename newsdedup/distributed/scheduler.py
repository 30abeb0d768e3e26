"""Distributed crawling on scrapy-redis: the scheduler and the request filter of a run.

``-s NEWSDEDUP_REDIS_URL=redis://host:6379/0`` makes a crawl one worker of a distributed crawl
(:mod:`newsdedup.distributed.redis_run`, docs/distributed.md). :class:`newsdedup.distributed.addon.DistributedAddon`
(a Scrapy add-on, in ``ADDONS``) then sets what scrapy-redis users set by hand: its scheduler
(:class:`RunScheduler`), its request filter (:class:`SharedArticlesDupeFilter`),
``SCHEDULER_PERSIST``. This module needs the ``redis`` extra; Scrapy imports it only then.

:class:`RunScheduler` is scrapy-redis's ``Scheduler`` with its priority queue and ``SADD`` request filter, keyed
by run (:class:`~newsdedup.distributed.redis_run.RedisRun`) instead of by spider name: the processes of one run share
one queue and one filter, so each start, list and article page is fetched once per run, and the next run starts
with an empty filter, so start and list pages are fetched again. The spider's own ``async def start()`` feeds
it like any scheduler (scrapy-redis's ``RedisSpider`` is not used: it still relies on ``start_requests``, which
Scrapy no longer calls).
"""

from __future__ import annotations

import importlib
import itertools
import logging

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.request import request_from_dict
from scrapy_redis.dupefilter import RFPDupeFilter as RedisRFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from newsdedup.crawl.dupefilter import KnownArticles, url_key
from newsdedup.crawl.items import TAKEN_META_KEY
from newsdedup.distributed import redis_run
from newsdedup.distributed.member import run_of
from newsdedup.distributed.wire import WireError
from newsdedup.run import options
from newsdedup.run import retention
from newsdedup.run import runstats
from newsdedup.storage import open_store

logger = logging.getLogger(__name__)

class RunScheduler(Scheduler):
    """scrapy-redis's scheduler, its queue and request filter keyed by the run this process joins on open."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RunScheduler:
        run = run_of(crawler)
        scheduler = cls(
            server=run.client, persist=True, queue_cls="newsdedup.distributed.scheduler.DataPriorityQueue",
            dupefilter=SharedArticlesDupeFilter.from_crawler(crawler),
        )
        scheduler.stats = crawler.stats
        scheduler.crawler = crawler
        return scheduler

    def open(self, spider) -> None:
        run = run_of(self.crawler)
        run_id, opened = run.join()
        # scrapy-redis formats keys with "% {'spider': name}": a literal % in a run id would break it (there is none).
        self.queue_key = run.key("requests")
        self.df.key = run.key("seen")
        self.df.open()
        self.spider = spider
        # SCHEDULER_SERIALIZER: the add-on sets newsdedup.distributed.wire (scrapy-redis's own default is pickle).
        serializer = importlib.import_module(self.crawler.settings.get("SCHEDULER_SERIALIZER") or "newsdedup.distributed.wire")
        self.queue = DataPriorityQueue(server=self.server, spider=spider, key=self.queue_key, serializer=serializer,
                                       stats=self.stats, run=run)
        run.keep = self.run_keys()  # the heartbeat keeps them alive with the run
        logger.info("distributed crawl: %s run %s as %s (%d requests queued)",
                    "opened" if opened else "joined", run_id, run.worker, len(self.queue))

    def run_keys(self) -> list[str]:
        """Keys of the run the heartbeat keeps alive."""
        return [self.queue_key, self.df.key]

    def close(self, reason: str) -> None:
        self.df.close(reason)  # the shared filter's key stays: other processes still use it

    # scrapy-redis 0.9.1 passes ``spider=`` to the stats collector, which Scrapy 2.19 deprecates: a warning in every
    # worker's log. Its two methods that do, without it:
    def enqueue_request(self, request) -> bool:
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            return False
        self.stats.inc_value("scheduler/enqueued/redis")
        self.queue.push(request)
        return True

    def next_request(self):
        request = self.queue.pop(self.idle_before_close)
        if request is not None:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request


class DataPriorityQueue(PriorityQueue):
    """scrapy-redis's priority queue whose requests are data (:mod:`newsdedup.distributed.wire`, the add-on's
    ``SCHEDULER_SERIALIZER``): a queued request that does not decode as one of ours is counted, logged and dropped
    (``pop`` already took it off the queue), never run.

    With the ``run`` (:class:`~newsdedup.distributed.redis_run.RedisRun`) a request popped is recorded as taken by
    this process, its token in ``request.meta[TAKEN_META_KEY]`` (the spider copies it to the page or failed fetch);
    the record goes when the page is published, or when the request is queued again (a retry or a redirect carries
    the meta along), in the same step: a process killed at any moment leaves each request in the queue, its
    record, or the stream (docs/distributed.md, "A process that dies")."""

    def __init__(self, *args, stats, run=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stats = stats
        self.run = run
        self._tokens = itertools.count(1)

    def push(self, request) -> None:
        token = request.meta.get(TAKEN_META_KEY) if self.run is not None else None
        if token is None:
            super().push(request)
            return
        with self.server.pipeline() as pipe:
            pipe.execute_command("ZADD", self.key, -request.priority, self._encode_request(request))
            self.run.finished([token], pipe)
            pipe.execute()

    def pop(self, timeout=0):
        if self.run is None:
            return super().pop(timeout)
        token = str(next(self._tokens))
        data = self.run.take(self.key, token)
        if data is None:
            return None
        request = self._decode_request(data)
        if request is None:  # not ours: dropped (counted), nothing to finish
            self.run.finished([token])
            return None
        request.meta[TAKEN_META_KEY] = token
        return request

    def _decode_request(self, encoded_request):
        try:
            fields = self.serializer.loads(encoded_request)
            if not isinstance(fields, dict):
                raise WireError(f"a {type(fields).__name__}, not a request's fields")
            # Request.to_dict() names a subclass by import path, which request_from_dict would load and call:
            # the spider queues plain Requests only, so no class is taken from the queue.
            if "_class" in fields:
                raise WireError(f"a request class named in the queue: {fields['_class']!r}")
            return request_from_dict(fields, spider=self.spider)
        except (WireError, TypeError, ValueError, KeyError, AttributeError) as exc:
            self.stats.inc_value(runstats.REDIS_UNDECODABLE)
            logger.warning("distributed crawl: dropped a queued request that is not one of ours (%s): %s",
                           exc, bytes(encoded_request[:120]))
            return None


class SharedArticlesDupeFilter(KnownArticles, RedisRFPDupeFilter):
    """The distributed crawl's filter: articles handled for good (Redis, then the store), then scrapy-redis's
    per-run ``SADD`` filter (its return value is the atomic "seen" check across the run's processes)."""

    @classmethod
    def from_crawler(cls, crawler):
        run = run_of(crawler)
        dupefilter = cls(run.client, key=None, debug=crawler.settings.getbool("DUPEFILTER_DEBUG"))
        dupefilter.crawler = crawler
        dupefilter.storage_uri = options.get_str(crawler.settings, "NEWSDEDUP_STORAGE_URI")
        dupefilter.urls = redis_run.UrlFilter(run.client, run.prefix,
                                                retention_days=retention.retention_days(crawler.settings))
        dupefilter.store = None
        return dupefilter

    def open(self) -> None:
        self.store = open_store(self.storage_uri)
        self.store.open()

    def _known_article(self, url: str, *, count: bool = True) -> bool:
        return url_key(url) in self.urls or self._known_before_window(self.store, url, count)

    def close(self, reason: str = "") -> None:
        """Keeps the shared key (the run's other processes use it; it expires with the run)."""
        if self.store is not None:
            self.store.close()
            self.store = None


class ListPagesFinished:
    """A spider middleware (the add-on puts it outermost): a response whose output carries no page of its own (a
    list page, a list source) finishes its taken request once the requests it yields are on the run's queue.

    Scrapy hands a callback's requests to the engine from a queue of its own, after the callback's output ends, so
    the end of the output does not tell that they are queued. This middleware hands each to the engine itself, as
    Scrapy would (``engine.crawl``: the request filter, then the run's queue, synchronously), and forgets the request
    then: a process killed afterwards leaves nothing of that list page to fetch again. Pages and failed fetches
    finish their request when published (RunMember.publish)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ListPagesFinished:
        return cls(crawler)

    async def process_spider_output(self, response, result):
        token = response.meta.get(TAKEN_META_KEY)
        carried = False
        async for output in result:
            if token is not None and isinstance(output, Request):
                self.crawler.engine.crawl(output)
                continue
            carried = carried or getattr(output, "taken", None) == token
            yield output
        if token is not None and not carried:
            run_of(self.crawler).finished([token])
