"""The CPU-heavy work on one fetched page, run in worker processes: extract, then fingerprint.

Pure Python (no Scrapy).  A worker process builds one :class:`FeatureExtractor` when it starts
(:func:`init_worker`), so the segmenter dictionary and word lists load once per process, and
then runs :func:`analyse_page` for each page it is handed.  :class:`AnalysisPool` hides whether
that happens in a process pool or inline (``workers=0``, for debugging and small runs).

What a page can do to a worker, and what happens then (:meth:`AnalysisPool.analyse`):

- take longer than ``timeout`` seconds (a pathological page, a library that backtracks): the worker is
  killed and replaced, the page is skipped as ``timeout`` and the pages behind it go on;
- kill its worker (out of memory, a crash in a C library, someone's ``kill -9``): the worker is replaced
  and the page handed to another one; a page that kills a worker twice is skipped as ``crashed``;
- raise (a library bug, ``MemoryError``): the page is skipped as ``error``.

``error``, ``timeout`` and ``crashed`` are transient (:mod:`newsdedup.run.retry`): later runs try the page again.
The pool is pebble's ``ProcessPool``, which, unlike ``concurrent.futures.ProcessPoolExecutor``, knows which
task a dead worker was running, stops a task at its time limit and replaces dead workers itself. Workers
ask the kernel to kill them when the crawl process dies (``PR_SET_PDEATHSIG``), so a ``kill -9`` of the
crawl leaves no orphans.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import gc
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import pebble
from lxml import etree

from newsdedup import defaults
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor
from newsdedup.extract.extractor import Article, ExtractOptions, SkipPage, extract_article

logger = logging.getLogger(__name__)


@dataclass
class PageAnalysis:
    article: Article
    features: DocFeatures


@dataclass(frozen=True)
class PageSkipped:
    reason: str
    detail: str


class WorkerLost(RuntimeError):
    """The worker pool broke and could not be rebuilt: pages can no longer be analysed in this run."""


_worker_extractor: FeatureExtractor | None = None

# Exceptions that mean "this page cannot be parsed" (the extractor reports them as ``malformed``); anything
# else that reaches a SkipPage as its cause is a fault of ours or of a library, reported as ``error``.
_PARSE_ERRORS = (ValueError, RecursionError, UnicodeError, etree.LxmlError)

# File signatures of what portals serve behind article URLs besides HTML (PDF attachments, images, archives),
# checked on the raw bytes before any charset from the HTTP header is applied: a PDF served as
# ``text/html; charset=utf-8`` would otherwise be decoded into text and judged by its length.
_BINARY_SIGNATURES = {
    b"%PDF-": "a PDF file", b"\x89PNG": "a PNG image", b"GIF8": "a GIF image", b"\xff\xd8\xff": "a JPEG image",
    b"PK\x03\x04": "a ZIP archive (or an Office document)", b"\x1f\x8b": "gzip-compressed data",
    b"RIFF": "a RIFF file (WebP, AVI, WAV)", b"\xd0\xcf\x11\xe0": "an old Office document",
}


def init_worker(config: FeatureConfig, parent_pid: int | None = None) -> None:
    """Process-pool initializer: die with the parent, then load the feature resources once."""
    if parent_pid is not None:
        _exit_with_parent(parent_pid)
        # pebble's own SIGTERM handler runs Python code, which a page stuck in a C regex never reaches;
        # the default action ends the worker at once when the pool stops it at the time limit.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    global _worker_extractor
    _worker_extractor = FeatureExtractor(config)
    if parent_pid is not None:
        _tune_gc()


def _tune_gc() -> None:
    """Fewer cyclic garbage collections in a worker process (~1 ms CPU of a 150 KB page's ~40 ms).

    A page's analysis allocates and frees thousands of containers (a tuple or list per element of its tree),
    so at Python's default threshold (700 more allocations than frees) collections start every few hundred
    elements, and the older generations, which hold the segmenter's dictionary and word lists, are scanned
    with them. The pages leave hardly any cyclic garbage behind: collecting after 10,000 lets a page run
    with at most one collection, and what the worker loaded at start is never scanned again (``gc.freeze``).
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(10_000, older, oldest)


def _exit_with_parent(parent_pid: int) -> None:
    """Make sure this worker does not outlive the crawl process, even after its ``kill -9``."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    else:  # no kernel help: watch the parent from a thread (stalls only while a C call holds the GIL)
        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="newsdedup-parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the kernel was told
        os._exit(1)


def _warm_up() -> None:
    """A no-op task: submitting it makes the pool start a worker process."""


def analyse_page(
    body: bytes,
    url: str,
    declared_encoding: str | None,
    remove_selectors: Sequence[str],
    options: ExtractOptions,
    boilerplate: AbstractSet[int] = frozenset(),
    sign_offs: AbstractSet[int] = frozenset(),
) -> PageAnalysis | PageSkipped:
    """Extract the article of one page (``boilerplate``, ``sign_offs``: its site's learned template) and compute its
    dedup features.

    Never raises for a bad page: whatever goes wrong comes back as a :class:`PageSkipped` with a reason.
    """
    if _worker_extractor is None:
        raise RuntimeError("analyse_page runs in a process set up by init_worker(config)")
    binary = sniff_binary(body)
    if binary is not None:
        return PageSkipped("not_html", f"the page is {binary}, not HTML")
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
            sign_offs=sign_offs,
        )
        features = _worker_extractor.features(article.text)
    except SkipPage as skip:
        cause = skip.__cause__
        if skip.reason == "malformed" and cause is not None and not isinstance(cause, _PARSE_ERRORS):
            return PageSkipped("error", _describe(cause))
        return PageSkipped(skip.reason, str(skip))
    except Exception as exc:  # noqa: BLE001 - a bug must cost one page, not the crawl
        return PageSkipped("error", _describe(exc))
    return PageAnalysis(article, features)


def _describe(exc: BaseException) -> str:
    return f"extraction failed: {type(exc).__name__}: {exc}"[:300]


def sniff_binary(body: bytes) -> str | None:
    """What binary file ``body`` is, by its first bytes, or None for text.

    >>> sniff_binary(b"%PDF-1.7\\n...")
    'a PDF file'
    >>> sniff_binary("<html><body>新闻</body></html>".encode("utf-8")) is None
    True
    """
    head = body[:1024].lstrip()
    for signature, kind in _BINARY_SIGNATURES.items():
        if head.startswith(signature):
            return kind
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):  # NUL bytes: not UTF-8/GB text
        return "binary data"
    return None


def _as_declared(body: bytes, declared_encoding: str) -> str | bytes:
    """Decode with the HTTP header's charset as a hint (the decoder may overrule a lying one)."""
    from newsdedup.extract.decode import decode_html

    return decode_html(body, declared_encoding).text


class AnalysisPool:
    """Runs :func:`analyse_page` on ``workers`` processes, or inline when ``workers`` is 0.

    ``timeout`` (seconds) bounds one page in a worker; ``max_restarts`` is how often in a row the whole pool
    may be rebuilt (after every worker died) before :class:`WorkerLost` ends the run.
    """

    def __init__(
        self, config: FeatureConfig, *, workers: int | None = None, timeout: float | None = None,
        max_restarts: int = 3,
    ) -> None:
        if workers is None:
            workers = os.cpu_count() or 1
        if workers < 0:
            raise ValueError(f"workers must be >= 0 (0 = run inline), got {workers}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds or None, got {timeout}")
        self.config = config
        self.workers = workers
        self.timeout = timeout
        self.max_restarts = max_restarts
        self.counts: collections.Counter[str] = collections.Counter()
        """``crashed_workers``, ``timeouts``, ``resubmitted``, ``pool_restarts``: what the pool recovered from."""
        self._pool: pebble.ProcessPool | None = None
        self._generation = 0
        self._restarts_in_a_row = 0
        self._lost: str | None = None

    def start(self) -> None:
        if self.workers == 0:
            init_worker(self.config)
        elif self._pool is None:
            # spawn, not fork: the parent runs a Twisted reactor and threads that must not be copied.
            self._pool = pebble.ProcessPool(
                max_workers=self.workers,
                initializer=init_worker,
                initargs=(self.config, os.getpid()),
                context=multiprocessing.get_context("spawn"),
            )
            self._generation += 1
            # Start every worker now (each loads its dictionaries for a second or two) while the
            # crawl is still fetching its start pages, instead of on the first articles.
            for _ in range(self.workers):
                self._pool.schedule(_warm_up)

    @property
    def lost(self) -> str | None:
        """Why the pool is gone for good (then every further page raises WorkerLost), or None."""
        return self._lost

    def submit(self, fn, /, *args, timeout: float | None = None) -> concurrent.futures.Future:
        if self._pool is None:
            future: concurrent.futures.Future = concurrent.futures.Future()
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
                future.set_exception(exc)
            return future
        return self._pool.schedule(fn, args=args, timeout=timeout)

    async def analyse(self, *args) -> PageAnalysis | PageSkipped:
        """:func:`analyse_page` on a worker, surviving hung pages, dead workers and a broken pool."""
        crashes = 0
        while True:
            if self._lost is not None:
                raise WorkerLost(self._lost)
            generation = self._generation
            try:
                result = await asyncio.wrap_future(self.submit(analyse_page, *args, timeout=self.timeout))
                self._restarts_in_a_row = 0
                return result
            except concurrent.futures.TimeoutError:
                self.counts["timeouts"] += 1
                return PageSkipped(
                    "timeout", f"extraction took longer than {self.timeout:g} s (NEWSDEDUP_EXTRACT_TIMEOUT); "
                    "the worker was stopped and replaced"
                )
            except pebble.ProcessExpired as exc:
                crashes += 1
                self.counts["crashed_workers"] += 1
                if crashes >= 2:
                    return PageSkipped("crashed", f"the page killed its worker twice (last exit code {exc.exitcode})")
                self.counts["resubmitted"] += 1
                logger.warning("a worker died (exit code %s) on %s; handing the page to another one",
                               exc.exitcode, args[1] if len(args) > 1 else "a page")
            except RuntimeError as exc:  # BrokenProcessPool is one
                # Every worker died at once (or the pool stopped): rebuild it and hand the page over again.
                if not isinstance(exc, concurrent.futures.process.BrokenProcessPool) and not _is_pool_failure(exc):
                    raise
                self._restart(generation, exc)
                self.counts["resubmitted"] += 1

    def _restart(self, generation: int, cause: BaseException) -> None:
        if generation != self._generation:
            return  # another page already rebuilt the pool it saw break
        self._restarts_in_a_row += 1
        if self._restarts_in_a_row > self.max_restarts:
            self._lost = f"the worker pool broke {self._restarts_in_a_row} times in a row (last: {cause!r})"
            logger.error("%s; no more pages can be analysed in this run", self._lost)
            self.shutdown()
            return
        logger.warning("the worker pool broke (%r); starting new workers", cause)
        self.counts["pool_restarts"] += 1
        old, self._pool = self._pool, None
        if old is not None:
            old.stop()
            # Joining stops what is left of its workers and threads; not on the caller's (the reactor's) thread.
            threading.Thread(target=old.join, name="newsdedup-old-pool", daemon=True).start()
        self.start()

    def map(self, fn, iterable, *, window: int | None = None):
        """Ordered results of ``fn`` over ``iterable``, streamed.

        ``Executor.map`` submits the whole input at once (unbounded memory on a large file);
        this keeps at most ``window`` tasks in flight and yields results in input order.
        """
        if self._pool is None:
            yield from map(fn, iterable)
            return
        window = window or 8 * self.workers
        pending: collections.deque[concurrent.futures.Future] = collections.deque()
        for args in iterable:
            pending.append(self._pool.schedule(fn, args=(args,)))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def shutdown(self) -> None:
        """Stop the workers now. Callers have awaited what they needed; a hung page is not waited for."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            pool.join(timeout=10)


def _is_pool_failure(exc: RuntimeError) -> bool:
    return "pool" in str(exc).lower()


def analyse_text(text: str) -> DocFeatures:
    """Dedup features of a bare text (``newsdedup dedup``), in a process set up by init_worker."""
    if _worker_extractor is None:
        raise RuntimeError("analyse_text runs in a process set up by init_worker(config)")
    return _worker_extractor.features(text)
