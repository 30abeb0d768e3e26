"""The one time format newsdedup stores and compares, and the time zone the portals write in.

Every stored time is UTC ISO 8601 to the second (``2026-11-16T00:30:00+00:00``), so such strings sort in time
order and SQL can compare them. A time without an offset (on a page, or typed by a user monitoring Chinese
portals) is China time.

>>> utc_iso(datetime(2026, 11, 16, 8, 30))  # naive: China time
'2026-11-16T00:30:00+00:00'
>>> utc_iso(datetime(2026, 11, 16, 8, 30, tzinfo=timezone.utc))
'2026-11-16T08:30:00+00:00'
>>> parse_instant("2026-11-16T08:30")
datetime.datetime(2026, 11, 16, 8, 30, tzinfo=datetime.timezone(datetime.timedelta(seconds=28800)))
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

# Chinese portals publish in China Standard Time (UTC+8, no daylight saving); dates without an offset,
# on a page or typed by a user monitoring them, mean that time.
CHINA_OFFSET = timezone(timedelta(hours=8))


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def utc_iso(moment: datetime) -> str:
    """The stored form: UTC, to the second. A naive ``moment`` is China time (never the machine's zone)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=CHINA_OFFSET)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def now_iso() -> str:
    """Now, in the stored form."""
    return utc_iso(utc_now())


def parse_instant(text: str) -> datetime:
    """An ISO 8601 date or date-time; without an offset it is China time."""
    try:
        moment = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date or time: write 2026-11-16, 2026-11-16T08:30 or a duration "
                         "such as 24h") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=CHINA_OFFSET)
