"""PostgreSQL backend: ``NEWSDEDUP_STORAGE_URI=postgresql://user:password@host:5432/dbname``.

The same tables, SQL and batching as SQLite (:mod:`newsdedup.storage.sql`); here only what a server needs:

- reads go through a :class:`psycopg_pool.ConnectionPool`; long ones (the URL filter, the cluster centres a
  crawl rebuilds its index from, an export) through server-side cursors, so a big store is never held in memory;
- writes go through one dedicated connection, the one that also holds the **run lock**, a session advisory lock
  (``pg_try_advisory_lock``): the server releases it when the connection ends, however the process ends, and a
  process that lost its connection lost its lock with it and cannot commit either (no two writers, ever);
- the schema is created in one transaction under a transaction advisory lock, so crawls that start together
  on an empty database do not race; ``meta.schema_version`` is the same number as SQLite's, and a database
  written by a newer newsdedup is refused.

A commit waits at most ``busy_timeout`` seconds for a row lock (``lock_timeout``) and is retried like SQLite's.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors
from psycopg_pool import ConnectionPool, PoolTimeout

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.storage.base import STORAGE_OPTION, RunLockLost, StoreError, StoreInUse
from newsdedup.storage.sql import (
    ALERTS_TABLE,
    ARTICLE_COLUMNS,
    FAILURE_COLUMNS,
    OWN_TABLES,
    POSTGRES_TYPES,
    REPEAT_COLUMNS,
    REUSES_TABLE,
    SCHEMA_VERSION,
    SKIPPED_COLUMNS,
    SQLStore,
    like_pattern,
    pg_sql,
    schema,
    statements,
)

logger = logging.getLogger(__name__)

# Advisory lock keys (any two numbers no other program on the database uses): the run lock, held for a whole
# crawl, and the schema lock, held while a transaction creates the tables.
RUN_LOCK_KEY = 0x6E657773  # "news"
SCHEMA_LOCK_KEY = 0x6E657774
_WHAT_TO_DO = (f"use a database of its own for newsdedup (createdb newsdedup) and name it "
               f"({STORAGE_OPTION}postgresql://USER@HOST/newsdedup)")
_cursor_names = count(1)
# Steps that bring a database written by an older newsdedup to SCHEMA_VERSION: MIGRATIONS[v] takes v - 1 to v
# (as newsdedup.storage.sqlite's; PostgreSQL databases start at version 4).
MIGRATIONS: dict[int, tuple[str, ...]] = {
    # A site's canonical URL is stored in url; fetched_url keeps the URL the page came from (before: url).
    5: (
        "ALTER TABLE articles ADD COLUMN IF NOT EXISTS fetched_url TEXT",
        "ALTER TABLE repeats ADD COLUMN IF NOT EXISTS fetched_url TEXT",
        "UPDATE articles SET fetched_url = url WHERE fetched_url IS NULL",
        "UPDATE repeats SET fetched_url = url WHERE fetched_url IS NULL",
    ),
    # Passage reuse (newsdedup.dedup.reuse): the reuses table; older articles have none.
    6: tuple(statements(REUSES_TABLE.format(**POSTGRES_TYPES))),
    # Full-text search: _add_search adds the trigram indexes; alerts owed and sent (newsdedup alerts).
    7: tuple(statements(ALERTS_TABLE.format(**POSTGRES_TYPES))),
    # Quotations in publication order: what decided a reuse's direction. Older rows were put in arrival order.
    8: ("ALTER TABLE reuses ADD COLUMN IF NOT EXISTS basis TEXT NOT NULL DEFAULT 'arrival'",),
}
# Full-text search (the monitoring desk): pg_trgm's GIN indexes answer ILIKE '%term%' over titles and texts, the same
# substring match as SQLite's FTS5 trigram index; PostgreSQL updates them in the transaction that writes the article.
SEARCH_INDEXES = (
    "CREATE INDEX IF NOT EXISTS articles_title_trgm ON articles USING gin (title gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS articles_text_trgm ON articles USING gin (text gin_trgm_ops)",
)
_APPLICATION = "newsdedup "  # application_name of the writer connection: "newsdedup pid N on HOST"


def redacted(uri: str) -> str:
    """The URI without its password, for messages.

    >>> redacted("postgresql://news:secret@db.example:5432/newsdedup")
    'postgresql://news@db.example:5432/newsdedup'
    """
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class _Rows:
    """The rows of a finished query, read like a cursor."""

    def __init__(self, rows: list[tuple], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> tuple | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple]:
        return self._rows

    def __iter__(self):
        return iter(self._rows)


class _Transaction:
    """Our ``?`` placeholders on a psycopg connection inside a transaction."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Any = ()) -> psycopg.Cursor:
        return self.conn.execute(pg_sql(sql), params)  # params never None: psycopg then reads %% as %

    def executemany(self, sql: str, params) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(pg_sql(sql), params)


