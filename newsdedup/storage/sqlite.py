"""SQLite backend (the default): one file, WAL journal, batched transactions.

Durability: writes are buffered and committed every ``batch_size`` records (and on ``flush`` /
``close``), each batch in one transaction, in arrival order. A killed crawl loses at most the open
batch; those pages were not recorded as fetched either, so the next run fetches them again, and
what is committed is always a prefix of the arrival order (a near-duplicate never points at an
article that was not saved). URLs are UNIQUE, every write is idempotent (``INSERT OR IGNORE`` for
articles and repeats, upserts for skipped and failed pages), and a URL is recorded in one table
only: re-running a crawl, or running it again after ``kill -9``, never duplicates rows.

Another process holding the write lock is waited for (``busy_timeout``) and a commit that still
fails is retried with backoff; records that cannot be committed stay pending and are counted, never
reported as stored (:attr:`SQLiteStore.committed` counts only rows that reached the file).

One crawl writes to a database at a time: :meth:`SQLiteStore.lock_for_run` takes an exclusive
``flock`` on ``<database>.lock``, which the kernel releases when the process ends however it ends.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE, UNIQUE
from newsdedup.origin import date_of, earliest, origin_key
from newsdedup.retry import TRANSIENT_SKIPS, iso, utc_now
from newsdedup.storage.base import (
    ArticleRecord,
    ClusterMember,
    ClusterRecord,
    FailureRecord,
    RepeatRecord,
    SiteRunRecord,
    SkippedRecord,
    StoreCounts,
    StoredRef,
    StoreError,
    StoreInUse,
)
from newsdedup.text.hashing import from_signed64, to_signed64

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 4

# One row per cluster (story): its current origin and when it was last active. Rewritten in the transaction
# that adds a member, from the stored members, so it always agrees with them (see _refresh_clusters).
CLUSTERS_TABLE = """
CREATE TABLE IF NOT EXISTS clusters (
    cluster_id INTEGER PRIMARY KEY,
    origin_url TEXT NOT NULL,
    origin_dated_at TEXT NOT NULL,
    origin_date_basis TEXT NOT NULL,
    members INTEGER NOT NULL,
    first_fetched_at TEXT NOT NULL,
    last_fetched_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS clusters_last_fetched ON clusters (last_fetched_at);
"""
# The retention window and `export --since` select rows by fetch time; (fetched_at, url) answers the URL
# filter's query from the index alone, without reading the article texts.
FETCHED_AT_INDEXES = """
CREATE INDEX IF NOT EXISTS articles_fetched ON articles (fetched_at, url);
CREATE INDEX IF NOT EXISTS repeats_fetched ON repeats (fetched_at, url);
CREATE INDEX IF NOT EXISTS skipped_fetched ON skipped (fetched_at, url);
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS articles (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    site TEXT,
    title TEXT,
    text TEXT NOT NULL,
    published_at TEXT,
    author TEXT,
    source TEXT,
    canonical_url TEXT,
    fetched_at TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    status TEXT NOT NULL,
    duplicate_of TEXT,
    cluster_id INTEGER,
    similarity REAL,
    method TEXT,
    simhash INTEGER,
    spots BLOB,
    score REAL,
    measure TEXT,
    dated_at TEXT,
    date_basis TEXT
);
CREATE INDEX IF NOT EXISTS articles_fingerprint ON articles (fingerprint);
CREATE INDEX IF NOT EXISTS articles_cluster ON articles (cluster_id);
CREATE TABLE IF NOT EXISTS repeats (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    site TEXT,
    title TEXT,
    published_at TEXT,
    author TEXT,
    source TEXT,
    canonical_url TEXT,
    fetched_at TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    repeat_of TEXT NOT NULL,
    dated_at TEXT,
    date_basis TEXT
);
CREATE INDEX IF NOT EXISTS repeats_repeat_of ON repeats (repeat_of);
CREATE TABLE IF NOT EXISTS state (
    name TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS skipped (
    url TEXT PRIMARY KEY,
    site TEXT,
    reason TEXT NOT NULL,
    detail TEXT,
    fetched_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 1,
    next_try_at TEXT
);
CREATE TABLE IF NOT EXISTS failures (
    url TEXT PRIMARY KEY,
    site TEXT,
    kind TEXT NOT NULL,
    detail TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    first_failed_at TEXT NOT NULL,
    last_failed_at TEXT NOT NULL,
    next_try_at TEXT
);
CREATE TABLE IF NOT EXISTS site_runs (
    run_started_at TEXT NOT NULL,
    site TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    list_pages INTEGER NOT NULL,
    article_links INTEGER NOT NULL,
    fetched INTEGER NOT NULL,
    stored INTEGER NOT NULL,
    repeats INTEGER NOT NULL,
    skipped INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    PRIMARY KEY (run_started_at, site)
);
""" + CLUSTERS_TABLE + FETCHED_AT_INDEXES

# Steps that bring a database written by an older newsdedup to SCHEMA_VERSION: MIGRATIONS[v] takes
# version v - 1 to v. Each runs once, in one transaction with the version bump.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    # similarity became one measure for every method (estimated overlap); the method's own figure moved to
    # score/measure. Old rows keep their similarity, which was that figure; its measure is unknown.
    2: (
        "ALTER TABLE articles ADD COLUMN score REAL",
        "ALTER TABLE articles ADD COLUMN measure TEXT",
        "UPDATE articles SET score = similarity WHERE similarity IS NOT NULL",
    ),
    # Transient skips are tried again on later runs (attempts, next_try_at); failures and site_runs are new
    # tables (created from SCHEMA). Pages skipped as empty, too_short or malformed before this version were
    # never fetched again although they may be articles now: they are due for one more try.
    3: (
        "ALTER TABLE skipped ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE skipped ADD COLUMN next_try_at TEXT",
        "UPDATE skipped SET next_try_at = fetched_at WHERE reason IN ('empty', 'too_short', 'malformed')",
    ),
    # Origin by publication time: _add_origins (MIGRATION_BACKFILLS) adds the dated_at/date_basis columns and
    # the clusters table, dates every stored page and fills one row per cluster, in the same transaction.
    4: (),
}

ARTICLE_COLUMNS = (
    "id", "url", "site", "title", "text", "published_at", "author", "source", "canonical_url",
    "fetched_at", "fingerprint", "status", "duplicate_of", "cluster_id", "similarity", "method",
    "simhash", "spots", "score", "measure",
)
REPEAT_COLUMNS = (
    "url", "site", "title", "published_at", "author", "source", "canonical_url", "fetched_at",
    "fingerprint", "repeat_of",
)
SKIPPED_COLUMNS = ("url", "site", "reason", "detail", "fetched_at", "attempts", "next_try_at")
FAILURE_COLUMNS = ("url", "site", "kind", "detail", "attempts", "first_failed_at", "last_failed_at", "next_try_at")
SITE_RUN_COLUMNS = (
    "run_started_at", "site", "finished_at", "finish_reason", "exit_code", "list_pages", "article_links",
    "fetched", "stored", "repeats", "skipped", "failed",
)
# Derived on insert from published_at, fetched_at and the URL (newsdedup.origin.date_of).
DATED_COLUMNS = ("dated_at", "date_basis")
CLUSTER_COLUMNS = (
    "cluster_id", "origin_url", "origin_dated_at", "origin_date_basis", "members", "first_fetched_at",
    "last_fetched_at",
)
# The tables of a newsdedup database; another program's SQLite file is refused rather than written into.
_OWN_TABLES = {"meta", "articles", "repeats", "skipped", "state", "failures", "site_runs", "clusters"}
_TRANSIENT_SKIPS_SQL = ", ".join(f"'{reason}'" for reason in sorted(TRANSIENT_SKIPS))
_WHAT_TO_DO = "move it away or point -s NEWSDEDUP_STORAGE_URI=sqlite:///PATH at another file"


def _insert_sql(table: str, columns: tuple[str, ...]) -> str:
    placeholders = ", ".join("?" for _ in columns)
    # OR IGNORE: a URL stored by an earlier run (or earlier in this one) keeps its first record.
    return f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"


def _upsert_sql(table: str, columns: tuple[str, ...], *, key: str, keep: tuple[str, ...] = ()) -> str:
    """Insert, or bring the row of the same ``key`` up to date (an attempt more), keeping ``keep`` columns."""
    placeholders = ", ".join("?" for _ in columns)
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key and c not in keep)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders}) "
        f"ON CONFLICT({key}) DO UPDATE SET {updates}"
    )


def _table_of(statement: str) -> str:
    """The table a migration statement changes (``ALTER TABLE t ...``, ``UPDATE t ...``)."""
    words = statement.split()
    return words[2] if words[0].upper() == "ALTER" else words[1]


def _adds_existing_column(conn: sqlite3.Connection, statement: str) -> bool:
    """``ALTER TABLE t ADD COLUMN c ...`` where ``t`` already has ``c``."""
    words = statement.split()
    if [w.upper() for w in words[:2]] != ["ALTER", "TABLE"] or [w.upper() for w in words[3:5]] != ["ADD", "COLUMN"]:
        return False
    return words[5] in {row[1] for row in conn.execute(f"PRAGMA table_info({words[2]})")}


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


# Run locks held by this process, by lock-file path: [file descriptor, users]. A crawl command and its
# pipelines open the same database in one process; the lock is the process's, taken once.
_RUN_LOCKS: dict[str, list[int]] = {}


class SQLiteStore:
    """:class:`~newsdedup.storage.base.ArticleStore` on one SQLite file."""

    def __init__(
        self, path: str | Path, *, batch_size: int = 100, busy_timeout: float = 30.0, retries: int = 3,
        retry_delay: float = 1.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if busy_timeout < 0 or retries < 0 or retry_delay < 0:
            raise ValueError("busy_timeout, retries and retry_delay must be >= 0")
        self.path = Path(path)
        self.batch_size = batch_size
        self.busy_timeout = busy_timeout
        self.retries = retries
        self.retry_delay = retry_delay
        self._conn: sqlite3.Connection | None = None
        self._pending_articles: list[ArticleRecord] = []
        self._pending_repeats: list[RepeatRecord] = []
        self._pending_skipped: list[SkippedRecord] = []
        self._pending_failures: list[FailureRecord] = []
        self._pending_site_runs: list[SiteRunRecord] = []
        # Fingerprints and URLs of not-yet-committed articles and repeats, so lookups see the open batch too.
        self._pending_by_fingerprint: dict[bytes, StoredRef] = {}
        self._pending_urls: set[str] = set()
        # After a failed commit the next attempt waits until another batch has gathered.
        self._flush_at = batch_size
        self._committed: Counter = Counter()
        self._next_id = 1
        self._lock_key: str | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        if self._conn is not None:
            return
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=self.busy_timeout)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the database ({exc}); check the path and its permissions") from None
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL with WAL: a committed batch survives a crashed process; only an OS crash or power
            # loss can roll back the last commits, never corrupt the file.
            conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate(conn)
            self._check_columns(conn)
            self._next_id = (conn.execute("SELECT COALESCE(MAX(id), 0) FROM articles").fetchone()[0]) + 1
        except StoreError:
            conn.close()
            raise
        except sqlite3.OperationalError as exc:
            conn.close()
            if _is_busy(exc):
                raise StoreError(
                    f"{self.path}: the database stayed locked by another process for {self.busy_timeout:g} s ({exc}); "
                    "try again when it is done"
                ) from None
            raise StoreError(self._unusable(exc)) from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(self._unusable(exc)) from None
        self._conn = conn

    def _unusable(self, exc: Exception) -> str:
        return f"{self.path} is not a usable newsdedup database ({exc}): {_WHAT_TO_DO}"

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Create the schema in a new file, or bring an older one up to SCHEMA_VERSION."""
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if "meta" in tables else None
        if row is None:
            foreign = sorted(tables - _OWN_TABLES)
            if tables and (foreign or "articles" in tables):
                raise StoreError(
                    f"{self.path} is an SQLite database of another program (tables: {', '.join(sorted(tables))}) "
                    f"or of an unknown newsdedup version; newsdedup does not write into it: {_WHAT_TO_DO}"
                )
            conn.executescript(SCHEMA)
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            return
        try:
            version = int(row[0])
        except ValueError:
            raise StoreError(f"{self.path}: schema_version {row[0]!r} is not a number: {_WHAT_TO_DO}") from None
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this newsdedup's {SCHEMA_VERSION}: "
                "upgrade newsdedup (pip install -U newsdedup) or use another database file"
            )
        if version == SCHEMA_VERSION:
            return  # nothing to write: opening never waits for another process's write lock
        if version < min(MIGRATIONS) - 1:
            raise StoreError(f"{self.path} has schema version {version}, too old to migrate: {_WHAT_TO_DO}")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for statement in MIGRATIONS[target]:
                    # A table the old file never had is created whole from SCHEMA below, and a column it
                    # already has is not added twice: nothing to alter.
                    if _table_of(statement) in tables and not _adds_existing_column(conn, statement):
                        conn.execute(statement)
                backfill = MIGRATION_BACKFILLS.get(target)
                if backfill is not None:
                    backfill(conn)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(target),))
        conn.executescript(SCHEMA)  # indexes and tables added since without a migration step

    def _check_columns(self, conn: sqlite3.Connection) -> None:
        for table, columns in (("articles", ARTICLE_COLUMNS), ("repeats", REPEAT_COLUMNS),
                               ("skipped", SKIPPED_COLUMNS), ("failures", FAILURE_COLUMNS)):
            present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            missing = [c for c in columns if c not in present]
            if missing:
                raise StoreError(
                    f"{self.path}: table {table} lacks column(s) {', '.join(missing)}; it was not written by this "
                    f"newsdedup or was altered: {_WHAT_TO_DO}"
                )

    def check(self) -> None:
        """``PRAGMA quick_check`` (about 0.4 s per 500 MB): a damaged file is refused before a crawl writes to it."""
        try:
            rows = self.conn.execute("PRAGMA quick_check(1)").fetchall()
        except sqlite3.DatabaseError as exc:
            rows = [(str(exc),)]
        if rows != [("ok",)]:
            problems = " ".join(str(rows[0][0]).split())  # one line: SQLite's report spans several
            raise StoreError(
                f"{self.path} is damaged (quick_check: {problems}); restore a backup, or recover what is left with "
                f"`sqlite3 {self.path} .recover | sqlite3 NEW.sqlite` and crawl into NEW.sqlite"
            )

    def lock_for_run(self) -> None:
        """Take the run lock (an exclusive flock on ``<database>.lock``) for this process; re-entrant."""
        if self._lock_key is not None or str(self.path) == ":memory:":
            return
        key = str(self.path.resolve()) + ".lock"
        held = _RUN_LOCKS.get(key)
        if held is not None:
            held[1] += 1
            self._lock_key = key
            return
        fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip()
            os.close(fd)
            raise StoreInUse(
                f"{self.path} is in use by another crawl ({holder or 'process unknown'}); one crawl writes to a "
                "database at a time: wait for it to finish, or crawl into another database"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, started {iso(utc_now())}".encode())
        _RUN_LOCKS[key] = [fd, 1]
        self._lock_key = key

    def _release_lock(self) -> None:
        key, self._lock_key = self._lock_key, None
        held = _RUN_LOCKS.get(key) if key else None
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            del _RUN_LOCKS[key]
            # The file stays: removing it would let a waiting process lock a file no one else sees.
            fcntl.flock(held[0], fcntl.LOCK_UN)
            os.close(held[0])

    def close(self) -> None:
        """Commit what is pending and close; raises StoreError (after closing) if the commit failed."""
        if self._conn is None:
            self._release_lock()
            return
        try:
            self.flush()
        finally:
            self._conn.close()
            self._conn = None
            self._release_lock()

    def __enter__(self) -> SQLiteStore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the store is not open: call open() first")
        return self._conn

    # -- writes ----------------------------------------------------------------------------
    def new_article_id(self) -> int:
        article_id = self._next_id
        self._next_id += 1
        return article_id

    def add_article(self, record: ArticleRecord) -> None:
        self._pending_articles.append(record)
        self._pending_urls.add(record.url)
        self._pending_by_fingerprint.setdefault(
            record.fingerprint, StoredRef(record.id, record.url, record.cluster_id)
        )
        self._maybe_flush()

    def add_repeat(self, record: RepeatRecord) -> None:
        self._pending_repeats.append(record)
        self._pending_urls.add(record.url)
        self._maybe_flush()

    def add_skipped(self, record: SkippedRecord) -> None:
        self._pending_skipped.append(record)
        self._maybe_flush()

    def add_failure(self, record: FailureRecord) -> None:
        self._pending_failures.append(record)
        self._maybe_flush()

    def add_site_run(self, record: SiteRunRecord) -> None:
        self._pending_site_runs.append(record)

    def pending_count(self) -> int:
        return (len(self._pending_articles) + len(self._pending_repeats) + len(self._pending_skipped)
                + len(self._pending_failures) + len(self._pending_site_runs))

    @property
    def committed(self) -> Counter:
        return self._committed

    def _maybe_flush(self) -> None:
        if self.pending_count() < self._flush_at:
            return
        try:
            self.flush()
        except StoreError as exc:
            # Keep the records and the crawl going: the next batch, or close(), tries again.
            self._flush_at = self.pending_count() + self.batch_size
            logger.error("%s (%d records kept pending, tried again later)", exc, self.pending_count())

    def flush(self) -> None:
        if not self.pending_count():
            return
        delay = self.retry_delay
        for attempt in range(self.retries + 1):
            try:
                committed = self._commit_pending()
                break
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == self.retries:
                    raise StoreError(self._not_saved(exc)) from None
                logger.warning("%s: database busy (%s); commit attempt %d of %d again in %g s",
                               self.path, exc, attempt + 1, self.retries + 1, delay)
                time.sleep(delay)
                delay *= 2
            except sqlite3.DatabaseError as exc:
                raise StoreError(self._not_saved(exc)) from None
        self._committed.update(committed)
        self._pending_articles.clear()
        self._pending_repeats.clear()
        self._pending_skipped.clear()
        self._pending_failures.clear()
        self._pending_site_runs.clear()
        self._pending_by_fingerprint.clear()
        self._pending_urls.clear()
        self._flush_at = self.batch_size

    def _not_saved(self, exc: Exception) -> str:
        return (
            f"{self.path}: {self.pending_count()} records could not be saved ({exc}); their pages are fetched "
            "again on the next run"
        )

    def _commit_pending(self) -> Counter:
        """One transaction for everything pending; returns what it committed, by (site, what)."""
        conn = self.conn
        committed: Counter = Counter()
        with conn:
            conn.execute("BEGIN IMMEDIATE")  # take the write lock first: a busy database fails here, not half way
            for record in self._pending_articles:
                row = _article_row(record) + _dated(record)
                if conn.execute(_insert_sql("articles", ARTICLE_COLUMNS + DATED_COLUMNS), row).rowcount:
                    committed[(record.site, record.status)] += 1
            for record in self._pending_repeats:
                row = tuple(getattr(record, c) for c in REPEAT_COLUMNS) + _dated(record)
                if conn.execute(_insert_sql("repeats", REPEAT_COLUMNS + DATED_COLUMNS), row).rowcount:
                    committed[(record.site, "repeat")] += 1
            # Each story's row (origin, members, activity) is rewritten from its stored pages in this transaction.
            touched = {r.cluster_id for r in self._pending_articles if r.cluster_id is not None}
            touched.update(_clusters_of(conn, (r.repeat_of for r in self._pending_repeats)))
            _refresh_clusters(conn, touched)
            stored_urls = [(r.url,) for r in (*self._pending_articles, *self._pending_repeats)]
            # A URL is recorded in one table: a page that is an article now is no longer skipped or failed,
            # a page skipped now no longer failed, and the other way round.
            conn.executemany("DELETE FROM skipped WHERE url = ?", stored_urls)
            conn.executemany("DELETE FROM failures WHERE url = ?", stored_urls)
            for record in self._pending_skipped:
                conn.execute("DELETE FROM failures WHERE url = ?", (record.url,))
                row = tuple(getattr(record, c) for c in SKIPPED_COLUMNS)
                conn.execute(_upsert_sql("skipped", SKIPPED_COLUMNS, key="url"), row)
                committed[(record.site, f"skipped/{record.reason}")] += 1
            for record in self._pending_failures:
                conn.execute("DELETE FROM skipped WHERE url = ?", (record.url,))
                row = (record.url, record.site, record.kind, record.detail, record.attempts, record.failed_at,
                       record.failed_at, record.next_try_at)
                conn.execute(_upsert_sql("failures", FAILURE_COLUMNS, key="url", keep=("first_failed_at",)), row)
                committed[(record.site, f"failed/{record.kind}")] += 1
            conn.executemany(
                f"INSERT OR REPLACE INTO site_runs ({', '.join(SITE_RUN_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in SITE_RUN_COLUMNS)})",
                [tuple(getattr(r, c) for c in SITE_RUN_COLUMNS) for r in self._pending_site_runs],
            )
        return committed

    def save_state(self, name: str, data: bytes) -> None:
        """Persist a named blob of dedup state (e.g. corpus statistics) with the pending batch."""
        self.flush()
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.execute(
                "INSERT INTO state (name, data) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET data = excluded.data",
                (name, data),
            )

    def load_state(self, name: str) -> bytes | None:
        row = self.conn.execute("SELECT data FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None else bytes(row[0])

    # -- reads -----------------------------------------------------------------------------
    def find_by_fingerprint(self, fingerprint: bytes, *, since: str | None = None) -> StoredRef | None:
        pending = self._pending_by_fingerprint.get(fingerprint)
        if pending is not None:
            return pending
        # The latest: after the retention window a story that returns verbatim is stored again, as a new
        # cluster, and its repeats belong to that one.
        if since is None:
            row = self.conn.execute(
                "SELECT id, url, cluster_id FROM articles WHERE fingerprint = ? ORDER BY id DESC LIMIT 1",
                (fingerprint,),
            ).fetchone()
        else:
            row = self.conn.execute(
                """SELECT a.id, a.url, a.cluster_id FROM articles a JOIN clusters c ON c.cluster_id = a.cluster_id
                   WHERE a.fingerprint = ? AND c.last_fetched_at >= ? ORDER BY a.id DESC LIMIT 1""",
                (fingerprint, since),
            ).fetchone()
        return StoredRef(*row) if row else None

    def url_of(self, article_id: int) -> str | None:
        for record in self._pending_articles:
            if record.id == article_id:
                return record.url
        row = self.conn.execute("SELECT url FROM articles WHERE id = ?", (article_id,)).fetchone()
        return row[0] if row else None

    def iter_fingerprints(self, *, since: str | None = None) -> Iterator[bytes]:
        if since is None:
            cursor = self.conn.execute("SELECT fingerprint FROM articles")
        else:
            cursor = self.conn.execute(
                """SELECT a.fingerprint FROM clusters c JOIN articles a ON a.cluster_id = c.cluster_id
                   WHERE c.last_fetched_at >= ?""",
                (since,),
            )
        for (fingerprint,) in cursor:
            yield fingerprint

    def has_page(self, url: str) -> bool:
        if url in self._pending_urls:
            return True
        row = self.conn.execute(
            "SELECT 1 FROM articles WHERE url = ? UNION ALL SELECT 1 FROM repeats WHERE url = ? LIMIT 1", (url, url)
        ).fetchone()
        return row is not None

    def attempts_of(self, url: str) -> int:
        row = self.conn.execute(
            "SELECT MAX(attempts) FROM (SELECT attempts FROM skipped WHERE url = ? "
            "UNION ALL SELECT attempts FROM failures WHERE url = ?)", (url, url)
        ).fetchone()
        return row[0] or 0

    def site_had_article_links(self, site: str) -> bool:
        row = self.conn.execute(
            """SELECT EXISTS (SELECT 1 FROM site_runs WHERE site = ? AND article_links > 0)
                   OR EXISTS (SELECT 1 FROM articles WHERE site = ?) OR EXISTS (SELECT 1 FROM repeats WHERE site = ?)
                   OR EXISTS (SELECT 1 FROM skipped WHERE site = ?) OR EXISTS (SELECT 1 FROM failures WHERE site = ?)""",
            (site,) * 5,
        ).fetchone()
        return bool(row[0])

    # Pages handled for good: stored, repeats, and skipped or failed pages not yet due for another try.
    _HANDLED = """
        SELECT url FROM articles WHERE {where}
        UNION ALL SELECT url FROM repeats WHERE {where}
        UNION ALL SELECT url FROM skipped WHERE (next_try_at IS NULL OR next_try_at > :now) AND {where}
        UNION ALL SELECT url FROM failures WHERE (next_try_at IS NULL OR next_try_at > :now) AND {failed_where}
    """

    def iter_fetched_urls(self, *, now: str | None = None, since: str | None = None) -> Iterator[str]:
        """URLs handled for good; with ``since``, only those fetched in the retention window."""
        window = "TRUE" if since is None else "fetched_at >= :since"
        query = self._HANDLED.format(where=window, failed_where=window.replace("fetched_at", "last_failed_at"))
        for (url,) in self.conn.execute(query, {"now": now or iso(utc_now()), "since": since}):
            yield url

    def knows_url(self, url: str, *, now: str | None = None) -> bool:
        """Whether ``url`` was handled for good at any time (the lookup for URLs older than the window)."""
        query = f"SELECT 1 FROM ({self._HANDLED.format(where='url = :url', failed_where='url = :url')}) LIMIT 1"
        return self.conn.execute(query, {"now": now or iso(utc_now()), "url": url}).fetchone() is not None

    def iter_failures(self, *, site: str | None = None) -> Iterator[dict]:
        self.flush()
        query = f"""
            SELECT 'failed', url, site, kind, detail, attempts, last_failed_at, next_try_at FROM failures
            WHERE (:site IS NULL OR site = :site)
            UNION ALL
            SELECT 'skipped', url, site, reason, detail, attempts, fetched_at, next_try_at FROM skipped
            WHERE reason IN ({_TRANSIENT_SKIPS_SQL}) AND (:site IS NULL OR site = :site)
            ORDER BY 7 DESC, 2
        """
        keys = ("what", "url", "site", "reason", "detail", "attempts", "last_at", "next_try_at")
        for row in self.conn.execute(query, {"site": site}):
            yield dict(zip(keys, row))

    def iter_cluster_centres(self, *, since: str | None = None) -> Iterator[ArticleRecord]:
        columns = ", ".join(f"a.{c}" for c in ARTICLE_COLUMNS)
        if since is None:
            cursor = self.conn.execute(f"SELECT {columns} FROM articles a WHERE a.status = ? ORDER BY a.id", (UNIQUE,))
        else:
            # From the clusters index to the centres' rows by id: never a scan of every article (and its text).
            cursor = self.conn.execute(
                f"""SELECT {columns} FROM articles a
                    WHERE a.id IN (SELECT cluster_id FROM clusters WHERE last_fetched_at >= ?) AND a.status = ?
                    ORDER BY a.id""",
                (since, UNIQUE),
            )
        for row in cursor:
            yield _article_from_row(row)

    def cluster(self, cluster_id: int) -> ClusterRecord | None:
        self.flush()
        row = self.conn.execute(
            f"SELECT {', '.join(CLUSTER_COLUMNS)} FROM clusters WHERE cluster_id = ?", (cluster_id,)
        ).fetchone()
        return ClusterRecord(*row) if row else None

    def iter_clusters(
        self, *, since: str | None = None, min_members: int = 2, site: str | None = None, query: str | None = None,
    ) -> Iterator[tuple[ClusterRecord, list[ClusterMember]]]:
        self.flush()
        where, params = ["c.members >= ?"], [min_members]
        if since is not None:
            where.append("c.last_fetched_at >= ?")
            params.append(since)
        if site is not None:
            where.append(
                """(EXISTS (SELECT 1 FROM articles a WHERE a.cluster_id = c.cluster_id AND a.site = ?)
                    OR EXISTS (SELECT 1 FROM articles a JOIN repeats r ON r.repeat_of = a.url
                               WHERE a.cluster_id = c.cluster_id AND r.site = ?))"""
            )
            params += [site, site]
        if query:
            # LOWER + LIKE with an escape character: plain SQL that PostgreSQL runs too. Repeats share their
            # article's text, so only their titles are searched.
            escaped = query.lower().replace("!", "!!").replace("%", "!%").replace("_", "!_")
            pattern = f"%{escaped}%"
            where.append(
                """(EXISTS (SELECT 1 FROM articles a WHERE a.cluster_id = c.cluster_id
                            AND (LOWER(a.title) LIKE ? ESCAPE '!' OR LOWER(a.text) LIKE ? ESCAPE '!'))
                    OR EXISTS (SELECT 1 FROM articles a JOIN repeats r ON r.repeat_of = a.url
                               WHERE a.cluster_id = c.cluster_id AND LOWER(r.title) LIKE ? ESCAPE '!'))"""
            )
            params += [pattern, pattern, pattern]
        rows = self.conn.execute(
            f"""SELECT {', '.join('c.' + column for column in CLUSTER_COLUMNS)} FROM clusters c
                WHERE {' AND '.join(where)} ORDER BY c.members DESC, c.origin_dated_at DESC, c.cluster_id""",
            params,
        ).fetchall()
        for row in rows:
            record = ClusterRecord(*row)
            yield record, self._cluster_members(record.cluster_id)

    def _cluster_members(self, cluster_id: int) -> list[ClusterMember]:
        rows = self.conn.execute(
            """SELECT url, site, title, published_at, fetched_at, dated_at, date_basis, status, duplicate_of,
                      similarity, method, measure, fingerprint
               FROM articles WHERE cluster_id = ?
               UNION ALL
               SELECT r.url, r.site, r.title, r.published_at, r.fetched_at, r.dated_at, r.date_basis, ?,
                      r.repeat_of, 1.0, 'exact', 'exact', r.fingerprint
               FROM articles a JOIN repeats r ON r.repeat_of = a.url WHERE a.cluster_id = ?""",
            (cluster_id, EXACT_DUPLICATE, cluster_id),
        ).fetchall()
        return sorted((ClusterMember(*row) for row in rows), key=origin_key)

    def iter_export(self, **filters) -> Iterator[dict]:
        """Articles and repeats in the order they were fetched (the export format of README.md), filtered
        (see :meth:`_iter_export`); a damaged or foreign file raises StoreError naming it."""
        try:
            yield from self._iter_export(**filters)
        except sqlite3.DatabaseError as exc:
            raise StoreError(self._unusable(exc)) from None

    def _iter_export(
        self, *, since: str | None = None, sites: tuple[str, ...] = (), statuses: tuple[str, ...] = (),
        cluster: int | None = None, after: dict[str, int] | None = None,
    ) -> Iterator[dict]:
        self.flush()
        after = dict(after or {})
        article_where, article_params = ["a.id > ?"], [after.get("articles", 0)]
        repeat_where, repeat_params = ["r.id > ?"], [after.get("repeats", 0)]

        def both(condition: str, *values) -> None:  # the same filter on articles (a) and repeats (r)
            article_where.append(condition.format(t="a"))
            article_params.extend(values)
            repeat_where.append(condition.format(t="r"))
            repeat_params.extend(values)

        if since is not None:
            both("{t}.fetched_at >= ?", since)
        if sites:
            both(f"{{t}}.site IN ({', '.join('?' for _ in sites)})", *sites)
        if statuses:
            article_where.append(f"a.status IN ({', '.join('?' for _ in statuses)})")
            article_params += statuses
            if EXACT_DUPLICATE not in statuses:
                repeat_where.append("0 = 1")
        if cluster is not None:
            article_where.append("a.cluster_id = ?")
            article_params.append(cluster)
            repeat_where.append("a.cluster_id = ?")
            repeat_params.append(cluster)
        query = f"""
            SELECT a.fetched_at, 0 AS kind, a.id, a.url, a.site, a.title, a.text, a.published_at,
                   a.author, a.source, a.status, a.duplicate_of, a.cluster_id, a.similarity, a.method,
                   a.score, a.measure, c.origin_url
            FROM articles a LEFT JOIN clusters c ON c.cluster_id = a.cluster_id
            WHERE {' AND '.join(article_where)}
            UNION ALL
            SELECT r.fetched_at, 1 AS kind, r.id, r.url, r.site, r.title, a.text, r.published_at,
                   r.author, r.source, ?, r.repeat_of, a.cluster_id, 1.0, 'exact', 1.0, 'exact', c.origin_url
            FROM repeats r LEFT JOIN articles a ON a.url = r.repeat_of
                 LEFT JOIN clusters c ON c.cluster_id = a.cluster_id
            WHERE {' AND '.join(repeat_where)}
            ORDER BY 1, 2, 3
        """
        for row in self.conn.execute(query, (*article_params, EXACT_DUPLICATE, *repeat_params)):
            (fetched_at, kind, row_id, url, site, title, text, published_at, author, source, status, duplicate_of,
             cluster_id, similarity, method, score, measure, origin_url) = row
            table = "repeats" if kind else "articles"
            after[table] = max(after.get(table, 0), row_id)
            yield {
                "url": url, "site": site, "title": title, "text": text,
                "published_at": published_at, "author": author, "source": source,
                "status": status, "duplicate_of": duplicate_of, "cluster_id": cluster_id,
                "similarity": similarity, "method": method, "score": score, "measure": measure,
                "fetched_at": fetched_at, "origin_url": origin_url, "cursor": dict(after),
            }

    def counts(self) -> StoreCounts:
        self.flush()
        conn = self.conn
        by_status = dict(conn.execute("SELECT status, COUNT(*) FROM articles GROUP BY status").fetchall())
        reasons = Counter(dict(conn.execute("SELECT reason, COUNT(*) FROM skipped GROUP BY reason").fetchall()))
        clusters = conn.execute(
            """SELECT COUNT(*) FROM (
                   SELECT cluster_id FROM articles WHERE status = ? GROUP BY cluster_id
                   UNION SELECT a.cluster_id FROM repeats r JOIN articles a ON a.url = r.repeat_of
               )""",
            (NEAR_DUPLICATE,),
        ).fetchone()[0]
        kinds = Counter(dict(conn.execute("SELECT kind, COUNT(*) FROM failures GROUP BY kind").fetchall()))
        return StoreCounts(
            articles=sum(by_status.values()),
            unique=by_status.get(UNIQUE, 0),
            near_duplicate=by_status.get(NEAR_DUPLICATE, 0),
            repeats=conn.execute("SELECT COUNT(*) FROM repeats").fetchone()[0],
            skipped=sum(reasons.values()),
            clusters_with_duplicates=clusters,
            skipped_by_reason=dict(reasons),
            failures=sum(kinds.values()),
            failures_by_kind=dict(kinds),
        )


def _article_row(record: ArticleRecord) -> tuple:
    values = []
    for column in ARTICLE_COLUMNS:
        value = getattr(record, column)
        if column == "simhash" and value is not None:
            value = to_signed64(value)
        values.append(value)
    return tuple(values)


def _article_from_row(row: tuple) -> ArticleRecord:
    fields = dict(zip(ARTICLE_COLUMNS, row, strict=True))
    if fields["simhash"] is not None:
        fields["simhash"] = from_signed64(fields["simhash"])
    return ArticleRecord(**fields)


def _dated(record: ArticleRecord | RepeatRecord) -> tuple[str, str]:
    dated = date_of(record.published_at, record.fetched_at, record.url)
    return dated.at, dated.basis


@dataclass(frozen=True)
class _Member:
    url: str
    dated_at: str
    fetched_at: str


def _clusters_of(conn: sqlite3.Connection, urls: Iterable[str]) -> set[int]:
    """Clusters of the articles at ``urls`` (the ones exact repeats join)."""
    found = set()
    for url in set(urls):
        row = conn.execute("SELECT cluster_id FROM articles WHERE url = ?", (url,)).fetchone()
        if row and row[0] is not None:
            found.add(row[0])
    return found


def _refresh_clusters(conn: sqlite3.Connection, cluster_ids: Iterable[int]) -> None:
    """Rewrite the clusters rows of ``cluster_ids`` from their stored members: the origin is the earliest
    published (newsdedup.origin.earliest), so an earlier copy that arrives late becomes the origin."""
    for cluster_id in cluster_ids:
        members = [
            _Member(*row)
            for row in conn.execute(
                """SELECT url, dated_at, fetched_at FROM articles WHERE cluster_id = ?
                   UNION ALL
                   SELECT r.url, r.dated_at, r.fetched_at FROM articles a JOIN repeats r ON r.repeat_of = a.url
                   WHERE a.cluster_id = ?""",
                (cluster_id, cluster_id),
            )
        ]
        if not members:  # every record of it was a URL stored before (INSERT OR IGNORE kept the old row)
            continue
        origin = earliest(members)
        basis = conn.execute(
            "SELECT date_basis FROM articles WHERE url = ? UNION ALL SELECT date_basis FROM repeats WHERE url = ?",
            (origin.url, origin.url),
        ).fetchone()[0]
        fetched = [m.fetched_at for m in members]
        conn.execute(
            f"""INSERT INTO clusters ({', '.join(CLUSTER_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (cluster_id) DO UPDATE SET origin_url = excluded.origin_url,
                    origin_dated_at = excluded.origin_dated_at, origin_date_basis = excluded.origin_date_basis,
                    members = excluded.members, first_fetched_at = excluded.first_fetched_at,
                    last_fetched_at = excluded.last_fetched_at""",
            (cluster_id, origin.url, origin.dated_at, basis, len(members), min(fetched), max(fetched)),
        )


def _add_origins(conn: sqlite3.Connection) -> None:
    """Schema 4: date every stored page and write every cluster's row (databases written before origins)."""
    for statement in SCHEMA.split(";"):
        if statement.strip().startswith("CREATE TABLE"):
            conn.execute(statement)  # IF NOT EXISTS: only a table this database lacks, created whole
    for table in ("articles", "repeats"):
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for column in DATED_COLUMNS:
            if column not in columns:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
        updates = []
        for row_id, url, published, fetched in conn.execute(f"SELECT id, url, published_at, fetched_at FROM {table}"):
            dated = date_of(published, fetched, url)
            updates.append((dated.at, dated.basis, row_id))
        conn.executemany(f"UPDATE {table} SET dated_at = ?, date_basis = ? WHERE id = ?", updates)
    cluster_ids = [row[0] for row in conn.execute("SELECT DISTINCT cluster_id FROM articles WHERE cluster_id IS NOT NULL")]
    _refresh_clusters(conn, cluster_ids)


MIGRATION_BACKFILLS: dict[int, Callable[[sqlite3.Connection], None]] = {4: _add_origins}
