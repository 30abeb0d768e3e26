"""Crawl throughput: the full newsdedup pipeline against Scrapy alone and a naive in-reactor pipeline.

    python benchmarks/crawl_throughput.py [--pages 2000] [--data ../shared/data]

Builds a local site of ``--pages`` article pages (real Sina texts from ../shared/data in a portal
template with navigation, ads and related-reading blocks; your own text if the data is absent)
plus list pages, serves it from a separate process on 127.0.0.1, and crawls it once per
configuration through Scrapy's engine with the project's settings (no delays, no robots.txt):

- ``scrapy_only``: no item pipeline at all (the ceiling);
- ``naive``: one in-reactor pipeline doing trafilatura + jieba + Simhash per item (the baseline);
- ``full_w0``: the newsdedup pipelines with extraction and fingerprinting inline (0 workers);
- ``full_w1`` / ``full_w2``: the newsdedup pipelines with 1 and 2 worker processes.

Each configuration runs in a fresh process (``--rounds N`` repeats them, interleaved, and reports
medians: the machine is a shared VM whose speed drifts by 20-30% between minutes); pages/s = article pages stored or dropped / crawl
time (Scrapy's ``elapsed_time_seconds``, pool start-up included).  Ratios are against ``naive``
measured in the same run.
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
import time
from functools import partial
from itertools import count
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title} - 本地新闻网</title>
<meta property="og:title" content="{title}"></head><body>
<div class="nav"><a href="/">首页</a> <a href="/list/0.html">国内</a> <a href="/list/1.html">国际</a> <a href="/list/2.html">财经</a></div>
<div class="ad">广告：点击领取新人红包，下载客户端看更多精彩新闻</div>
<div class="main"><h1>{title}</h1><div class="info">2026年11月20日 08:30　来源：本地新闻网　责任编辑：王编辑</div>
<div class="article">{paragraphs}</div>
<div class="related"><h3>相关阅读</h3><ul>{related}</ul></div></div>
<div class="footer">本地新闻网版权所有 未经授权禁止转载</div></body></html>"""
LIST = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>新闻列表 {n}</title></head><body>
<ul>{links}</ul><a href="/list/{next}.html">下一页</a></body></html>"""
FALLBACK_TEXT = (
    "本地新闻网讯 今天上午，市政府召开新闻发布会，介绍今年以来城市建设和民生保障工作进展情况。"
    "发布会上，相关负责人表示，全市新建改建道路一百二十公里，新增公共停车位三万余个。"
    "今年，全市还将继续推进老旧小区改造，计划完成改造项目两百个，惠及居民八万余户。"
    "市民代表在会上提出，希望进一步加强社区养老服务设施建设，方便老年人就近享受服务。"
)


def load_texts(data_dir: Path | None, count: int) -> list[tuple[str, str]]:
    path = data_dir / "sina-news-2018" / "articles.jsonl.gz" if data_dir else None
    texts: list[tuple[str, str]] = []
    if path and path.exists():
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                doc = json.loads(line)
                if len(doc["text"]) >= 400:
                    texts.append((doc["title"], doc["text"]))
    if not texts:
        rng = random.Random(1)
        sentences = FALLBACK_TEXT.split("。")
        texts = [(f"本地新闻第{i}号", "。".join(rng.sample(sentences, len(sentences))) * 3) for i in range(count)]
    rng = random.Random(2026)
    return [texts[rng.randrange(len(texts))] for _ in range(count)]


def real_shells(data_dir: Path | None) -> list:
    """Real portal pages of ../shared/data (UTF-8, 90-250 KB: median 141 KB) whose article the evaluation's
    shell maker replaced by a placeholder: pages as heavy as the portals' own (navigation, scripts, related
    lists), the size that decides extraction cost. Empty without the data."""
    if data_dir is None:
        return []
    from newsdedup.evaluation.pages import load_shells

    shells, _ = load_shells(data_dir)
    return [s for s in shells if 90_000 <= s.source_bytes <= 250_000 and s.encoding == "utf-8"]


def build_site(root: Path, pages: int, data_dir: Path | None, *, small: bool = False) -> float:
    """Write the site; returns the mean article page size in KB."""
    texts = load_texts(data_dir, pages)
    shells = [] if small else real_shells(data_dir)
    (root / "a").mkdir(parents=True)
    (root / "list").mkdir()
    sizes = []
    for i, (title, text) in enumerate(texts):
        if shells:
            from newsdedup.evaluation.pages import render_page

            body = render_page(shells[i % len(shells)], title=title, text=text)
        else:
            paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n") if p.strip())
            related = "".join(
                f'<li><a href="/a/{(i + k) % pages}.html">{html.escape(texts[(i + k) % pages][0])}</a></li>'
                for k in (1, 2, 3)
            )
            body = PAGE.format(title=html.escape(title), paragraphs=paragraphs, related=related).encode("utf-8")
        (root / "a" / f"{i}.html").write_bytes(body)
        sizes.append(len(body))
    per_list = 50
    lists = (pages + per_list - 1) // per_list
    for n in range(lists):
        links = "".join(f'<li><a href="/a/{i}.html">第{i}篇</a></li>'
                        for i in range(n * per_list, min(pages, (n + 1) * per_list)))
        (root / "list" / f"{n}.html").write_text(LIST.format(n=n, links=links, next=(n + 1) % lists),
                                                 encoding="utf-8")
    return sum(sizes) / len(sizes) / 1000


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep the benchmark's output readable
        pass


class Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a crawl that opens connections faster than the server's one
    # accepting thread takes them overflows it, the kernel drops the SYN and the client waits the 1 s SYN
    # retransmission timeout (README.md, *Speed*). Real servers (nginx: 511) take more.
    request_queue_size = 128


def serve(root: str, port_queue) -> None:
    server = Server(("127.0.0.1", 0), partial(QuietHandler, directory=root))
    port_queue.put(server.server_address[1])
    server.serve_forever()


def sites_toml(base: str, lists: int) -> str:
    starts = ", ".join(f'"{base}/list/{n}.html"' for n in range(lists))
    return f"""[[site]]
