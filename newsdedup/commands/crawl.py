"""``scrapy crawl portal``: check everything before Scrapy starts, then exit with the run's verdict.

Scrapy's own ``crawl`` discovers a bad site file or setting only when the spider or a pipeline is built
inside the running event loop, where the one-line message drowns in tracebacks (``Task exception was
never retrieved``), and it exits 0 whatever happened to the pages. This command replaces it through the
project's ``COMMANDS_MODULE`` (Scrapy 2.19 looks the command name up there after its built-in commands, so
``scrapy crawl`` from the project root, Scrapyd and cron all get it; other spiders run unchanged):

- ``process_options`` runs before Scrapy configures logging or builds a crawler: the site file, every
  ``NEWSDEDUP_*`` setting and the database (readable, newsdedup's, schema version, ``PRAGMA quick_check``,
  run lock) are checked there, and a problem prints one line, ``newsdedup: error: ...``, and exits with
  status 2 (3 when another crawl holds the database);
- ``run`` crawls as Scrapy's command does and sets the exit status from the verdict the pipelines left in
  the stats (:mod:`newsdedup.verdict`); a crawl killed before it could judge itself exits 7 (interrupted).
"""

from __future__ import annotations

import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from newsdedup.options import SettingError
from newsdedup.pipelines.state import CrawlSettings
from newsdedup.sites import SiteConfigError, load_sites
from newsdedup.storage.base import ArticleStore, StoreError, StoreInUse
from newsdedup.verdict import ExitCode

SPIDER = "portal"


def prepare_crawl(settings, spider_args: dict) -> ArticleStore:
    """Check a crawl's inputs; return its store, open and locked for this process. Raises CrawlConfigError."""
    try:
        load_sites(spider_args.get("sites"), only=spider_args.get("site"))
        crawl = CrawlSettings.from_settings(settings)
        store = crawl.open_store()
    except (SiteConfigError, SettingError, ValueError) as exc:
        raise CrawlConfigError(str(exc), ExitCode.CONFIG_ERROR) from None
    try:
        store.open()
        store.check()
        if crawl.redis_url:  # the workers of a distributed crawl take turns with the lock (newsdedup.pipelines.writer)
            _check_redis(crawl.redis_url)
        else:
            store.lock_for_run()
    except StoreInUse as exc:
        store.close()
        raise CrawlConfigError(str(exc), ExitCode.DATABASE_IN_USE) from None
    except StoreError as exc:
        store.close()
        raise CrawlConfigError(str(exc), ExitCode.CONFIG_ERROR) from None
    return store


def _check_redis(url: str) -> None:
    try:
        from newsdedup import distributed
        import scrapy_redis  # noqa: F401 - the scheduler and request filter of a distributed crawl
    except ImportError as exc:
        raise StoreError(f"NEWSDEDUP_REDIS_URL needs the redis extra ({exc.name} is missing): "
                         "pip install 'newsdedup[redis]'") from None
    try:
        distributed.connect(url).ping()
    except Exception as exc:  # noqa: BLE001 - any connection failure is the same one line
        raise StoreError(f"NEWSDEDUP_REDIS_URL {url}: cannot reach Redis ({exc})") from None


class CrawlConfigError(Exception):
    def __init__(self, message: str, code: ExitCode) -> None:
        super().__init__(message)
        self.code = code


class Command(ScrapyCrawlCommand):
    def long_desc(self) -> str:
        return (
            "Run a spider of the project. For the portal spider, the site file, the NEWSDEDUP_* settings and "
            "the database are checked first, and the exit status tells how the run went "
            "(0 ok, 2 config error, 3 database in use, 4 not saved, 5 pages not processed, 6 a site failed, "
            "7 interrupted, 8 an item pipeline or feed export after newsdedup's failed; README.md, *Exit status*)."
        )

    def process_options(self, args, opts) -> None:
        super().process_options(args, opts)
        self._store: ArticleStore | None = None
        if args[:1] == [SPIDER]:
            try:
                self._store = prepare_crawl(self.settings, opts.spargs)
            except CrawlConfigError as exc:
                print(f"newsdedup: error: {exc}", file=sys.stderr)
                sys.exit(int(exc.code))

    def run(self, args, opts) -> None:
        if args[:1] != [SPIDER]:
            super().run(args, opts)
            return
        crawler = self._create_crawler(SPIDER)
        try:
            self.crawler_process.crawl(crawler, **opts.spargs)
            self.crawler_process.start()
        finally:
            if self._store is not None:
                self._store.close()  # releases this process's run lock
        if self.crawler_process.bootstrap_failed:
            self.exitcode = int(ExitCode.SCRAPY_ERROR)
            return
        code = crawler.stats.get_value("newsdedup/run/exit_code") if crawler.stats else None
        self.exitcode = int(ExitCode.INTERRUPTED) if code is None else int(code)
