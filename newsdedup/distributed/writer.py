"""The writer of a distributed crawl: the one process that applies the result stream to the store.

Every process of the crawl extracts and fingerprints its pages and publishes them to the stream
(:class:`newsdedup.distributed.redis_run.ResultStream`) instead of deduplicating them itself. The process holding the
store's run lock is the writer: it reads the stream in order and hands each entry to the very stages a
single-process crawl runs (failures, the analyse stage's bookkeeping, exact, near, reuse, store), so both modes make
the same decisions with the same code. Entries are acknowledged only after the store committed their records;
the URLs handled for good then go to the shared URL filter, and the verdict on each analysed page (its status,
story, the page it repeats..., or why it was dropped) to the run's verdict board, where the process that published
the page waits for it (its store stage hands the verdict on to its item pipelines and feed exports).

A process becomes the writer when it takes the lock (the previous writer finished or died): it first catches
up with the store (article ids; the exact filter and the near-duplicate index opened from the state folder and
caught up with committed rows, or rebuilt from them: newsdedup.crawl.indexes),
then reads the entries the previous writer left unacknowledged, then new ones.

An entry that makes a stage raise (a bug of ours or of a library, on one page) costs only that page, as it does a
single-process crawl: its traceback is logged once with its URL, the page recorded as skipped with reason ``error``
(transient: ``newsdedup failures`` lists it and a later run tries it again), counted in the run's verdict (exit 5),
and its entry acknowledged. Read again and again, it would hold the run open for ever: the run is done only when
the stream is empty. A failure of the store itself (:class:`~newsdedup.storage.base.StoreError`) is not the page's:
the batch stays pending and is tried again.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

import redis
from scrapy.exceptions import DropItem

from newsdedup.crawl.analysis import PageAnalysis, PageSkipped
from newsdedup.crawl.dupefilter import url_key
from newsdedup.crawl.items import ArticlePage, FetchFailure
from newsdedup.crawl.pipelines.analyse import AnalysePipeline
from newsdedup.crawl.pipelines.exact import ExactDedupPipeline
from newsdedup.crawl.pipelines.failures import FailurePipeline
from newsdedup.crawl.pipelines.near import NearDedupPipeline
from newsdedup.crawl.pipelines.reuse import ReusePipeline
from newsdedup.crawl.pipelines.store import StorePipeline
from newsdedup.run import runstats
from newsdedup.run.retry import TRANSIENT_SKIPS
from newsdedup.storage.base import ArticleStore, StoreError

logger = logging.getLogger(__name__)

BATCH = 200  # entries read at a time; their records are committed together, then acknowledged
RETRY = 1.0  # seconds between two attempts at a batch's commit that failed


# The stages a single-process crawl runs, by name, as the writer applies an entry; a stage left out of
# ITEM_PIPELINES is left out here too.
STAGES = {"fetch": FailurePipeline, "extract": AnalysePipeline, "exact": ExactDedupPipeline,
          "near": NearDedupPipeline, "reuse": ReusePipeline, "store": StorePipeline}


def stages_of(crawler) -> dict:
    """The crawl's newsdedup pipelines by stage name (Scrapy's own instances, found with get_item_pipeline)."""
    found = {name: crawler.get_item_pipeline(cls) for name, cls in STAGES.items()}
    return {name: pipeline for name, pipeline in found.items() if pipeline is not None}


class StreamWriter:
    def __init__(self, crawler, store: ArticleStore, stream, urls, verdicts, indexes=None) -> None:
        self.stages = stages_of(crawler)
        self.stats = crawler.stats
        self.store = store
        self.indexes = indexes  # newsdedup.crawl.indexes.DedupIndexes: its persisted state follows the commits
        self.stream = stream
        self.urls = urls  # newsdedup.distributed.redis_run.UrlFilter
        self.verdicts = verdicts  # newsdedup.distributed.redis_run.VerdictBoard
        self.applied = 0
        self.cpu_seconds = 0.0  # the writer's own work (apply and commit), for newsdedup/writer/* stats
        self._unacknowledged: list[bytes] = []
        self._handled: list[str] = []
        self._verdicts: dict[str, dict] = {}  # entry id -> verdict, posted once the batch is committed
        # Pages of the batch a stage failed on, by site: counted once the batch is acknowledged (a writer that dies
        # before leaves the entries pending, and the next writer, applying them again, counts them).
        self._errors: collections.Counter[str] = collections.Counter()

    def apply(self, entry, entry_id: str | None = None) -> None:
        """One stream entry through the stages, as a single-process crawl would run it."""
        stages = self.stages
        # The publisher of an analysed page waits for its verdict (a skip or a failed fetch has none to wait for).
        awaited = entry_id is not None and isinstance(entry, tuple) and isinstance(entry[1], PageAnalysis)
        pending = self.store.pending_count()  # what the batch holds before this entry's records
        try:
            if isinstance(entry, FetchFailure):
                stages["fetch"].record(entry)
                return
            page, result = entry
            page = stages["extract"].accept(page, result)
            for name in ("exact", "near", "reuse"):
                if name in stages:
                    page = stages[name].process_item(page)
            if "store" in stages:
                page = stages["store"].record(page)
            self._handled.append(page.url)
            if awaited:
                self._verdicts[entry_id] = page.verdict()
        except DropItem as dropped:
            level = getattr(dropped, "log_level", None) or "INFO"
            logger.log(logging.getLevelName(level) if isinstance(level, str) else level, "Dropped: %s", dropped)
            if isinstance(entry, tuple) and _done_for_good(entry, dropped):
                self._handled.append(entry[0].url)
            if awaited:
                self._verdicts[entry_id] = {"dropped": str(dropped), "log_level": level}
        except StoreError:
            raise  # the store's failure, not the page's: the batch stays pending and is tried again
        except Exception as exc:  # noqa: BLE001 - one page's failure must not hold the run (module doc)
            recorded = self.store.pending_count() > pending
            self._failed(entry, exc, recorded=recorded)
            if awaited:  # its publisher's item waits for a verdict
                self._verdicts[entry_id] = {
                    "dropped": f"{'stored, but not' if recorded else 'not'} processed ({_describe(exc)}): see the log",
                    "log_level": "ERROR"}
        finally:
            self.applied += 1

    def _failed(self, entry, exc: Exception, *, recorded: bool) -> None:
        """A stage raised on ``entry``: the page is recorded as skipped (``error``), not as handled for good.
        ``recorded``: a stage had recorded the page before another raised (a repeat, or its article before the
        store stage's index updates): that record is committed with the batch, and a skip beside it would record
        the URL twice."""
        page = entry if isinstance(entry, FetchFailure) else entry[0]
        if recorded:
            logger.error("distributed crawl: the writer failed on %s after recording it; its record is kept",
                         page.url, exc_info=exc)
            return
        logger.error("distributed crawl: the writer could not apply %s; skipped as error, a later run tries it "
                     "again", page.url, exc_info=exc)
        if isinstance(page, FetchFailure):  # its skip record needs a page's fields
            page = ArticlePage(url=page.url, site=page.site, body=b"", declared_encoding=None,
                               fetched_at=page.failed_at)
        try:
            self.stages["extract"].record_skip(page, PageSkipped("error", _describe(exc)))
        except StoreError:
            raise
        except Exception:  # noqa: BLE001 - not recorded: the next run fetches the page again, as it is not stored
            logger.exception("distributed crawl: the skip of %s could not be recorded either", page.url)
        self._errors[page.site] += 1

    def drain_once(self, *, pending: bool) -> int:
        """Apply one batch (the previous writer's unacknowledged entries first), commit, acknowledge. Only with
        nothing left unacknowledged: the entries of a batch not committed are pending, and would be read again."""
        if self._unacknowledged:
            raise RuntimeError("the last batch is not committed: commit() it before reading more")
        batch = self.stream.pending(BATCH) if pending else self.stream.new(BATCH)
        started = time.thread_time()
        for entry_id, entry in batch:
            self.apply(entry, entry_id.decode())
            self._unacknowledged.append(entry_id)
        self.commit()
        self.cpu_seconds += time.thread_time() - started
        return len(batch)

    def commit(self) -> bool:
        """Commit what the applied entries recorded; then acknowledge them and remember their URLs."""
        if not self._unacknowledged:
            return True
        try:
            self.store.flush()
        except StoreError as exc:
            # The records stay pending in the store and the entries unacknowledged: tried again next batch,
            # or, if this process dies, applied again by the next writer.
            logger.error("%s (the writer tries again)", exc)
            return False
        try:
            # The verdicts before the acknowledgement: entries acknowledged without them would leave their
            # publishers waiting; posted twice (this writer dies first, the next applies the entries again), the
            # second is moot. Each step may be done again: committed above, the records are not stored twice.
            self.verdicts.post(self._verdicts)
            self.urls.add(url_key(url) for url in self._handled)
            self.stream.done(self._unacknowledged)
        except redis.RedisError as exc:
            logger.error("distributed crawl: %d committed entr(ies) could not be acknowledged in Redis (%s); the "
                         "writer tries again", len(self._unacknowledged), exc)
            return False
        # Counted in this process's per-site stats, which it shares with the run's other processes at its next
        # beat, before they can see the stream empty and the run done: every process's verdict is "pages not
        # processed" (exit 5), as for a page its worker failed to analyse.
        for site, count in self._errors.items():
            self.stats.inc_value(runstats.site_key(site, "skipped/error"), count)
        self._unacknowledged.clear()
        self._handled.clear()
        self._verdicts.clear()
        self._errors.clear()
        if self.indexes is not None:
            # After the acknowledgement, off the path between a commit and its XDEL: the state takes in every
            # committed row above its marks, those of commits within the batch too.
            self.indexes.after_commit(self.store)
        return True

    async def run(self, still_writer) -> None:
        """Apply the stream until ``still_writer()`` turns false; never blocks the reactor for long.

        A batch whose commit failed (the store, or Redis after the store committed) is committed again before
        anything more is read: its entries stay pending in the stream, and reading the pending entries again would
        apply them a second time (their records recognised as stored, their verdicts turned into "already stored")
        and add them to the unacknowledged list again, which then grew with every failed attempt."""
        pending = True  # what the last writer left, first
        while still_writer():
            if self._unacknowledged and not self.commit():
                await asyncio.sleep(RETRY)
                continue
            applied = self.drain_once(pending=pending)
            pending = pending and bool(applied)
            await asyncio.sleep(0 if applied else 0.05)


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def _done_for_good(entry: tuple, dropped: DropItem) -> bool:
    """A dropped page that is handled for good: an exact repeat, a page stored before, a permanent skip."""
    page, result = entry
    if isinstance(result, PageSkipped):
        return result.reason not in TRANSIENT_SKIPS
    return isinstance(page, ArticlePage)  # repeat or already stored: both recorded
