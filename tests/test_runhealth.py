"""The pure parts of run health: retry schedule, the run's verdict and exit status, per-site tallies and the
closing summary, what a worker makes of a page that is not HTML or that breaks extraction."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

from newsdedup.crawl.analysis import AnalysisPool, ExtractOptions, PageSkipped, analyse_page, init_worker, sniff_binary
from newsdedup.dedup.features import FeatureConfig
from newsdedup.run.retry import RetryPolicy, is_failure_kind, is_transient
from newsdedup.run.runstats import SiteTally, format_summary, format_table, site_key, tallies_of
from newsdedup.run.verdict import ExitCode, RunFacts, judge

NOW = datetime(2026, 11, 21, 8, 0, tzinfo=timezone.utc)


# -- retry -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("outcome, transient", [
    ("empty", True), ("too_short", True), ("malformed", True), ("error", True), ("timeout", True), ("crashed", True),
    ("video", False), ("list_page", False), ("not_html", False), ("javascript_only", False), ("too_large", False),
    ("http_500", True), ("http_503", True), ("http_403", True), ("redirect_loop", True), ("too_large_download", True),
    ("connection", True), ("http_404", False), ("http_410", False),
])
def test_what_is_tried_again(outcome, transient):
    assert is_transient(outcome) is transient


def test_the_backoff_doubles_until_the_last_attempt():
    policy = RetryPolicy(max_attempts=4, backoff=600)
    tries = [policy.next_try("http_500", attempts=n, now=NOW) for n in (1, 2, 3, 4)]
    assert [t - NOW if t else None for t in tries] == [timedelta(minutes=10), timedelta(minutes=20),
                                                        timedelta(minutes=40), None]
    assert is_failure_kind("http_500") and not is_failure_kind("too_short")
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


# -- verdict -----------------------------------------------------------------------------------------------
def ok_site(name="sina", **extra) -> SiteTally:
    fields = dict(list_pages=2, article_links=10, fetched=10, unique=9, repeats=1)
    fields.update(extra)
    return SiteTally(name, **fields)


def test_a_clean_run_is_ok_and_a_closespider_limit_is_the_users_choice():
    assert judge(RunFacts("finished", [ok_site()])).code == ExitCode.OK
    stopped_early = ok_site(article_links=40)  # 30 links not fetched: CLOSESPIDER_ITEMCOUNT reached
    assert judge(RunFacts("closespider_itemcount", [stopped_early, SiteTally("sohu")])).code == ExitCode.OK


@pytest.mark.parametrize("facts, code, says", [
    (RunFacts("finished", [ok_site()], not_saved=12, store_error="db: 12 records could not be saved (locked)"),
     ExitCode.NOT_SAVED, "12 records could not be saved"),
    (RunFacts("worker_lost", [ok_site()], worker_lost="the worker pool broke 4 times"), ExitCode.PAGES_NOT_PROCESSED,
     "extraction workers lost"),
    (RunFacts("finished", [ok_site(skipped={"error": 2, "video": 3})]), ExitCode.PAGES_NOT_PROCESSED,
     "site sina: 2 page(s) not processed (error 2)"),
    (RunFacts("finished", [ok_site(skipped={"timeout": 1, "crashed": 1})]), ExitCode.PAGES_NOT_PROCESSED,
     "(crashed 1, timeout 1)"),
    (RunFacts("finished", [ok_site(lost=3)]), ExitCode.PAGES_NOT_PROCESSED, "3 fetched page(s) were not analysed"),
    (RunFacts("finished", [ok_site(failed={"http_503": 4})]), ExitCode.SITE_FAILED,
     "site sina: 4 of 16 requests failed (25%, over NEWSDEDUP_MAX_HTTP_ERROR_SHARE 20%)"),
    (RunFacts("finished", [ok_site(list_failed=2, list_pages=0, article_links=0, fetched=0, unique=0, repeats=0)]),
     ExitCode.SITE_FAILED, "2 of 2 requests failed"),
    (RunFacts("finished", [ok_site(article_links=0, fetched=0, unique=0, repeats=0)]), ExitCode.SITE_FAILED,
     "no article links on its 2 list page(s), check its article_url_pattern"),
    (RunFacts("finished", [ok_site(article_links=0, fetched=0, unique=0, repeats=0)], had_links_before={"sina": True}),
     ExitCode.SITE_FAILED, "although earlier runs found some"),
    (RunFacts("shutdown", [ok_site()]), ExitCode.INTERRUPTED, "stopped before it finished (shutdown)"),
    # Pages held for a cold template when someone stops the crawl: the interruption's cost, said with it.
    (RunFacts("shutdown", [ok_site(held_at_stop=3)]), ExitCode.INTERRUPTED,
     "stopped before it finished (shutdown); 3 fetched page(s) held for their site's template were not read"),
    (RunFacts("closespider_timeout", [ok_site(held_at_stop=2)]), ExitCode.PAGES_NOT_PROCESSED,
     "site sina: 2 page(s) held for the site's template were not read before the crawl closed (closespider_timeout)"),
    (RunFacts("finished", [ok_site()], requests_lost=7), ExitCode.PAGES_NOT_PROCESSED,
     "7 scheduled request(s) were lost with the failing JOBDIR queue"),
    (RunFacts("finished", [ok_site()], undecodable=2), ExitCode.PAGES_NOT_PROCESSED,
     "2 entr(ies) of the run's Redis stream or request queue were not data a newsdedup process writes"),
    (RunFacts("finished", [ok_site()], redis_lost="the run's state"), ExitCode.PAGES_NOT_PROCESSED,
     "the run's state in Redis was lost mid-run (Redis restarted empty or flushed)"),
    (RunFacts("redis_unreachable", [ok_site()], redis_unreachable="Redis could not be reached for 60 s"),
     ExitCode.PAGES_NOT_PROCESSED, "Redis could not be reached for 60 s: this process stopped"),
])
def test_what_fails_a_run(facts, code, says):
    verdict = judge(facts)
    assert verdict.code == code
    assert any(says in problem for problem in verdict.problems), verdict.problems


def test_the_most_severe_problem_sets_the_status_and_every_problem_is_listed():
    facts = RunFacts("shutdown", [ok_site(failed={"http_500": 9}), ok_site("sohu", skipped={"timeout": 1})],
                     not_saved=5, store_error="5 records could not be saved")
    verdict = judge(facts)
    assert verdict.code == ExitCode.NOT_SAVED and verdict.name == "not_saved"
    assert len(verdict.problems) == 4
    assert judge(RunFacts("finished", [ok_site(failed={"http_500": 1})], max_http_error_share=0.5)).code == ExitCode.OK


# -- per-site tallies and the summary ----------------------------------------------------------------------
def test_tallies_round_trip_through_stats_and_every_site_shows_its_zeros():
    stats = {site_key("a", "list_pages"): 1, site_key("a", "article_links"): 4, site_key("a", "fetched"): 3,
             site_key("a", "unique"): 2, site_key("a", "skipped/video"): 1, site_key("a", "failed/http_500"): 1,
             site_key("b", "list_pages"): 0, "newsdedup/run/exit_code": 6, "newsdedup/run/verdict": "site_failed",
             "newsdedup/run/problems": ["site b: ..."], "finish_reason": "finished"}
    a, b = tallies_of(stats)
    assert (a.stored, a.skipped_total, a.failed_total, a.not_fetched) == (2, 1, 1, 0)
    assert b == SiteTally("b")
    table = format_table([a, b])
    assert table.splitlines()[-1].split() == ["b", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"]
    summary = format_summary(stats)
    assert summary.startswith("newsdedup run finished: exit status 6 (site_failed)")
    assert "skipped: video 1; failed: http_500 1" in summary and summary.endswith("problem: site b: ...")


# -- what a worker makes of a page -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def worker():
    init_worker(FeatureConfig())


def test_a_pdf_served_as_html_is_not_html_whatever_its_charset(worker):
    pdf = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + b"1 0 obj << /Type /Catalog >> endobj\n" * 200
    result = analyse_page(pdf, "http://x/a/1.html", "utf-8", (), ExtractOptions())
    assert result == PageSkipped("not_html", "the page is a PDF file, not HTML")
    assert sniff_binary(b"\x89PNG\r\n\x1a\n....") == "a PNG image"
    assert sniff_binary(b"  <html>\x00</html>") == "binary data"
    assert sniff_binary("<html><body>正文</body></html>".encode("gbk")) is None


def test_an_exception_in_extraction_is_an_error_not_a_property_of_the_page(worker):
    html = b"<html><body><p>" + "正文".encode() * 200 + b"</p></body></html>"
    # A site whose remove_selectors is one string instead of a list makes the extractor raise, page after page.
    result = analyse_page(html, "http://x/a/1.html", None, ".related", ExtractOptions())
    assert isinstance(result, PageSkipped) and result.reason == "error"
    assert "ValueError" in result.detail


def test_the_inline_pool_analyses_in_the_crawl_process():
    pool = AnalysisPool(FeatureConfig(), workers=0, timeout=5)
    pool.start()
    result = asyncio.run(pool.analyse(b"", "http://x/a/1.html", None, (), ExtractOptions()))
    assert result == PageSkipped("empty", "page is empty")
