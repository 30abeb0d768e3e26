"""Scrapy's feed exports, as a Scrapy user runs them: ``scrapy crawl portal -O news.jsonl`` over the demo portal.

The feed has one line per article page the crawl stored or recorded as an exact repeat, with its verdict, in the
fields of ``newsdedup export``; on one process and on a distributed crawl of two (real Redis and PostgreSQL),
where the run's writer decides and each process's items wait for its verdict. What fails after newsdedup's
pipelines (a user's item pipeline, a feed exporter or storage) makes the run exit 8 (output_failed), with a
summary line naming it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import REPO_ROOT
from newsdedup.cli import EXPORT_FIELDS
from newsdedup.demo.content import load_manifest
from newsdedup.demo.server import DemoPortalServer
from newsdedup.settings import ITEM_PIPELINES
from server_fixtures import postgres, redis_server  # noqa: F401 - fixtures
from test_crawl_e2e import crawl_command, export, portal  # noqa: F401 - portal: a fixture
from test_distributed import export as dist_export

TESTS = Path(__file__).resolve().parent
VERDICT = ("status", "duplicate_of", "cluster_id", "similarity", "method", "score", "measure")


def feed_lines(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]  # every line is JSON, or this raises


def check_feed_is_the_store(lines: list[dict], rows: list[dict], stored_by_status: Counter) -> None:
    """One line per stored page or exact repeat, with the store's verdict on it; the export's fields, no more."""
    assert lines, "the feed is empty"
    assert all(set(line) == set(EXPORT_FIELDS) for line in lines), lines[0].keys()
    urls = [line["url"] for line in lines]
    assert len(urls) == len(set(urls)), "a page is in the feed twice"
    by_url = {row["url"]: row for row in rows}
    assert set(urls) == set(by_url)
    assert Counter(line["status"] for line in lines) == stored_by_status
    for line in lines:
        row = by_url[line["url"]]
        assert {k: line[k] for k in VERDICT} == {k: row[k] for k in VERDICT}, line["url"]
        assert line["text"] == row["text"] and line["title"] == row["title"], line["url"]
        story = {r["url"] for r in rows if r["cluster_id"] == line["cluster_id"]}
        assert line["origin_url"] in story, line  # the story's origin among the pages stored before it


def sqlite_counts(db: Path) -> Counter:
    conn = sqlite3.connect(db)
    counts = Counter(dict(conn.execute("SELECT status, COUNT(*) FROM articles GROUP BY status").fetchall()))
    counts["exact_duplicate"] = conn.execute("SELECT COUNT(*) FROM repeats").fetchone()[0]
    conn.close()
    return counts


def error_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "] ERROR:" in line]


def test_a_feed_has_one_line_per_article_page_with_its_verdict(portal, tmp_path):
    server, sites_file = portal
    db, feed = tmp_path / "news.sqlite", tmp_path / "news.jsonl"
    result = subprocess.run(crawl_command(sites_file, db, "-O", str(feed)), cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-4000:]
    assert not error_lines(result.stderr), error_lines(result.stderr)[:5]
    lines = feed_lines(feed)
    rows = export(db)
    check_feed_is_the_store(lines, rows, sqlite_counts(db))
    day1 = load_manifest()["by_day"][1]
    assert {urlsplit(line["url"]).path for line in lines} == set(day1["new_article_pages"])
    assert not {urlsplit(line["url"]).path for line in lines} & set(day1["skipped"])  # not articles: not in it
    statuses = Counter(line["status"] for line in lines)
    assert statuses == {"unique": day1["unique"], "near_duplicate": day1["edited_reprints"],
                        "exact_duplicate": day1["verbatim_reprints"]}
    assert f"Stored jsonl feed ({len(lines)} items)" in result.stderr


BROKEN_OUTPUTS = {
    "item pipeline": (
        # As a user adds one in the project's settings: after newsdedup's (-s replaces the whole setting).
        ["-s", "ITEM_PIPELINES=" + json.dumps({**ITEM_PIPELINES, "feed_helpers.RejectingPipeline": 950})],
        "problem: item pipeline feed_helpers.RejectingPipeline failed on {n} item(s) (ConnectionError: upload of",
    ),
    "feed exporter": (
        ["-s", 'FEED_EXPORTERS={"jsonl": "feed_helpers.BrokenJsonLinesExporter"}'],
        "problem: signal handler FeedExporter.item_scraped failed on {n} item(s) (TypeError: Object of type bytes",
    ),
    "feed storage": (
        ["-s", 'FEED_STORAGES={"": "feed_helpers.UnwritableFeedStorage", "file": "feed_helpers.UnwritableFeedStorage"}'],
        "problem: 1 feed(s) could not be stored by UnwritableFeedStorage",
    ),
}


@pytest.mark.parametrize("broken", sorted(BROKEN_OUTPUTS))
def test_what_fails_after_our_pipelines_fails_the_run(portal, tmp_path, broken):
    server, sites_file = portal
    settings, problem = BROKEN_OUTPUTS[broken]
    db = tmp_path / "news.sqlite"
    result = subprocess.run(
        crawl_command(sites_file, db, "-a", "site=xinghe", "-O", str(tmp_path / "news.jsonl"), *settings),
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))},
    )
    stored = sum(sqlite_counts(db).values())
    manifest = load_manifest()
    xinghe = [path for path in manifest["by_day"][1]["new_article_pages"]
              if manifest["pages"][path]["portal"] == "xinghe"]
    assert stored == len(xinghe) == 5, result.stderr[-4000:]  # every page safe in the store, whatever failed after it
    assert result.returncode == 8, result.stderr[-4000:]
    assert problem.format(n=stored) in result.stderr, result.stderr[-3000:]
    assert "exit status 8 (output_failed)" in result.stderr


def test_a_distributed_crawl_s_feeds_carry_the_writer_s_verdicts(tmp_path, postgres, redis_server):  # noqa: F811
    """Two processes, each with its own feed: together one line per page, each with the verdict the run's writer
    gave it (the process that fetched a page waits for it), the store's."""
    from test_distributed import finish, start_workers

    servers = (postgres.create_database(f"feed_{uuid.uuid4().hex[:8]}"), redis_server.url, f"t{uuid.uuid4().hex[:8]}")
    with DemoPortalServer(day=1) as server:
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(server.sites_toml(), encoding="utf-8")
        feeds = [tmp_path / "w1.jsonl", tmp_path / "w2.jsonl"]
        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        # As test_distributed's run: few requests at a time, so that both processes take part.
        processes = [start_workers(sites_file, servers, [log], "-O", str(feed), "-s", "CONCURRENT_REQUESTS=2",
                                   "-s", "DOWNLOAD_DELAY=0.25", "-s", "DOWNLOAD_DELAY_JITTER=0")[0]
                     for feed, log in zip(feeds, logs)]
        texts = finish(processes, logs)
    for text in texts:
        assert not error_lines(text), error_lines(text)[:5]
    per_process = [feed_lines(feed) for feed in feeds]
    assert all(per_process), "a process wrote no line: the test did not see a page decided by another's writer"
    rows = dist_export(servers[0])
    check_feed_is_the_store(per_process[0] + per_process[1], rows, Counter(row["status"] for row in rows))
    assert {urlsplit(row["url"]).path for row in rows} == set(load_manifest()["by_day"][1]["new_article_pages"])


def test_a_verdict_waited_for_arrives_once_posted_and_a_stopping_process_stops_waiting(redis_server):  # noqa: F811
    """The verdict board on real Redis: a publisher gets the verdict the writer posts, which leaves the board;
    give_up() (a process stopped long enough) ends the waits with None."""
    import asyncio

    from newsdedup.distributed.redis_run import VerdictBoard, connect

    board = VerdictBoard(connect(redis_server.url), f"t{uuid.uuid4().hex[:8]}:verdicts")

    async def scenario():
        first = asyncio.ensure_future(board.wait("1-0"))
        second = asyncio.ensure_future(board.wait("2-0"))
        while board.waiting() < 2:  # both waits registered: they run as soon as this task yields
            await asyncio.sleep(0)
        assert not first.done() and not second.done()  # nothing posted: still waiting
        board.post({"1-0": {"status": "unique", "cluster_id": 7}})
        assert await first == {"status": "unique", "cluster_id": 7}
        assert not board.client.hexists(board.key, "1-0")  # taken off the board
        assert not second.done()
        board.give_up()
        assert await second is None and board.waiting() == 0

    asyncio.run(scenario())
