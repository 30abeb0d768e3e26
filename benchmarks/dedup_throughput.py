"""``newsdedup dedup`` throughput on the 9,054 Sina texts: end to end, per stage, and memory per document.

    python benchmarks/dedup_throughput.py                      # everything, 3 repeats, medians
    python benchmarks/dedup_throughput.py --parts stages memory --repeats 5
    python benchmarks/dedup_throughput.py --parts memory --baseline /tmp/spotsigs_index_before.py
    git show 95e2417:newsdedup/dedup/spotsigs_index.py > /tmp/spotsigs_index_before.py   # e.g. that one

For each method (simhash, spotsigs, hybrid):

* ``cli``: ``python -m newsdedup.cli dedup --input <texts> --output <tmp> --method M --workers N`` for
  N = 0, 1, 2, wall time of the whole process (start-up, dictionary loading and worker spawning included),
  as docs/s; and the same command on one document, whose time is the fixed start-up cost, so that
  ``steady docs/s = docs / (wall - start-up)``. The input is the Sina file decompressed to a temporary
  file (the CLI reads plain JSON lines).
* ``stages``: the same work inline in this process, timed per document and stage: normalise, exact
  fingerprint, segmentation (rjieba via "auto"; jieba timed on the same texts for comparison, outside the
  totals), token filter, Simhash features + hash, SpotSigs spots + hashing, exact stage, near stage
  (index query + add, i.e. Single-Pass). The stage code is checked to produce exactly what
  ``FeatureExtractor.features`` produces.
* ``memory``: the dedup state after all 9,054 documents (tracemalloc, allocations attributed to the code
  that made them), split into the fingerprint table (dict, refs and fingerprint bytes), the Bloom filter
  (bit arrays), the Simhash index, the SpotSigs index, what the detector itself allocates, spot
  Counters and boxed spot hashes kept alive (the hybrid kept a copy of each centre's spots before it
  asked the index instead), and the document keys (the ids, shared by all of them). ``--baseline PATH``
  repeats it with the SpotSigsIndex of another file (before/after; one without ``signatures`` and
  ``jaccard``, which the detectors call, gets them from a subclass that adds no state).

Stage and CLI times are medians of ``--repeats`` runs; the machine is shared, so the load average is
printed. Needs ../shared/data (the Sina texts); never copies them into the project.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

from newsdedup.dedup.engine import Deduplicator
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor
from newsdedup.dedup.simhash import default_idf, simhash, word_features
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector
from newsdedup.dedup.spotsigs import load_antecedents, multiset_jaccard, spot_signatures
from newsdedup.text.hashing import hash64, text_fingerprint
from newsdedup.text.normalize import exact_form, is_word, normalize_text
from newsdedup.text.segment import get_segmenter
from newsdedup.text.stopwords import load_stopwords

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
METHODS = ("simhash", "spotsigs", "hybrid")
FEATURE_STAGES = ("normalise", "fingerprint", "segment", "token_filter", "simhash", "spots")
STAGES_OF = {
    "simhash": ("normalise", "fingerprint", "segment", "token_filter", "simhash", "exact", "near"),
    "spotsigs": ("normalise", "fingerprint", "segment", "token_filter", "spots", "exact", "near"),
    "hybrid": ("normalise", "fingerprint", "segment", "token_filter", "simhash", "spots", "exact", "near"),
}


def load_texts(data: Path) -> list[tuple[str, str]]:
    path = data / "sina-news-2018" / "articles.jsonl.gz"
    if not path.is_file():
        raise SystemExit(f"{path} not found: pass --data pointing at the shared data folder")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [(doc["id"], doc["text"]) for doc in map(json.loads, lines)]


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


# ---------------------------------------------------------------------------------------------- cli --
def run_cli(texts: list[tuple[str, str]], repeats: int, workers: list[int]) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="dedup-throughput-") as folder:
        full, single, output = Path(folder, "texts.jsonl"), Path(folder, "one.jsonl"), Path(folder, "out.jsonl")
        with full.open("w", encoding="utf-8") as out:
            for doc_id, text in texts:
                out.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
        single.write_text(json.dumps({"id": "one", "text": texts[0][1]}, ensure_ascii=False) + "\n", encoding="utf-8")

        def wall(method: str, count: int, path: Path) -> tuple[float, str]:
            command = [sys.executable, "-m", "newsdedup.cli", "dedup", "--input", str(path), "--output",
                       str(output), "--method", method, "--workers", str(count)]
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - started
            if done.returncode:
                raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
            return seconds, done.stderr.strip().splitlines()[-1]

        for method in METHODS:
            for count in workers:
                walls, startups, summary = [], [], ""
                for _ in range(repeats):
                    seconds, summary = wall(method, count, full)
                    walls.append(seconds)
                    startups.append(wall(method, count, single)[0])
                median, startup = statistics.median(walls), statistics.median(startups)
                row = {
                    "method": method, "workers": count, "wall_s": round(median, 2),
                    "wall_runs_s": [round(w, 2) for w in walls], "docs_per_s": round(len(texts) / median, 1),
                    "startup_s": round(startup, 2),
                    "steady_docs_per_s": round(len(texts) / max(median - startup, 1e-9), 1),
                    "result": summary, "load_average": load_average(),
                }
                rows.append(row)
                print(json.dumps(row, ensure_ascii=False), flush=True)
    return rows


# ------------------------------------------------------------------------------------------- stages --
class StageFeatures:
    """FeatureExtractor.features, split into timed stages (and jieba timed beside it)."""

    def __init__(self) -> None:
        self.segmenter = get_segmenter("auto")
        self.jieba = get_segmenter("jieba")
        self.stopwords = load_stopwords(None)
        self.idf, self.default_idf = default_idf()
        self.antecedents = load_antecedents("optimized")

    def features(self, text: str, seconds: dict[str, float]) -> DocFeatures:
        clock = time.perf_counter
        t0 = clock()
        normalized = normalize_text(text)
        t1 = clock()
        doc = DocFeatures(fingerprint=text_fingerprint(exact_form(normalized)))
        t2 = clock()
        cut = self.segmenter.cut(normalized)
        t3 = clock()
        tokens = [token for token in cut if is_word(token)]
        t4 = clock()
        weighted = word_features(tokens, self.stopwords, idf=self.idf, default_idf=self.default_idf)
        doc.simhash = simhash(weighted, bits=64)
        t5 = clock()
        hashed: Counter[int] = Counter()
        for spot, count in spot_signatures(tokens, self.antecedents, chain_length=1, distance=1).items():
            hashed[hash64(spot)] += count
        doc.spots = hashed
        t6 = clock()
        self.jieba.cut(normalized)
        t7 = clock()
        for stage, elapsed in zip(
            (*FEATURE_STAGES, "segment_jieba"), (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6)
        ):
            seconds[stage] += elapsed
        return doc


def check_stage_features(texts: list[tuple[str, str]], stages: StageFeatures, sample: int = 300) -> None:
    """The split code must compute what the product computes, or its timings mean nothing."""
    reference = FeatureExtractor(FeatureConfig(method="hybrid"))
    scratch: Counter[str] = Counter()
    for _, text in texts[:: max(1, len(texts) // sample)]:
        mine, theirs = stages.features(text, scratch), reference.features(text)
        if (mine.fingerprint, mine.simhash, mine.spots) != (theirs.fingerprint, theirs.simhash, theirs.spots):
            raise SystemExit("the stage split no longer matches FeatureExtractor.features: update this benchmark")


def timed_dedup(method: str, keyed: list[tuple[str, DocFeatures]], seconds: dict[str, float]) -> Counter[str]:
    """Deduplicator.process over precomputed features; splits its time into exact and near (Single-Pass)."""
    dedup = Deduplicator(SinglePassClusterer(make_detector(NearSettings(method=method))))
    clusterer = dedup.clusterer
    assign, near = clusterer.assign, [0.0]

    def timed_assign(key, features):
        started = time.perf_counter()
        try:
            return assign(key, features)
        finally:
            near[0] += time.perf_counter() - started

    clusterer.assign = timed_assign  # type: ignore[method-assign]
    statuses: Counter[str] = Counter()
    started = time.perf_counter()
    for key, features in keyed:
        statuses[dedup.process(key, features).status] += 1
    total = time.perf_counter() - started
    seconds["near"] += near[0]
    seconds["exact"] += total - near[0]
    return statuses


def run_stages(texts: list[tuple[str, str]], repeats: int) -> dict:
    stages = StageFeatures()
    check_stage_features(texts, stages)
    runs: dict[str, list[dict[str, float]]] = {method: [] for method in METHODS}
    jieba_runs, statuses = [], {}
    for _ in range(repeats):
        seconds: Counter[str] = Counter()
        keyed = [(doc_id, stages.features(text, seconds)) for doc_id, text in texts]
        jieba_runs.append(seconds["segment_jieba"])
        for method in METHODS:
            per_method = Counter({stage: seconds[stage] for stage in STAGES_OF[method] if stage in FEATURE_STAGES})
            statuses[method] = dict(timed_dedup(method, keyed, per_method))
            runs[method].append(per_method)
    jieba_ms = round(statistics.median(jieba_runs) / len(texts) * 1e3, 3)
    result: dict = {"load_average": load_average(), "jieba_ms_per_doc": jieba_ms}
    for method in METHODS:
        medians = {stage: statistics.median(run[stage] for run in runs[method]) for stage in STAGES_OF[method]}
        total = sum(medians.values())
        result[method] = {
            "ms_per_doc": {stage: round(value / len(texts) * 1e3, 3) for stage, value in medians.items()},
            "share": {stage: round(value / total, 3) for stage, value in medians.items()},
            "total_ms_per_doc": round(total / len(texts) * 1e3, 3),
            "docs_per_s_one_core": round(len(texts) / total, 1),
            # With jieba instead of rjieba: the same total with the segmentation swapped.
            "total_ms_per_doc_with_jieba": round(
                (total - medians["segment"] + statistics.median(jieba_runs)) / len(texts) * 1e3, 3
            ),
            "statuses": statuses[method],
        }
    return result


# ------------------------------------------------------------------------------------------- memory --
# tracemalloc attributes each block to the innermost frame of these files (the first match walking out).
_COMPONENT_OF_FILE = {
    "spotsigs_index.py": "spotsigs_index",
    "simhash_index.py": "simhash_index",
    "single_pass.py": "detector_own",
    "engine.py": "fingerprint_table",
    "bloom.py": "bloom",
    "pybloom_live": "bloom",
}


# Fresh copies of each document's features are made while tracing (features come from worker processes in
# the CLI, so whatever the state keeps of them is its own); each copy is one line, named by its function.
def _copy_key(key: str) -> str:
    return "".join(key)


def _copy_fingerprint(fingerprint: bytes) -> bytes:
    return bytes(bytearray(fingerprint))


def _copy_spot_hashes(spots: Counter[int]) -> list[int]:
    return [int(str(spot)) for spot in spots]


def _copy_spot_counter(hashes: list[int], spots: Counter[int]) -> Counter[int]:
    return Counter(dict(zip(hashes, spots.values())))


def _copy_features(features: DocFeatures) -> DocFeatures:
    spots = features.spots
    if spots is not None:
        spots = _copy_spot_counter(_copy_spot_hashes(spots), spots)
    return DocFeatures(_copy_fingerprint(features.fingerprint), features.simhash, spots)


_COPY_COMPONENT = {
    _copy_key.__code__.co_firstlineno + 1: "document_keys",
    _copy_fingerprint.__code__.co_firstlineno + 1: "fingerprint_table",
    # Boxed 64-bit spot hashes kept alive: by the hybrid's Counters, or by an index that keeps spot objects.
    _copy_spot_hashes.__code__.co_firstlineno + 1: "spot_hash_objects",
    # A detector that keeps a document's spot Counter (the hybrid did, before SpotSigsIndex.jaccard).
    _copy_spot_counter.__code__.co_firstlineno + 1: "kept_spot_counters",
}


def _component(traceback: tracemalloc.Traceback, spotsigs_file: str) -> str:
    for frame in reversed(traceback):  # innermost first
        if frame.filename == spotsigs_file:
            return "spotsigs_index"
        if frame.filename == __file__:
            if frame.lineno in _COPY_COMPONENT:
                return _COPY_COMPONENT[frame.lineno]
            continue
        for name, component in _COMPONENT_OF_FILE.items():
            if name in frame.filename:
                return component
    return "other"


def measure_memory(
    method: str, keyed: list[tuple[str, DocFeatures]], index_class=None, index_file: str | None = None
) -> dict:
    """Bytes of dedup state after every document, by component (tracemalloc), with a fresh copy of each
    document's features made while tracing, so what the state keeps of them is counted.

    Tracing slows searches tenfold and they leave no state, so a first, untraced run records each
    ``best_match`` answer and the traced run replays them: the same adds, the same state.
    """
    from newsdedup.dedup import single_pass

    original = single_pass.SpotSigsIndex
    spotsigs_file = index_file or sys.modules[original.__module__].__file__
    if index_class is not None:
        single_pass.SpotSigsIndex = index_class
    try:
        dedup = Deduplicator(SinglePassClusterer(make_detector(NearSettings(method=method))))
        search, answers = dedup.clusterer.detector.best_match, []

        def record(features: DocFeatures):
            answers.append(search(features))
            return answers[-1]

        dedup.clusterer.detector.best_match = record
        for key, features in keyed:
            dedup.process(key, features)
        del dedup
        replay = iter(answers)
        gc.collect()
        tracemalloc.start(8)
        try:
            dedup = Deduplicator(SinglePassClusterer(make_detector(NearSettings(method=method))))
            dedup.clusterer.detector.best_match = lambda features: next(replay)
            for key, features in keyed:
                dedup.process(_copy_key(key), _copy_features(features))
            del dedup.clusterer.detector.best_match  # the replay closure is not state
            gc.collect()
            snapshot = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    finally:
        single_pass.SpotSigsIndex = original
    components: Counter[str] = Counter()
    for trace in snapshot.traces:
        components[_component(trace.traceback, spotsigs_file)] += trace.size
    detector = dedup.clusterer.detector
    centres = len(detector)
    result = {
        "method": method,
        "index": "baseline" if index_class is not None else "current",
        "documents": len(keyed),
        "centres": centres,
        "bytes": dict(components),
        "bytes_per_document": {name: round(size / len(keyed)) for name, size in components.items()},
        # Sized up front for 100,000 fingerprints (Deduplicator's default), so fixed, not per document.
        "bloom_bit_array_bytes": dedup.exact.bloom.size_bytes,
    }
    spotsigs_index = getattr(getattr(detector, "spots", None), "index", None)
    if spotsigs_index is not None and len(spotsigs_index):
        result["spotsigs_bytes_per_indexed_centre"] = round(components["spotsigs_index"] / len(spotsigs_index))
    result["total_bytes_per_document"] = round(sum(components.values()) / len(keyed))
    return result


def with_lookups(index_class):
    """An index class of the version before ``signatures``/``jaccard`` existed, given those two methods
    (read from its internals, no state added, so its memory is what is measured)."""
    if hasattr(index_class, "signatures") and hasattr(index_class, "jaccard"):
        return index_class

    class WithLookups(index_class):
        def signatures(self, key):
            seq = self._seq_of.get(key)
            if seq is None:
                return None
            doc = self._docs[seq]
            return Counter({self._spot_of[spot_id]: count for spot_id, count in zip(doc.ids, doc.counts)})

        def jaccard(self, key, signatures):
            stored = self.signatures(key)
            return None if stored is None else multiset_jaccard(signatures, stored)

    return WithLookups


def run_memory(texts: list[tuple[str, str]], baseline: str | None) -> list[dict]:
    extractor = FeatureExtractor(FeatureConfig(method="hybrid"))
    keyed = [(doc_id, extractor.features(text)) for doc_id, text in texts]
    rows = []
    baseline_class = baseline_file = None
    if baseline:
        spec = importlib.util.spec_from_file_location("baseline_spotsigs_index", baseline)
        if spec is None or spec.loader is None:
            raise SystemExit(f"--baseline {baseline!r} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        baseline_class, baseline_file = with_lookups(module.SpotSigsIndex), os.path.abspath(baseline)
    for method in METHODS:
        rows.append(measure_memory(method, keyed))
        print(json.dumps(rows[-1]), flush=True)
        if baseline_class is not None and method != "simhash":
            rows.append(measure_memory(method, keyed, baseline_class, baseline_file))
            print(json.dumps(rows[-1]), flush=True)
    return rows


# ------------------------------------------------------------------------------------------- report --
def print_report(results: dict) -> None:
    if "cli" in results:
        print("\nCLI end to end (median wall, start-up included; steady = without the one-document start-up)")
        print(f"{'method':<10}{'workers':>8}{'wall s':>9}{'docs/s':>9}{'start-up s':>12}{'steady docs/s':>15}")
        for row in results["cli"]:
            print(f"{row['method']:<10}{row['workers']:>8}{row['wall_s']:>9}{row['docs_per_s']:>9}"
                  f"{row['startup_s']:>12}{row['steady_docs_per_s']:>15}")
    if "stages" in results:
        stages = results["stages"]
        names = ("normalise", "fingerprint", "segment", "token_filter", "simhash", "spots", "exact", "near")
        print(f"\nInline, one process: ms per document (share); jieba segmentation {stages['jieba_ms_per_doc']} ms/doc")
        print(f"{'method':<10}" + "".join(f"{name:>15}" for name in names) + f"{'total':>9}{'docs/s':>9}")
        for method in METHODS:
            row = stages[method]
            cells = "".join(
                f"{row['ms_per_doc'][name]:>8.3f} ({row['share'][name]:>4.0%})"
                if name in row["ms_per_doc"]
                else f"{'-':>15}"
                for name in names
            )
            print(f"{method:<10}{cells}{row['total_ms_per_doc']:>9.3f}{row['docs_per_s_one_core']:>9}")
    if "memory" in results:
        names = ("fingerprint_table", "bloom", "simhash_index", "spotsigs_index", "detector_own",
                 "kept_spot_counters", "spot_hash_objects", "document_keys", "other")
        print("\nDedup state after all documents: bytes per document by component (tracemalloc; the Bloom"
              " filter is sized for 100k fingerprints up front)")
        print(f"{'method':<10}{'index':>9}{'centres':>8}" + "".join(f"{name:>19}" for name in names) + f"{'total':>8}")
        for row in results["memory"]:
            cells = "".join(f"{row['bytes_per_document'].get(name, 0):>19}" for name in names)
            print(f"{row['method']:<10}{row['index']:>9}{row['centres']:>8}{cells}{row['total_bytes_per_document']:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--parts", nargs="+", choices=("cli", "stages", "memory"), default=["cli", "stages", "memory"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--baseline", help="path of another spotsigs_index.py for the memory part (before/after)")
    parser.add_argument("--limit", type=int, help="only the first N texts (a quick check)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.repeats < 1 or min(args.workers) < 0 or (args.limit is not None and args.limit < 1):
        parser.error("--repeats and --limit must be >= 1 and --workers >= 0")
    texts = load_texts(args.data)[: args.limit]
    results: dict = {"documents": len(texts), "cpus": os.cpu_count(), "load_average_before": load_average()}
    print(json.dumps(results), flush=True)
    if "stages" in args.parts:
        results["stages"] = run_stages(texts, args.repeats)
        print(json.dumps(results["stages"]), flush=True)
    if "memory" in args.parts:
        results["memory"] = run_memory(texts, args.baseline)
    if "cli" in args.parts:
        results["cli"] = run_cli(texts, args.repeats, args.workers)
    results["load_average_after"] = load_average()
    print_report(results)
    print(f"\nload average before {results['load_average_before']}, after {results['load_average_after']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
