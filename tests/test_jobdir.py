"""A ``JOBDIR`` the last crawl did not close cleanly, or whose queue is damaged, never hangs a crawl.

The job directories are built by hand in the states ``kill -9`` leaves (the marker of a crawl that never
closed, a queue file created just before the kill whose header never reached the disk), so each case is
reproduced every time; each crawl is a real ``scrapy crawl portal`` against :class:`faultsite.FaultSite`.
The random-moment ``kill -9`` and resume is ``test_crawl_e2e.test_jobdir_resumes_after_kill_9_...``.
"""

from __future__ import annotations

import json
import signal
import struct
import threading

from faultsite import FaultSite, outcomes, run_crawl, start_crawl, wait_for
from scrapy.pqueues import _path_safe  # the directory Scrapy's DownloaderAwarePriorityQueue gives a host

from newsdedup.crawl.scheduler import MARKER, JobdirGuard

ARTICLES = 30


def slot_dir(jobdir):
    """Where Scrapy keeps the disk queues of requests to 127.0.0.1 (priority 0 in the file ``0``)."""
    return jobdir / "requests.queue" / _path_safe("127.0.0.1")


def crawl_warns_once_and_stores_everything(tmp_path, site, warning: str, stat: str) -> str:
    """Crawls ``site`` with ``tmp_path/job``: it ends, says ``warning`` in one WARNING line, counts ``stat``
    once and stores every article once. Returns that WARNING line."""
    db = tmp_path / "news.sqlite"
    # A crawl that hangs fails here (TimeoutExpired) instead of holding the suite.
    result = run_crawl(site.write_sites(tmp_path), db, "-s", f"JOBDIR={tmp_path / 'job'}", timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = jobdir_warnings(result.stderr)
    assert len(warnings) == 1 and warning in warnings[0], warnings
    assert f"'newsdedup/crawl/scheduler/{stat}': 1" in result.stderr
    assert_every_article_stored_once(site, db)
    return warnings[0]


def jobdir_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "WARNING" in line and "JOBDIR" in line]


def assert_every_article_stored_once(site, db):
    check = outcomes(db)
    assert sorted(check) == sorted(site.url(p) for p in site.article_paths)
    assert all(len(where) == 1 for where in check.values())


def test_a_queue_left_by_a_crawl_that_never_closed_is_dropped_with_one_warning(tmp_path):
    job = tmp_path / "job"
    slot_dir(job).mkdir(parents=True)
    (slot_dir(job) / "0").write_bytes(b"")  # created just before the kill: its 4-byte header was still buffered
    (slot_dir(job) / "-1").write_bytes(struct.pack(">L", 0) + b"\x80\x04 half a pickled request")
    (job / "requests.seen").write_text("0123456789abcdef0123456789abcdef01234567\n")
    (job / MARKER).write_text(json.dumps({"pid": 4242, "started": "2026-11-20 08:00:00"}))
    with FaultSite(ARTICLES) as site:
        warning = crawl_warns_once_and_stores_everything(tmp_path, site, "did not close cleanly", "unclean_shutdown")
        assert "(pid 4242)" in warning and "(2 files)" in warning
    assert not (job / "requests.seen").exists()
    assert not (job / MARKER).exists()  # this crawl closed cleanly


def test_an_unreadable_queue_after_a_clean_close_is_dropped_and_the_crawl_ends(tmp_path):
    job = tmp_path / "job"
    slot_dir(job).mkdir(parents=True)
    (slot_dir(job) / "0").write_bytes(b"\x00\x00")  # truncated: Scrapy's resume raises struct.error
    (job / "requests.queue" / "active.json").write_text(json.dumps({"127.0.0.1": [0]}))
    with FaultSite(ARTICLES) as site:
        crawl_warns_once_and_stores_everything(tmp_path, site, "cannot be read (error:", "unreadable_queue")


def test_a_disk_queue_failing_during_the_crawl_falls_back_to_memory_instead_of_hanging(tmp_path):
    # The state that hung the resumed crawl, without the marker: the first push to the empty file raises inside
    # Scrapy's engine, which used to swallow the error and wait for the list page's output forever.
    job = tmp_path / "job"
    slot_dir(job).mkdir(parents=True)
    (slot_dir(job) / "0").write_bytes(b"")
    with FaultSite(ARTICLES) as site:
        crawl_warns_once_and_stores_everything(tmp_path, site, "the disk queue failed (push: error:", "queue_failed")
    left = JobdirGuard(job).unclean()  # the marker stays: the next run drops the broken queue
    assert left is not None and left["queue_failed"].startswith("push: error")


def test_a_cleanly_stopped_crawl_still_resumes_from_its_queue(tmp_path):
    with FaultSite(ARTICLES) as site:
        sites = site.write_sites(tmp_path)
        db = tmp_path / "news.sqlite"
        jobdir = ("-s", f"JOBDIR={tmp_path / 'job'}", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1")
        # The pages after the first 5 are held until the crawl has taken the stop: it stops with most of them queued.
        stopping = site.hold_articles(after=5, until=threading.Event())
        log = tmp_path / "crawl.log"
        crawl = start_crawl(sites, db, *jobdir, log=log)
        try:
            wait_for(lambda: sum(n for p, n in site.served.items() if p.startswith("/a/")) >= 5, 120)
            crawl.send_signal(signal.SIGTERM)  # one SIGTERM: Scrapy's clean stop writes the queue's state
            wait_for(lambda: "Received SIGTERM, shutting down gracefully" in log.read_text(encoding="utf-8"), 60)
        finally:
            stopping.set()  # the page in flight is let finish, as a clean stop does
        crawl.wait(timeout=120)
        assert not (tmp_path / "job" / MARKER).exists()
        result = run_crawl(sites, db, *jobdir, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Resuming crawl (" in result.stderr and jobdir_warnings(result.stderr) == []
        assert site.served["/list/1.html"] == 2  # the start page again: it is fetched every run
        assert_every_article_stored_once(site, db)


def test_the_marker_is_kept_from_open_to_clean_close_and_a_torn_one_still_counts(tmp_path):
    guard = JobdirGuard(tmp_path / "job")
    assert guard.unclean() is None
    guard.mark_open()
    assert set(guard.unclean()) == {"pid", "started"}
    guard.mark_closed()
    assert guard.unclean() is None
    guard.marker.write_text('{"pid": 12')  # killed while writing it
    assert guard.unclean() == {}
