"""The persisted dedup state in real crawls (``scrapy crawl portal`` subprocesses against local sites): killed with
``kill -9`` while it writes and restarted, the state the crawl leaves equals a rebuild from the store; and a crawl
with the state decides every page as one that rebuilds its indexes at each start."""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

from faultsite import FaultSite, count, kill, rows, run_crawl, start_crawl, wait_for
from newsdedup.crawl.dupefilter import url_key
from newsdedup.dedup.durable import read_manifest
from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.dedupstore.state import WindowState
from newsdedup.demo.server import DemoPortalServer
from newsdedup.run import retention
from newsdedup.storage import open_store
from state_helpers import export, rebuilt_centres, rebuilt_fingerprints, saved_state, stored_urls

# 90 articles: 1-70 distinct stories, 71-90 reprints of 1-20 (even: exact, odd: near), fetched last.
REPRINTS = {n: (n - 70, "exact" if n % 2 == 0 else "near") for n in range(71, 91)}


def recorded(db) -> int:
    return count(db, "articles") + count(db, "repeats")


def test_kill_9_while_writing_then_a_restart_leaves_the_state_equal_to_a_rebuild(tmp_path):
    with FaultSite(90, per_list=30, reprints=REPRINTS) as site:
        sites = site.write_sites(tmp_path)
        db = tmp_path / "news.sqlite"
        state = tmp_path / "news.sqlite.state"
        # The pages after the first 40 are held until the crawl is killed: it cannot have recorded them all.
        killed = site.hold_articles(after=40, until=threading.Event())
        crawl = start_crawl(sites, db, "-s", "NEWSDEDUP_STORAGE_BATCH_SIZE=5", log=tmp_path / "killed.log")
        try:
            # Killed at a moment of progress, not of the clock: once 20 pages are committed, whatever the machine's
            # speed.
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and crawl.poll() is None and recorded(db) < 20:
                time.sleep(0.05)
            kill(crawl.pid)
            crawl.wait(timeout=30)
        finally:
            killed.set()
        assert 20 <= recorded(db) < 90, "the crawl was not killed while it wrote"

        # The state the killed crawl left, opened as the next crawl opens it (a copy: the restart opens the original).
        since = retention.window_start(30)
        shutil.copytree(state, tmp_path / "copy")
        with open_store(f"sqlite:///{db}") as store:
            window, report = WindowState.open(tmp_path / "copy", store, FeatureConfig(), NearSettings(),
                                              exact_error_rate=1e-3, retention_days=30, since=since)
            assert not report.rebuilt
            assert window.near.documents() == rebuilt_centres(store, since=since)
            assert all(fingerprint in window.exact for fingerprint in rebuilt_fingerprints(store, since=since))
            window.close()

        result = run_crawl(sites, db)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "'newsdedup/state/rebuilt': 0" in result.stderr  # opened, not rebuilt
        assert recorded(db) == 90

        # What the finished crawl saved, read as is: everything the store holds, nothing else.
        marks, index, exact, urls = saved_state(state)
        with open_store(f"sqlite:///{db}") as store:
            assert marks == {"articles": store.last_article_id(), "repeats": store.last_repeat_id()}
            centres = rebuilt_centres(store, since=since)
            assert index.documents() == centres and len(centres) == 70
            assert all(fingerprint in exact for fingerprint in rebuilt_fingerprints(store, since=since))
            assert all(url_key(url) in urls for url in stored_urls(store))
        index.close()


def test_a_crawl_with_the_persisted_state_decides_as_one_that_rebuilds_it(tmp_path):
    decided = {}
    for state in ("auto", "none"):
        db = tmp_path / f"{state}.sqlite"
        with DemoPortalServer(day=1) as server:
            sites_file = tmp_path / "sites.toml"
            sites_file.write_text(server.sites_toml(), encoding="utf-8")
            for day in (1, 2):  # the second day's crawl opens the state the first left
                server.set_day(day)
                result = run_crawl(sites_file, db, "-s", f"NEWSDEDUP_STATE_DIR={state}")
                assert result.returncode == 0, result.stderr[-3000:]
                decided[state, day] = export(db)
                if state == "auto" and day == 2:
                    assert "'newsdedup/state/rebuilt': 0" in result.stderr
    assert (tmp_path / "auto.sqlite.state" / "window.json").exists()
    assert not (tmp_path / "none.sqlite.state").exists()
    # The same stories; the second day's pages, decided against the first day's stories, decided alike.
    assert {story for *_, story in decided["auto", 2].values()} == {story for *_, story in decided["none", 2].values()}
    second_day = set(decided["none", 2]) - set(decided["none", 1])
    assert second_day and second_day == set(decided["auto", 2]) - set(decided["auto", 1])
    assert {url: decided["auto", 2][url] for url in second_day} == {url: decided["none", 2][url] for url in second_day}
    statuses = {decided["auto", 2][url][0] for url in second_day}
    assert {"unique", "near_duplicate", "exact_duplicate"} <= statuses



