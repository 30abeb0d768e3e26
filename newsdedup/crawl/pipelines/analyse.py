"""Extraction and fingerprinting on the worker pool; skipped pages are recorded and dropped.

The pipeline owns the crawl's worker pool (:class:`~newsdedup.crawl.analysis.AnalysisPool`) and the pages it holds
for a new site's template (below). Results are handed on in arrival order (:class:`~newsdedup.crawl.ordering.InOrder`). A page whose URL is
already stored (fetched twice, as after a ``JOBDIR`` resume) is dropped without a second record. A
skipped page is recorded with its attempt count and, for a transient reason, when to try it again
(:mod:`newsdedup.run.retry`). If the worker pool is lost for good the crawl is closed as ``worker_lost``;
pages still in flight are not recorded, so the next run fetches them again. Each page is read with its
site's learned template and then taught to it (:mod:`newsdedup.extract.template`), in arrival order.

A site's first pages come before its template knows anything: read alone, a page whose hot list or leftover
shell text outweighs its article keeps that text, and the site's next pages, read the same way, join it in one
"story". So while a site's template has seen fewer than :data:`~newsdedup.extract.template.MIN_PAGES` pages, a
page only teaches it and is held (its body compressed, in memory); once the template has seen enough pages the
held pages are read again with it, and go on to the dedup stages then (behind the pages that came meanwhile). A
site that never gets that many pages in the run has its held pages read again when the crawl has nothing else
to do. Templates are kept between runs, so this happens on a site's first run only. A crawl stopped first
counts the held pages as not processed; they are not stored, so the next run fetches them again. Each process of a
distributed crawl holds its own pages the same way; what a site's first pages teach is shared between the run's
processes (:mod:`newsdedup.distributed.shared_templates`), so their templates warm up on the run's pages, and a
process does not read its held pages with a cold template while another process may still teach it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import zlib

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, DropItem

from newsdedup.clock import utc_now
from newsdedup.crawl import engine
from newsdedup.crawl.analysis import AnalysisPool, PageAnalysis, PageSkipped, WorkerLost
from newsdedup.crawl.items import ArticlePage
from newsdedup.crawl.pipelines import StagePipeline
from newsdedup.extract.template import MIN_PAGES, SiteTemplate
from newsdedup.run import runstats
from newsdedup.storage.base import SkippedRecord

logger = logging.getLogger(__name__)


class HeldForTemplate(DropItem):
    """The page taught its site's cold template and waits to be read again (a copy of it is held)."""


