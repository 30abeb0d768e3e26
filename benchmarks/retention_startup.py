"""Start-up time and memory of a crawl against a store of 1,000,000 articles, with and without the retention window.

    python benchmarks/retention_startup.py --articles 1000000 --recent 50000 --rounds 2

Builds (once, at --db) a SQLite store the way the crawl writes it: ``--articles`` articles over 400 days, the last
``--recent`` of them fetched within the past 30 days (50,000 is about 1,700 a day: a deployment crawling a dozen
portals), 5% of them near-duplicates; texts cycled from the real Sina texts, SpotSigs multisets from
benchmarks/index_scaling.py's generator (drawn to match the Sina texts' statistics). Then a real
``scrapy crawl portal`` against a local site with one list page whose one article link robots.txt refuses, so
the run fetches no article and is start-up (open the store,
rebuild the URL filter, the exact filter and the SpotSigs index) and shutdown, in three configurations, rounds
interleaved: an empty store (the baseline), the 1M store with ``NEWSDEDUP_RETENTION_DAYS=30`` and with ``0``
(no window). Wall time and the crawl process's peak resident memory (``wait4``), medians.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_scaling import DEFAULT_DATA, SpotDocuments  # noqa: E402

from newsdedup.dedup.features import pack_spots  # noqa: E402
from newsdedup.storage.sqlite import ARTICLE_COLUMNS, CLUSTER_COLUMNS, DATED_COLUMNS, SQLiteStore  # noqa: E402
from newsdedup.monitoring.timespec import utc_iso  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent

SITES = ("sina", "sohu", "qq", "163", "xinhua", "people", "ifeng", "thepaper", "chinanews")


def build_store(path: Path, *, articles: int, recent: int, data: Path) -> None:
    with gzip.open(next((data / "sina-news-2018").glob("*.jsonl.gz")), "rt", encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines]
    SQLiteStore(path).open()  # the schema, as a crawl creates it
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    spots, rng, now = SpotDocuments(), random.Random(7), datetime.now(timezone.utc)
    article_sql = f"INSERT INTO articles ({', '.join(ARTICLE_COLUMNS + DATED_COLUMNS)}) VALUES " \
                  f"({', '.join('?' for _ in ARTICLE_COLUMNS + DATED_COLUMNS)})"
    cluster_sql = f"INSERT OR REPLACE INTO clusters ({', '.join(CLUSTER_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)"
    rows, clusters, centre = [], [], None
    for i in range(1, articles + 1):
        # Oldest first; the last `recent` articles within the past 30 days, the others 31 to 400 days back.
        age = (articles - i) / recent * 30 if i > articles - recent else 31 + (articles - recent - i) / articles * 369
        fetched = utc_iso(now - timedelta(days=age))
        url, site = f"https://news.example.com/{i}.html", SITES[i % len(SITES)]
        near = centre is not None and rng.random() < 0.05
        doc = spots.edit(centre[1], rng) if near else spots.doc(i)
        cluster = centre[0] if near else i
        rows.append((i, url, site, f"新闻 {i}", texts[i % len(texts)], None, None, None, url, fetched,
                     i.to_bytes(16, "big"), "near_duplicate" if near else "unique", centre[2] if near else None,
                     cluster, 0.6 if near else None, "spotsigs", None, pack_spots(doc), 0.6 if near else None,
                     "jaccard" if near else None, url, fetched, "fetched"))  # ..., fetched_url, dated_at, date_basis
        if near:
            clusters[-1] = (cluster, centre[2], centre[3], "fetched", 2, centre[3], fetched)
        else:
            centre = (i, doc, url, fetched)
            clusters.append((i, url, fetched, "fetched", 1, fetched, fetched))
        if len(rows) >= 20_000 or i == articles:
            with conn:
                conn.executemany(article_sql, rows)
                conn.executemany(cluster_sql, clusters)
            rows, clusters = [], clusters[-1:]
            print(f"\r  built {i:,} of {articles:,} articles", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    conn.close()


@contextmanager
def nothing_to_fetch() -> Iterator[str]:
    """The URL of a local list page with one article link that robots.txt refuses: a crawl of it finds a link (a
    list page without any fails the site, exit status 6) and fetches nothing but robots.txt and the list page, so
    its time is start-up and shutdown and no store changes."""
    with tempfile.TemporaryDirectory() as root:
        Path(root, "index.html").write_text('<html><body><a href="/news/1.html">news</a></body></html>',
                                            encoding="utf-8")
        Path(root, "robots.txt").write_text("User-agent: *\nDisallow: /news/\n", encoding="utf-8")
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=root))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
        finally:
            server.shutdown()


def crawl(db: Path, site_url: str, retention: str) -> tuple[float, float, float]:
    """Wall seconds, peak resident MB and CPU seconds of one `scrapy crawl portal` that has nothing to fetch."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as sites:
        sites.write(f'[[site]]\nname = "empty"\nstart_urls = ["{site_url}"]\nallowed_domains = ["127.0.0.1"]\n'
                    "article_url_pattern = 'http://127\\.0\\.0\\.1:\\d+/news/\\d+\\.html'\n")
    command = [sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites.name}",
               "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{db}", "-s", f"NEWSDEDUP_RETENTION_DAYS={retention}",
               "-s", "NEWSDEDUP_WORKERS=0", "-s", "TELNETCONSOLE_ENABLED=False", "-s", "LOG_LEVEL=WARNING"]
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the crawl failed: {process.stderr.read().decode()[-2000:]}")
    os.unlink(sites.name)
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=1_000_000)
    parser.add_argument("--recent", type=int, default=50_000, help="articles fetched within the last 30 days")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", type=Path, default=None,
                        help="the store to build once and reuse (default: newsdedup-ARTICLES-RECENT.sqlite in the "
                        "temporary folder, so another size never reuses a store of the wrong size)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if args.recent > args.articles:
        parser.error(f"--recent ({args.recent:,}) cannot exceed --articles ({args.articles:,})")
    args.db = args.db or Path(tempfile.gettempdir()) / f"newsdedup-{args.articles}-{args.recent}.sqlite"
    if not args.db.exists():
        print(f"building {args.db} ...", file=sys.stderr)
        build_store(args.db, articles=args.articles, recent=args.recent, data=args.data)
    with tempfile.TemporaryDirectory() as root, nothing_to_fetch() as site_url:
        configs = {"empty store (baseline)": (Path(root, "empty.sqlite"), "30"),
                   f"{args.articles:,} articles, 30-day window": (args.db, "30"),
                   f"{args.articles:,} articles, no window": (args.db, "0")}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in configs}
        for round_ in range(args.rounds):
            for name, (db, retention) in configs.items():
                results[name].append(crawl(db, site_url, retention))
                print(f"  round {round_ + 1} {name}: {results[name][-1][0]:.1f} s, {results[name][-1][1]:.0f} MB",
                      file=sys.stderr)
    base_s, base_mb = (statistics.median(v[i] for v in results["empty store (baseline)"]) for i in (0, 1))
    print("| store | start-up and shutdown, s (median) | x baseline | peak memory, MB (median) | x baseline |")
    print("| --- | --- | --- | --- | --- |")
    for name, runs in results.items():
        seconds, mb = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        print(f"| {name} | {seconds:.1f} | {seconds / base_s:.1f} | {mb:.0f} | {mb / base_mb:.1f} |")


if __name__ == "__main__":
    main()
