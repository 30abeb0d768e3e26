"""The library API: :func:`extract_article` for one page, :class:`Deduplicator` for a stream of texts.

Both run what the crawl runs: the crawl's extraction (with its decoding of GBK/GB18030 pages behind lying charset
declarations), and its dedup decision (:class:`~newsdedup.dedup.engine.DedupEngine`: the exact stage, then
Single-Pass near-duplicate clustering) with the same settings and defaults (:mod:`newsdedup.defaults`).
``newsdedup dedup`` is :meth:`Deduplicator.add_many` over a JSON-lines file. Import them from the package:
``from newsdedup import Deduplicator, extract_article``.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Union, cast

from newsdedup import defaults
from newsdedup.dedup.engine import DedupEngine, Verdict
from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE, UNIQUE
from newsdedup.extract import extractor
from newsdedup.extract.extractor import Article, SkipPage

if TYPE_CHECKING:
    from newsdedup.crawl.reuse_index import StoryReuse
    from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor
    from newsdedup.dedup.reuse import ReuseTracker
    from newsdedup.storage.base import ArticleStore, ReuseRecord, StoredRef

#: A document's key: a string (a URL, a file name) or an integer; over a store, a string.
DocumentId = Union[str, int]


def extract_article(
    html: str | bytes,
    url: str | None = None,
    *,
    min_chars: int = defaults.NEWSDEDUP_EXTRACT_MIN_CHARS,
    brief_chars: int = defaults.NEWSDEDUP_EXTRACT_BRIEF_CHARS,
    max_bytes: int = defaults.NEWSDEDUP_EXTRACT_MAX_BYTES,
    remove_selectors: Sequence[str] = (),
) -> Article:
    """The article of one news page: title, body text, date, author, the outlet it names, canonical URL.

    ``html`` is the page's bytes as served (their encoding is found as the crawl finds it: UTF-8, GBK and GB18030
    pages are told apart by their bytes, whatever their ``<meta charset>`` claims) or an already decoded string.
    ``url`` resolves relative links and is the fallback canonical URL. Bodies with fewer than ``min_chars``
    non-space characters are skipped as ``too_short`` (``brief_chars`` for a page with an article's shape: a
    headline, a date or source line, the body), pages over ``max_bytes`` as ``too_large``; ``remove_selectors``
    are CSS selectors of blocks to delete first (the ``remove`` of a site file). The defaults are the settings
    ``NEWSDEDUP_EXTRACT_MIN_CHARS``, ``NEWSDEDUP_EXTRACT_BRIEF_CHARS`` and ``NEWSDEDUP_EXTRACT_MAX_BYTES``.

    A page without article text raises :class:`~newsdedup.extract.extractor.SkipPage`, whose ``reason`` says why
    (``list_page``, ``video``, ``javascript_only``, ``too_short``, ``not_html``, ...); a bad argument raises
    ValueError.

    A GBK page that declares UTF-8:

    >>> body = "，".join(["记者从市交通委获悉本市今年将新开通三条地铁线路"] * 8) + "。"
    >>> page = (
    ...     '<html><head><meta charset="utf-8"><title>本市新开三条地铁线路_新闻</title></head><body>'
    ...     f'<h1>本市新开三条地铁线路</h1><p>2018年11月05日 09:30 来源：新京报</p><p>{body}</p>'
    ...     '</body></html>'
    ... ).encode("gbk")
    >>> article = extract_article(page, url="https://news.example.cn/a/1.html")
    >>> article.title, article.published_at, article.source
    ('本市新开三条地铁线路', '2018-11-05T09:30:00+08:00', '新京报')
    >>> article.text.startswith("记者从市交通委获悉")
    True
    >>> extract_article(b"%PDF-1.7 ...")
    Traceback (most recent call last):
    ...
    newsdedup.extract.extractor.SkipPage: page is a binary file, not HTML
    """
    return extractor.extract_article(html, url, remove_selectors=remove_selectors, min_chars=min_chars,
                                     brief_chars=brief_chars, max_bytes=max_bytes)


def setting_of(parameter: str) -> str:
    """The ``NEWSDEDUP_*`` setting a :class:`Deduplicator` parameter sets (its name, upper-cased, after the prefix).

    >>> setting_of("spotsigs_tau"), setting_of("method")
    ('NEWSDEDUP_SPOTSIGS_TAU', 'NEWSDEDUP_NEAR_METHOD')
    """
    return "NEWSDEDUP_NEAR_METHOD" if parameter == "method" else f"NEWSDEDUP_{parameter.upper()}"


def parameter_of(setting: str) -> str:
    """The :class:`Deduplicator` parameter of a ``NEWSDEDUP_*`` setting (``NEWSDEDUP_SPOTSIGS_TAU``: ``spotsigs_tau``)."""
    return "method" if setting == "NEWSDEDUP_NEAR_METHOD" else setting.removeprefix("NEWSDEDUP_").lower()


class Deduplicator:
    """Tells each text added whether it is new, a near duplicate or an exact duplicate of one added before.

    The crawl's dedup in a Python object. ``method`` is the near-duplicate method (``spotsigs``, ``simhash``,
    ``hybrid``, ``esimhash`` or ``dwdcs``, see *How it works*); every other parameter is the setting of the same
    name (``spotsigs_tau`` is ``NEWSDEDUP_SPOTSIGS_TAU``, see *Settings*) with the same default. A parameter given
    as ``None`` takes its default, except ``spotsigs_min_containment``, where ``None`` switches the containment
    fallback off (``spotsigs_containment_whole_below``'s default, ``None``, is its rule switched off). A bad value raises ValueError naming the setting.

    Without ``store`` the documents are kept in memory, for the object's life. With a storage URI
    (``sqlite:///news.sqlite``, ``postgresql://...``) they are stored as a crawl stores its articles (the same
    database a crawl can write, ``newsdedup export`` and ``newsdedup report`` read), each under its ``id`` as URL,
    and a later Deduplicator on the same store goes on from them; ``retention_days`` is the crawl's retention
    window. A store is used by one writer at a time (its run lock): :meth:`close` the Deduplicator, or use it in
    a ``with`` block; until then what was added is committed in batches of ``NEWSDEDUP_STORAGE_BATCH_SIZE``. A
    store that cannot be used (another writer has it, a damaged or foreign database) raises
    :class:`~newsdedup.storage.base.StoreError` with what to do.

    >>> story = ("国家统计局今天发布数据显示，十月份全国居民消费价格同比上涨百分之二点五，"
    ...          "其中城市上涨百分之二点五，农村上涨百分之二点四；食品价格上涨百分之三点三，"
    ...          "非食品价格上涨百分之二点四。统计局的专家表示，猪肉和鲜菜的价格是主要的推动因素，"
    ...          "而能源价格的上涨也在其中起了一定的作用。")
    >>> dedup = Deduplicator()
    >>> dedup.add(story, id="sina/1").status
    'unique'
    >>> dedup.add(story, id="163/7")
    Verdict(id='163/7', status='exact_duplicate', duplicate_of='sina/1', cluster_id='sina/1', similarity=1.0, method='exact', score=1.0, measure='exact')
    >>> reprint = "（来源：新华社）" + story.replace("今天", "11月9日")
    >>> verdict = dedup.add(reprint, id="qq/3")
    >>> verdict.status, verdict.duplicate_of, verdict.cluster_id, verdict.measure
    ('near_duplicate', 'sina/1', 'sina/1', 'jaccard')
    >>> dedup.add("本届进博会共有一百七十二个国家、地区和国际组织参会，三千六百多家企业参展。", id="x").status
    'unique'

    A text that shares a passage with an earlier story, but is a story of its own, is ``unique`` and says what it
    shares (``reuse=False`` switches this off, as ``NEWSDEDUP_REUSE`` does in a crawl):

    >>> comment = ("评论员文章：物价走势如何看？市场对这组数据的解读出现了分歧，有人担心通胀抬头，也有人认为不必过虑。"
    ...            + story + "在我们看来，这意味着通胀压力总体可控。一方面，猪肉价格的周期性上涨已经接近尾声，"
    ...            "生猪存栏量正在逐步恢复；另一方面，国际油价近期回落，输入性通胀的压力也在减轻。货币政策因此没有必要"
    ...            "因为短期的菜价波动而收紧，稳健的基调仍将延续，市场也不必对单月数据作过度的解读和反应。")
    >>> verdict = dedup.add(comment, id="comment/1")
    >>> verdict.status, [(r["source_id"], r["chars"], r["basis"]) for r in verdict.reuses]
    ('unique', [('sina/1', 133, 'arrival')])

    Kept in a database, across runs:

    >>> import pathlib, tempfile
    >>> uri = "sqlite:///" + str(pathlib.Path(tempfile.mkdtemp()) / "news.sqlite")
    >>> with Deduplicator(store=uri) as dedup:
    ...     dedup.add(story, id="https://finance.sina.com.cn/1.html", title="十月CPI同比上涨2.5%").status
    'unique'
    >>> with Deduplicator(store=uri) as dedup:
    ...     dedup.add(reprint, id="https://news.qq.com/3.html").duplicate_of
    'https://finance.sina.com.cn/1.html'
    """

    def __init__(
        self,
        method: str = defaults.NEWSDEDUP_NEAR_METHOD,
        *,
        store: str | None = None,
        spotsigs_tau: float = defaults.NEWSDEDUP_SPOTSIGS_TAU,
        spotsigs_min_containment: float | None = defaults.NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT,
        spotsigs_containment_min_spots: int = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS,
        spotsigs_containment_whole_below: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW,
        spotsigs_containment_min_share: float | None = defaults.NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SHARE,
        spotsigs_min_signatures: int = defaults.NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES,
        spotsigs_antecedents: str = defaults.NEWSDEDUP_SPOTSIGS_ANTECEDENTS,
        spotsigs_chain: int = defaults.NEWSDEDUP_SPOTSIGS_CHAIN,
        spotsigs_distance: int = defaults.NEWSDEDUP_SPOTSIGS_DISTANCE,
        simhash_bits: int = defaults.NEWSDEDUP_SIMHASH_BITS,
        simhash_features: str = defaults.NEWSDEDUP_SIMHASH_FEATURES,
        simhash_max_distance: int = defaults.NEWSDEDUP_SIMHASH_MAX_DISTANCE,
        esimhash_max_distance: int = defaults.NEWSDEDUP_ESIMHASH_MAX_DISTANCE,
        esimhash_weight_cap: float = defaults.NEWSDEDUP_ESIMHASH_WEIGHT_CAP,
        esimhash_max_bigrams: int = defaults.NEWSDEDUP_ESIMHASH_MAX_BIGRAMS,
        dwdcs_key_concepts: int = defaults.NEWSDEDUP_DWDCS_KEY_CONCEPTS,
        dwdcs_hub_candidates: int = defaults.NEWSDEDUP_DWDCS_HUB_CANDIDATES,
        dwdcs_min_frequency: int = defaults.NEWSDEDUP_DWDCS_MIN_FREQUENCY,
        dwdcs_merge_threshold: float = defaults.NEWSDEDUP_DWDCS_MERGE_THRESHOLD,
        dwdcs_max_nodes: int = defaults.NEWSDEDUP_DWDCS_MAX_NODES,
        dwdcs_synonyms: str | None = defaults.NEWSDEDUP_DWDCS_SYNONYMS,
        dwdcs_cosine: float = defaults.NEWSDEDUP_DWDCS_COSINE,
        dwdcs_max_variance: float = defaults.NEWSDEDUP_DWDCS_MAX_VARIANCE,
        dwdcs_min_key_concepts: int = defaults.NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS,
        segmenter: str = defaults.NEWSDEDUP_SEGMENTER,
        segmenter_user_dict: str | None = defaults.NEWSDEDUP_SEGMENTER_USER_DICT,
        stopwords: str | None = defaults.NEWSDEDUP_STOPWORDS,
        exact_bloom_error_rate: float = defaults.NEWSDEDUP_EXACT_BLOOM_ERROR_RATE,
        retention_days: float | None = defaults.NEWSDEDUP_RETENTION_DAYS,
        reuse: bool = defaults.NEWSDEDUP_REUSE,
    ) -> None:
        # Every parameter but the store is a setting: read by the code that reads the crawl's settings.
        settings = {setting_of(name): value for name, value in locals().items() if name not in ("self", "store")}
        self._setup(settings, store)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, store: str | None = None) -> Deduplicator:
        """A Deduplicator from ``NEWSDEDUP_*`` settings (a dict, a Scrapy ``Settings``); the unset ones default.
        Values may be strings, as on a command line (``"none"`` switches ``NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT`` off).

        >>> Deduplicator.from_settings({"NEWSDEDUP_NEAR_METHOD": "simhash"}).method
        'simhash'
        """
        deduplicator = cls.__new__(cls)
        deduplicator._setup(settings, store)
        return deduplicator

    def _setup(self, settings: Mapping[str, Any], store: str | None) -> None:
        from newsdedup.dedup.single_pass import SinglePassClusterer, make_detector
        from newsdedup.run import options, retention

        self.features: FeatureConfig = options.feature_config(settings)
        near = options.near_settings(settings)
        error_rate = options.get_float(settings, "NEWSDEDUP_EXACT_BLOOM_ERROR_RATE")
        self._extractor: FeatureExtractor | None = None  # loaded on the first text (the segmenter's dictionary)
        self.store_uri = store
        self._store: ArticleStore | None = None
        self._reuse: ReuseTracker | None = None  # in memory: the passage-reuse stage (NEWSDEDUP_REUSE)
        self._captions: dict[DocumentId, frozenset[str]] = {}  # in memory: caption-only stories' captions
        self._story_reuse: StoryReuse | None = None  # over a store: the crawl's, on the same store
        reuse = options.get_bool(settings, "NEWSDEDUP_REUSE")
        if store is None:
            from newsdedup.dedup.reuse import ReuseTracker

            self.engine = DedupEngine.in_memory(SinglePassClusterer(make_detector(near)), error_rate=error_rate)
            self._reuse = ReuseTracker(retention_days=retention.retention_days(settings)) if reuse else None
            return
        from newsdedup.dedupstore.engine import engine_from_store
        from newsdedup.storage import open_store

        since = retention.window_start(retention.retention_days(settings))
        self._store = open_store(store)
        self._store.open()
        try:
            self._store.lock_for_run()  # one writer: article ids and the indexes must not race another's
            self.engine = engine_from_store(self._store, self.features, near, since=since, error_rate=error_rate).engine
            if reuse:
                from newsdedup.crawl.reuse_index import StoryReuse

                self._story_reuse = StoryReuse.rebuild(self._store, since=since)
        except BaseException:
            self._store.close()
            raise

    @property
    def method(self) -> str:
        """The near-duplicate method."""
        return self.engine.method

    def add(
        self, text: str, *, id: DocumentId, title: str | None = None, site: str | None = None,  # noqa: A002
        published_at: str | None = None,
    ) -> Verdict:
        """Decide ``text`` against every text added before, keep it, and return its :class:`Verdict`.

        The verdict's ``status`` is ``unique`` (a new story: its ``cluster_id`` is its own ``id``),
        ``near_duplicate`` (``duplicate_of``: the story's first text it matches, ``cluster_id``: that story) or
        ``exact_duplicate`` (the same text after normalisation as ``duplicate_of``). ``similarity`` estimates
        the share of their features the two texts have in common (1.0 for an exact duplicate); ``score`` is the
        method's own figure, named by ``measure``. ``title``, ``site`` and ``published_at`` (ISO 8601) are stored
        with the text when there is a store (the report's origin is the copy published first); the title is never
        compared: reprints rewrite headlines far more than bodies.

        ``reuses`` lists the passages the text shares with earlier stories other than its own (a quotation, a
        paragraph of background; :attr:`Verdict.reuses`), within the retention window, as a crawl records them: the
        story published first (``published_at``; unknown or equal times: the one added first) is the quoted one,
        and passages that other texts of the same ``site`` share (a disclaimer, an editor's note) are not reuse.
        """
        return self._decide(id, self._feature_extractor().features(text), text, title, site, published_at)

    def add_many(self, documents: Iterable[tuple], *, workers: int | None = None) -> Iterator[Verdict]:
        """:meth:`add` for each ``(id, text)`` or ``(id, text, about)`` (``about``: a mapping of :meth:`add`'s
        ``title``, ``site`` and ``published_at``), in order, with the texts' features computed on ``workers``
        processes (``None``: one per core, ``0``: in this one). Verdicts are yielded as they are decided; a
        document is added when its verdict is taken.

        >>> dedup = Deduplicator()
        >>> [v.status for v in dedup.add_many([(1, "短"), (2, "短")], workers=0)]
        ['unique', 'exact_duplicate']
        """
        from newsdedup.crawl.analysis import AnalysisPool, analyse_text

        ids: collections.deque[tuple[DocumentId, Mapping]] = collections.deque()
        texts: collections.deque[str] = collections.deque()

        def queued() -> Iterator[str]:
            for doc_id, text, *about in documents:
                ids.append((doc_id, about[0] if about else {}))
                texts.append(text)  # stored, looked up for reuse, read for captions
                yield text

        pool = AnalysisPool(self.features, workers=workers)
        pool.start()
        try:
            for features in pool.map(analyse_text, queued()):  # in input order
                text = texts.popleft()
                doc_id, about = ids.popleft()
                yield self._decide(doc_id, features, text, about.get("title"), about.get("site"),
                                   about.get("published_at"))
        finally:
            pool.shutdown()

    def close(self) -> None:
        """Commit what is stored and release the store (nothing to do in memory)."""
        store, self._store = self._store, None
        if store is not None:
            from newsdedup.dedupstore.engine import save_engine_state

            try:
                save_engine_state(store, self.engine)
            finally:
                store.close()

    def __enter__(self) -> Deduplicator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _feature_extractor(self) -> FeatureExtractor:
        if self._extractor is None:
            from newsdedup.dedup.features import FeatureExtractor

            self._extractor = FeatureExtractor(self.features)
        return self._extractor

    def _decide(self, doc_id: DocumentId, features: DocFeatures, text: str, title: str | None, site: str | None,
                published_at: str | None) -> Verdict:
        if self._store is None:
            if self.store_uri is not None:
                raise ValueError(f"this Deduplicator's store {self.store_uri} is closed")
            from newsdedup.dedup.captions import caption_check, caption_lines

            verdict = self.engine.process(doc_id, features, confirm=caption_check(text, self._captions.get))
            if verdict.status == UNIQUE and (captions := caption_lines(text)) is not None:
                self._captions[doc_id] = captions  # caption pages are few: their captions are kept
            if self._reuse is None or verdict.status == EXACT_DUPLICATE:
                return verdict  # an exact duplicate's text is its story's: no relation of its own
            return replace(verdict, reuses=self._reuses_in_memory(verdict, text, title, site, published_at))
        return self._decide_stored(doc_id, features, text, title, site, published_at)

    def _reuses_in_memory(self, verdict: Verdict, text: str, title: str | None, site: str | None,
                          published_at: str | None) -> tuple[dict, ...]:
        """The passage-reuse stage as the crawl runs it: a new story is looked up and indexed, a near duplicate
        looked up without its own story and keeps that story in the window."""
        from newsdedup.clock import now_iso
        from newsdedup.crawl.reuse_index import published_time
        from newsdedup.storage.base import ReuseRecord

        tracker = self._reuse
        assert tracker is not None
        now = now_iso()
        about = {"published": published_time(published_at, now, verdict.id if isinstance(verdict.id, str) else None),
                 "group": site, "title": title}
        if verdict.status == UNIQUE:
            found = tracker.process(verdict.id, text, now, **about)
        else:
            tracker.touch(verdict.cluster_id, now)
            found = tracker.find(text, exclude=(verdict.cluster_id,), **about)
        records = []
        for reuse in found:
            passages, fraction, source_fraction = reuse.quoting_view()
            records.append(_reuse_entry(reuse.source, ReuseRecord(
                reuse.source, "", reuse.chars, fraction, source_fraction,
                tuple((p.start, p.length, p.source_start, p.source_length, p.chars) for p in passages),
                basis=reuse.basis, quoted_by=reuse.direction == "quoted_by")))
        return tuple(records)

    def _decide_stored(self, doc_id: DocumentId, features: DocFeatures, text: str, title: str | None,
                       site: str | None, published_at: str | None) -> Verdict:
        """As the crawl's exact, near and store pipelines decide and store a page, the id as its URL."""
        from newsdedup.clock import now_iso
        from newsdedup.dedupstore.engine import stored_features
        from newsdedup.storage.base import ArticleRecord, RepeatRecord

        store = self._store
        assert store is not None
        if not isinstance(doc_id, str):
            raise TypeError(f"a stored document's id is a string (its URL), got {type(doc_id).__name__} {doc_id!r}")
        if store.has_page(doc_id):
            raise ValueError(f"{doc_id!r} is in {self.store_uri} already: ids name one document each")
        fetched_at = now_iso()
        exact = self.engine.exact_verdict(doc_id, features.fingerprint)
        if exact is not None:
            earlier = cast("StoredRef", exact.duplicate_of)  # the store's keys
            store.add_repeat(RepeatRecord(
                url=doc_id, site=site, title=title, published_at=published_at, author=None, source=None,
                canonical_url=None, fetched_at=fetched_at, fingerprint=features.fingerprint, repeat_of=earlier.url,
                cluster_id=earlier.cluster_id,
            ))
            return replace(exact, duplicate_of=earlier.url, cluster_id=self._first_of_story(earlier.cluster_id))
        article_id = store.new_article_id()
        from newsdedup.dedup.captions import caption_check, caption_lines

        verdict = self.engine.near_verdict(article_id, features, confirm=caption_check(
            text, lambda centre: caption_lines(store.article_text(cast(int, centre)) or "")))
        cluster_id = cast(int, verdict.cluster_id)  # an article id of the store
        duplicate_of = store.url_of(cast(int, verdict.duplicate_of)) if verdict.status == NEAR_DUPLICATE else None
        reuses: tuple[ReuseRecord, ...] = ()
        if self._story_reuse is not None:  # as the crawl's reuse stage looks a page up
            reuses = tuple(self._story_reuse.find(
                text, story=cluster_id if verdict.status == NEAR_DUPLICATE else None, url=doc_id, site=site,
                title=title, published_at=published_at, fetched_at=fetched_at))
        record = ArticleRecord(
            id=article_id, url=doc_id, site=site, title=title, text=text, published_at=published_at, author=None,
            source=None, canonical_url=None, fetched_at=fetched_at, fingerprint=features.fingerprint,
            status=verdict.status, duplicate_of=duplicate_of, cluster_id=cluster_id,
            similarity=verdict.similarity, score=verdict.score, measure=verdict.measure, method=verdict.method,
            **stored_features(features), reuses=reuses,
        )
        store.add_article(record)
        self.engine.exact.add(features.fingerprint)
        if self._story_reuse is not None:
            self._story_reuse.add(record)
        return replace(verdict, id=doc_id, duplicate_of=duplicate_of,
                       cluster_id=doc_id if cluster_id == article_id else self._first_of_story(cluster_id),
                       reuses=tuple(_reuse_entry(reuse.source_url, reuse) for reuse in reuses))

    def _first_of_story(self, cluster_id: int | None) -> str | None:
        """A stored story's id as the library gives it: the id (URL) of its first document."""
        assert self._store is not None
        return None if cluster_id is None else self._store.url_of(cluster_id)


def _reuse_entry(source_id: DocumentId, record: ReuseRecord) -> dict:
    """A verdict's reuse: the form ``newsdedup export`` gives, with the other story's key as ``source_id``."""
    entry = record.as_dict()
    del entry["source_url"], entry["source_cluster_id"]
    return {"source_id": source_id, **entry}


__all__ = ["Article", "Deduplicator", "DocumentId", "SkipPage", "Verdict", "extract_article", "parameter_of",
           "setting_of"]
