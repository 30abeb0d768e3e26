"""Crawl throughput: the full newsdedup pipeline against Scrapy alone and a naive in-reactor pipeline.

    python benchmarks/crawl_throughput.py [--pages 2000] [--rounds 3] [--data ../shared/data] [--small] [--against DIR]
                                          [--profile]

Builds a local site of ``--pages`` article pages (real Sina texts from ../shared/data in real portal pages of the
shared data, 90-250 KB, whose article the evaluation's shell maker replaced; with ``--small``, in a 5 KB portal
template with navigation, ads and related-reading blocks) plus list pages, serves it
with ``http.server`` (HTTP/1.1, connections kept open as portals keep them) from another process on 127.0.0.1, and crawls it once per configuration through Scrapy's
engine with the project's settings (no delays, no robots.txt), each in a fresh process:

- ``scrapy_only``: no item pipeline at all (the ceiling);
- ``naive``: :class:`NaivePipeline`, trafilatura + jieba + Simhash per item in the reactor thread (the baseline);
- ``full_w0`` / ``full_w1`` / ``full_w2``: the newsdedup pipelines with 0 (inline), 1 and 2 worker processes;
- ``full_w1_noreuse``: ``full_w1`` with the passage-reuse stage off (``NEWSDEDUP_REUSE=False``): run beside
  ``full_w1``, the summary gives the reuse stage's cost as the ratio of their CPU a page, per round.

pages/s = article pages / Scrapy's ``elapsed_time_seconds`` (pool start-up included); CPU a page = the crawl
process's CPU time and its workers' (start-up included) / article pages, the steadier figure on a shared machine;
the crawl process's own is also given for its main thread, and for both from the moment the spider opens (imports,
the store's opening and the pool's start left out). ``--profile`` runs each crawl process's main thread under
cProfile and prints where its CPU goes, grouped by component (cProfile inflates Python-heavy parts; the shares in
docs/performance.md were sampled with py-spy).  ``--rounds`` repeats the
configurations interleaved (this shared VM drifts by 20-30% between minutes) and reports medians; the ratios to
``naive`` are taken per round, in the same run. ``--against DIR`` also crawls each ``full_*`` configuration with the
``newsdedup`` package of another checkout (``DIR/newsdedup``, e.g. ``git worktree add /tmp/main main``), in the same
rounds: a change's effect measured before and after on the same machine minutes.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from itertools import count
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from newsdedup.evaluation.pages import load_shells, render_page

REPO = Path(__file__).resolve().parent.parent
PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title} - 本地新闻网</title>
<meta property="og:title" content="{title}"></head><body>
<div class="nav"><a href="/">首页</a> <a href="/list/0.html">国内</a> <a href="/list/1.html">国际</a></div>
<div class="ad">广告：点击领取新人红包，下载客户端看更多精彩新闻</div>
<div class="main"><h1>{title}</h1><div class="info">2026年11月20日 08:30　来源：本地新闻网　责任编辑：王编辑</div>
<div class="article">{paragraphs}</div>
<div class="related"><h3>相关阅读</h3><ul>{related}</ul></div></div>
<div class="footer">本地新闻网版权所有 未经授权禁止转载</div></body></html>"""
CONFIGS = {"scrapy_only": {"ITEM_PIPELINES": {}}, "naive": {"ITEM_PIPELINES": {"crawl_throughput.NaivePipeline": 100}},
           "full_w0": {"NEWSDEDUP_WORKERS": 0}, "full_w1": {"NEWSDEDUP_WORKERS": 1}, "full_w2": {"NEWSDEDUP_WORKERS": 2},
           "full_w1_noreuse": {"NEWSDEDUP_WORKERS": 1, "NEWSDEDUP_REUSE": False}}
NOREUSE = "_noreuse"  # a configuration ending so is its twin's without the reuse stage


class NaivePipeline:
    """The baseline: trafilatura + jieba + Simhash in the reactor thread, one item at a time (no workers, no rjieba)."""

    def __init__(self) -> None:
        import jieba
        import trafilatura

        from newsdedup.dedup.simhash import simhash

        self.extract, self.cut, self.simhash, self.fingerprints = trafilatura.extract, jieba.lcut, simhash, []

    def process_item(self, item):
        text = self.extract(item.body.decode("utf-8", "replace"), deduplicate=False) or ""
        counts: dict[str, float] = {}
        for word in filter(str.strip, self.cut(text)):
            counts[word] = counts.get(word, 0.0) + 1.0
        self.fingerprints.append(self.simhash(counts))
        return item


