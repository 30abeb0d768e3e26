"""The items of the portal spider: one fetched article-pattern page, raw; and what leaves the pipelines.

Extraction happens in the pipelines (in worker processes), not in the spider callback, so the
reactor thread only moves bytes.  ``__repr__`` stays short because Scrapy logs dropped items.

An :class:`ArticlePage` never leaves newsdedup's pipelines: the last of them (the store stage) hands on an
:class:`ArticleVerdict` instead, the page's extracted fields and the dedup stages' verdict with the names of
``newsdedup export``. That is what item pipelines after ours (priority over 900), ``item_scraped`` handlers and
Scrapy's feed exports (``scrapy crawl portal -O news.jsonl``) get: plain values, no raw bytes, nothing internal.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

# The verdict of the dedup stages on a page, as an ArticlePage carries it and the writer of a distributed crawl
# sends it back to the process that fetched the page (newsdedup.distributed.redis_run.VerdictBoard).
# A distributed crawl's token for a request its process took off the run's queue (request.meta, copied to the page or
# failed fetch it gives): the run's record of it is cleared when the page is published (docs/distributed.md).
TAKEN_META_KEY = "newsdedup_taken"

VERDICT_FIELDS = ("status", "duplicate_of", "cluster_id", "similarity", "method", "score", "measure", "origin_url",
                  "reuses")


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
    # A distributed crawl: the page's entry in the run's result stream, whose writer gives the verdict.
    entry_id: str | None = field(default=None, repr=False)
    # A distributed crawl: the token of the request it came from (TAKEN_META_KEY), cleared as it is published.
    taken: str | None = field(default=None, repr=False)
    # Left newsdedup's pipelines as its ArticleVerdict: a failure after that is not ours (Scrapy's item_error
    # signal names the item that went in, this page, not the verdict a later pipeline raised on).
    handed_on: bool = field(default=False, repr=False)
    article_id: int | None = None
    status: str | None = None
    cluster_id: int | None = None
    duplicate_of: str | None = None
    similarity: float | None = None
    score: float | None = None
    measure: str | None = None
    method: str | None = None
    origin_url: str | None = None
    # Passages it reuses of earlier stored stories, in the plain form of newsdedup.storage.base.ReuseRecord.as_dict.
    reuses: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def __repr__(self) -> str:
        return f"<ArticlePage {self.url} site={self.site} status={self.status}>"

    def verdict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in VERDICT_FIELDS}


@dataclass
class ArticleVerdict:
    """One article page as it leaves newsdedup's pipelines; the fields and order of ``newsdedup export``.

    ``status`` is ``unique`` (a new story), ``near_duplicate`` or ``exact_duplicate`` (a reprint of
    ``duplicate_of``, in story ``cluster_id``); ``similarity``, ``score`` and ``measure`` say how close the
    reprint is (1.0 and ``exact`` for an exact one), ``method`` which near-duplicate method judged it;
    ``origin_url`` is the story's origin (its copy published first) among the pages stored so far: a copy
    published earlier and fetched later takes the role, as ``newsdedup report`` and ``export`` then show.
    ``reuses``: the passages the page reuses of earlier stories (source, offsets in both texts, characters and
    fractions; empty for most pages and for exact repeats).
    """

    url: str
    site: str
    title: str | None
    text: str
    published_at: str | None
    author: str | None
    source: str | None
    status: str
    duplicate_of: str | None
    cluster_id: int | None
    similarity: float | None
    method: str | None
    score: float | None
    measure: str | None
    fetched_at: str
    origin_url: str | None
    reuses: list[dict[str, Any]]

    @classmethod
    def of(cls, page: ArticlePage, article) -> ArticleVerdict:
        """The verdict ``page`` carries, with the fields of its extracted ``article``."""
        return cls(
            url=page.url, site=page.site, title=article.title, text=article.text, published_at=article.published_at,
            author=article.author, source=article.source, fetched_at=page.fetched_at, **page.verdict(),
        )

    def __repr__(self) -> str:  # Scrapy logs every scraped item at DEBUG: not its whole text
        return f"<ArticleVerdict {self.url} site={self.site} status={self.status}>"


ARTICLE_VERDICT_FIELDS = tuple(f.name for f in fields(ArticleVerdict))


@dataclass
class FetchFailure:
    """An article page that could not be fetched (from the spider's errback), for the failures table."""

    url: str
    site: str
    kind: str  # http_500, http_404, too_large_download, redirect_loop, download_timeout, connection, download_error
    detail: str
    failed_at: str
    taken: str | None = field(default=None, repr=False)  # as ArticlePage.taken
