"""The page-level reprint benchmark, end to end: build -> serve -> crawl -> export -> score.

    python -m newsdedup.evaluation.page_level --data ../shared/data --docs 1500 --method hybrid

1. the text-level benchmark (:func:`~newsdedup.evaluation.reprints.build_text_benchmark`, its
   default mix scaled to about ``docs`` documents);
2. shells from the real pages in ``data_dir`` (:mod:`newsdedup.evaluation.pages`), each checked by
   embedding two probe texts (the 25th and 75th length percentile of the benchmark's articles) and
   extracting them; shells under ``min_shell_f1`` token F1, or leaking the added related block, are
   dropped;
3. one page per document on those shells, list pages of 50 links, served on 127.0.0.1;
4. ``scrapy crawl portal`` in a subprocess from the project root (loopback: no delay, no
   autothrottle, robots.txt obeyed), writing to SQLite in ``workdir``; then ``newsdedup export``;
5. every exported row mapped back to its document by URL path, its ``cluster_id`` the predicted
   cluster (exact repeats carry the cluster of the page they repeat); a document without a row
   (skipped by extraction, e.g. a JavaScript-only or too short page) is a cluster of its own;
6. scored with :func:`~newsdedup.evaluation.scoring.evaluate`: pairwise P/R/F1, recall by kind and
   edit band, false-positive rate on the hard negatives.

:func:`run_page_level` returns everything as a dict; :func:`format_summary` prints it.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import newsdedup
from newsdedup.evaluation.pages import (
    BenchSite,
    PageBenchServer,
    RelatedItem,
    build_site,
    first_line,
    load_shells,
    verify_shells,
)
from newsdedup.evaluation.reprints import build_text_benchmark, read_jsonl, write_jsonl
from newsdedup.evaluation.scoring import EDIT_BANDS, Rate, clusters_from_verdicts, evaluate

__all__ = [
    "DEFAULT_DOCS",
    "benchmark_sizes",
    "crawl_command",
    "format_summary",
    "main",
    "predicted_clusters",
    "run_page_level",
]

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
}
_NORMAL_KINDS = ("original", "singleton")
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


def _project_dir() -> Path | None:
    """The repository root (holding scrapy.cfg) when newsdedup runs from a checkout, else None."""
    root = Path(newsdedup.__file__).resolve().parent.parent
    return root if (root / "scrapy.cfg").is_file() else None


def crawl_command(sites_file: Path, storage_uri: str, *, method: str, settings: Mapping[str, object] = ()) -> list[str]:
    """The ``scrapy crawl portal`` command line of a page-level run (``settings`` override the defaults)."""
    merged = {**_CRAWL_SETTINGS, "NEWSDEDUP_STORAGE_URI": storage_uri, "NEWSDEDUP_NEAR_METHOD": method, **dict(settings)}
    command = [sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites_file}"]
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


def _probes(docs: Sequence[Mapping]) -> tuple[list[tuple[str, str]], list[RelatedItem]]:
    """Two probe texts (25th and 75th length percentile of the articles) and related items from other stories."""
    articles = sorted((d for d in docs if d["kind"] in _NORMAL_KINDS), key=lambda d: (len(d["text"]), d["id"]))
    if len(articles) < 3:
        raise ValueError("the benchmark has fewer than 3 originals/singletons: ask for more docs")
    chosen = [articles[len(articles) // 4], articles[(3 * len(articles)) // 4]]
    stories = {d["story"] for d in chosen}
    probes = [(d["title"], d["text"]) for d in chosen]
    related = [
        RelatedItem(f"/probe/{n}.shtml", d["title"].strip(), first_line(d["text"]))
        for n, d in enumerate(a for a in articles if a["story"] not in stories and a["title"].strip())
    ][:8]
    return probes, related


def _rate(rate: Rate) -> dict:
    return {"hits": rate.hits, "total": rate.total, "rate": round(rate.value, 4)}


def _leaks(site: BenchSite, rows: Sequence[Mapping]) -> dict:
    """Exported bodies that contain a headline or first line quoted by the page's added related block."""
    page_of_path = {p.path: p for p in site.pages}
    by_layout: collections.Counter[int] = collections.Counter()
    pages_by_layout: collections.Counter[int] = collections.Counter()
    leaked = 0
    for row in rows:
        page = page_of_path.get(urlsplit(row["url"]).path)
        if page is None or page.related_layout is None:
            continue
        pages_by_layout[page.related_layout] += 1
        text = row.get("text") or ""
        if any(q in text for q in page.quoted):
            leaked += 1
            by_layout[page.related_layout] += 1
    return {
        "pages": leaked,
        "checked": sum(pages_by_layout.values()),
        "by_layout": {str(k): f"{by_layout[k]}/{pages_by_layout[k]}" for k in sorted(pages_by_layout)},
    }


