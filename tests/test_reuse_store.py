"""The reuses table on both backends: written with its article, read back by the export and the report's query,
created in an older database by the schema 6 migration."""

from __future__ import annotations

import pytest
from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures
from test_storage import article, execute, rows

from newsdedup.storage import open_store
from newsdedup.storage.base import ReuseRecord
from newsdedup.storage.sql import SCHEMA_VERSION

SOURCE_TEXT = "原文第一段。" * 10 + "被引用的一段话在这里，共有二十多个字。" + "原文最后一段。"


def quoting(store, url: str, source, **extra):
    reuse = ReuseRecord(source.id, source.url, 19, 0.25, 0.2, ((4, 20, 60, 19, 19), (30, 5, 2, 5, 5)))
    return article(store, url, url.encode().ljust(16, b"-"), text="评论：" + "被引用的一段话在这里，共有二十多个字。",
                   reuses=(reuse,), **extra)


def test_reuses_are_stored_with_their_article_and_exported_and_reported(store_uri):
    with open_store(store_uri) as store:
        source = article(store, "http://a/1", b"a" * 16, text=SOURCE_TEXT, title="原文")
        store.add_article(source)
        page = quoting(store, "http://b/1", source, site="b", title="评论")
        store.add_article(page)
        assert store.article_text(source.id) == SOURCE_TEXT  # the open batch is read too
        assert store.article_text(10_000) is None
    with open_store(store_uri) as store:
        assert store.article_text(source.id) == SOURCE_TEXT
        exported = {row["url"]: row for row in store.iter_export()}
        assert exported["http://a/1"]["reuses"] == []
        assert exported["http://b/1"]["reuses"] == [{
            "source_url": "http://a/1", "source_cluster_id": source.id, "chars": 19, "fraction": 0.25,
            "source_fraction": 0.2, "passages": [
                {"start": 4, "length": 20, "source_start": 60, "source_length": 19, "chars": 19},
                {"start": 30, "length": 5, "source_start": 2, "source_length": 5, "chars": 5}], "basis": "arrival"}]
        assert ReuseRecord.from_dict(exported["http://b/1"]["reuses"][0]) == page.reuses[0]
        [stored] = store.iter_reuses()
        assert (stored.url, stored.site, stored.source_url, stored.source_title, stored.source_text) == (
            "http://b/1", "b", "http://a/1", "原文", SOURCE_TEXT)
        assert stored.passages == page.reuses[0].passages
        assert list(store.iter_reuses(sites=("elsewhere",))) == []
        assert len(list(store.iter_reuses(sites=("b",)))) == 1
        assert len(list(store.iter_reuses(query="被引用"))) == 1 and list(store.iter_reuses(query="没有")) == []
        assert list(store.iter_reuses(since="2099-01-01T00:00:00Z")) == []
        assert store.committed[("b", "reused")] == 0  # committed by the first store object, not this one


def test_an_article_whose_url_was_stored_before_adds_no_reuse_and_rows_are_not_duplicated(store_uri):
    with open_store(store_uri) as store:
        source = article(store, "http://a/1", b"a" * 16, text=SOURCE_TEXT)
        store.add_article(source)
        store.add_article(article(store, "http://b/1", b"b" * 16))  # stored without reuses
    with open_store(store_uri) as store:
        store.add_article(quoting(store, "http://b/1", source))  # the same URL again: the first record stays
        store.add_article(quoting(store, "http://c/1", source, site="c"))
        store.flush()
        assert store.committed[("c", "reused")] == 1 and store.committed[("demo", "reused")] == 0
    assert rows(store_uri, "SELECT a.url FROM reuses u JOIN articles a ON a.id = u.article_id") == [("http://c/1",)]


