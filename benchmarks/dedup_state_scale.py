"""The persisted dedup state at 100,000, 1,000,000 and 10,000,000 stories: build once, then measure start-up,
memory a story, decision p50/p99, the indexed search's recall against brute force, bytes on disk, and today's
rebuild-from-store at the sizes it reaches, in the same run.

    nice -n 19 python benchmarks/dedup_state_scale.py build --sizes 100000 1000000 10000000
    nice -n 19 python benchmarks/dedup_state_scale.py measure --sizes 100000 1000000 10000000 --today-limit 100000

``build`` writes ``ROOT/stories-N/`` (default ROOT ``/work/bench-data``, outside the repository; a finished
folder is kept and reused): ``near/`` (:class:`PersistentSpotSigsIndex`, documents of
:class:`spot_arrays.SpotArrays`, bulk-loaded a million at a time as a first build from an existing store
would be), ``exact.bloom`` and ``urls.bloom`` (:class:`PersistedBloomFilter` of one content digest and one
URL a story), ``probes.json`` (the queries: half edited copies of stored documents, half new ones, drawn
before any measurement so no measuring process has read a stored document first) and ``build.json`` (build
seconds, the synthetic generation's time excluded).

``measure`` runs each size in a fresh process: ``open_s`` (opening all three with the store mark, as a crawl
start or a writer's takeover would), its resident memory a story (``rss_anon``: the process's own memory;
``rss_file``: pages of the memory-mapped files the queries touched, page cache the kernel may drop), the
product's decision (Jaccard query, then the containment search when it finds nothing) per probe, a cold first
pass and a warm second pass, CPU time beside wall time (the machine is shared), and ``recall``: for a sample
of probes a brute-force scan of every stored multiset at the same thresholds, against the index's hits (each
hit verified exactly by the scan). ``today``: :class:`SpotSigsIndex` and :class:`BoundedBloomFilter` rebuilt
from the same documents as a crawl start rebuilds them from the store today, up to ``--today-limit``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_scaling import SpotDocuments  # noqa: E402
from spot_arrays import SpotArrays  # noqa: E402

from newsdedup.dedup.single_pass import NearSettings, SpotSigsMatcher  # noqa: E402
from newsdedup.dedup.spotsigs_disk import PersistentSpotSigsIndex  # noqa: E402

DEFAULTS = NearSettings()
START_TIME = 1_780_000_000
CHUNK = 1_000_000
WINDOW_DAYS, DAY = 30, 86_400


def open_near(folder: Path, store_mark: int | None = None) -> PersistentSpotSigsIndex:
    return PersistentSpotSigsIndex(folder, tau=DEFAULTS.spotsigs_tau, min_signatures=DEFAULTS.spotsigs_min_signatures,
                                   min_containment=DEFAULTS.spotsigs_min_containment, max_segment_docs=CHUNK,
                                   flush_docs=10_000, store_mark=store_mark)


def build(root: Path, size: int, queries: int) -> None:
    """Each part once: a part whose result file exists is reused (a 10M near index takes most of an hour)."""
    folder = root / f"stories-{size}"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "near.json").exists():
        (folder / "near.json").write_text(json.dumps(build_near(folder, size)))
    if not (folder / "filters.json").exists():
        (folder / "filters.json").write_text(json.dumps(build_filters(folder, size)))
    if not (folder / "probes.json").exists():
        (folder / "probes.json").write_text(json.dumps(make_probes(folder, size, queries)))


def build_near(folder: Path, size: int) -> dict:
    import shutil
    shutil.rmtree(folder / "near", ignore_errors=True)  # an interrupted build starts over
    generator = SpotArrays()
    index = open_near(folder / "near")
    generating = indexing = 0.0
    for c in range(0, (size + CHUNK - 1) // CHUNK):
        n = min(CHUNK, size - c * CHUNK)
        started = time.perf_counter()
        chunk = generator.chunk(c, n)
        generating += time.perf_counter() - started
        started = time.perf_counter()
        keys = np.arange(c * CHUNK, c * CHUNK + n, dtype=np.int64)
        index.bulk_add_arrays(keys, (START_TIME + keys).astype(np.uint32), chunk.offsets, chunk.spots, chunk.counts)
        indexing += time.perf_counter() - started
        print(f"{size}: chunk {c} built, generating {generating:.0f} s, indexing {indexing:.0f} s", flush=True)
        del chunk
    stats = index.stats()
    index.close()
    return {"build_s": round(indexing, 1), "generating_s": round(generating, 1), "segments": stats["segments"],
            "documents": stats["documents"], "bytes_on_disk": stats["bytes_on_disk"]}


def build_filters(folder: Path, size: int) -> dict:
    """The exact filter (a content digest a story) and the URL filter (one URL a story), persisted: a 30-day
    window of ``size`` stories, a generation a day."""
    from newsdedup.dedup.bloom_disk import PersistedBloomFilter
    per_day = (size + WINDOW_DAYS - 1) // WINDOW_DAYS
    result = {}
    for name, key in (("exact", exact_key), ("urls", url_key)):
        started = time.perf_counter()
        bloom = PersistedBloomFilter.create(folder / name, capacity=per_day, error_rate=1e-3,
                                            generations=WINDOW_DAYS + 1)
        for day, first in enumerate(range(0, size, per_day)):
            bloom.add_many((key(i) for i in range(first, min(size, first + per_day))), time=START_TIME + day * DAY,
                           source="articles", first_row=first)
        bloom.save()
        result[f"{name}_build_s"] = round(time.perf_counter() - started, 1)
        result[f"{name}_bytes"] = bloom.size_bytes
    return result


def exact_key(i: int) -> str:
    return f"{i * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF:016x}"  # stands for the story's content digest


def url_key(i: int) -> str:
    return f"https://news.example.com/{i // 10_000}/{i}.html"


def make_probes(folder: Path, size: int, queries: int) -> list[dict[str, int]]:
    """Half edited copies of stored documents (read from the built index), half new documents."""
    index = open_near(folder / "near")
    reference = SpotDocuments()
    probes = []
    for j in range(queries):
        rng = random.Random(7919 + j)
        if j % 2 == 0:
            from collections import Counter
            stored = index.signatures(rng.randrange(size))
            probes.append(dict(reference.edit(Counter(stored), rng)) if stored else dict(reference.fresh(rng)))
        else:
            probes.append(dict(reference.fresh(rng)))
    index.close()
    return [{str(spot): count for spot, count in probe.items()} for probe in probes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["build", "measure"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--root", type=Path, default=Path("/work/bench-data"))
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    if args.what == "build":
        for size in sorted(args.sizes):
            build(args.root, size, args.queries)


if __name__ == "__main__":
    main()
