"""The item the portal spider yields: one fetched article-pattern page, raw.

Extraction happens in the pipelines (in worker processes), not in the spider callback, so the
reactor thread only moves bytes.  ``__repr__`` stays short because Scrapy logs dropped items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ArticlePage:
    url: str
    site: str
    body: bytes = field(repr=False)
    declared_encoding: str | None
    fetched_at: str
    remove_selectors: tuple[str, ...] = ()
    # True when the page is read a second time, its site's template now warm (see pipelines/analyse.py).
    reread: bool = False
    # The URL the page came from when ``url`` is its site's canonical form of it (newsdedup.discovery.canonical).
    fetched_url: str | None = None
    # What a list feed said of the article (title, ISO 8601 time): used when the page itself gives none.
    listed_title: str | None = None
    listed_at: str | None = None
    # Filled in by the pipelines.
    ticket: int | None = field(default=None, repr=False)
    analysis: Any = field(default=None, repr=False)
    article_id: int | None = None
    status: str | None = None
    cluster_id: int | None = None
    duplicate_of: str | None = None
    similarity: float | None = None
    score: float | None = None
    measure: str | None = None

    def __repr__(self) -> str:
        return f"<ArticlePage {self.url} site={self.site} status={self.status}>"


@dataclass
class FetchFailure:
    """An article page that could not be fetched (from the spider's errback), for the failures table."""

    url: str
    site: str
    kind: str  # http_500, http_404, too_large_download, redirect_loop, download_timeout, connection, download_error
    detail: str
    failed_at: str
