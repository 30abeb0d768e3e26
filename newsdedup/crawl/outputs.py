"""What becomes of the items newsdedup hands on: item pipelines after ours, feed exports, ``item_scraped`` handlers.

Scrapy reports a failure there in its log and carries on: an item pipeline that raises gets an ERROR per item
("Error processing"), an ``item_scraped`` handler that raises (a feed exporter that cannot serialise an item, a
user's extension) one per item ("Error caught on signal handler"), a feed that cannot be stored at the end one
("Error storing ... feed") and a ``feedexport/failed_count/<storage>`` stat. The crawl would still exit 0 with the
pages stored and the user's feed or database short of them. :class:`OutputWatch` counts these failures, by what
failed, for the run's verdict (:mod:`newsdedup.run.verdict`: exit status 8, ``output_failed``):

- an item pipeline raising on an :class:`~newsdedup.crawl.items.ArticleVerdict` (one that left our pipelines):
  Scrapy's ``item_error`` signal (a newsdedup page failing in our own stages is a lost page, counted apart);
- an ``item_scraped`` handler raising: Scrapy catches it in ``send_catch_log``, which only logs it, so a logging
  handler on that logger counts the records of this crawl;
- a feed not stored: Scrapy's ``feedexport/failed_count/*`` stats, set while the feeds close, after the spider
  closed (:func:`feed_storage_failures`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from scrapy import signals
from scrapy.crawler import Crawler

from newsdedup.crawl.items import ArticleVerdict

# The logger Scrapy's send_catch_log reports a failed signal handler on.
_SIGNAL_LOGGER = "scrapy.utils.signal"
_FEED_FAILED = "feedexport/failed_count/"


@dataclass
class OutputFailure:
    what: str  # "item pipeline mypkg.pipelines.Upload", "item_scraped handler FeedExporter.item_scraped"
    count: int
    first_error: str  # "TypeError: Object of type bytes is not JSON serializable"

    def problem(self) -> str:
        return f"{self.what} failed on {self.count} item(s) ({self.first_error}); `newsdedup export` has every page"


class OutputWatch:
    """Failures after newsdedup's pipelines in one crawl (see module doc)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.failures: dict[str, OutputFailure] = {}
        crawler.signals.connect(self._item_error, signal=signals.item_error)
        self._handler = _SignalHandlerErrors(self)
        logging.getLogger(_SIGNAL_LOGGER).addHandler(self._handler)
        crawler.signals.connect(self.detach, signal=signals.engine_stopped)

    def detach(self) -> None:
        logging.getLogger(_SIGNAL_LOGGER).removeHandler(self._handler)

    def problems(self) -> list[str]:
        return [failure.problem() for failure in self.failures.values()]

    def note(self, what: str, error: BaseException | None) -> None:
        failure = self.failures.get(what)
        if failure is None:
            text = f"{type(error).__name__}: {error}" if error is not None else "no error given"
            self.failures[what] = OutputFailure(what, 1, text)
        else:
            failure.count += 1

    def _item_error(self, item, failure, **kwargs) -> None:
        if handed_on(item):
            error = failure.value
            self.note(f"item pipeline {_raised_in(error)}", error)

    def ours(self, record: logging.LogRecord) -> bool:
        """Whether a log record is of this crawl (Scrapy tags its records with the spider)."""
        spider = getattr(record, "spider", None)
        return spider is None or spider is self.crawler.spider


class _SignalHandlerErrors(logging.Handler):
    def __init__(self, watch: OutputWatch) -> None:
        super().__init__(logging.ERROR)
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        if not self.watch.ours(record) or not isinstance(record.args, dict) or "receiver" not in record.args:
            return
        receiver = record.args["receiver"]
        owner = getattr(receiver, "__self__", None)
        name = f"{type(owner).__name__}.{receiver.__name__}" if owner is not None else getattr(
            receiver, "__qualname__", repr(receiver))
        error = record.exc_info[1] if record.exc_info else None
        self.watch.note(f"signal handler {name}", error)


def handed_on(item: object) -> bool:
    """Whether ``item`` left newsdedup's pipelines (as an ArticleVerdict): what fails on it later is an output's."""
    return isinstance(item, ArticleVerdict) or getattr(item, "handed_on", False)


def _raised_in(error: BaseException) -> str:
    """The item pipeline whose ``process_item`` raised ``error`` (its class), from the exception's traceback."""
    name = None
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "process_item" else None
        if owner is not None:
            name = f"{type(owner).__module__}.{type(owner).__qualname__}"
        tb = tb.tb_next
    return name or "after newsdedup's"


def feed_storage_failures(stats: dict) -> list[str]:
    """Feeds Scrapy could not store at the end of the crawl (its ``feedexport/failed_count/<storage>`` stats)."""
    return [
        f"{count} feed(s) could not be stored by {key[len(_FEED_FAILED):]} (see `Error storing` above)"
        for key, count in sorted(stats.items()) if key.startswith(_FEED_FAILED) and count
    ]


__all__ = ["OutputFailure", "OutputWatch", "feed_storage_failures", "handed_on"]
