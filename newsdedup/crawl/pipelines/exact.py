"""Exact stage: a repeat of a stored article is recorded (never silently lost) and goes on as a reprint."""

from __future__ import annotations

from newsdedup.crawl.pipelines import StagePipeline
from newsdedup.storage.base import RepeatRecord


class ExactDedupPipeline(StagePipeline):
    stage = "exact"

    def process_page(self, item):
        analysis = item.analysis
        verdict = self.state.indexes.engine.exact_verdict(item.url, analysis.features.fingerprint)
        self.inc("checked")
        if verdict is None:
            return item
        stored = verdict.duplicate_of  # StoredRef of the earlier article
        article = analysis.article
        self.state.store.add_repeat(
            RepeatRecord(
                url=item.url, site=item.site, title=article.title, published_at=article.published_at,
                author=article.author, source=article.source, canonical_url=article.canonical_url,
                fetched_at=item.fetched_at, fetched_url=item.fetched_url or item.url,
                fingerprint=analysis.features.fingerprint, repeat_of=stored.url, cluster_id=stored.cluster_id,
            )
        )
        # As `newsdedup export` shows a repeat: in the story of the page it repeats, similarity 1.
        item.status, item.duplicate_of, item.cluster_id = verdict.status, stored.url, verdict.cluster_id
        item.similarity, item.score, item.measure, item.method = (
            verdict.similarity, verdict.score, verdict.measure, verdict.method)
        self.inc("repeats")
        return item  # the near stage passes it on (its status is set); the store stage hands on its verdict
