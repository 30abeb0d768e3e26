"""The retention window: how long a story stays in the crawl's memory (``NEWSDEDUP_RETENTION_DAYS``).

A crawl rebuilds its caches from the store when it opens. With a window, it loads only:

- into the exact-text Bloom filter and the near-duplicate index: the articles of clusters that had a
  copy fetched within the window (a story that keeps being reprinted stays one story; one that comes
  back after a longer silence starts a new cluster, as a new wave of coverage should);
- into the URL filter: the article pages fetched within the window. An older URL that a list page
  still links (topic pages, "hot" sidebars) is looked up in the store instead, one indexed query per
  link the Bloom filter has not seen, so it is not fetched again either.

Rows never leave the database: export and report still see every article. Memory and start-up time
follow the articles of the last ``days`` days instead of everything ever stored.

>>> window_start(30, now=datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc))
'2026-10-25T12:00:00+00:00'
>>> window_start(None) is None
True
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from newsdedup.clock import utc_iso
from newsdedup.run import options


def retention_days(settings) -> float | None:
    """``NEWSDEDUP_RETENTION_DAYS`` as a number of days, None when off (``0``, ``none`` or ``off``)."""
    days = options.get_optional(settings, "NEWSDEDUP_RETENTION_DAYS", float)
    if days is not None and days < 0:
        raise options.SettingError(f"NEWSDEDUP_RETENTION_DAYS: must be >= 0 (0 or none keeps everything), got {days}")
    return days or None


def window_start(days: float | None, *, now: datetime | None = None) -> str | None:
    """The oldest fetch time a crawl still remembers (stored form), or None for no window."""
    if not days:
        return None
    return utc_iso((now or datetime.now(timezone.utc)) - timedelta(days=days))
