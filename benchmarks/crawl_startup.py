"""Crawl start-up and a distributed writer's takeover with the persisted dedup state (NEWSDEDUP_STATE_DIR), against
a SQLite store of N stories in the retention window, beside an empty store and today's rebuild, in the same run.

    nice -n 19 python benchmarks/crawl_startup.py --sizes 100000 1000000 --root /tmp/startup1m

For each size: a store written the way the crawl writes it (``ROOT/store-N-TEXTS.sqlite``, kept and reused; default
ROOT ``/tmp/newsdedup-bench``): N articles fetched over the last 29 days, 5% of them near copies of a recent story
(which raises that story's last activity), texts cycled from the real Sina texts of the shared data (``--data``;
without it, random Chinese characters of the Sina texts' mean length, said so), SpotSigs multisets of
:class:`spot_arrays.SpotArrays` (the distribution of benchmarks/index_scaling.py, drawn in numpy). Then, each in a
fresh process (its own memory, a cold start):

``build``
    The state's first build from the store (a store's first crawl with a state folder, or a damaged state): the
    exact filter, the SpotSigs index and the URL filter. Then the passage-reuse snapshot (``STATE/reuse``): up to
    ``--reuse-real-limit`` stories built for real (every centre's text winnowed, ``reuse_build``); above, drawn at
    random as benchmarks/reuse_state.py draws it (``--postings`` fingerprints a story; winnowing a million texts
    takes minutes), saved at the same mark as the rest of the state.
``startup``
    After ``--behind`` more rows were committed (every part of the state is that far behind the store): what a
    crawl start does (:meth:`CrawlState.open`): open the store, :meth:`DedupIndexes.rebuild` with the state folder
    and the passage-reuse index on (the default: the exact filter, the SpotSigs index and the reuse snapshot opened
    and caught up with the real texts) and the URL filter's :meth:`UrlState.open` (as
    ``SeenArticlesDupeFilter.open``). ``state_s``: the exact filter and SpotSigs index's part, ``reuse_s``: the
    rest of the rebuild (the reuse snapshot's open, expiry and catch-up), ``urls_s``: the URL filter's.
``crawl``
    A whole ``scrapy crawl portal`` process with nothing to fetch (``retention_startup.nothing_to_fetch``) against the
    store and its state: start-up and shutdown as a user sees them, median of ``--rounds``.
``takeover``
    A writer's takeover (``RunMember._try_to_become_writer``): ``store.refresh()`` and :meth:`DedupIndexes.rebuild`,
    after ``--behind`` rows were committed that the state had not taken in (the dead writer's last batches).
``today``
    The rebuild without a state (NEWSDEDUP_STATE_DIR=none) the same functions do, reuse index included (every
    centre's text winnowed), up to ``--today-limit``.

Seconds are wall time with CPU time beside (the machine is shared); ``ratio``: against the same step on an empty
store (whose state is caught up by the same ``--behind`` rows).
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

from index_scaling import DEFAULT_DATA  # noqa: E402
from reuse_state import build_synthetic_snapshot, peak_rss, sina_texts  # noqa: E402

from newsdedup.clock import utc_iso  # noqa: E402
from newsdedup.crawl.dupefilter import url_key  # noqa: E402
from newsdedup.crawl.indexes import DedupIndexes  # noqa: E402
from newsdedup.crawl.reuse_index import StoryReuse  # noqa: E402
from newsdedup.dedup.bloom import BoundedBloomFilter  # noqa: E402
from newsdedup.dedup.features import FeatureConfig  # noqa: E402
from newsdedup.dedup.single_pass import NearSettings  # noqa: E402
from newsdedup.dedupstore.state import UrlState  # noqa: E402
from newsdedup.run import retention  # noqa: E402
from newsdedup.storage import open_store  # noqa: E402
from newsdedup.storage.sqlite import ARTICLE_COLUMNS, CLUSTER_COLUMNS, DATED_COLUMNS, SQLiteStore  # noqa: E402

RETENTION_DAYS = 30
CHUNK = 250_000
COPIES = 0.05
SYNTHETIC_TEXT_CHARS = 1386  # the Sina texts' mean length


def story_texts(data: Path) -> tuple[str, list[str]]:
    """The texts the stores cycle through, and their kind: the real Sina texts when the shared data is there, else
    random Chinese characters of their mean length (the winnowing and reading costs of real-size texts)."""
    if (data / "sina-news-2018").is_dir():
        return "sina", sina_texts(data)
    print(f"no Sina texts under {data} (the shared data): synthetic texts of {SYNTHETIC_TEXT_CHARS} random Chinese "
          "characters instead", flush=True)
    rng = np.random.default_rng(27)
    codes = rng.integers(0x4E00, 0x9FA6, size=(2000, SYNTHETIC_TEXT_CHARS))
    return "synthetic", ["".join(map(chr, row)) for row in codes.tolist()]


class Stats(dict):
    """The crawl's stats collector, as far as the dedup indexes use it."""

    def set_value(self, key, value):
        self[key] = value


