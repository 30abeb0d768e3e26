"""SQLite backend (the default): one file, WAL journal, batched transactions.

Durability: writes are buffered and committed every ``batch_size`` records (and on ``flush`` /
``close``), so a killed crawl loses at most the open batch; those pages were not recorded as
fetched either, so the next run fetches them again.  URLs are UNIQUE and inserts ignore a URL
already stored, so re-running a crawl never duplicates rows.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE, UNIQUE
from newsdedup.storage.base import (
    ArticleRecord,
    RepeatRecord,
    SkippedRecord,
    StoreCounts,
    StoredRef,
)
from newsdedup.text.hashing import from_signed64, to_signed64

SCHEMA_VERSION = 2

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
    fetched_at TEXT NOT NULL
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
SKIPPED_COLUMNS = ("url", "site", "reason", "detail", "fetched_at")


def _insert_sql(table: str, columns: tuple[str, ...]) -> str:
    placeholders = ", ".join("?" for _ in columns)
    # OR IGNORE: a URL stored by an earlier run (or earlier in this one) keeps its first record.
    return f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"


class SQLiteStore:
    """:class:`~newsdedup.storage.base.ArticleStore` on one SQLite file."""

    def __init__(self, path: str | Path, *, batch_size: int = 100) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.path = Path(path)
        self.batch_size = batch_size
        self._conn: sqlite3.Connection | None = None
        self._pending_articles: list[ArticleRecord] = []
        self._pending_repeats: list[RepeatRecord] = []
        self._pending_skipped: list[SkippedRecord] = []
        # Fingerprints of not-yet-committed articles, so exact checks see the open batch too.
        self._pending_by_fingerprint: dict[bytes, StoredRef] = {}
        self._next_id = 1

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        if self._conn is not None:
            return
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL with WAL: a committed batch survives a crashed process; only an OS crash or power
        # loss can roll back the last commits, never corrupt the file.
        conn.execute("PRAGMA synchronous=NORMAL")
        self._migrate(conn)
        self._conn = conn
        self._next_id = (conn.execute("SELECT COALESCE(MAX(id), 0) FROM articles").fetchone()[0]) + 1

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Create the schema in a new file, or bring an older one up to SCHEMA_VERSION."""
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if has_meta else None
        if row is None:
            conn.executescript(SCHEMA)
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            return
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path} has schema version {version}, newer than this newsdedup's {SCHEMA_VERSION}: "
                "upgrade newsdedup or use another database file"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for statement in MIGRATIONS[target]:
                    conn.execute(statement)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(target),))
        conn.executescript(SCHEMA)  # indexes and tables added since without a migration step

    def close(self) -> None:
        if self._conn is None:
            return
        self.flush()
        self._conn.close()
        self._conn = None

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
        self._pending_by_fingerprint.setdefault(
            record.fingerprint, StoredRef(record.id, record.url, record.cluster_id)
        )
        self._maybe_flush()

    def add_repeat(self, record: RepeatRecord) -> None:
        self._pending_repeats.append(record)
        self._maybe_flush()

    def add_skipped(self, record: SkippedRecord) -> None:
        self._pending_skipped.append(record)
        self._maybe_flush()

    def _pending(self) -> int:
        return len(self._pending_articles) + len(self._pending_repeats) + len(self._pending_skipped)

    def _maybe_flush(self) -> None:
        if self._pending() >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self._pending():
            return
        conn = self.conn
        with conn:  # one transaction a batch
            conn.execute("BEGIN")
            conn.executemany(
                _insert_sql("articles", ARTICLE_COLUMNS),
                [_article_row(r) for r in self._pending_articles],
            )
            conn.executemany(
                _insert_sql("repeats", REPEAT_COLUMNS),
                [tuple(getattr(r, c) for c in REPEAT_COLUMNS) for r in self._pending_repeats],
            )
            conn.executemany(
                _insert_sql("skipped", SKIPPED_COLUMNS),
                [tuple(getattr(r, c) for c in SKIPPED_COLUMNS) for r in self._pending_skipped],
            )
        self._pending_articles.clear()
        self._pending_repeats.clear()
        self._pending_skipped.clear()
        self._pending_by_fingerprint.clear()

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

    def iter_fetched_urls(self) -> Iterator[str]:
        for table in ("articles", "repeats", "skipped"):
            for (url,) in self.conn.execute(f"SELECT url FROM {table}"):
                yield url

    def iter_cluster_centres(self) -> Iterator[ArticleRecord]:
        cursor = self.conn.execute(
            f"SELECT {', '.join(ARTICLE_COLUMNS)} FROM articles WHERE status = ? ORDER BY id", (UNIQUE,)
        )
        for row in cursor:
            yield _article_from_row(row)

    def iter_export(self) -> Iterator[dict]:
        """Articles and repeats in the order they were fetched (the export format of README.md)."""
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
        return StoreCounts(
            articles=sum(by_status.values()),
            unique=by_status.get(UNIQUE, 0),
            near_duplicate=by_status.get(NEAR_DUPLICATE, 0),
            repeats=conn.execute("SELECT COUNT(*) FROM repeats").fetchone()[0],
            skipped=sum(reasons.values()),
            clusters_with_duplicates=clusters,
            skipped_by_reason=dict(reasons),
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
