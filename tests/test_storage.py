"""The store contract, on SQLite and PostgreSQL alike (``store_uri``): schema, batching, durability of committed
batches under kill -9, idempotent re-runs, a busy database, the run lock, retry state; then what only one backend
has (SQLite's WAL file and migrations, PostgreSQL's refusal of foreign tables)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures

from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleRecord, FailureRecord, RepeatRecord, SkippedRecord, StoreError, StoreInUse
from newsdedup.storage.sqlite import SCHEMA_VERSION


def rows(uri: str, sql: str) -> list[tuple]:
    """What the database holds, read through the store's own connection (either backend)."""
    with open_store(uri) as store:
        return [tuple(row) for row in store._read(sql).fetchall()]


def execute(uri: str, statements: list[str]) -> None:
    """Run ``statements`` on the database itself, not through a store (to make an older or damaged one)."""
    if uri.startswith("sqlite"):
        conn = sqlite3.connect(uri.removeprefix("sqlite:///"))
        for statement in statements:
            conn.execute(statement)
        conn.commit()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(uri, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)


def article(store, url, fingerprint, **extra):
    article_id = store.new_article_id()
    fields = dict(
        id=article_id, url=url, site="demo", title="标题", text="正文" + url, published_at="2026-11-20T08:30:00+08:00",
        author="张三", source="新华社", canonical_url=url, fetched_at="2026-11-21T00:00:00+00:00",
        fingerprint=fingerprint, cluster_id=article_id, method="hybrid", simhash=2**64 - 1,
    )
    fields.update(extra)
    return ArticleRecord(**fields)


def test_round_trip_with_unsigned_simhash_and_export(store_uri):
    uri = store_uri
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


def test_pending_batch_is_visible_to_lookups_and_ids_continue(store_uri):
    uri = store_uri
    with open_store(uri, batch_size=100) as store:
        record = article(store, "http://a/1", b"x" * 16)
        store.add_article(record)
        ref = store.find_by_fingerprint(b"x" * 16)  # not committed yet
        assert ref is not None and ref.url == "http://a/1"
        assert store.url_of(record.id) == "http://a/1"
    with open_store(uri) as store:
        assert store.find_by_fingerprint(b"x" * 16).id == record.id
        assert store.new_article_id() == record.id + 1


def test_rerun_does_not_duplicate_rows(store_uri):
    for _ in range(2):
        with open_store(store_uri) as store:
            store.add_article(article(store, "http://a/1", b"x" * 16))
            store.add_repeat(RepeatRecord("http://c/3", "c", "转载", None, None, None, None,
                                          "2026-11-21T00:00:01+00:00", b"x" * 16, "http://a/1"))
            store.add_skipped(SkippedRecord("http://a/v", "a", "video", "", "t"))
    assert rows(store_uri, "SELECT COUNT(*) FROM articles") == [(1,)]
    assert rows(store_uri, "SELECT COUNT(*) FROM repeats") == [(1,)]
    assert rows(store_uri, "SELECT COUNT(*) FROM skipped") == [(1,)]
    assert rows(store_uri, "SELECT members FROM clusters") == [(2,)]


# A writer process that adds articles forever in batches of 7 and says how many batches the store holds.
_WRITER = """
import sys
from newsdedup.storage import open_store
from newsdedup.storage.base import ArticleRecord
store = open_store(sys.argv[1], batch_size=7)
store.open()
while True:
    n = store.new_article_id()  # a writer started again continues after the last one's committed rows
    store.add_article(ArticleRecord(id=n, url=f"http://a/{n}", site="demo", title="t", text="x" * 500,
                                    published_at=None, author=None, source=None, canonical_url=None, fetched_at="2026-11-16T03:00:00+00:00",
                                    fingerprint=n.to_bytes(16, "big")))
    if n % 7 == 0:
        print(n // 7, flush=True)
"""


