"""Times as users write them on the command line and in settings: ``10m``, ``24h``, ``30d``, ``2026-11-16``.

They are turned into the stored form of :mod:`newsdedup.clock` (UTC ISO 8601 to the second).

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

from newsdedup.clock import parse_instant, utc_iso

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


def parse_since(text: str, *, now: datetime | None = None) -> str:
    """A window start: a duration back from ``now`` (``24h``) or an absolute date/time; stored form."""
    try:
        delta = parse_duration(text)
    except ValueError:
        return utc_iso(parse_instant(text))
    now = now or datetime.now(timezone.utc)
    return utc_iso(now - delta)
