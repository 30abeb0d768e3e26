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

from newsdedup.crawl.spiders.portal import PortalSpider
from newsdedup.demo.server import DemoPortalServer
from newsdedup.run import runstats
from newsdedup.run.verdict import ExitCode
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
    """Each run's closing summary (the one ``scrapy crawl`` logs), then the database's totals."""
    with open_store(store_uri) as store:
        counts = store.counts()
    lines = []
    for day, stats in enumerate(runs, 1):
        lines += [f"Run {day} (day {day} of the portal):", _indent(runstats.format_summary(stats))]
    lines += [
        "Columns: article links found on the list pages; known = handled by an earlier run, not fetched again;",
        "stored = new stories + near-duplicate reprints (tagged with the story they repeat); repeats = exact",
        "copies, recorded but not stored twice; skipped = pages without an article; failed = not fetchable.",
        "Database totals:",
        f"  {counts.articles} articles ({counts.unique} stories, {counts.near_duplicate} near-duplicate reprints),"
        f" {counts.repeats} exact repeats recorded, {counts.skipped} pages skipped, {counts.failures} failed",
        f"  {counts.clusters_with_duplicates} stories were reprinted (clusters with more than one page)",
        f"  storage: {store_uri}",
        f"  see every record: newsdedup export --storage {store_uri}",
        f"  failed and skipped pages: newsdedup failures --storage {store_uri}",
        f"  see who published each reprinted story first, and who copied it: "
        f"newsdedup report --storage {store_uri} -o report.html",
        f"  browse what spread, each story's copies and search it in the monitoring desk "
        f"(pip install 'newsdedup[serve]'): newsdedup serve --storage {store_uri}",
    ]
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def serve_demo(*, sites_out: str, port: int = 0, day: int = 1) -> int:
    """Serve the demo mini-portal on 127.0.0.1 until interrupted, its site file written to ``sites_out``:
    a portal to try ``newsdedup crawl --sites FILE`` on by hand (and the one CI crawls from an empty folder)."""
    import signal
    import threading

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with DemoPortalServer(day=day, port=port) as server:
        sites_file = Path(sites_out)
        # Written whole under another name first: whoever waits for the file never reads half of it.
        partial = sites_file.with_name(sites_file.name + ".partial")
        partial.write_text(server.sites_toml(), encoding="utf-8")
        partial.replace(sites_file)
        print(f"Serving the demo mini-portal (day {day}) at {server.base_url}; its site file is {sites_file}.\n"
              f"Crawl it from another shell: newsdedup crawl --sites {sites_file} "
              "-s DOWNLOAD_DELAY=0 -s AUTOTHROTTLE_ENABLED=False\nStop with Ctrl-C.", flush=True)
        stop.wait()
    return 0


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
    return max(int(stats.get("newsdedup/run/exit_code", ExitCode.INTERRUPTED)) for stats in runs)
