"""Index and filter scaling: near-duplicate lookups at 10k-1M stored documents, and the Bloom filters' true rates.

    python benchmarks/index_scaling.py                       # Simhash and SpotSigs indexes at 10k, 100k, 1M; Bloom
    python benchmarks/index_scaling.py --parts spotsigs --sizes 10000 100000

* ``simhash``: :class:`SimhashIndex` (64 bits, k = 3) over uniformly random fingerprints, 5% of them near-copies
  (1-3 bits flipped) of an earlier one.  Real fingerprints are skewed, so real buckets are longer.
* ``spotsigs``: :class:`SpotSigsIndex` with the product's default tau and junk guard over synthetic spot
  multisets drawn to match the Sina texts (printed first, from ``--data``): lognormal lengths (median 81
  occurrences), a piecewise Zipf vocabulary of 150,000 spots (exponents 0.37 / 0.6 / 0.9 at ranks 1 / 100 / 1,000),
  15% of occurrences in no other document, 10% repeating one of the same document, 5% near-copies (10-30% of the
  occurrences replaced).  Beyond the 9k real texts the common vocabulary saturates while one-off spots grow
  linearly: an assumption.  Besides the Jaccard query, the product's containment fallback search is timed, and a
  brute-force scan (every stored document compared) over the first ``--scan-limit`` documents, scaled linearly.
* ``bloom``: pybloom-live's ``ScalableBloomFilter`` (tightening 0.9: tends to 9 p) against the product's
  :class:`BoundedBloomFilter` (tightening 0.5: bounded by p), grown from 1,000 and sized up front: the measured
  false-positive rate over a million keys never inserted, and bits per key against the optimum.

At each size ``--queries`` queries (half edited copies of stored documents, half new ones) are timed one by one:
median and p99 of wall time (the machine is shared: no mean).  Bytes per document: tracemalloc, in an untimed
pass of its own, up to ``--trace-limit`` documents (SpotSigs: all the index keeps alive, keys included; Simhash:
what the index module allocated, keys not counted).
"""

from __future__ import annotations

import argparse
import bisect
import gc
import gzip
import json
import math
import os
import random
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path

from pybloom_live import ScalableBloomFilter

from newsdedup.dedup.bloom import BoundedBloomFilter, optimal_bits_per_key
from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
from newsdedup.dedup.simhash_index import SimhashIndex
from newsdedup.dedup.single_pass import NearSettings, SpotSigsMatcher
from newsdedup.dedup.spotsigs import multiset_jaccard
from newsdedup.dedup.spotsigs_index import SpotSigsIndex

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


