"""Which outcomes of a page are tried again on a later run, and when.

A page that held no article because of what it *is* (a video, a list, a binary file) is done for
good. A page that held nothing because of what *happened* (served empty or as a short placeholder
while the portal was publishing, an extraction that crashed, hung or raised, an HTTP 500, a redirect
loop) may well be an article next time: it is tried again on later runs, after a delay that doubles
with every attempt, up to ``max_attempts`` attempts in all, and only then counts as done. Pure Python.

>>> policy = RetryPolicy(max_attempts=3, backoff=1800)
>>> now = datetime(2026, 11, 21, 8, 0, tzinfo=timezone.utc)
>>> policy.next_try("too_short", attempts=1, now=now).isoformat()
'2026-11-21T08:30:00+00:00'
>>> policy.next_try("too_short", attempts=2, now=now).isoformat()
'2026-11-21T09:00:00+00:00'
>>> policy.next_try("too_short", attempts=3, now=now) is None  # the third attempt was the last
True
>>> policy.next_try("video", attempts=1, now=now) is None  # permanent: never again
True
>>> policy.next_try("http_404", attempts=1, now=now) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone  # timezone: the doctest

from newsdedup import defaults
from newsdedup.clock import utc_iso

# Skip reasons that say something went wrong this time rather than what the page is. ``empty`` and
# ``too_short`` cover pages served blank or as a placeholder ("稿件审核中") while a portal publishes;
# ``malformed`` a page cut off in transfer; ``error`` an exception in extraction (a library bug, MemoryError);
# ``timeout`` and ``crashed`` the worker limits (see newsdedup.crawl.analysis).
TRANSIENT_SKIPS = frozenset({"empty", "too_short", "malformed", "error", "timeout", "crashed"})

# HTTP failures that say the page is gone; every other failure (5xx, 403/429, over-size, redirect loop,
# network) is tried again.
PERMANENT_FAILURES = frozenset({"http_404", "http_410"})

# Skip reasons that say our side failed on the page (a bug, a hang, a crash): the run's exit status reports
# them (newsdedup.run.verdict), although the page is recorded and tried again.
PROCESSING_ERRORS = frozenset({"error", "timeout", "crashed"})


# Fetch failures besides HTTP status codes (``http_<status>``); newsdedup.crawl.spiders.portal classifies Scrapy's
# download errors into these.
FAILURE_KINDS = frozenset({"too_large_download", "redirect_loop", "download_timeout", "connection", "download_error"})


def is_failure_kind(outcome: str) -> bool:
    """Whether ``outcome`` names a fetch failure (``http_500``, ``redirect_loop``) rather than a skip reason."""
    return outcome.startswith("http_") or outcome in FAILURE_KINDS


def is_transient(outcome: str) -> bool:
    """Whether a skip reason or failure kind is worth another attempt on a later run."""
    if is_failure_kind(outcome):
        return outcome not in PERMANENT_FAILURES
    return outcome in TRANSIENT_SKIPS



@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` attempts in all; the second comes ``backoff`` seconds after the first, then doubling."""

    max_attempts: int = defaults.NEWSDEDUP_RETRY_MAX_ATTEMPTS
    backoff: float = defaults.NEWSDEDUP_RETRY_BACKOFF

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff < 0:
            raise ValueError(f"backoff must be >= 0 seconds, got {self.backoff}")

    def next_try(self, outcome: str, *, attempts: int, now: datetime) -> datetime | None:
        """When to fetch the page again after ``attempts`` attempts ended in ``outcome``; None: never."""
        if not is_transient(outcome) or attempts >= self.max_attempts:
            return None
        return now + timedelta(seconds=self.backoff * 2 ** (attempts - 1))

    def next_try_iso(self, outcome: str, *, attempts: int, now: datetime) -> str | None:
        moment = self.next_try(outcome, attempts=attempts, now=now)
        return None if moment is None else utc_iso(moment)


__all__ = [
    "FAILURE_KINDS", "PERMANENT_FAILURES", "PROCESSING_ERRORS", "RetryPolicy", "TRANSIENT_SKIPS", "is_failure_kind",
    "is_transient",
]
