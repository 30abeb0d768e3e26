"""Sitemaps as Scrapy's SitemapSpider reads them: sitemap indexes, urlsets (news sitemaps too), gzipped files,
and the ``Sitemap:`` lines of robots.txt.

Scrapy's own helpers do the reading (``scrapy.utils.sitemap.Sitemap``, ``sitemap_urls_from_robots``,
``scrapy.utils.gz.gunzip`` with its size limit): plain functions on bytes, no engine. Only the news sitemap's
``<news:title>`` and ``<news:publication_date>`` are read on top, as Scrapy's reader keeps an element's own text
and not its children's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from newsdedup.discovery.payloads import MALFORMED_SITEMAP, NOT_A_SITEMAP, Listed, SourceError, listed_time

_GZIP_MAGIC = b"\x1f\x8b\x08"


@dataclass
class SitemapPage:
    """What one sitemap document (or robots.txt) gives: article candidates, or more sitemaps to read."""

    listed: list[Listed] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)


def is_robots(url: str) -> bool:
    return urlsplit(url).path == "/robots.txt"


def robots_sitemaps(body: bytes, url: str) -> SitemapPage:
    sitemaps = list(dict.fromkeys(sitemap_urls_from_robots(body, base_url=url)))
    if not sitemaps:
        raise SourceError(NOT_A_SITEMAP, "robots.txt names no sitemap (no Sitemap: line)")
    return SitemapPage(sitemaps=sitemaps)


def read_sitemap(body: bytes, *, max_size: int) -> SitemapPage:
    """A sitemap index (its sitemaps, newest ``lastmod`` first) or a urlset (its URLs, with news title and date)."""
    if body[:3] == _GZIP_MAGIC:
        try:
            body = gunzip(body, max_size=max_size)
        except Exception as exc:  # noqa: BLE001 - truncated or over-size: Scrapy raises several types
            raise SourceError(MALFORMED_SITEMAP, f"gzipped sitemap cannot be read: {type(exc).__name__}: {exc}") from None
    try:
        sitemap = Sitemap(body)
        kind = sitemap.type
        entries = list(sitemap)
    except Exception as exc:  # noqa: BLE001 - lxml's errors on what is not XML at all (an empty body, binary)
        raise SourceError(NOT_A_SITEMAP, f"not a sitemap: {type(exc).__name__}: {exc}") from None
    if kind == "sitemapindex":
        dated = sorted(entries, key=lambda e: e.get("lastmod", ""), reverse=True)  # stable: undated keep their order
        return SitemapPage(sitemaps=[e["loc"] for e in dated if e.get("loc")])
    if kind != "urlset":
        raise SourceError(NOT_A_SITEMAP, f"not a sitemap: the document is <{kind}>"
                          + (" (an HTML page?)" if kind.lower() in ("html", "body") else ""))
    listed = [Listed(e["loc"], e.get("news_title") or None,
                     listed_time(e.get("news_publication_date") or e.get("lastmod")))
              for e in entries if e.get("loc")]
    return SitemapPage(listed=listed)


def _news_fields(elem) -> dict[str, str]:
    """``<news:news>``'s title and publication date (the element Scrapy's reader keeps only as empty text)."""
    found: dict[str, str] = {}
    for child in elem:
        if isinstance(child.tag, str) and child.tag.rpartition("}")[2] == "news":
            for part in child.iter():
                name = part.tag.rpartition("}")[2] if isinstance(part.tag, str) else ""
                if name in ("title", "publication_date") and part.text and part.text.strip():
                    found[f"news_{name}"] = part.text.strip()
    return found


def _with_news(process):
    def process_element(self, elem):
        news = _news_fields(elem)
        entry = process(self, elem)
        if entry is not None:
            entry.update(news)
        return entry

    return process_element


# Scrapy's reader clears each element as it goes; the news fields are read just before. Without the hook (a Scrapy
# that renamed it) sitemaps are still read, with lastmod as the only time.
if hasattr(Sitemap, "_process_sitemap_element"):
    class _NewsSitemap(Sitemap):
        __slots__ = ()
        _process_sitemap_element = _with_news(Sitemap._process_sitemap_element)

    Sitemap = _NewsSitemap  # noqa: F811 - the reader used above


__all__ = ["SitemapPage", "is_robots", "read_sitemap", "robots_sitemaps"]
