"""What newsdedup asks of Scrapy's engine that Scrapy 2.19 has no public call for, in one place.

- :func:`closing`: whether the engine is closing the spider. ``crawler.crawling`` turns false on a stop (SIGTERM,
  Ctrl-C) but not when a ``CLOSESPIDER_*`` limit or an extension closes the spider through
  ``engine.close_spider_async``, and no signal marks the start of a close; the engine's slot does.
- :func:`wake`: make an idle engine look at its scheduler (and ask ``spider_idle`` handlers whether to close) now
  instead of at its next 5-second heartbeat; a distributed crawl uses it when another process queued requests or
  the run is done.
- :func:`item_done`: a closing scraper waits until it is idle, but checks that only when a response is done; an
  item sent in on its own (a page held for its site's template, read again) has none: without this check a crawl
  stopped while a page was read again never ends. The scraper's check fires its closing Deferred without asking
  whether it fired already: two items finishing in one loop turn (or a response's own check coming first) would
  fire it twice (``AlreadyCalledError``, an asyncio ERROR under exit 0), so it is asked only while unfired.

They read the engine's and the scraper's private parts with ``getattr``: if a Scrapy release renames them,
:func:`closing` answers from ``crawler.crawling`` alone and the others do nothing (the engine's own heartbeat still
comes, 5 s later); ``tests/test_crawl_parts.py`` fails then, so the upgrade is noticed.
"""

from __future__ import annotations

from scrapy.crawler import Crawler


def _slot(crawler: Crawler):
    engine = crawler.engine
    return getattr(engine, "_slot", None) if engine is not None else None


def closing(crawler: Crawler) -> bool:
    """True once the crawl is stopping or the engine started closing the spider, for whatever reason."""
    slot = _slot(crawler)
    return not crawler.crawling or (slot is not None and slot.closing is not None)


def wake(crawler: Crawler) -> None:
    """Have an idle engine schedule its next round now (see module doc)."""
    slot = _slot(crawler)
    if slot is not None:
        slot.nextcall.schedule()


def item_done(crawler: Crawler) -> None:
    """An item sent in without a response is done: let a closing scraper see whether it is idle now."""
    scraper = crawler.engine.scraper if crawler.engine is not None else None
    check = getattr(scraper, "_check_if_closing", None)
    closing = scraper.slot.closing if scraper is not None and scraper.slot is not None else None
    if check is not None and closing is not None and not closing.called:
        check()


def reachable(crawler: Crawler) -> bool:
    """Whether this Scrapy still has what this module reads (while a spider is open)."""
    slot = _slot(crawler)
    return (slot is not None and hasattr(slot, "closing") and hasattr(slot, "nextcall")
            and hasattr(crawler.engine.scraper, "_check_if_closing"))


__all__ = ["closing", "item_done", "reachable", "wake"]
