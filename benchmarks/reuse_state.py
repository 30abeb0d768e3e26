"""Opening the saved passage-reuse index against rebuilding it (issue 27): wall time and memory of a crawl's start.

    nice -n 19 python benchmarks/reuse_state.py --real 50000 --synthetic 1000000

``--real N``: a SQLite store of N stories of the retention window, texts cycled from the real Sina texts (built as
benchmarks/retention_startup.py builds its store), then, each in a fresh process: ``StoryReuse.rebuild`` (what
every start did: read and winnow every story) and ``StoryReuse.open`` of the snapshot a checkpoint saved (what a
start does with ``NEWSDEDUP_STATE_DIR``). ``--synthetic N``: a store of N stories (real-size texts, no winnowing)
and a snapshot whose arrays are drawn at random (``--postings`` a story, as a Sina story has; winnowing a million
texts would take 12 minutes), saved ``--behind`` stories before the store's last one, so the open also catches up
that many real texts from the store. Memory: the measuring process's resident memory before and after (anonymous:
its own; file: the mapped segment pages it touched) and its peak (VmHWM), measured before 200 lookups of
stored texts (wall ms, p50 and p99). Everything is built under ``--folder`` (default:
a temporary folder, removed after). Without the shared data (``../shared/data``) it says so and stops.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_persistent import in_child, memory  # noqa: E402
from index_scaling import DEFAULT_DATA  # noqa: E402
from retention_startup import build_store  # noqa: E402

from newsdedup.crawl.reuse_index import StoryReuse  # noqa: E402
from newsdedup.dedup.reuse import ReuseIndex, _Segment, _StoryIds  # noqa: E402
from newsdedup.monitoring.timespec import utc_iso  # noqa: E402
from newsdedup.run import retention  # noqa: E402
from newsdedup.storage.sqlite import ARTICLE_COLUMNS, CLUSTER_COLUMNS, DATED_COLUMNS, SQLiteStore  # noqa: E402

WINDOW_DAYS = 30


def sina_texts(data: Path) -> list[str]:
    with gzip.open(next((data / "sina-news-2018").glob("*.jsonl.gz")), "rt", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines]


def build_plain_store(path: Path, stories: int, data: Path) -> None:
    """N unique stories fetched over the window, texts cycled from the Sina texts (no SpotSigs: not read here)."""
    texts, now = sina_texts(data), datetime.now(timezone.utc)
    SQLiteStore(path).open()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous=OFF")
    columns = ARTICLE_COLUMNS + DATED_COLUMNS
    article_sql = f"INSERT INTO articles ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    cluster_sql = f"INSERT INTO clusters ({', '.join(CLUSTER_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)"
    for start in range(1, stories + 1, 20_000):
        articles, clusters = [], []
        for i in range(start, min(stories, start + 19_999) + 1):
            fetched = utc_iso(now - timedelta(days=(stories - i) / stories * (WINDOW_DAYS - 1)))
            url = f"https://news.example.com/{i}.html"
            values = dict.fromkeys(columns)
            values.update(id=i, url=url, site="sina", title=f"新闻 {i}", text=texts[i % len(texts)], canonical_url=url,
                          fetched_at=fetched, fingerprint=i.to_bytes(16, "big"), status="unique", cluster_id=i,
                          method="spotsigs", dated_at=fetched, date_basis="fetched")
            articles.append(tuple(values[c] for c in columns))
            clusters.append((i, url, fetched, "fetched", 1, fetched, fetched))
        with conn:
            conn.executemany(article_sql, articles)
            conn.executemany(cluster_sql, clusters)
        print(f"\r  built {min(stories, start + 19_999):,} of {stories:,} stories", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    conn.close()


def build_synthetic_snapshot(folder: Path, ids: np.ndarray, when: np.ndarray, postings: int, *, mark: int,
                             since: str, chunk: int = 100_000) -> None:
    """The snapshot of ``ids`` with random fingerprints, ``postings`` a story, one segment a ``chunk`` stories:
    the arrays a million winnowings would make, filled in directly (the index's private fields, benchmark only)."""
    n, rng = len(ids), np.random.default_rng(27)
    index = ReuseIndex(text_of=lambda story_id: "")
    index._ids = _StoryIds(ids)
    index._alive, index._when, index._counts = np.ones(n, bool), when, np.full(n, postings, np.int64)
    for start in range(0, n, chunk):
        seqs = np.repeat(np.arange(start, min(n, start + chunk), dtype=np.uint32), postings)
        keys = rng.integers(0, 2**64 - 1, size=len(seqs), dtype=np.uint64, endpoint=True)
        order = np.argsort(keys, kind="stable")
        positions = rng.integers(0, 2_000, size=len(seqs), dtype=np.uint32)
        index._segments.append(_Segment(keys[order], seqs[order], positions[order]))
        index._postings += len(seqs)
        del keys, order, positions, seqs
        index.save(folder, extra={"mark": mark, "since": since})  # writes the new segment, then maps it
        print(f"\r  snapshot {min(n, start + chunk):,} of {n:,} stories", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def measure(kind: str, db: Path, folder: Path) -> dict:
    """In a fresh process: rebuild or open the window's index; seconds and memory."""
    since = retention.window_start(WINDOW_DAYS)
    store = SQLiteStore(db)
    store.open()
    before = memory()
    started = time.perf_counter()
    reuse = StoryReuse.rebuild(store, since=since) if kind == "rebuild" else StoryReuse.open(store, folder, since=since)
    seconds = time.perf_counter() - started
    after = memory()
    # Lookups of stored texts, as a crawl's pages (a reprint's own story left out): the mapped segments at work.
    texts = [store.article_text(int(story_id)) for story_id in reuse.index.live_ids()[::max(1, len(reuse.index) // 200)]]
    timings = []
    for text in texts:
        begun = time.perf_counter()
        reuse.find(text, story=None)
        timings.append(1000 * (time.perf_counter() - begun))
    return {"kind": kind, "seconds": round(seconds, 2), "stories": len(reuse.index), "postings": reuse.index.postings,
            "rss_mb_before": round(before["rss"] / 2**20),
            "anon_mb_added": round((after["rss_anon"] - before["rss_anon"]) / 2**20, 1),
            "file_mb_added": round((after["rss_file"] - before["rss_file"]) / 2**20, 1),
            "anon_mb_after_finds": round((memory()["rss_anon"] - before["rss_anon"]) / 2**20, 1),
            "file_mb_after_finds": round((memory()["rss_file"] - before["rss_file"]) / 2**20, 1),
            "find_ms_p50": round(float(np.percentile(timings, 50)), 1),
            "find_ms_p99": round(float(np.percentile(timings, 99)), 1), "peak_rss_mb": round(peak_rss() / 2**20)}


def peak_rss() -> int:
    """This process's peak resident memory, bytes (VmHWM: since its exec, where ru_maxrss keeps the forking parent's)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


def real(root: Path, stories: int, data: Path) -> list[dict]:
    db, folder = root / f"real-{stories}.sqlite", root / f"real-{stories}.state"
    if not db.exists():
        build_store(db, articles=stories, recent=stories, data=data)
    rows = [in_child("--child", "rebuild", str(db), str(folder), script=__file__)]
    store = SQLiteStore(db)
    store.open()
    reuse = StoryReuse.rebuild(store, since=retention.window_start(WINDOW_DAYS), folder=folder)
    started = time.perf_counter()
    reuse.checkpoint()
    saved = {"checkpoint_seconds": round(time.perf_counter() - started, 2),
             "disk_mb": round(sum(p.stat().st_size for p in folder.iterdir()) / 2**20, 1)}
    store.close()
    del reuse
    rows.append({**in_child("--child", "open", str(db), str(folder), script=__file__), **saved})
    return rows


def synthetic(root: Path, stories: int, postings: int, behind: int, data: Path) -> list[dict]:
    db, folder = root / f"synthetic-{stories}.sqlite", root / f"synthetic-{stories}.state"
    if not db.exists():
        build_plain_store(db, stories, data)
    shutil.rmtree(folder, ignore_errors=True)
    conn = sqlite3.connect(db)
    saved = conn.execute("SELECT id, fetched_at FROM articles WHERE id <= ? ORDER BY id", (stories - behind,)).fetchall()
    conn.close()
    ids = np.array([row[0] for row in saved], np.int64)
    when = np.array([datetime.fromisoformat(row[1]).timestamp() for row in saved])
    del saved
    started = time.perf_counter()
    build_synthetic_snapshot(folder, ids, when, postings, mark=stories - behind,
                             since=retention.window_start(WINDOW_DAYS))
    built = {"build_seconds": round(time.perf_counter() - started),
             "disk_mb": round(sum(p.stat().st_size for p in folder.iterdir()) / 2**20), "caught_up": behind}
    return [{**in_child("--child", "open", str(db), str(folder), script=__file__), **built}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=int, default=50_000, help="stories of the real-text store (0: skip)")
    parser.add_argument("--synthetic", type=int, default=1_000_000, help="stories of the synthetic one (0: skip)")
    parser.add_argument("--postings", type=int, default=160, help="fingerprints a synthetic story")
    parser.add_argument("--behind", type=int, default=1_000, help="stories the synthetic snapshot lacks (caught up)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--folder", type=Path, default=None, help="where to build (kept); default: a temporary folder")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, db, folder = args.child
        print(json.dumps(measure(kind, Path(db), Path(folder))))
        return
    if not (args.data / "sina-news-2018").is_dir():
        raise SystemExit(f"no Sina texts under {args.data} (the shared data): nothing to measure")
    root = args.folder or Path(tempfile.mkdtemp(prefix="reuse-state-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    try:
        if args.real:
            for row in real(root, args.real, args.data):
                print(json.dumps({"store": f"real {args.real:,}", **row}), flush=True)
        if args.synthetic:
            for row in synthetic(root, args.synthetic, args.postings, args.behind, args.data):
                print(json.dumps({"store": f"synthetic {args.synthetic:,}", **row}), flush=True)
    finally:
        if args.folder is None:
            shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
