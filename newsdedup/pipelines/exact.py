"""Exact stage: a repeat of a stored article is recorded (never silently lost) and dropped."""

from __future__ import annotations

from scrapy.exceptions import DropItem

from newsdedup.pipelines import StagePipeline
from newsdedup.dedup.status import EXACT_DUPLICATE
from newsdedup.storage.base import RepeatRecord


class ExactDedupPipeline(StagePipeline):
    stage = "exact"

    def process_page(self, item):
        analysis = item.analysis
        ref = self.state.exact.find(analysis.features.fingerprint)
        self.inc("checked")
        if ref is None:
            return item
        stored = ref.key  # StoredRef of the earlier article
        article = analysis.article
        self.state.store.add_repeat(
            RepeatRecord(
                url=item.url, site=item.site, title=article.title, published_at=article.published_at,
                author=article.author, source=article.source, canonical_url=article.canonical_url,
                fetched_at=item.fetched_at, fetched_url=item.fetched_url or item.url,
                fingerprint=analysis.features.fingerprint, repeat_of=stored.url,
            )
        )
        item.status = EXACT_DUPLICATE
        item.duplicate_of = stored.url
        self.inc("repeats")
        raise DropItem(f"exact repeat of {stored.url}", log_level="INFO")
