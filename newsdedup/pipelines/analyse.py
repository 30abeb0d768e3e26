"""Extraction and fingerprinting on the worker pool; skipped pages are recorded and dropped.

Results are handed on in arrival order (:class:`~newsdedup.ordering.InOrder`). A page whose URL is
already stored (fetched twice, as after a ``JOBDIR`` resume) is dropped without a second record. A
skipped page is recorded with its attempt count and, for a transient reason, when to try it again
(:mod:`newsdedup.retry`). If the worker pool is lost for good the crawl is closed as ``worker_lost``;
pages still in flight are not recorded, so the next run fetches them again.
"""

from __future__ import annotations

import logging

from scrapy.exceptions import DropItem

from newsdedup.analysis import PageSkipped, WorkerLost
from newsdedup.items import ArticlePage
from newsdedup.pipelines import StagePipeline
from newsdedup.retry import utc_now
from newsdedup.storage.base import SkippedRecord

logger = logging.getLogger(__name__)


class AnalysePipeline(StagePipeline):
    stage = "extract"

    async def process_item(self, item):
        if not self.handles(item):
            return item
        page: ArticlePage = item
        state = self.state
        page.ticket = state.order.take()
        try:
            result = await state.pool.analyse(
                page.body, page.url, page.declared_encoding, page.remove_selectors, state.settings.extract
            )
        except WorkerLost as exc:
            await state.order.wait_turn(page.ticket)
            state.page_lost(page.site)
            state.stop_crawl("worker_lost")
            raise DropItem(f"not analysed ({exc}); fetched again next run", log_level="ERROR") from exc
        await state.order.wait_turn(page.ticket)
        page.body = b""  # the raw page is no longer needed; keep memory flat
        if state.stream is not None:  # a distributed crawl: its writer decides, in the stream's order
            state.publish((page, result))
            return page  # with no analysis: the later stages pass it on
        return self.accept(page, result)

    def accept(self, page: ArticlePage, result):
        """Record a skipped page, drop a page stored before, hand an article on to the dedup stages."""
        state = self.state
        if state.store.has_page(page.url):
            self.inc("already_stored")
            raise DropItem("already stored (fetched twice)", log_level="INFO")
        if isinstance(result, PageSkipped):
            self.record_skip(page, result)
            raise DropItem(f"skipped ({result.reason}): {result.detail}", log_level="INFO")
        self.inc("articles")
        page.analysis = result
        return page

    def record_skip(self, page: ArticlePage, skipped: PageSkipped) -> None:
        state = self.state
        self.inc(f"skipped/{skipped.reason}")
        self.inc("skipped")
        attempts = state.store.attempts_of(page.url) + 1
        next_try = state.settings.retry.next_try_iso(skipped.reason, attempts=attempts, now=utc_now())
        if next_try is not None:
            logger.info("%s skipped (%s, attempt %d): tried again from %s", page.url, skipped.reason, attempts, next_try)
        state.store.add_skipped(SkippedRecord(
            page.url, page.site, skipped.reason, skipped.detail, page.fetched_at, attempts=attempts,
            next_try_at=next_try,
        ))
