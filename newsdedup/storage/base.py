"""What every storage backend stores, and the interface the pipelines and CLI use.

The database is the source of truth: the dedup indexes (Bloom filters, Simhash and SpotSigs
indexes, cluster centres) are caches of it, persisted beside it or rebuilt from it when a crawl starts
(newsdedup.dedupstore.state).  A backend implements
:class:`ArticleStore`; :func:`newsdedup.storage.open_store` picks one by URI scheme.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from newsdedup.dedup.status import UNIQUE


@dataclass
class ArticleRecord:
    """One stored article page (unique or near-duplicate); ``id`` is reserved from the store."""

    id: int
    url: str
    site: str | None
    title: str | None
    text: str
    published_at: str | None
    author: str | None
    source: str | None
    canonical_url: str | None
    fetched_at: str
    fingerprint: bytes
    status: str = UNIQUE
    duplicate_of: str | None = None
    cluster_id: int | None = None
    similarity: float | None = None  # estimated overlap with duplicate_of, in [0, 1], the same for every method
    method: str | None = None
    # Near-duplicate features kept so indexes can be rebuilt without re-segmenting every text.
    simhash: int | None = None
    spots: bytes | None = None
    score: float | None = None  # the method's own figure for the match, named by measure
    measure: str | None = None  # jaccard | containment | hamming | cosine
    # ``url`` is the site's canonical URL of the article (newsdedup.discovery.canonical); this is the one fetched.
    fetched_url: str | None = None
    # Passages it reuses of earlier stored stories: rows of the reuses table, written in the article's transaction.
    reuses: tuple[ReuseRecord, ...] = ()


@dataclass(frozen=True)
class ReuseRecord:
    """Passages an article reuses of an earlier stored story (:mod:`newsdedup.dedup.reuse`): a quotation, a
    paragraph of background repeated, a report stitched into a roundup. The article keeps its own story.

    ``passages`` are ``(start, length, source_start, source_length, chars)``: raw character offsets and lengths in the
    article's text and in the source's, and the non-whitespace characters aligned between them.
    """

    source_id: int  # the story's stored article whose text the source offsets index (its id is the story's id)
    source_url: str
    chars: int  # aligned characters reused, all passages together
    fraction: float  # of the article's non-whitespace characters
    source_fraction: float  # of the source's
    passages: tuple[tuple[int, int, int, int, int], ...]
    # The direction's basis: "published" (the story published first is the quoted one) or "arrival" (a time
    # unknown or both the same: the one stored first is).
    basis: str = "arrival"
    # True: the stored story ``source_id``, published after this article, quotes it (the article arrived later).
    # Passages and fractions are then the quoting story's view: ``start``/``fraction`` index and count that story's
    # text, ``source_start``/``source_fraction`` this article's; the store writes the row of that story.
    quoted_by: bool = False

    def as_dict(self) -> dict:
        """The plain form ``newsdedup export``, feed exports and a distributed crawl's verdicts carry."""
        value = {
            "source_url": self.source_url, "source_cluster_id": self.source_id, "chars": self.chars,
            "fraction": self.fraction, "source_fraction": self.source_fraction,
            "passages": [dict(zip(PASSAGE_FIELDS, passage)) for passage in self.passages], "basis": self.basis,
        }
        if self.quoted_by:  # only on a page's verdict: a stored row always reads "this article quotes its source"
            value["quoted_by"] = True
        return value

    @classmethod
    def from_dict(cls, value: dict) -> ReuseRecord:
        return cls(value["source_cluster_id"], value["source_url"], value["chars"], value["fraction"],
                   value["source_fraction"], tuple(tuple(p[f] for f in PASSAGE_FIELDS) for p in value["passages"]),
                   value.get("basis", "arrival"), bool(value.get("quoted_by", False)))


PASSAGE_FIELDS = ("start", "length", "source_start", "source_length", "chars")


@dataclass(frozen=True)
class StoredReuse:
    """A stored reuse as the report shows it: the page that reuses, the story it quotes (with the stored text the
    source offsets index) and the passages (:class:`ReuseRecord`'s)."""

    url: str
    site: str | None
    title: str | None
    dated_at: str
    fetched_at: str
    source_cluster_id: int
    source_url: str
    source_site: str | None
    source_title: str | None
    source_dated_at: str
    source_text: str
    chars: int
    fraction: float
    source_fraction: float
    basis: str  # what decided the direction: "published" or "arrival" (ReuseRecord.basis)
    passages: tuple[tuple[int, int, int, int, int], ...]


