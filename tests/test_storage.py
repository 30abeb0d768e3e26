"""SQLite store: schema, batching, durability of committed batches, idempotent re-runs."""

from __future__ import annotations

import sqlite3

import pytest

from newsdedup.storage import open_store
from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE
from newsdedup.storage.base import ArticleRecord, RepeatRecord, SkippedRecord


def article(store, url, fingerprint, **extra):
    article_id = store.new_article_id()
    fields = dict(
        id=article_id, url=url, site="demo", title="标题", text="正文" + url, published_at="2026-11-20T08:30:00+08:00",
        author="张三", source="新华社", canonical_url=url, fetched_at="2026-11-21T00:00:00+00:00",
        fingerprint=fingerprint, cluster_id=article_id, method="hybrid", simhash=2**64 - 1,
    )
    fields.update(extra)
    return ArticleRecord(**fields)


def test_round_trip_with_unsigned_simhash_and_export(tmp_path):
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with open_store(uri, batch_size=2) as store:
        first = article(store, "http://a/1", b"f" * 16)
        store.add_article(first)
        store.add_article(article(store, "http://b/2", b"g" * 16, status=NEAR_DUPLICATE,
                                  duplicate_of="http://a/1", cluster_id=first.id, similarity=0.8))
        store.add_repeat(RepeatRecord("http://c/3", "c", "转载", None, None, "新华社", None,
                                      "2026-11-21T00:00:01+00:00", b"f" * 16, "http://a/1"))
        store.add_skipped(SkippedRecord("http://c/list", "c", "list_page", "many links", "2026-11-21T00:00:02+00:00"))
    with open_store(uri) as store:
        centres = list(store.iter_cluster_centres())
        assert [c.url for c in centres] == ["http://a/1"]
        assert centres[0].simhash == 2**64 - 1  # stored signed, read back unsigned
        rows = list(store.iter_export())
        assert [r["status"] for r in rows] == ["unique", NEAR_DUPLICATE, EXACT_DUPLICATE]
        repeat = rows[2]
        assert repeat["duplicate_of"] == "http://a/1" and repeat["text"] == "正文http://a/1"
        assert repeat["cluster_id"] == first.id and repeat["similarity"] == 1.0
        assert sorted(store.iter_fetched_urls()) == ["http://a/1", "http://b/2", "http://c/3", "http://c/list"]
        counts = store.counts()
        assert (counts.articles, counts.repeats, counts.skipped, counts.clusters_with_duplicates) == (2, 1, 1, 1)
        assert counts.skipped_by_reason == {"list_page": 1}


def test_pending_batch_is_visible_to_lookups_and_ids_continue(tmp_path):
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with open_store(uri, batch_size=100) as store:
        record = article(store, "http://a/1", b"x" * 16)
        store.add_article(record)
        ref = store.find_by_fingerprint(b"x" * 16)  # not committed yet
        assert ref is not None and ref.url == "http://a/1"
        assert store.url_of(record.id) == "http://a/1"
    with open_store(uri) as store:
        assert store.find_by_fingerprint(b"x" * 16).id == record.id
        assert store.new_article_id() == record.id + 1


def test_rerun_does_not_duplicate_rows(tmp_path):
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    for _ in range(2):
        with open_store(uri) as store:
            store.add_article(article(store, "http://a/1", b"x" * 16))
            store.add_skipped(SkippedRecord("http://a/v", "a", "video", "", "t"))
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM skipped").fetchone()[0] == 1


def test_committed_batches_survive_a_crash_and_wal_is_on(tmp_path):
    path = tmp_path / "db.sqlite"
    store = open_store(f"sqlite:///{path}", batch_size=2)
    store.open()
    for i in range(5):
        store.add_article(article(store, f"http://a/{i}", bytes([i]) * 16))
    # Simulate a killed process: no close(), no flush of the open batch.
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT COUNT(*) FROM articles").fetchone()[0] == 4  # the fifth is the open batch


@pytest.mark.parametrize("uri", ["sqlite://", "mysql://x/y", "postgresql://localhost/news"])
def test_bad_uris_name_the_fix(uri):
    with pytest.raises(ValueError, match="sqlite:///"):
        open_store(uri)


def test_named_state_blobs_persist_and_replace(tmp_path):
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with open_store(uri) as store:
        assert store.load_state("esimhash") is None
        store.save_state("esimhash", b"v1")
        store.save_state("esimhash", b"v2")
    with open_store(uri) as store:
        assert store.load_state("esimhash") == b"v2"
