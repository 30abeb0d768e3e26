"""The page-level reprint benchmark, end to end: build -> serve -> crawl -> export -> score.

1. the text-level benchmark (:func:`~newsdedup.evaluation.reprints.build_text_benchmark`, its
   default mix scaled to about ``docs`` documents);
2. every shell the real pages in ``data_dir`` give (:mod:`newsdedup.evaluation.pages`), plus the hard
   variants :func:`~newsdedup.evaluation.pages.build_site` builds from them; none is dropped for how the
   extractor does on it;
3. one page per document on those shells, list pages of 50 links, served on 127.0.0.1 by
   :class:`~newsdedup.demo.server.LoopbackServer`;
4. ``newsdedup crawl`` (the project's ``scrapy crawl portal``) in a subprocess in ``workdir`` (loopback: no
   delay, no autothrottle, robots.txt obeyed), writing to SQLite there; or, distributed, N such processes of the
   same site file at once sharing one Redis and one PostgreSQL database (docs/distributed.md); then
   ``newsdedup export``;
5. every exported row mapped back to its document by URL path, its ``cluster_id`` the predicted
   cluster (exact repeats carry the cluster of the page they repeat); a document without a row
   (skipped by extraction, e.g. a JavaScript-only or too short page) is a cluster of its own;
6. scored with :func:`~newsdedup.evaluation.scoring.evaluate`: pairwise P/R/F1, recall by kind and
   edit band, false-positive rate on the hard negatives; and the extraction itself: token F1 of every
   exported body against its document's text, per shell kind, and bodies holding text of the added
   related block or of a hot list.

:func:`run_page_level` returns everything as a dict; :func:`build_page_benchmark` (steps 1-3) and
:func:`crawl_page_benchmark` (4-6) are its two halves, so one build can be crawled by 1 and by N processes.
"""

from __future__ import annotations

import collections
import concurrent.futures
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from newsdedup.demo.server import LoopbackServer
from newsdedup.evaluation.extraction import token_prf
from newsdedup.evaluation.pages import HARD_VARIANTS, BenchSite, build_site, load_shells
from newsdedup.evaluation.reprints import build_text_benchmark
from newsdedup.evaluation.scoring import EDIT_BANDS, Rate, evaluate

__all__ = ["DEFAULT_DOCS", "PageBenchmark", "benchmark_sizes", "build_page_benchmark", "check_distributed",
           "crawl_command", "crawl_page_benchmark", "predicted_clusters", "preflight_distributed", "run_page_level"]

DEFAULT_DOCS = 1500
# build_text_benchmark's defaults give about this many documents; sizes scale from them.
_DEFAULT_TOTAL = 3100
_DEFAULT_SIZES = {"stories": 600, "singletons": 600, "disclaimer_negatives": 100, "same_topic_pairs": 150, "junk": 40}
# The crawl's own settings: the server is ours, on loopback.
_CRAWL_SETTINGS = {
    "DOWNLOAD_DELAY": "0",
    "AUTOTHROTTLE_ENABLED": "False",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
    "TELNETCONSOLE_ENABLED": "False",
    "LOG_LEVEL": "INFO",
    # Leave the list pages' depth out of it: list 1 -> other lists -> articles is depth 2 anyway.
    "DEPTH_LIMIT": "0",
    # The figures must not depend on the machine's load: a page that outlives the 10 s limit on a busy machine (2
    # processes with their extraction pools on 2 shared cores did) would be skipped as `timeout` and exit 5.
    "NEWSDEDUP_EXTRACT_TIMEOUT": "120",
}
_ELAPSED = re.compile(r"'elapsed_time_seconds':\s*([0-9.]+)")


def benchmark_sizes(docs: int) -> dict[str, int]:
    """Arguments of :func:`build_text_benchmark` giving about ``docs`` documents (its default mix, scaled).

    >>> benchmark_sizes(1550)
    {'stories': 300, 'singletons': 300, 'disclaimer_negatives': 50, 'same_topic_pairs': 75, 'junk': 20}
    """
    if not isinstance(docs, int) or docs < 20:
        raise ValueError(f"docs must be an integer >= 20, got {docs!r}")
    scale = docs / _DEFAULT_TOTAL
    sizes = {name: round(value * scale) for name, value in _DEFAULT_SIZES.items()}
    sizes["stories"] = max(1, sizes["stories"])
    sizes["junk"] = max(1, sizes["junk"])
    return sizes


