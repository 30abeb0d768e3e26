"""End to end: a portal whose RSS feed, sitemap index and JSON Feed are given only as ``start_urls`` (what a newcomer
writes first), crawled by the real ``scrapy crawl portal``; and the canonical URL requested with the portal's own
query text."""

from __future__ import annotations

import gzip
import json

from faultsite import article_html, article_paragraphs, run_crawl
from local_site import export_rows
from newsdedup.demo.server import LoopbackServer, Response

# The article reachable from the HTML start page, with a query the site's canonical table keeps in part: an encoded
# value (q=a%20b), a URL as a value (url=http://...), a bare key (id) and a tracking parameter it drops (spm).
QUERY_ARTICLE = "/news/9.html?url=http://x.cn/y&q=a%20b&id&spm=home"
QUERY_KEPT = "/news/9.html?url=http://x.cn/y&q=a%20b&id"
# Which article each start URL alone leads to.
FROM_HTML = (1, 9)
FROM_RSS = (2, 3)
FROM_SITEMAPS = (4, 5, 6)  # 4 and 5 in a gzipped sitemap, 6 in a plain one: both named by the index
FROM_JSON_FEED = (7, 8)


def _pages(base: str) -> dict[str, Response]:
    pages = {f"/news/{n}.html": Response(article_html(f"第{n}条测试新闻", article_paragraphs(300 + n)).encode())
             for n in range(1, 10)}
    pages["/index.html"] = Response(
        f'<html><body><a href="/news/1.html">一</a> <a href="{QUERY_ARTICLE.replace("&", "&amp;")}">九</a>'
        "</body></html>".encode())
    items = "".join(f"<item><title>第{n}条</title><link>{base}/news/{n}.html</link>"
                    f"<pubDate>Fri, 20 Nov 2026 0{n}:00:00 +0800</pubDate></item>" for n in FROM_RSS)
    pages["/rss.xml"] = Response(f'<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0"><channel>'
                                 f"<title>测试</title>{items}</channel></rss>".encode(), "application/rss+xml")
    pages["/sitemap_index.xml"] = Response(
        ('<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
         f"<sitemap><loc>{base}/sitemaps/a.xml.gz</loc><lastmod>2026-11-20</lastmod></sitemap>"
         f"<sitemap><loc>{base}/sitemaps/b.xml</loc><lastmod>2026-11-19</lastmod></sitemap></sitemapindex>").encode(),
        "application/xml")

    def urlset(numbers) -> bytes:
        urls = "".join(f"<url><loc>{base}/news/{n}.html</loc></url>" for n in numbers)
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"{urls}</urlset>").encode()

    pages["/sitemaps/a.xml.gz"] = Response(gzip.compress(urlset(FROM_SITEMAPS[:2])), "application/x-gzip")
    pages["/sitemaps/b.xml"] = Response(urlset(FROM_SITEMAPS[2:]), "application/xml")
    feed = {"version": "https://jsonfeed.org/version/1.1", "title": "测试",
            "items": [{"id": str(n), "url": f"{base}/news/{n}.html", "title": f"第{n}条",
                       "date_published": f"2026-11-20T0{n}:00:00+08:00"} for n in FROM_JSON_FEED]}
    pages["/feed.json"] = Response(json.dumps(feed, ensure_ascii=False).encode(), "application/feed+json")
    pages["/robots.txt"] = Response(b"User-agent: *\nAllow: /\n", "text/plain")
    return pages


def test_a_feed_a_sitemap_index_and_a_json_feed_given_as_start_urls_are_read_as_sources(tmp_path):
    pages: dict[str, Response] = {}
    with LoopbackServer(pages) as server:
        base = server.base_url
        pages.update(_pages(base))
        escaped = base.replace(".", r"\.")
        sites = tmp_path / "sites.toml"
        sites.write_text(f"""
[[site]]
name = "fixture"
start_urls = ["{base}/index.html", "{base}/rss.xml", "{base}/sitemap_index.xml", "{base}/feed.json"]
allowed_domains = ["127.0.0.1"]
article_url_pattern = '{escaped}/news/\\d+\\.html(\\?.*)?'
# The index and its two sitemaps are three pages: the index's own is not one of the two.
max_source_pages = 2

[site.canonical]
keep_query = ["url", "q", "id"]
""", encoding="utf-8")
        db = tmp_path / "news.sqlite"
        result = run_crawl(sites, db)
    log = result.stderr
    assert result.returncode == 0 and "Traceback" not in log, log[-4000:]
    stored = {row["url"] for row in export_rows(db)}
    expected = {f"{base}/news/{n}.html" for n in (1, *FROM_RSS, *FROM_SITEMAPS, *FROM_JSON_FEED)} | {base + QUERY_KEPT}
    assert stored == expected

    # The canonical URL was requested with the portal's own query text, once, and the full one never.
    assert server.requests_received[QUERY_KEPT] == 1
    assert server.requests_received[QUERY_ARTICLE] == 0
    # Every sitemap the index names was read, each once.
    for path in ("/sitemap_index.xml", "/sitemaps/a.xml.gz", "/sitemaps/b.xml", "/rss.xml", "/feed.json"):
        assert server.requests_served[path] == 1, path

    # Each recognised start URL is named in the log with the table that declares it.
    for number, path, description, declared in (
        (2, "/rss.xml", "an RSS/Atom feed", 'kind = "feed"'),
        (3, "/sitemap_index.xml", "a sitemap", 'kind = "sitemap"'),
        (4, "/feed.json", "a JSON Feed",
         'kind = "json"\nurl = "' + base + '/feed.json"\nitems = "items"\nlink = "url"'),
    ):
        kind = declared.split('"')[1]
        line = (f"site fixture: start URL {base}{path} is {description}, read as list source start{number}-{kind}; "
                "declared in the site file it reads:\n[[site.sources]]\n")
        assert line in log, line
        assert declared in log
    assert f"start URL {base}/index.html is" not in log
    by_source = next(line for line in log.splitlines() if "links by source:" in line)
    for expected_count in ("html 2", "start2-feed 2 in 1 page", "start3-sitemap 3 in 3 pages",
                           "start4-json 2 in 1 page"):
        assert expected_count in by_source, (expected_count, by_source)
