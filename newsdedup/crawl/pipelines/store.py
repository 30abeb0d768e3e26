"""Storage stage, the last of newsdedup's: the article record goes to the store (batched), its fingerprint to the
exact index; what leaves is the page's :class:`~newsdedup.crawl.items.ArticleVerdict` (no raw bytes, the export's fields).

Item pipelines after this one (priority over 900), ``item_scraped`` handlers and Scrapy's feed exports get that
verdict for every article page stored or recorded as an exact repeat; skipped pages, pages stored by an earlier
run and failed fetches are dropped before (they are rows of their own tables, not articles). In a distributed crawl
the run's writer decides each page (newsdedup.distributed.writer): the process that fetched it waits here for the
verdict, so its items and feeds carry the same verdict as a single process's.
"""

from __future__ import annotations

from scrapy.exceptions import DropItem

from newsdedup.crawl.items import ArticlePage, ArticleVerdict
from newsdedup.crawl.pipelines import StagePipeline
from newsdedup.dedup.status import EXACT_DUPLICATE, UNIQUE
from newsdedup.dedupstore.engine import stored_features
from newsdedup.storage.base import ArticleRecord, ReuseRecord


class StorePipeline(StagePipeline):
    stage = "store"

    async def process_item(self, item):
        if not self.handles(item):
            return item
        page: ArticlePage = item
        if page.entry_id is not None:  # a distributed crawl: the run's writer decides, this process waits for it
            verdict = await self.state.distributed.verdict_of(page.entry_id)
            if "dropped" in verdict:
                raise DropItem(verdict["dropped"], log_level=verdict.get("log_level", "INFO"))
            for name, value in verdict.items():
                setattr(page, name, value)
        elif page.analysis is None:
            return page  # not an article (nothing our stages handle): untouched
        else:
            self.record(page)
        return self.hand_on(page)

    def record(self, item: ArticlePage) -> ArticlePage:
        """Store the decided page (an exact repeat is recorded already) and complete its verdict."""
        state = self.state
        article = item.analysis.article
        features = item.analysis.features
        if item.status != EXACT_DUPLICATE:
            if item.article_id is None:  # the near stage is switched off: every article is its own cluster
                item.article_id = state.store.new_article_id()
                item.status, item.cluster_id = UNIQUE, item.article_id
            item.method = state.settings.near.method
            record = ArticleRecord(
                id=item.article_id, url=item.url, site=item.site, title=article.title, text=article.text,
                published_at=article.published_at, author=article.author, source=article.source,
                canonical_url=article.canonical_url, fetched_at=item.fetched_at,
                fetched_url=item.fetched_url or item.url,
                fingerprint=features.fingerprint, status=item.status, duplicate_of=item.duplicate_of,
                cluster_id=item.cluster_id, similarity=item.similarity, score=item.score, measure=item.measure,
                method=item.method, **stored_features(features),
                reuses=tuple(ReuseRecord.from_dict(reuse) for reuse in item.reuses),
            )
            state.store.add_article(record)
            state.indexes.exact.add(features.fingerprint)
            if state.indexes.reuse is not None:
                state.indexes.reuse.add(record)
        if item.cluster_id is not None:
            item.origin_url = state.store.origin_of(item.cluster_id)
        return item

    def hand_on(self, page: ArticlePage) -> ArticleVerdict:
        """The page's verdict, the item that leaves newsdedup's pipelines. The page's turn ends here: the next page
        may go through the dedup stages while this one's item is in the user's pipelines and feed exports."""
        verdict = ArticleVerdict.of(page, page.analysis.article)
        page.analysis, page.handed_on = None, True
        if page.ticket is not None:
            self.state.order.finish(page.ticket)
            page.ticket = None
        return verdict