def crawl_command(sites_file: Path, storage_uri: str, *, method: str, settings: Mapping[str, object] = ()) -> list[str]:
    """The ``newsdedup crawl`` command line of a page-level run (``settings`` override the defaults)."""
    merged = {**_CRAWL_SETTINGS, "NEWSDEDUP_STORAGE_URI": storage_uri, "NEWSDEDUP_NEAR_METHOD": method, **dict(settings)}
    command = [sys.executable, "-m", "newsdedup.cli", "crawl", "--sites", str(sites_file)]
    for name, value in merged.items():
        command += ["-s", f"{name}={value}"]
    return command


def predicted_clusters(rows: Sequence[Mapping], doc_of_path: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``doc id -> cluster`` from export rows, and the URLs that are no benchmark page.

    A row's ``cluster_id`` is its cluster; a row without one joins its ``duplicate_of``'s cluster.
    Documents without a row are not in the result.

    >>> rows = [{"url": "http://h/a.shtml", "cluster_id": 7, "duplicate_of": None},
    ...         {"url": "http://h/b.shtml", "cluster_id": None, "duplicate_of": "http://h/a.shtml"}]
    >>> predicted_clusters(rows, {"/a.shtml": "d1", "/b.shtml": "d2"})
    ({'d1': 'c7', 'd2': 'c7'}, [])
    """
    cluster_of_url: dict[str, str] = {}
    for row in rows:
        if row.get("cluster_id") is not None:
            cluster_of_url[row["url"]] = f"c{row['cluster_id']}"
    predicted: dict[str, str] = {}
    unknown: list[str] = []
    for row in rows:
        doc = doc_of_path.get(urlsplit(row["url"]).path)
        if doc is None:
            unknown.append(row["url"])
            continue
        cluster = cluster_of_url.get(row["url"])
        if cluster is None:
            earlier = row.get("duplicate_of")
            cluster = cluster_of_url.get(earlier, f"u{earlier}") if earlier else f"u{row['url']}"
        predicted[doc] = cluster
    return predicted, unknown


def _rate(rate: Rate) -> dict:
    return {"hits": rate.hits, "total": rate.total, "rate": round(rate.value, 4)}


def _extraction(site: BenchSite, benchmark: Sequence[Mapping], rows: Sequence[Mapping]) -> dict:
    """How the crawl read the pages: token F1 of each exported body against its document (mean and pages under
    0.9, by shell kind: real, or which hard variant), and bodies holding text of the page's related block
    (by the block's layout) or of its shell's hot list."""
    page_of_path = {p.path: p for p in site.pages}
    text_of = {d["id"]: d["text"] for d in benchmark}
    f1s: dict[str, list[float]] = collections.defaultdict(list)
    related, hot = collections.Counter(), 0
    checked = collections.Counter()
    for row in rows:
        page = page_of_path.get(urlsplit(row["url"]).path)
        if page is None or row["status"] == "exact_duplicate":  # a repeat carries the text it repeats
            continue
        body = row.get("text") or ""
        kind = next((k for k in HARD_VARIANTS if page.shell.endswith("#" + k)), "real")
        f1s[kind].append(token_prf(body, text_of[page.doc_id])[2])
        if page.related_layout is not None:
            checked[page.related_layout] += 1
            related[page.related_layout] += any(q in body for q in page.quoted)
        hot += any(line in body for line in site.hot.get(page.shell, ()))
    return {
        "f1_by_shell": {k: {"pages": len(v), "f1": round(sum(v) / len(v), 4), "under_0.9": sum(f < 0.9 for f in v)}
                        for k, v in sorted(f1s.items())},
        "related_leaks": {"pages": sum(related.values()), "checked": sum(checked.values()),
                          "by_layout": {str(k): f"{related[k]}/{checked[k]}" for k in sorted(checked)}},
        "hot_list_leaks": {"pages": hot, "checked": len(f1s.get("hot_list", []))},
    }


@dataclass(frozen=True)
class PageBenchmark:
    """What a page-level run crawls: the benchmark documents and the site built from them, so that one build can be
    crawled by one process and by several (:func:`crawl_page_benchmark`) over exactly the same pages."""

    docs: list[dict]
    site: BenchSite
    shells_found: dict[str, int] = field(default_factory=dict)  # pages_found, no_article_element, real
    timings: dict[str, float] = field(default_factory=dict)
    seed: int | None = None  # of build_page_benchmark (None: built otherwise)


def build_page_benchmark(
    data_dir: Path,
    *,
    docs: int = DEFAULT_DOCS,
    seed: int = 1,
    gbk_share: float = 0.2,
    max_shells: int | None = None,
    workers: int | None = None,
) -> PageBenchmark:
    """Steps 1-3 of the module doc: the benchmark documents, the shells of ``data_dir``, the site."""
    if max_shells is not None and max_shells < 2:
        raise ValueError(f"max_shells must be >= 2 (a story needs shells of different portals), got {max_shells}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ValueError(f"{data_dir} is not a folder: pass --data ../shared/data (the shared data folder)")
    sizes = benchmark_sizes(docs)
    timings: dict[str, float] = {}
    mark = time.perf_counter()
    benchmark = build_text_benchmark(data_dir, seed=seed, **sizes)
    timings["benchmark"] = time.perf_counter() - mark

    mark = time.perf_counter()
    processes = workers if workers is not None else (os.cpu_count() or 1)
    executor = concurrent.futures.ProcessPoolExecutor(processes) if processes > 1 else None
    try:
        shells, unusable = load_shells(data_dir, executor=executor, sample=max_shells, seed=seed)
    finally:
        if executor is not None:
            executor.shutdown()
    if len({s.portal for s in shells}) < 2:
        raise ValueError("fewer than 2 portals' shells: raise max_shells")
    timings["shells"] = time.perf_counter() - mark

    mark = time.perf_counter()
    site = build_site(benchmark, shells, seed=seed, gbk_share=gbk_share)
    timings["pages"] = time.perf_counter() - mark
    found = {"pages_found": len(shells) + len(unusable), "no_article_element": len(unusable), "real": len(shells)}
    return PageBenchmark(benchmark, site, found, timings, seed)


def check_distributed(processes: int, redis_url: str | None, storage_uri: str | None) -> None:
    """Raise ValueError unless the arguments describe a crawl :func:`crawl_page_benchmark` can run."""
    if not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
    if processes == 1:
        if redis_url or storage_uri:
            raise ValueError("a Redis URL and a storage URI are for a distributed run (2 or more processes); "
                             "one process writes to SQLite in its work folder")
        return
    if not redis_url or urlsplit(redis_url).scheme not in ("redis", "rediss", "unix"):
        raise ValueError(f"a distributed page-level run needs a Redis URL (redis://HOST:PORT/DB), got {redis_url!r}")
    if not storage_uri or urlsplit(storage_uri).scheme not in ("postgresql", "postgres"):
        raise ValueError("a distributed page-level run needs an empty PostgreSQL database (postgresql://HOST/DBNAME), "
                         f"got {_redacted(storage_uri or '')!r}")


def _redacted(uri: str) -> str:
    """A URI, or a ``NAME=URI`` setting, without its password (the report and errors show the URIs a distributed
    run used).

    >>> _redacted("NEWSDEDUP_REDIS_URL=redis://:secret@10.0.0.5:6379/0")
    'NEWSDEDUP_REDIS_URL=redis://:***@10.0.0.5:6379/0'
    """
    name, equals, value = uri.partition("=")
    if equals and "://" not in name:
        return f"{name}={_redacted(value)}"
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def preflight_distributed(redis_url: str, storage_uri: str) -> None:
    """Raise ValueError unless Redis answers and ``storage_uri`` is an empty database (an earlier crawl's articles
    would be found by the crawl's URL filter and their pages skipped), before anything runs."""
    try:
        import redis
    except ImportError:
        raise ValueError("a distributed page-level run needs the redis extra: pip install 'newsdedup[redis]'") from None
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise ValueError(f"Redis at {_redacted(redis_url)} does not answer: {exc}") from None
    finally:
        client.close()
    from newsdedup.storage import StoreError, open_store

    try:
        with open_store(storage_uri) as store:
            counts = store.counts()
    except StoreError as exc:
        raise ValueError(f"{_redacted(storage_uri)}: {exc}") from None
    if counts.articles or counts.repeats or counts.skipped or counts.failures:
        raise ValueError(f"{_redacted(storage_uri)} holds an earlier crawl ({counts.articles} articles, {counts.repeats} "
                         f"repeats, {counts.skipped} skipped pages): a distributed page-level run needs an empty database")


def _drop_redis_keys(redis_url: str, prefix: str) -> None:
    """Remove a finished run's keys (its queue, filter, stream and templates), all under its own prefix."""
    import redis  # the redis extra: a distributed run needs it anyway

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start:start + 500])
    finally:
        client.close()


def _run_crawls(command: Sequence[str], logs: Sequence[Path], *, cwd: Path, timeout: float) -> list[str]:
    """Run ``command`` once per log file, all at once (the processes of one distributed run, or the one crawl);
    return each log's text. A process that fails or outlives ``timeout`` (seconds) fails the run."""
    processes: list[subprocess.Popen] = []
    try:
        for log in logs:
            with log.open("w", encoding="utf-8") as out:  # the child keeps its own descriptor
                processes.append(subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + timeout
        for process in processes:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"newsdedup crawl did not finish in {timeout:.0f} s; see {', '.join(map(str, logs))}") from None
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    texts = [log.read_text(encoding="utf-8", errors="replace") for log in logs]
    for process, log, text in zip(processes, logs, texts):
        if process.returncode != 0:
            raise RuntimeError(f"newsdedup crawl exited with {process.returncode}; see {log}:\n{text[-3000:]}")
    return texts


def _stat(log_text: str, name: str) -> int:
    """A count from a crawl's closing stats dump (0 when absent)."""
    found = re.findall(rf"'{re.escape(name)}':\s*(\d+)", log_text)
    return int(found[-1]) if found else 0


def crawl_page_benchmark(
    bench: PageBenchmark,
    *,
    workdir: Path,
    method: str = "hybrid",
    settings: Mapping[str, object] | None = None,
    timeout: float = 900,
    rescore: Callable[[Sequence[Mapping], Mapping[str, str]], object] | None = None,
    processes: int = 1,
    redis_url: str | None = None,
    storage_uri: str | None = None,
) -> dict:
    """Steps 4-6 of the module doc on a built benchmark: serve, crawl, export, score.

    One process (``processes=1``) writes to SQLite in ``workdir``. With ``processes >= 2`` that many crawl
    processes of the same site file run at once against ``redis_url`` and the empty PostgreSQL database
    ``storage_uri``, as docs/distributed.md tells users to run them (a Redis key prefix of the run's own, whose
    keys are removed afterwards); the export is read from that database and scored exactly as one process's.
    """
    from newsdedup.dedup.features import METHODS  # the crawl's own list of near-duplicate methods

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    check_distributed(processes, redis_url, storage_uri)
    workdir = Path(workdir).resolve()  # the crawl runs in it: the paths it is given must not be relative to here
    workdir.mkdir(parents=True, exist_ok=True)
    site, benchmark = bench.site, bench.docs
    timings: dict[str, float] = {}
    started = time.perf_counter()
    run_settings: dict[str, object] = {}
    if processes == 1:
        db = (workdir / "pages.sqlite").resolve()
        if db.exists():
            db.unlink()  # a store from an earlier run would hold its articles and skip their URLs
        storage_uri = f"sqlite:///{db}"
        logs = [workdir / "crawl.log"]
    else:
        preflight_distributed(redis_url, storage_uri)
        # A prefix of the run's own: no queue, filter or template of an earlier run in the same Redis is seen.
        prefix = f"newsdedup-eval-{uuid.uuid4().hex[:12]}"
        run_settings = {"NEWSDEDUP_REDIS_URL": redis_url, "NEWSDEDUP_REDIS_PREFIX": prefix}
        logs = [workdir / f"crawl-{n}.log" for n in range(1, processes + 1)]
    sites_file = workdir / "sites.toml"
    try:
        with LoopbackServer(site.responses()) as server:
            sites_file.write_text(site.sites_toml(server.base_url), encoding="utf-8")
            command = crawl_command(sites_file, storage_uri, method=method, settings={**run_settings, **(settings or {})})
            mark = time.perf_counter()
            log_texts = _run_crawls(command, logs, cwd=workdir, timeout=timeout)
            timings["crawl"] = time.perf_counter() - mark
            served = dict(server.requests_served)
    finally:
        if processes > 1:
            _drop_redis_keys(redis_url, run_settings["NEWSDEDUP_REDIS_PREFIX"])

    mark = time.perf_counter()
    exported = subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", "export", "--storage", storage_uri],
        cwd=workdir, capture_output=True, text=True, check=True, timeout=300,
    )
    (workdir / "export.jsonl").write_text(exported.stdout, encoding="utf-8")
    rows = [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]
    timings["export"] = time.perf_counter() - mark

    from newsdedup.storage import open_store

    with open_store(storage_uri) as store:
        counts = store.counts()

    doc_of_path = site.doc_of_path
    predicted, unknown = predicted_clusters(rows, doc_of_path)
    kind_of = {d["id"]: d["kind"] for d in benchmark}
    missing = [d["id"] for d in benchmark if d["id"] not in predicted]
    for doc in missing:
        predicted[doc] = f"alone:{doc}"
    report = evaluate(benchmark, predicted)
    extraction = _extraction(site, benchmark, rows)
    rescored = None
    if rescore is not None:
        mark = time.perf_counter()
        extracted: dict[str, str] = {}
        for row in rows:
            doc = doc_of_path.get(urlsplit(row["url"]).path)
            if doc is not None and doc not in extracted:
                extracted[doc] = row.get("text") or ""
        rescored = rescore(benchmark, extracted)
        timings["rescore"] = time.perf_counter() - mark
    timings["crawl_and_score"] = time.perf_counter() - started

    article_requests = sum(served.get(p.path, 0) for p in site.pages)
    elapsed = [float(m.group(1)) for m in map(_ELAPSED.search, log_texts) if m]
    crawl_seconds = max(elapsed) if len(elapsed) == len(log_texts) else timings["crawl"]
    statuses = collections.Counter(row["status"] for row in rows)
    shell_names = collections.Counter(p.shell for p in site.pages)
    return {
        "method": method,
        "seed": bench.seed,
        "docs": len(benchmark),
        "kinds": dict(collections.Counter(d["kind"] for d in benchmark)),
        "precision": round(report.overall.precision, 4),
        "recall": round(report.overall.recall, 4),
        "f1": round(report.overall.f1, 4),
        "pairs": {
            "true": report.overall.true_pairs,
            "predicted": report.overall.predicted_pairs,
            "correct": report.overall.correct_pairs,
        },
        "recall_by_kind": {k: _rate(v) for k, v in sorted(report.by_kind.items())},
        "recall_by_band": {k: _rate(report.by_band[k]) for k, _ in EDIT_BANDS if k in report.by_band},
        "negatives_fp": _rate(report.negatives_fp),
        "fp_by_kind": {k: _rate(v) for k, v in report.fp_by_kind.items()},
        "shells": {
            **bench.shells_found,
            "hard": {k: sum(1 for name in shell_names if name.endswith("#" + k)) for k in HARD_VARIANTS},
            "used": len(shell_names),
            "gbk_pages": sum(1 for p in site.pages if not p.content_type.endswith("utf-8")),
        },
        "crawl": {
            "processes": processes,
            "pages": len(site.pages),
            "list_pages": len(site.list_pages),
            "article_requests": article_requests,
            # each process's share of the article pages (several processes: each took part)
            "article_pages_by_process": [_stat(text, "newsdedup/crawl/article_pages") for text in log_texts],
            "exported": len(rows),
            # export rows beyond the first of their URL: a page stored twice (0 when every page is stored once)
            "stored_twice": sum(n - 1 for n in collections.Counter(row["url"] for row in rows).values()),
            "statuses": dict(statuses),
            "skipped": counts.skipped,
            "skipped_by_reason": dict(counts.skipped_by_reason),
            "not_exported_by_kind": dict(collections.Counter(kind_of[d] for d in missing)),
            "unknown_urls": len(unknown),
            "crawl_seconds": round(crawl_seconds, 2),
            "pages_per_second": round(article_requests / crawl_seconds, 1) if crawl_seconds else 0.0,
        },
        "related_leaks": extraction.pop("related_leaks"),
        "extraction": extraction,
        "rescored": rescored,
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "command": " ".join(_redacted(part) if "://" in part else part for part in command),
        "workdir": str(workdir),
    }


