"""Scrapy settings of the newsdedup project: polite defaults for crawling public news portals.

Every value can be overridden per run with ``scrapy crawl portal -s NAME=VALUE``; the
``NEWSDEDUP_*`` settings are documented in docs/settings.md, whose table is generated from this module.
"""

BOT_NAME = "newsdedup"
SPIDER_MODULES = ["newsdedup.crawl.spiders"]
NEWSPIDER_MODULE = "newsdedup.crawl.spiders"
# Our `scrapy crawl` checks the site file, the settings and the database before Scrapy starts (one line,
# `newsdedup: error: ...`) and exits with the run's verdict (docs/commands.md, *Exit status*).
COMMANDS_MODULE = "newsdedup.crawl.commands"

# Politeness: an honest user agent that says what we are, robots.txt obeyed, adaptive pacing.
USER_AGENT = "newsdedup/0.1 (news-monitoring crawler; Scrapy)"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 1.0
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
DOWNLOAD_TIMEOUT = 30
RETRY_ENABLED = True
RETRY_TIMES = 2
# A news article page is well under a megabyte; anything past 10 MB is not one.
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
COOKIES_ENABLED = False
# Scrapy starts CONCURRENT_ITEMS asyncio tasks for every response's output; an article page yields one
# item and a list page a few dozen requests, so the default 100 only costs task set-up (about 2 ms per page).
CONCURRENT_ITEMS = 8
# Limits for scheduled runs; raise or set CLOSESPIDER_* with -s.
DEPTH_LIMIT = 3
CLOSESPIDER_PAGECOUNT = 0
CLOSESPIDER_ITEMCOUNT = 0

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
# Skipped pages are routine (list pages, video pages); they are counted in stats, not shouted.
DEFAULT_DROPITEM_LOG_LEVEL = "INFO"

# Article URLs fetched by an earlier run are not fetched again (start and list pages always are).
DUPEFILTER_CLASS = "newsdedup.crawl.dupefilter.SeenArticlesDupeFilter"
# Scrapy's scheduler, but a JOBDIR queue not closed cleanly (kill -9) or unreadable is dropped, with a WARNING,
# instead of hanging the resumed crawl (newsdedup/crawl/scheduler.py). The distributed add-on below replaces it.
SCHEDULER = "newsdedup.crawl.scheduler.JobdirScheduler"
# With NEWSDEDUP_REDIS_URL set, this add-on makes the crawl a worker of a distributed crawl on scrapy-redis
# (its scheduler and request filter; docs/distributed.md). Without it, it does nothing.
ADDONS = {"newsdedup.distributed.addon.DistributedAddon": 0}

# Scrapy's meta-refresh redirects, but an HTML page whose first bytes show no "refresh" is not decoded for it
# (newsdedup/crawl/middlewares.py: the crawl process never reads an article page's text itself).
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "newsdedup.crawl.middlewares.HeadMetaRefreshMiddleware": 580,
    # Scrapy's own, but every request that waits for a host's robots.txt obeys it (newsdedup/crawl/robots.py).
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "newsdedup.crawl.robots.RobotsTxtEveryWaiterMiddleware": 100,
}

# newsdedup's shared parts of a crawl (newsdedup.crawl.pipelines.state): the state its pipelines share, a distributed
# crawl's membership of the run (NotConfigured without NEWSDEDUP_REDIS_URL), and the run's verdict (exit status).
# A settings file or -s that sets EXTENSIONS replaces this dict: keep these three in it.
EXTENSIONS = {
    "newsdedup.crawl.pipelines.state.CrawlState": 100,
    "newsdedup.distributed.member.RunMember": 200,
    "newsdedup.crawl.verdict.RunVerdict": 900,
}

ITEM_PIPELINES = {
    "newsdedup.crawl.pipelines.failures.FailurePipeline": 50,
    "newsdedup.crawl.pipelines.analyse.AnalysePipeline": 100,
    "newsdedup.crawl.pipelines.exact.ExactDedupPipeline": 200,
    "newsdedup.crawl.pipelines.near.NearDedupPipeline": 300,
    "newsdedup.crawl.pipelines.reuse.ReusePipeline": 400,
    "newsdedup.crawl.pipelines.store.StorePipeline": 900,
}

# The NEWSDEDUP_* settings and their defaults (written once, in newsdedup/defaults.py; docs/settings.md).
from newsdedup.defaults import *  # noqa: E402,F403