def build_site(root: Path, pages: int, data_dir: Path, *, small: bool = False, one_site: bool = False) -> tuple[dict, float]:
    """Article pages under <site>/a/, list pages of 50 links under <site>/list/; returns ({site: list pages}, mean
    article KB). The real-size pages form one site per portal whose shells they use, as a crawl's site file has them
    (each site learns its own template); ``one_site`` (or ``small``) serves them all as one site, "bench"."""
    path = data_dir / "sina-news-2018" / "articles.jsonl.gz"
    if not path.is_file():
        raise SystemExit(f"{path} not found: pass --data pointing at the shared data folder")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        texts = [(d["title"], d["text"]) for d in map(json.loads, lines) if len(d["text"]) >= 400]
    rng = random.Random(2026)
    texts = [texts[rng.randrange(len(texts))] for _ in range(pages)]
    shells = [] if small else [s for s in load_shells(data_dir)[0]
                               if 90_000 <= s.source_bytes <= 250_000 and s.encoding == "utf-8"]
    site_of = [("bench" if one_site or not shells else _site_name(shells[i % len(shells)].portal)) for i in range(pages)]
    for site in set(site_of):
        (root / site / "a").mkdir(parents=True)
        (root / site / "list").mkdir()
    size = 0
    for i, (title, text) in enumerate(texts):
        if shells:
            body = render_page(shells[i % len(shells)], title=title, text=text)
        else:
            related = "".join(f'<li><a href="/a/{(i + k) % pages}.html">{html.escape(texts[(i + k) % pages][0])}</a></li>'
                              for k in (1, 2, 3))
            paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n") if p.strip())
            body = PAGE.format(title=html.escape(title), paragraphs=paragraphs, related=related).encode("utf-8")
        (root / site_of[i] / "a" / f"{i}.html").write_bytes(body)
        size += len(body)
    lists = {}
    for site in sorted(set(site_of)):
        articles = [i for i in range(pages) if site_of[i] == site]
        lists[site] = (len(articles) + 49) // 50
        for n in range(lists[site]):
            links = "".join(f'<li><a href="/{site}/a/{i}.html">第{i}篇</a></li>' for i in articles[50 * n : 50 * n + 50])
            (root / site / "list" / f"{n}.html").write_text(
                f'<html><head><meta charset="utf-8"></head><body><ul>{links}</ul>'
                f'<a href="/{site}/list/{(n + 1) % lists[site]}.html">下一页</a></body></html>', encoding="utf-8")
    return lists, size / pages / 1000


def _site_name(portal: str) -> str:
    """A site name (letters, digits, "-") for the pages of one portal's shells."""
    return "".join(c if c.isalnum() and c.isascii() else "-" for c in portal).strip("-")[:40] or "portal"


class QuietHandler(SimpleHTTPRequestHandler):
    # HTTP/1.1 keeps connections open, as portals do; http.server's default (HTTP/1.0) closes each one, and the
    # crawl process then opened a TCP connection for every page (~1 ms of its CPU a page, no real crawl's cost).
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass


class Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a crawl that opens connections faster than the server's one
    # accepting thread takes them overflows it, the kernel drops the SYN and the client waits the 1 s SYN
    # retransmission timeout (docs/performance.md). Real servers (nginx: 511) take more.
    request_queue_size = 128


def serve(root: str, ports) -> None:
    server = Server(("127.0.0.1", 0), partial(QuietHandler, directory=root))
    ports.put(server.server_address[1])
    server.serve_forever()


_crawls = count(1)