class PostgresStore(SQLStore):
    """:class:`~newsdedup.storage.base.ArticleStore` on a PostgreSQL database."""

    _errors = (psycopg.Error, PoolTimeout)

    def __init__(self, uri: str, *, batch_size: int = defaults.NEWSDEDUP_STORAGE_BATCH_SIZE,
                 busy_timeout: float = defaults.NEWSDEDUP_STORAGE_BUSY_TIMEOUT, retries: int = defaults.NEWSDEDUP_STORAGE_RETRIES,
                 retry_delay: float = 1.0, pool_size: int = 4) -> None:
        super().__init__(batch_size=batch_size, busy_timeout=busy_timeout, retries=retries, retry_delay=retry_delay)
        self.uri = uri
        self.name = redacted(uri)
        self.pool_size = pool_size
        self._pool: ConnectionPool | None = None
        self._writer: psycopg.Connection | None = None
        self._locked = False

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        if self._pool is not None:
            return
        try:
            conn = psycopg.connect(self.uri, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(
                f"PostgreSQL {self.name}: cannot connect ({' '.join(str(exc).split())}); check the server, the URI "
                "and the user's rights"
            ) from None
        try:
            self._create_or_check_schema(conn)
        except psycopg.Error as exc:
            raise StoreError(self._unusable(exc)) from None
        finally:
            conn.close()
        self._pool = ConnectionPool(
            self.uri, min_size=1, max_size=self.pool_size, kwargs={"autocommit": True}, open=True,
            timeout=max(self.busy_timeout, 5.0), name="newsdedup-read",
        )
        self._load_next_id()

    def _create_or_check_schema(self, conn: psycopg.Connection) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
            tables = {name for (name,) in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}
            version = None
            if "meta" in tables:
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                version = row[0] if row else None
            if version is None:
                if "articles" in tables or (tables & OWN_TABLES and tables - OWN_TABLES):
                    raise StoreError(
                        f"{self.name} holds tables of another program or of an unknown newsdedup version "
                        f"({', '.join(sorted(tables))}); newsdedup does not write into it: {_WHAT_TO_DO}"
                    )
                for statement in statements(schema(POSTGRES_TYPES)):
                    conn.execute(statement)
                conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', %s) ON CONFLICT DO NOTHING",
                             (str(SCHEMA_VERSION),))
                self._add_search(conn)
                return
        if not str(version).isdigit():
            raise StoreError(f"{self.name}: schema_version {version!r} is not a number: {_WHAT_TO_DO}")
        if int(version) > SCHEMA_VERSION:
            raise StoreError(
                f"{self.name} has schema version {version}, newer than this newsdedup's {SCHEMA_VERSION}: "
                "upgrade newsdedup (pip install -U newsdedup) or use another database"
            )
        if int(version) < 4:  # PostgreSQL support began at version 4: nothing older exists
            raise StoreError(f"{self.name} has schema version {version}, which no newsdedup wrote: {_WHAT_TO_DO}")
        if int(version) < SCHEMA_VERSION:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_KEY,))
                current = int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
                for target in range(current + 1, SCHEMA_VERSION + 1):  # another process may have migrated meanwhile
                    for statement in MIGRATIONS[target]:
                        conn.execute(statement)
                    if target == 7:
                        self._add_search(conn)
                    conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(target),))

    def _add_search(self, conn: psycopg.Connection) -> None:
        """The trigram indexes of full-text search. Without the pg_trgm extension (not installed on the server, or
        the user may not create it) search still works, reading every row: a warning says how to add them."""
        try:
            with conn.transaction():  # a savepoint: a refused extension leaves the schema's transaction usable
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                for statement in SEARCH_INDEXES:
                    conn.execute(statement)
        except psycopg.Error as exc:
            logger.warning("%s: no full-text index (%s); search reads every article. A superuser can add it: "
                           "CREATE EXTENSION pg_trgm; %s", self.name, " ".join(str(exc).split()),
                           "; ".join(SEARCH_INDEXES))
            return
        ctype = conn.execute("SHOW lc_ctype").fetchone()[0]
        if ctype in ("C", "POSIX"):  # pg_trgm takes only letters and digits as the locale classifies them
            logger.warning("%s: its LC_CTYPE is %s, where Chinese characters are not letters: the trigram index holds "
                           "none of them and a search of Chinese words reads every article. Create the database with "
                           "a UTF-8 locale (createdb --locale=C.UTF-8 --template=template0 ...)", self.name, ctype)

    def _unusable(self, exc: Exception) -> str:
        return f"{self.name} is not a usable newsdedup database ({' '.join(str(exc).split())}): {_WHAT_TO_DO}"

    def check(self) -> None:
        """Every table has the columns this newsdedup writes (the tables were made by it, not altered)."""
        expected = {"articles": ARTICLE_COLUMNS, "repeats": REPEAT_COLUMNS, "skipped": SKIPPED_COLUMNS,
                    "failures": FAILURE_COLUMNS}
        rows = self._read(
            """SELECT table_name, column_name FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name IN ('articles', 'repeats', 'skipped', 'failures')"""
        ).fetchall()
        present: dict[str, set[str]] = {}
        for table, column in rows:
            present.setdefault(table, set()).add(column)
        for table, columns in expected.items():
            missing = [c for c in columns if c not in present.get(table, set())]
            if missing:
                raise StoreError(f"{self.name}: table {table} lacks column(s) {', '.join(missing)}: {_WHAT_TO_DO}")

    def _run_lock_gone(self) -> bool:
        if not self._locked:
            return False
        writer = self._writer
        if writer is None or writer.closed or writer.broken:
            return True
        try:  # a server that went away is seen here at once, not after a read waited for the pool
            writer.execute("SELECT 1")
            return False
        except psycopg.Error:
            return True

    def _writer_connection(self) -> psycopg.Connection:
        if self._writer is None or self._writer.closed:
            if self._locked:
                # The connection that held the run lock is gone, and the lock with it: another process may be
                # writing now. Never write without it.
                self._lose_run_lock()
                raise RunLockLost(self.lock_lost)
            name = f"{_APPLICATION}pid {os.getpid()} on {socket.gethostname()}"[:63]
            self._writer = psycopg.connect(self.uri, autocommit=True, connect_timeout=10, application_name=name)
            # A commit waits this long for a row another transaction holds, then fails and is retried.
            self._writer.execute(f"SET lock_timeout = '{int(self.busy_timeout * 1000)}ms'")
        return self._writer

    def lock_for_run(self) -> None:
        """Take the run lock (a session advisory lock on the writer connection); re-entrant."""
        if self._locked:
            return
        conn = self._writer_connection()
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (RUN_LOCK_KEY,)).fetchone()[0]:
            holder = conn.execute(
                """SELECT a.application_name, a.client_addr, a.backend_start FROM pg_locks l
                   JOIN pg_stat_activity a ON a.pid = l.pid
                   WHERE l.locktype = 'advisory' AND l.classid = 0 AND l.objid = %s AND l.granted""",
                (RUN_LOCK_KEY,),
            ).fetchone()
            who = "process unknown"
            if holder:
                client = (holder[0] or "").removeprefix(_APPLICATION) or "a client"
                who = f"{client}, from {holder[1] or 'a local socket'}, connected {holder[2]:%Y-%m-%d %H:%M:%S %Z}"
            raise StoreInUse(
                f"{self.name} is in use by another crawl ({who}); one crawl writes to a database at a time: wait for "
                "it to finish, crawl into another database, or run the crawls as workers of one distributed crawl"
            )
        self._locked = True

    def holds_run_lock(self) -> bool:
        return self._locked and self._writer is not None and not self._writer.closed

    def close(self) -> None:
        """Commit what is pending and close; raises StoreError (after closing) if the commit failed."""
        if self._pool is None:
            self._close_connections()
            return
        self._close_with_flush(self._close_connections)

    def _close_connections(self) -> None:
        writer, self._writer = self._writer, None
        self._locked = False
        if writer is not None:
            writer.close()  # ends the session: the server releases its advisory lock
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    # -- what the shared store needs (newsdedup.storage.sql.SQLStore) ---------------------------
    @property
    def pool(self) -> ConnectionPool:
        if self._pool is None:
            raise RuntimeError("the store is not open: call open() first")
        return self._pool

    def _read(self, sql: str, params: Any = ()) -> _Rows:
        with self._reading() as conn:
            cursor = conn.execute(pg_sql(sql), params)
            return _Rows(cursor.fetchall() if cursor.description else [], cursor.rowcount)

    def _stream(self, sql: str, params: Any = ()) -> Iterator[tuple]:
        # A server-side cursor: rows arrive a thousand at a time instead of all at once.
        with self._reading() as conn, conn.transaction():
            with conn.cursor(name=f"newsdedup_{next(_cursor_names)}") as cursor:
                cursor.itersize = 1000
                cursor.execute(pg_sql(sql), params)
                yield from cursor

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection]:
        """A pooled connection to read on. Once the run lock is lost the crawl is stopping: reads fail at once
        instead of each waiting for the pool, and a read failing because the server went away finds it lost."""
        if self.lock_lost is not None:
            raise RunLockLost(self.lock_lost)
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            if self._run_lock_gone():
                self._lose_run_lock()
                raise RunLockLost(self.lock_lost) from None
            raise StoreError(f"{self.name}: cannot read ({' '.join(str(exc).split())})") from None

    @contextmanager
    def _write(self) -> Iterator[_Transaction]:
        conn = self._writer_connection()
        with conn.transaction():
            yield _Transaction(conn)

    def _match_condition(self, terms: tuple[str, ...]) -> tuple[str, list]:
        # ILIKE: the pg_trgm indexes serve terms of three characters or more, shorter ones read the rows.
        patterns = [like_pattern(term) for term in terms]
        condition = " AND ".join("(a.title ILIKE ? ESCAPE '!' OR a.text ILIKE ? ESCAPE '!')" for _ in terms)
        return condition, [p for pattern in patterns for p in (pattern, pattern)]

    def _busy(self, exc: Exception) -> bool:
        # A row lock held past lock_timeout, or two transactions that had to be told apart: try again.
        return isinstance(exc, (errors.LockNotAvailable, errors.DeadlockDetected, errors.SerializationFailure,
                                PoolTimeout))
