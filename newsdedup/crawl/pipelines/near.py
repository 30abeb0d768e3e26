"""Near-duplicate stage: Single-Pass clustering tags the item; it is stored either way."""

from __future__ import annotations

from newsdedup.crawl.pipelines import StagePipeline
from newsdedup.dedup.status import NEAR_DUPLICATE, UNIQUE


class NearDedupPipeline(StagePipeline):
    stage = "near"

    def process_page(self, item):
        state = self.state
        item.article_id = state.store.new_article_id()
        assignment = state.indexes.clusterer.assign(item.article_id, item.analysis.features)
        item.cluster_id = assignment.cluster_id
        if assignment.is_near_duplicate:
            item.status = NEAR_DUPLICATE
            item.duplicate_of = state.store.url_of(assignment.duplicate_of)
            match = assignment.match
            item.similarity, item.score, item.measure = round(match.similarity, 4), round(match.score, 4), match.measure
            self.inc("near_duplicates")
        else:
            item.status = UNIQUE
            self.inc("clusters")
        return item