def run_page_level(data_dir: Path, *, workdir: Path | None = None, **options) -> dict:
    """Run the page-level benchmark once and return its figures (see module doc).

    ``options`` are :func:`build_page_benchmark`'s keywords (``docs``, ``seed``, ``gbk_share``, ``max_shells``: that
    many shell pages sampled, for small runs; ``workers``: processes preparing the shells, None for one per core)
    and :func:`crawl_page_benchmark`'s (``method``, ``settings``: extra ``-s NAME=VALUE`` crawl settings winning over
    the run's own, ``timeout`` of the crawl in seconds, ``rescore``, and ``processes``, ``redis_url``,
    ``storage_uri`` for a distributed crawl). ``workdir`` keeps the site file, store, export and crawl logs (a
    temporary folder when None).
    """
    from newsdedup.dedup.features import METHODS

    build = {name: options.pop(name) for name in inspect.signature(build_page_benchmark).parameters if name in options}
    method = options.get("method", "hybrid")
    if method not in METHODS:  # checked before the benchmark is built, which takes a while
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    check_distributed(options.get("processes", 1), options.get("redis_url"), options.get("storage_uri"))
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="newsdedup-pages-") as tmp:
            return run_page_level(data_dir, workdir=Path(tmp), **build, **options)
    started = time.perf_counter()
    bench = build_page_benchmark(data_dir, **build)
    result = crawl_page_benchmark(bench, workdir=workdir, **options)
    result["timings"] = {**{k: round(v, 2) for k, v in bench.timings.items()}, **result["timings"],
                         "total": round(time.perf_counter() - started, 2)}
    return result
