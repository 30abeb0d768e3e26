"""The desk's read-only PostgreSQL store: every session read-only (``default_transaction_read_only``)."""

from __future__ import annotations

import psycopg
from psycopg_pool import ConnectionPool

from newsdedup.serve.readonly import check_version
from newsdedup.storage.base import StoreError
from newsdedup.storage.postgres import PostgresStore

READ_ONLY = "-c default_transaction_read_only=on"


class ReadOnlyPostgresStore(PostgresStore):
    """A PostgreSQL store whose connections cannot write; the schema is read, never created or migrated."""

    def open(self) -> None:
        if self._pool is not None:
            return
        kwargs = {"autocommit": True, "options": READ_ONLY}
        try:
            with psycopg.connect(self.uri, connect_timeout=10, **kwargs) as conn:
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL {self.name}: cannot read the store ({' '.join(str(exc).split())}); check "
                             "the server, the URI and the role's SELECT rights") from None
        check_version(self.name, row and row[0])
        self._pool = ConnectionPool(self.uri, min_size=1, max_size=self.pool_size, kwargs=kwargs, open=True,
                                    timeout=max(self.busy_timeout, 5.0), name="newsdedup-desk")

    def _writer_connection(self):
        raise StoreError(f"{self.name}: the desk opened it read-only")
