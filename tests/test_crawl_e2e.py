"""End to end, as a user runs it: ``scrapy crawl portal`` against the local demo portal, twice.

The demo server (our own content, four portals, one in GBK, one page with a lying charset)
runs in this process on 127.0.0.1; each crawl is a real ``scrapy crawl`` subprocess from the
project root writing to SQLite; the checks read the store and the server's request log.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from urllib.parse import urlsplit

import pytest

from conftest import REPO_ROOT
from faultsite import FaultSite, alive, kill, outcomes, run_crawl as run_fault_crawl, start_crawl, wait_for, worker_pids
from newsdedup.demo.content import load_manifest
from newsdedup.demo.server import DemoPortalServer

RELATED_HEADINGS = ("相关阅读", "相关新闻", "延伸阅读", "推荐阅读", "热门推荐", "猜你喜欢", "热点新闻")


def crawl_command(sites_file, db, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites_file}",
        "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{db}",
        "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "NEWSDEDUP_WORKERS=1",
        "-s", "TELNETCONSOLE_ENABLED=False", "-s", "LOG_LEVEL=INFO", *extra,
    ]


def run_crawl(sites_file, db, *extra: str) -> str:
    result = subprocess.run(
        crawl_command(sites_file, db, *extra), cwd=REPO_ROOT, capture_output=True, text=True, timeout=240
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    return result.stderr


def export(db) -> list[dict]:
    result = subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", "export", "--storage", f"sqlite:///{db}"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    )
    return [json.loads(line) for line in result.stdout.splitlines()]


def check_stories(rows: list[dict], pages: dict) -> None:
    """Each true story is stored once as unique; every other page of it points into its cluster."""
    by_story: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_story[pages[urlsplit(row["url"]).path]["story"]].append(row)
    for story, story_rows in by_story.items():
        uniques = [r for r in story_rows if r["status"] == "unique"]
        assert len(uniques) == 1, (story, [(r["url"], r["status"], r["duplicate_of"]) for r in story_rows])
        head = uniques[0]
        for row in story_rows:
            if row is head:
                continue
            assert row["cluster_id"] == head["cluster_id"], (story, row)
            assert pages[urlsplit(row["duplicate_of"]).path]["story"] == story, (story, row)
            assert row["status"] in ("near_duplicate", "exact_duplicate"), row
            if row["status"] == "near_duplicate":
                assert 0 < row["similarity"] < 1, row


@pytest.fixture()
def portal(tmp_path):
    with DemoPortalServer(day=1) as server:
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(server.sites_toml(), encoding="utf-8")
        yield server, sites_file


def test_two_scheduled_runs_store_each_story_once_and_tag_every_reprint(portal, tmp_path):
    server, sites_file = portal
    manifest = load_manifest()
    pages = manifest["pages"]
    db = tmp_path / "news.sqlite"

    # Day 1.
    run_crawl(sites_file, db)
    day1 = manifest["by_day"][1]
    rows = export(db)
    stored_paths = {urlsplit(r["url"]).path for r in rows}
    assert stored_paths == set(day1["new_article_pages"])
    check_stories(rows, pages)
    statuses = [r["status"] for r in rows]
    assert statuses.count("unique") == day1["unique"]
    assert statuses.count("exact_duplicate") >= 1 and statuses.count("near_duplicate") >= 1
    conn = sqlite3.connect(db)
    skipped = {urlsplit(url).path: reason for url, reason in conn.execute("SELECT url, reason FROM skipped")}
    expected_skips = {p: r for p, r in day1["skipped"].items() if r != "http_404"}
    assert skipped == expected_skips
    for path in day1["not_fetched"]:  # behind robots.txt
        assert server.requests_served[path] == 0

    for row in rows:
        page = pages[urlsplit(row["url"]).path]
        assert not any(h in row["text"] for h in RELATED_HEADINGS), row["url"]
        assert "\ufffd" not in row["text"] and "\ufffd" not in (row["title"] or ""), row["url"]  # GBK, lying meta
        if page["kind"] == "original":
            assert row["title"] == page["title"]
            assert row["published_at"] == page["published"]
            assert row["source"] == page["source"]

    # Day 2: list pages change, day-1 articles must not be fetched again.
    server.set_day(2)
    log = run_crawl(sites_file, db)
    day2 = manifest["by_day"][2]
    for path in day1["new_article_pages"]:
        assert server.requests_served[path] == 1, path
    assert "newsdedup/urlfilter/filtered" in log
    rows = export(db)
    assert {urlsplit(r["url"]).path for r in rows} == set(day1["new_article_pages"]) | set(day2["new_article_pages"])
    check_stories(rows, pages)
    assert [r["status"] for r in rows].count("unique") == day2["unique"]
    new_rows = [r for r in rows if urlsplit(r["url"]).path in day2["new_article_pages"]]
    reprints = [r for r in new_rows if pages[urlsplit(r["url"]).path]["kind"].endswith("reprint")]
    assert reprints and all(r["status"] != "unique" for r in reprints)
    # A day-2 reprint is matched to a page stored by the first run.
    assert all(urlsplit(r["duplicate_of"]).path in day1["new_article_pages"] for r in reprints)


# A site of 150 articles: 1-120 distinct stories, 121-150 reprints of 1-30 (even: exact, odd: near).
REPRINTS = {n: (n - 120, "exact" if n % 2 == 0 else "near") for n in range(121, 151)}


def _number(path: str) -> int:
    return int(path.rsplit("/", 1)[1].split(".")[0])


def _story(path: str) -> int:
    n = _number(path)
    return REPRINTS.get(n, (n, ""))[0]


def check_crash_consistency(site: FaultSite, db, *, complete: bool) -> None:
    """No URL in two tables, no story stored as new twice, every reprint pointing into its own story;
    ``complete``: every article page of the site is recorded."""
    found = outcomes(db)
    assert all(len(where) == 1 for where in found.values()), {u: w for u, w in found.items() if len(w) > 1}
    if complete:
        assert sorted(found) == sorted(site.url(p) for p in site.article_paths)
    elif not found:
        return  # killed before anything was committed
    with sqlite3.connect(db) as conn:
        check_story_rows(conn, _story)


def check_story_rows(conn, story) -> None:
    """On an open store connection (SQLite or PostgreSQL): no story (``story(path)``) stored as new twice,
    every near duplicate and repeat pointing into its own story's cluster."""
    articles = conn.execute("SELECT url, status, duplicate_of, cluster_id, id FROM articles").fetchall()
    repeats = conn.execute("SELECT url, repeat_of FROM repeats").fetchall()
    by_story: dict[int, list[str]] = defaultdict(list)
    cluster_story = {}
    for url, status, duplicate_of, cluster_id, article_id in articles:
        if status == "unique":
            by_story[story(urlsplit(url).path)].append(url)
            cluster_story[article_id] = story(urlsplit(url).path)
    assert all(len(urls) == 1 for urls in by_story.values()), {s: u for s, u in by_story.items() if len(u) > 1}
    for url, status, duplicate_of, cluster_id, _ in articles:
        if status != "unique":
            assert story(urlsplit(duplicate_of).path) == story(urlsplit(url).path), (url, duplicate_of)
            assert cluster_story[cluster_id] == story(urlsplit(url).path), (url, cluster_id)
    for url, repeat_of in repeats:
        assert story(urlsplit(repeat_of).path) == story(urlsplit(url).path), (url, repeat_of)


