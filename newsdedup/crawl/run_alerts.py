"""The watches' alerts when a crawl closes (``NEWSDEDUP_ALERTS``): what ``newsdedup alerts`` sends, sent by the run
that stored the matches, through the store it wrote them with (:mod:`newsdedup.monitoring.alerts`: at least once,
each alert with its idempotency key; one delivery state row per watch, story and reason, claimed before sending).

A failed delivery does not change the crawl's exit status (the pages are stored); it is counted
(``newsdedup/alerts/failed``), said in the closing summary and sent again by the next run.
"""

from __future__ import annotations

import logging

from newsdedup.storage.base import ArticleStore, StoreError

logger = logging.getLogger(__name__)

SENT = "newsdedup/alerts/sent"
FAILED = "newsdedup/alerts/failed"
NEW = "newsdedup/alerts/new"


def check_alerts(watches_file: str) -> None:
    """Before the crawl starts: the watches file reads and the serve extra is installed. Raises ValueError."""
    from newsdedup.monitoring.alerts import WatchError, load_watches

    try:
        import apprise  # noqa: F401 - what sends them
    except ImportError:
        raise ValueError("NEWSDEDUP_ALERTS: no module apprise; alerts need the serve extra: "
                         "pip install 'newsdedup[serve]'") from None
    try:
        load_watches(watches_file)
    except WatchError as exc:
        raise ValueError(f"NEWSDEDUP_ALERTS: {exc}") from None


def send_after_run(store: ArticleStore, watches_file: str, desk_url: str | None, stats) -> None:
    """Owe and send the watches' new matches; their counts go into the run's stats."""
    from newsdedup.monitoring.alerts import WatchError, load_watches, run_alerts

    try:
        result = run_alerts(store, load_watches(watches_file), desk_url=desk_url)
    except (WatchError, StoreError, OSError) as exc:
        logger.error("alerts not sent (%s): the next run or `newsdedup alerts` sends them", exc)
        stats.set_value(FAILED, 1)
        return
    for error in result.errors:
        logger.warning("alert not delivered: %s", error)
    stats.set_value(NEW, result.matched)
    stats.set_value(SENT, result.sent)
    stats.set_value(FAILED, result.failed)
    logger.info("%s", result.summary())


def summary_line(stats) -> str | None:
    """The closing summary's line about the alerts, when the run sent any or failed to."""
    if NEW not in stats and FAILED not in stats:
        return None
    failed = stats.get(FAILED, 0)
    tail = f"; {failed} failed, sent again by the next run" if failed else ""
    return f"alerts: {stats.get(NEW, 0)} new, {stats.get(SENT, 0)} sent{tail}"
