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
from collections.abc import Iterator
from pathlib import Path

from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE, UNIQUE
from newsdedup.retry import TRANSIENT_SKIPS, iso, utc_now
from newsdedup.storage.base import (
    ArticleRecord,
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

SCHEMA_VERSION = 3

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
    measure TEXT
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
    repeat_of TEXT NOT NULL
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
"""

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
# The tables of a newsdedup database; another program's SQLite file is refused rather than written into.
_OWN_TABLES = {"meta", "articles", "repeats", "skipped", "state", "failures", "site_runs"}
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
                    # A table the old file never had is created whole from SCHEMA below: nothing to alter.
                    if _table_of(statement) in tables:
                        conn.execute(statement)
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
                if conn.execute(_insert_sql("articles", ARTICLE_COLUMNS), _article_row(record)).rowcount:
                    committed[(record.site, record.status)] += 1
            for record in self._pending_repeats:
                row = tuple(getattr(record, c) for c in REPEAT_COLUMNS)
                if conn.execute(_insert_sql("repeats", REPEAT_COLUMNS), row).rowcount:
                    committed[(record.site, "repeat")] += 1
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
    def find_by_fingerprint(self, fingerprint: bytes) -> StoredRef | None:
        pending = self._pending_by_fingerprint.get(fingerprint)
        if pending is not None:
            return pending
        row = self.conn.execute(
            "SELECT id, url, cluster_id FROM articles WHERE fingerprint = ? ORDER BY id LIMIT 1",
            (fingerprint,),
        ).fetchone()
        return StoredRef(*row) if row else None

    def url_of(self, article_id: int) -> str | None:
        for record in self._pending_articles:
            if record.id == article_id:
                return record.url
        row = self.conn.execute("SELECT url FROM articles WHERE id = ?", (article_id,)).fetchone()
        return row[0] if row else None

    def iter_fingerprints(self) -> Iterator[bytes]:
        for (fingerprint,) in self.conn.execute("SELECT fingerprint FROM articles"):
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

    def iter_fetched_urls(self, *, now: str | None = None) -> Iterator[str]:
        now = now or iso(utc_now())
        query = """
            SELECT url FROM articles
            UNION ALL SELECT url FROM repeats
            UNION ALL SELECT url FROM skipped WHERE next_try_at IS NULL OR next_try_at > :now
            UNION ALL SELECT url FROM failures WHERE next_try_at IS NULL OR next_try_at > :now
        """
        for (url,) in self.conn.execute(query, {"now": now}):
            yield url

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

    def iter_cluster_centres(self) -> Iterator[ArticleRecord]:
        cursor = self.conn.execute(
            f"SELECT {', '.join(ARTICLE_COLUMNS)} FROM articles WHERE status = ? ORDER BY id", (UNIQUE,)
        )
        for row in cursor:
            yield _article_from_row(row)

    def iter_export(self) -> Iterator[dict]:
        """Articles and repeats in the order they were fetched (the export format of README.md)."""
        try:
            yield from self._iter_export()
        except sqlite3.DatabaseError as exc:
            raise StoreError(self._unusable(exc)) from None

    def _iter_export(self) -> Iterator[dict]:
        self.flush()
        query = """
            SELECT a.fetched_at, 0 AS kind, a.id, a.url, a.site, a.title, a.text, a.published_at,
                   a.author, a.source, a.status, a.duplicate_of, a.cluster_id, a.similarity, a.method,
                   a.score, a.measure
            FROM articles a
            UNION ALL
            SELECT r.fetched_at, 1 AS kind, r.id, r.url, r.site, r.title, a.text, r.published_at,
                   r.author, r.source, ?, r.repeat_of, a.cluster_id, 1.0, 'exact', 1.0, 'exact'
            FROM repeats r LEFT JOIN articles a ON a.url = r.repeat_of
            ORDER BY 1, 2, 3
        """
        for row in self.conn.execute(query, (EXACT_DUPLICATE,)):
            (_, _, _, url, site, title, text, published_at, author, source, status, duplicate_of,
             cluster_id, similarity, method, score, measure) = row
            yield {
                "url": url, "site": site, "title": title, "text": text,
                "published_at": published_at, "author": author, "source": source,
                "status": status, "duplicate_of": duplicate_of, "cluster_id": cluster_id,
                "similarity": similarity, "method": method, "score": score, "measure": measure,
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
