"""Article pages that could not be fetched go to the failures table, with their attempts and next try."""

from __future__ import annotations

from scrapy.exceptions import DropItem

from newsdedup.clock import utc_now
from newsdedup.crawl.items import FetchFailure
from newsdedup.crawl.pipelines import StagePipeline
from newsdedup.storage.base import FailureRecord


class FailurePipeline(StagePipeline):
    stage = "fetch"

    def process_item(self, item):
        if not isinstance(item, FetchFailure):
            return item
        if self.state.distributed is not None:  # a distributed crawl: its writer records it, in the stream's order
            self.state.distributed.publish(item)
            raise DropItem(f"fetch failed ({item.kind}): handed to the writer", log_level="DEBUG")
        self.record(item)

    def record(self, item: FetchFailure):
        state = self.state
        if state.store.has_page(item.url):  # stored by an earlier attempt; this one changes nothing
            raise DropItem(f"fetch failed ({item.kind}), but the page is stored already", log_level="DEBUG")
        attempts = state.store.attempts_of(item.url) + 1
        next_try = state.settings.retry.next_try_iso(item.kind, attempts=attempts, now=utc_now())
        state.store.add_failure(FailureRecord(
            item.url, item.site, item.kind, item.detail, item.failed_at, attempts=attempts, next_try_at=next_try,
        ))
        self.inc(f"failed/{item.kind}")
        raise DropItem(
            f"fetch failed ({item.kind}: {item.detail}), attempt {attempts}"
            + (f", tried again from {next_try}" if next_try else ", not tried again"),
            log_level="WARNING",
        )
