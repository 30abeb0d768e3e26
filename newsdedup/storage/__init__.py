"""Article storage, chosen by URI scheme (``sqlite:///path``; PostgreSQL to come).

>>> store = open_store("sqlite:///:memory:")
>>> type(store).__name__
'SQLiteStore'
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from newsdedup.storage.base import ArticleStore, StoreError, StoreInUse

DEFAULT_STORAGE_URI = "sqlite:///newsdedup.sqlite"


def open_store(uri: str, *, batch_size: int = 100, busy_timeout: float = 30.0, retries: int = 3) -> ArticleStore:
    """Create (not yet open) the store a URI names.

    ``sqlite:///relative/path.sqlite`` and ``sqlite:////absolute/path.sqlite`` as in SQLAlchemy.
    ``busy_timeout`` (seconds) and ``retries`` say how long a write waits for another process's lock.
    """
    scheme = urlsplit(uri).scheme
    if scheme == "sqlite":
        from newsdedup.storage.sqlite import SQLiteStore

        path = unquote(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else ""
        if not path:
            raise ValueError(f"bad SQLite URI {uri!r}: write sqlite:///relative/file.sqlite or sqlite:////abs/file.sqlite")
        return SQLiteStore(path, batch_size=batch_size, busy_timeout=busy_timeout, retries=retries)
    if scheme in ("postgresql", "postgres"):
        raise ValueError(
            f"storage URI {uri!r}: the PostgreSQL backend is not available in this version; use sqlite:///PATH"
        )
    raise ValueError(f"unknown storage URI scheme in {uri!r}: use sqlite:///PATH")


__all__ = ["ArticleStore", "DEFAULT_STORAGE_URI", "StoreError", "StoreInUse", "open_store"]