def test_kill_9_of_a_writer_keeps_every_committed_batch_and_nothing_else(store_uri):
    # Killed right after it reports a commit, a writer only ever dies between batches; a random delay lands the
    # kill anywhere in its loop, inside a commit too (a commit that is not one transaction left part of a batch
    # in 8 of 10 single kills). Three writers in turn, each continuing the last one's rows.
    for round_ in range(1, 4):
        writer = subprocess.Popen([sys.executable, "-c", _WRITER, store_uri], stdout=subprocess.PIPE, text=True)
        try:
            for _ in range(random.randint(20, 60)):  # let it commit a random number of batches
                writer.stdout.readline()
            time.sleep(random.uniform(0.0, 0.05))
        finally:
            os.kill(writer.pid, signal.SIGKILL)
            writer.wait()
        with open_store(store_uri) as store:
            store.check()
            stored = store._read("SELECT COUNT(*), MIN(id), MAX(id) FROM articles").fetchone()
            # Whole batches only, in order, without gaps: a prefix of what was added.
            assert stored[0] % 7 == 0 and stored[0] >= round_ * 20 * 7 and (stored[1], stored[2]) == (1, stored[0])
            assert store.new_article_id() == stored[0] + 1  # and the store opens again, continuing the ids
    if store_uri.startswith("sqlite"):
        conn = sqlite3.connect(store_uri[len("sqlite:///"):])
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        conn.close()


class Blocker:
    """Another process's write transaction that holds the tables a commit needs."""

    def __init__(self, uri: str) -> None:
        if uri.startswith("sqlite"):
            self.conn = sqlite3.connect(uri[len("sqlite:///"):], isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")
            self.message = "database is locked"
        else:
            import psycopg

            self.conn = psycopg.connect(uri, autocommit=True)
            self.conn.execute("BEGIN")
            self.conn.execute("LOCK TABLE articles IN EXCLUSIVE MODE")
            self.message = "lock timeout"

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


def test_records_that_cannot_be_committed_stay_pending_and_are_not_counted(store_uri):
    with open_store(store_uri):
        pass
    blocker = Blocker(store_uri)
    store = open_store(store_uri, batch_size=2, busy_timeout=0.1, retries=1)
    store.retry_delay = 0.1
    store.open()
    for i in range(3):
        store.add_article(article(store, f"http://a/{i}", bytes([i]) * 16))  # the batch commit fails, kept pending
    assert store.pending_count() == 3 and not store.committed
    with pytest.raises(StoreError, match=f"3 records could not be saved .*{blocker.message}"):
        store.flush()
    blocker.release()
    store.close()  # the lock is gone: everything is saved now
    assert store.committed == {("demo", "unique"): 3}


def test_a_second_run_lock_on_the_same_database_is_refused(store_uri):
    uri = store_uri
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom newsdedup.storage import open_store\n"
         "s = open_store(sys.argv[1]); s.open(); s.lock_for_run(); print('locked', flush=True); time.sleep(60)", uri],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with open_store(uri) as store, pytest.raises(StoreInUse, match=f"in use by another crawl \\(pid {holder.pid}"):
            store.lock_for_run()
    finally:
        holder.kill()
        holder.wait()
    with open_store(uri) as store:  # the kernel released the dead holder's lock
        store.lock_for_run()
        store.lock_for_run()  # re-entrant within a process


def test_retry_state_moves_a_url_between_tables_and_the_url_filter_follows_it(store_uri):
    uri = store_uri
    with open_store(uri) as store:
        store.add_skipped(SkippedRecord("http://a/1", "demo", "too_short", "", "2026-11-21T00:00:00+00:00",
                                        attempts=1, next_try_at="2026-11-21T01:00:00+00:00"))
        store.add_failure(FailureRecord("http://a/2", "demo", "http_500", "HTTP 500", "2026-11-21T00:00:00+00:00",
                                        attempts=1, next_try_at="2026-11-21T01:00:00+00:00"))
        store.add_failure(FailureRecord("http://a/3", "demo", "http_404", "HTTP 404", "2026-11-21T00:00:00+00:00"))
    with open_store(uri) as store:
        before = sorted(store.iter_fetched_urls(now="2026-11-21T00:30:00+00:00"))
        due = sorted(store.iter_fetched_urls(now="2026-11-21T02:00:00+00:00"))
        assert before == ["http://a/1", "http://a/2", "http://a/3"] and due == ["http://a/3"]  # 404: never again
        assert (store.attempts_of("http://a/1"), store.attempts_of("http://a/9")) == (1, 0)
        store.add_article(article(store, "http://a/1", b"1" * 16))  # the retry found the article
        store.add_skipped(SkippedRecord("http://a/2", "demo", "too_short", "", "t", attempts=2))  # fetched, no article
    found = {table: sorted(r[0] for r in rows(uri, f"SELECT url FROM {table}"))
             for table in ("articles", "skipped", "failures")}
    assert found == {"articles": ["http://a/1"], "skipped": ["http://a/2"], "failures": ["http://a/3"]}


