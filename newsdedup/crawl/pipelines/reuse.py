"""Passage-reuse stage, after the near-duplicate one: which earlier stored stories the page quotes or repeats a
passage of (:mod:`newsdedup.crawl.reuse_index`). The page keeps its own story; its reuses go with it to the store
stage, which writes them in the article's transaction and then indexes the page if it starts a story.

Unique pages and near duplicates are looked up (a near duplicate may quote a third story); an exact repeat is
not: its text is a stored article's, whose reuses are recorded already. ``NEWSDEDUP_REUSE = False`` switches the
stage off.
"""

from __future__ import annotations

from newsdedup.crawl.pipelines import StagePipeline
from newsdedup.dedup.status import EXACT_DUPLICATE


class ReusePipeline(StagePipeline):
    stage = "reuse"

    def process_item(self, item):
        # The near stage decided the page's status already: what the base class takes for "decided" is this
        # stage's input. A distributed crawl's page (entry_id) is looked up by the run's writer.
        if (not self.handles(item) or item.analysis is None or item.entry_id is not None
                or item.status == EXACT_DUPLICATE or self.state.indexes.reuse is None):
            return item
        return self.process_page(item)

    def process_page(self, page):
        article = page.analysis.article
        reuses = self.state.indexes.reuse.find(article.text, story=page.cluster_id, url=page.url, site=page.site,
                                               title=article.title, published_at=article.published_at,
                                               fetched_at=page.fetched_at)
        page.reuses = [reuse.as_dict() for reuse in reuses]
        self.inc("checked")
        if reuses:
            self.inc("pages_reusing")
        return page
