"""The config-driven portal spider: start pages -> list pages -> article pages.

    scrapy crawl portal --sites config/sites.toml [-a site=sina[,163...]] -s NEWSDEDUP_STORAGE_URI=sqlite:///news.sqlite

Start pages are requested with ``dont_filter`` and list pages are not remembered across runs, so every
run (and a ``JOBDIR`` resume after ``kill -9``) fetches them again; article pages are yielded raw as
:class:`~newsdedup.crawl.items.ArticlePage` for the pipelines to extract and deduplicate. Which site a link
belongs to is decided by the sites' URL patterns.

Every article request has an errback: a page that cannot be fetched (an HTTP error after Scrapy's retries,
an over-size download, a redirect loop, a network error) becomes a :class:`~newsdedup.crawl.items.FetchFailure`
item, recorded in the failures table and tried again on later runs. Per site the spider counts list pages,
distinct article links and fetched pages (``newsdedup/site/<site>/...``, see :mod:`newsdedup.run.runstats`), and
at the end warns about a site whose article pattern matched none of the links its list pages had, showing
a few of them.

Besides ``<a href>``, list pages give the article URLs written in their scripts (``__NEXT_DATA__``,
``window.__INITIAL_STATE__``, ``var allData``: escaped and protocol-relative ones too), and a site's declared list
sources (JSON/JSONP feeds, page data, RSS/Atom, sitemaps) are read page by page: what a payload holds is read by
the pure modules of :mod:`newsdedup.discovery`, and :class:`~newsdedup.discovery.listsources.Pager` says which page
comes next. Article links are requested in their site's canonical form (``[site.canonical]``), so twins are fetched
once. Links found are counted per source (``newsdedup/site/<site>/source/<name>/...``); a source page that cannot be
fetched or read is a counted, logged failure of that source, and the rest of the site goes on. A start URL that
answers an RSS/Atom feed, a sitemap (index) or a JSON Feed is read as that kind of source
(:mod:`newsdedup.discovery.startsources`), and the log shows the ``[[site.sources]]`` table that declares it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import scrapy
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    NotConfigured,
    ResponseDataLossError,
)
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from newsdedup.clock import utc_iso, utc_now
from newsdedup.crawl.dupefilter import ARTICLE_META_KEY, SITE_META_KEY
from newsdedup.crawl.items import TAKEN_META_KEY, ArticlePage, FetchFailure
from newsdedup.crawl.sites import SiteConfig, SiteConfigError, load_sites
from newsdedup.discovery import payloads, sitemaps, startsources
from newsdedup.discovery.listsources import HTML_LINKS, SCRIPT_LINKS, ListSource, Pager
from newsdedup.discovery.payloads import Listed, SourceError
from newsdedup.run import runstats

logger = logging.getLogger(__name__)

# Links kept per site for the "pattern matched nothing" warning.
_SAMPLE_LINKS = 5
# What a list source said of an article (title, time), carried to the article's page.
LISTED_META_KEY = "newsdedup_listed"
# A start page's place in its site's start_urls (from 1): such a page may be a feed or sitemap (startsources).
START_META_KEY = "newsdedup_start"


class PortalSpider(scrapy.Spider):
    name = "portal"

    def __init__(self, sites: str | None = None, site: str | None = None, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        try:
            self.sites: list[SiteConfig] = load_sites(sites, only=site)
        except (OSError, SiteConfigError) as exc:
            raise NotConfigured(f"cannot load the site file: {exc}") from exc
        self.sites_by_name = {s.name: s for s in self.sites}
        self.allowed_domains = sorted({d for s in self.sites for d in s.allowed_domains})
        self._article_links: dict[str, set[str]] = {s.name: set() for s in self.sites}
        self._links_seen: dict[str, list[str]] = {s.name: [] for s in self.sites}
        self._links_total: dict[str, int] = dict.fromkeys(self.sites_by_name, 0)
        # Per (site, source): the article links it found this run (its paging travels with its requests: Pager).
        self._source_links: dict[tuple[str, str], set[str]] = {}
        self._source_listed: dict[tuple[str, str], list[str]] = {}  # a few of the URLs it listed, for its warning

    def _count(self, site: str, name: str, n: int = 1) -> None:
        self.crawler.stats.inc_value(runstats.site_key(site, name), n)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        distributed = bool(self.crawler.settings.get("NEWSDEDUP_REDIS_URL"))
        for site in self.sites:
            for name in (runstats.LIST_PAGES, runstats.ARTICLE_LINKS, runstats.FETCHED):
                self._count(site.name, name, 0)  # every site appears in the summary, with its zeros
            for number, url in enumerate(site.start_urls, start=1):
                # dont_filter: start pages are fetched every run, also when a JOBDIR remembers them. A distributed
                # crawl's filter is new each run and shared by its processes: filtered, each is fetched once a run.
                request = self._list_request(url, site.name, dont_filter=not distributed)
                request.meta[START_META_KEY] = number
                yield request
            for source in site.sources:
                for name in (runstats.SOURCE_LINKS, runstats.SOURCE_PAGES):
                    self._count_source(site.name, source.name, name, 0)
                pager = Pager(source)
                yield self._source_request(pager.next_url(), site.name, pager, dont_filter=not distributed)

    def _count_source(self, site: str, source: str, name: str, n: int = 1) -> None:
        self.crawler.stats.inc_value(runstats.source_key(site, source, name), n)

    def _source_request(self, url: str, site: str, pager: Pager, *, dont_filter: bool = False) -> scrapy.Request:
        return scrapy.Request(
            url, callback=self.parse_source, errback=self.source_failed,
            cb_kwargs={"site": site, "source": pager.source.name, "paging": pager.state()},
            # A source's pages follow one another, each as deep as a start page: their number is bounded by
            # max_pages, not DEPTH_LIMIT, and the articles they list are one step deep.
            meta={SITE_META_KEY: site, "depth_reset": True}, dont_filter=dont_filter,
        )

    def _pager(self, site: str, source: str, paging: dict) -> Pager:
        config = self.sites_by_name[site]
        found = next((s for s in config.sources if s.name == source), None)
        if found is None:  # a start URL read as a source (startsources names it after its place in start_urls)
            found = startsources.source_named(source, config.start_urls, config.max_source_pages)
        assert found is not None, (site, source)
        return Pager(found, **paging)

    def _list_request(self, url: str, site: str, *, dont_filter: bool = False) -> scrapy.Request:
        return scrapy.Request(
            url, callback=self.parse_list, errback=self.list_failed, cb_kwargs={"site": site},
            meta={SITE_META_KEY: site}, dont_filter=dont_filter,
        )

    def _site_for(self, url: str, preferred: SiteConfig) -> tuple[SiteConfig, str] | None:
        """(site, "article" | "list") for a link, trying the page's own site first."""
        for site in (preferred, *(s for s in self.sites if s is not preferred)):
            if site.is_article(url):
                return site, "article"
        if preferred.is_followable(url):
            return preferred, "list"
        return None

    def parse_list(self, response: Response, site: str):
        number = response.meta.get(START_META_KEY)
        kind = startsources.recognise(response.body) if number is not None else None
        if kind is not None:
            yield from self._start_url_source(response, site, number, kind)
            return
        self.crawler.stats.inc_value("newsdedup/crawl/list_pages")
        self._count(site, runstats.LIST_PAGES)
        if not isinstance(response, TextResponse):
            self.crawler.stats.inc_value("newsdedup/crawl/list_not_text")
            return
        current = self.sites_by_name[site]
        # Scrapy's DEPTH_LIMIT drops requests deeper than it without a word. Article pages are leaves: a list page
        # is only worth following if the article links on it are still within the limit.
        max_depth = self.crawler.settings.getint("DEPTH_LIMIT")
        follow_lists = not max_depth or response.meta.get("depth", 0) + 2 <= max_depth
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href.strip())
            if not url.startswith(("http://", "https://")):
                continue
            self._links_total[site] += 1
            target = self._site_for(url, current)
            if target is None:
                self._sample_miss(site, url)
                continue
            target_site, kind = target
            if kind == "article":
                yield self._article_request(url, target_site, site, HTML_LINKS)
            elif follow_lists:
                yield self._list_request(url, target_site.name)
            else:
                self._count(target_site.name, runstats.DEPTH_LIMITED)
        # Script-rendered lists keep their links in the page's data; only article URLs are taken from there.
        for url in payloads.urls_in_scripts(response.xpath("//script/text()").getall(), response.url):
            target = self._site_for(url, current)
            if target is not None and target[1] == "article":
                yield self._article_request(url, target[0], site, SCRIPT_LINKS)

    def _sample_miss(self, site: str, url: str) -> None:
        if len(self._links_seen[site]) < _SAMPLE_LINKS and url not in self._links_seen[site]:
            self._links_seen[site].append(url)

    def _article_request(self, url: str, target: SiteConfig, site: str, source: str,
                         listed: Listed | None = None) -> scrapy.Request:
        """The request of an article link found by ``site``'s ``source``, in the target site's canonical form."""
        url = target.canonical.apply(url)
        links = self._article_links[target.name]
        if url not in links:
            links.add(url)
            self._count(target.name, runstats.ARTICLE_LINKS)
        found = self._source_links.setdefault((site, source), set())
        if url not in found:
            found.add(url)
            self._count_source(site, source, runstats.SOURCE_LINKS)
        meta = {ARTICLE_META_KEY: True, SITE_META_KEY: target.name}
        if listed is not None and (listed.title or listed.time):
            meta[LISTED_META_KEY] = (listed.title, listed.time)
        return scrapy.Request(url, callback=self.parse_article, errback=self.article_failed,
                              cb_kwargs={"site": target.name}, meta=meta)

    def _start_url_source(self, response: Response, site: str, number: int, kind: str):
        """A start URL that answered a feed or sitemap: read as the source it is, from this first page on."""
        config = self.sites_by_name[site]
        source = startsources.start_source(kind, config.start_urls[number - 1], number,
                                           max_pages=config.max_source_pages)
        for name in (runstats.SOURCE_LINKS, runstats.SOURCE_PAGES):
            self._count_source(site, source.name, name, 0)
        logger.info("site %s: start URL %s is %s, read as list source %s; declared in the site file it reads:\n%s",
                    site, source.url, startsources.DESCRIPTIONS[kind], source.name,
                    startsources.declared_form(source))
        yield from self.parse_source(response, site, source.name, Pager(source).state())

    # -- list sources -------------------------------------------------------------------------------------
    def parse_source(self, response: Response, site: str, source: str, paging: dict):
        self._count(site, runstats.LIST_PAGES)
        self._count_source(site, source, runstats.SOURCE_PAGES)
        current = self.sites_by_name[site]
        pager = self._pager(site, source, paging)
        try:
            listed, sitemaps_named = self._read_source(response, pager.source)
        except SourceError as exc:
            self._source_failure(site, source, exc.reason, f"{response.url}: {exc}")
            next_url = pager.page_failed()
        else:
            found = self._source_links.setdefault((site, source), set())
            links = new = 0
            for entry in listed:
                url = response.urljoin(entry.url)
                target = self._site_for(url, current)
                if target is None or target[1] != "article":
                    self._links_total[site] += 1
                    self._sample_miss(site, url)
                    samples = self._source_listed.setdefault((site, source), [])
                    if len(samples) < _SAMPLE_LINKS:
                        samples.append(url)
                    continue
                links += 1
                canonical = target[0].canonical.apply(url)
                if canonical not in found and not self._known_from_earlier_runs(canonical):
                    new += 1
                yield self._article_request(url, target[0], site, source, listed=entry)
            next_url = pager.page_done(links=links, new=new, children=[response.urljoin(u) for u in sitemaps_named])
        if next_url is not None:
            yield self._source_request(next_url, site, pager)
        else:
            self._source_stopped(site, source, pager)

    def _read_source(self, response: Response, source: ListSource) -> tuple[list[Listed], list[str]]:
        body = response.body
        # Only a charset the server declares: Scrapy's guess for a script or JSON body without one is cp1252, which
        # reads GBK (163's list files) without an error and garbles the titles.
        encoding = declared_charset(response)
        if source.kind == "json":
            return payloads.json_items(payloads.json_document(body, encoding), source), []
        if source.kind == "page_data":
            text = response.text if isinstance(response, TextResponse) else payloads.decode(body, encoding)
            assert source.variable is not None
            return payloads.json_items(payloads.page_data(text, source.variable), source), []
        if source.kind == "feed":
            return payloads.feed_entries(body), []
        if sitemaps.is_robots(response.url):
            page = sitemaps.robots_sitemaps(body, response.url)
        else:
            page = sitemaps.read_sitemap(body, max_size=self.crawler.settings.getint("DOWNLOAD_MAXSIZE"))
        return page.listed, page.sitemaps

    def _known_from_earlier_runs(self, url: str) -> bool:
        """Whether the URL filter knows the article (newsdedup.crawl.dupefilter); False without such a filter."""
        scheduler = getattr(self.crawler.engine, "scheduler", None)
        knows = getattr(getattr(scheduler, "df", None), "knows_article", None)
        return bool(knows is not None and knows(url))

    def _source_failure(self, site: str, source: str, reason: str, detail: str) -> None:
        self._count_source(site, source, f"failed/{reason}")
        key = runstats.source_key(site, source, runstats.SOURCE_ERROR)
        if self.crawler.stats.get_value(key) is None:
            self.crawler.stats.set_value(key, detail[:300])
        logger.warning("site %s: list source %s: %s (%s)", site, source, detail, reason)

    def _source_stopped(self, site: str, source: str, pager: Pager) -> None:
        self.crawler.stats.set_value(runstats.source_key(site, source, runstats.SOURCE_STOPPED), pager.stop_reason)
        listed = self._source_listed.get((site, source))
        if listed and not self._source_links.get((site, source)):
            # It listed URLs, none of them an article: its link field or template, or the pattern, is wrong.
            self._source_failure(site, source, "no_article_links",
                                 f"none of the URLs it listed matches article_url_pattern, e.g. {', '.join(listed)}")
        logger.info("site %s: list source %s stopped after %d page(s): %s", site, source, pager.pages,
                    pager.stop_reason)

    def source_failed(self, failure: Failure):
        request = failure.request
        site, source = request.cb_kwargs["site"], request.cb_kwargs["source"]
        kind, detail = classify_failure(failure)
        pager = self._pager(site, source, request.cb_kwargs["paging"])
        if kind == "http_404" and pager.past_the_end():
            self._source_stopped(site, source, pager)
            return
        if kind not in ("robots", "ignored"):
            self._count(site, runstats.LIST_FAILED)
        self._source_failure(site, source, "robots_forbidden" if kind == "robots" else kind,
                             f"{request.url} could not be fetched: {detail}")
        next_url = pager.page_failed()
        if next_url is not None:
            yield self._source_request(next_url, site, pager)
        else:
            self._source_stopped(site, source, pager)

    def parse_article(self, response: Response, site: str):
        self.crawler.stats.inc_value("newsdedup/crawl/article_pages")
        self._count(site, runstats.FETCHED)
        declared = declared_charset(response)
        config = self.sites_by_name[site]
        listed_title, listed_at = response.meta.get(LISTED_META_KEY, (None, None))
        yield ArticlePage(
            # A redirect may land on a twin (a mobile host): stored under the site's one URL of the article.
            url=config.canonical.apply(response.url),
            site=site,
            body=response.body,
            declared_encoding=declared,
            fetched_at=utc_iso(utc_now()),
            remove_selectors=config.remove_selectors,
            fetched_url=response.url,
            listed_title=listed_title,
            listed_at=listed_at,
            taken=response.meta.get(TAKEN_META_KEY),
        )

    def article_failed(self, failure: Failure):
        request = failure.request
        site = request.cb_kwargs["site"]
        kind, detail = classify_failure(failure)
        if kind == "robots":
            self._count(site, runstats.ROBOTS)
            return
        if kind == "ignored":
            self._count(site, runstats.IGNORED)
            logger.info("article %s not fetched: %s", request.url, detail)
            return
        # The failures table holds the URL the list page linked (before any redirect): the one the URL filter
        # checks next run.
        url = request.meta.get("redirect_urls", [request.url])[0]
        yield FetchFailure(url=url, site=site, kind=kind, detail=detail, failed_at=utc_iso(utc_now()),
                           taken=request.meta.get(TAKEN_META_KEY))

    def list_failed(self, failure: Failure) -> None:
        request = failure.request
        site = request.cb_kwargs["site"]
        kind, detail = classify_failure(failure)
        if kind in ("robots", "ignored"):
            return
        self._count(site, runstats.LIST_FAILED)
        logger.warning("site %s: list page %s could not be fetched: %s", site, request.url, detail)

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats
        for site in self.sites:
            list_pages = stats.get_value(runstats.site_key(site.name, runstats.LIST_PAGES), 0)
            if list_pages and not self._article_links[site.name]:
                seen = self._links_seen[site.name]
                logger.warning(
                    "site %s: article_url_pattern matched none of the %d links on its %d list page(s)%s; "
                    "patterns match the whole URL (re.fullmatch), scheme and host included (docs/site-file.md)",
                    site.name, self._links_total[site.name], list_pages,
                    ", for example: " + ", ".join(seen) if seen else "",
                )


