"""Near-duplicate index scaling: query time and memory per document at 10k, 100k and 1M stored documents.

    python benchmarks/near_index_scaling.py                                  # both indexes, 10k/100k/1M
    python benchmarks/near_index_scaling.py --index spotsigs --sizes 10000 100000 \\
        --baseline /tmp/spotsigs_index_before.py                             # compare with another version
    git show 95e2417:newsdedup/dedup/spotsigs_index.py > /tmp/spotsigs_index_before.py   # e.g. that one

Indexes: ``SimhashIndex`` (64 bits, k = 3) and ``SpotSigsIndex`` (tau 0.4, min_signatures 5: the product defaults). One stream
of documents is added per index; at each size in ``--sizes`` adding pauses and ``--queries`` queries are
timed one by one (median and p99 of wall time; the machine is shared, so no mean). Half the queries are
edited copies of stored documents (so they hit), half are new documents. A brute-force scan (every stored
document compared with the query) is timed for comparison: over all documents up to ``--scan-limit``,
beyond that over the first ``--scan-limit`` documents and scaled linearly (a scan is linear by definition).

Documents that look real:

* SpotSigs: multisets of 64-bit spot hashes drawn to match what the Sina texts give (``--data``; the
  measured statistics and the generator's at the same size are printed first, ``--no-calibration`` skips
  that): a doc has ~119 spot occurrences (lognormal lengths, median 81), ~104 of them distinct; spots come
  from a piecewise Zipf vocabulary of 150,000 ranks (exponent 0.37 up to rank 100, 0.6 up to 1,000, 0.9
  beyond: Sina's rank-frequency curve) or, for 15% of occurrences, are spots no other document has (names,
  numbers), and 10% of occurrences repeat a spot of the same document. Sina at 8,236 indexed docs:
  257,532 distinct spots, 63.5% in one doc only; the generator: ~253,000 and ~65%. How the vocabulary grows
  beyond the 9k real texts is an assumption: the common vocabulary saturates, the never-repeated spots grow
  linearly (~15 new ids per document).
* 5% of the stored documents are near-copies (10-30% of the occurrences replaced) of an earlier one.
* Simhash: uniformly random 64-bit fingerprints, 5% near-copies (1-3 bits flipped) of an earlier one.
  Real fingerprints are skewed (see benchmarks/simhash_index_bench.py), so real buckets are longer.

Memory, at sizes up to ``--trace-limit`` (tracemalloc, in a pass of its own, untimed): for SpotSigs
everything the index holds, including what it keeps alive of its input (the 64-bit spot hashes as boxed
ints, if it keeps them, ~36 bytes each; the int keys, 28-32 bytes a document); for Simhash what the index
module allocated (keys not counted). At every size also the index's own estimate
(``stats()["approx_bytes"]``, SpotSigs) and the growth of the process's resident memory (meaningful at
sizes beyond the traced ones; it includes the documents kept for the scan).
"""

from __future__ import annotations

import argparse
import bisect
import gc
import gzip
import importlib.util
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

from newsdedup.dedup.simhash_index import SimhashIndex
from newsdedup.dedup.spotsigs import multiset_jaccard
from newsdedup.dedup.spotsigs_index import SpotSigsIndex

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
_MASK64 = (1 << 64) - 1


