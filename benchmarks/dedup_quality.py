"""Dedup quality on the text-level reprint benchmark: the core's methods over a grid, and baselines.

Builds the seeded reprint set (:mod:`newsdedup.evaluation.reprints`) from ``../shared/data``,
runs Simhash, SpotSigs and the hybrid through the same Deduplicator as ``newsdedup dedup``
(exact stage, then Single-Pass against cluster centres) over a grid of thresholds and feature
options, runs the datasketch MinHashLSH and Shingling+Jaccard baselines, and prints pairwise
precision / recall / F1, recall by reprint kind, the false-positive rate on the hard negatives
and the throughput.  The target for the product default is F1 >= 0.98 at precision >= 0.99.

It also measures prototypes of changes to the core, built here by wrapping the core's detectors
(the core files are not edited): a spot-containment fallback for short versions and added text,
and a junk guard (no near-duplicate verdict for documents with too few spot signatures).

    /work/venv/bin/python benchmarks/dedup_quality.py --cli-check     # full grid, about 7 minutes on 2 cores
    /work/venv/bin/python benchmarks/dedup_quality.py --quick         # a reduced grid, about 5 minutes
    /work/venv/bin/python benchmarks/dedup_quality.py --write-docs /tmp/reprints.jsonl   # also dump the set

docs/s: one core, feature extraction (CPU time summed over the worker processes) plus clustering;
hybrid grid rows add a Simhash pass and a SpotSigs pass (one segmentation too many); the
"end-to-end" lines time the best configurations alone, in one process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from newsdedup.evaluation.baselines import MinHashLSHBaseline, ShinglingJaccardBaseline
from newsdedup.evaluation.reprints import (
    REPRINT_KINDS,
    build_text_benchmark,
    write_jsonl,
)
from newsdedup.evaluation.scoring import (
    EDIT_BANDS,
    NEGATIVE_KINDS,
    Report,
    clusters_from_verdicts,
    evaluate,
)

TARGET_F1 = 0.98
TARGET_PRECISION = 0.99

KIND_SHORT = {"add": "add", "delete": "del", "replace": "repl", "reorder": "reord", "source": "src",
              "short": "short", "format": "fmt", "mixed": "mix"}
NEG_SHORT = {"disclaimer": "disc", "same_topic": "topic", "junk": "junk"}


# ---------------------------------------------------------------------------------------------
# Feature extraction in worker processes


_EXTRACTOR = None


def _init_worker(config) -> None:
    global _EXTRACTOR
    from newsdedup.dedup.features import FeatureExtractor

    _EXTRACTOR = FeatureExtractor(config)


def _extract_chunk(texts: Sequence[str]):
    start = time.process_time()
    out = [_EXTRACTOR.features(text) for text in texts]
    return out, time.process_time() - start


def extract_features(texts: Sequence[str], config, workers: int) -> tuple[list, float]:
    """Features of every text, in order, and the CPU seconds the extraction took (all workers)."""
    chunks = [texts[i : i + 64] for i in range(0, len(texts), 64)]
    features: list = []
    cpu = 0.0
    if workers <= 1:
        _init_worker(config)
        results = map(_extract_chunk, chunks)
        for part, seconds in results:
            features.extend(part)
            cpu += seconds
        return features, cpu
    with multiprocessing.get_context("fork").Pool(workers, initializer=_init_worker, initargs=(config,)) as pool:
        for part, seconds in pool.imap(_extract_chunk, chunks):
            features.extend(part)
            cpu += seconds
    return features, cpu


# ---------------------------------------------------------------------------------------------
# Prototypes of core changes (wrappers around the core's detectors)


class ContainmentFallback:
    """Prototype: when the wrapped detector finds no centre, accept the centre with the largest
    spot-multiset *containment* of the smaller document in the larger one.

    ``containment = sum(min counts) / size of the smaller multiset``; it must reach
    ``min_containment`` and the smaller document must hold at least ``min_spots`` spots (so a
    title-only page is not "contained" in everything).  Catches short versions (the first third
    of an article: Jaccard about 0.33, containment about 1) and copies with text added.
    """

    def __init__(self, base, *, min_containment: float = 0.8, min_spots: int = 20) -> None:
        self.base = base
        self.method = base.method
        self.min_containment = min_containment
        self.min_spots = min_spots
        self._postings: dict[int, list[tuple[Hashable, int]]] = defaultdict(list)
        self._sizes: dict[Hashable, int] = {}

    def best_match(self, features):
        match = self.base.best_match(features)
        if match is not None or not features.spots:
            return match
        from newsdedup.dedup.single_pass import Match

        size = sum(features.spots.values())
        shared: dict[Hashable, int] = defaultdict(int)
        for spot, count in features.spots.items():
            for key, stored in self._postings.get(spot, ()):
                shared[key] += min(count, stored)
        best_key, best = None, 0.0
        for key, common in shared.items():
            smaller = min(size, self._sizes[key])
            if smaller < self.min_spots:
                continue
            containment = common / smaller
            if containment >= self.min_containment and containment > best:
                best_key, best = key, containment
        return None if best_key is None else Match(best_key, best, best, "containment")

    def add(self, key, features) -> None:
        self.base.add(key, features)
        if features.spots:
            self._sizes[key] = sum(features.spots.values())
            for spot, count in features.spots.items():
                self._postings[spot].append((key, count))

    def __len__(self) -> int:
        return len(self.base)


class JunkGuard:
    """Prototype: a document with fewer than ``min_spots`` spot signatures (script, CSS, a bare
    title: no running Chinese text) gets no near-duplicate verdict and is not made a centre."""

    def __init__(self, base, *, min_spots: int = 5) -> None:
        self.base = base
        self.method = base.method
        self.min_spots = min_spots

    def _junk(self, features) -> bool:
        return not features.spots or sum(features.spots.values()) < self.min_spots

    def best_match(self, features):
        return None if self._junk(features) else self.base.best_match(features)

    def add(self, key, features) -> None:
        if not self._junk(features):
            self.base.add(key, features)

    def __len__(self) -> int:
        return len(self.base)


# ---------------------------------------------------------------------------------------------
# Runs


@dataclass(frozen=True)
class CoreRun:
    method: str  # simhash | spotsigs | hybrid
    simhash_features: str = "words"
    antecedents: str = "optimized"
    chain: int = 1
    max_distance: int = 3
    tau: float = 0.5
    containment: float | None = None  # prototype: ContainmentFallback(min_containment=...)
    containment_min_spots: int = 20
    junk_guard: int | None = None  # prototype: JunkGuard(min_spots=...)

    @property
    def label(self) -> str:
        parts = []
        if self.method in ("simhash", "hybrid"):
            parts.append(f"{self.simhash_features} k={self.max_distance}")
        if self.method in ("spotsigs", "hybrid"):
            parts.append(f"{self.antecedents[:3]} n={self.chain} tau={self.tau:g}")
        if self.containment is not None:
            parts.append(f"+contain>={self.containment:g}")
            if self.containment_min_spots != 20:
                parts.append(f"min{self.containment_min_spots}")
        if self.junk_guard is not None:
            parts.append(f"+junk<{self.junk_guard}")
        return " ".join(parts)

    @property
    def prototype(self) -> bool:
        return self.containment is not None or self.junk_guard is not None


@dataclass
class Result:
    family: str
    label: str
    report: Report
    docs_per_s: float
    prototype: bool = False
    f1_without_junk: float = 0.0


def score(docs: Sequence[dict], clusters: dict) -> tuple[Report, float]:
    """The report over all documents, and the F1 with the junk documents left out of the scoring."""
    kept = [d for d in docs if d["kind"] != "junk"]
    without_junk = evaluate(kept, {d["id"]: clusters[d["id"]] for d in kept}).overall.f1
    return evaluate(docs, clusters), without_junk


_GRID_STATE: tuple | None = None


def _grid_run(run: CoreRun) -> Result:
    docs, ids, cache = _GRID_STATE
    features, extract_cpu = cache.get(run)
    clusters, cluster_seconds = cluster_with_core(run, ids, features)
    report, f1_without_junk = score(docs, clusters)
    return Result(run.method, run.label, report, len(docs) / (extract_cpu + cluster_seconds), run.prototype,
                  f1_without_junk)


def cluster_with_core(run: CoreRun, ids: Sequence[str], features: Sequence) -> tuple[dict, float]:
    from newsdedup.dedup.engine import Deduplicator
    from newsdedup.dedup.single_pass import (
        NearSettings,
        SinglePassClusterer,
        make_detector,
    )

    near = NearSettings(method=run.method, simhash_max_distance=run.max_distance, spotsigs_tau=run.tau)
    detector = make_detector(near)
    if run.containment is not None:
        detector = ContainmentFallback(detector, min_containment=run.containment, min_spots=run.containment_min_spots)
    if run.junk_guard is not None:
        detector = JunkGuard(detector, min_spots=run.junk_guard)
    dedup = Deduplicator(SinglePassClusterer(detector))
    start = time.perf_counter()
    clusters = {}
    for doc_id, doc_features in zip(ids, features):
        verdict = dedup.process(doc_id, doc_features)
        clusters[doc_id] = verdict.cluster_id if verdict.cluster_id is not None else doc_id
    return clusters, time.perf_counter() - start


def core_grid(quick: bool) -> list[CoreRun]:
    ks = (3, 5, 8) if quick else (3, 4, 5, 6, 7, 8)
    taus = (0.3, 0.4, 0.5) if quick else (0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7)
    runs: list[CoreRun] = []
    for features in ("words", "word_shingles", "chars"):
        runs += [CoreRun("simhash", simhash_features=features, max_distance=k) for k in ks]
    for antecedents in ("basic", "optimized"):
        for chain in (1, 2, 3):
            runs += [CoreRun("spotsigs", antecedents=antecedents, chain=chain, tau=tau) for tau in taus]
    for features in ("words", "chars"):
        for chain in (1, 2):
            for k in (3, 4, 6) if not quick else (3, 6):
                runs += [CoreRun("hybrid", simhash_features=features, chain=chain, max_distance=k, tau=tau)
                         for tau in (0.3, 0.4, 0.5, 0.6)]
    return runs


def prototype_grid(best: dict[str, CoreRun], quick: bool) -> list[CoreRun]:
    """Containment and junk-guard prototypes on top of the best plain runs of each family."""
    runs: list[CoreRun] = []
    containments = (0.6, 0.7, 0.8, 0.9) if not quick else (0.7,)
    for family in ("spotsigs", "hybrid"):
        base = best.get(family)
        if base is None:
            continue
        for tau in sorted({base.tau, 0.35, 0.4, 0.45, 0.5}):
            for c in containments:
                runs.append(replace(base, tau=tau, containment=c))
                runs.append(replace(base, tau=tau, containment=c, junk_guard=5))
        for min_spots in (10, 40):
            runs.append(replace(base, tau=0.4, containment=0.7, containment_min_spots=min_spots, junk_guard=5))
        runs.append(replace(base, junk_guard=5))
    if "simhash" in best:
        runs.append(replace(best["simhash"], junk_guard=5))
    return runs


class FeatureCache:
    """Features extracted once per option set: Simhash passes (one per feature kind) and SpotSigs
    passes (one per antecedent list and chain length); a hybrid run combines one of each."""

    def __init__(self, texts: Sequence[str], workers: int) -> None:
        self.texts = texts
        self.workers = workers
        self._cache: dict[tuple, tuple[list, float]] = {}

    def _pass(self, key: tuple, **options) -> tuple[list, float]:
        if key not in self._cache:
            from newsdedup.dedup.features import FeatureConfig

            started = time.perf_counter()
            self._cache[key] = extract_features(self.texts, FeatureConfig(**options), self.workers)
            print(f"  features {key}: {time.perf_counter() - started:.1f}s wall, {self._cache[key][1]:.1f}s CPU",
                  file=sys.stderr, flush=True)
        return self._cache[key]

    def get(self, run: CoreRun) -> tuple[list, float]:
        """The run's features and the CPU seconds it took to extract them."""
        if run.method == "simhash" and run.junk_guard is None:
            return self._pass(("simhash", run.simhash_features), method="simhash", simhash_features=run.simhash_features)
        spots, spot_cpu = self._pass(("spotsigs", run.antecedents, run.chain), method="spotsigs",
                                     antecedents=run.antecedents, spot_chain=run.chain)
        if run.method == "spotsigs":
            return spots, spot_cpu
        from newsdedup.dedup.features import DocFeatures

        # (A Simhash run with the junk guard lands here too: the guard counts spot signatures.)
        hashes, hash_cpu = self.get(replace(run, method="simhash", junk_guard=None))
        # One segmentation too many is counted: a hybrid extractor segments once.
        combined = [DocFeatures(fingerprint=a.fingerprint, simhash=a.simhash, spots=b.spots)
                    for a, b in zip(hashes, spots)]
        return combined, hash_cpu + spot_cpu


