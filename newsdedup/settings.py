"""Scrapy settings of the newsdedup project: polite defaults for crawling public news portals.

Every value can be overridden per run with ``scrapy crawl portal -s NAME=VALUE``; the
``NEWSDEDUP_*`` settings are documented in README.md.
"""

BOT_NAME = "newsdedup"
SPIDER_MODULES = ["newsdedup.spiders"]
NEWSPIDER_MODULE = "newsdedup.spiders"
# Our `scrapy crawl` checks the site file, the settings and the database before Scrapy starts (one line,
# `newsdedup: error: ...`) and exits with the run's verdict (README.md, *Exit status*).
COMMANDS_MODULE = "newsdedup.commands"

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
DUPEFILTER_CLASS = "newsdedup.dupefilter.SeenArticlesDupeFilter"
# Scrapy's scheduler, but a JOBDIR queue not closed cleanly (kill -9) or unreadable is dropped, with a WARNING,
# instead of hanging the resumed crawl (newsdedup/jobdir.py). The distributed add-on below replaces it.
SCHEDULER = "newsdedup.jobdir.JobdirScheduler"
# With NEWSDEDUP_REDIS_URL set, this add-on makes the crawl a worker of a distributed crawl on scrapy-redis
# (its scheduler and request filter; README.md, *More than one machine*). Without it, it does nothing.
ADDONS = {"newsdedup.addons.DistributedAddon": 0}

# Scrapy's meta-refresh redirects, but an HTML page whose first bytes show no "refresh" is not decoded for it
# (newsdedup/metarefresh.py: the crawl process never reads an article page's text itself).
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "newsdedup.metarefresh.HeadMetaRefreshMiddleware": 580,
}

ITEM_PIPELINES = {
    "newsdedup.pipelines.failures.FailurePipeline": 50,
    "newsdedup.pipelines.analyse.AnalysePipeline": 100,
    "newsdedup.pipelines.exact.ExactDedupPipeline": 200,
    "newsdedup.pipelines.near.NearDedupPipeline": 300,
    "newsdedup.pipelines.store.StorePipeline": 900,
}

NEWSDEDUP_STORAGE_URI = "sqlite:///newsdedup.sqlite"
# A distributed crawl: every process with the same Redis and store is a worker of one crawl (None: one machine).
NEWSDEDUP_REDIS_URL = None
NEWSDEDUP_REDIS_PREFIX = "newsdedup"  # key prefix: two deployments can share one Redis with different prefixes
NEWSDEDUP_STORAGE_BATCH_SIZE = 100
# Seconds SQLite waits for another process's write lock before an attempt fails, and how many more
# attempts a commit gets (1 s, 2 s, 4 s... apart) before its records count as not saved.
NEWSDEDUP_STORAGE_BUSY_TIMEOUT = 30.0
NEWSDEDUP_STORAGE_RETRIES = 3
NEWSDEDUP_WORKERS = None  # processes for extraction and fingerprinting; None = one per core, 0 = inline
NEWSDEDUP_EXTRACT_MIN_CHARS = 150
NEWSDEDUP_EXTRACT_BRIEF_CHARS = 40  # article-shaped pages (headline, date/source line, body) keep bodies this short
NEWSDEDUP_EXTRACT_SITE_TEMPLATES = True  # learn each site's template from its pages, kept in the store
NEWSDEDUP_EXTRACT_MAX_BYTES = 5_000_000
# Seconds one page may take in a worker (extract + fingerprint). A typical portal page takes 20-50 ms and
# a 3.7 MB one about 4 s; past the limit the worker is killed and replaced and the page is skipped as
# `timeout` (tried again on later runs). Needs NEWSDEDUP_WORKERS >= 1.
NEWSDEDUP_EXTRACT_TIMEOUT = 10.0
# Pages skipped for a transient reason (empty, too_short, malformed, error, timeout, crashed) and failed
# downloads (5xx, over-size, redirect loop, network) are fetched again on later runs: at most this many
# attempts in all, the second BACKOFF seconds after the first, then doubling (30 min, 1 h, 2 h).
NEWSDEDUP_RETRY_MAX_ATTEMPTS = 4
NEWSDEDUP_RETRY_BACKOFF = 1800.0
# A site whose share of failed requests (after Scrapy's own retries) exceeds this makes the run fail:
# a portal that blocks the crawler (403/429) or is down fails most of them; a few dead links are normal.
NEWSDEDUP_MAX_HTTP_ERROR_SHARE = 0.2
NEWSDEDUP_URLFILTER_ERROR_RATE = 1e-7
# Stories silent for longer leave the crawl's filters and indexes (rows stay): bounded memory and start-up.
NEWSDEDUP_RETENTION_DAYS = 30
NEWSDEDUP_EXACT_BLOOM_ERROR_RATE = 1e-3
NEWSDEDUP_NEAR_METHOD = "spotsigs"
NEWSDEDUP_SEGMENTER = "auto"
NEWSDEDUP_SEGMENTER_USER_DICT = None
NEWSDEDUP_STOPWORDS = None
NEWSDEDUP_SIMHASH_BITS = 64
NEWSDEDUP_SIMHASH_FEATURES = "words"
NEWSDEDUP_SIMHASH_MAX_DISTANCE = 3
NEWSDEDUP_SPOTSIGS_ANTECEDENTS = "optimized"
NEWSDEDUP_SPOTSIGS_CHAIN = 1
NEWSDEDUP_SPOTSIGS_DISTANCE = 1
NEWSDEDUP_SPOTSIGS_TAU = 0.5  # tuned on the tune half of the reprint benchmark (newsdedup eval)
NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES = 5
NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT = 0.8  # tuned likewise; None switches the containment fallback off
NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS = 10
NEWSDEDUP_ESIMHASH_MAX_DISTANCE = 10
NEWSDEDUP_ESIMHASH_WEIGHT_CAP = 90.0
NEWSDEDUP_ESIMHASH_MAX_BIGRAMS = 2_000_000
NEWSDEDUP_DWDCS_KEY_CONCEPTS = 20
NEWSDEDUP_DWDCS_HUB_CANDIDATES = 30
NEWSDEDUP_DWDCS_MIN_FREQUENCY = 2
NEWSDEDUP_DWDCS_MERGE_THRESHOLD = 0.6
NEWSDEDUP_DWDCS_MAX_NODES = 400
NEWSDEDUP_DWDCS_SYNONYMS = None
NEWSDEDUP_DWDCS_COSINE = 0.9
NEWSDEDUP_DWDCS_MAX_VARIANCE = 0.01
NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS = 5