def start_one(
    name: str, sites_file: Path, workdir: Path, round_number: int = 1, code: Path | None = None,
    profile: bool = False, **overrides
) -> tuple:
    """Start a crawl in a fresh process with the project's settings, ``CONFIGS[name]`` and ``overrides`` (by
    default into a new SQLite store: an old one would skip every page); returns (process, stats file).
    ``code``: a checkout whose ``newsdedup`` package the crawl imports instead of the installed one. ``profile``:
    run the crawl process's main thread under cProfile, timed in that thread's CPU time, into ``<stats file>.prof``."""
    crawl = next(_crawls)
    stats_file = workdir / f"{name}.{round_number}.{crawl}.stats.json"
    run = "process.start()"
    if profile:
        # thread_time: the main thread's CPU only (the pool's threads hand pages to the workers beside it).
        run = ("import cProfile; profiler = cProfile.Profile(time.thread_time); profiler.enable(); process.start(); "
               f"profiler.disable(); profiler.dump_stats({str(stats_file) + '.prof'!r})")
    settings = {"NEWSDEDUP_STORAGE_URI": f"sqlite:///{workdir / f'{name}.{round_number}.{crawl}.sqlite'}", "DOWNLOAD_DELAY": 0,
                "AUTOTHROTTLE_ENABLED": False, "ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 16,
                "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False,
                "DEPTH_LIMIT": 0, **CONFIGS.get(name, {}), **overrides}
    script = f"""
import json, sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
{f"sys.path.insert(0, {str(code)!r})" if code is not None else ""}
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings
settings = Settings(); settings.setmodule("newsdedup.settings", priority="project")
settings.setdict(json.loads({json.dumps(json.dumps(settings))}), priority="cmdline")
process = CrawlerProcess(settings)
crawler = process.create_crawler("portal")
at_open = {{}}
def opened(spider):  # imports, the store and the pool's start are behind: from here on the crawl's own CPU
    at_open.update(cpu=time.process_time(), main=time.thread_time())
from scrapy import signals
crawler.signals.connect(opened, signal=signals.spider_opened)
process.crawl(crawler, sites={str(sites_file)!r})
{run}
stats = {{k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}}
stats["cpu_seconds"] = time.process_time()  # this process's own CPU (worker processes not included)
stats["cpu_main_thread_seconds"] = time.thread_time()  # the reactor's thread (the rest: the pool's and Twisted's)
stats["cpu_after_open_seconds"] = stats["cpu_seconds"] - at_open["cpu"]
stats["cpu_main_thread_after_open_seconds"] = stats["cpu_main_thread_seconds"] - at_open["main"]
import resource
children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the analysis workers, ended and reaped by now
stats["cpu_children_seconds"] = children.ru_utime + children.ru_stime
open({str(stats_file)!r}, "w").write(json.dumps(stats))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env=env if code is not None else None), stats_file


# Where the crawl process's main-thread CPU goes (--profile): each function's own time, grouped by the file it is in;
# a C function's own time goes to the group of the Python function that called it (sqlite3's execute to the store).
PROFILE_GROUPS = (
    ("newsdedup/storage/", "store (SQLite)"), ("newsdedup/dedup/", "dedup stages (Bloom, Single-Pass index; features inline)"),
    ("newsdedup/extract/", "site template (learn, check; extraction inline)"),
    ("newsdedup/text/", "site template (learn, check; extraction inline)"),
    ("trafilatura/", "extraction inline (trafilatura, justext, lxml)"), ("justext/", "extraction inline (trafilatura, justext, lxml)"),
    ("newsdedup/crawl/pipelines/", "newsdedup pipelines (glue)"), ("newsdedup/crawl/spiders/", "spider callbacks"),
    ("newsdedup/", "newsdedup, other"), ("pebble/", "pool hand-over (pebble)"), ("multiprocessing/", "pool hand-over (pebble)"),
    ("scrapy/core/downloader/", "Scrapy downloader"), ("scrapy/downloadermiddlewares/", "downloader middlewares"),
    ("scrapy/spidermiddlewares/", "spider middlewares"), ("scrapy/http/", "Scrapy requests and responses"),
    ("scrapy/", "Scrapy engine, scraper, signals, stats"), ("twisted/web/", "HTTP client (twisted.web)"),
    ("twisted/", "reactor (Twisted)"), ("asyncio/", "reactor (asyncio)"), ("selectors.py", "reactor (asyncio)"),
    ("w3lib/", "w3lib (URLs, encodings)"), ("parsel/", "parsel, lxml"), ("lxml/", "parsel, lxml"),
    ("logging/", "logging"),
)
# Functions whose cumulative time (their callees' included) is worth a line of its own.
PROFILE_CALLS = (
    ("redirect.py", "process_response", "MetaRefreshMiddleware / RedirectMiddleware.process_response"),
    ("portal.py", "parse_article", "PortalSpider.parse_article"), ("portal.py", "parse_list", "PortalSpider.parse_list"),
    ("analyse.py", "process_item", "AnalysePipeline.process_item (each resume)"),
    ("analyse.py", "_check_template", "AnalysePipeline._check_template"),
    ("template.py", "learn", "SiteTemplate.learn"), ("template.py", "boilerplate", "SiteTemplate.boilerplate"),
    ("template.py", "check", "SiteTemplate.check (each resume)"),
    ("analysis.py", "analyse", "AnalysisPool.analyse (each resume)"),
    ("exact.py", "process_page", "ExactDedupPipeline"), ("near.py", "process_page", "NearDedupPipeline"),
    ("store.py", "process_page", "StorePipeline"), ("sql.py", "flush", "SQLStore.flush (commits)"),
    ("sql.py", "has_page", "SQLStore.has_page"), ("dupefilter.py", "request_seen", "URL filter request_seen"),
)


def profile_breakdown(path: Path, pages: int) -> list[tuple[str, float]]:
    """(group, ms a page) of a --profile run's main thread, largest first, then the named calls' cumulative ms."""
    import pstats

    stats = pstats.Stats(str(path)).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}

    def group(func, depth: int = 0) -> str:
        file = func[0].replace("\\", "/")
        if file == "~" and depth < 3:  # a C function: charged to its callers, by what each call of it cost
            callers = stats.get(func, (0, 0, 0, 0, {}))[4]
            if callers:
                return group(max(callers, key=lambda c: callers[c][2]), depth + 1)
        for marker, name in PROFILE_GROUPS:
            if marker in file:
                return name
        return "other" if file != "~" else f"C: {func[2]}"

    groups: dict[str, float] = {}
    for func, (_, _, own, _, callers) in stats.items():
        if func[0] == "~" and callers:  # split a C function's time among its callers' groups
            for caller, (_, _, spent, _) in callers.items():
                groups[group(caller)] = groups.get(group(caller), 0.0) + spent
            continue
        groups[group(func)] = groups.get(group(func), 0.0) + own
    rows = sorted(((name, 1000 * t / pages) for name, t in groups.items()), key=lambda r: -r[1])
    calls = []
    for file, name, label in PROFILE_CALLS:
        total = sum(v[3] for f, v in stats.items() if f[0].endswith(file) and f[2] == name)
        if total:
            calls.append((f"  cumulative: {label}", 1000 * total / pages))
    return rows + calls


def finish_one(process: subprocess.Popen, stats_file: Path) -> dict:
    """Scrapy's final stats of a crawl :func:`start_one` started."""
    if process.wait() != 0:
        raise SystemExit(f"a crawl failed (exit status {process.returncode})")
    return json.loads(stats_file.read_text())


