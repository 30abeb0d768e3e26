"""SQLite backend (the default): one file, WAL journal, batched transactions.

What is stored and how a batch is committed is shared with PostgreSQL (:mod:`newsdedup.storage.sql`); this
module opens the file, creates or migrates its schema, checks it (``PRAGMA quick_check``) and holds the run lock.

Another process holding the write lock is waited for (``busy_timeout``) and a commit that still
fails is retried with backoff; records that cannot be committed stay pending and are counted, never
reported as stored (:attr:`SQLiteStore.committed` counts only rows that reached the file).

One crawl writes to a database at a time: :meth:`SQLiteStore.lock_for_run` takes an exclusive
``flock`` on ``<database>.lock``, which the kernel releases when the process ends however it ends. A
distributed crawl's processes on one machine take turns with the same lock to be its one writer.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.clock import utc_iso, utc_now
from newsdedup.storage.base import STORAGE_OPTION, StoreError, StoreInUse
from newsdedup.storage.origin import date_of
from newsdedup.storage.sql import (  # noqa: F401 - re-exported: benchmarks and tests import them from here
    ARTICLE_COLUMNS,
    CLUSTER_COLUMNS,
    DATED_COLUMNS,
    FAILURE_COLUMNS,
    OWN_TABLES,
    REPEAT_COLUMNS,
    SCHEMA_VERSION,
    SKIPPED_COLUMNS,
    SQLITE_TYPES,
    SQLStore,
    like_pattern,
    refresh_clusters,
    schema,
    statements,
)

logger = logging.getLogger(__name__)

# Full-text search (the monitoring desk, ``newsdedup serve``): an FTS5 index of the articles' titles and texts with
# the trigram tokenizer, which finds any substring of three characters or more in Chinese as in other scripts, with
# no word segmentation to disagree with. External content (the text is not stored twice); triggers keep it in step,
# in the transaction that writes the article. Each column is indexed with two line feeds after it, so every
# occurrence of a one- or two-character word starts a trigram (one at the very end too): such a word is found
# through the index's vocabulary (articles_fts_terms), the trigrams that start with it.
_INDEXED = "coalesce({row}.title, '') || char(10, 10), coalesce({row}.text, '') || char(10, 10)"
SEARCH_STATEMENTS = (
    """CREATE VIRTUAL TABLE IF NOT EXISTS articles_fts USING fts5(
        title, text, content='articles', content_rowid='id', tokenize='trigram')""",
    "CREATE VIRTUAL TABLE IF NOT EXISTS articles_fts_terms USING fts5vocab(articles_fts, 'row')",
    f"""CREATE TRIGGER IF NOT EXISTS articles_fts_insert AFTER INSERT ON articles BEGIN
        INSERT INTO articles_fts (rowid, title, text) VALUES (new.id, {_INDEXED.format(row='new')});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS articles_fts_delete AFTER DELETE ON articles BEGIN
        INSERT INTO articles_fts (articles_fts, rowid, title, text) VALUES ('delete', old.id, {_INDEXED.format(row='old')});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS articles_fts_update AFTER UPDATE OF title, text ON articles BEGIN
        INSERT INTO articles_fts (articles_fts, rowid, title, text) VALUES ('delete', old.id, {_INDEXED.format(row='old')});
        INSERT INTO articles_fts (rowid, title, text) VALUES (new.id, {_INDEXED.format(row='new')});
    END""",
)
# A short word found in more trigrams than this is matched with LIKE instead (a common single character).
MAX_SHORT_TERM_TRIGRAMS = 2000
SEARCH_SCHEMA = "".join(f"{statement};\n" for statement in SEARCH_STATEMENTS)
SCHEMA = schema(SQLITE_TYPES) + SEARCH_SCHEMA
SCHEMA_STATEMENTS = (*statements(schema(SQLITE_TYPES)), *SEARCH_STATEMENTS)  # run one by one inside a transaction
_WHAT_TO_DO = f"move it away or name another file ({STORAGE_OPTION}sqlite:///PATH)"


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
    # A site's canonical URL is the one stored in url; fetched_url keeps the URL the page came from. Rows written
    # before were stored under the URL fetched.
    5: (
        "ALTER TABLE articles ADD COLUMN fetched_url TEXT",
        "ALTER TABLE repeats ADD COLUMN fetched_url TEXT",
        "UPDATE articles SET fetched_url = url",
        "UPDATE repeats SET fetched_url = url",
    ),
    # Passage reuse (newsdedup.dedup.reuse): the reuses table, created from SCHEMA; older articles have none.
    6: (),
    # Full-text search: _add_search (MIGRATION_BACKFILLS) creates the FTS5 index and its triggers and indexes every
    # stored article. The alerts table (newsdedup alerts) is created from SCHEMA.
    7: (),
    # Quotations in publication order: what decided a reuse's direction. Older rows were put in arrival order.
    8: ("ALTER TABLE reuses ADD COLUMN basis TEXT NOT NULL DEFAULT 'arrival'",),
}

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


# Between two tries of a database that refused its lock at once (SQLiteStore._prepare): long enough for the holder
# to finish a small write, short against busy_timeout.
_BUSY_PAUSE = 0.05

# Run locks held by this process, by lock-file path: [file descriptor, users]. A crawl command and its
# pipelines open the same database in one process; the lock is the process's, taken once.
_RUN_LOCKS: dict[str, list[int]] = {}


# The full check of a database file (PRAGMA quick_check) reads every page: 5 s and more at a million stories, most
# of a scheduled run's start, and minutes from a cold disk. A file this process checked (or found recorded as checked)
# is recorded at its last connection's clean close in ``<database>.checked``: its identity (device, inode, size,
# modification time in ns) and when it was last checked. The next run skips the check when the file is still exactly
# that (nothing wrote to it since: a write, a crash mid-run or a copy over it changes the identity; a WAL with frames
# means the last close was not clean) and the check is younger than CHECK_EVERY; otherwise it checks it again.
CHECK_EVERY = 24 * 3600.0
_OPEN_CONNECTIONS: dict[str, int] = {}  # connections of this process to a file, by its real path
_CHECKED_AT: dict[str, float] = {}  # files found sound in this process: when they were last fully checked


def _identity(path: Path) -> list[int] | None:
    try:
        status = os.stat(path)
        wal = os.stat(f"{path}-wal").st_size if os.path.exists(f"{path}-wal") else 0
    except OSError:
        return None
    return None if wal else [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns]


class SQLiteStore(SQLStore):
    """:class:`~newsdedup.storage.base.ArticleStore` on one SQLite file."""

    _errors = (sqlite3.DatabaseError,)

    def __init__(
        self, path: str | Path, *, batch_size: int = defaults.NEWSDEDUP_STORAGE_BATCH_SIZE,
                 busy_timeout: float = defaults.NEWSDEDUP_STORAGE_BUSY_TIMEOUT, retries: int = defaults.NEWSDEDUP_STORAGE_RETRIES,
        retry_delay: float = 1.0,
    ) -> None:
        super().__init__(batch_size=batch_size, busy_timeout=busy_timeout, retries=retries, retry_delay=retry_delay)
        self.path = Path(path)
        self.name = str(self.path)
        self._conn: sqlite3.Connection | None = None
        self._lock_key: str | None = None
        self._key: str | None = None  # the file's real path while this connection is open (see CHECK_EVERY)

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
            self._prepare(conn)
            self._check_columns(conn)
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
        self._key = os.path.realpath(self.path) if str(self.path) != ":memory:" else None
        if self._key is not None:
            _OPEN_CONNECTIONS[self._key] = _OPEN_CONNECTIONS.get(self._key, 0) + 1
        self._load_next_id()

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode, then the schema made or brought up to date; a busy database is tried again until
        ``busy_timeout`` is spent.

        SQLite refuses some lock conflicts at once instead of waiting out its busy timeout: switching a new file to
        WAL holds a read lock while it asks for the write lock, and is refused outright while another process holds
        that write lock (several processes of one run opening a new file together: CI, stop 40). Each step is one
        transaction or a no-op once done, so trying the whole again is safe."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                # NORMAL with WAL: a committed batch survives a crashed process; only an OS crash or power
                # loss can roll back the last commits, never corrupt the file.
                conn.execute("PRAGMA synchronous=NORMAL")
                self._migrate(conn)
                break
            except sqlite3.OperationalError as exc:
                remaining = deadline - time.monotonic()
                if not _is_busy(exc) or remaining <= 0:
                    raise
                time.sleep(min(_BUSY_PAUSE, remaining))
                # The next try waits for the lock no longer than the time left.
                conn.execute(f"PRAGMA busy_timeout = {max(1, int((remaining - _BUSY_PAUSE) * 1000))}")
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")  # the crawl's writes wait in full

    def _unusable(self, exc: Exception) -> str:
        return f"{self.path} is not a usable newsdedup database ({exc}): {_WHAT_TO_DO}"

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Create the schema in a new file, or bring an older one up to SCHEMA_VERSION."""
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if "meta" in tables else None
        if row is None:
            # A new file: created whole in one write transaction, decided again under its lock. Two processes of
            # one run opening a new file at once: one creates it, the other waits and finds it made (never half
            # made, which would read as another program's tables).
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                row = (conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                       if "meta" in tables else None)
                if row is None:
                    if tables and (tables - OWN_TABLES or "articles" in tables):
                        raise StoreError(
                            f"{self.path} is an SQLite database of another program (tables: "
                            f"{', '.join(sorted(tables))}) or of an unknown newsdedup version; newsdedup does not "
                            f"write into it: {_WHAT_TO_DO}"
                        )
                    for statement in SCHEMA_STATEMENTS:
                        conn.execute(statement)  # one by one: executescript would commit before the lock
                    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
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

    @property
    def _check_record(self) -> Path:
        return Path(f"{self.path}.checked")

    def check(self) -> None:
        """``PRAGMA quick_check`` (about 0.4 s per 500 MB): a damaged file is refused before a crawl writes to it.
        Skipped for a file unchanged since a clean close recorded it as checked within :data:`CHECK_EVERY`."""
        if self._key is not None:
            try:
                record = json.loads(self._check_record.read_text())
                if (record["file"] == _identity(self.path)
                        and 0 <= time.time() - float(record["checked_at"]) < CHECK_EVERY):
                    _CHECKED_AT[self._key] = float(record["checked_at"])
                    return
            except (OSError, ValueError, KeyError, TypeError):
                pass  # none yet, or unreadable: check
        checked_at = time.time()
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
        if self._key is not None:
            _CHECKED_AT[self._key] = checked_at

    def _closed(self, clean: bool) -> None:
        """This connection closed: the last one of the process to a file found sound records it (see CHECK_EVERY)."""
        key, self._key = self._key, None
        if key is None:
            return
        _OPEN_CONNECTIONS[key] -= 1
        if _OPEN_CONNECTIONS[key]:
            return
        del _OPEN_CONNECTIONS[key]
        checked_at = _CHECKED_AT.pop(key, None)
        record = self._check_record
        try:
            identity = _identity(self.path)
            if clean and checked_at is not None and identity is not None:
                temporary = record.with_name(record.name + ".tmp")
                temporary.write_text(json.dumps({"file": identity, "checked_at": checked_at}))
                os.replace(temporary, record)
            else:
                record.unlink(missing_ok=True)
        except OSError:  # a folder it cannot write: the next run checks the file
            pass

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
        os.write(fd, f"pid {os.getpid()}, started {utc_iso(utc_now())}".encode())
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
        clean = False
        try:
            self.flush()
            clean = True
        finally:
            self._conn.close()
            self._conn = None
            self._closed(clean)
            self._release_lock()

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the store is not open: call open() first")
        return self._conn

    # -- what the shared store needs (newsdedup.storage.sql.SQLStore) ---------------------------
    def _read(self, sql: str, params=()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def _stream(self, sql: str, params=()) -> Iterator[tuple]:
        yield from self.conn.execute(sql, params)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self.conn
        with conn:
            conn.execute("BEGIN IMMEDIATE")  # take the write lock first: a busy database fails here, not half way
            yield conn

    def _busy(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and _is_busy(exc)

    def _match_condition(self, terms: tuple[str, ...]) -> tuple[str, list]:
        # Every term through the trigram index: a term of three characters or more as a quoted phrase (the substring),
        # a shorter one as the trigrams of the index's vocabulary that start with it. A database of an older schema
        # opened read-only has no index, and a very common character has too many trigrams: LIKE for those.
        indexed = self._has_search_index()
        matches, where, params = [], [], []
        for term in terms:
            if indexed and len(term) >= 3:
                matches.append(_phrase(term))
                continue
            trigrams = self._trigrams_starting(term.lower()) if indexed else None
            if trigrams is None:
                where.append("(a.title LIKE ? ESCAPE '!' OR a.text LIKE ? ESCAPE '!')")
                params += [like_pattern(term)] * 2
            elif not trigrams:
                return "FALSE", []
            else:
                matches.append("(" + " OR ".join(_phrase(t) for t in trigrams) + ")")
        if matches:
            where.insert(0, "a.id IN (SELECT rowid FROM articles_fts WHERE articles_fts MATCH ?)")
            params.insert(0, " AND ".join(matches))
        return " AND ".join(where), params

    def _trigrams_starting(self, prefix: str) -> list[str] | None:
        """The indexed trigrams that start with ``prefix`` (None: too many to list)."""
        rows = self._read("SELECT term FROM articles_fts_terms WHERE term >= ? AND term < ? LIMIT ?",
                          (prefix, prefix + "\U0010ffff", MAX_SHORT_TERM_TRIGRAMS + 1)).fetchall()
        return None if len(rows) > MAX_SHORT_TERM_TRIGRAMS else [term for (term,) in rows]

    def _has_search_index(self) -> bool:
        return self._read("SELECT 1 FROM sqlite_master WHERE name = 'articles_fts_terms'").fetchone() is not None


def _add_origins(conn: sqlite3.Connection) -> None:
    """Schema 4: date every stored page and write every cluster's row (databases written before origins)."""
    for statement in SCHEMA_STATEMENTS:
        if statement.startswith("CREATE TABLE"):
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
    refresh_clusters(conn, cluster_ids)


def _phrase(text: str) -> str:
    """An FTS5 phrase matching ``text`` as it is."""
    return '"' + text.replace('"', '""') + '"'


def _add_search(conn: sqlite3.Connection) -> None:
    """Schema 7: the full-text index and its triggers, filled with every stored article."""
    for statement in SEARCH_STATEMENTS:  # one by one: executescript would commit the migration's transaction
        conn.execute(statement)
    conn.execute(f"INSERT INTO articles_fts (rowid, title, text) SELECT id, {_INDEXED.format(row='articles')} "
                 "FROM articles")


MIGRATION_BACKFILLS: dict[int, Callable[[sqlite3.Connection], None]] = {4: _add_origins, 7: _add_search}