def write_rows(path: Path, first: int, count: int, texts: list[str], *, now: datetime, days: float = 29.0) -> None:
    """Articles ``first .. first + count - 1`` into the store at ``path``, fetched evenly over ``days`` up to ``now``
    in id order, ``texts`` cycled; a near copy joins a story of the last thousand and raises its activity."""
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
            articles.append((article_id, url, "bench", f"新闻 {article_id}", texts[article_id % len(texts)], None, None, None, url, fetched,
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


def store_of(root: Path, size: int, texts: tuple[str, list[str]]) -> Path:
    """The store of ``size`` stories (written once, then reused: copies are taken of it)."""
    kind, lines = texts
    path = root / f"store-{size}-{kind}.sqlite"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        SQLiteStore(partial).open()  # the schema, as a crawl creates it
        if size:
            write_rows(partial, 1, size, lines, now=datetime.now(timezone.utc))
        partial.rename(path)
    return path


def indexes(state_dir: Path | None, *, reuse: bool) -> DedupIndexes:
    return DedupIndexes(FeatureConfig(), NearSettings(), exact_error_rate=1e-3, retention_days=RETENTION_DAYS,
                        reuse=reuse, state_dir=state_dir)


def reuse_snapshot(db: Path, folder: Path, *, real_limit: int, postings: int) -> dict:
    """The passage-reuse snapshot of the store's centres in the window, at the store's last article (the mark the
    rest of the state was built at): built for real up to ``real_limit`` centres, else drawn at random."""
    since = retention.window_start(RETENTION_DAYS)
    store = open_store(f"sqlite:///{db}")
    store.open()
    started = time.perf_counter()
    centres = np.fromiter(store.iter_centre_ids(since=since), np.int64)
    if len(centres) <= real_limit:
        StoryReuse.rebuild(store, since=since, folder=folder).checkpoint()
        kind = "built"
    else:
        # The centre's fetch time, as the index keeps it (the clusters table's first fetch: no article text read).
        conn = sqlite3.connect(db)
        first = dict(conn.execute("SELECT cluster_id, first_fetched_at FROM clusters WHERE last_fetched_at >= ?",
                                  (since,)))
        conn.close()
        centres.sort()
        when = np.array([datetime.fromisoformat(first[int(c)]).timestamp() for c in centres])
        del first
        build_synthetic_snapshot(folder, centres, when, postings, mark=store.last_article_id(), since=since)
        kind = "drawn"
    store.close()
    return {"kind": kind, "stories": len(centres), "s": round(time.perf_counter() - started, 1),
            "disk_mb": round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20)}


def timed(step) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    figures = step() or {}
    return {"s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3), **figures,
            "rss_mb": round(memory()["rss"] / 2**20, 1), "peak_mb": round(peak_rss() / 2**20)}


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
            started = time.perf_counter()
            # The build step leaves the reuse snapshot to reuse_snapshot (drawn at the big sizes).
            dedup = indexes(state_dir, reuse=kind == "startup")
            dedup.rebuild(store, stats)
            rebuilt = time.perf_counter()
            urls, report = UrlState.open(state_dir, store, error_rate=1e-7, retention_days=RETENTION_DAYS,
                                         since=since, key=url_key)
            state_s = stats["newsdedup/state/opened_s"]
            return {"caught_up_rows": stats["newsdedup/state/caught_up_rows"],
                    "rebuilt": stats["newsdedup/state/rebuilt"], "urls_rebuilt": int(report.rebuilt),
                    "known_centres": stats["newsdedup/near/known_centres"], "state_s": state_s,
                    "reuse_s": round(rebuilt - started - state_s, 3),
                    "urls_s": round(time.perf_counter() - rebuilt, 3),
                    "reuse_stories": len(dedup.reuse.index) if dedup.reuse is not None else None}
        return timed(step)
    store = open_store(uri)
    store.open()
    if kind == "takeover":
        def step():
            store.refresh()
            stats = Stats()
            dedup = indexes(state_dir, reuse=True)
            dedup.rebuild(store, stats)
            return {"caught_up_rows": stats["newsdedup/state/caught_up_rows"],
                    "rebuilt": stats["newsdedup/state/rebuilt"], "reuse_stories": len(dedup.reuse.index)}
        return timed(step)
    if kind == "today":
        def step():
            stats = Stats()
            indexes(None, reuse=True).rebuild(store, stats)
            urls = [url_key(u) for u in store.iter_fetched_urls(since=since)]
            BoundedBloomFilter.of(urls, expected=max(2 * len(urls), 100_000), error_rate=1e-7)
            return {"known_centres": stats["newsdedup/near/known_centres"]}
        return timed(step)
    raise ValueError(kind)


def measure(root: Path, size: int, texts: tuple[str, list[str]], *, behind: int, today: bool, site_url: str,
            rounds: int, reuse_real_limit: int, postings: int, move_store: bool) -> dict:
    source = store_of(root, size, texts)
    db = root / f"run-{size}.sqlite"
    state = Path(str(db) + ".state")
    os.system(f"rm -rf '{db}' '{state}'")
    os.system(f"{'mv' if move_store else 'cp'} '{source}' '{db}'")
    result = {"stories": size, "texts": texts[0]}
    result["build"] = in_child("--child", "build", str(db), str(state), script=__file__)
    # In a child too, so that this process stays small (see main).
    result["reuse_build"] = in_child("--child", "reuse", str(db), str(state), "--reuse-real-limit",
                                     str(reuse_real_limit), "--postings", str(postings), script=__file__)
    # The dead crawl's last batches: every part of the state (reuse snapshot included) catches them up at the start.
    write_rows(db, size + 1, behind, texts[1], now=datetime.now(timezone.utc), days=0.01)
    result["startup"] = in_child("--child", "startup", str(db), str(state), script=__file__)
    # A whole `scrapy crawl portal` with nothing to fetch against this store and its state: start-up and shutdown.
    runs = [crawl(db, site_url, str(RETENTION_DAYS)) for _ in range(rounds)]
    result["crawl"] = {"s": round(sorted(r[0] for r in runs)[len(runs) // 2], 2),
                       "cpu_s": round(sorted(r[2] for r in runs)[len(runs) // 2], 2),
                       "peak_mb": round(sorted(r[1] for r in runs)[len(runs) // 2])}
    write_rows(db, size + behind + 1, behind, texts[1], now=datetime.now(timezone.utc), days=0.01)
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
    parser.add_argument("--reuse-real-limit", type=int, default=100_000,
                        help="most stories the reuse snapshot is built for real at (above: drawn at random)")
    parser.add_argument("--postings", type=int, default=160, help="fingerprints a drawn reuse snapshot's story")
    parser.add_argument("--move-stores", action="store_true",
                        help="measure the kept stores themselves, deleted after (disk: a 1,000,000 store is 6 GB)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data (the Sina texts)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, db, state = args.child
        if kind == "store":  # db: the root folder, state: the size
            store_of(Path(db), int(state), story_texts(args.data))
            figures = {}
        elif kind == "reuse":
            figures = reuse_snapshot(Path(db), Path(state) / "reuse", real_limit=args.reuse_real_limit,
                                     postings=args.postings)
        else:
            figures = child(kind, db, state)
        print(json.dumps(figures))
        return
    args.root.mkdir(parents=True, exist_ok=True)
    texts = story_texts(args.data)
    print(f"load average before: {os.getloadavg()}", flush=True)
    options = {"behind": args.behind, "rounds": args.rounds, "reuse_real_limit": args.reuse_real_limit,
               "postings": args.postings, "move_store": False}
    with nothing_to_fetch() as site_url:
        empty = measure(args.root, 0, texts, today=True, site_url=site_url, **options)
        print(json.dumps(empty), flush=True)
        for size in sorted(args.sizes):
            started = time.perf_counter()
            # Written by a child: a crawl's peak memory (wait4's ru_maxrss) starts from this process's resident
            # memory at the fork, which writing a million rows here raised to 2.7 GB.
            in_child("--child", "store", str(args.root), str(size), "--data", str(args.data), script=__file__)
            print(f"store of {size:,}: {time.perf_counter() - started:.0f} s (0 when reused)", flush=True)
            result = measure(args.root, size, texts, today=size <= args.today_limit, site_url=site_url,
                             **{**options, "move_store": args.move_stores})
            for step in ("startup", "crawl", "takeover", "today"):
                if step in result:
                    result[step]["ratio"] = round(result[step]["s"] / max(empty[step]["s"], 1e-3), 1)
            print(json.dumps(result), flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