class SpotDocuments:
    """Deterministic synthetic spot multisets: ``doc(i)`` is the same on every call (see the module docstring)."""

    EDGES, EXPONENTS, VOCABULARY = (1, 100, 1000, 150_000), (0.37, 0.6, 0.9), 150_000

    def __init__(self, seed: int = 2018) -> None:
        self.seed = seed
        values = random.Random(seed)
        self._values = [values.getrandbits(64) for _ in range(self.VOCABULARY + 1)]  # a hash-like value per rank
        masses, scale = [], 1.0  # ranks in [edges[k], edges[k+1]) have probability c_k r^-s_k, continuous at edges
        for k, s in enumerate(self.EXPONENTS):
            lo, hi = self.EDGES[k], self.EDGES[k + 1]
            scale *= lo ** (s - self.EXPONENTS[k - 1]) if k else 1.0
            masses.append(scale * (hi ** (1 - s) - lo ** (1 - s)) / (1 - s))
        self._cumulative = [sum(masses[: k + 1]) / sum(masses) for k in range(len(masses))]

    def _spot(self, rng: random.Random) -> int:
        k = min(bisect.bisect_left(self._cumulative, rng.random()), len(self.EXPONENTS) - 1)
        lo, hi, s = self.EDGES[k], self.EDGES[k + 1], self.EXPONENTS[k]
        return self._values[int((rng.random() * (hi ** (1 - s) - lo ** (1 - s)) + lo ** (1 - s)) ** (1 / (1 - s)))]

    def fresh(self, rng: random.Random) -> Counter:
        spots: list[int] = []
        for _ in range(max(4, min(5000, int(rng.lognormvariate(math.log(81), 0.86))))):
            roll = rng.random()
            spots.append(rng.choice(spots) if spots and roll < 0.10 else
                         rng.getrandbits(64) if roll < 0.25 else self._spot(rng))
        return Counter(spots)

    def edit(self, doc: Counter, rng: random.Random) -> Counter:
        occurrences = list(doc.elements())
        rng.shuffle(occurrences)
        replaced = int(len(occurrences) * rng.uniform(0.1, 0.3))
        return Counter(occurrences[replaced:] + list(self.fresh(rng).elements())[:replaced])

    def doc(self, i: int) -> Counter:
        rng = random.Random(self.seed * 1_000_003 + i)
        return self.edit(self.doc(rng.randrange(i)), rng) if i >= 10 and rng.random() < 0.05 else self.fresh(rng)

    def query(self, j: int, stored: int) -> Counter:
        rng = random.Random(self.seed * 7919 + j + 1_000_000_007)
        return self.edit(self.doc(rng.randrange(stored)), rng) if j % 2 == 0 else self.fresh(rng)


def spot_statistics(docs: list[Counter]) -> dict:
    """What the calibration compares: lengths, distinct spots per document, vocabulary, one-off spots."""
    docs = [doc for doc in docs if doc.total() >= 5]
    frequency = Counter(spot for doc in docs for spot in doc)
    return {"docs": len(docs), "median_length": statistics.median(doc.total() for doc in docs),
            "mean_distinct": round(statistics.fmean(len(doc) for doc in docs), 1), "distinct_spots": len(frequency),
            "share_in_one_doc": round(sum(f == 1 for f in frequency.values()) / len(frequency), 3)}


def timed(function, probes) -> dict:
    timings = []
    for probe in probes:
        started = time.perf_counter()
        function(probe)
        timings.append(time.perf_counter() - started)
    timings.sort()
    return {"median_us": round(statistics.median(timings) * 1e6, 1), "p99_us": round(timings[int(0.99 * len(timings))] * 1e6, 1)}


def traced_bytes_per_doc(build, size: int, module: str | None = None) -> int:
    """Bytes per document still allocated after ``build(size)``: all of them, or those of ``module``'s code."""
    gc.collect()
    tracemalloc.start()
    try:
        kept = build(size)  # noqa: F841 - held while measuring
        gc.collect()
        if module is None:
            return round(tracemalloc.get_traced_memory()[0] / size)
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, module)])
        return round(sum(stat.size for stat in snapshot.statistics("filename")) / size)
    finally:
        tracemalloc.stop()


def run_simhash(args: argparse.Namespace) -> None:
    rng = random.Random(64)
    fingerprints: list[int] = []
    for i in range(max(args.sizes)):
        near = i >= 10 and rng.random() < 0.05
        fingerprints.append(flip(fingerprints[rng.randrange(i)], rng) if near else rng.getrandbits(64))

    def build(size: int) -> SimhashIndex:
        index = SimhashIndex(bits=64, max_distance=3)
        for key in range(size):
            index.add(key, fingerprints[key])
        return index

    for size in sorted(args.sizes):
        index = build(size)
        probes = [flip(fingerprints[rng.randrange(size)], rng) if j % 2 == 0 else rng.getrandbits(64)
                  for j in range(args.queries)]
        scan = timed(lambda probe: [f for f in fingerprints[:size] if (f ^ probe).bit_count() <= 3], probes[:5])
        row = {"index": "simhash", "size": size, "query": timed(index.query, probes), "scan_ms": scan["median_us"] / 1e3,
               "bytes_per_doc": traced_bytes_per_doc(build, size, sys.modules[SimhashIndex.__module__].__file__)
               if size <= args.trace_limit else None}
        print(json.dumps(row), flush=True)


