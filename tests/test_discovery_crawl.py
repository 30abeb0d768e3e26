"""End to end: a real ``scrapy crawl portal`` over a portal whose lists are JSON, JSONP, page data, RSS, Atom and
sitemaps (tests/feedportal.py), twice, as a scheduled monitor runs it."""

from __future__ import annotations

import re
import sqlite3

from faultsite import run_crawl
from feedportal import ENDLESS_MAX_PAGES, UNDATED_ARTICLE, UNDATED_PUBLISHED, FeedPortal
from local_site import check_store_consistent, export_rows


_ARTICLE_PATH = re.compile(r"/(?:news/|a/|newsDetail_forward_|c/|private/)")


def _summary_line(log: str, start: str) -> str:
    """The detail line of the closing summary that holds ``start``."""
    return next(line for line in log.splitlines() if start in line)


def _pages(portal: FeedPortal, prefix: str) -> dict[str, int]:
    return {path: n for (_, path), n in portal.served.items() if path.startswith(prefix)}


def test_every_list_source_finds_its_articles_twins_are_one_and_a_second_run_stops_at_the_first_known_page(tmp_path):
    with FeedPortal() as portal:
        sites = tmp_path / "sites.toml"
        sites.write_text(portal.sites_toml(), encoding="utf-8")
        db = tmp_path / "news.sqlite"

        first = run_crawl(sites, db)
        log = first.stderr
        assert "Traceback" not in log, log[-4000:]
        # The bad sources make the run say what it could not do; everything else of the site was crawled.
        assert first.returncode == 6, log[-4000:]
        rows = export_rows(db)
        stored = {row["url"] for row in rows}
        assert stored == portal.expected_articles()
        check_store_consistent(db)

        # Twins and tracking parameters: one URL each, fetched once, from the desktop host.
        assert not any("localhost" in url or "?" in url for url in stored)
        articles = {path: n for (host, path), n in portal.served.items()
                    if _ARTICLE_PATH.match(path)}
        assert all(n == 1 for n in articles.values()), articles
        assert not [path for host, path in portal.served if host == "localhost"]
        conn = sqlite3.connect(db)
        fetched = dict(conn.execute("SELECT url, fetched_url FROM articles"))
        assert fetched[portal.article_url(22)] == portal.article_url(22)  # listed as a mobile twin, fetched canonical

        # The feed's time is the article's when its page has none.
        undated = next(row for row in rows if row["url"] == portal.article_url(UNDATED_ARTICLE))
        assert undated["published_at"] == UNDATED_PUBLISHED

        # Politeness: robots.txt forbids /private/, listed in a sitemap: not fetched.
        assert not _pages(portal, "/private/")

        # The endless feed stops at the site's page limit; 163's list ends with a 404 past its last file, no failure.
        assert sorted(_pages(portal, "/api/endless")) == [f"/api/endless?page={p}" for p in range(1, ENDLESS_MAX_PAGES + 1)]
        assert "/special/00804KVA/cm_guonei_03.js?callback=data_callback" in _pages(portal, "/special/")

        # Every source counts in the summary; the broken ones are named, with the reason.
        by_source = _summary_line(log, "links by source:")
        for expected in ("roll 4 in 3 pages", "cm 4 in 2 pages", "feed 2 in 2 pages", "next 2 in 1 page",
                         "alldata 2 in 1 page", "rss 2 in 1 page", "atom 1 in 1 page", "sitemaps 4 in 4 pages",
                         f"endless {2 * ENDLESS_MAX_PAGES} in {ENDLESS_MAX_PAGES} pages (stopped: max_pages)",
                         "html 1", "scripts 2",
                         "sources failed: broken (malformed_json 1), blocked (not_json 1), missing (http_404 1)"):
            assert expected in by_source, (expected, by_source)
        for name, reason in (("broken", "malformed_json"), ("blocked", "not_json"), ("missing", "http_404")):
            assert f"problem: site fixture: list source {name} failed ({reason} 1)" in log
        assert "cm failed" not in log

        # A second run: one new article at the top of the roll. Nothing known is fetched, and every feed stops
        # at its first page that brings nothing new.
        portal.roll.insert(0, 14)
        before = portal.served.copy()
        second = run_crawl(sites, db)
        assert second.returncode == 6 and "Traceback" not in second.stderr, second.stderr[-4000:]
        new = {key: n - before[key] for key, n in portal.served.items() if n > before[key]}
        new_articles = [path for _, path in new if _ARTICLE_PATH.match(path)]
        assert new_articles == ["/news/14.html"]
        assert {row["url"] for row in export_rows(db)} == portal.expected_articles()
        roll = "/api/roll/get?pageid=153&lid=2509&num=2&page="
        assert sorted(path for _, path in new if path.startswith(roll)) == [roll + "1", roll + "2"]
        for first_page, second_page in (
            ("/special/00804KVA/cm_guonei.js?callback=data_callback",
             "/special/00804KVA/cm_guonei_02.js?callback=data_callback"),
            ("/api/endless?page=1", "/api/endless?page=2"),
            ("/public-api/feed?scene=CATEGORY&sceneId=1460&page=1&size=20",
             "/public-api/feed?scene=CATEGORY&sceneId=1460&page=2&size=20"),
            ("/sitemaps/news.xml.gz", "/sitemaps/more.xml"),  # the index's newest sitemap, then the older one
        ):
            assert ("127.0.0.1", first_page) in new and ("127.0.0.1", second_page) not in new, (first_page, new)
        assert "endless 2 in 1 page (stopped: nothing_new)" in _summary_line(second.stderr, "links by source:")
