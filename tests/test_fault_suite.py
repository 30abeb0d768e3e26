"""The fault suite: each fault injected from outside into a real crawl (``scrapy crawl portal``, the project's crawl
command) of a local portal, on each store it applies to, then a recovery run; after it the store holds what a
clean crawl of the same portal holds: every article page once, in the same clusters.

The faults of a distributed crawl (a killed writer, Redis killed and restarted) are in tests/test_distributed.py,
those of the persisted dedup state in tests/test_state_crawl.py, those of the worker pool in tests/test_faults.py.

Each fault happens at a known point, whatever the machine's speed: one article page (``/a/HOLD``) is answered only
once the test has injected the fault, and the test waits until that page was asked for and until the crawl has
committed pages (a batch of 4) before injecting it.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import threading

import pytest

from faultsite import (
    FaultSite,
    assert_all_recorded,
    clusters,
    count,
    kill,
    run_crawl,
    start_crawl,
    storage_uri,
    wait_for,
)
from newsdedup.run.verdict import ExitCode
from newsdedup.storage import open_store
from server_fixtures import _serve, postgres, store_uri  # noqa: F401 - fixtures
from servers import PostgresServer

ARTICLES = 24
# Reprints of earlier articles, so the clusters are worth comparing: near ones (a sentence added) and exact ones.
# One reprint an original: a paragraph on three pages of one site is that site's template (extract/template.py).
REPRINTS = {7: (1, "near"), 12: (2, "exact"), 15: (3, "near"), 20: (5, "near"), 23: (6, "exact")}
HOLD = "/a/10.html"
# Small batches: the crawl has committed pages when the fault comes, and has more to commit after it.
BATCH = ("-s", "NEWSDEDUP_STORAGE_BATCH_SIZE=4", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2")


class HeldPortal(FaultSite):
    """The portal whose page ``HOLD`` is answered, the first time it is asked for, only after :meth:`release`."""

    def __init__(self) -> None:
        super().__init__(ARTICLES, per_list=8, reprints=REPRINTS)
        self.released = threading.Event()

        def held(served_before, path, site):
            if served_before == 0:
                self.released.wait(180)
            return None  # then the page as usual

        self.faults[HOLD] = held

    def release(self) -> None:
        self.released.set()


@pytest.fixture(scope="module")
def clean_clusters(tmp_path_factory) -> set[frozenset[str]]:
    """What a clean crawl of the portal stores, as clusters of URL paths (the ports differ from test to test)."""
    tmp = tmp_path_factory.mktemp("clean")
    with HeldPortal() as site:
        site.release()
        result = run_crawl(site.write_sites(tmp), tmp / "clean.sqlite", *BATCH)
        assert result.returncode == 0, result.stderr[-3000:]
        assert_all_recorded(site, tmp / "clean.sqlite")
        return paths_of(site, clusters(tmp / "clean.sqlite"))


def paths_of(site: FaultSite, groups: set[frozenset[str]]) -> set[frozenset[str]]:
    return {frozenset(url.removeprefix(site.base_url) for url in group) for group in groups}


def assert_recovered(site: HeldPortal, sites_file, db, clean: set[frozenset[str]]) -> None:
    """The recovery run completes, and the store then equals the clean crawl's."""
    result = run_crawl(sites_file, db, *BATCH)
    assert result.returncode == ExitCode.OK, result.stderr[-3000:]
    assert_all_recorded(site, db)
    assert paths_of(site, clusters(db)) == clean


def db_of(store_uri: str, tmp_path):
    """What faultsite's helpers take: a SQLite file's path, or the PostgreSQL URI."""
    return store_uri if store_uri.startswith("postgresql") else tmp_path / "db.sqlite"


def start_held(site: HeldPortal, tmp_path, db, **kwargs):
    """A crawl started and waited for until it committed pages and is held on ``HOLD``."""
    sites_file = site.write_sites(tmp_path)
    crawl = start_crawl(sites_file, db, *BATCH, log=tmp_path / "crawl.log", **kwargs)
    try:
        wait_for(lambda: site.served[HOLD] and count(db, "articles") >= 4, 180)
    except BaseException:
        site.release()
        kill(crawl.pid)
        raise
    return sites_file, crawl


def finished(crawl, site: HeldPortal, tmp_path) -> tuple[int, str]:
    site.release()
    code = crawl.wait(timeout=240)
    return code, (tmp_path / "crawl.log").read_text(encoding="utf-8")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_crawl_stopped_by_a_signal_is_interrupted_and_the_next_run_completes_it(tmp_path, store_uri, sig,
                                                                                   clean_clusters):
    db = db_of(store_uri, tmp_path)
    with HeldPortal() as site:
        sites_file, crawl = start_held(site, tmp_path, db)
        crawl.send_signal(sig)
        code, log = finished(crawl, site, tmp_path)
        assert code == ExitCode.INTERRUPTED, log[-3000:]
        assert "newsdedup run shutdown: exit status 7 (interrupted)" in log
        assert_recovered(site, sites_file, db, clean_clusters)


