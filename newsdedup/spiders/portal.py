"""The config-driven portal spider: start pages -> list pages -> article pages.

    scrapy crawl portal -a sites=config/sites.toml [-a site=sina[,163...]] -s NEWSDEDUP_STORAGE_URI=sqlite:///news.sqlite

Start pages are requested with ``dont_filter`` and list pages are not remembered across runs, so every
run (and a ``JOBDIR`` resume after ``kill -9``) fetches them again; article pages are yielded raw as
:class:`~newsdedup.items.ArticlePage` for the pipelines to extract and deduplicate. Which site a link
belongs to is decided by the sites' URL patterns.

Every article request has an errback: a page that cannot be fetched (an HTTP error after Scrapy's retries,
an over-size download, a redirect loop, a network error) becomes a :class:`~newsdedup.items.FetchFailure`
item, recorded in the failures table and tried again on later runs. Per site the spider counts list pages,
distinct article links and fetched pages (``newsdedup/site/<site>/...``, see :mod:`newsdedup.runstats`), and
at the end warns about a site whose article pattern matched none of the links its list pages had, showing
a few of them.
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

from newsdedup import runstats
from newsdedup.dupefilter import ARTICLE_META_KEY, SITE_META_KEY
from newsdedup.items import ArticlePage, FetchFailure
from newsdedup.retry import iso, utc_now
from newsdedup.sites import SiteConfig, SiteConfigError, load_sites

logger = logging.getLogger(__name__)

# Links kept per site for the "pattern matched nothing" warning.
_SAMPLE_LINKS = 5


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

    def _count(self, site: str, name: str, n: int = 1) -> None:
        self.crawler.stats.inc_value(runstats.site_key(site, name), n)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        distributed = bool(self.crawler.settings.get("NEWSDEDUP_REDIS_URL"))
        for site in self.sites:
            for name in (runstats.LIST_PAGES, runstats.ARTICLE_LINKS, runstats.FETCHED):
                self._count(site.name, name, 0)  # every site appears in the summary, with its zeros
            for url in site.start_urls:
                # dont_filter: start pages are fetched every run, also when a JOBDIR remembers them. A distributed
                # crawl's filter is new each run and shared by its processes: filtered, each is fetched once a run.
                yield self._list_request(url, site.name, dont_filter=not distributed)

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
                if len(self._links_seen[site]) < _SAMPLE_LINKS and url not in self._links_seen[site]:
                    self._links_seen[site].append(url)
                continue
            target_site, kind = target
            if kind == "article":
                links = self._article_links[target_site.name]
                if url not in links:
                    links.add(url)
                    self._count(target_site.name, runstats.ARTICLE_LINKS)
                yield scrapy.Request(
                    url,
                    callback=self.parse_article,
                    errback=self.article_failed,
                    cb_kwargs={"site": target_site.name},
                    meta={ARTICLE_META_KEY: True, SITE_META_KEY: target_site.name},
                )
            elif follow_lists:
                yield self._list_request(url, target_site.name)
            else:
                self._count(target_site.name, runstats.DEPTH_LIMITED)

    def parse_article(self, response: Response, site: str):
        self.crawler.stats.inc_value("newsdedup/crawl/article_pages")
        self._count(site, runstats.FETCHED)
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        declared = None
        if "charset=" in content_type.lower():
            declared = content_type.lower().split("charset=", 1)[1].split(";")[0].strip().strip("\"'") or None
        yield ArticlePage(
            url=response.url,
            site=site,
            body=response.body,
            declared_encoding=declared,
            fetched_at=iso(utc_now()),
            remove_selectors=self.sites_by_name[site].remove_selectors,
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
        yield FetchFailure(url=url, site=site, kind=kind, detail=detail, failed_at=iso(utc_now()))

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
