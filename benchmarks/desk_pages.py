"""The monitoring desk's pages on a large store: latency of Now, Story and Search against a trivial page, the
process's peak memory, and the query plans.

    python benchmarks/desk_pages.py --articles 1000000 --recent 50000 --requests 40

Builds (once) the store of benchmarks/retention_startup.py (``--articles`` articles over 400 days, the last
``--recent`` fetched in the past 30 days, 5% near copies; Sina texts from the shared data), with the search index
the schema writes. Then, in this process, the desk over it read-only (Starlette's test client: the app's whole
request path without a network) answers rounds of requests, interleaved: ``/api/runs/latest`` (the baseline), the
Now page (24 h), a Story page (a random story with a copy), and searches for words of three and of two characters
drawn from the texts. Prints p50 / p95 per page, the peak resident memory, and the plans of the queries.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_scaling import DEFAULT_DATA  # noqa: E402
from retention_startup import build_store  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from newsdedup.serve.app import create_app  # noqa: E402
from newsdedup.serve.store import open_readonly  # noqa: E402


def words(store, rng: random.Random, length: int, count: int) -> list[str]:
    """``count`` substrings of ``length`` CJK characters taken from stored texts."""
    found = []
    top = store.last_article_id()
    while len(found) < count:
        text = store.article_text(rng.randint(1, top)) or ""
        start = rng.randrange(max(1, len(text) - length))
        word = text[start:start + length]
        if len(word) == length and all("\u4e00" <= c <= "\u9fff" for c in word):
            found.append(word)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=1_000_000)
    parser.add_argument("--recent", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=40, help="requests of each page")
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    args.db = args.db or Path(tempfile.gettempdir()) / f"newsdedup-desk-{args.articles}-{args.recent}.sqlite"
    if not args.db.exists():
        print(f"building {args.db} ...", file=sys.stderr)
        started = time.perf_counter()
        build_store(args.db, articles=args.articles, recent=args.recent, data=args.data)
        print(f"built in {time.perf_counter() - started:.0f} s, {args.db.stat().st_size / 1e6:.0f} MB", file=sys.stderr)
    store = open_readonly(f"sqlite:///{args.db}")
    rng = random.Random(1)
    stories = [row[0] for row in store.conn.execute("SELECT cluster_id FROM clusters WHERE members > 1 LIMIT 5000")]
    pages = {
        "baseline /api/runs/latest": lambda: "/api/runs/latest",
        "Now (24 h)": lambda: "/",
        "Story": lambda: f"/story/{rng.choice(stories)}",
        "Search, 3-character word": iter(f"/search?q={w}" for w in words(store, rng, 3, args.requests)).__next__,
        "Search, 2-character word": iter(f"/search?q={w}" for w in words(store, rng, 2, args.requests)).__next__,
    }
    times: dict[str, list[float]] = {name: [] for name in pages}
    with TestClient(create_app(store)) as client:
        for _ in range(args.requests):
            for name, path in pages.items():
                url = path()
                started = time.perf_counter()
                response = client.get(url)
                times[name].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, (url, response.status_code)
    print(f"| page ({args.articles:,} articles, {args.requests} requests each) | p50 ms | p95 ms |")
    print("| --- | --- | --- |")
    for name, values in times.items():
        values.sort()
        print(f"| {name} | {statistics.median(values):.1f} | {values[int(0.95 * (len(values) - 1))]:.1f} |")
    print(f"peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print("query plans (SQLite):")
    for label, word in (("search, 3 characters", words(store, rng, 3, 1)[0]),
                        ("search, 2 characters", words(store, rng, 2, 1)[0])):
        condition, params = store._match_condition((word,))  # the statement search_articles runs
        sql = f"SELECT a.id FROM articles a WHERE {condition} ORDER BY a.id DESC LIMIT 2000"
        plan = [row[-1] for row in store.conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
        print(f"  {label} ({word}): {'; '.join(plan)}")
    plan = [row[-1] for row in store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT c.cluster_id FROM clusters c WHERE c.members >= 2 AND c.last_fetched_at >= ? "
        "ORDER BY c.members DESC, c.origin_dated_at DESC, c.cluster_id", ("2026-01-01",))]
    print(f"  Now's stories: {'; '.join(plan)}")
    sizes = dict(store.conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
    print(f"store {args.db.stat().st_size / 1e6:.0f} MB, of which the search index "
          f"{sum(v for k, v in sizes.items() if k.startswith('articles_fts')) / 1e6:.0f} MB and the articles "
          f"{sizes.get('articles', 0) / 1e6:.0f} MB")
    store.close()


if __name__ == "__main__":
    main()