def _text_level(benchmark: Sequence[Mapping], method: str, workdir: Path, *, cwd: Path, env: Mapping[str, str]) -> dict:
    """``newsdedup dedup`` on the benchmark texts (no pages): the same figures, for comparison."""
    docs_file, verdicts_file = workdir / "docs.jsonl", workdir / "verdicts.jsonl"
    write_jsonl(({"id": d["id"], "text": d["text"], "title": d["title"]} for d in benchmark), docs_file)
    subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", "dedup", "--input", str(docs_file), "--output", str(verdicts_file),
         "--method", method],
        cwd=cwd, env=dict(env), capture_output=True, text=True, check=True, timeout=900,
    )
    report = evaluate(benchmark, clusters_from_verdicts(read_jsonl(verdicts_file)))
    return {
        "precision": round(report.overall.precision, 4),
        "recall": round(report.overall.recall, 4),
        "f1": round(report.overall.f1, 4),
        "recall_by_kind": {k: _rate(v) for k, v in sorted(report.by_kind.items())},
        "negatives_fp": _rate(report.negatives_fp),
    }


def run_page_level(
    data_dir: Path,
    *,
    docs: int = DEFAULT_DOCS,
    method: str = "hybrid",
    seed: int = 1,
    settings: Mapping[str, object] | None = None,
    workdir: Path | None = None,
    gbk_share: float = 0.2,
    min_shell_f1: float = 0.9,
    max_shells: int | None = None,
    workers: int | None = None,
    timeout: float = 900,
    text_level: bool = False,
    rescore: Callable[[Sequence[Mapping], Mapping[str, str]], object] | None = None,
) -> dict:
    """Run the page-level benchmark once and return its figures (see module doc).

    ``settings`` are extra ``-s NAME=VALUE`` crawl settings (they win over the run's own);
    ``workdir`` keeps the site file, SQLite store, export and crawl log (a temporary folder when
    None); ``max_shells`` samples that many shell pages (small runs); ``workers`` processes prepare
    the shells (None: one per core); ``timeout`` bounds the crawl in seconds.  ``text_level`` also
    runs ``newsdedup dedup --method METHOD`` (its default parameters; crawl ``settings`` do not
    apply) on the same texts in benchmark order, for comparison (``result["text_level"]``).
    ``rescore(benchmark, extracted)``, given the benchmark documents and ``doc id -> extracted text`` of
    every exported page, may score other methods on what the crawl extracted; its return value is
    ``result["rescored"]``.
    """
    from newsdedup.dedup.features import METHODS  # the crawl's own list of near-duplicate methods

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not 0 < min_shell_f1 <= 1:
        raise ValueError(f"min_shell_f1 must be in (0, 1], got {min_shell_f1}")
    if max_shells is not None and max_shells < 2:
        raise ValueError(f"max_shells must be >= 2 (a story needs shells of different portals), got {max_shells}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ValueError(f"{data_dir} is not a folder: pass --data ../shared/data (the shared data folder)")
    sizes = benchmark_sizes(docs)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="newsdedup-pages-") as tmp:
            return run_page_level(
                data_dir, docs=docs, method=method, seed=seed, settings=settings, workdir=Path(tmp),
                gbk_share=gbk_share, min_shell_f1=min_shell_f1, max_shells=max_shells, workers=workers, timeout=timeout,
                text_level=text_level, rescore=rescore,
            )
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    started = time.perf_counter()

    benchmark = build_text_benchmark(data_dir, seed=seed, **sizes)
    timings["benchmark"] = time.perf_counter() - started

    mark = time.perf_counter()
    probes, related = _probes(benchmark)
    processes = workers if workers is not None else (os.cpu_count() or 1)
    executor = concurrent.futures.ProcessPoolExecutor(processes) if processes > 1 else None
    try:
        shells, unusable = load_shells(data_dir, executor=executor, sample=max_shells, seed=seed)
        checks = verify_shells(shells, probes, related, seed=seed, executor=executor)
    finally:
        if executor is not None:
            executor.shutdown()
    passed = [s for s, c in zip(shells, checks) if c.passed(min_shell_f1)]
    if len({s.portal for s in passed}) < 2:
        raise ValueError("fewer than 2 portals' shells passed the check: raise max_shells or lower min_shell_f1")
    timings["shells"] = time.perf_counter() - mark

    mark = time.perf_counter()
    site = build_site(benchmark, passed, seed=seed, gbk_share=gbk_share)
    timings["pages"] = time.perf_counter() - mark

    db = (workdir / "pages.sqlite").resolve()
    if db.exists():
        db.unlink()  # a store from an earlier run would hold its articles and skip their URLs
    storage_uri = f"sqlite:///{db}"
    sites_file = workdir / "sites.toml"
    log_file = workdir / "crawl.log"
    project = _project_dir()
    env = dict(os.environ)
    if project is None:
        env.setdefault("SCRAPY_SETTINGS_MODULE", "newsdedup.settings")
    with PageBenchServer(site) as server:
        sites_file.write_text(server.sites_toml(), encoding="utf-8")
        command = crawl_command(sites_file, storage_uri, method=method, settings=settings or {})
        mark = time.perf_counter()
        with log_file.open("w", encoding="utf-8") as log:
            result = subprocess.run(command, cwd=project or workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    timeout=timeout, check=False)
        timings["crawl"] = time.perf_counter() - mark
        served = dict(server.requests_served)
    log_text = log_file.read_text(encoding="utf-8", errors="replace")
    if result.returncode != 0:
        raise RuntimeError(f"scrapy crawl exited with {result.returncode}; see {log_file}:\n{log_text[-3000:]}")

    mark = time.perf_counter()
    exported = subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", "export", "--storage", storage_uri],
        cwd=project or workdir, env=env, capture_output=True, text=True, check=True, timeout=300,
    )
    (workdir / "export.jsonl").write_text(exported.stdout, encoding="utf-8")
    rows = [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]
    timings["export"] = time.perf_counter() - mark

    from newsdedup.storage import open_store

    store = open_store(storage_uri)
    store.open()
    try:
        counts = store.counts()
    finally:
        store.close()

    doc_of_path = site.doc_of_path
    predicted, unknown = predicted_clusters(rows, doc_of_path)
    kind_of = {d["id"]: d["kind"] for d in benchmark}
    missing = [d["id"] for d in benchmark if d["id"] not in predicted]
    for doc in missing:
        predicted[doc] = f"alone:{doc}"
    report = evaluate(benchmark, predicted)
    text_result = None
    if text_level:
        mark = time.perf_counter()
        text_result = _text_level(benchmark, method, workdir, cwd=project or workdir, env=env)
        timings["text_level"] = time.perf_counter() - mark
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
    timings["total"] = time.perf_counter() - started

    article_requests = sum(served.get(p.path, 0) for p in site.pages)
    elapsed = _ELAPSED.search(log_text)
    crawl_seconds = float(elapsed.group(1)) if elapsed else timings["crawl"]
    statuses = collections.Counter(row["status"] for row in rows)
    shell_names = collections.Counter(p.shell for p in site.pages)
    return {
        "method": method,
        "seed": seed,
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
            "pages_found": len(shells) + len(unusable),
            "no_article_element": len(unusable),
            "checked": len(checks),
            "passed": len(passed),
            "pass_rate": round(len(passed) / len(checks), 4) if checks else 0.0,
            "dropped": [{"name": c.name, "f1": round(c.f1, 3), "leaked": c.leaked, "error": c.error}
                        for c in checks if not c.passed(min_shell_f1)],
            "used": len(shell_names),
            "portals_used": len({s.portal for s in passed if s.name in shell_names}),
            "gbk_pages": sum(1 for p in site.pages if not p.content_type.endswith("utf-8")),
        },
        "crawl": {
            "pages": len(site.pages),
            "list_pages": len(site.list_pages),
            "article_requests": article_requests,
            "exported": len(rows),
            "statuses": dict(statuses),
            "skipped": counts.skipped,
            "skipped_by_reason": dict(counts.skipped_by_reason),
            "not_exported_by_kind": dict(collections.Counter(kind_of[d] for d in missing)),
            "unknown_urls": len(unknown),
            "crawl_seconds": round(crawl_seconds, 2),
            "pages_per_second": round(article_requests / crawl_seconds, 1) if crawl_seconds else 0.0,
        },
        "related_leaks": _leaks(site, rows),
        "text_level": text_result,
        "rescored": rescored,
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "command": " ".join(command),
        "workdir": str(workdir),
    }