@dataclass
class RepeatRecord:
    """An exact repeat: a page whose normalised body equals an already stored article's."""

    url: str
    site: str | None
    title: str | None
    published_at: str | None
    author: str | None
    source: str | None
    canonical_url: str | None
    fetched_at: str
    fingerprint: bytes
    repeat_of: str  # URL of the stored article it repeats
    # The story it joins (the repeated article's), when the crawl knows it; not a column: the table derives it
    # from repeat_of. It lets origin_of() see the repeats of the open batch.
    cluster_id: int | None = None
    fetched_url: str | None = None  # as in ArticleRecord


@dataclass
class SkippedRecord:
    """An article-pattern page that held no article (list, video, JavaScript-only, too short...).

    A transient reason (:data:`newsdedup.run.retry.TRANSIENT_SKIPS`) is tried again from ``next_try_at`` on;
    ``next_try_at`` None means done: the page is not fetched again.
    """

    url: str
    site: str | None
    reason: str
    detail: str
    fetched_at: str
    attempts: int = 1
    next_try_at: str | None = None


@dataclass
class FailureRecord:
    """An article page that could not be fetched (HTTP error, over-size download, redirect loop, network).

    Tried again from ``next_try_at`` on; None means given up (a 404, or too many attempts).
    """

    url: str
    site: str | None
    kind: str  # http_500, http_404, too_large_download, redirect_loop, timeout, connection, ...
    detail: str
    failed_at: str
    attempts: int = 1
    next_try_at: str | None = None


@dataclass
class SiteRunRecord:
    """One site's figures for one crawl run (the ``site_runs`` table; what monitoring reads)."""

    run_started_at: str
    site: str
    finished_at: str
    finish_reason: str
    exit_code: int
    list_pages: int = 0
    article_links: int = 0
    fetched: int = 0
    stored: int = 0
    repeats: int = 0
    skipped: int = 0
    failed: int = 0


# How a store's message names the option that picks the database: the crawl's spelling. A command that takes
# --storage shows the message with its own (StoreError.for_option).
STORAGE_OPTION = "-s NEWSDEDUP_STORAGE_URI="


class StoreError(Exception):
    """The database cannot be used (corrupt, foreign, newer, locked by another run, unreachable).

    The message is one line that names the database and what to do about it.
    """

    def for_option(self, option: str) -> str:
        """The message, naming the database option as a command takes it (``--storage URI``: ``"--storage "``)."""
        return str(self).replace(STORAGE_OPTION, option)


class StoreInUse(StoreError):
    """Another crawl holds this database's run lock."""


class RunLockLost(StoreError):
    """The connection that held this run's lock is gone (the server stopped, restarted or dropped it): another
    crawl may be writing now, so this one writes no more and should stop."""


@dataclass(frozen=True)
class StoredRef:
    """The few fields of a stored article that dedup decisions need."""

    id: int
    url: str
    cluster_id: int | None


class StoredRow(NamedTuple):
    """An article or repeat row as a persisted dedup state catches up with it (row order, see
    :meth:`ArticleStore.iter_articles_after`)."""

    id: int
    url: str
    fetched_at: str
    fingerprint: bytes
    cluster_id: int | None  # the story (a repeat's: the story of the article it repeats)
    active_at: str | None  # the story's last activity now (clusters.last_fetched_at)
    centre: bool  # an article that heads its story (status unique)
    spots: bytes | None = None  # its packed spot signatures, when asked for


@dataclass(frozen=True)
class ClusterRecord:
    """A story: its current origin (the member published first, see :mod:`newsdedup.storage.origin`) and activity.

    The store keeps one per cluster and rewrites it in the transaction that adds a member, so the origin
    always is the earliest of the stored members, however late an earlier copy arrived.
    """

    cluster_id: int
    origin_url: str
    origin_dated_at: str  # when the origin counts as published (UTC ISO 8601)
    origin_date_basis: str  # published | published_day | fetched
    members: int  # stored articles and exact repeats
    first_fetched_at: str
    last_fetched_at: str  # the retention window keeps a cluster while copies keep arriving


@dataclass(frozen=True)
class ClusterMember:
    """One page of a cluster as the report shows it: an article (unique / near duplicate) or an exact repeat."""

    url: str
    site: str | None
    title: str | None
    published_at: str | None
    fetched_at: str
    dated_at: str
    date_basis: str
    status: str  # unique | near_duplicate | exact_duplicate
    matched_url: str | None  # the page it was matched with: duplicate_of, or the article an exact repeat repeats
    similarity: float | None
    method: str | None
    measure: str | None
    fingerprint: bytes = b""  # exact-text fingerprint: members with equal ones carry the same text