def test_a_database_from_schema_version_2_is_migrated_and_its_transient_skips_are_due_again(tmp_path):
    path = tmp_path / "db.sqlite"
    with open_store(f"sqlite:///{path}"):
        pass
    conn = sqlite3.connect(path)  # make it look like a version 2 database
    conn.executescript(
        "DROP TABLE skipped; DROP TABLE failures; DROP TABLE site_runs;"
        "CREATE TABLE skipped (url TEXT PRIMARY KEY, site TEXT, reason TEXT NOT NULL, detail TEXT, fetched_at TEXT NOT NULL);"
        "INSERT INTO skipped VALUES ('http://a/short', 'demo', 'too_short', '', '2026-01-01T00:00:00+00:00');"
        "INSERT INTO skipped VALUES ('http://a/video', 'demo', 'video', '', '2026-01-01T00:00:00+00:00');"
        "UPDATE meta SET value = '2' WHERE key = 'schema_version';"
    )
    conn.close()
    with open_store(f"sqlite:///{path}") as store:
        assert list(store.iter_fetched_urls()) == ["http://a/video"]  # the too_short page is fetched again
        assert store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)


@pytest.mark.parametrize("uri", ["sqlite://", "mysql://x/y"])
def test_bad_uris_name_the_fix(uri):
    with pytest.raises(ValueError, match="sqlite:///"):
        open_store(uri)


def test_an_unreachable_server_or_a_foreign_database_is_one_line_naming_it(postgres):
    import psycopg

    with pytest.raises(StoreError, match=r"PostgreSQL postgresql://news@127.0.0.1:1/x: cannot connect") as caught:
        open_store("postgresql://news:secret@127.0.0.1:1/x").open()
    assert "secret" not in str(caught.value)
    uri = postgres.create_database()
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
        conn.execute("CREATE TABLE articles (id INTEGER)")
    with pytest.raises(StoreError, match="tables of another program.*articles, invoices"):
        open_store(uri).open()


def test_named_state_blobs_persist_and_replace(store_uri):
    uri = store_uri
    with open_store(uri) as store:
        assert store.load_state("esimhash") is None
        store.save_state("esimhash", b"v1")
        store.save_state("esimhash", b"v2")
    with open_store(uri) as store:
        assert store.load_state("esimhash") == b"v2"


def test_centres_after_a_mark_and_the_last_committed_id(store_uri):
    """What a persisted index catches up from: the centres above its high-water mark, and the committed mark."""
    with open_store(store_uri, batch_size=10) as store:
        assert store.last_article_id() == 0
        first = article(store, "http://a/1", b"a" * 16)
        store.add_article(first)
        store.add_article(article(store, "http://a/2", b"b" * 16, status=NEAR_DUPLICATE, duplicate_of="http://a/1",
                                  cluster_id=first.id, similarity=0.8))
        third = article(store, "http://a/3", b"c" * 16)
        store.add_article(third)
        assert store.last_article_id() == 0  # the open batch is not committed yet
        store.flush()
        assert store.last_article_id() == third.id
        assert [c.id for c in store.iter_cluster_centres(after=first.id)] == [third.id]
        assert [c.id for c in store.iter_cluster_centres(after=0)] == [first.id, third.id]
        assert [c.id for c in store.iter_cluster_centres(since="2026-01-01T00:00:00+00:00", after=first.id)] == [third.id]


