"""The config-driven portal spider: start pages -> list pages -> article pages.

    scrapy crawl portal -a sites=config/sites.toml [-a site=sina] -s NEWSDEDUP_STORAGE_URI=sqlite:///news.sqlite

Start and list pages are fetched every run (``dont_filter`` for start pages); article pages
are yielded raw as :class:`~newsdedup.items.ArticlePage` for the pipelines to extract and
deduplicate.  Which site a link belongs to is decided by the sites' URL patterns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timezone

import scrapy
from scrapy.exceptions import NotConfigured
from scrapy.http import Response, TextResponse

from newsdedup.dupefilter import ARTICLE_META_KEY
from newsdedup.items import ArticlePage
from newsdedup.sites import SiteConfig, SiteConfigError, load_sites


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

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for site in self.sites:
            for url in site.start_urls:
                yield scrapy.Request(url, callback=self.parse_list, cb_kwargs={"site": site.name})

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
        if not isinstance(response, TextResponse):
            self.crawler.stats.inc_value("newsdedup/crawl/list_not_text")
            return
        current = self.sites_by_name[site]
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href.strip())
            if not url.startswith(("http://", "https://")):
                continue
            target = self._site_for(url, current)
            if target is None:
                continue
            target_site, kind = target
            if kind == "article":
                yield scrapy.Request(
                    url,
                    callback=self.parse_article,
                    cb_kwargs={"site": target_site.name},
                    meta={ARTICLE_META_KEY: True},
                )
            else:
                yield scrapy.Request(url, callback=self.parse_list, cb_kwargs={"site": target_site.name})

    def parse_article(self, response: Response, site: str):
        self.crawler.stats.inc_value("newsdedup/crawl/article_pages")
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        declared = None
        if "charset=" in content_type.lower():
            declared = content_type.lower().split("charset=", 1)[1].split(";")[0].strip().strip("\"'") or None
        yield ArticlePage(
            url=response.url,
            site=site,
            body=response.body,
            declared_encoding=declared,
            fetched_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            remove_selectors=self.sites_by_name[site].remove_selectors,
        )
