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

Builds and measurements use the crawl's segment size and probe budget (``NEAR_SEGMENT_DOCS``,
``NEAR_PROBE_BUDGET``) unless ``--segment-docs`` / ``--probe-budget`` say otherwise (``--probe-budget 0``: the
lossless search). ``crawl-tail`` writes ``ROOT/stories-N-crawl/``: the store as a crawl's writer leaves it (the
last million fed in the writer's flushes, each followed by its checkpoint's merges), measured with
``measure --crawl-tail``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import shutil
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_scaling import SpotDocuments  # noqa: E402
from index_persistent import folder_bytes, in_child, memory, percentiles, timed_decisions  # noqa: E402
from spot_arrays import SpotArrays, SpotChunk  # noqa: E402

from newsdedup.dedup.durable import read_manifest, write_manifest  # noqa: E402
from newsdedup.dedup.single_pass import NearSettings, SpotSigsMatcher  # noqa: E402
from newsdedup.dedup.spotsigs_disk import PersistentSpotSigsIndex  # noqa: E402
from newsdedup.dedupstore.state import NEAR_PROBE_BUDGET, NEAR_SEGMENT_DOCS  # noqa: E402

DEFAULTS = NearSettings()
START_TIME = 1_780_000_000
CHUNK = 1_000_000
WINDOW_DAYS, DAY = 30, 86_400
QUARTER = CHUNK // 4


PROBE_BUDGET = NEAR_PROBE_BUDGET  # --probe-budget: PersistentSpotSigsIndex's probe_budget in the measurements
SEGMENT_DOCS = NEAR_SEGMENT_DOCS  # --segment-docs: the largest segment a build writes


def open_near(folder: Path, store_mark: int | None = None) -> PersistentSpotSigsIndex:
    return PersistentSpotSigsIndex(folder, tau=DEFAULTS.spotsigs_tau, min_signatures=DEFAULTS.spotsigs_min_signatures,
                                   min_containment=DEFAULTS.spotsigs_min_containment, max_segment_docs=SEGMENT_DOCS,
                                   flush_docs=10_000, store_mark=store_mark, probe_budget=PROBE_BUDGET)


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