def format_summary(result: Mapping) -> str:
    """A short human-readable report of :func:`run_page_level`'s result."""
    shells, crawl = result["shells"], result["crawl"]
    pairs = result["pairs"]
    lines = [
        f"page-level reprint benchmark: {result['docs']} documents as {crawl['pages']} pages, method {result['method']}",
        f"  P {result['precision']:.3f}  R {result['recall']:.3f}  F1 {result['f1']:.3f}   "
        f"(pairs: {pairs['correct']} correct of {pairs['predicted']} predicted, {pairs['true']} true)",
        "  recall by kind: " + ", ".join(f"{k} {v['rate']:.3f} ({v['hits']}/{v['total']})" for k, v in result["recall_by_kind"].items()),
        "  recall by edit band: " + ", ".join(f"{k} {v['rate']:.3f}" for k, v in result["recall_by_band"].items()),
        f"  negatives put with another story: {result['negatives_fp']['hits']}/{result['negatives_fp']['total']} "
        f"({result['negatives_fp']['rate']:.3f}); "
        + ", ".join(f"{k} {v['hits']}/{v['total']}" for k, v in result["fp_by_kind"].items()),
        f"  shells: {shells['passed']}/{shells['checked']} passed the extraction check ({shells['pass_rate']:.1%}), "
        f"{len(shells['dropped'])} dropped, {shells['no_article_element']} pages without an article element; "
        f"{shells['used']} shells of {shells['portals_used']} portals used, {shells['gbk_pages']} pages in GBK",
        f"  crawl: {crawl['article_requests']} article pages in {crawl['crawl_seconds']:.1f} s "
        f"({crawl['pages_per_second']:.1f} pages/s), {crawl['exported']} exported {crawl['statuses']}, "
        f"{crawl['skipped']} skipped {crawl['skipped_by_reason']}; not exported by kind {crawl['not_exported_by_kind']}",
        f"  related-reading leaks: {result['related_leaks']['pages']}/{result['related_leaks']['checked']} exported "
        f"bodies (by layout {result['related_leaks']['by_layout']})",
        *(
            [f"  text level (newsdedup dedup, same texts): P {t['precision']:.3f}  R {t['recall']:.3f}  F1 {t['f1']:.3f}; "
             f"negatives with another story {t['negatives_fp']['hits']}/{t['negatives_fp']['total']}"]
            if (t := result.get("text_level")) else []
        ),
        f"  time: {result['timings']} s; load average {result['load_average']} on {result['cpu_count']} cores",
    ]
    return "\n".join(lines)


