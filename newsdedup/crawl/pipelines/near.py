"""Near-duplicate stage: Single-Pass clustering tags the item; it is stored either way."""

from __future__ import annotations

from newsdedup.crawl.pipelines import StagePipeline
from newsdedup.dedup.captions import caption_check, caption_lines
from newsdedup.dedup.status import NEAR_DUPLICATE


class NearDedupPipeline(StagePipeline):
    stage = "near"

    def process_page(self, item):
        state = self.state
        item.article_id = state.store.new_article_id()
        # A caption-only page joins another caption page's story only with the same captions (read from the store).
        confirm = caption_check(item.analysis.article.text,
                                lambda centre: caption_lines(state.store.article_text(centre) or ""))
        verdict = state.indexes.engine.near_verdict(item.article_id, item.analysis.features, confirm=confirm)
        item.status, item.cluster_id = verdict.status, verdict.cluster_id
        if verdict.status == NEAR_DUPLICATE:
            item.duplicate_of = state.store.url_of(verdict.duplicate_of)
            item.similarity, item.score, item.measure = verdict.similarity, verdict.score, verdict.measure
            self.inc("near_duplicates")
        else:
            self.inc("clusters")
        return item