class SearchHit(NamedTuple):
    """An article whose title or text matched a full-text search (:meth:`ArticleStore.search_articles`)."""

    id: int
    url: str
    site: str | None
    title: str | None
    dated_at: str
    fetched_at: str
    cluster_id: int | None
    status: str


@dataclass
class StoreCounts:
    articles: int = 0
    unique: int = 0
    near_duplicate: int = 0
    repeats: int = 0
    skipped: int = 0
    clusters_with_duplicates: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    failures: int = 0
    failures_by_kind: dict[str, int] = field(default_factory=dict)


class ArticleStore(Protocol):
    """Storage the crawl and the CLI rely on.  Writes are batched; ``flush`` makes them durable."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def new_article_id(self) -> int:
        """Reserve the id of the next article (cluster ids are the id of the cluster's first article)."""
        ...

    def add_article(self, record: ArticleRecord) -> None: ...

    def add_repeat(self, record: RepeatRecord) -> None: ...

    def add_skipped(self, record: SkippedRecord) -> None: ...

    def add_failure(self, record: FailureRecord) -> None: ...

    def add_site_run(self, record: SiteRunRecord) -> None: ...

    def flush(self) -> None:
        """Commit everything pending, retrying a busy database with backoff; raise StoreError when it
        cannot (the records stay pending, so a later flush may still save them)."""
        ...

    def on_commit(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every successful commit."""
        ...

    def on_lock_lost(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(message)`` once when the run lock is found lost (:class:`RunLockLost`)."""
        ...

    def pending_count(self) -> int:
        """Records added but not committed yet."""
        ...

    @property
    def committed(self) -> Counter:
        """Rows committed by this store object, keyed ``(site, what)``: ``unique``, ``near_duplicate``,
        ``repeat``, ``skipped/<reason>``, ``failed/<kind>``. Crawl stats are built from these, never from
        records that were only added."""
        ...

    def lock_for_run(self) -> None:
        """Take the database's run lock for this process (re-entrant); raise StoreInUse if another has it."""
        ...

    def check(self) -> None:
        """Check the database is newsdedup's and intact; raise StoreError with what to do."""
        ...

    def has_page(self, url: str) -> bool:
        """Whether an article or exact repeat with this URL is stored or pending (a page fetched twice,
        e.g. after a JOBDIR resume, is not recorded twice)."""
        ...

    def attempts_of(self, url: str) -> int:
        """How many earlier runs skipped or failed this URL (0 if none)."""
        ...

    def site_had_article_links(self, site: str) -> bool:
        """Whether an earlier run found article links for this site (or recorded any page of it)."""
        ...

    def iter_failures(self, *, sites: tuple[str, ...] = (), skip_reasons: Collection[str] = ()) -> Iterator[dict]:
        """HTTP failures, and the skips whose reason is one of ``skip_reasons`` (the run policy's transient ones,
        :data:`newsdedup.run.retry.TRANSIENT_SKIPS`), most recent first, for ``newsdedup failures``."""
        ...

    def save_state(self, name: str, data: bytes) -> None:
        """Persist a named blob of dedup state (committed together with everything pending)."""
        ...

    def load_state(self, name: str) -> bytes | None: ...

    def find_by_fingerprint(self, fingerprint: bytes, *, since: str | None = None) -> StoredRef | None:
        """The latest stored (or pending) article with this exact-text fingerprint, if any; with ``since``,
        only one whose cluster was active since then (the retention window)."""
        ...

    def url_of(self, article_id: int) -> str | None: ...

    def origin_of(self, cluster_id: int) -> str | None:
        """URL of the story's origin (its copy published first, newsdedup.storage.origin) among the pages stored so far,
        committed or in the open batch; None for a story with no page stored."""
        ...

    def iter_fingerprints(self, *, since: str | None = None) -> Iterator[bytes]:
        """Exact-text fingerprints of stored articles; with ``since``, of clusters active since then."""
        ...

    def iter_fetched_urls(self, *, now: str | None = None, since: str | None = None) -> Iterator[str]:
        """URLs of article-pattern pages not to fetch again: articles, repeats, and skipped or failed
        pages that are done or not due yet (``next_try_at`` after ``now``, an ISO time; default: now);
        with ``since``, only those fetched since then (the retention window)."""
        ...

    def knows_url(self, url: str, *, now: str | None = None) -> bool:
        """Whether an article-pattern page at exactly ``url`` was handled for good by any earlier run."""
        ...

    def iter_cluster_centres(self, *, since: str | None = None, after: int | None = None) -> Iterator[ArticleRecord]:
        """Articles that head a cluster (status unique), in id order, for rebuilding the near index
        (with ``since``: of clusters active since then; with ``after``: only ids above it, a persisted index
        catching up from its high-water mark)."""
        ...

    def iter_centre_ids(self, *, since: str | None = None) -> Iterator[int]:
        """The ids of the articles :meth:`iter_cluster_centres` yields (any order), from the clusters of the window
        without reading the articles: what a persisted index of the stories checks its own against when it opens
        (the retention window moved)."""
        ...

    def last_article_id(self) -> int:
        """The highest committed article id (0 for an empty store): the mark a persisted index of the store is
        checked against when it opens (ahead of it: rolled back; behind: catches up)."""
        ...

    def last_repeat_id(self) -> int:
        """The highest committed repeat id (0 for none): the second mark of a persisted dedup state."""
        ...

    def iter_articles_after(self, after: int, *, spots: bool = False) -> Iterator[StoredRow]:
        """Committed articles with an id above ``after``, in id order, with their story's current activity (and
        with ``spots`` their packed spots): what a persisted dedup state catches up from
        (newsdedup.dedupstore.state)."""
        ...

    def iter_repeats_after(self, after: int) -> Iterator[StoredRow]:
        """Committed repeats with an id above ``after``, in id order, with the story they joined."""
        ...

    def iter_cluster_fingerprints(self, cluster_ids: Iterable[int], *, up_to: int) -> Iterator[tuple[int, bytes]]:
        """``(cluster id, fingerprint)`` of the articles of ``cluster_ids`` with an id up to ``up_to``."""
        ...

    def iter_cluster_activity(self, *, since: str | None = None) -> Iterator[tuple[int, str]]:
        """``(cluster id, last activity)`` of every story (with ``since``: active since then), by cluster id."""
        ...

    def iter_retry_urls(self, *, now: str | None = None, since: str | None = None) -> Iterator[str]:
        """The skipped and failed pages among :meth:`iter_fetched_urls`."""
        ...

    def cluster(self, cluster_id: int) -> ClusterRecord | None: ...

    def iter_clusters(
        self, *, since: str | None = None, min_members: int = 2, sites: tuple[str, ...] = (), query: str | None = None,
    ) -> Iterator[tuple[ClusterRecord, list[ClusterMember]]]:
        """Clusters active since ``since`` with at least ``min_members`` pages, having a page of one of ``sites`` and a
        title or text containing ``query``; most members first, each with its members in origin order."""
        ...

    def iter_export(
        self, *, since: str | None = None, sites: tuple[str, ...] = (), statuses: tuple[str, ...] = (),
        cluster: int | None = None, after: dict[str, int] | None = None,
    ) -> Iterator[dict]:
        """One dict per article page fetched, in the export format of docs/commands.md (*newsdedup export*),
        filtered; ``after`` is a cursor ``{"articles": id, "repeats": id}`` of rows already exported, and
        each dict's ``cursor`` the cursor that includes it."""
        ...

    def article_text(self, article_id: int) -> str | None:
        """The text of a stored (or pending) article; None when there is none with this id."""
        ...

    def article_title(self, article_id: int) -> str | None:
        """The title of a stored (or pending) article; None when it has none or there is none with this id."""
        ...

    def iter_reuses(self, *, since: str | None = None, sites: tuple[str, ...] = (),
                    query: str | None = None, cluster: int | None = None) -> Iterator[StoredReuse]:
        """Passage reuses by pages fetched since ``since``, where the page or the story it quotes is of one of
        ``sites`` and has ``query`` in its title or text (and, with ``cluster``, one of the two is that story); grouped by the story quoted, most characters first."""
        ...

    def cluster_members(self, cluster_id: int) -> list[ClusterMember]:
        """The pages of one story (articles and exact repeats), the origin first."""
        ...

    def cluster_texts(self, cluster_id: int) -> dict[str, str]:
        """The stored text of each page of a story, by URL."""
        ...

    def iter_site_runs(self, *, since: str | None = None) -> Iterator[SiteRunRecord]:
        """Each site's figures for each run started since ``since``, newest run first."""
        ...

    def last_run_finished_at(self) -> str | None: ...

    def search_articles(self, terms: Iterable[str], *, since: str | None = None, sites: tuple[str, ...] = (),
                        limit: int = 5000) -> list[SearchHit]:
        """Articles whose title or text contains every term (any case), the last stored first (the full-text index)."""
        ...

    def counts(self) -> StoreCounts: ...