def serve_site(pages: int, data: Path, *, small: bool = False, one_site: bool = False) -> tuple:
    """Build the site in a new folder and serve it from another process: (workdir, sites file, server)."""
    workdir = Path(tempfile.mkdtemp(prefix="newsdedup-bench-"))
    lists, page_kb = build_site(workdir / "site", pages, data, small=small, one_site=one_site)
    print(f"{pages} article pages, {page_kb:.0f} KB on average, {len(lists)} site(s)", flush=True)
    ports = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(str(workdir / "site"), ports), daemon=True)
    server.start()
    base = f"http://127.0.0.1:{ports.get(timeout=10)}"
    sites_file = workdir / "sites.toml"
    sites_file.write_text("".join(
        f'[[site]]\nname = "{site}"\nstart_urls = [{", ".join(json.dumps(f"{base}/{site}/list/{n}.html") for n in range(count))}]\n'
        f'allowed_domains = ["127.0.0.1"]\narticle_url_pattern = \'{base}/{site}/a/\\d+\\.html\'\n\n'
        for site, count in lists.items()), encoding="utf-8")
    return workdir, sites_file, server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every configuration this many times, interleaved")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of " + ", ".join(CONFIGS))
    parser.add_argument("--small", action="store_true", help="5 KB template pages instead of real-size portal pages")
    parser.add_argument("--one-site", action="store_true",
                        help="serve the real-size pages of every portal as one site (one template learned over all)")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="also run the full_* configurations with the newsdedup package of the checkout in DIR")
    parser.add_argument("--profile", action="store_true",
                        help="profile each crawl process's main thread (cProfile, in CPU time) and print where it goes")
    args = parser.parse_args()
    if args.against is not None and not (args.against / "newsdedup" / "__init__.py").is_file():
        parser.error(f"--against {args.against}: no newsdedup package there (give the root of a checkout)")
    names = args.configs.split(",")
    unknown = [name for name in names if name not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration(s) {', '.join(unknown)}; choose among {', '.join(CONFIGS)}")
    runs: dict[str, tuple[str, Path | None]] = {}  # label: (configuration, checkout); a twin right after its own
    for name in names:
        runs[name] = (name, None)
        if args.against is not None and name.startswith("full"):
            runs[f"{name}@{args.against.name}"] = (name, args.against.resolve())
    workdir, sites_file, server = serve_site(args.pages, args.data, small=args.small, one_site=args.one_site)
    rates: dict[str, list[float]] = {label: [] for label in runs}
    cpus: dict[str, list[float]] = {label: [] for label in runs}  # CPU ms a page, workers included
    own_cpus: dict[str, list[float]] = {label: [] for label in runs}  # the crawl process's alone (the dedup stages)
    try:
        for round_number in range(1, args.rounds + 1):
            # Every other round in the reverse order: a configuration is not always the one run as the machine warms.
            order = list(runs.items()) if round_number % 2 else list(runs.items())[::-1]
            for name, (config, code) in order:
                process, stats_file = start_one(config, sites_file, workdir, round_number, code, profile=args.profile)
                stats = finish_one(process, stats_file)
                pages, seconds = stats.get("newsdedup/crawl/article_pages", 0), stats["elapsed_time_seconds"]
                rates[name].append(pages / seconds)
                cpu = stats["cpu_seconds"] + stats.get("cpu_children_seconds", 0.0)
                cpus[name].append(1000 * cpu / max(pages, 1))
                own_cpus[name].append(1000 * stats["cpu_seconds"] / max(pages, 1))
                per_page = {key: 1000 * stats[key] / max(pages, 1) for key in (
                    "cpu_seconds", "cpu_main_thread_seconds", "cpu_after_open_seconds", "cpu_main_thread_after_open_seconds")}
                print(f"round {round_number}  {name:20s} {pages:5d} pages in {seconds:7.2f} s = {pages / seconds:7.1f} "
                      f"pages/s; CPU {1000 * cpu / max(pages, 1):5.1f} ms a page (crawl process "
                      f"{per_page['cpu_seconds']:.1f}, its main thread {per_page['cpu_main_thread_seconds']:.1f}; "
                      f"after start-up {per_page['cpu_after_open_seconds']:.1f} and "
                      f"{per_page['cpu_main_thread_after_open_seconds']:.1f})", flush=True)
                if args.profile:
                    print(f"  where the main thread's CPU goes (ms a page, under cProfile: {stats_file}.prof)")
                    for label, ms in profile_breakdown(Path(f"{stats_file}.prof"), max(pages, 1)):
                        if ms >= 0.05:
                            print(f"  {ms:6.2f}  {label}")
    finally:
        server.terminate()
    print("\nconfiguration   pages/s (median)   x naive (median of per-round ratios; per round)")
    for name, values in rates.items():
        ratios = [v / n for v, n in zip(values, rates.get("naive", []))]
        print(f"{name:20s} {statistics.median(values):10.1f}   "
              f"{statistics.median(ratios) if ratios else float('nan'):10.2f}   {[round(r, 2) for r in ratios]}")
    for name in [n for n in runs if n.endswith(NOREUSE) and n[: -len(NOREUSE)] in runs]:
        twin = name[: -len(NOREUSE)]
        ratios = [on / off for on, off in zip(cpus[twin], cpus[name])]
        print(f"reuse stage: CPU a page {twin} / {name} = {statistics.median(ratios):.3f} (median; per round "
              f"{[round(r, 3) for r in ratios]}; ms a page {[round(c, 1) for c in cpus[twin]]} against "
              f"{[round(c, 1) for c in cpus[name]]})")
        # The stage runs in the crawl process: its own CPU moves by the stage's cost, the workers' only by noise.
        extra = [on - off for on, off in zip(own_cpus[twin], own_cpus[name])]
        print(f"  the crawl process's own CPU: {statistics.median(extra):+.2f} ms a page (median; per round "
              f"{[round(e, 2) for e in extra]}), {statistics.median(extra) / statistics.median(cpus[name]):+.1%} of "
              f"the CPU a page without the stage")


if __name__ == "__main__":
    main()