def test_kill_9_at_five_random_moments_then_the_same_command_loses_nothing_and_stores_nothing_twice(tmp_path):
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)
    # 0.1 s a page at 8 requests at a time: the crawl records about 80 pages a second. At 0.01 s an idle machine
    # recorded all 150 within 0.4 s of the first commit, inside the kill's random delay: no kill left a partial crawl
    # (1 full suite run in 3).
    with FaultSite(150, per_list=50, reprints=REPRINTS, article_delay=0.1) as site:
        sites = site.write_sites(tmp_path)
        db = tmp_path / "news.sqlite"
        moments = []
        for attempt in range(5):
            # Batches of 10: each kill finds committed batches of this crawl and a pending one it loses (with
            # batches of 1 nothing is ever pending; with the default 100 a crawl of 150 pages commits once).
            crawl = start_crawl(sites, db, "-s", "NEWSDEDUP_STORAGE_BATCH_SIZE=10", workers=2,
                                log=tmp_path / f"crawl{attempt}.log")
            # The moment is one of progress, not of the clock (a crawl's start-up alone takes seconds on a loaded
            # machine, and a kill before the first commit tests nothing): once this crawl has recorded 1 to 20
            # more pages (five kills leave pages for the last run), and then up to a quarter second more.
            target = len(outcomes(db)) + rng.randint(1, 20)
            delay = rng.uniform(0.0, 0.25)
            moments.append((target, round(delay, 2)))
            workers: set[int] = set()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and crawl.poll() is None and len(outcomes(db)) < target:
                workers.update(worker_pids(crawl.pid))
                time.sleep(0.05)
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and crawl.poll() is None:
                workers.update(worker_pids(crawl.pid))
                time.sleep(0.05)
            kill(crawl.pid)  # the crawl process only, as the OOM killer or a crashed host would
            crawl.wait(timeout=30)
            # Its extraction workers die with it (no orphans).
            wait_for(lambda: not any(alive(pid) for pid in workers), 10)
            check_crash_consistency(site, db, complete=False)
            moments[-1] += (len(outcomes(db)),)  # pages recorded when it died
        assert any(0 < recorded < 150 for *_, recorded in moments), (seed, moments, "no kill left a partial crawl")
        result = run_fault_crawl(sites, db, workers=2)
        assert result.returncode == 0, (seed, moments, result.stderr[-3000:])
        check_crash_consistency(site, db, complete=True)
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0] + conn.execute(
                "SELECT COUNT(*) FROM repeats").fetchone()[0] == 150, (seed, moments)
        # Each pair's second page is caught by the right stage across restarts: an exact copy by the exact stage
        # (rebuilt from the store's fingerprints), a near copy by Single-Pass (rebuilt from its centres).
        found = outcomes(db)
        for copy, (original, kind) in REPRINTS.items():
            pair = [found[site.url(p)][0] for p in site.article_paths if _number(p) in (original, copy)]
            expected = ("repeats", "exact_duplicate") if kind == "exact" else ("articles", "near_duplicate")
            assert sorted(pair) == sorted([("articles", "unique"), expected]), (seed, moments, copy, pair)