def test_a_schema_5_database_gets_the_reuses_table(store_uri):
    with open_store(store_uri) as store:
        store.add_article(article(store, "http://a/1", b"a" * 16, text=SOURCE_TEXT))
    statements = ["DROP TABLE reuses", "UPDATE meta SET value = '5' WHERE key = 'schema_version'"]
    execute(store_uri, statements)
    with open_store(store_uri) as store:
        [source] = store.iter_cluster_centres()
        store.add_article(quoting(store, "http://b/1", source))
    assert rows(store_uri, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert SCHEMA_VERSION == 8  # 7: the search index and alerts (tests/test_desk.py); 8: the reuses' basis
    assert rows(store_uri, "SELECT article_id, source_id, chars, basis FROM reuses") == [(2, 1, 19, "arrival")]


def test_a_schema_7_database_gets_the_basis_of_its_reuses(store_uri):
    with open_store(store_uri) as store:
        source = article(store, "http://a/1", b"a" * 16, text=SOURCE_TEXT)
        store.add_article(source)
        store.add_article(quoting(store, "http://b/1", source))
    # A version 7 database: its reuses table had no basis column.
    execute(store_uri, ["ALTER TABLE reuses DROP COLUMN basis",
                        "UPDATE meta SET value = '7' WHERE key = 'schema_version'"])
    with open_store(store_uri) as store:
        exported = {row["url"]: row for row in store.iter_export()}
    assert exported["http://b/1"]["reuses"][0]["basis"] == "arrival"  # rows of before: put in arrival order
    assert rows(store_uri, "SELECT value FROM meta WHERE key = 'schema_version'") == [("8",)]


def test_a_page_published_before_a_stored_story_that_quotes_it_is_its_source(store_uri):
    """The page arriving later carries the record of the stored story quoting it (``quoted_by``): the row written
    is that story's, and the export shows it on that story, with the basis that decided it."""
    with open_store(store_uri) as store:
        later = article(store, "http://b/1", b"b" * 16, text="评论：" + "被引用的一段话在这里，共有二十多个字。")
        store.add_article(later)
        reuse = ReuseRecord(later.id, later.url, 19, 0.25, 0.2, ((4, 20, 60, 19, 19),), basis="published",
                            quoted_by=True)
        earlier = article(store, "http://a/1", b"a" * 16, text=SOURCE_TEXT, reuses=(reuse,))
        store.add_article(earlier)
        store.flush()
        assert store.committed[("demo", "reused")] == 0  # the page quotes nothing
    assert rows(store_uri, "SELECT article_id, source_id, basis FROM reuses") == [(later.id, earlier.id, "published")]
    with open_store(store_uri) as store:
        exported = {row["url"]: row for row in store.iter_export()}
        [stored] = store.iter_reuses()
    assert exported["http://a/1"]["reuses"] == []
    [record] = exported["http://b/1"]["reuses"]
    assert (record["source_url"], record["basis"], record["passages"][0]["start"]) == ("http://a/1", "published", 4)
    assert (stored.url, stored.source_url, stored.basis) == ("http://b/1", "http://a/1", "published")


def test_a_reuse_crosses_redis_as_plain_data_in_a_page_and_in_a_verdict():
    """A distributed crawl carries reuses in the plain form (ReuseRecord.as_dict): inside an ArticlePage through the
    stream's JSON codec, and in the verdict the writer posts (json.dumps); the store's record comes back whole."""
    import json

    from newsdedup.crawl.items import ArticlePage
    from newsdedup.distributed import wire

    record = ReuseRecord(7, "http://a/7", 120, 0.31, 0.4, ((48, 126, 55, 124, 120),))
    page = ArticlePage("http://b/1", "b", b"", None, "2026-11-27T08:00:00+00:00", reuses=[record.as_dict()])
    codec = wire.stream_codec()
    assert codec.loads(codec.dumps(page)) == page
    verdict = json.loads(json.dumps(page.verdict()))
    assert [ReuseRecord.from_dict(reuse) for reuse in verdict["reuses"]] == [record]
    broken = ArticlePage("http://b/1", "b", b"", None, "2026-11-27T08:00:00+00:00", reuses=[record])
    with pytest.raises(wire.WireError):  # the record itself is no wire data: the page carries its plain form
        codec.dumps(broken)
