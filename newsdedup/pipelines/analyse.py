"""Extraction and fingerprinting on the worker pool; skipped pages are recorded and dropped."""

from __future__ import annotations

import asyncio
import logging

from scrapy.exceptions import DropItem

from newsdedup.analysis import PageSkipped, analyse_page
from newsdedup.items import ArticlePage
from newsdedup.pipelines import StagePipeline
from newsdedup.storage.base import SkippedRecord

logger = logging.getLogger(__name__)


class AnalysePipeline(StagePipeline):
    stage = "extract"

    async def process_item(self, item):
        if not self.handles(item):
            return item
        page: ArticlePage = item
        page.ticket = self.state.order.take()
        state = self.state
        try:
            future = state.pool.submit(
                analyse_page, page.body, page.url, page.declared_encoding, page.remove_selectors,
                state.settings.extract,
            )
            result = await asyncio.wrap_future(future)
        except Exception as exc:  # a worker died or extraction hit a bug: keep the crawl going
            await state.order.wait_turn(page.ticket)
            self.inc("errors")
            logger.error("extraction failed for %s: %r (not recorded, retried next run)", page.url, exc)
            raise DropItem(f"extraction failed: {type(exc).__name__}", log_level="ERROR") from exc
        await state.order.wait_turn(page.ticket)
        page.body = b""  # the raw page is no longer needed; keep memory flat
        if isinstance(result, PageSkipped):
            self.inc(f"skipped/{result.reason}")
            self.inc("skipped")
            state.store.add_skipped(
                SkippedRecord(page.url, page.site, result.reason, result.detail, page.fetched_at)
            )
            raise DropItem(f"skipped ({result.reason}): {result.detail}", log_level="INFO")
        self.inc("articles")
        page.analysis = result
        return page
