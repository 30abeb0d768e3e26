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
- ``run`` crawls as Scrapy's command does and sets the exit status from the verdict the crawl left in its
  ``newsdedup/run/exit_code`` stat (:mod:`newsdedup.crawl.verdict`, :mod:`newsdedup.run.verdict`; Scrapy's
  ``finish_reason`` is left as Scrapy set it); a crawl killed before it could judge itself exits 7 (interrupted).

``--settings FILE`` reads a user's settings file (:mod:`newsdedup.run.settings_file`) under the ``-s`` values.
:func:`crawl_anywhere` is ``newsdedup crawl``: this same command, run on the portal spider with the package's
settings, so an installed newsdedup crawls from any folder, without this repository's ``scrapy.cfg``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from newsdedup.crawl.pipelines.state import CrawlSettings, CrawlState, hand_over, take_back
from newsdedup.crawl.sites import SiteConfigError, load_sites
from newsdedup.run.options import SettingError
from newsdedup.run.verdict import ExitCode
from newsdedup.storage.base import ArticleStore, StoreError, StoreInUse

SPIDER = "portal"
SETTINGS_MODULE = "newsdedup.settings"
CHECKS_AND_EXIT_STATUS = (
    "the site file, the NEWSDEDUP_* settings and the database are checked first, and the exit status tells how "
    "the run went (0 ok, 2 config error, 3 database in use, 4 not saved, 5 pages not processed, 6 a site failed, "
    "7 interrupted, 8 an item pipeline or feed export after newsdedup's failed; docs/commands.md, *Exit status*)."
)


def prepare_crawl(settings, spider_args: dict) -> ArticleStore:
    """Check a crawl's inputs; return its store, open and locked for this process. Raises CrawlConfigError."""
    try:
        load_sites(spider_args.get("sites"), only=spider_args.get("site"))
        crawl = CrawlSettings.from_settings(settings)
        _check_extensions(settings)
        if crawl.redis_url:
            _require_redis_extra()
        if crawl.alerts:
            from newsdedup.crawl.run_alerts import check_alerts

            check_alerts(crawl.alerts)
        store = crawl.open_store()
    except (SiteConfigError, SettingError, ValueError) as exc:
        raise CrawlConfigError(str(exc), ExitCode.CONFIG_ERROR) from None
    try:
        store.open()
        store.check()
        if crawl.redis_url:  # the workers of a distributed crawl take turns with the lock (newsdedup.distributed.writer)
            _check_redis(crawl.redis_url)
        else:
            store.lock_for_run()
    except StoreInUse as exc:
        store.close()
        raise CrawlConfigError(str(exc), ExitCode.DATABASE_IN_USE) from None
    except StoreError as exc:
        store.close()
        raise CrawlConfigError(str(exc), ExitCode.CONFIG_ERROR) from None
    hand_over(crawl.storage_uri, store)  # the crawl writes through this store: one run lock, on one connection
    return store


# The crawl's parts that are Scrapy extensions (newsdedup/settings.py, EXTENSIONS); RunMember is NotConfigured
# without NEWSDEDUP_REDIS_URL.
EXTENSIONS = ("newsdedup.crawl.pipelines.state.CrawlState", "newsdedup.distributed.member.RunMember",
              "newsdedup.crawl.verdict.RunVerdict")


def _check_extensions(settings) -> None:
    """A settings file or ``-s EXTENSIONS=...`` replaces the project's dict: newsdedup's own must stay in it."""
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.misc import load_object

    enabled = {load_object(c) if isinstance(c, str) else c
               for c in build_component_list(settings.getwithbase("EXTENSIONS"))}
    missing = [path for path in EXTENSIONS if load_object(path) not in enabled]
    if missing:
        raise SettingError(f"EXTENSIONS: newsdedup's {', '.join(missing)} must stay in it (setting EXTENSIONS "
                           "replaces the project's dict: add yours to newsdedup's, see docs/settings.md)")


def _require_redis_extra() -> None:
    """The libraries of a distributed crawl, checked before the database is touched (not in a plain install)."""
    try:
        import redis  # noqa: F401 - newsdedup.distributed.redis_run's client
        import scrapy_redis  # noqa: F401 - the scheduler and request filter of a distributed crawl
    except ImportError as exc:
        raise SettingError(f"NEWSDEDUP_REDIS_URL: no module {exc.name}; a distributed crawl needs the redis extra: "
                           "pip install 'newsdedup[redis]'") from None


def _check_redis(url: str) -> None:
    from newsdedup.distributed import redis_run

    try:
        redis_run.connect(url).ping()
    except Exception as exc:  # noqa: BLE001 - any connection failure is the same one line
        raise StoreError(f"NEWSDEDUP_REDIS_URL {url}: cannot reach Redis ({exc})") from None


class CrawlConfigError(Exception):
    def __init__(self, message: str, code: ExitCode) -> None:
        super().__init__(message)
        self.code = code


