"""Extraction and fingerprinting on the worker pool; skipped pages are recorded and dropped."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from scrapy.exceptions import DropItem

from newsdedup.analysis import PageAnalysis, PageSkipped, analyse_page
from newsdedup.extract.template import SiteTemplate
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
        template = state.template(page.site)
        try:
            result = await self._analyse(page, template.boilerplate() if template is not None else frozenset())
            await state.order.wait_turn(page.ticket)
            if template is not None and isinstance(result, PageAnalysis):
                result = await self._check_template(page, template, result)
        except Exception as exc:  # a worker died or extraction hit a bug: keep the crawl going
            await state.order.wait_turn(page.ticket)
            self.inc("errors")
            logger.error("extraction failed for %s: %r (not recorded, retried next run)", page.url, exc)
            raise DropItem(f"extraction failed: {type(exc).__name__}", log_level="ERROR") from exc
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

    async def _analyse(self, page: ArticlePage, boilerplate: frozenset[int], *, retry: bool = False, lenient: bool = False):
        """Extract and fingerprint ``page`` on the pool: a ``retry`` strips every shared block, ``lenient`` keeps
        any text however short."""
        options = self.state.settings.extract
        if retry or lenient:
            options = dataclasses.replace(options, keep_shared_prose=False)
        if lenient:
            options = dataclasses.replace(options, min_chars=0, brief_chars=0)
        future = self.state.pool.submit(
            analyse_page, page.body, page.url, page.declared_encoding, page.remove_selectors, options, boilerplate,
        )
        return await asyncio.wrap_future(future)

    async def _check_template(self, page: ArticlePage, template: SiteTemplate, result: PageAnalysis):
        """Learn the page into its site's template. A body that is mostly text other pages of the site carry
        (a hot list taken for the article) is a template failure: the page is extracted again without that
        text, so it never joins unrelated stories into one cluster (see SiteTemplate.settle)."""
        article = result.article
        failure = template.failure(article.title, article.text)
        if failure is not None:
            shared = template.retry_boilerplate()
            retried = await self._analyse(page, shared, retry=True)
            own = 0
            if isinstance(retried, PageSkipped) and retried.reason in ("too_short", "empty"):
                probe = await self._analyse(page, shared, lenient=True)  # how much of its own is left
                own = len(probe.article.text) if isinstance(probe, PageAnalysis) else 0
            text = retried.article.text if isinstance(retried, PageAnalysis) else None
            outcome = template.settle(page.url, article.title, failure, text, own)
            if outcome is not None:
                self.inc("template_failures")
                self.inc(f"template_failures/{page.site}")
                logger.warning("template failure on %s: %s; %s", page.url, failure.reason, outcome.replace("_", " "))
                result = retried if outcome == "re-extracted" else PageSkipped(outcome, failure.reason)
        template.learn(article.block_hashes, article.body_hashes)
        return result