def generate(c: int, n: int, root: Path) -> Path:
    """Documents ``c * CHUNK ..`` of the build, made a quarter million at a time (bounded memory), saved in
    ``root/chunks/`` so a build that has to start over reuses them."""
    path = root / "chunks" / f"{c}-{n}.npz"
    if path.exists():
        return path
    generator, parts = SpotArrays(), []
    for part in range(0, n, QUARTER):
        parts.append(generator.chunk(c * 4 + part // QUARTER, min(QUARTER, n - part)))
    offsets = [np.zeros(1, np.int64)] + [part.offsets[1:] + sum(len(p.spots) for p in parts[:k])
                                         for k, part in enumerate(parts)]
    path.parent.mkdir(exist_ok=True)
    temporary = path.with_name(path.name + ".tmp.npz")
    np.savez(temporary, offsets=np.concatenate(offsets), spots=np.concatenate([p.spots for p in parts]),
             counts=np.concatenate([p.counts for p in parts]))
    os.replace(temporary, path)
    return path


def build_near(folder: Path, size: int) -> dict:
    """The index, a segment a million stories; two other processes make the next millions meanwhile."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    index = open_near(folder / "near")  # an interrupted build goes on after its last whole segment
    chunks = [(c, min(CHUNK, size - c * CHUNK)) for c in range((size + CHUNK - 1) // CHUNK)
              if c * CHUNK > index.high_water_mark]
    indexing, started_all, build_peak = 0.0, time.perf_counter(), 0
    tracemalloc.start()  # numpy's buffers are traced: the writer's own peak, beside the chunk it was given
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending = [pool.submit(generate, c, n, folder.parent) for c, n in chunks]
        for (c, n), made in zip(chunks, pending):
            with np.load(made.result()) as arrays:
                offsets, spots, counts = arrays["offsets"], arrays["spots"], arrays["counts"]
            started = time.perf_counter()
            keys = np.arange(c * CHUNK, c * CHUNK + n, dtype=np.int64)
            given = (START_TIME + keys).astype(np.uint32)
            tracemalloc.reset_peak()
            held = tracemalloc.get_traced_memory()[0]
            index.bulk_add_arrays(keys, given, offsets, spots, counts)
            build_peak = max(build_peak, tracemalloc.get_traced_memory()[1] - held)
            indexing += time.perf_counter() - started
            del offsets, spots, counts
            print(f"{size}: chunk {c} built, indexing {indexing:.0f} s, wall {time.perf_counter() - started_all:.0f} s, "
                  f"writer's peak {build_peak / 1e6:.0f} MB", flush=True)
    tracemalloc.stop()
    stats = index.stats()
    index.close()
    return {"build_s": round(indexing, 1), "build_wall_s": round(time.perf_counter() - started_all, 1),
            "segment_docs": SEGMENT_DOCS, "writer_peak_bytes": build_peak,
            "segments": stats["segments"], "documents": stats["documents"], "bytes_on_disk": stats["bytes_on_disk"]}


def derive(root: Path, size: int, source: int, queries: int) -> None:
    """``stories-size`` from the first segments of the (maybe unfinished) build ``stories-source``: the very
    segments a build of ``size`` would write (the same documents, a segment a million), linked, not copied;
    then its own filters and probes. The build time is the source's log line for that segment."""
    folder, origin = root / f"stories-{size}", root / f"stories-{source}" / "near"
    manifest = read_manifest(origin / "MANIFEST.json")
    (folder / "near").mkdir(parents=True, exist_ok=True)
    if not (folder / "near" / "MANIFEST.json").exists():
        index = linked_near(origin, folder / "near", manifest["segments"][: size // CHUNK], size - 1)
        assert len(index) > 0.99 * size, len(index)
        stats = index.stats()
        index.close()
        (folder / "near.json").write_text(json.dumps({"derived_from": source, "segments": stats["segments"],
                                                      "documents": stats["documents"],
                                                      "bytes_on_disk": stats["bytes_on_disk"]}))
    build(root, size, queries)


def linked_near(origin: Path, near: Path, segments: list[dict], high_water_mark: int) -> PersistentSpotSigsIndex:
    """A near index in ``near`` made of the segments ``segments`` (the manifest's entries) of the index in
    ``origin``, linked, not copied (immutable arrays; the mutable ones are written under new names on save),
    holding the rows up to ``high_water_mark``."""
    manifest = read_manifest(origin / "MANIFEST.json")
    for entry in segments:
        (near / entry["name"]).mkdir()
        for file in (origin / entry["name"]).iterdir():
            os.link(file, near / entry["name"] / file.name)
    (near / "log-derived").write_bytes(b"")
    manifest.update(segments=segments, log="log-derived", high_water_mark=high_water_mark)
    write_manifest(near / "MANIFEST.json", manifest)
    return open_near(near, store_mark=high_water_mark)


def crawl_tail(root: Path, size: int) -> None:
    """``stories-size-crawl``: the store ``stories-size`` as a crawl's writer leaves it, not as a bulk build does:
    every million but the last linked, the last fed in the writer's flushes (``flush_docs`` stories a segment, each
    followed by a checkpoint's merges), so the small segments of the LSM tree's tail are searched too; the same
    stories, so the filters and probes are linked."""
    folder, origin = root / f"stories-{size}-crawl", root / f"stories-{size}"
    manifest = read_manifest(origin / "near" / "MANIFEST.json")
    if not (folder / "near.json").exists():
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "near").mkdir(parents=True)
        last = (size - 1) // CHUNK
        index = linked_near(origin / "near", folder / "near", manifest["segments"][:-1], last * CHUNK - 1)
        with np.load(generate(last, size - last * CHUNK, root)) as arrays:
            offsets, spots, counts = arrays["offsets"], arrays["spots"], arrays["counts"]
        # The crawl's flush: WindowState leaves PersistentSpotSigsIndex's default.
        flush = inspect.signature(PersistentSpotSigsIndex).parameters["flush_docs"].default
        started = time.perf_counter()
        for first in range(0, len(offsets) - 1, flush):
            end = min(len(offsets) - 1, first + flush)
            keys = np.arange(last * CHUNK + first, last * CHUNK + end, dtype=np.int64)
            part = offsets[first:end + 1]
            index.bulk_add_arrays(keys, (START_TIME + keys).astype(np.uint32), part - part[0],
                                  spots[part[0]:part[-1]], counts[part[0]:part[-1]])
        stats = index.stats()
        sizes = [segment.size for segment in index.segments]
        index.close()
        for name in ("exact", "urls", "filters.json", "probes.json"):
            os.symlink(origin / name, folder / name)
        (folder / "near.json").write_text(json.dumps({
            "derived_from": size, "last_million_fed_in_flushes_of": flush, "feeding_s": round(
                time.perf_counter() - started, 1), "segments": stats["segments"], "segment_sizes": sizes,
            "documents": stats["documents"], "bytes_on_disk": stats["bytes_on_disk"]}))


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


def load_probes(folder: Path) -> list[dict[int, int]]:
    return [{int(spot): count for spot, count in probe.items()} for probe in json.loads((folder / "probes.json").read_text())]


def open_state(folder: Path, store_mark: int):
    """What a crawl start or a writer's takeover opens: the near-duplicate index and both filters, each
    rolled back to the store's last committed row."""
    from newsdedup.dedup.bloom_disk import PersistedBloomFilter
    near = open_near(folder / "near", store_mark=store_mark)
    marks = {"articles": store_mark}
    return near, PersistedBloomFilter.open(folder / "exact", store_marks=marks), \
        PersistedBloomFilter.open(folder / "urls", store_marks=marks)


def measure(folder: Path, size: int, queries: int, recall_sample: int) -> dict:
    probes = load_probes(folder)[:queries]
    before = memory()
    started = time.perf_counter()
    near, exact, urls = open_state(folder, size - 1)
    open_seconds = time.perf_counter() - started
    opened = memory()
    cold = timed_decisions(near, probes)
    after = memory()
    warm = timed_decisions(near, probes)
    lookups = []
    for i in range(0, 2 * size, max(1, size // 500)):  # half of them stored
        started = time.perf_counter()
        _ = exact_key(i) in exact, url_key(i) in urls
        lookups.append(time.perf_counter() - started)
    # A writer's takeover after the mark: the store's next 1,000 rows fed to all three.
    fresh = SpotArrays(seed=99).chunk(0, 1000)
    started = time.perf_counter()
    for j in range(1000):
        row = size + j
        near.add(row, fresh.doc(j), time=START_TIME + row)
        exact.add(exact_key(row), time=START_TIME + WINDOW_DAYS * DAY - 1, source="articles", row=row)
        urls.add(url_key(row), time=START_TIME + WINDOW_DAYS * DAY - 1, source="articles", row=row)
    catch_up = time.perf_counter() - started
    # The recall sample: as many edited copies as new documents (the probes alternate).
    recall = recall_check(near, probes[:recall_sample], size) if recall_sample else None
    near.close()
    return {"open_s": round(open_seconds, 3),
            "rss_anon_after_open_per_story": round((opened["rss_anon"] - before["rss_anon"]) / size, 1),
            **{f"{name}_per_story": round((after[name] - before[name]) / size, 1) for name in after},
            "decision": cold, "decision_warm": warm, "filter_lookup": percentiles(lookups),
            "catch_up_1000_rows_s": round(catch_up, 2),
            "filters_bytes_in_memory": exact.size_bytes + urls.size_bytes, "recall": recall,
            "disk_bytes": folder_bytes(folder / "near") + folder_bytes(folder / "exact") + folder_bytes(folder / "urls")}


def recall_check(near: PersistentSpotSigsIndex, probes: list[dict[int, int]], size: int) -> dict:
    """Every stored multiset scanned for each probe (the method's definition, no index): the pairs found,
    against the index's Jaccard and containment hits at the same thresholds."""
    tau, containment = DEFAULTS.spotsigs_tau, DEFAULTS.spotsigs_min_containment
    min_spots, ratio = DEFAULTS.spotsigs_containment_min_spots, SpotSigsMatcher.CONTAINMENT_MIN_RATIO
    # All probes in one pass: the union of their spots, sorted, with which probe holds each and how often.
    lengths_q = np.array([sum(probe.values()) for probe in probes], dtype=np.int64)
    pairs = sorted((spot, q, count) for q, probe in enumerate(probes) for spot, count in probe.items())
    all_spots = np.array([spot for spot, _, _ in pairs], dtype=np.uint64)
    union, first = np.unique(all_spots, return_index=True)
    holders = np.append(first, len(pairs))
    holder_probe = np.array([q for _, q, _ in pairs], dtype=np.int64)
    holder_count = np.array([count for _, _, count in pairs], dtype=np.int64)
    brute_jaccard = [dict() for _ in probes]
    brute_contained = [dict() for _ in probes]
    started = time.perf_counter()
    block = 200_000
    for segment in near.segments:
        for first_doc in range(0, segment.size, block):
            last_doc = min(segment.size, first_doc + block)
            width = last_doc - first_doc
            offsets = np.asarray(segment.spot_offsets[first_doc:last_doc + 1])
            spots = np.asarray(segment.spots[offsets[0]:offsets[-1]])
            counts = np.asarray(segment.counts[offsets[0]:offsets[-1]]).astype(np.int64)
            owner = np.repeat(np.arange(width, dtype=np.int64), np.diff(offsets))
            where = np.minimum(np.searchsorted(union, spots), len(union) - 1)
            matched = np.flatnonzero(union[where] == spots)
            slots = where[matched]
            fan = holders[slots + 1] - holders[slots]  # how many probes hold each matched spot
            element = np.repeat(matched, fan)
            holder = np.repeat(holders[slots] - np.cumsum(fan) + fan, fan) + np.arange(int(fan.sum()))
            shared = np.minimum(counts[element], holder_count[holder])
            common = np.bincount(holder_probe[holder] * width + owner[element], weights=shared,
                                 minlength=len(probes) * width).reshape(len(probes), width)
            lengths = segment.lengths[first_doc:last_doc].astype(np.int64)
            keys = np.asarray(segment.keys[first_doc:last_doc])
            for q, length in enumerate(lengths_q.tolist()):
                jaccard = common[q] / (length + lengths - common[q])
                for i in np.flatnonzero(jaccard >= tau).tolist():
                    brute_jaccard[q][int(keys[i])] = float(jaccard[i])
                smaller, larger = np.minimum(lengths, length), np.maximum(lengths, length)
                hit = (smaller >= min_spots) & (smaller / larger >= ratio) & (common[q] / smaller >= containment)
                for i in np.flatnonzero(hit).tolist():
                    brute_contained[q][int(keys[i])] = float(common[q][i] / smaller[i])
    scan = time.perf_counter() - started
    found = expected = reported = verified = 0
    for q, probe in enumerate(probes):
        for hits, truth in ((near.query(probe), brute_jaccard[q]),
                            (near.contained(probe, min_containment=containment, min_spots=min_spots, min_ratio=ratio),
                             brute_contained[q])):
            hits = dict(hits)
            expected += len(truth)
            found += len(truth.keys() & hits.keys())
            reported += len(hits)
            verified += sum(key in truth and abs(truth[key] - score) < 1e-12 for key, score in hits.items())
    return {"probes": len(probes), "pairs_brute_force": expected, "pairs_found": found,
            "recall": round(found / expected, 4) if expected else None, "pairs_reported": reported,
            "reported_verified": verified, "scan_s": round(scan, 1)}


def measure_empty(root: Path) -> dict:
    """Opening a state with nothing in it: the baseline the ratios divide by."""
    from newsdedup.dedup.bloom_disk import PersistedBloomFilter
    folder = root / "stories-0"
    if not (folder / "urls" / "MANIFEST.json").exists():
        open_near(folder / "near").close()
        for name in ("exact", "urls"):
            PersistedBloomFilter.create(folder / name, capacity=1000, error_rate=1e-3).save()
    started = time.perf_counter()
    near, _, _ = open_state(folder, -1)
    seconds = time.perf_counter() - started
    near.close()
    return {"open_s": round(seconds, 4)}


def measure_today(root: Path, size: int, queries: int) -> dict:
    """Today's crawl start: SpotSigsIndex and both BoundedBloomFilters rebuilt from every stored row."""
    from newsdedup.dedup.bloom import BoundedBloomFilter
    from newsdedup.dedup.spotsigs_index import SpotSigsIndex
    probes = load_probes(root / f"stories-{size}")[:queries]
    chunks = []
    for c in range((size + CHUNK - 1) // CHUNK):
        with np.load(generate(c, min(CHUNK, size - c * CHUNK), root)) as arrays:  # the build's own documents
            chunks.append(SpotChunk(arrays["offsets"], arrays["spots"], arrays["counts"]))
    # Read from files in a few large arrays, so no freed temporaries of their making sit in the heap: the
    # growth from here is the index's and the filters'.
    before = memory()
    started = time.perf_counter()
    index = SpotSigsIndex(tau=DEFAULTS.spotsigs_tau, min_signatures=DEFAULTS.spotsigs_min_signatures)
    for c, chunk in enumerate(chunks):
        for i in range(len(chunk)):
            index.add(c * CHUNK + i, chunk.doc(i))
    near_seconds = time.perf_counter() - started
    exact = BoundedBloomFilter.of((exact_key(i) for i in range(size)), expected=2 * size + 100_000, error_rate=1e-3)
    urls = BoundedBloomFilter.of((url_key(i) for i in range(size)), expected=2 * size + 100_000, error_rate=1e-3)
    seconds = time.perf_counter() - started
    after = memory()
    return {"start_s": round(seconds, 1), "near_rebuild_s": round(near_seconds, 1),
            "rss_per_story": round((after["rss"] - before["rss"]) / size, 1),
            "filters_bytes_in_memory": exact.size_bytes + urls.size_bytes,
            "decision": timed_decisions(index, probes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["build", "derive", "crawl-tail", "measure"])
    parser.add_argument("--source", type=int, default=10_000_000, help="derive: the build whose segments to link")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--root", type=Path, default=Path("/work/bench-data"))
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--recall-sample", type=int, default=20, help="probes checked against a brute-force scan")
    parser.add_argument("--today-limit", type=int, default=100_000, help="largest size today's rebuild is run at")
    parser.add_argument("--probe-budget", type=int, default=NEAR_PROBE_BUDGET, help="postings a search path reads "
                        "across the index, each segment its share (default: the crawl's, NEAR_PROBE_BUDGET; 0: none, "
                        "the lossless bound)")
    parser.add_argument("--segment-docs", type=int, default=NEAR_SEGMENT_DOCS, help="build: the largest segment, in "
                        "stories (default: the crawl's, NEAR_SEGMENT_DOCS)")
    parser.add_argument("--crawl-tail", action="store_true", help="measure: the stores as a crawl's writer leaves "
                        "them (made by the crawl-tail command), not as built in bulk")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global PROBE_BUDGET, SEGMENT_DOCS
    PROBE_BUDGET, SEGMENT_DOCS = args.probe_budget or None, args.segment_docs
    if args.child:
        kind, size = args.child[0], int(args.child[1])
        result = measure(args.root / f"stories-{size}{'-crawl' if args.crawl_tail else ''}", size, args.queries, args.recall_sample) if kind == "persisted" else \
            measure_empty(args.root) if kind == "empty" else measure_today(args.root, size, args.queries)
        print(json.dumps(result))
        return
    if args.what == "crawl-tail":
        for size in sorted(args.sizes):
            crawl_tail(args.root, size)
        return
    if args.what in ("build", "derive"):
        for size in sorted(args.sizes):
            derive(args.root, size, args.source, args.queries) if args.what == "derive" else \
                build(args.root, size, args.queries)
        return
    print(json.dumps({"load_average_before": os.getloadavg()}), flush=True)
    common = ["--root", str(args.root), "--queries", str(args.queries), "--recall-sample", str(args.recall_sample),
              "--probe-budget", str(args.probe_budget), "--segment-docs", str(args.segment_docs)] + \
        (["--crawl-tail"] if args.crawl_tail else [])
    empty = in_child(*common, "measure", "--child", "empty", "0", script=__file__)
    print(json.dumps({"size": 0, "persisted": empty}), flush=True)
    for size in sorted(args.sizes):
        folder = args.root / f"stories-{size}{'-crawl' if args.crawl_tail else ''}"
        row = {"size": size, "build": {**json.loads((folder / "near.json").read_text()),
                                       **json.loads((folder / "filters.json").read_text())}}
        row["persisted"] = in_child(*common, "measure", "--child", "persisted", str(size), script=__file__)
        row["persisted"]["open_x_empty"] = round(row["persisted"]["open_s"] / empty["open_s"], 1)
        print(json.dumps(row), flush=True)
        if size <= args.today_limit:
            today = in_child(*common, "measure", "--child", "today", str(size), script=__file__)
            today["start_x_persisted_open"] = round(today["start_s"] / row["persisted"]["open_s"])
            print(json.dumps({"size": size, "today": today}), flush=True)
    print(json.dumps({"load_average_after": os.getloadavg()}))


if __name__ == "__main__":
    main()
