"""The run's verdict, judged when the spider closes: a Scrapy extension (``EXTENSIONS`` in newsdedup.settings).

:class:`RunVerdict` turns what the crawl's parts report (the per-site stats, what the store could not save, the
worker pool, the outputs after newsdedup's pipelines) into :class:`~newsdedup.run.verdict.RunFacts`, judges them
(:mod:`newsdedup.run.verdict`), records one ``site_runs`` row per site, closes the store and logs the closing
summary (:mod:`newsdedup.run.runstats`). The verdict goes in stats of its own, ``newsdedup/run/exit_code``,
``newsdedup/run/verdict`` and ``newsdedup/run/problems``, and the exit status of ``scrapy crawl portal`` is
``newsdedup/run/exit_code`` (:mod:`newsdedup.crawl.commands.crawl`). Scrapy's ``finish_reason`` stays Scrapy's
(``finished``, ``closespider_pagecount``, ``shutdown``...): what Scrapyd, spidermon and other Scrapy tools read.

Scrapy stores the feeds after the spider closed, so after the summary: a feed it could not store changes the
verdict then (one more log line, the exit status).
"""

from __future__ import annotations

import logging

from scrapy import signals
from scrapy.crawler import Crawler

from newsdedup.clock import utc_iso, utc_now
from newsdedup.crawl import run_alerts, scheduler
from newsdedup.crawl.outputs import OutputWatch, feed_storage_failures
from newsdedup.crawl.pipelines.analyse import AnalysePipeline
from newsdedup.crawl.pipelines.state import CrawlState
from newsdedup.run import runstats
from newsdedup.run.verdict import ExitCode, RunFacts, Verdict, judge
from newsdedup.storage.base import SiteRunRecord

logger = logging.getLogger(__name__)

EXIT_CODE = "newsdedup/run/exit_code"
VERDICT = "newsdedup/run/verdict"
PROBLEMS = "newsdedup/run/problems"


class RunVerdict:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        # Failures after our pipelines (the user's item pipelines, feed exports), for the verdict.
        self.outputs = OutputWatch(crawler)
        self.facts: RunFacts | None = None  # what the verdict was judged on, once it was
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self._feeds_closed, signal=signals.feed_exporter_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RunVerdict:
        return cls(crawler)

    def _spider_closed(self, spider, reason: str) -> None:
        state = self.crawler.get_extension(CrawlState)
        if state is None or not state.opened:
            return  # a spider without newsdedup's pipelines: nothing to judge
        stats = self.crawler.stats
        not_saved = state.store.pending_count()
        state.report_committed()
        if state.distributed is not None:  # the run's verdict and summary, on every process's counters
            state.distributed.add_run_counters()
        sites = [s.name for s in getattr(spider, "sites", ())] or runstats.sites_in(stats.get_stats())
        tallies = runstats.tallies_of(stats.get_stats(), sites)
        had_links = {t.site: state.store.site_had_article_links(t.site) for t in tallies
                     if t.list_pages and not t.article_links}
        analyse = self.crawler.get_item_pipeline(AnalysePipeline)
        self.facts = RunFacts(
            finish_reason=reason, sites=tallies, not_saved=not_saved, store_error=state.store_error,
            worker_lost=analyse.worker_lost if analyse is not None else None, had_links_before=had_links,
            requests_lost=stats.get_value(scheduler.STATS_PREFIX + "requests_lost", 0),
            undecodable=stats.get_value(runstats.REDIS_UNDECODABLE, 0),
            redis_lost=state.distributed.redis_lost if state.distributed is not None else None,
            redis_unreachable=state.distributed.redis_unreachable if state.distributed is not None else None,
            max_http_error_share=state.settings.max_http_error_share,
            output_failures=[*self.outputs.problems(), *feed_storage_failures(stats.get_stats())],
        )
        verdict = judge(self.facts)
        finished_at = utc_iso(utc_now())
        for tally in tallies:
            state.store.add_site_run(SiteRunRecord(
                run_started_at=state.started_at, site=tally.site, finished_at=finished_at, finish_reason=reason,
                exit_code=int(verdict.code), list_pages=tally.list_pages, article_links=tally.article_links,
                fetched=tally.fetched, stored=tally.stored, repeats=tally.repeats, skipped=tally.skipped_total,
                failed=tally.failed_total,
            ))
        if state.settings.alerts and (state.distributed is None or state.distributed.writer is not None):
            run_alerts.send_after_run(state.store, state.settings.alerts, state.settings.desk_url, stats)
        state.finish(not_saved=not_saved)
        self._set(verdict)
        summary = runstats.format_summary({**stats.get_stats(), "finish_reason": reason}, sites)
        if (alerts := run_alerts.summary_line(stats.get_stats())) is not None:
            summary += "\n" + alerts
        logger.log(logging.INFO if verdict.code == ExitCode.OK else logging.WARNING, "%s", summary)

    def _set(self, verdict: Verdict) -> None:
        stats = self.crawler.stats
        stats.set_value(EXIT_CODE, int(verdict.code))
        stats.set_value(VERDICT, verdict.name)
        stats.set_value(PROBLEMS, verdict.problems)

    def _feeds_closed(self) -> None:
        """A feed Scrapy could not store, after the summary: judged again, said in one more line."""
        failed = feed_storage_failures(self.crawler.stats.get_stats())
        if self.facts is None or not failed or set(failed) <= set(self.facts.output_failures):
            return
        self.facts.output_failures = [*self.facts.output_failures, *failed]
        verdict = judge(self.facts)
        self._set(verdict)
        logger.warning("newsdedup run %s: exit status %d (%s)\n%s", self.facts.finish_reason, int(verdict.code),
                       verdict.name, "\n".join(f"problem: {p}" for p in verdict.problems))


__all__ = ["EXIT_CODE", "PROBLEMS", "RunVerdict", "VERDICT"]