def test_jobdir_resumes_after_kill_9_and_fetches_what_was_not_saved(tmp_path):
    with FaultSite(60) as site:
        sites = site.write_sites(tmp_path)
        db = tmp_path / "news.sqlite"
        # Small commit batches: the kill comes when some pages are saved and others fetched but not yet saved.
        jobdir = ("-s", f"JOBDIR={tmp_path / 'job'}", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2",
                  "-s", "NEWSDEDUP_STORAGE_BATCH_SIZE=5")
        # The pages after the first 17 are held until the crawl is killed: it dies with most pages not fetched, and
        # at most 15 saved (in batches of 5), however fast the machine.
        killed = site.hold_articles(after=17, until=threading.Event())
        crawl = start_crawl(sites, db, *jobdir, log=tmp_path / "crawl.log")
        try:
            wait_for(lambda: len(outcomes(db)) >= 10, 120)
        finally:
            kill(crawl.pid)
            crawl.wait(timeout=30)
            killed.set()
        served_before = dict(site.served)
        saved = set(outcomes(db))  # what the killed crawl committed before it died
        result = run_fault_crawl(sites, db, *jobdir)
        assert result.returncode == 0, result.stderr[-3000:]
        # The killed crawl's queue is not trusted (newsdedup/crawl/scheduler.py): one WARNING, counted, never a hang.
        assert "did not close cleanly" in result.stderr
        assert "'newsdedup/crawl/scheduler/unclean_shutdown': 1" in result.stderr
        # Every article page the killed crawl had not saved (never fetched, or fetched and lost with the process) is
        # fetched by the resumed one; a page it saved is not fetched again.
        unsaved = [p for p in site.article_paths if site.url(p) not in saved]
        assert saved and unsaved, "the kill came after the crawl had saved every page: nothing was left to resume"
        assert [p for p in unsaved if site.served[p] == served_before.get(p, 0)] == []
        assert [p for p in site.article_paths if site.url(p) in saved and site.served[p] != served_before[p]] == []
        assert site.served["/list/1.html"] == 2  # the start page again: it is fetched every run
        check = outcomes(db)
        assert sorted(check) == sorted(site.url(p) for p in site.article_paths)
        assert all(len(where) == 1 for where in check.values())


def test_a_broken_site_file_stops_the_crawl_with_a_message_naming_the_fix(tmp_path):
    sites_file = tmp_path / "sites.toml"
    sites_file.write_text(
        '[[site]]\nname = "x"\nstart_urls = ["http://127.0.0.1:9/"]\nallowed_domains = ["127.0.0.1"]\n'
        'article_url_patern = "a"\n',
        encoding="utf-8",
    )
    result = subprocess.run(crawl_command(sites_file, tmp_path / "db.sqlite"), cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "did you mean 'article_url_pattern'" in result.stderr


def _esimhash_state(db):
    from newsdedup.dedup.esimhash import ESimhashIndex

    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT data FROM state WHERE name = 'near/esimhash'").fetchone()
    assert row is not None, "no E-Simhash state saved"
    return ESimhashIndex.from_bytes(bytes(row[0]))


def test_esimhash_statistics_persist_across_runs(portal, tmp_path):
    server, sites_file = portal
    db = tmp_path / "news.sqlite"
    run_crawl(sites_file, db, "-s", "NEWSDEDUP_NEAR_METHOD=esimhash")
    saved = _esimhash_state(db)
    with sqlite3.connect(db) as conn:
        day1 = conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0]
    assert saved.statistics.documents == day1 > 0  # every stored article was counted
    # A mark no crawl makes: one document of a word no page holds. Restored, the statistics carry it on; rebuilt from
    # the stored articles (or started afresh), they would not.
    marker = "恢复标记词"
    saved.statistics.observe([marker])
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE state SET data = ? WHERE name = 'near/esimhash'", (saved.to_bytes(),))
    server.set_day(2)
    log = run_crawl(sites_file, db, "-s", "NEWSDEDUP_NEAR_METHOD=esimhash")
    assert "'newsdedup/near/known_centres'" in log
    rows = export(db)
    assert {r["method"] for r in rows if r["status"] != "exact_duplicate"} == {"esimhash"}
    with sqlite3.connect(db) as conn:
        day2 = conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0] - day1
    assert day2 > 0
    after = _esimhash_state(db).statistics
    assert after.document_frequency(marker) == 1
    assert after.documents == day1 + 1 + day2  # day 2's articles were added to the restored statistics
