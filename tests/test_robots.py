"""robots.txt obeyed by the requests that wait while it is fetched (newsdedup/crawl/robots.py), in a real crawl."""

from __future__ import annotations

import sqlite3

from local_site import STORY, LocalSite, Page, crawl, list_html

HIDDEN = [f"/kx/hidden/{n}.html" for n in range(1, 5)]


def test_requests_waiting_for_robots_txt_obey_it(tmp_path):
    with LocalSite(("kx",)) as site:
        article = site.publish("kx", 1, "社区食堂", STORY, "2026-11-16 08:40")
        # Slow robots.txt: all the start URLs reach the middleware while it is fetched, so all but one wait for it.
        site.pages["/robots.txt"] = Page(b"User-agent: *\nDisallow: /kx/hidden/\n", delay=1.5)
        for number, path in enumerate(HIDDEN, 2):  # list pages robots.txt forbids, each linking an article
            site.pages[path] = Page(list_html("kx", [f"/kx/news/{number}.html"]))
        start = [f"{site.base_url}/kx/index.html"] + [site.base_url + path for path in HIDDEN]
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(site.sites_toml().replace(
            f'start_urls = ["{site.base_url}/kx/index.html"]',
            "start_urls = [" + ", ".join(f'"{url}"' for url in start) + "]"), encoding="utf-8")
        log = crawl(sites_file, tmp_path / "news.db", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8")
        assert site.requests["/robots.txt"] == 1
        assert {path: site.requests[path] for path in HIDDEN} == dict.fromkeys(HIDDEN, 0), log[-3000:]
    assert "'robotstxt/forbidden': 4" in log
    urls = {r[0] for r in sqlite3.connect(tmp_path / "news.db").execute("SELECT url FROM articles")}
    assert article in urls, log[-6000:]