def saved_reuse_mark(state) -> int | None:
    """The store mark of the passage-reuse snapshot in the state folder ``state`` (None: none saved yet)."""
    try:
        return read_manifest(state / "reuse" / "meta.json")["mark"]
    except FileNotFoundError:
        return None


def stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "tT"


def test_a_crawl_killed_after_a_periodic_save_of_the_reuse_index_reads_back_only_the_stories_stored_since(tmp_path):
    """The passage-reuse snapshot is saved while the crawl commits, not only when it closes: killed with kill -9
    after a save, the next start reads the stories stored after the save's mark, not every story stored."""
    permits = threading.Semaphore(0)  # an article page is answered once the test lets it through

    def one_at_a_time(count, path, site):
        permits.acquire(timeout=300)
        return None  # then the page as usual

    # Pages go through one at a time, each committed on its own, until a periodic save (due 10 s after the start, at
    # a commit) has left three or more stories after its mark: a moment of progress, whatever the machine's speed.
    # The crawl is stopped (SIGSTOP) while the saved snapshot is read, so no save lands between that and the kill.
    with FaultSite(400, per_list=200) as site:  # two list pages: every article within DEPTH_LIMIT
        for path in site.article_paths:
            site.faults[path] = one_at_a_time
        sites = site.write_sites(tmp_path)
        db = tmp_path / "news.sqlite"
        state = tmp_path / "news.sqlite.state"
        log = tmp_path / "killed.log"
        crawl = start_crawl(sites, db, "-s", "NEWSDEDUP_STORAGE_BATCH_SIZE=1",
                            "-s", "NEWSDEDUP_EXTRACT_SITE_TEMPLATES=False", log=log)  # no page held for a template
        mark = None
        try:
            for released in range(1, len(site.article_paths)):
                permits.release()
                wait_for(lambda: crawl.poll() is not None or count(db, "articles") >= released, 120)
                assert crawl.poll() is None, log.read_text()[-3000:]
                os.kill(crawl.pid, signal.SIGSTOP)
                wait_for(lambda: stopped(crawl.pid), 30)
                mark = saved_reuse_mark(state)
                if mark is not None and released - mark >= 3:
                    break
                os.kill(crawl.pid, signal.SIGCONT)
            else:
                raise AssertionError("no periodic save of the passage-reuse index")
        finally:
            kill(crawl.pid)  # stopped or not
            crawl.wait(timeout=30)
            site.faults.clear()
            for _ in site.article_paths:
                permits.release()  # the requests the killed crawl left waiting
        stored = count(db, "articles")
        after_mark = rows(db, "SELECT COUNT(*) FROM articles WHERE id > ? AND status = 'unique'", mark)[0][0]
        assert stored == released and mark > 0 and after_mark >= 3

        result = run_crawl(sites, db, "-s", "NEWSDEDUP_EXTRACT_SITE_TEMPLATES=False")
        assert result.returncode == 0, result.stderr[-3000:]
    # Opened from the killed crawl's last save and caught up with the stories stored after it, only those.
    assert re.findall(r"'newsdedup/state/reuse_stories_read': (\d+)", result.stderr) == [str(after_mark)], \
        result.stderr[-3000:]
    assert re.search(rf"passage-reuse index opened from .* \(0 rolled back, 0 left the window, 0 back in it, "
                     rf"{after_mark} stored since\)", result.stderr), result.stderr[-3000:]
    assert count(db, "articles") == len(site.article_paths)
