"""Article storage, chosen by URI scheme: ``sqlite:///path`` (the default) or ``postgresql://...``.

>>> store = open_store("sqlite:///:memory:")
>>> type(store).__name__
'SQLiteStore'
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.storage.base import ArticleStore, StoreError, StoreInUse

DEFAULT_STORAGE_URI = defaults.NEWSDEDUP_STORAGE_URI


def sqlite_file(uri: str) -> str | None:
    """The database file a ``sqlite:///`` URI names (None: another scheme, or no file named).

    >>> sqlite_file("sqlite:////var/lib/news.sqlite"), sqlite_file("postgresql://host/db")
    ('/var/lib/news.sqlite', None)
    """
    return (unquote(uri[len("sqlite:///"):]) or None) if uri.startswith("sqlite:///") else None


def open_store(uri: str, *, batch_size: int = defaults.NEWSDEDUP_STORAGE_BATCH_SIZE,
               busy_timeout: float = defaults.NEWSDEDUP_STORAGE_BUSY_TIMEOUT,
               retries: int = defaults.NEWSDEDUP_STORAGE_RETRIES) -> ArticleStore:
    """Create (not yet open) the store a URI names.

    ``sqlite:///relative/path.sqlite`` and ``sqlite:////absolute/path.sqlite`` as in SQLAlchemy;
    ``postgresql://user:password@host:5432/dbname`` (needs ``pip install 'newsdedup[postgres]'``).
    ``busy_timeout`` (seconds) and ``retries`` say how long a write waits for another process's lock.
    """
    scheme = urlsplit(uri).scheme
    if scheme == "sqlite":
        from newsdedup.storage.sqlite import SQLiteStore

        path = sqlite_file(uri)
        if not path:
            raise ValueError(f"bad SQLite URI {uri!r}: write sqlite:///relative/file.sqlite or sqlite:////abs/file.sqlite")
        return SQLiteStore(path, batch_size=batch_size, busy_timeout=busy_timeout, retries=retries)
    if scheme in ("postgresql", "postgres"):
        try:
            from newsdedup.storage.postgres import PostgresStore
        except ImportError as exc:
            raise ValueError(
                f"storage URI {uri!r}: no module {exc.name}; PostgreSQL storage needs the postgres extra: "
                "pip install 'newsdedup[postgres]'"
            ) from None
        return PostgresStore(uri, batch_size=batch_size, busy_timeout=busy_timeout, retries=retries)
    raise ValueError(f"unknown storage URI scheme in {uri!r}: use sqlite:///PATH or postgresql://HOST/DBNAME")


__all__ = ["ArticleStore", "DEFAULT_STORAGE_URI", "StoreError", "StoreInUse", "open_store"]
