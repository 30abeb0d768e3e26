"""Storage stage: the article record goes to the store (batched), its fingerprint to the exact index."""

from __future__ import annotations

from newsdedup.dedup.features import pack_spots
from newsdedup.pipelines import StagePipeline
from newsdedup.dedup.status import UNIQUE
from newsdedup.storage.base import ArticleRecord


class StorePipeline(StagePipeline):
    stage = "store"

    def process_page(self, item):
        state = self.state
        article = item.analysis.article
        features = item.analysis.features
        if item.article_id is None:  # the near stage is switched off: every article is its own cluster
            item.article_id = state.store.new_article_id()
            item.status, item.cluster_id = UNIQUE, item.article_id
        state.store.add_article(
            ArticleRecord(
                id=item.article_id, url=item.url, site=item.site, title=article.title, text=article.text,
                published_at=article.published_at, author=article.author, source=article.source,
                canonical_url=article.canonical_url, fetched_at=item.fetched_at, fetched_url=item.fetched_url or item.url,
                fingerprint=features.fingerprint, status=item.status, duplicate_of=item.duplicate_of,
                cluster_id=item.cluster_id, similarity=item.similarity, score=item.score, measure=item.measure,
                method=state.settings.near.method,
                # The column holds 64-bit fingerprints; a 128-bit one is re-derived from the text on rebuild.
                simhash=features.simhash if features.simhash is not None and features.simhash < 2**64 else None,
                spots=pack_spots(features.spots),
            )
        )
        state.exact.add(features.fingerprint)
        item.analysis = None  # keep Scrapy's item_scraped consumers light
        return item
