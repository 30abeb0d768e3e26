"""robots.txt obeyed by the requests that wait while it is fetched (newsdedup/crawl/robots.py), in a real crawl."""

from __future__ import annotations

import sqlite3
import threading

from faultsite import kill, start_crawl, wait_for
from local_site import STORY, LocalSite, Page, list_html

HIDDEN = [f"/kx/hidden/{n}.html" for n in range(1, 5)]


def test_requests_waiting_for_robots_txt_obey_it(tmp_path):
    with LocalSite(("kx",)) as site:
        article = site.publish("kx", 1, "社区食堂", STORY, "2026-11-16 08:40")
        # robots.txt is answered only once the other start requests are seen waiting for it (the middleware logs each
        # at DEBUG), however fast or slow the machine: the case the middleware is there for, for certain.
        released = threading.Event()
        site.pages["/robots.txt"] = Page(b"User-agent: *\nDisallow: /kx/hidden/\n", gate=released)
        for number, path in enumerate(HIDDEN, 2):  # list pages robots.txt forbids, each linking an article
            site.pages[path] = Page(list_html("kx", [f"/kx/news/{number}.html"]))
        start = [f"{site.base_url}/kx/index.html"] + [site.base_url + path for path in HIDDEN]
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(site.sites_toml().replace(
            f'start_urls = ["{site.base_url}/kx/index.html"]',
            "start_urls = [" + ", ".join(f'"{url}"' for url in start) + "]"), encoding="utf-8")
        log_file = tmp_path / "crawl.log"
        crawl = start_crawl(sites_file, tmp_path / "news.db", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8",
                            "-s", "LOG_LEVEL=DEBUG", log=log_file)
        try:
            waiting = f"waits for the robots.txt of {site.base_url.removeprefix('http://')}"
            wait_for(lambda: crawl.poll() is not None or log_file.read_text(encoding="utf-8").count(waiting) == 4, 120)
            released.set()
            assert crawl.wait(timeout=240) == 0, log_file.read_text(encoding="utf-8")[-3000:]
        finally:
            released.set()
            kill(crawl.pid)
        log = log_file.read_text(encoding="utf-8")
        assert site.requests["/robots.txt"] == 1
        assert {path: site.requests[path] for path in HIDDEN} == dict.fromkeys(HIDDEN, 0), log[-3000:]
    assert "'robotstxt/waited': 4" in log and "'robotstxt/forbidden': 4" in log
    urls = {r[0] for r in sqlite3.connect(tmp_path / "news.db").execute("SELECT url FROM articles")}
    assert article in urls, log[-6000:]
