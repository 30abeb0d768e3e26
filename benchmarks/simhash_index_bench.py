"""Benchmark SimhashIndex: memory per stored fingerprint and query time on random fingerprints.

Run from the repository root:

    python benchmarks/simhash_index_bench.py                      # 10k, 100k, 1M; 64 bits, k = 3
    python benchmarks/simhash_index_bench.py --sizes 100000 --bits 128 --max-distance 3

Memory is measured with tracemalloc around the adds (keys and fingerprints are created beforehand, so the
figure is the index's own cost; an int key adds 28-32 bytes, a URL string 80-150). Random fingerprints
spread evenly over the blocks: real Simhash fingerprints are skewed (near-duplicates and weakly weighted
texts share block values), so real buckets, and queries, are longer than these. On a shared machine the
mean query time includes rare multi-millisecond stalls (preemption): quote the median and p99.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
import tracemalloc

from newsdedup.dedup.simhash_index import SimhashIndex


def _flip_bits(fingerprint: int, count: int, bits: int, rng: random.Random) -> int:
    for position in rng.sample(range(bits), count):
        fingerprint ^= 1 << position
    return fingerprint


def run(size: int, bits: int, max_distance: int, blocks: int | None, queries: int, measure_memory: bool) -> None:
    rng = random.Random(size)
    keys = list(range(size))
    fingerprints = [rng.getrandbits(bits) for _ in range(size)]
    gc.collect()

    if measure_memory:
        tracemalloc.start()
    started = time.perf_counter()
    index = SimhashIndex(bits=bits, max_distance=max_distance, blocks=blocks)
    for key, fingerprint in zip(keys, fingerprints):
        index.add(key, fingerprint)
    add_seconds = time.perf_counter() - started
    memory = ""
    if measure_memory:
        current, _peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        memory = f"  memory {current / 2**20:7.1f} MiB = {current / size:6.1f} B/fingerprint"

    # Half the queries are stored fingerprints with 0..k bits flipped (at least one hit), half are random.
    probes = []
    for i in range(queries):
        if i % 2:
            probes.append(_flip_bits(fingerprints[rng.randrange(size)], rng.randint(0, max_distance), bits, rng))
        else:
            probes.append(rng.getrandbits(bits))
    timings = []
    hits = 0
    for probe in probes:
        started = time.perf_counter()
        hits += len(index.query(probe))
        timings.append(time.perf_counter() - started)
    timings.sort()
    median, p99, mean = statistics.median(timings), timings[int(0.99 * len(timings))], statistics.fmean(timings)
    print(
        f"n={size:>9,} bits={bits} k={max_distance} tables={len(index._table_masks)}"
        f"  add {add_seconds / size * 1e6:5.2f} us/fp{memory}"
        f"  query median {median * 1e6:5.1f} us, p99 {p99 * 1e6:5.1f} us, mean {mean * 1e6:5.1f} us"
        f"  ({hits} hits in {queries} queries)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--max-distance", type=int, default=3)
    parser.add_argument("--blocks", type=int, default=None)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--no-memory", action="store_true", help="skip tracemalloc (faster adds)")
    args = parser.parse_args()
    for size in args.sizes:
        run(size, args.bits, args.max_distance, args.blocks, args.queries, not args.no_memory)


if __name__ == "__main__":
    main()