def flip(fingerprint: int, rng: random.Random) -> int:
    for position in rng.sample(range(64), rng.randint(1, 3)):
        fingerprint ^= 1 << position
    return fingerprint


def run_spotsigs(args: argparse.Namespace) -> None:
    generator = SpotDocuments()
    if (args.data / "sina-news-2018").is_dir():
        extractor = FeatureExtractor(FeatureConfig(method="spotsigs"))
        with gzip.open(args.data / "sina-news-2018" / "articles.jsonl.gz", "rt", encoding="utf-8") as lines:
            real = [extractor.features(json.loads(line)["text"]).spots or Counter() for line in lines]
        print("spot statistics, Sina:     ", json.dumps(spot_statistics(real)))
        print("spot statistics, generator:", json.dumps(spot_statistics([generator.doc(i) for i in range(len(real))])))
    defaults = NearSettings()

    def build(size: int) -> SpotSigsIndex:
        index = SpotSigsIndex(tau=defaults.spotsigs_tau, min_signatures=defaults.spotsigs_min_signatures)
        for key in range(size):
            index.add(key, generator.doc(key))
        return index

    scanned = [generator.doc(i) for i in range(min(args.scan_limit, max(args.sizes)))]
    for size in sorted(args.sizes):
        index = build(size)
        probes = [generator.query(j, size) for j in range(args.queries)]
        contained = timed(lambda probe: index.contained(
            probe, min_containment=defaults.spotsigs_min_containment, min_spots=defaults.spotsigs_containment_min_spots,
            min_ratio=SpotSigsMatcher.CONTAINMENT_MIN_RATIO), probes[: args.queries // 5])
        docs = scanned[:size]
        scan = timed(lambda probe: [multiset_jaccard(probe, doc) for doc in docs], probes[:5])
        row = {"index": "spotsigs", "size": size, "query": timed(index.query, probes), "containment": contained,
               "scan_ms": round(scan["median_us"] / 1e3 * size / len(docs), 1),
               "bytes_per_doc": traced_bytes_per_doc(build, size) if size <= args.trace_limit else None}
        print(json.dumps(row), flush=True)


def run_bloom(args: argparse.Namespace) -> None:
    for rate in (1e-3, 1e-4):
        for name, bloom in (("pybloom ScalableBloomFilter, grown", ScalableBloomFilter(
                initial_capacity=1000, error_rate=rate, mode=ScalableBloomFilter.LARGE_SET_GROWTH)),
                ("BoundedBloomFilter, grown", BoundedBloomFilter(1000, rate)),
                ("BoundedBloomFilter, sized", BoundedBloomFilter(args.keys, rate))):
            for _ in range(args.keys):
                bloom.add(os.urandom(16))
            false_positives = sum(os.urandom(16) in bloom for _ in range(1_000_000))
            bits = sum(len(f.bitarray) for f in bloom.filters)
            print(json.dumps({"filter": name, "requested_p": rate, "measured_p": false_positives / 1_000_000,
                              "bits_per_key": round(bits / args.keys, 2),
                              "optimum_bits_per_key": round(optimal_bits_per_key(rate), 2)}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", choices=("simhash", "spotsigs", "bloom"),
                        default=["simhash", "spotsigs", "bloom"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--scan-limit", type=int, default=20_000, help="documents kept for the brute-force scan")
    parser.add_argument("--trace-limit", type=int, default=100_000, help="largest size measured with tracemalloc")
    parser.add_argument("--keys", type=int, default=200_000, help="keys inserted into each Bloom filter")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder (calibration)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    for part in args.parts:
        {"simhash": run_simhash, "spotsigs": run_spotsigs, "bloom": run_bloom}[part](args)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
