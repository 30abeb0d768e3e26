"""The crawl's parts as Scrapy sees them (newsdedup.crawl.pipelines.state, newsdedup.crawl.verdict): Scrapy's own
``finish_reason`` stays Scrapy's, whatever the verdict; the verdict is in ``newsdedup/run/verdict`` and the exit
status. Real ``scrapy crawl portal`` runs against a local portal (tests/faultsite.py), read through the stats
Scrapy dumps at the end of the crawl.
"""

from __future__ import annotations

import re

import pytest

from faultsite import FaultSite, run_crawl
from newsdedup.run.verdict import ExitCode

pytestmark = pytest.mark.timeout(300)


def dumped_stats(log: str) -> dict[str, str]:
    """The stats Scrapy dumped at the end of the crawl, the values as written (``'finished'``, ``6``)."""
    dump = log[log.index("Dumping Scrapy stats"):]
    return dict(re.findall(r"^\s*[{ ]'([^']+)': (.+?),?}?$", dump, flags=re.M))


def test_a_failed_site_keeps_scrapys_finish_reason_and_puts_the_verdict_in_its_own_stat_and_the_exit_status(tmp_path):
    with FaultSite(5) as site:
        https = site.base_url.replace("http://", "https://").replace(".", r"\.") + r"/a/\d+\.html"
        sites = site.write_sites(tmp_path, article_url_pattern=https)  # matches no link: the site fails
        result = run_crawl(sites, tmp_path / "news.sqlite")
    assert result.returncode == ExitCode.SITE_FAILED, result.stderr[-3000:]
    stats = dumped_stats(result.stderr)
    assert stats["finish_reason"] == "'finished'"  # Scrapy's, as Scrapyd and spidermon read it
    assert stats["newsdedup/run/verdict"] == "'site_failed'"
    assert stats["newsdedup/run/exit_code"] == str(int(ExitCode.SITE_FAILED))
    assert "newsdedup run finished: exit status 6 (site_failed)" in result.stderr
    assert "newsdedup.crawl.engine" not in result.stderr  # this Scrapy still has what it reads


def test_a_closespider_limit_is_the_finish_reason_and_the_verdict_still_judges_the_sites(tmp_path):
    # The limit is reached on the list page (robots.txt is the first page): the crawl closes after reading it, and
    # the site whose pattern matches none of its links fails all the same (a limit is the user's choice, no excuse).
    with FaultSite(5) as site:
        https = site.base_url.replace("http://", "https://").replace(".", r"\.") + r"/a/\d+\.html"
        sites = site.write_sites(tmp_path, article_url_pattern=https)
        result = run_crawl(sites, tmp_path / "news.sqlite", "-s", "CLOSESPIDER_PAGECOUNT=2")
    assert result.returncode == ExitCode.SITE_FAILED, result.stderr[-3000:]
    stats = dumped_stats(result.stderr)
    assert stats["finish_reason"] == "'closespider_pagecount'"
    assert stats["newsdedup/run/verdict"] == "'site_failed'"
    assert stats["newsdedup/run/exit_code"] == str(int(ExitCode.SITE_FAILED))
    assert "newsdedup run closespider_pagecount: exit status 6 (site_failed)" in result.stderr


def test_a_crawl_of_a_healthy_site_finishes_ok_in_every_part(tmp_path):
    with FaultSite(4) as site:
        result = run_crawl(site.write_sites(tmp_path), tmp_path / "news.sqlite")
    assert result.returncode == ExitCode.OK, result.stderr[-3000:]
    stats = dumped_stats(result.stderr)
    assert (stats["finish_reason"], stats["newsdedup/run/verdict"], stats["newsdedup/run/exit_code"]) == (
        "'finished'", "'ok'", "0")
    assert stats["newsdedup/site/fault/unique"] == "4"


def test_extensions_without_newsdedups_own_is_one_line_before_the_crawl_starts(tmp_path):
    with FaultSite(1) as site:
        result = run_crawl(site.write_sites(tmp_path), tmp_path / "news.sqlite",
                           "-s", 'EXTENSIONS={"newsdedup.crawl.verdict.RunVerdict": 900}')
        assert site.served["/list/1.html"] == 0
    assert result.returncode == ExitCode.CONFIG_ERROR
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("newsdedup: error: EXTENSIONS: newsdedup's "
                                                   "newsdedup.crawl.pipelines.state.CrawlState, "
                                                   "newsdedup.distributed.member.RunMember must stay in it"), lines


def test_an_item_done_after_the_closing_scraper_fired_asks_nothing_more():
    """Two pages read again finishing in one loop turn: the first one's check finds the closing scraper idle and
    fires its Deferred; the second must not fire it again (Twisted's ``AlreadyCalledError``)."""
    import scrapy
    from scrapy.core.scraper import Slot
    from scrapy.utils.test import get_crawler
    from twisted.internet.defer import Deferred

    from newsdedup.crawl import engine

    crawler = get_crawler(scrapy.Spider)
    crawler.spider = scrapy.Spider("portal")
    crawler.engine = crawler._create_engine()
    crawler.engine.scraper.slot = slot = Slot()
    slot.closing = Deferred()
    fired = []
    slot.closing.addCallback(fired.append)
    engine.item_done(crawler)  # idle: fires
    engine.item_done(crawler)  # fired already: nothing more (raised AlreadyCalledError before)
    assert fired == [crawler.spider]


def _site_counts(log: str) -> dict[str, dict[str, int]]:
    """Per-site integer stats from the closing dump: {site: {counter: value}}."""
    found: dict[str, dict[str, int]] = {}
    for site, what, value in re.findall(r"'newsdedup/site/([^/']+)/([^']+)': (\d+)", log):
        found.setdefault(site, {})[what] = int(value)
    return found


@pytest.mark.parametrize("cap", [1, 2, 3, 5, 8])
def test_a_crawl_capped_at_any_item_count_logs_no_error_and_exits_with_what_it_left(tmp_path, cap):
    # The demo portal's sites are new: their first pages are held for the template and read again, and a cap
    # closes the crawl while pages are read again (an AlreadyCalledError printed under exit 0, 1 run in 3 at 3).
    from newsdedup.demo.server import DemoPortalServer

    with DemoPortalServer(day=1) as server:
        sites = tmp_path / "sites.toml"
        sites.write_text(server.sites_toml(), encoding="utf-8")
        result = run_crawl(sites, tmp_path / "news.sqlite", "-s", f"CLOSESPIDER_ITEMCOUNT={cap}")
    log = result.stderr
    assert "ERROR" not in log and "Traceback" not in log, log[-4000:]
    stats = dumped_stats(log)
    assert stats["finish_reason"] == "'closespider_itemcount'"
    assert stats["newsdedup/run/exit_code"] == str(result.returncode)
    counts = _site_counts(log)
    left = sum(c.get("held_at_stop", 0) + c.get("lost", 0) for c in counts.values())
    # Honest: 5 exactly when fetched pages were left unread, and every other fetched page is accounted for.
    assert result.returncode == (ExitCode.PAGES_NOT_PROCESSED if left else ExitCode.OK), log[-3000:]
    for site, c in counts.items():
        accounted = sum(v for k, v in c.items() if k.split("/")[0] in (
            "unique", "near_duplicate", "repeat", "skipped", "failed", "held_at_stop", "lost"))
        assert c.get("fetched", 0) + sum(v for k, v in c.items() if k.startswith("failed/")) == accounted, (site, c)
