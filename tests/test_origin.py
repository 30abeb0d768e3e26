"""Origin by publication time: dating rules, and the store's clusters rows as copies arrive in any order."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import pytest

from local_site import check_store_consistent
from newsdedup.dedup.status import NEAR_DUPLICATE
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleRecord, RepeatRecord
from newsdedup.storage.origin import FETCHED, PUBLISHED, PUBLISHED_DAY, date_of, earliest
from newsdedup.storage.sqlite import SCHEMA_VERSION, SQLiteStore
from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures

FETCH = "2026-11-16T06:00:00+00:00"  # 14:00 China time


@pytest.mark.parametrize(
    ("published", "url", "expected"),
    [
        ("2026-11-16T08:40:00+08:00", None, ("2026-11-16T00:40:00+00:00", PUBLISHED)),
        ("2026-11-16T14:05:00+08:00", None, (FETCH, PUBLISHED)),  # 5 min fast: a server clock, capped at the fetch
        ("2026-11-16T15:00:00+08:00", None, (FETCH, FETCHED)),  # an hour after the fetch: not a publication time
        (None, None, (FETCH, FETCHED)),
        ("garbage", None, (FETCH, FETCHED)),
        ("1993-05-01T10:00:00+08:00", None, (FETCH, FETCHED)),  # before the Chinese web
        ("2010-05-01T10:00:00+08:00", "https://www.thepaper.cn/newsDetail_forward_1", (FETCH, FETCHED)),
        ("2010-05-01T10:00:00+08:00", "https://news.sina.com.cn/c/x.shtml", ("2010-05-01T02:00:00+00:00", PUBLISHED)),
        ("2026-11-15T00:00:00+08:00", None, ("2026-11-15T15:59:59+00:00", PUBLISHED_DAY)),  # the day's last second
        ("2026-11-16T00:00:00+08:00", None, (FETCH, PUBLISHED_DAY)),  # today: no later than the fetch
        ("2026-11-16T02:21:00Z", None, ("2026-11-16T02:21:00+00:00", PUBLISHED)),
    ],
)
def test_when_a_page_counts_as_published(published, url, expected):
    dated = date_of(published, FETCH, url)
    assert (dated.at, dated.basis) == expected


@dataclass
class Page:
    url: str
    dated_at: str
    fetched_at: str


def test_earliest_breaks_ties_by_fetch_then_url_whatever_the_order():
    a = Page("http://b/1", "2026-11-16T00:40:00+00:00", "2026-11-16T05:00:00+00:00")
    b = Page("http://a/1", "2026-11-16T00:40:00+00:00", "2026-11-16T05:00:00+00:00")
    c = Page("http://c/1", "2026-11-16T00:40:00+00:00", "2026-11-16T04:00:00+00:00")
    assert earliest([a, b]) is b and earliest([b, a]) is b
    assert earliest([a, b, c]) is c
    # A time in another offset is compared as the instant it is.
    d = Page("http://d/1", "2026-11-16T08:39:00+08:00", "2026-11-16T06:00:00+00:00")
    assert earliest([a, d]) is d


def _article(store, url, published, fetched, *, cluster_id=None, status="unique", duplicate_of=None, fingerprint=None):
    article_id = store.new_article_id()
    return ArticleRecord(
        id=article_id, url=url, site=url.split("/")[2], title="标题", text="正文" + url, published_at=published,
        author=None, source=None, canonical_url=url, fetched_at=fetched,
        fingerprint=fingerprint or url.encode(), status=status, duplicate_of=duplicate_of,
        cluster_id=cluster_id or article_id, similarity=0.8 if duplicate_of else None, method="spotsigs",
    )


def _repeat(url, published, fetched, repeat_of, fingerprint):
    return RepeatRecord(url, url.split("/")[2], "转载", published, None, None, None, fetched, fingerprint, repeat_of)


def test_origin_moves_to_an_earlier_copy_that_arrives_later_near_or_exact(store_uri):
    uri = store_uri
    with open_store(uri, batch_size=1) as store:
        # A reprint published at 10:15 is fetched first and heads the cluster.
        copy = _article(store, "http://b.example/copy", "2026-11-16T10:15:00+08:00", "2026-11-16T03:00:00+00:00")
        store.add_article(copy)
        assert store.cluster(copy.id).origin_url == copy.url
        # The original, published 08:40, arrives an hour later as a near-duplicate of it.
        original = _article(store, "http://a.example/original", "2026-11-16T08:40:00+08:00",
                            "2026-11-16T04:00:00+00:00", cluster_id=copy.id, status=NEAR_DUPLICATE,
                            duplicate_of=copy.url)
        store.add_article(original)
        cluster = store.cluster(copy.id)
        assert (cluster.origin_url, cluster.origin_dated_at, cluster.origin_date_basis) == (
            original.url, "2026-11-16T00:40:00+00:00", PUBLISHED)
        # An exact repeat published even earlier (07:30) moves it again; one with no date does not.
        store.add_repeat(_repeat("http://c.example/earliest", "2026-11-16T07:30:00+08:00",
                                 "2026-11-16T05:00:00+00:00", copy.url, copy.fingerprint))
        store.add_repeat(_repeat("http://d.example/undated", None, "2026-11-16T05:30:00+00:00",
                                 original.url, original.fingerprint))
        cluster = store.cluster(copy.id)
        assert cluster.origin_url == "http://c.example/earliest"
        assert cluster.members == 4 and cluster.last_fetched_at == "2026-11-16T05:30:00+00:00"
        # Export carries the current origin on every row of the cluster.
        assert {row["origin_url"] for row in store.iter_export()} == {"http://c.example/earliest"}
        (record, members), = list(store.iter_clusters())
        assert [m.url for m in members] == ["http://c.example/earliest", original.url, copy.url,
                                           "http://d.example/undated"]
    if uri.startswith("sqlite:///"):
        check_store_consistent(uri[len("sqlite:///"):])


def test_a_future_date_does_not_make_a_copy_the_origin(tmp_path):
    with open_store(f"sqlite:///{tmp_path / 'db.sqlite'}") as store:
        first = _article(store, "http://a.example/1", "2026-11-16T10:00:00+08:00", "2026-11-16T03:00:00+00:00")
        store.add_article(first)
        # Claims 2026-11-20 although fetched on the 16th: implausible, dated by its fetch (after the first).
        store.add_article(_article(store, "http://b.example/1", "2026-11-20T09:00:00+08:00",
                                   "2026-11-16T04:00:00+00:00", cluster_id=first.id, status=NEAR_DUPLICATE,
                                   duplicate_of=first.url))
        assert store.cluster(first.id).origin_url == first.url


def test_a_version_2_database_gets_dates_and_cluster_origins(tmp_path):
    path = tmp_path / "v2.sqlite"
    with SQLiteStore(path) as store:
        copy = _article(store, "http://b.example/copy", "2026-11-16T10:15:00+08:00", "2026-11-16T03:00:00+00:00")
        original = _article(store, "http://a.example/original", "2026-11-16T08:40:00+08:00",
                            "2026-11-16T04:00:00+00:00", cluster_id=copy.id, status=NEAR_DUPLICATE,
                            duplicate_of=copy.url)
        store.add_article(copy)
        store.add_article(original)
    conn = sqlite3.connect(path)  # make it what newsdedup 0.1 with schema 2 wrote
    conn.executescript("""
        DROP TABLE clusters;
        ALTER TABLE articles DROP COLUMN dated_at; ALTER TABLE articles DROP COLUMN date_basis;
        ALTER TABLE repeats DROP COLUMN dated_at; ALTER TABLE repeats DROP COLUMN date_basis;
        UPDATE meta SET value = '2' WHERE key = 'schema_version';
    """)
    conn.close()
    with SQLiteStore(path) as store:
        assert store.cluster(copy.id).origin_url == original.url
        version = store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION
    check_store_consistent(path)


def test_windowed_reads_keep_active_clusters_and_recent_urls_only(store_uri):
    with open_store(store_uri) as store:
        old = _article(store, "http://a.example/old", None, "2026-09-01T00:00:00+00:00", fingerprint=b"old")
        store.add_article(old)
        # An old story still being reprinted this month stays active; its centre stays in the index.
        lasting = _article(store, "http://a.example/lasting", None, "2026-09-02T00:00:00+00:00", fingerprint=b"L")
        store.add_article(lasting)
        store.add_repeat(_repeat("http://b.example/lasting", None, "2026-11-20T00:00:00+00:00", lasting.url, b"L"))
        store.flush()  # a crawl reads these when it opens, from committed rows
        since = "2026-10-25T00:00:00+00:00"
        assert [c.url for c in store.iter_cluster_centres(since=since)] == [lasting.url]
        assert set(store.iter_fingerprints(since=since)) == {b"L"}
        assert store.find_by_fingerprint(b"old", since=since) is None
        assert store.find_by_fingerprint(b"old").url == old.url
        assert list(store.iter_fetched_urls(since=since)) == ["http://b.example/lasting"]
        assert store.knows_url(old.url) and not store.knows_url("http://a.example/never")
