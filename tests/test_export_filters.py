"""`newsdedup export` filters (--since, --site, --status, --cluster, --fields) and --incremental, on SQLite and
PostgreSQL (part of the store contract)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from local_site import newsdedup
from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures
from newsdedup.dedup.status import NEAR_DUPLICATE
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleRecord, RepeatRecord


def _article(store, url, fetched, **extra):
    article_id = store.new_article_id()
    fields = dict(id=article_id, url=url, site=url.split("/")[2], title="题", text="正文" + url,
                  published_at=None, author=None, source=None, canonical_url=url, fetched_at=fetched,
                  fingerprint=url.encode(), cluster_id=article_id, method="spotsigs")
    fields.update(extra)
    record = ArticleRecord(**fields)
    store.add_article(record)
    return record


@pytest.fixture()
def db(store_uri):
    with open_store(store_uri) as store:
        first = _article(store, "http://a/1", "2026-11-10T00:00:00+00:00")
        _article(store, "http://b/1", "2026-11-20T00:00:00+00:00", status=NEAR_DUPLICATE, duplicate_of=first.url,
                 cluster_id=first.id, similarity=0.8)
        _article(store, "http://a/2", "2026-11-21T00:00:00+00:00")
        store.add_repeat(RepeatRecord("http://c/1", "c", "转", None, None, None, None, "2026-11-22T00:00:00+00:00",
                                      first.fingerprint, first.url))
    return store_uri


def export(db, *args):
    result = newsdedup("export", "--storage", db, *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def urls(rows):
    return [row["url"] for row in rows]


def test_filters_combine(db):
    rows, _ = export(db)
    assert urls(rows) == ["http://a/1", "http://b/1", "http://a/2", "http://c/1"]  # fetch order
    assert rows[0]["fetched_at"] == "2026-11-10T00:00:00+00:00" and rows[3]["origin_url"] == "http://a/1"
    assert urls(export(db, "--since", "2026-11-20T08:00")[0]) == ["http://b/1", "http://a/2", "http://c/1"]
    assert urls(export(db, "--site", "a", "--site", "c")[0]) == ["http://a/1", "http://a/2", "http://c/1"]
    assert urls(export(db, "--status", "near_duplicate,exact_duplicate")[0]) == ["http://b/1", "http://c/1"]
    assert urls(export(db, "--status", "unique")[0]) == ["http://a/1", "http://a/2"]
    assert urls(export(db, "--cluster", str(rows[0]["cluster_id"]))[0]) == ["http://a/1", "http://b/1", "http://c/1"]
    lean, _ = export(db, "--fields", "url,status,fetched_at")
    assert lean[1] == {"url": "http://b/1", "status": "near_duplicate", "fetched_at": "2026-11-20T00:00:00+00:00"}


@pytest.mark.parametrize(("args", "message"), [
    (("--fields", "url,body"), "unknown field(s) body"),
    (("--fields", ""), "no field given"),
    (("--status", "dup"), "unknown status dup"),
    (("--since", "last week"), "not a date or time"),
])
def test_bad_filters_are_one_line_errors(db, args, message):
    result = newsdedup("export", "--storage", db, *args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_incremental_exports_only_what_is_new_per_consumer(db):
    first, _ = export(db, "--incremental")
    assert len(first) == 4
    assert export(db, "--incremental")[0] == []
    with open_store(db) as store:  # the next crawl stores more
        _article(store, "http://d/1", "2026-11-23T00:00:00+00:00")
        store.add_repeat(RepeatRecord("http://e/1", "e", "转", None, None, None, None, "2026-11-23T00:00:01+00:00",
                                      b"http://a/2", "http://a/2"))
    new, log = export(db, "--incremental")
    assert urls(new) == ["http://d/1", "http://e/1"] and "new since the last --incremental default export" in log
    assert len(export(db, "--incremental", "archive")[0]) == 6  # another consumer has its own position
    assert export(db, "--incremental")[0] == []


def test_a_reader_that_goes_away_ends_the_export_quietly_and_keeps_the_position(db):
    """`newsdedup export --incremental | head`: no traceback, the status of a process SIGPIPE ended, and the
    incremental position not moved (what the reader did not take is exported again)."""
    command = [sys.executable, "-m", "newsdedup.cli", "export", "--storage", db, "--incremental"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the first line is written
    stderr = process.communicate(timeout=120)[1].decode()
    assert process.returncode == 141 and "Traceback" not in stderr, stderr
    assert len(export(db, "--incremental")[0]) == 4
