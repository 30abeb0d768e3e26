"""The persistent SpotSigs index against today's in-memory one: build, open, memory, decision time, disk.

    nice -n 19 python benchmarks/index_persistent.py --sizes 100000 1000000 --today-limit 100000

Documents are the synthetic spot multisets of ``index_scaling.py`` (:class:`SpotDocuments`: lognormal lengths,
median 81 occurrences, a piecewise Zipf vocabulary, 15% one-off spots, 5% near-copies), keys 0..n-1 as store row
ids, one time each. For each size:

* ``persistent``: :class:`PersistentSpotSigsIndex` built with ``bulk_add`` (straight into segments, as a first
  build from an existing store would), then measured in a fresh process: ``open_s`` (open the folder: manifest,
  memory maps, the small per-document arrays), resident memory a story after the queries (``rss_anon`` is the
  process's own memory, ``rss_file`` the pages of the memory-mapped files it touched; the kernel can drop
  those), ``decision`` (the product's near-duplicate decision: the Jaccard query, then, when it finds nothing,
  the containment search -- half the probes are edited copies of stored documents, half new ones),
  ``decision_warm`` (the same probes again, their pages now in memory), ``add`` (a new centre: the log record
  and the in-memory delta), and bytes on disk.
* ``today``: :class:`SpotSigsIndex` as a crawl start builds it (``build_s`` is the start-up), its RSS a story
  (process RSS growth while building) and the same decisions; at sizes up to ``--today-limit``.

Timings are wall time of one decision at a time: median and p99 (the machine is shared). Synthetic
documents stand in for real ones beyond the 9k real Sina texts: the vocabulary of a real 10M-story window is an
assumption (one-off spots grow linearly here).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_scaling import SpotDocuments  # noqa: E402 - the same generator, so the figures compare

from newsdedup.dedup.single_pass import NearSettings, SpotSigsMatcher  # noqa: E402
from newsdedup.dedup.spotsigs_disk import PersistentSpotSigsIndex  # noqa: E402
from newsdedup.dedup.spotsigs_index import SpotSigsIndex  # noqa: E402

DEFAULTS = NearSettings()
START_TIME = 1_780_000_000


def memory() -> dict[str, int]:
    """Resident memory of this process, bytes: total, anonymous (its own) and file-backed (mapped files)."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssFile"):
                fields[name] = int(value.split()[0]) * 1024
    return {"rss": fields["VmRSS"], "rss_anon": fields["RssAnon"], "rss_file": fields["RssFile"]}


def percentiles(timings: list[float]) -> dict[str, float]:
    timings = sorted(timings)
    return {"p50_ms": round(statistics.median(timings) * 1e3, 3),
            "p99_ms": round(timings[int(0.99 * len(timings))] * 1e3, 3),
            "max_ms": round(timings[-1] * 1e3, 3)}


def decide(index, spots):
    """The near-duplicate decision of SpotSigsMatcher: Jaccard matches, else containment matches."""
    hits = index.query(spots)
    if hits:
        return hits
    return index.contained(spots, min_containment=DEFAULTS.spotsigs_min_containment,
                           min_spots=DEFAULTS.spotsigs_containment_min_spots,
                           min_ratio=SpotSigsMatcher.CONTAINMENT_MIN_RATIO)


def timed_decisions(index, probes) -> dict:
    """Wall time a decision, and CPU time (the machine is shared: CPU time is what load does not inflate)."""
    timings, cpu, matched = [], [], 0
    for probe in probes:
        started, started_cpu = time.perf_counter(), time.process_time()
        matched += bool(decide(index, probe))
        timings.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return {**percentiles(timings), "cpu": percentiles(cpu), "matched": matched}


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def build_persistent(folder: Path, size: int, args) -> dict:
    generator = SpotDocuments()
    generating = 0.0

    def rows():
        nonlocal generating
        for key in range(size):
            made = time.perf_counter()
            doc = generator.doc(key)
            generating += time.perf_counter() - made
            yield key, doc, START_TIME + key

    started = time.perf_counter()
    index = PersistentSpotSigsIndex(folder, tau=DEFAULTS.spotsigs_tau, min_signatures=DEFAULTS.spotsigs_min_signatures,
                                    min_containment=DEFAULTS.spotsigs_min_containment,
                                    max_segment_docs=args.segment_docs)
    indexed = index.bulk_add(rows())
    seconds = time.perf_counter() - started - generating  # the synthetic documents' making is not the index's
    index.close()
    return {"build_s": round(seconds, 1), "indexed": indexed, "segments": len(index.segments),
            "disk_bytes_per_story": round(folder_bytes(folder) / size)}


