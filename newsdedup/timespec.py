"""Times as users write them on the command line and in settings: ``10m``, ``24h``, ``30d``, ``2026-11-16``.

Every time newsdedup stores or compares is UTC ISO 8601 to the second (``2026-11-16T00:30:00+00:00``),
the form ``fetched_at`` has always had, so such strings sort in time order and SQL can compare them.

>>> parse_duration("10m"), parse_duration("1h30m"), parse_duration("30d")
(datetime.timedelta(seconds=600), datetime.timedelta(seconds=5400), datetime.timedelta(days=30))
>>> parse_since("24h", now=datetime(2026, 11, 16, 12, 0, tzinfo=timezone.utc))
'2026-11-15T12:00:00+00:00'
>>> parse_since("2026-11-16")  # a bare date is midnight China time, where the portals are
'2026-11-15T16:00:00+00:00'
>>> parse_duration("soon")
Traceback (most recent call last):
...
ValueError: 'soon' is not a duration: write a number and a unit, e.g. 90s, 10m, 24h, 7d, 2w
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

# Chinese portals publish in China Standard Time (UTC+8, no daylight saving); dates without an offset,
# on a page or typed by a user monitoring them, mean that time.
CHINA_OFFSET = timezone(timedelta(hours=8))

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")


def parse_duration(text: str) -> timedelta:
    """``90s``, ``10m``, ``24h``, ``7d``, ``2w`` or sums such as ``1h30m``; a plain number is seconds."""
    value = str(text).strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return timedelta(seconds=float(value))
    parts = _DURATION.findall(value)
    if not parts or _DURATION.sub("", value).strip():
        raise ValueError(f"{text!r} is not a duration: write a number and a unit, e.g. 90s, 10m, 24h, 7d, 2w")
    return timedelta(seconds=sum(float(number) * _UNITS[unit] for number, unit in parts))


def utc_iso(moment: datetime) -> str:
    """The stored form: UTC, to the second. A naive ``moment`` is China time."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=CHINA_OFFSET)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def parse_instant(text: str) -> datetime:
    """An ISO 8601 date or date-time; without an offset it is China time."""
    try:
        moment = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date or time: write 2026-11-16, 2026-11-16T08:30 or a duration "
                         "such as 24h") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=CHINA_OFFSET)


def parse_since(text: str, *, now: datetime | None = None) -> str:
    """A window start: a duration back from ``now`` (``24h``) or an absolute date/time; stored form."""
    try:
        delta = parse_duration(text)
    except ValueError:
        return utc_iso(parse_instant(text))
    now = now or datetime.now(timezone.utc)
    return utc_iso(now - delta)


def now_iso() -> str:
    return utc_iso(datetime.now(timezone.utc))
