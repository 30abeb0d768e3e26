"""Crawl start-up and a distributed writer's takeover with the persisted dedup state (NEWSDEDUP_STATE_DIR), against
a SQLite store of N stories in the retention window, beside an empty store and today's rebuild, in the same run.

    nice -n 19 python benchmarks/crawl_startup.py --sizes 100000 1000000 --today-limit 1000000

For each size: a store written the way the crawl writes it (``ROOT/store-N.sqlite``, kept and reused; default ROOT
``/tmp/newsdedup-bench``): N articles fetched over the last 29 days, 5% of them near copies of a recent story (which
raises that story's last activity), SpotSigs multisets of :class:`spot_arrays.SpotArrays` (the distribution of
benchmarks/index_scaling.py, drawn in numpy). Then, each in a fresh process (its own memory, a cold start):

``build``
    The state's first build from the store (a store's first crawl with a state folder, or a damaged state).
``startup``
    What a crawl start does (:meth:`CrawlState.open`): open the store, :meth:`DedupIndexes.rebuild` with the state
    folder (the exact filter and the SpotSigs index, opened and caught up) and the URL filter's
    :meth:`UrlState.open` (as ``SeenArticlesDupeFilter.open``).
``crawl``
    A whole ``scrapy crawl portal`` process with nothing to fetch (``retention_startup.nothing_to_fetch``) against the
    store and its state: start-up and shutdown as a user sees them, median of ``--rounds``.
``takeover``
    A writer's takeover (``RunMember._try_to_become_writer``): ``store.refresh()`` and :meth:`DedupIndexes.rebuild`,
    after ``--behind`` rows were committed that the state had not taken in (the dead writer's last batches).
``today``
    The rebuild without a state (NEWSDEDUP_STATE_DIR=none) the same functions do, up to ``--today-limit``.

The passage-reuse index (NEWSDEDUP_REUSE) is left out: it is rebuilt separately (crawl/reuse_index.py). Seconds are
wall time with CPU time beside (the machine is shared); ``ratio``: against the same step on an empty store.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_persistent import in_child, memory  # noqa: E402
from retention_startup import crawl, nothing_to_fetch  # noqa: E402
from spot_arrays import SpotArrays  # noqa: E402

from newsdedup.clock import utc_iso  # noqa: E402
from newsdedup.crawl.dupefilter import url_key  # noqa: E402
from newsdedup.crawl.indexes import DedupIndexes  # noqa: E402
from newsdedup.dedup.bloom import BoundedBloomFilter  # noqa: E402
from newsdedup.dedup.features import FeatureConfig  # noqa: E402
from newsdedup.dedup.single_pass import NearSettings  # noqa: E402
from newsdedup.dedup.store_state import UrlState  # noqa: E402
from newsdedup.run import retention  # noqa: E402
from newsdedup.storage import open_store  # noqa: E402
from newsdedup.storage.sqlite import ARTICLE_COLUMNS, CLUSTER_COLUMNS, DATED_COLUMNS, SQLiteStore  # noqa: E402

RETENTION_DAYS = 30
CHUNK = 250_000
COPIES = 0.05


class Stats(dict):
    """The crawl's stats collector, as far as the dedup indexes use it."""

    def set_value(self, key, value):
        self[key] = value