def measure_persistent(folder: Path, size: int, queries: int) -> dict:
    generator = SpotDocuments()
    probes = [generator.query(j, size) for j in range(queries)]
    new_docs = [generator.fresh(__import__("random").Random(j)) for j in range(200)]
    before = memory()
    started = time.perf_counter()
    index = PersistentSpotSigsIndex(folder, tau=DEFAULTS.spotsigs_tau, min_signatures=DEFAULTS.spotsigs_min_signatures,
                                    min_containment=DEFAULTS.spotsigs_min_containment, store_mark=size - 1,
                                    flush_docs=10_000)
    open_seconds = time.perf_counter() - started
    opened = memory()
    decisions = timed_decisions(index, probes)
    after = memory()
    warm = timed_decisions(index, probes)  # the same probes again: the pages they need are in memory now
    adds = []
    for j, doc in enumerate(new_docs):
        started = time.perf_counter()
        index.add(size + j, doc, time=START_TIME + size + j)
        adds.append(time.perf_counter() - started)
    index.close()
    per_story = {name: round((after[name] - before[name]) / size, 1) for name in after}
    return {"open_s": round(open_seconds, 3), "rss_after_open_per_story": round((opened["rss"] - before["rss"]) / size, 1),
            **{f"{name}_per_story": value for name, value in per_story.items()},
            "decision": decisions, "decision_warm": warm, "add": percentiles(adds)}


def measure_today(size: int, queries: int) -> dict:
    generator = SpotDocuments()
    probes = [generator.query(j, size) for j in range(queries)]
    docs = (generator.doc(key) for key in range(size))
    before = memory()
    started = time.perf_counter()
    index = SpotSigsIndex(tau=DEFAULTS.spotsigs_tau, min_signatures=DEFAULTS.spotsigs_min_signatures)
    generating = 0.0
    for key in range(size):
        made = time.perf_counter()
        doc = next(docs)
        generating += time.perf_counter() - made
        index.add(key, doc)
    build = time.perf_counter() - started - generating
    after = memory()
    return {"build_s": round(build, 1), "rss_per_story": round((after["rss"] - before["rss"]) / size, 1),
            "decision": timed_decisions(index, probes)}


def in_child(*arguments: str, script: str = __file__) -> dict:
    """Run a measurement of ``script`` in a fresh process, so its memory and cold start are its own."""
    output = subprocess.run([sys.executable, script, *arguments], check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--today-limit", type=int, default=100_000, help="largest size today's index is built at")
    parser.add_argument("--segment-docs", type=int, default=250_000, help="max_segment_docs of the build")
    parser.add_argument("--folder", type=Path, default=None, help="where to build (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the built folders")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, size, where = args.child
        result = measure_persistent(Path(where), int(size), args.queries) if kind == "persistent" else \
            measure_today(int(size), args.queries)
        print(json.dumps(result))
        return
    root = args.folder or Path(tempfile.mkdtemp(prefix="near-bench-"))
    print(f"load average before: {os.getloadavg()}", flush=True)
    for size in sorted(args.sizes):
        folder = root / f"near-{size}"
        shutil.rmtree(folder, ignore_errors=True)
        row = {"size": size, "persistent": build_persistent(folder, size, args)}
        row["persistent"].update(in_child("--queries", str(args.queries), "--child", "persistent", str(size), str(folder)))
        if size <= args.today_limit:
            row["today"] = in_child("--queries", str(args.queries), "--child", "today", str(size), "-")
        print(json.dumps(row), flush=True)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if not args.folder and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