def _parse_setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"settings are NAME=VALUE, got {text!r}")
    return name.strip(), value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m newsdedup.evaluation.page_level",
        description="Page-level reprint benchmark: benchmark texts in real page shells, crawled by the real spider.",
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the shared data folder")
    parser.add_argument("--docs", type=int, default=DEFAULT_DOCS, help="about this many documents (pages)")
    parser.add_argument("--method", default="hybrid", help="NEWSDEDUP_NEAR_METHOD of the crawl (simhash, spotsigs, hybrid...)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-s", "--set", dest="settings", action="append", type=_parse_setting, default=[],
                        metavar="NAME=VALUE", help="extra crawl setting (repeatable), e.g. -s NEWSDEDUP_SPOTSIGS_TAU=0.4")
    parser.add_argument("--workdir", type=Path, help="keep the site file, store, export and crawl log here")
    parser.add_argument("--gbk-share", type=float, default=0.2, help="share of pages on the GBK (NetEase) shells")
    parser.add_argument("--min-shell-f1", type=float, default=0.9, help="token F1 a shell must give back")
    parser.add_argument("--max-shells", type=int, help="sample this many shell pages (quick runs)")
    parser.add_argument("--text-level", action="store_true",
                        help="also score newsdedup dedup on the same texts (no pages), for comparison")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        result = run_page_level(
            args.data, docs=args.docs, method=args.method, seed=args.seed, settings=dict(args.settings),
            workdir=args.workdir, gbk_share=args.gbk_share, min_shell_f1=args.min_shell_f1, max_shells=args.max_shells,
            text_level=args.text_level,
        )
    except ValueError as exc:
        print(f"page_level: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, ensure_ascii=False, indent=1) if args.json else format_summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