# ----------------------------------------------------------------------------------- synthetic spots --
class SpotDocuments:
    """Deterministic synthetic SpotSigs documents: ``doc(i)`` is the same multiset on every call."""

    def __init__(
        self,
        *,
        seed: int = 2018,
        median_length: float = 81.0,
        length_sigma: float = 0.86,
        vocabulary: int = 150_000,
        edges: tuple[int, ...] = (1, 100, 1000),
        exponents: tuple[float, ...] = (0.37, 0.6, 0.9),
        unique_share: float = 0.15,
        repeat_share: float = 0.10,
        near_copy_share: float = 0.05,
    ) -> None:
        self.seed = seed
        self.mu, self.sigma = math.log(median_length), length_sigma
        self.unique_share, self.repeat_share, self.near_copy_share = unique_share, repeat_share, near_copy_share
        # Ranks in [edges[k], edges[k+1]) have probability c_k r^-exponents[k], continuous at the edges.
        self._edges = list(edges) + [vocabulary]
        self._exponents = list(exponents)
        masses, scale = [], 1.0
        for k, s in enumerate(self._exponents):
            lo, hi = self._edges[k], self._edges[k + 1]
            if k:
                scale *= lo ** (s - self._exponents[k - 1])
            masses.append(scale * (hi ** (1 - s) - lo ** (1 - s)) / (1 - s))
        total, running = sum(masses), 0.0
        self._cumulative = []
        for mass in masses:
            running += mass / total
            self._cumulative.append(running)

    def _rank(self, rng: random.Random) -> int:
        k = min(bisect.bisect_left(self._cumulative, rng.random()), len(self._exponents) - 1)
        lo, hi, s = self._edges[k], self._edges[k + 1], self._exponents[k]
        return int((rng.random() * (hi ** (1 - s) - lo ** (1 - s)) + lo ** (1 - s)) ** (1 / (1 - s)))

    @staticmethod
    def _spot(rank: int) -> int:
        """A 64-bit hash-like value for a vocabulary rank (splitmix64, a bijection)."""
        z = (rank * 0x9E3779B97F4A7C15) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def fresh(self, rng: random.Random) -> Counter:
        length = max(4, min(5000, int(rng.lognormvariate(self.mu, self.sigma))))
        spots: list[int] = []
        for _ in range(length):
            roll = rng.random()
            if spots and roll < self.repeat_share:
                spots.append(rng.choice(spots))
            elif roll < self.repeat_share + self.unique_share:
                spots.append(rng.getrandbits(64))  # a spot no other document has
            else:
                spots.append(self._spot(self._rank(rng)))
        return Counter(spots)

    def edit(self, doc: Counter, rng: random.Random, low: float = 0.1, high: float = 0.3) -> Counter:
        """A near-copy: a share of the occurrences replaced by new draws."""
        occurrences = list(doc.elements())
        rng.shuffle(occurrences)
        replaced = int(len(occurrences) * rng.uniform(low, high))
        kept = occurrences[replaced:]
        extra = self.fresh(rng)
        kept.extend(list(extra.elements())[:replaced])
        return Counter(kept)

    def doc(self, i: int) -> Counter:
        rng = random.Random(self.seed * 1_000_003 + i)
        if i >= 10 and rng.random() < self.near_copy_share:
            return self.edit(self.doc(rng.randrange(i)), rng)
        return self.fresh(rng)

    def query(self, j: int, stored: int) -> Counter:
        """Query ``j``: an edited copy of a stored document (even j) or a new document (odd j)."""
        rng = random.Random(self.seed * 7919 + j + 1_000_000_007)
        if j % 2 == 0:
            return self.edit(self.doc(rng.randrange(stored)), rng)
        return self.fresh(rng)


def spot_statistics(docs: list[Counter]) -> dict:
    """What the calibration compares: lengths, distinct spots, vocabulary, document frequencies."""
    docs = [doc for doc in docs if sum(doc.values()) >= 5]  # what the index stores (min_signatures 5)
    distinct = sorted(len(doc) for doc in docs)
    lengths = [sum(doc.values()) for doc in docs]
    frequency = Counter(spot for doc in docs for spot in doc)
    ranked = sorted(frequency.values(), reverse=True)
    counts = [count for doc in docs for count in doc.values()]
    return {
        "docs": len(docs),
        "mean_length": round(statistics.fmean(lengths), 1),
        "mean_distinct": round(statistics.fmean(distinct), 1),
        "distinct_p10_p50_p90": [distinct[int(q * len(distinct))] for q in (0.1, 0.5, 0.9)],
        "distinct_spots": len(frequency),
        "share_in_one_doc": round(sum(1 for f in ranked if f == 1) / len(ranked), 3),
        "share_count_1": round(sum(1 for c in counts if c == 1) / len(counts), 3),
        "doc_frequency_at_rank_1_100_1000_10000": [ranked[r] for r in (0, 100, 1000, 10000) if r < len(ranked)],
    }