name = "bench"
start_urls = [{starts}]
allowed_domains = ["127.0.0.1"]
article_url_pattern = '{base}/a/\\d+\\.html'
"""


CONFIGS = {
    "scrapy_only": {"ITEM_PIPELINES": {}},
    "naive": {"ITEM_PIPELINES": {"naive_pipeline.NaivePipeline": 100}},
    "full_w0": {"NEWSDEDUP_WORKERS": 0},
    "full_w1": {"NEWSDEDUP_WORKERS": 1},
    "full_w2": {"NEWSDEDUP_WORKERS": 2},
}


_crawls = count(1)


def start_one(name: str, sites_file: Path, workdir: Path, round_number: int = 1, **overrides) -> tuple:
    """Start a crawl in a fresh process with the project's settings, ``CONFIGS[name]`` and ``overrides`` (by
    default into a new SQLite store: an old one would skip every page); returns (process, stats file)."""
    stats_file = workdir / f"{name}.{round_number}.{next(_crawls)}.stats.json"
    settings = {
        "NEWSDEDUP_STORAGE_URI": f"sqlite:///{workdir / f'{name}.{round_number}.sqlite'}",
        "DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False, "DEPTH_LIMIT": 0,
        **CONFIGS.get(name, {}), **overrides,
    }
    code = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings
settings = Settings(); settings.setmodule("newsdedup.settings", priority="project")
settings.setdict(json.loads({json.dumps(json.dumps(settings))}), priority="cmdline")
process = CrawlerProcess(settings)
crawler = process.create_crawler("portal")
process.crawl(crawler, sites={str(sites_file)!r})
process.start()
stats = {{k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}}
import time; stats["cpu_seconds"] = time.process_time()  # this process's own CPU (worker processes not included)
open({str(stats_file)!r}, "w").write(json.dumps(stats))
"""
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO), stats_file


def finish_one(process: subprocess.Popen, stats_file: Path) -> dict:
    """Scrapy's final stats of a crawl :func:`start_one` started."""
    if process.wait() != 0:
        raise SystemExit(f"a crawl failed (exit status {process.returncode})")
    return json.loads(stats_file.read_text())


def run_one(name: str, sites_file: Path, workdir: Path, round_number: int = 1) -> dict:
    """Crawl once in a fresh process; return Scrapy's final stats."""
    started = time.perf_counter()
    stats = finish_one(*start_one(name, sites_file, workdir, round_number))
    stats["wall_seconds"] = time.perf_counter() - started
    return stats


def serve_site(pages: int, data: Path, *, small: bool = False) -> tuple:
    """Build the site in a new folder and serve it from another process: (workdir, sites file, server, KB/page)."""
    workdir = Path(tempfile.mkdtemp(prefix="newsdedup-bench-"))
    site = workdir / "site"
    page_kb = build_site(site, pages, data if data.is_dir() else None, small=small)
    print(f"{pages} article pages, {page_kb:.0f} KB on average", flush=True)
    ports = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(str(site), ports), daemon=True)
    server.start()
    sites_file = workdir / "sites.toml"
    sites_file.write_text(sites_toml(f"http://127.0.0.1:{ports.get(timeout=10)}", (pages + 49) // 50),
                          encoding="utf-8")
    return workdir, sites_file, server, page_kb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every configuration this many times, interleaved")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of " + ", ".join(CONFIGS))
    parser.add_argument("--small", action="store_true", help="small synthetic pages (5 KB) instead of real-size shells")
    args = parser.parse_args(argv)
    workdir, sites_file, server, page_kb = serve_site(args.pages, args.data, small=args.small)
    runs: dict[str, list[dict]] = {name: [] for name in args.configs.split(",")}
    try:
        # Rounds interleave the configurations, so a slow spell of a shared machine hits all of them.
        for round_number in range(1, args.rounds + 1):
            for name in runs:
                stats = run_one(name, sites_file, workdir, round_number)
                articles = stats.get("newsdedup/crawl/article_pages", 0)
                seconds = stats.get("elapsed_time_seconds", stats["wall_seconds"])
                runs[name].append({"article_pages": articles, "seconds": round(seconds, 2),
                                   "pages_per_s": round(articles / seconds, 1),
                                   "stored": stats.get("newsdedup/store/articles", stats.get("item_scraped_count", 0))})
                print(f"round {round_number}  {name:12s} {articles:5d} pages in {seconds:7.2f} s = "
                      f"{articles / seconds:7.1f} pages/s", flush=True)
    finally:
        server.terminate()
    results = {}
    for name, rows in runs.items():
        results[name] = {"pages_per_s_median": statistics.median(r["pages_per_s"] for r in rows), "runs": rows}
        if "naive" in runs:
            ratios = [r["pages_per_s"] / n["pages_per_s"] for r, n in zip(rows, runs["naive"])]
            results[name]["vs_naive_per_round"] = [round(x, 2) for x in ratios]
            results[name]["vs_naive_median"] = round(statistics.median(ratios), 2)
    print("\nconfiguration   pages/s (median)   x naive (median of per-round ratios)")
    for name, row in results.items():
        print(f"{name:14s} {row['pages_per_s_median']:10.1f}   {row.get('vs_naive_median', float('nan')):10.2f}")
    print(json.dumps({"cpus": os.cpu_count(), "pages": args.pages, "page_kb": round(page_kb), "results": results},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
