"""The desk's read-only access to a store: it never writes, never migrates, never takes the run lock.

SQLite opens the file with ``mode=ro`` (one connection per server thread: a connection is not shared between
threads); PostgreSQL runs every session with ``default_transaction_read_only`` (docs/desk.md gives a role that may
only SELECT, for a second line of defence). A store of an older schema is read as it is (search then reads every
row: its full-text index comes with the next crawl's migration); a newer one is refused.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote, urlsplit

from newsdedup.serve.readonly import check_version
from newsdedup.storage import sqlite_file
from newsdedup.storage.base import StoreError
from newsdedup.storage.sqlite import SQLiteStore


class ReadOnlySQLiteStore(SQLiteStore):
    """An SQLite store opened ``mode=ro``, a connection per thread."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()

    def open(self) -> None:
        if not self.path.is_file():
            raise StoreError(f"no database at {self.path}")
        try:
            conn = self.conn
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError(self._unusable(exc)) from None
        check_version(str(self.path), row and row[0])

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=self.busy_timeout,
                                   check_same_thread=False)  # closed by close(), from the main thread
            self._local.conn = conn
            with self._guard:
                self._all.append(conn)
        return conn

    def _write(self):
        raise StoreError(f"{self.path}: the desk opened it read-only")

    def lock_for_run(self) -> None:
        raise StoreError(f"{self.path}: the desk opened it read-only")

    def close(self) -> None:
        with self._guard:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


def open_readonly(uri: str):
    """The store ``uri`` names, open for reading only; StoreError (one line) when it cannot be read."""
    scheme = urlsplit(uri).scheme
    if scheme == "sqlite":
        path = sqlite_file(uri)
        if not path:
            raise StoreError(f"bad SQLite URI {uri!r}: write sqlite:///relative/file.sqlite or sqlite:////abs/file.sqlite")
        store = ReadOnlySQLiteStore(path)
    elif scheme in ("postgresql", "postgres"):
        try:
            from newsdedup.serve.pgstore import ReadOnlyPostgresStore
        except ImportError as exc:
            raise StoreError(f"storage URI {uri!r}: no module {exc.name}; PostgreSQL storage needs the postgres extra: "
                             "pip install 'newsdedup[postgres]'") from None
        store = ReadOnlyPostgresStore(uri)
    else:
        raise StoreError(f"unknown storage URI scheme in {uri!r}: use sqlite:///PATH or postgresql://HOST/DBNAME")
    store.open()
    return store