def sina_spots(data: Path) -> list[Counter]:
    from newsdedup.dedup.features import FeatureConfig, FeatureExtractor

    extractor = FeatureExtractor(FeatureConfig(method="spotsigs"))
    with gzip.open(data / "sina-news-2018" / "articles.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [extractor.features(json.loads(line)["text"]).spots or Counter() for line in lines]


# ------------------------------------------------------------------------------------------ helpers --
def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def traced_bytes(module_file: str) -> int:
    """Bytes still allocated by code in ``module_file`` (innermost frame), from the running tracemalloc."""
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, module_file)])
    return sum(stat.size for stat in snapshot.statistics("filename"))


def timed(function, probes) -> tuple[list[float], int]:
    timings, hits = [], 0
    for probe in probes:
        started = time.perf_counter()
        hits += len(function(probe))
        timings.append(time.perf_counter() - started)
    timings.sort()
    return timings, hits


def summary(timings: list[float]) -> dict:
    return {
        "median_us": round(statistics.median(timings) * 1e6, 1),
        "p99_us": round(timings[min(len(timings) - 1, int(0.99 * len(timings)))] * 1e6, 1),
    }


def load_spotsigs_class(path: str):
    spec = importlib.util.spec_from_file_location("baseline_spotsigs_index", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--baseline {path!r} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SpotSigsIndex


# --------------------------------------------------------------------------------------------- runs --
def traced_memory(build, sizes: list[int], module_file: str | None) -> dict[int, int]:
    """Bytes per document at each size, in a traced pass of its own (tracing slows everything down, so the
    timed pass runs untraced). ``build(size)`` grows the index to ``size``. With ``module_file``: what that
    file's code allocated; without: everything still allocated since tracing began, i.e. the index and what
    it keeps alive of its input (boxed spot hashes, if it keeps them; the int keys)."""
    if not sizes:
        return {}
    tracemalloc.start()
    try:
        measured = {}
        for size in sizes:
            build(size)
            gc.collect()
            held = traced_bytes(module_file) if module_file else tracemalloc.get_traced_memory()[0]
            measured[size] = round(held / size)
        return measured
    finally:
        tracemalloc.stop()


def run_spotsigs(args: argparse.Namespace, label: str, index_class) -> list[dict]:
    generator = SpotDocuments()
    sizes = sorted(args.sizes)

    def grower(index, scan_docs: list[Counter] | None):
        added = 0
        seconds = 0.0

        def build(size: int) -> float:
            nonlocal added, seconds
            while added < size:
                doc = generator.doc(added)
                if scan_docs is not None and len(scan_docs) < args.scan_limit:
                    scan_docs.append(doc)
                started = time.perf_counter()
                index.add(added, doc)
                seconds += time.perf_counter() - started
                added += 1
            return seconds / added

        return build

    # Everything traced: an index that keeps the caller's spot objects (boxed 64-bit ints, ~36 bytes each)
    # pays for them, as it does when features arrive from worker processes.
    traced = traced_memory(
        grower(index_class(0.4, min_signatures=5), None), [size for size in sizes if size <= args.trace_limit],
        None,
    )
    gc.collect()
    rss_before = rss_bytes()
    index = index_class(0.4, min_signatures=5)
    scan_docs: list[Counter] = []  # the first --scan-limit documents, for the brute-force scan
    build = grower(index, scan_docs)
    rows = []
    for size in sizes:
        add_seconds = build(size)
        gc.collect()
        row: dict = {"index": label, "size": size, "stored": len(index), "add_us": round(add_seconds * 1e6, 1)}
        if size in traced:
            row["traced_bytes_per_doc"] = traced[size]
        if hasattr(index, "stats"):
            row["approx_bytes_per_doc"] = round(index.stats()["approx_bytes"] / len(index))
        # Includes the documents kept for the scan up to --scan-limit (~8 KB each as Counters).
        row["rss_growth_bytes_per_doc"] = round((rss_bytes() - rss_before) / size)
        probes = [generator.query(j, size) for j in range(args.queries)]
        queries_before = index.stats()["queries"] if hasattr(index, "stats") else 0
        compared_before = index.stats()["compared"] if hasattr(index, "stats") else 0
        timings, hits = timed(index.query, probes)
        row.update(summary(timings))
        # The product's matcher runs a containment search (SpotSigsMatcher's fallback) whenever the
        # Jaccard query finds nothing: time that too, on a fifth of the probes.
        if hasattr(index, "contained"):
            wide, _ = timed(
                lambda probe: index.contained(probe, min_containment=0.7, min_spots=10, min_ratio=0.15),
                probes[: max(50, len(probes) // 5)],
            )
            row["containment_query"] = summary(wide)
        row["hit_rate"] = round(hits / len(probes), 3)
        if hasattr(index, "stats"):
            stats = index.stats()
            row["compared_per_query"] = round(
                (stats["compared"] - compared_before) / max(1, stats["queries"] - queries_before), 1
            )
        # Brute force: every stored document compared with the query (multiset Jaccard), scaled if sampled.
        scan_probes = probes[: args.scan_queries]
        scanned = scan_docs[:size]
        started = time.perf_counter()
        for probe in scan_probes:
            for doc in scanned:
                multiset_jaccard(probe, doc)
        per_query = (time.perf_counter() - started) / len(scan_probes) * size / len(scanned)
        row["scan_ms"] = round(per_query * 1e3, 1)
        row["scan_extrapolated"] = len(scanned) < size
        row["speedup_vs_scan"] = round(per_query / (row["median_us"] / 1e6), 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def run_simhash(args: argparse.Namespace) -> list[dict]:
    from array import array

    bits, k = 64, 3
    module_file = sys.modules[SimhashIndex.__module__].__file__
    sizes = sorted(args.sizes)

    def grower(index, fingerprints: array, rng: random.Random):
        seconds = 0.0

        def build(size: int) -> float:
            nonlocal seconds
            while len(fingerprints) < size:
                i = len(fingerprints)
                near = i >= 10 and rng.random() < 0.05
                fingerprint = flip(fingerprints[rng.randrange(i)], rng) if near else rng.getrandbits(bits)
                fingerprints.append(fingerprint)
                started = time.perf_counter()
                index.add(i, fingerprint)
                seconds += time.perf_counter() - started
            return seconds / size

        return build

    def flip(fingerprint: int, rng: random.Random) -> int:
        for position in rng.sample(range(bits), rng.randint(1, k)):
            fingerprint ^= 1 << position
        return fingerprint

    traced = traced_memory(
        grower(SimhashIndex(bits=bits, max_distance=k), array("Q"), random.Random(64)),
        [size for size in sizes if size <= args.trace_limit], module_file,
    )
    gc.collect()
    rss_before = rss_bytes()
    rng = random.Random(64)
    index = SimhashIndex(bits=bits, max_distance=k)
    fingerprints = array("Q")
    build = grower(index, fingerprints, rng)
    rows = []
    for size in sizes:
        add_seconds = build(size)
        gc.collect()
        row: dict = {"index": "simhash", "size": size, "stored": len(index), "add_us": round(add_seconds * 1e6, 2)}
        if size in traced:
            row["traced_bytes_per_doc"] = traced[size]
        # The benchmark's own array of fingerprints (8 bytes each) is not part of the index.
        row["rss_growth_bytes_per_doc"] = round((rss_bytes() - rss_before) / size - 8)
        probes = [flip(fingerprints[rng.randrange(size)], rng) if j % 2 == 0 else rng.getrandbits(bits)
                  for j in range(args.queries)]
        timings, hits = timed(index.query, probes)
        row.update(summary(timings))
        row["hit_rate"] = round(hits / len(probes), 3)
        started = time.perf_counter()
        for probe in probes[: args.scan_queries]:
            sum(1 for fingerprint in fingerprints if (fingerprint ^ probe).bit_count() <= k)
        per_query = (time.perf_counter() - started) / args.scan_queries
        row["scan_ms"] = round(per_query * 1e3, 2)
        row["scan_extrapolated"] = False
        row["speedup_vs_scan"] = round(per_query / (row["median_us"] / 1e6), 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def print_table(rows: list[dict]) -> None:
    print()
    print(f"{'index':<18}{'size':>10}{'bytes/doc':>11}{'(approx)':>10}{'(RSS)':>8}{'add us':>9}"
          f"{'query med us':>14}{'p99 us':>10}{'hits':>6}{'scan ms':>10}{'x scan':>9}")
    for row in rows:
        traced = row.get("traced_bytes_per_doc", "-")
        approx = row.get("approx_bytes_per_doc", "-")
        scan = f"{row['scan_ms']}{'*' if row['scan_extrapolated'] else ''}"
        print(f"{row['index']:<18}{row['size']:>10,}{traced:>11}{approx:>10}{row['rss_growth_bytes_per_doc']:>8}"
              f"{row['add_us']:>9}{row['median_us']:>14}{row['p99_us']:>10}{row['hit_rate']:>6}{scan:>10}"
              f"{row['speedup_vs_scan']:>9}")
    print("bytes/doc: tracemalloc (SpotSigs: all it keeps alive, keys included; Simhash: its module only);"
          " approx: the index's own estimate; RSS: process growth;"
          " * scan scaled from a sample; x scan: scan time / median query time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", choices=("both", "simhash", "spotsigs"), default="both")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--scan-queries", type=int, default=10, help="queries timed for the brute-force scan")
    parser.add_argument("--scan-limit", type=int, default=20_000, help="documents kept for the scan")
    parser.add_argument("--trace-limit", type=int, default=100_000, help="largest size measured with tracemalloc")
    parser.add_argument("--baseline", help="path of another spotsigs_index.py to run the same SpotSigs stream on")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder (for the calibration)")
    parser.add_argument("--no-calibration", action="store_true", help="skip comparing the generator with Sina")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if min(args.sizes) < 1 or args.queries < 1 or args.scan_queries < 1 or args.scan_limit < 1:
        parser.error("sizes, --queries, --scan-queries and --scan-limit must be positive")
    print(f"load average before: {os.getloadavg()}", flush=True)
    results: dict = {"args": {key: str(value) for key, value in vars(args).items()}}

    if args.index != "simhash" and not args.no_calibration:
        if (args.data / "sina-news-2018" / "articles.jsonl.gz").is_file():
            real = spot_statistics(sina_spots(args.data))
            generator = SpotDocuments()
            synthetic = spot_statistics([generator.doc(i) for i in range(real["docs"])])
            results["calibration"] = {"sina": real, "synthetic_same_size": synthetic}
            print("spot statistics, Sina:     ", json.dumps(real))
            print("spot statistics, generator:", json.dumps(synthetic), flush=True)
        else:
            print(f"no Sina data under {args.data}: calibration skipped", flush=True)

    rows: list[dict] = []
    if args.index != "spotsigs":
        rows += run_simhash(args)
    if args.index != "simhash":
        rows += run_spotsigs(args, "spotsigs", SpotSigsIndex)
        if args.baseline:
            rows += run_spotsigs(args, "spotsigs-baseline", load_spotsigs_class(args.baseline))
    results["rows"] = rows
    results["load_average_after"] = os.getloadavg()
    print_table(rows)
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