class Command(ScrapyCrawlCommand):
    def long_desc(self) -> str:
        return "Run a spider of the project. For the portal spider, " + CHECKS_AND_EXIT_STATUS

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--settings", dest="settings_file", metavar="FILE",
                            help="a TOML file of settings (NAME = value, the names -s takes), kept outside the "
                            "package; -s overrides it")
        parser.add_argument("--sites", dest="sites_file", metavar="FILE",
                            help="the site file (default: the packaged one); -a sites=FILE is the same")

    def process_options(self, args, opts) -> None:
        if opts.settings_file:
            from newsdedup.run.settings_file import load_settings

            try:  # before super(): its -s values go on top, at the same priority
                self.settings.setdict(load_settings(opts.settings_file), priority="cmdline")
            except SettingError as exc:
                _exit_config_error(str(exc), ExitCode.CONFIG_ERROR)
        try:  # -s NEWSDEDUP_* names, as a settings file's are
            from newsdedup.run.settings_file import check_names

            check_names([item.partition("=")[0] for item in opts.set or ()], source="-s")
        except SettingError as exc:
            _exit_config_error(str(exc), ExitCode.CONFIG_ERROR)
        super().process_options(args, opts)
        _site_file_option(opts)
        self._store: ArticleStore | None = None
        if args[:1] == [SPIDER]:
            try:
                self._store = prepare_crawl(self.settings, opts.spargs)
            except CrawlConfigError as exc:
                _exit_config_error(str(exc), exc.code)

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
                # The crawl closed it after its record (releasing the run lock); closing again is a no-op. A crawl
                # that never started leaves it to be closed here.
                take_back(self._store)
                self._store.close()
        open_error = _store_open_error(crawler)
        if open_error is not None:  # the store could not be opened and locked when the crawl started
            print(f"newsdedup: error: {open_error}", file=sys.stderr)
            self.exitcode = int(ExitCode.DATABASE_IN_USE if isinstance(open_error, StoreInUse)
                                else ExitCode.CONFIG_ERROR)
            return
        if self.crawler_process.bootstrap_failed:
            self.exitcode = int(ExitCode.SCRAPY_ERROR)
            return
        code = crawler.stats.get_value("newsdedup/run/exit_code") if crawler.stats else None
        self.exitcode = int(ExitCode.INTERRUPTED) if code is None else int(code)


def _site_file_option(opts) -> None:
    """``--sites FILE`` as the spider argument ``sites`` (``-a sites=FILE``, Scrapy's spelling, stays an alias)."""
    if opts.sites_file is None:
        return
    given = opts.spargs.get("sites")
    if given is not None and given != opts.sites_file:
        _exit_config_error(f"--sites {opts.sites_file} and -a sites={given} name two site files; give one",
                           ExitCode.CONFIG_ERROR)
    opts.spargs["sites"] = opts.sites_file


def _store_open_error(crawler) -> StoreError | None:
    """Why the crawl's store could not be opened and locked when the crawl started, if so."""
    try:
        state = crawler.get_extension(CrawlState)
    except RuntimeError:  # the crawl never built its extensions
        return None
    return state.open_error if state is not None else None


def _exit_config_error(message: str, code: ExitCode) -> None:
    print(f"newsdedup: error: {message}", file=sys.stderr)
    sys.exit(int(code))


def crawl_anywhere(argv: Sequence[str]) -> int:
    """``newsdedup crawl [options]``: ``scrapy crawl portal [options]`` from any folder; returns the exit status.

    What ``scrapy.cmdline.execute`` does for one command, with this project's settings module named here rather
    than found through ``scrapy.cfg`` (nor SCRAPY_SETTINGS_MODULE: with it set and no ``scrapy.cfg``, Scrapy
    cannot place relative HTTPCACHE_DIR paths and refuses them).
    """
    import cProfile

    from scrapy.cmdline import ScrapyArgumentParser
    from scrapy.commands import ScrapyHelpFormatter
    from scrapy.crawler import AsyncCrawlerProcess, CrawlerProcess
    from scrapy.exceptions import UsageError
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule(SETTINGS_MODULE, priority="project")
    command = Command()
    parser = ScrapyArgumentParser(
        prog="newsdedup crawl", usage="newsdedup crawl [options]", formatter_class=ScrapyHelpFormatter,
        conflict_handler="resolve",
        description="Crawl the portals of a site file (default: the packaged one; write it out to edit it with "
        "`newsdedup sites --example > sites.toml`, then --sites sites.toml) into the database of "
        "NEWSDEDUP_STORAGE_URI (default sqlite:///newsdedup.sqlite, in the current folder). The same crawl as "
        "`scrapy crawl portal` in the project: " + CHECKS_AND_EXIT_STATUS,
    )
    settings.setdict(command.default_settings, priority="command")
    command.settings = settings
    command.add_options(parser)
    opts = parser.parse_args(list(argv))
    try:
        command.process_options([SPIDER], opts)
        asyncio_reactor = settings["TWISTED_REACTOR"] == "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
        if (asyncio_reactor and not settings.getbool("FORCE_CRAWLER_PROCESS")) or \
                not settings.getbool("TWISTED_REACTOR_ENABLED"):  # as scrapy.cmdline.execute chooses
            command.crawler_process = AsyncCrawlerProcess(settings)
        else:
            command.crawler_process = CrawlerProcess(settings)
        if opts.profile:
            cProfile.runctx("command.run([SPIDER], opts)", globals(), locals(), opts.profile)
        else:
            command.run([SPIDER], opts)
    except UsageError as exc:
        parser.error(str(exc) or "bad usage")
    return command.exitcode