def end_to_end(run: CoreRun, ids: Sequence[str], texts: Sequence[str]) -> float:
    """docs/s of one configuration alone: method-specific extraction in this process + clustering."""
    from newsdedup.dedup.features import FeatureConfig

    config = FeatureConfig(method=run.method, simhash_features=run.simhash_features, antecedents=run.antecedents,
                           spot_chain=run.chain)
    _init_worker(config)  # loads the resources once, outside the timing
    start = time.process_time()
    features = [_EXTRACTOR.features(text) for text in texts]
    cluster_with_core(run, ids, features)
    return len(texts) / (time.process_time() - start)


# ---------------------------------------------------------------------------------------------
# Printing


MAX_NEGATIVE_FP = 0.01


def _selection_key(result: Result) -> tuple:
    """Configurations meeting the precision target with at most 1% of hard negatives merged first, then F1."""
    o = result.report.overall
    return (o.precision >= TARGET_PRECISION and result.report.negatives_fp.value <= MAX_NEGATIVE_FP, o.f1)


def format_row(result: Result) -> str:
    o = result.report.overall
    kinds = " ".join(f"{result.report.by_kind[k].value:5.3f}" if k in result.report.by_kind else "  -  "
                     for k in REPRINT_KINDS)
    negs = " ".join(f"{result.report.fp_by_kind[k].value:5.3f}" for k in NEGATIVE_KINDS)
    return (f"{result.family:11s} {result.label:46s} {o.precision:6.4f} {o.recall:6.4f} {o.f1:6.4f} "
            f"{result.f1_without_junk:6.4f} | {kinds} | {negs} | {result.docs_per_s:6.0f}")