def declared_charset(response: Response) -> str | None:
    """The charset of the response's Content-Type header, if it names one."""
    content_type = response.headers.get(b"Content-Type", b"").decode("latin-1").lower()
    if "charset=" not in content_type:
        return None
    return content_type.split("charset=", 1)[1].split(";")[0].strip().strip("\"'") or None


def classify_failure(failure: Failure) -> tuple[str, str]:
    """(kind, detail) of a failed request: ``http_<status>``, ``redirect_loop``, ``too_large_download``,
    ``download_timeout``, ``connection``, ``download_error``; ``robots`` and ``ignored`` are not failures."""
    exc = failure.value
    if isinstance(exc, HttpError):
        status = exc.response.status
        return f"http_{status}", f"HTTP {status}"
    if isinstance(exc, IgnoreRequest):
        message = str(exc)
        if "robots.txt" in message:
            return "robots", message
        if "redirect" in message:
            return "redirect_loop", f"{message} (REDIRECT_MAX_TIMES)"
        return "ignored", message or type(exc).__name__
    if isinstance(exc, DownloadCancelledError) and "max size" in str(exc):
        return "too_large_download", "larger than DOWNLOAD_MAXSIZE"
    if isinstance(exc, DownloadTimeoutError):
        return "download_timeout", str(exc) or "DOWNLOAD_TIMEOUT reached"
    if isinstance(exc, (DownloadConnectionRefusedError, CannotResolveHostError, DownloadFailedError,
                        ResponseDataLossError, ConnectionError)):
        return "connection", f"{type(exc).__name__}: {exc}"[:300]
    return "download_error", f"{type(exc).__name__}: {exc}"[:300]