def test_a_second_crawl_at_once_exits_3_and_the_first_completes(tmp_path, store_uri, clean_clusters):
    db = db_of(store_uri, tmp_path)
    with HeldPortal() as site:
        sites_file, crawl = start_held(site, tmp_path, db)
        try:
            second = run_crawl(sites_file, db, *BATCH)
        finally:
            code, log = finished(crawl, site, tmp_path)
        assert second.returncode == ExitCode.DATABASE_IN_USE, second.stderr[-3000:]
        assert "in use by another crawl" in second.stderr and f"pid {crawl.pid}" in second.stderr
        assert code == ExitCode.OK, log[-3000:]
        assert_all_recorded(site, db)
        assert paths_of(site, clusters(db)) == clean_clusters


@pytest.fixture()
def own_postgres():
    """A PostgreSQL server of this test's own, to stop and kill."""
    yield from _serve(PostgresServer)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["stopped", "killed"])
def test_postgresql_gone_mid_run_is_not_saved_and_the_run_after_its_restart_completes(tmp_path, own_postgres, sig,
                                                                                      clean_clusters):
    db = own_postgres.create_database()
    with HeldPortal() as site:
        sites_file, crawl = start_held(site, tmp_path, db)
        own_postgres.halt(sig)
        code, log = finished(crawl, site, tmp_path)
        assert code == ExitCode.NOT_SAVED, log[-3000:]
        assert "the connection holding the run lock was lost; this crawl stops writing" in log
        assert "newsdedup run run_lock_lost: exit status 4 (not_saved)" in log, log[-3000:]
        assert "Traceback" not in log, log[-3000:]
        own_postgres.start()
        assert_recovered(site, sites_file, db, clean_clusters)


def _file_size_limit(limit: int):
    # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG, as on a full disk.
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_full_disk_during_a_sqlite_commit_is_not_saved_and_the_next_run_completes(tmp_path, clean_clusters):
    """The crawl's files may not grow past what the database and its state hold after its first commits (the
    disk is full from then on); the database stays intact and the next run stores the rest."""
    db = tmp_path / "db.sqlite"
    with HeldPortal() as site:
        site.release()
        sites_file = site.write_sites(tmp_path)
        with open_store(storage_uri(db)):
            pass  # the empty schema, written whole before the disk fills
        # Bytes a file may grow to: the database as it is, and a write-ahead log that holds a first batch or two of
        # the crawl but not the whole of it.
        limit = db.stat().st_size + 120_000
        crawl = start_crawl(sites_file, db, *BATCH, log=tmp_path / "crawl.log", preexec_fn=_file_size_limit(limit))
        code, log = finished(crawl, site, tmp_path)
        assert code == ExitCode.NOT_SAVED, log[-3000:]
        assert "newsdedup run finished: exit status 4 (not_saved)" in log
        assert storage_uri(db)  # the database opens and passes its check in the recovery run
        assert_recovered(site, sites_file, db, clean_clusters)


CRAWL_FROM_A_SCRIPT = """
import sys
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings
settings = Settings()
settings.setmodule("newsdedup.settings", priority="project")
settings.set("NEWSDEDUP_STORAGE_URI", sys.argv[1])
process = CrawlerProcess(settings)
process.crawl("portal", sites=sys.argv[2])
process.start()
"""


def test_a_crawl_that_finds_its_store_locked_when_it_opens_stops_with_that_error_only(tmp_path, store_uri):
    """The crawl command checks the lock before Scrapy starts; a crawl started otherwise (a user's script, or one
    that lost a race with another crawl) finds it taken when its pipelines open: it names the error, closes
    without judging or recording anything in a store that is not its own, and without an error of its own."""

    holder = open_store(store_uri)
    holder.open()
    holder.lock_for_run()
    try:
        with HeldPortal() as site:
            site.release()
            script = tmp_path / "crawl.py"
            script.write_text(CRAWL_FROM_A_SCRIPT, encoding="utf-8")
            result = subprocess.run([sys.executable, str(script), store_uri, str(site.write_sites(tmp_path))],
                                    cwd=tmp_path, capture_output=True, text=True, timeout=240)
            assert site.served["/list/1.html"] == 0
    finally:
        holder.close()
    assert "is in use by another crawl" in result.stderr
    assert "AttributeError" not in result.stderr and "newsdedup run " not in result.stderr, result.stderr[-3000:]
    assert count(store_uri if store_uri.startswith("postgresql") else store_uri[len("sqlite:///"):], "site_runs") == 0