class AnalysePipeline(StagePipeline):
    stage = "extract"

    pool: AnalysisPool | None = None

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        # Here, not in open_spider: a crawl whose store could not be opened closes its pipelines without opening
        # them all. Pages of sites whose template is still cold, kept (body compressed) to be read again.
        self.held: dict[str, list[ArticlePage]] = {}
        self._rereads: set[asyncio.Task] = set()
        self._first_reading: dict[str, tuple] = {}  # URL of a held page -> what it taught its site's template

    def open_spider(self) -> None:
        super().open_spider()
        settings = self.state.settings
        self.pool = AnalysisPool(settings.features, workers=settings.workers, timeout=settings.extract_timeout)
        self.pool.start()
        self.crawler.signals.connect(self._release_when_idle, signal=signals.spider_idle)

    def close_spider(self) -> None:
        """Stop the workers; pages still held were not read again before the crawl closed: the next run fetches them
        (counted per site for the run's verdict, which is judged after the pipelines closed)."""
        stats = self.crawler.stats
        if self.pool is not None:
            self.pool.shutdown()
            for name, count in self.pool.counts.items():
                stats.set_value(f"newsdedup/workers/{name}", count)
        for site, pages in self.held.items():
            stats.set_value(runstats.site_key(site, runstats.HELD_AT_STOP), len(pages))
        self.held.clear()
        super().close_spider()

    @property
    def worker_lost(self) -> str | None:
        """Why the worker pool is gone for good, if it is (for the run's verdict)."""
        return self.pool.lost if self.pool is not None else None

    async def process_item(self, item):
        if not self.handles(item):
            return item
        page: ArticlePage = item
        state = self.state
        page.ticket = state.order.take()
        template = state.template(page.site)
        if template is not None and template.pages >= MIN_PAGES and self.held.get(page.site):
            self._release(page.site)  # warmed up by the run's other processes (a distributed crawl)
        stored = None  # whether the page's URL is stored already, once known (it cannot change during its turn)
        try:
            learned = (template.boilerplate(), template.sign_offs()) if template is not None else ()
            result = await self._analyse(page, *learned)
            await state.order.wait_turn(page.ticket)
            if template is not None and isinstance(result, PageAnalysis) and not (stored := state.store.has_page(page.url)):
                if self._should_hold(page, template):
                    self._hold(page, template, result)
                result = await self._check_template(page, template, result)
        except WorkerLost as exc:
            await state.order.wait_turn(page.ticket)
            state.page_lost(page.site)
            state.stop_crawl("worker_lost")
            raise DropItem(f"not analysed ({exc}); fetched again next run", log_level="ERROR") from exc
        page.body = b""  # the raw page is no longer needed; keep memory flat
        if state.distributed is not None:  # a distributed crawl: its writer decides, in the stream's order
            entry_id = state.distributed.publish((page, result))
            # Its place in the stream is taken: the next page may be published while this one awaits its verdict.
            state.order.finish(page.ticket)
            page.ticket = None
            if isinstance(result, PageSkipped):  # the writer records the skip; no verdict to wait for
                raise DropItem(f"skipped ({result.reason}): {result.detail}", log_level="INFO")
            page.entry_id, page.analysis = entry_id, result  # the store stage waits for the writer's verdict
            return page
        return self.accept(page, result, stored=stored)

    def _should_hold(self, page: ArticlePage, template: SiteTemplate) -> bool:
        return template.pages < MIN_PAGES and not page.reread and not self._closing()

    def _closing(self) -> bool:
        """The crawl is closing (SIGTERM, a CLOSESPIDER_* limit, a lost pool): hold nothing, send nothing back."""
        return self.state.closing or engine.closing(self.crawler)

    def _hold(self, page: ArticlePage, template: SiteTemplate, result: PageAnalysis) -> None:
        """Teach ``page`` to its site's cold template and keep a copy to read again; drop this one (raises)."""
        state = self.state
        article = result.article
        self._first_reading[page.url] = state.templates.learn(page.site, template, article.block_hashes,
                                                              article.body_hashes, held=True, title=article.title,
                                                              texts=(article.text,))
        held = self.held.setdefault(page.site, [])
        if not held and template.pages == 1:
            logger.info("site %s: no template yet; its first %d pages are read again once it has seen them",
                        page.site, MIN_PAGES)
        # A copy: the dropped item still carries its ticket through Scrapy's item_dropped signal.
        held.append(dataclasses.replace(page, body=zlib.compress(page.body, 1), ticket=None, reread=True))
        self.inc("template_warmup/held")
        if template.pages >= MIN_PAGES:
            self._release(page.site)
        raise HeldForTemplate(f"held until the template of {page.site} has seen {MIN_PAGES} pages", log_level="DEBUG")

    def _release(self, site: str) -> int:
        """Send the held pages of ``site`` through the pipelines again; return how many. A closing crawl keeps
        them held: they are counted as not processed, and the next run fetches them again."""
        if self._closing():
            return 0
        pages = self.held.pop(site, [])
        scraper = self.crawler.engine.scraper
        for page in pages:
            page.body = zlib.decompress(page.body)
            task = asyncio.ensure_future(scraper.start_itemproc_async(page, response=None))
            self._rereads.add(task)
            task.add_done_callback(self._reread_done)
        self.inc("template_warmup/reread", len(pages))
        return len(pages)

    def _reread_done(self, task: asyncio.Task) -> None:
        self._rereads.discard(task)
        engine.item_done(self.crawler)

    def _release_when_idle(self, spider) -> None:
        """Nothing else to do: read the held pages of sites whose template never warmed up in this run. In a
        distributed crawl, not while another process may still teach the template pages of the site."""
        state = self.state
        released = 0
        for site in list(self.held):
            template = state.template(site)  # a distributed crawl: what the other processes taught it meanwhile
            if (template is not None and template.pages < MIN_PAGES and state.distributed is not None
                    and state.distributed.others_at_work()):
                continue
            released += self._release(site)
        if released or (self.held and not self._closing()):
            raise DontCloseSpider

    @property
    def holding(self) -> int:
        """Pages held for their site's template."""
        return sum(len(pages) for pages in self.held.values())

    def accept(self, page: ArticlePage, result, *, stored: bool | None = None):
        """Record a skipped page, drop a page stored before, hand an article on to the dedup stages. ``stored``:
        whether the URL is stored, when the caller asked the store during the page's turn (None: ask it now)."""
        state = self.state
        if state.store.has_page(page.url) if stored is None else stored:
            self.inc("already_stored")
            raise DropItem("already stored (fetched twice)", log_level="INFO")
        if isinstance(result, PageSkipped):
            self.record_skip(page, result)
            raise DropItem(f"skipped ({result.reason}): {result.detail}", log_level="INFO")
        self.inc("articles")
        page.analysis = with_listed(result, page)
        return page

    async def _analyse(
        self, page: ArticlePage, boilerplate: frozenset[int] = frozenset(), sign_offs: frozenset[int] = frozenset(), *,
        retry: bool = False, lenient: bool = False,
    ):
        """Extract and fingerprint ``page`` on the pool with its site's template (``boilerplate``, ``sign_offs``): a
        ``retry`` strips every shared block, ``lenient`` keeps any text however short."""
        options = self.state.settings.extract
        if retry or lenient:
            options = dataclasses.replace(options, keep_shared_prose=False)
        if lenient:
            options = dataclasses.replace(options, min_chars=0, brief_chars=0)
        return await self.pool.analyse(
            page.body, page.url, page.declared_encoding, page.remove_selectors, options, boilerplate, sign_offs
        )

    async def _check_template(self, page: ArticlePage, template: SiteTemplate, result: PageAnalysis):
        """Learn the page into its site's template. A body that is mostly text other pages of the site carry
        (a hot list taken for the article), or that holds recurring paragraphs unlike its headline (a shell's
        leftover article), is a template failure: the page is extracted again without that text, so it never
        joins unrelated stories into one cluster (SiteTemplate.check, which the evaluation runs too)."""
        article = result.article
        first_reading = self._first_reading.pop(page.url, None) if page.reread else None
        if first_reading is not None:  # judged by the other pages, then taught what this reading found
            self.state.templates.forget(page.site, template, first_reading)

        async def reread(boilerplate: frozenset[int], lenient: bool):
            reading = await self._analyse(page, boilerplate, template.sign_offs(), retry=True, lenient=lenient)
            return reading, reading.article.text if isinstance(reading, PageAnalysis) else None

        check = await template.check(page.url, article.title, article.text, reread)
        if check is not None:
            self.inc("template_failures")
            self.inc(f"template_failures/{page.site}")
            logger.warning("template failure on %s: %s; %s", page.url, check.failure.reason, check.outcome.replace("_", " "))
            result = check.reading if check.reading is not None else PageSkipped(check.outcome, check.failure.reason)
        # The template learns the reading that is kept: a re-extracted page shows the hot list or leftover text
        # outside its body, so from MIN_PAGES such pages on the template strips it before the site's next pages are
        # read, and they need no second reading (the first reading taught it as body text, never template).
        # Both bodies read are remembered: a site's next page repeating the one replaced is a failure too.
        taught = result.article if isinstance(result, PageAnalysis) else article
        self.state.templates.learn(page.site, template, taught.block_hashes, taught.body_hashes, title=article.title,
                                   texts={article.text, taught.text})
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


def with_listed(result: PageAnalysis, page: ArticlePage) -> PageAnalysis:
    """The title and time a list feed gave the article, where the page itself gives none (the origin's date
    basis then rests on the feed's time)."""
    article = result.article
    if (article.published_at or not page.listed_at) and (article.title or not page.listed_title):
        return result
    article = dataclasses.replace(article, published_at=article.published_at or page.listed_at,
                                  title=article.title or page.listed_title)
    return dataclasses.replace(result, article=article)