def test_the_centre_ids_are_the_centres_a_rebuild_reads_without_their_rows(store_uri):
    """What a persisted passage-reuse index checks its stories against when it opens: the window's centres."""
    with open_store(store_uri) as store:
        old = article(store, "http://a/1", b"a" * 16, fetched_at="2026-10-01T00:00:00+00:00")
        store.add_article(old)
        recent = article(store, "http://a/2", b"b" * 16)
        store.add_article(recent)
        store.add_article(article(store, "http://a/3", b"c" * 16, status=NEAR_DUPLICATE, duplicate_of="http://a/2",
                                  cluster_id=recent.id, similarity=0.8))
        kept = article(store, "http://a/4", b"d" * 16, fetched_at="2026-10-01T00:00:00+00:00")
        store.add_article(kept)  # an old story with a recent copy stays in the window
        store.add_repeat(RepeatRecord("http://b/4", "b", "转载", None, None, None, None,
                                      "2026-11-22T00:00:00+00:00", b"d" * 16, "http://a/4"))
        store.flush()
        since = "2026-11-01T00:00:00+00:00"
        assert sorted(store.iter_centre_ids()) == [c.id for c in store.iter_cluster_centres()] == [
            old.id, recent.id, kept.id]
        assert sorted(store.iter_centre_ids(since=since)) == [c.id for c in store.iter_cluster_centres(since=since)] == [
            recent.id, kept.id]
        assert [c.id for c in store.iter_cluster_centres(since=since, after=recent.id)] == [kept.id]


def test_a_file_unchanged_since_its_checked_clean_close_is_not_checked_again(tmp_path):
    """``PRAGMA quick_check`` reads the whole file; a crawl's next start skips it while the file is exactly as the
    last clean close after a check left it, and checks again once anything wrote to it."""
    db = tmp_path / "news.sqlite"

    def checks() -> list[str]:
        with open_store(f"sqlite:///{db}") as store:
            statements: list[str] = []
            store.conn.set_trace_callback(statements.append)
            store.check()
            return [s for s in statements if "quick_check" in s]

    assert checks() and (tmp_path / "news.sqlite.checked").exists()  # a new file: checked, then recorded
    assert checks() == []  # unchanged since
    with open_store(f"sqlite:///{db}") as store:  # a crawl's write (no check in this process: nothing recorded)
        store.add_article(article(store, "http://a/1", b"1" * 16))
    assert not (tmp_path / "news.sqlite.checked").exists()
    assert checks()
    assert checks() == []
    conn = sqlite3.connect(db)  # another program's write
    conn.execute("UPDATE meta SET value = value || '' WHERE key = 'schema_version'")
    conn.execute("INSERT INTO meta (key, value) VALUES ('other', 'program')")
    conn.commit()
    conn.close()
    assert checks()


def test_a_new_file_whose_write_lock_is_held_is_opened_once_the_holder_lets_go(tmp_path):
    """SQLite refuses the switch of a new file to WAL at once, without waiting out its busy timeout, while another
    connection holds the write lock (what one of several processes opening a new file together meets: CI, stop 40).
    The store tries again until busy_timeout is spent, and the crawl's writes afterwards wait the full busy_timeout."""
    db = tmp_path / "new.sqlite"
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, holder.execute, ("ROLLBACK",))
    release.start()
    try:
        store = open_store(f"sqlite:///{db}", busy_timeout=60)
        store.open()
        try:
            assert store.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert store.conn.execute("PRAGMA busy_timeout").fetchone() == (60_000,)
        finally:
            store.close()
    finally:
        release.join()
        holder.close()
    other = tmp_path / "other.sqlite"
    held = sqlite3.connect(other, isolation_level=None)
    held.execute("BEGIN IMMEDIATE")
    try:  # a lock never let go: the clear error once busy_timeout is spent, not at once
        began = time.monotonic()
        with pytest.raises(StoreError, match="stayed locked by another process for 0.5 s"):
            open_store(f"sqlite:///{other}", busy_timeout=0.5).open()
        assert time.monotonic() - began >= 0.5
    finally:
        held.close()


OPEN_AT_ONCE = """
import sys, time
from newsdedup.storage import open_store
start = float(sys.argv[2])
while time.time() < start:
    pass
store = open_store(sys.argv[1])
store.open()
store.close()
"""


def test_processes_opening_one_new_database_at_once_all_find_it_made(store_uri, tmp_path):
    """The two processes of a distributed run start together on a new file: one creates the schema, the others
    wait for it and find it whole, never half made (once read as another program's tables: CI, stop 37)."""
    if not store_uri.startswith("sqlite"):
        uris = [store_uri] * 3
    else:
        uris = [f"sqlite:///{tmp_path}/new-{i}.sqlite" for i in range(8)]
    for uri in uris:
        start = time.time() + 1.0  # every process imports first, then all open within the same moment
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT_ONCE, uri, str(start)],
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        errors = [p.communicate(timeout=120)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errors
        store = open_store(uri)
        store.open()
        store.close()