def write_rows(path: Path, first: int, count: int, *, now: datetime, days: float = 29.0) -> None:
    """Articles ``first .. first + count - 1`` into the store at ``path``, fetched evenly over ``days`` up to ``now``
    in id order; a near copy joins a story of the last thousand and raises its activity."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    columns = ARTICLE_COLUMNS + DATED_COLUMNS
    article_sql = f"INSERT INTO articles ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    cluster_sql = f"INSERT OR REPLACE INTO clusters ({', '.join(CLUSTER_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)"
    touch_sql = "UPDATE clusters SET members = members + 1, last_fetched_at = ? WHERE cluster_id = ?"
    rng = np.random.default_rng(first)
    generator = SpotArrays()
    last = first + count - 1
    centres = [row[0] for row in conn.execute("SELECT cluster_id FROM clusters ORDER BY cluster_id DESC LIMIT 1000")]
    for start in range(first, last + 1, CHUNK):
        n = min(CHUNK, last + 1 - start)
        spots = generator.chunk(start // CHUNK, n)
        articles, clusters, touches = [], [], []
        for i in range(n):
            article_id = start + i
            fetched = utc_iso(now - timedelta(days=days * (last - article_id) / max(last, 1)))
            url = f"https://news.example.com/{article_id}.html"
            lo, hi = int(spots.offsets[i]), int(spots.offsets[i + 1])
            packed = np.repeat(spots.spots[lo:hi], spots.counts[lo:hi]).tobytes()  # pack_spots's form
            copy = centres and rng.random() < COPIES
            cluster = centres[int(rng.integers(len(centres)))] if copy else article_id
            articles.append((article_id, url, "bench", f"新闻 {article_id}", "正文", None, None, None, url, fetched,
                             article_id.to_bytes(16, "big"), "near_duplicate" if copy else "unique",
                             f"https://news.example.com/{cluster}.html" if copy else None, cluster,
                             0.6 if copy else None, "spotsigs", None, packed, 0.6 if copy else None,
                             "jaccard" if copy else None, url, fetched, "fetched"))
            if copy:
                touches.append((fetched, cluster))
            else:
                clusters.append((article_id, url, fetched, "fetched", 1, fetched, fetched))
                centres = (centres + [article_id])[-1000:]
        with conn:
            conn.executemany(article_sql, articles)
            conn.executemany(cluster_sql, clusters)
            conn.executemany(touch_sql, touches)
        print(f"\r  store: {start + n - 1:,} of {last:,} articles", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    conn.close()


def store_of(root: Path, size: int) -> Path:
    """The store of ``size`` stories (written once, then reused: copies are taken of it)."""
    path = root / f"store-{size}.sqlite"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        SQLiteStore(partial).open()  # the schema, as a crawl creates it
        if size:
            write_rows(partial, 1, size, now=datetime.now(timezone.utc))
        partial.rename(path)
    return path


def indexes(state_dir: Path | None) -> DedupIndexes:
    return DedupIndexes(FeatureConfig(), NearSettings(), exact_error_rate=1e-3, retention_days=RETENTION_DAYS,
                        reuse=False, state_dir=state_dir)


def timed(step) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    figures = step() or {}
    return {"s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3), **figures,
            "rss_mb": round(memory()["rss"] / 2**20, 1)}


def child(kind: str, db: str, state: str) -> dict:
    """One measurement, in this fresh process."""
    uri, state_dir = f"sqlite:///{db}", Path(state)
    since = retention.window_start(RETENTION_DAYS)
    if kind in ("startup", "build"):
        def step():
            store = open_store(uri)
            store.open()
            store.lock_for_run()
            stats = Stats()
            indexes(state_dir).rebuild(store, stats)
            urls, report = UrlState.open(state_dir, store, error_rate=1e-7, retention_days=RETENTION_DAYS,
                                         since=since, key=url_key)
            return {"caught_up_rows": stats["newsdedup/state/caught_up_rows"],
                    "rebuilt": stats["newsdedup/state/rebuilt"], "urls_rebuilt": int(report.rebuilt),
                    "known_centres": stats["newsdedup/near/known_centres"]}
        return timed(step)
    store = open_store(uri)
    store.open()
    if kind == "takeover":
        def step():
            store.refresh()
            stats = Stats()
            indexes(state_dir).rebuild(store, stats)
            return {"caught_up_rows": stats["newsdedup/state/caught_up_rows"],
                    "rebuilt": stats["newsdedup/state/rebuilt"]}
        return timed(step)
    if kind == "today":
        def step():
            stats = Stats()
            indexes(None).rebuild(store, stats)
            urls = [url_key(u) for u in store.iter_fetched_urls(since=since)]
            BoundedBloomFilter.of(urls, expected=max(2 * len(urls), 100_000), error_rate=1e-7)
            return {"known_centres": stats["newsdedup/near/known_centres"]}
        return timed(step)
    raise ValueError(kind)


def measure(root: Path, size: int, *, behind: int, today: bool, site_url: str, rounds: int) -> dict:
    source = store_of(root, size)
    db = root / f"run-{size}.sqlite"
    state = Path(str(db) + ".state")
    os.system(f"rm -rf '{db}' '{state}'")
    os.system(f"cp '{source}' '{db}'")
    result = {"stories": size}
    result["build"] = in_child("--child", "build", str(db), str(state), script=__file__)
    result["startup"] = in_child("--child", "startup", str(db), str(state), script=__file__)
    # A whole `scrapy crawl portal` with nothing to fetch against this store and its state: start-up and shutdown.
    runs = [crawl(db, site_url, str(RETENTION_DAYS)) for _ in range(rounds)]
    result["crawl"] = {"s": round(sorted(r[0] for r in runs)[len(runs) // 2], 2),
                       "cpu_s": round(sorted(r[2] for r in runs)[len(runs) // 2], 2),
                       "peak_mb": round(sorted(r[1] for r in runs)[len(runs) // 2])}
    write_rows(db, size + 1, behind, now=datetime.now(timezone.utc), days=0.01)
    result["takeover"] = in_child("--child", "takeover", str(db), str(state), script=__file__)
    if today:
        result["today"] = in_child("--child", "today", str(db), str(state), script=__file__)
    result["state_mb"] = round(sum(f.stat().st_size for f in state.rglob("*") if f.is_file()) / 2**20, 1)
    os.system(f"rm -rf '{db}' '{state}'")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--behind", type=int, default=1000, help="rows the state has not taken in at the takeover")
    parser.add_argument("--today-limit", type=int, default=100_000, help="largest size today's rebuild runs at")
    parser.add_argument("--root", type=Path, default=Path("/tmp/newsdedup-bench"))
    parser.add_argument("--rounds", type=int, default=3, help="whole crawls a store (median)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    args.root.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    with nothing_to_fetch() as site_url:
        empty = measure(args.root, 0, behind=args.behind, today=True, site_url=site_url, rounds=args.rounds)
        print(json.dumps(empty), flush=True)
        for size in sorted(args.sizes):
            started = time.perf_counter()
            store_of(args.root, size)
            print(f"store of {size:,}: {time.perf_counter() - started:.0f} s (0 when reused)", flush=True)
            result = measure(args.root, size, behind=args.behind, today=size <= args.today_limit,
                             site_url=site_url, rounds=args.rounds)
            for step in ("startup", "crawl", "takeover", "today"):
                if step in result:
                    result[step]["ratio"] = round(result[step]["s"] / max(empty[step]["s"], 1e-3), 1)
            print(json.dumps(result), flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
