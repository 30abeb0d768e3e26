"""Who published a story first: the time each copy counts as published, and the origin of a cluster.

A cluster's origin is its earliest-published member. The time a member counts as published
(``dated_at``) is its page's publication time when that is plausible, else the time we fetched it:

- a publication time later than the fetch is impossible (a wrong time zone, a page that stamps the
  time of the request, a template date in the future); up to ``CLOCK_SKEW`` ahead is a server clock
  running fast, and counts as the fetch time;
- a publication time before the site existed (:data:`SITE_LAUNCHES`, by domain) or before China's
  first full internet connection (:data:`WEB_EPOCH`) is a date from the text (a history, a law's date)
  taken for the byline;
- a date without a time (stored as local midnight) says only the day: it counts as the last moment it
  allows, the end of that day or the fetch if sooner, so a dated-only page is the origin only when it is
  known to be earlier than a page stamped to the minute.

Ties (the same minute) go to the member fetched first, then to the smaller URL, so the choice never
depends on the order rows are read in.

>>> fetched = "2026-11-16T04:00:00+00:00"
>>> date_of("2026-11-16T08:40:00+08:00", fetched, "https://news.sina.com.cn/c/doc.shtml")
Dated(at='2026-11-16T00:40:00+00:00', basis='published')
>>> date_of("2026-11-17T08:40:00+08:00", fetched).basis  # after the fetch: implausible
'fetched'
>>> date_of("2005-01-01T10:00:00+08:00", fetched, "https://www.thepaper.cn/newsDetail_1").basis  # thepaper: 2014
'fetched'
>>> date_of("2026-11-16T00:00:00+08:00", fetched)  # a day, no time: the end of it, or the fetch if sooner
Dated(at='2026-11-16T04:00:00+00:00', basis='published_day')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

from newsdedup.clock import CHINA_OFFSET, parse_instant, utc_iso

PUBLISHED = "published"  # the page's own publication time
PUBLISHED_DAY = "published_day"  # the page's publication day, no time: the end of that day (or the fetch)
FETCHED = "fetched"  # no plausible publication time: when we fetched it

# Portal clocks and CDN caches run a few minutes fast; more than this ahead of our fetch is not a
# publication time at all.
CLOCK_SKEW = timedelta(minutes=10)
# 1994-04-20: China's first full-function connection to the internet. Nothing was published on the
# Chinese web before it; the metadata extractor already refuses years before 1990.
WEB_EPOCH = datetime(1994, 4, 20, tzinfo=CHINA_OFFSET)
# First year each portal's domain published news (the earliest the portals themselves give, so a real
# date is never refused): a date before it is a date from the text, not the byline.
SITE_LAUNCHES: dict[str, int] = {
    "sina.com.cn": 1998, "sina.com": 1998, "sohu.com": 1998, "qq.com": 1998, "163.com": 1997,
    "xinhuanet.com": 1997, "news.cn": 1997, "people.com.cn": 1997, "ifeng.com": 1998,
    "thepaper.cn": 2014, "chinanews.com": 1999, "chinanews.com.cn": 1999,
}


@dataclass(frozen=True)
class Dated:
    """When a page counts as published: UTC ISO 8601 (the stored form) and what that rests on."""

    at: str
    basis: str  # PUBLISHED | PUBLISHED_DAY | FETCHED


def site_launch(url: str | None) -> datetime:
    """The earliest plausible publication time for a page at ``url``."""
    host = (urlsplit(url).hostname or "") if url else ""
    labels = host.split(".")
    for i in range(len(labels) - 1):
        year = SITE_LAUNCHES.get(".".join(labels[i:]))
        if year is not None:
            return datetime(year, 1, 1, tzinfo=CHINA_OFFSET)
    return WEB_EPOCH


def date_of(published_at: str | None, fetched_at: str, url: str | None = None) -> Dated:
    """The time a page counts as published, from its extracted ``published_at`` and our ``fetched_at``."""
    fetched = parse_instant(fetched_at)
    published = _parse_or_none(published_at)
    if published is None or published < site_launch(url) or published > fetched + CLOCK_SKEW:
        return Dated(utc_iso(fetched), FETCHED)
    # Midnight in the page's own offset is how the extractor writes a date that had no time.
    if (published.hour, published.minute, published.second) == (0, 0, 0):
        end_of_day = published + timedelta(days=1) - timedelta(seconds=1)
        return Dated(utc_iso(min(end_of_day, fetched)), PUBLISHED_DAY)
    return Dated(utc_iso(min(published, fetched)), PUBLISHED)


def _parse_or_none(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_instant(value)
    except ValueError:
        return None


class Member(Protocol):
    url: str
    dated_at: str
    fetched_at: str


M = TypeVar("M", bound=Member)


def origin_key(member: Member) -> tuple[str, str, str]:
    """Sort key of cluster members by who published first (times are the stored UTC form, which sorts)."""
    return (_utc(member.dated_at), _utc(member.fetched_at), member.url)


def earliest(members: Iterable[M]) -> M:
    """The origin of a cluster: the member published first (see the module's rules)."""
    return min(members, key=origin_key)


def _utc(value: str) -> str:
    # Stored values are already UTC; rows written by hand or by an older newsdedup may carry another offset.
    return value if value.endswith("+00:00") else utc_iso(parse_instant(value))


__all__ = [
    "CLOCK_SKEW", "Dated", "FETCHED", "PUBLISHED", "PUBLISHED_DAY", "SITE_LAUNCHES", "WEB_EPOCH",
    "date_of", "earliest", "origin_key", "site_launch",
]
