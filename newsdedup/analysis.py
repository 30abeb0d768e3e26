"""The CPU-heavy work on one fetched page, run in worker processes: extract, then fingerprint.

Pure Python (no Scrapy).  A worker process builds one :class:`FeatureExtractor` when it starts
(:func:`init_worker`), so the segmenter dictionary and word lists load once per process, and
then runs :func:`analyse_page` for each page it is handed.  :class:`AnalysisPool` hides whether
that happens in a process pool or inline (``workers=0``, for debugging and small runs).
"""

from __future__ import annotations

import collections
import concurrent.futures
import multiprocessing
import os
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from newsdedup import settings as _D
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor
from newsdedup.extract.extractor import Article, SkipPage, extract_article


@dataclass(frozen=True)
class ExtractOptions:
    """Picklable extraction settings handed to workers with each page."""

    min_chars: int = _D.NEWSDEDUP_EXTRACT_MIN_CHARS
    brief_chars: int = _D.NEWSDEDUP_EXTRACT_BRIEF_CHARS
    max_bytes: int = _D.NEWSDEDUP_EXTRACT_MAX_BYTES
    keep_shared_prose: bool = True  # False when a template failure is retried (see strip_boilerplate)


@dataclass
class PageAnalysis:
    article: Article
    features: DocFeatures


@dataclass(frozen=True)
class PageSkipped:
    reason: str
    detail: str


_worker_extractor: FeatureExtractor | None = None


def init_worker(config: FeatureConfig) -> None:
    """Process-pool initializer: load the feature resources once for this process."""
    global _worker_extractor
    _worker_extractor = FeatureExtractor(config)


def _warm_up() -> None:
    """A no-op task: submitting it makes the pool start a worker process."""


def analyse_page(
    body: bytes,
    url: str,
    declared_encoding: str | None,
    remove_selectors: Sequence[str],
    options: ExtractOptions,
    boilerplate: AbstractSet[int] = frozenset(),
) -> PageAnalysis | PageSkipped:
    """Extract the article of one page (``boilerplate``: its site's learned template) and compute its dedup features."""
    if _worker_extractor is None:
        raise RuntimeError("analyse_page runs in a process set up by init_worker(config)")
    try:
        article = extract_article(
            body if declared_encoding is None else _as_declared(body, declared_encoding),
            url,
            remove_selectors=remove_selectors,
            min_chars=options.min_chars,
            brief_chars=options.brief_chars,
            max_bytes=options.max_bytes,
            boilerplate=boilerplate,
            keep_shared_prose=options.keep_shared_prose,
        )
    except SkipPage as skip:
        return PageSkipped(skip.reason, str(skip))
    return PageAnalysis(article, _worker_extractor.features(article.text))


def _as_declared(body: bytes, declared_encoding: str) -> str | bytes:
    """Decode with the HTTP header's charset as a hint (the decoder may overrule a lying one)."""
    from newsdedup.extract.decode import decode_html

    return decode_html(body, declared_encoding).text


class AnalysisPool:
    """Runs :func:`analyse_page` on ``workers`` processes, or inline when ``workers`` is 0."""

    def __init__(self, config: FeatureConfig, *, workers: int | None = None) -> None:
        if workers is None:
            workers = os.cpu_count() or 1
        if workers < 0:
            raise ValueError(f"workers must be >= 0 (0 = run inline), got {workers}")
        self.config = config
        self.workers = workers
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def start(self) -> None:
        if self.workers == 0:
            init_worker(self.config)
        elif self._executor is None:
            # spawn, not fork: the parent runs a Twisted reactor and threads that must not be copied.
            self._executor = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=init_worker,
                initargs=(self.config,),
            )
            # Start every worker now (each loads its dictionaries for a second or two) while the
            # crawl is still fetching its start pages, instead of on the first articles.
            for _ in range(self.workers):
                self._executor.submit(_warm_up)

    def submit(self, fn, /, *args) -> concurrent.futures.Future:
        if self._executor is None:
            future: concurrent.futures.Future = concurrent.futures.Future()
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
                future.set_exception(exc)
            return future
        return self._executor.submit(fn, *args)

    def map(self, fn, iterable, *, window: int | None = None):
        """Ordered results of ``fn`` over ``iterable``, streamed.

        ``Executor.map`` submits the whole input at once (unbounded memory on a large file);
        this keeps at most ``window`` tasks in flight and yields results in input order.
        """
        if self._executor is None:
            yield from map(fn, iterable)
            return
        window = window or 8 * self.workers
        pending: collections.deque[concurrent.futures.Future] = collections.deque()
        for args in iterable:
            pending.append(self._executor.submit(fn, args))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


def analyse_text(text: str) -> DocFeatures:
    """Dedup features of a bare text (``newsdedup dedup``), in a process set up by init_worker."""
    if _worker_extractor is None:
        raise RuntimeError("analyse_text runs in a process set up by init_worker(config)")
    return _worker_extractor.features(text)
