"""Extraction and fingerprinting on the worker pool; skipped pages are recorded and dropped.

Results are handed on in arrival order (:class:`~newsdedup.ordering.InOrder`). A page whose URL is
already stored (fetched twice, as after a ``JOBDIR`` resume) is dropped without a second record. A
skipped page is recorded with its attempt count and, for a transient reason, when to try it again
(:mod:`newsdedup.retry`). If the worker pool is lost for good the crawl is closed as ``worker_lost``;
pages still in flight are not recorded, so the next run fetches them again. Each page is read with its
site's learned template and then taught to it (:mod:`newsdedup.extract.template`), in arrival order.
"""

from __future__ import annotations

import dataclasses
import logging

from scrapy.exceptions import DropItem

from newsdedup.analysis import PageAnalysis, PageSkipped, WorkerLost
from newsdedup.extract.template import SiteTemplate
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
        template = state.template(page.site)
        try:
            result = await self._analyse(page, template.boilerplate() if template is not None else frozenset())
            await state.order.wait_turn(page.ticket)
            if template is not None and isinstance(result, PageAnalysis) and not state.store.has_page(page.url):
                result = await self._check_template(page, template, result)
        except WorkerLost as exc:
            await state.order.wait_turn(page.ticket)
            state.page_lost(page.site)
            state.stop_crawl("worker_lost")
            raise DropItem(f"not analysed ({exc}); fetched again next run", log_level="ERROR") from exc
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

    async def _analyse(self, page: ArticlePage, boilerplate: frozenset[int], *, retry: bool = False, lenient: bool = False):
        """Extract and fingerprint ``page`` on the pool: a ``retry`` strips every shared block, ``lenient`` keeps
        any text however short."""
        options = self.state.settings.extract
        if retry or lenient:
            options = dataclasses.replace(options, keep_shared_prose=False)
        if lenient:
            options = dataclasses.replace(options, min_chars=0, brief_chars=0)
        return await self.state.pool.analyse(
            page.body, page.url, page.declared_encoding, page.remove_selectors, options, boilerplate
        )

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
