"""The one-machine scheduler: Scrapy's, with a ``JOBDIR`` queue it only trusts after a clean close.

Scrapy's disk queue (``JOBDIR/requests.queue``, queuelib files under Scrapy's priority queues) is only
consistent after a clean close: the LIFO queue files keep their request count in a 4-byte header that is
written when the queue is created (through a write buffer) and updated only on close, the FIFO queues of
start requests write their ``info.json`` only on close, and ``active.json`` (which queues hold requests) too.
After ``kill -9``, an OOM kill, a power cut or a second SIGTERM the directory holds whatever happened to
reach the disk. One case is common: a queue file created just before the kill, its header still in the
buffer, is left empty; the next run's first push to that priority raises ``struct.error`` inside Scrapy's
engine, which swallows it and waits for the page's output forever. The resumed crawl fetched nothing and
never ended (issue 11; scrapy/scrapy#3413 and queuelib#59 report the same error, queuelib#5 the lost FIFO
state).

So :class:`JobdirScheduler` keeps a marker, ``JOBDIR/crawl.open``, from the moment it opens the queue until it
has closed it cleanly (Scrapy wrote ``active.json`` and every queue's state). A run that finds the marker
knows the last one did not close cleanly, and the queue cannot be trusted, however it looks: it logs one
WARNING, counts ``newsdedup/crawl/scheduler/unclean_shutdown`` and drops the queue and Scrapy's ``requests.seen``
(which, with Scrapy's default filter, names requests scheduled but never fetched). That is safe because
this project's record of what is done is the database, not the job directory: start pages are
``dont_filter`` and list pages are fetched every run, so every article they link is found again, and the
URL filter skips those the database already has (:mod:`newsdedup.crawl.dupefilter`).

A queue left by a clean close can still be unreadable (a full disk, a file edited or truncated by hand):
opening it fails, the same fallback applies (``newsdedup/crawl/scheduler/unreadable_queue``). And if the disk queue
fails during the crawl (a push or pop raises, or it reports requests it cannot return, the state in which
Scrapy's engine waits forever), the crawl goes on with the in-memory queue (``newsdedup/crawl/scheduler/queue_failed``;
the requests the broken queue still held are counted in ``newsdedup/crawl/scheduler/requests_lost`` and are found
again by the next run's list pages); the marker stays, so the next run drops what is left.

Without ``JOBDIR`` this is Scrapy's scheduler, unchanged. The distributed crawl uses its own scheduler
(:mod:`newsdedup.distributed.scheduler`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

from scrapy.core.scheduler import Scheduler

logger = logging.getLogger(__name__)

MARKER = "crawl.open"  # in JOBDIR while a crawl has its queue open (module doc)
STATS_PREFIX = "newsdedup/crawl/scheduler/"


class JobdirGuard:
    """The job directory's clean-close marker, and the drop of a queue that cannot be trusted (no Scrapy)."""

    def __init__(self, jobdir: str | os.PathLike[str]) -> None:
        self.jobdir = Path(jobdir)
        self.marker = self.jobdir / MARKER
        self.queue_dir = self.jobdir / "requests.queue"
        self.seen_file = self.jobdir / "requests.seen"

    def unclean(self) -> dict | None:
        """What the marker a crawl left says (pid, start time, why it was kept), or None after a clean close."""
        try:
            text = self.marker.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            found = json.loads(text)
        except ValueError:  # killed while writing the marker: it is there, so the close was not clean
            found = None
        return found if isinstance(found, dict) else {}

    def mark_open(self, **detail: object) -> None:
        """Written before the queue is opened, so a kill at any moment after it leaves the marker."""
        self.jobdir.mkdir(parents=True, exist_ok=True)
        self.marker.write_text(json.dumps({"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                                           **detail}), encoding="utf-8")

    def mark_closed(self) -> None:
        """Only after the queue's state is fully on disk."""
        self.marker.unlink(missing_ok=True)

    def queued_files(self) -> int:
        return sum(1 for p in self.queue_dir.rglob("*") if p.is_file()) if self.queue_dir.exists() else 0

    def drop_queue(self) -> None:
        """Removes the request queue and ``requests.seen``; the queue directory is left empty for Scrapy."""
        shutil.rmtree(self.queue_dir, ignore_errors=True)
        self.queue_dir.mkdir(parents=True, exist_ok=True)
        self.seen_file.unlink(missing_ok=True)


def describe(left: dict) -> str:
    """How the WARNING names the crawl that left an unclean job directory."""
    if not left:
        return "a crawl"
    text = f"the crawl started {left.get('started', '?')} (pid {left.get('pid', '?')})"
    if left.get("queue_failed"):
        text += f", whose disk queue failed ({left['queue_failed']}),"
    return text


class JobdirScheduler(Scheduler):
    """Scrapy's scheduler; with ``JOBDIR``, a queue not closed cleanly or unreadable is dropped (module doc)."""

    guard: JobdirGuard | None = None

    def open(self, spider):
        if self.dqdir:
            self.guard = JobdirGuard(Path(self.dqdir).parent)
            left = self.guard.unclean()
            if left is not None:
                files = self.guard.queued_files()
                self.guard.drop_queue()
                self._count("unclean_shutdown")
                logger.warning(
                    "JOBDIR %s was left by %s that did not close cleanly (killed?): its request queue (%d files) "
                    "cannot be trusted and is dropped; start and list pages are fetched again and the articles "
                    "the database has are skipped", self.guard.jobdir, describe(left), files)
            self.guard.mark_open()
        return super().open(spider)

    def _dq(self):
        try:
            return super()._dq()
        except Exception as exc:  # noqa: BLE001 - whatever a damaged queue raises (struct.error, OSError, JSON...)
            assert self.guard is not None
            files = self.guard.queued_files()
            self.guard.drop_queue()
            self._count("unreadable_queue")
            logger.warning("JOBDIR %s: its request queue (%d files) cannot be read (%s: %s) and is dropped; start "
                           "and list pages are fetched again and the articles the database has are skipped",
                           self.guard.jobdir, files, type(exc).__name__, exc)
            return super()._dq()

    def close(self, reason: str):
        result = super().close(reason)  # writes active.json and every queue's state (or raises: marker stays)
        if self.guard is not None and self.dqs is not None:
            self.guard.mark_closed()
        return result

    # -- the disk queue failing during the crawl: go on in memory rather than lose the request or hang
    def _dqpush(self, request) -> bool:
        try:
            return super()._dqpush(request)  # False: not serializable (Scrapy's own case), kept in memory
        except Exception as exc:  # noqa: BLE001 - a queue file that cannot be written or opened
            self._disk_queue_failed(f"push: {type(exc).__name__}: {exc}")
            return False  # the caller keeps the request in the memory queue

    def _dqpop(self):
        if self.dqs is None:
            return None
        try:
            request = self.dqs.pop()
        except Exception as exc:  # noqa: BLE001 - a queue file that cannot be read or unpickled
            self._disk_queue_failed(f"pop: {type(exc).__name__}: {exc}")
            return None
        if request is None and len(self.dqs):
            # Scrapy's engine sees pending requests it never gets and never closes the spider: the hang of issue 11.
            self._disk_queue_failed(f"pop: it holds {len(self.dqs)} requests but returns none")
        return request

    def _disk_queue_failed(self, what: str) -> None:
        assert self.dqs is not None and self.guard is not None
        lost = len(self.dqs)
        self.dqs = None  # Scrapy's scheduler then uses its memory queue alone (as without JOBDIR)
        self._count("queue_failed")
        self._count("requests_lost", lost)
        self.guard.mark_open(queue_failed=what)  # the marker stays: the next run drops what is left
        logger.warning("JOBDIR %s: the disk queue failed (%s); the crawl goes on with the memory queue; %d requests "
                       "it held are not fetched in this run (the next run finds them again on the list pages)",
                       self.guard.jobdir, what, lost)

    def _count(self, name: str, count: int = 1) -> None:
        assert self.stats is not None
        self.stats.inc_value(STATS_PREFIX + name, count)