def header() -> str:
    kinds = " ".join(f"{KIND_SHORT[k]:>5s}" for k in REPRINT_KINDS)
    negs = " ".join(f"{NEG_SHORT[k]:>5s}" for k in NEGATIVE_KINDS)
    return (f"{'method':11s} {'configuration':46s} {'P':>6s} {'R':>6s} {'F1':>6s} {'F1-nj':>6s} | {kinds} | {negs} | "
            f"docs/s\n"
            f"{'':11s} {'':46s} {'':6s} {'':6s} {'':6s} {'':6s} | {'recall by reprint kind':^{len(kinds)}s} | "
            f"{'FP rate on negatives':^{len(negs)}s} |")


def print_table(title: str, results: Sequence[Result]) -> None:
    print(f"\n## {title}\n")
    print(header())
    for result in results:
        print(format_row(result))


# ---------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stories", type=int, default=600)
    parser.add_argument("--singletons", type=int, default=600)
    parser.add_argument("--workers", type=int, default=2, help="feature-extraction processes")
    parser.add_argument("--quick", action="store_true", help="a reduced grid")
    parser.add_argument("--no-core", action="store_true", help="baselines only (the core is not importable)")
    parser.add_argument("--write-docs", type=Path, help="also write the benchmark documents (JSON lines) here")
    parser.add_argument("--show-all", action="store_true", help="print every grid row, not only the best")
    parser.add_argument("--cli-check", action="store_true",
                        help="also run `newsdedup dedup` with the best plain SpotSigs settings and score its output")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    docs = build_text_benchmark(args.data_dir, seed=args.seed, stories=args.stories, singletons=args.singletons)
    if args.write_docs:
        write_jsonl(docs, args.write_docs)
    ids = [d["id"] for d in docs]
    texts = [d["text"] for d in docs]
    kinds = defaultdict(int)
    for d in docs:
        kinds[d["kind"]] += 1
    true_pairs = evaluate(docs, {i: i for i in ids}).overall.true_pairs
    print(f"# Reprint benchmark: {len(docs)} documents, {true_pairs} true pairs, seed {args.seed} "
          f"({time.perf_counter() - started:.1f}s to build)")
    print("kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))

    baselines: list[Result] = []
    for baseline, linkage in (
        (MinHashLSHBaseline(), "single_pass"),
        (MinHashLSHBaseline(), "union_find"),
        (MinHashLSHBaseline(threshold=0.3), "single_pass"),
        (ShinglingJaccardBaseline(unit="words", width=3), "single_pass"),
        (ShinglingJaccardBaseline(unit="words", width=3, threshold=0.3), "single_pass"),
        (ShinglingJaccardBaseline(unit="chars", width=5), "single_pass"),
    ):
        start = time.process_time()
        clusters = baseline.cluster(zip(ids, texts), linkage=linkage)
        seconds = time.process_time() - start
        label = baseline.name.split(" ", 1)[1] + f" {linkage}"
        report, f1_without_junk = score(docs, clusters)
        baselines.append(Result(baseline.name.split(" ")[0], label, report, len(docs) / seconds,
                                f1_without_junk=f1_without_junk))
    print_table("Baselines", baselines)

    if args.no_core:
        print(f"\nbenchmark runtime {time.perf_counter() - started:.0f}s")
        return 0

    cache = FeatureCache(texts, args.workers)
    results: list[Result] = []
    runs = core_grid(args.quick)
    print(f"\n({len(runs)} core configurations)", file=sys.stderr, flush=True)

    def run_all(grid: Sequence[CoreRun]) -> list[tuple[CoreRun, Result]]:
        for run in grid:
            cache.get(run)  # extract every pass first (each pass uses the worker processes)
        global _GRID_STATE
        _GRID_STATE = (docs, ids, cache)
        if args.workers <= 1:
            return list(zip(grid, map(_grid_run, grid)))
        # Forked workers share the extracted features; runs are independent.
        with multiprocessing.get_context("fork").Pool(args.workers) as pool:
            return list(zip(grid, pool.map(_grid_run, grid, chunksize=1)))

    plain = run_all(runs)
    results += [r for _, r in plain]
    best_runs: dict[str, CoreRun] = {}
    best_results: dict[str, Result] = {}
    for run, result in plain:
        if run.method not in best_results or _selection_key(result) > _selection_key(best_results[run.method]):
            best_runs[run.method], best_results[run.method] = run, result
    if args.show_all:
        print_table("All core configurations", [r for _, r in plain])
    # The best few per family.
    top: list[Result] = []
    for family in ("simhash", "spotsigs", "hybrid"):
        ranked = sorted((r for run, r in plain if run.method == family), key=_selection_key, reverse=True)
        top += ranked[:5]
    print_table("Core, best 5 per method (plain core; ranked: P >= 0.99 and <= 1% negatives merged first, then F1)",
                top)

    protos = run_all(prototype_grid(best_runs, args.quick))
    ranked = sorted((r for _, r in protos), key=_selection_key, reverse=True)
    print_table("Prototypes on the best plain configurations (containment fallback, junk guard)", ranked[:15])

    overall = sorted(results + [r for _, r in protos], key=_selection_key, reverse=True)
    best = overall[0]
    print(f"\nbest overall: {best.family} {best.label}: P {best.report.overall.precision:.4f} "
          f"R {best.report.overall.recall:.4f} F1 {best.report.overall.f1:.4f}; "
          f"target F1 >= {TARGET_F1} at P >= {TARGET_PRECISION}: "
          f"{'met' if best.report.overall.f1 >= TARGET_F1 and best.report.overall.precision >= TARGET_PRECISION else 'NOT met'}")
    print("\nrecall by edit-ratio band (best plain per method, best overall):")
    for result in [*best_results.values(), best]:
        bands = ", ".join(f"{band} {result.report.by_band[band].value:.3f} ({result.report.by_band[band].total})"
                          for band, _ in EDIT_BANDS if band in result.report.by_band)
        print(f"  {result.family} {result.label}: {bands}")

    print("\nend-to-end docs/s, one process (method-specific extraction + clustering):")
    all_runs = dict(plain + protos)
    by_label = {(r.family, r.label): run for run, r in all_runs.items()}
    for result in [*best_results.values(), best]:
        run = by_label[(result.family, result.label)]
        print(f"  {result.family} {result.label}: {end_to_end(run, ids, texts):.0f} docs/s")
    if args.cli_check:
        cli_check(docs, best_runs["spotsigs"], best_results["spotsigs"])
    print(f"\nbenchmark runtime {time.perf_counter() - started:.0f}s")
    return 0


def cli_check(docs: Sequence[dict], run: CoreRun, expected: Result) -> None:
    """Run ``newsdedup dedup`` on the documents and score its verdicts: must equal the in-process run."""
    import subprocess
    import tempfile

    from newsdedup.evaluation.reprints import read_jsonl

    with tempfile.TemporaryDirectory() as folder:
        source, verdicts = Path(folder) / "docs.jsonl", Path(folder) / "verdicts.jsonl"
        write_jsonl(docs, source)
        command = [sys.executable, "-m", "newsdedup.cli", "dedup", "--input", str(source), "--output", str(verdicts),
                   "--method", run.method, "--tau", str(run.tau), "--max-distance", str(run.max_distance),
                   "--simhash-features", run.simhash_features, "--antecedents", run.antecedents,
                   "--spot-chain", str(run.chain)]
        subprocess.run(command, check=True, capture_output=True)
        overall = evaluate(docs, clusters_from_verdicts(read_jsonl(verdicts))).overall
    same = abs(overall.f1 - expected.report.overall.f1) < 1e-9
    print(f"\nCLI check ({' '.join(command[2:4])} --method {run.method} {run.label}): P {overall.precision:.4f} "
          f"R {overall.recall:.4f} F1 {overall.f1:.4f}: {'same as in-process' if same else 'DIFFERS from in-process'}")


if __name__ == "__main__":
    raise SystemExit(main())
