"""``newsdedup demo``: crawl the bundled mini-portal twice (day 1, then day 2) and summarise.

The portal is served on 127.0.0.1 by :class:`~newsdedup.demo.server.DemoPortalServer`; the crawl
is the real ``portal`` spider with the project's settings and pipelines, writing to SQLite.  The
second run shows the monitoring behaviour: list pages are fetched again, articles already
fetched are not, and new reprints are matched against what the first run stored.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from scrapy.crawler import AsyncCrawlerRunner
from scrapy.settings import Settings
from scrapy.utils.log import configure_logging
from scrapy.utils.reactor import install_reactor

from newsdedup.demo.server import DemoPortalServer
from newsdedup.spiders.portal import PortalSpider
from newsdedup.storage import open_store

ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"


def demo_settings(storage_uri: str, *, workers: int | None, verbose: bool) -> Settings:
    settings = Settings()
    settings.setmodule("newsdedup.settings", priority="project")
    settings.setdict(
        {
            "NEWSDEDUP_STORAGE_URI": storage_uri,
            "NEWSDEDUP_WORKERS": workers,
            # The portal is our own process on loopback: no need to pace requests.
            "DOWNLOAD_DELAY": 0,
            "AUTOTHROTTLE_ENABLED": False,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "LOG_LEVEL": "INFO" if verbose else "ERROR",
            "TELNETCONSOLE_ENABLED": False,
        },
        priority="cmdline",
    )
    return settings


async def crawl_days(server: DemoPortalServer, settings: Settings, sites_file: Path, days=(1, 2)) -> list[dict]:
    """Run one crawl per day in this process; return each crawl's stats."""
    runner = AsyncCrawlerRunner(settings)
    results = []
    for day in days:
        server.set_day(day)
        crawler = runner.create_crawler(PortalSpider)
        await runner.crawl(crawler, sites=str(sites_file))
        results.append(dict(crawler.stats.get_stats()))
    return results


def _run_in_reactor(coro_factory):
    install_reactor(ASYNCIO_REACTOR)
    import asyncio

    from twisted.internet import defer, reactor

    outcome: dict = {}

    def done(result):
        outcome["result"] = result
        reactor.stop()

    def failed(failure):
        outcome["error"] = failure
        reactor.stop()

    # AsyncCrawlerRunner hands out asyncio tasks: drive the coroutine as an asyncio task too.
    reactor.callWhenRunning(
        lambda: defer.Deferred.fromFuture(asyncio.ensure_future(coro_factory())).addCallbacks(done, failed)
    )
    reactor.run(installSignalHandlers=False)
    if "error" in outcome:
        outcome["error"].raiseException()
    return outcome["result"]


def format_summary(runs: list[dict], store_uri: str) -> str:
    store = open_store(store_uri)
    store.open()
    try:
        counts = store.counts()
    finally:
        store.close()
    lines = []
    for day, stats in enumerate(runs, 1):
        skipped = {k.rsplit("/", 1)[1]: v for k, v in stats.items() if k.startswith("newsdedup/extract/skipped/")}
        lines += [
            f"Run {day} (day {day} of the portal):",
            f"  pages fetched          {stats.get('response_received_count', 0)}"
            f" ({stats.get('newsdedup/crawl/list_pages', 0)} list, {stats.get('newsdedup/crawl/article_pages', 0)} article)",
            f"  already fetched        {stats.get('newsdedup/urlfilter/filtered', 0)} links to articles of earlier runs not followed",
            f"  robots.txt forbidden   {stats.get('robotstxt/forbidden', 0)}",
            f"  articles stored        {stats.get('newsdedup/store/articles', 0)}"
            f" ({stats.get('newsdedup/near/clusters', 0)} new stories,"
            f" {stats.get('newsdedup/near/near_duplicates', 0)} near-duplicate reprints tagged)",
            f"  exact repeats dropped  {stats.get('newsdedup/exact/repeats', 0)} (recorded, not stored twice)",
            f"  pages skipped          {stats.get('newsdedup/extract/skipped', 0)}"
            + (" (" + ", ".join(f"{n} {r}" for r, n in sorted(skipped.items())) + ")" if skipped else ""),
        ]
    lines += [
        "Database totals:",
        f"  {counts.articles} articles ({counts.unique} unique stories, {counts.near_duplicate} near duplicates),"
        f" {counts.repeats} exact repeats recorded, {counts.skipped} pages skipped",
        f"  {counts.clusters_with_duplicates} stories were reprinted (clusters with more than one page)",
        f"  storage: {store_uri}",
        f"  see every record: newsdedup export --storage {store_uri}",
        f"  see who published each reprinted story first, and who copied it: "
        f"newsdedup report --storage {store_uri} -o report.html",
    ]
    return "\n".join(lines)


def run_demo(*, storage: str | None = None, workers: int | None = None, verbose: bool = False) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="newsdedup-demo-"))
    storage_uri = storage or f"sqlite:///{workdir / 'demo.sqlite'}"
    settings = demo_settings(storage_uri, workers=workers, verbose=verbose)
    configure_logging(settings)
    with DemoPortalServer(day=1) as server:
        sites_file = workdir / "demo-sites.toml"
        sites_file.write_text(server.sites_toml(), encoding="utf-8")
        print(f"Serving the demo mini-portal at {server.base_url} (4 portals); crawling it twice...")
        runs = _run_in_reactor(lambda: crawl_days(server, settings, sites_file))
    print(format_summary(runs, storage_uri))
    return 0
