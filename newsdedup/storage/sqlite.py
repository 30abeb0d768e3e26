"""SQLite backend (the default): one file, WAL journal, batched transactions.

Durability: writes are buffered and committed every ``batch_size`` records (and on ``flush`` /
``close``), so a killed crawl loses at most the open batch; those pages were not recorded as
fetched either, so the next run fetches them again.  URLs are UNIQUE and inserts ignore a URL
already stored, so re-running a crawl never duplicates rows.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE, UNIQUE
from newsdedup.origin import date_of, earliest, origin_key
from newsdedup.storage.base import (
    ArticleRecord,
    ClusterMember,
    ClusterRecord,
    RepeatRecord,
    SkippedRecord,
    StoreCounts,
    StoredRef,
)
from newsdedup.text.hashing import from_signed64, to_signed64

SCHEMA_VERSION = 3

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
    fetched_at TEXT NOT NULL
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
    # Origin by publication time: _add_origins (MIGRATION_BACKFILLS) adds the dated_at/date_basis columns and
    # the clusters table, dates every stored page and fills one row per cluster, in the same transaction.
    3: (),
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
# Derived on insert from published_at, fetched_at and the URL (newsdedup.origin.date_of).
DATED_COLUMNS = ("dated_at", "date_basis")
CLUSTER_COLUMNS = (
    "cluster_id", "origin_url", "origin_dated_at", "origin_date_basis", "members", "first_fetched_at",
    "last_fetched_at",
)


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
                backfill = MIGRATION_BACKFILLS.get(target)
                if backfill is not None:
                    backfill(conn)
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
                _insert_sql("articles", ARTICLE_COLUMNS + DATED_COLUMNS),
                [_article_row(r) + _dated(r) for r in self._pending_articles],
            )
            conn.executemany(
                _insert_sql("repeats", REPEAT_COLUMNS + DATED_COLUMNS),
                [tuple(getattr(r, c) for c in REPEAT_COLUMNS) + _dated(r) for r in self._pending_repeats],
            )
            conn.executemany(
                _insert_sql("skipped", SKIPPED_COLUMNS),
                [tuple(getattr(r, c) for c in SKIPPED_COLUMNS) for r in self._pending_skipped],
            )
            touched = {r.cluster_id for r in self._pending_articles if r.cluster_id is not None}
            touched.update(_clusters_of(conn, (r.repeat_of for r in self._pending_repeats)))
            _refresh_clusters(conn, touched)
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

    def iter_fetched_urls(self, *, since: str | None = None) -> Iterator[str]:
        for table in ("articles", "repeats", "skipped"):
            if since is None:
                cursor = self.conn.execute(f"SELECT url FROM {table}")
            else:
                cursor = self.conn.execute(f"SELECT url FROM {table} WHERE fetched_at >= ?", (since,))
            for (url,) in cursor:
                yield url

    def knows_url(self, url: str) -> bool:
        row = self.conn.execute(
            """SELECT 1 FROM articles WHERE url = ? UNION ALL SELECT 1 FROM repeats WHERE url = ?
               UNION ALL SELECT 1 FROM skipped WHERE url = ? LIMIT 1""",
            (url, url, url),
        ).fetchone()
        return row is not None

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

    def iter_export(
        self, *, since: str | None = None, sites: tuple[str, ...] = (), statuses: tuple[str, ...] = (),
        cluster: int | None = None, after: dict[str, int] | None = None,
    ) -> Iterator[dict]:
        """Articles and repeats in the order they were fetched (the export format of README.md), filtered."""
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
    """Schema 3: date every stored page and write every cluster's row (databases written before origins)."""
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


MIGRATION_BACKFILLS: dict[int, Callable[[sqlite3.Connection], None]] = {3: _add_origins}
