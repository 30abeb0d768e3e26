"""Distributed crawl throughput: pages/s of 1 and of 2 crawl processes sharing one Redis and one PostgreSQL.

    python benchmarks/distributed_throughput.py [--pages 600] [--rounds 3] [--data ../shared/data]

The site of crawl_throughput.py (real-size portal pages) served on 127.0.0.1; Redis and PostgreSQL started by
:mod:`tests/servers.py`. Each configuration is a distributed crawl (``NEWSDEDUP_REDIS_URL``) into a new
database and key prefix: ``1 process`` and ``2 processes`` started together, each analysing inline
(``NEWSDEDUP_WORKERS=0``, one core each: a process stands for a machine). pages/s = article pages stored /
the longest process's crawl time (Scrapy's ``elapsed_time_seconds``, until the writer committed the last
page). Rounds interleave the two; the ratio is per round, the median reported. Then the Redis memory each
tracked article costs (:class:`newsdedup.distributed.redis_run.UrlFilter`, ``--urls`` URLs, ``INFO memory`` before and
after).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/servers.py
from crawl_throughput import REPO, finish_one, serve_site, start_one  # noqa: E402

from newsdedup.distributed.redis_run import UrlFilter  # noqa: E402
from servers import PostgresServer, RedisServer  # noqa: E402


def distributed_crawl(processes: int, sites_file: Path, workdir: Path, round_number: int, postgres, redis_url: str,
                      ) -> dict:
    settings = {"NEWSDEDUP_STORAGE_URI": postgres.create_database(f"bench_{uuid.uuid4().hex[:8]}"),
                "NEWSDEDUP_REDIS_URL": redis_url, "NEWSDEDUP_REDIS_PREFIX": f"bench{uuid.uuid4().hex[:8]}",
                "NEWSDEDUP_WORKERS": 0}
    started = [start_one(f"p{processes}", sites_file, workdir, round_number, **settings) for _ in range(processes)]
    stats = [finish_one(*crawl) for crawl in started]
    stored = sum(s.get("newsdedup/store/articles", 0) + s.get("newsdedup/store/repeats", 0) for s in stats)
    seconds = max(s["elapsed_time_seconds"] for s in stats)
    fetched = [s.get("newsdedup/crawl/article_pages", 0) for s in stats]
    # The writer's CPU per applied entry, whichever processes held the role: what bounds the workers one writer serves.
    writer_ms = 1000 * sum(s.get("newsdedup/writer/cpu_seconds", 0) for s in stats) / max(
        1, sum(s.get("newsdedup/writer/applied", 0) for s in stats))
    # CPU per page, all processes together: what distribution costs, whatever else the machine runs.
    cpu_ms = 1000 * sum(s["cpu_seconds"] for s in stats) / max(1, stored)
    print(f"round {round_number}  {processes} process(es): {stored} pages stored in {seconds:6.2f} s = "
          f"{stored / seconds:6.1f} pages/s (fetched by each: {fetched}; CPU {cpu_ms:.1f} ms a page, "
          f"of which the writer {writer_ms:.1f} ms)", flush=True)
    return {"stored": stored, "seconds": round(seconds, 2), "pages_per_s": round(stored / seconds, 1),
            "fetched_by_each": fetched, "cpu_ms_per_page": round(cpu_ms, 1), "writer_cpu_ms_per_page": round(writer_ms, 2)}


def redis_bytes_per_url(redis_server: RedisServer, urls: int) -> float:
    client = redis_server.client()
    before = client.info("memory")["used_memory"]
    filter_ = UrlFilter(client, "memory", retention_days=30)
    for start in range(0, urls, 10_000):
        filter_.add(f"https://news.example.com.cn/c/2026-11-20/doc-{n:012d}.shtml" for n in
                    range(start, min(urls, start + 10_000)))
    return (client.info("memory")["used_memory"] - before) / urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--urls", type=int, default=1_000_000, help="URLs for the Redis memory figure")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args(argv)
    redis_server, postgres = RedisServer(), PostgresServer()
    # One site, as when docs/performance.md's figures were measured: its processes share one site's queue either way.
    workdir, sites_file, server = serve_site(args.pages, args.data, one_site=True)
    runs: dict[int, list[dict]] = {1: [], 2: []}
    try:
        for round_number in range(1, args.rounds + 1):
            for processes in runs:
                runs[processes].append(distributed_crawl(processes, sites_file, workdir, round_number, postgres,
                                                         redis_server.url))
        per_url = redis_bytes_per_url(redis_server, args.urls)
    finally:
        server.terminate()
        postgres.stop()
        redis_server.stop()
    ratios = [two["pages_per_s"] / one["pages_per_s"] for one, two in zip(runs[1], runs[2])]
    writer_ms = statistics.median(r["writer_cpu_ms_per_page"] for r in runs[1] + runs[2])
    cpu_ms = statistics.median(r["cpu_ms_per_page"] for r in runs[1])
    result = {"pages": args.pages,
              "one_process_pages_per_s_median": round(statistics.median(r["pages_per_s"] for r in runs[1]), 1),
              "two_processes_pages_per_s_median": round(statistics.median(r["pages_per_s"] for r in runs[2]), 1),
              "two_vs_one_per_round": [round(r, 2) for r in ratios], "two_vs_one_median": round(statistics.median(ratios), 2),
              "cpu_ms_per_page_one_process": round(cpu_ms, 1), "writer_cpu_ms_per_page": round(writer_ms, 2),
              # Amdahl: the writer is the one serial part, so processes beyond this many wait for it.
              "processes_one_writer_keeps_busy": round(cpu_ms / writer_ms, 1) if writer_ms else None,
              "redis_bytes_per_tracked_url": round(per_url, 1), "runs": runs}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
