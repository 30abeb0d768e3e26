"""Per-document cost and a quick quality check of E-Simhash and DWDCS on the shared Sina texts.

Three parts, all through the library's own code (FeatureExtractor, the detectors, Deduplicator):

1. Cost: every Sina text (or ``--limit``) through feature extraction (the worker's share: segmentation,
   content words, DWDCS key concepts) and through the Single-Pass stream (the main process's share:
   E-Simhash statistics, fingerprint and index; the DWDCS inverted index), one process, in corpus
   order; ms per document (mean, median, p90, p99, max).
2. Labelled pairs (``sina-news-2018/pairs.labelled.jsonl``): a pair is "found" when the method's own
   test accepts it (E-Simhash: fingerprints, computed when each text was first seen in the stream,
   within k bits; DWDCS: cosine and variance of key concepts) and "clustered" when the stream put both
   texts in one cluster (exact repeats included). DUP should be found, DIFF not.
3. ``--reprints``: the seeded reprint benchmark (newsdedup.evaluation.reprints) through Deduplicator for
   E-Simhash, DWDCS and the product's Simhash / SpotSigs / hybrid: pairwise P/R/F1, recall by reprint
   kind and by edit band, false positives on the hard negatives, ms per document.

    /work/venv/bin/python benchmarks/esimhash_dwdcs_cost.py                  # parts 1-2, about 3 minutes
    /work/venv/bin/python benchmarks/esimhash_dwdcs_cost.py --limit 2000     # quicker
    /work/venv/bin/python benchmarks/esimhash_dwdcs_cost.py --reprints       # also part 3 (a few minutes more)
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from newsdedup.dedup.dwdcs import KeyConceptIndex, cosine_similarity, is_near_duplicate, position_variance  # noqa: E402
from newsdedup.dedup.engine import Deduplicator  # noqa: E402
from newsdedup.dedup.esimhash import ESimhashIndex  # noqa: E402
from newsdedup.dedup.features import FeatureConfig, FeatureExtractor  # noqa: E402
from newsdedup.dedup.simhash import hamming  # noqa: E402
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"


def summary(seconds: Sequence[float]) -> str:
    ms = sorted(1000 * s for s in seconds)
    if not ms:
        return "no documents"
    pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
    return (f"mean {statistics.fmean(ms):6.2f}  median {statistics.median(ms):6.2f}  p90 {pick(0.9):6.2f}"
            f"  p99 {pick(0.99):7.2f}  max {ms[-1]:7.1f} ms")


def load_sina(data: Path, limit: int | None) -> list[dict]:
    path = data / "sina-news-2018" / "articles.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        articles = [json.loads(line) for line in lines]
    return articles[:limit] if limit else articles


def extract_timed(config: FeatureConfig, texts: Sequence[str]) -> tuple[list, list[float]]:
    extractor = FeatureExtractor(config)
    extractor.features("预热一下分词器。")  # load dictionaries outside the timing
    features, seconds = [], []
    for text in texts:
        start = time.perf_counter()
        features.append(extractor.features(text))
        seconds.append(time.perf_counter() - start)
    return features, seconds


def stream_timed(method: str, ids: Sequence[str], features: Sequence) -> tuple[dict[str, str], list[float], object]:
    """Cluster of every id and the seconds per document of the exact + near stages."""
    clusterer = SinglePassClusterer(make_detector(NearSettings(method=method)))
    dedup = Deduplicator(clusterer, expected=len(ids))
    clusters, seconds = {}, []
    for doc_id, doc in zip(ids, features):
        start = time.perf_counter()
        verdict = dedup.process(doc_id, doc)
        seconds.append(time.perf_counter() - start)
        clusters[doc_id] = verdict.cluster_id
    return clusters, seconds, clusterer.detector


def part_cost_and_pairs(data: Path, limit: int | None) -> None:
    articles = load_sina(data, limit)
    ids = [a["id"] for a in articles]
    texts = [a["text"] for a in articles]
    print(f"== cost: {len(texts)} Sina texts, one process, corpus order")

    e_features, e_extract = extract_timed(FeatureConfig(method="esimhash"), texts)
    d_features, d_extract = extract_timed(FeatureConfig(method="dwdcs"), texts)
    e_clusters, e_stream, _ = stream_timed("esimhash", ids, e_features)
    d_clusters, d_stream, d_detector = stream_timed("dwdcs", ids, d_features)
    print(f"  worker, E-Simhash (segment + content words): {summary(e_extract)}")
    print(f"  worker, DWDCS (segment + key concepts):     {summary(d_extract)}")
    print(f"  main,   E-Simhash (learn + fingerprint + index): {summary(e_stream)}")
    print(f"  main,   DWDCS (inverted index):                {summary(d_stream)}")
    sizes = [len(f.key_concepts) for f in d_features]
    print(f"  DWDCS key concepts per text: mean {statistics.fmean(sizes):.1f}; "
          f"{sum(s < d_detector.index.min_key_concepts for s in sizes)} texts under the guard of "
          f"{d_detector.index.min_key_concepts}")
    print(f"  E-Simhash centres {len(set(e_clusters.values()))}, DWDCS centres {len(set(d_clusters.values()))}")

    pairs_path = data / "sina-news-2018" / "pairs.labelled.jsonl"
    pairs = [json.loads(line) for line in pairs_path.open(encoding="utf-8")]
    position = {doc_id: i for i, doc_id in enumerate(ids)}
    pairs = [p for p in pairs if p["a"] in position and p["b"] in position]
    # E-Simhash fingerprints as the stream computed them: learn each text once, in corpus order.
    learner = ESimhashIndex()
    fingerprints = [learner.learn(f.content_words) for f in e_features]
    guard = KeyConceptIndex()
    print(f"\n== labelled pairs ({len(pairs)} with both texts loaded)")
    print("  label    n | E-Simhash found clustered | DWDCS found clustered | E-Simhash bits (sorted)")
    for label in ("DUP", "REWRITE", "JUNK", "DIFF"):
        rows = [p for p in pairs if p["label"] == label]
        if not rows:
            continue
        e_found = d_found = e_same = d_same = 0
        bits = []
        for p in rows:
            a, b = position[p["a"]], position[p["b"]]
            distance = hamming(fingerprints[a], fingerprints[b])
            bits.append(distance)
            e_found += distance <= learner.max_distance
            ka, kb = d_features[a].key_concepts, d_features[b].key_concepts
            d_found += guard.usable(ka) and guard.usable(kb) and is_near_duplicate(ka, kb)
            e_same += e_clusters[p["a"]] == e_clusters[p["b"]]
            d_same += d_clusters[p["a"]] == d_clusters[p["b"]]
        shown = sorted(bits)[:12]
        print(f"  {label:7s} {len(rows):3d} | {e_found:9d} {e_same:9d} | {d_found:5d} {d_same:9d} | {shown}")
    dup = [p for p in pairs if p["label"] == "DUP"]
    diff = [p for p in pairs if p["label"] == "DIFF"]
    closest_diff = max(
        (cosine_similarity(d_features[position[p["a"]]].key_concepts, d_features[position[p["b"]]].key_concepts), p)
        for p in diff
    ) if diff else None
    if closest_diff:
        cos, p = closest_diff
        variance = position_variance(d_features[position[p["a"]]].key_concepts, d_features[position[p["b"]]].key_concepts)
        print(f"  DWDCS: closest DIFF pair cosine {cos:.3f} (variance {variance:.4f});"
              f" lowest DUP cosine {min(cosine_similarity(d_features[position[p['a']]].key_concepts, d_features[position[p['b']]].key_concepts) for p in dup):.3f}")


def part_reprints(data: Path) -> None:
    from newsdedup.evaluation.reprints import build_text_benchmark
    from newsdedup.evaluation.scoring import evaluate

    docs = build_text_benchmark(data)
    print(f"\n== reprint benchmark: {len(docs)} documents (seed 1), one process")
    runs = [
        ("simhash 64 k=3", "simhash", {}),
        ("spotsigs tau=0.5", "spotsigs", {}),
        ("hybrid", "hybrid", {}),
        ("esimhash k=10", "esimhash", {}),
        ("esimhash k=16", "esimhash", {"esimhash_max_distance": 16}),
        ("dwdcs", "dwdcs", {}),
    ]
    features_by_method: dict[str, tuple[list, list[float]]] = {}
    for label, method, near in runs:
        if method not in features_by_method:
            features_by_method[method] = extract_timed(FeatureConfig(method=method), [d["text"] for d in docs])
        features, extract_seconds = features_by_method[method]
        clusterer = SinglePassClusterer(make_detector(NearSettings(method=method, **near)))
        dedup = Deduplicator(clusterer, expected=len(docs))
        predicted, seconds = {}, []
        for doc, doc_features in zip(docs, features):
            start = time.perf_counter()
            predicted[doc["id"]] = dedup.process(doc["id"], doc_features).cluster_id
            seconds.append(time.perf_counter() - start)
        report = evaluate(docs, predicted)
        o = report.overall
        kinds = " ".join(f"{k}={r.value:.2f}" for k, r in report.by_kind.items())
        bands = " ".join(f"{b}={r.value:.2f}" for b, r in report.by_band.items() if r.total)
        negatives = " ".join(f"{k}={r.hits}/{r.total}" for k, r in report.fp_by_kind.items())
        cost = 1000 * (statistics.fmean(extract_seconds) + statistics.fmean(seconds))
        print(f"  {label:17s} P {o.precision:.3f} R {o.recall:.3f} F1 {o.f1:.3f}  {cost:5.1f} ms/doc"
              f"\n      recall by kind: {kinds}\n      by edit band: {bands}\n      false positives: {negatives}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--limit", type=int, default=None, help="only the first N Sina texts (default: all)")
    parser.add_argument("--reprints", action="store_true", help="also run the reprint benchmark")
    args = parser.parse_args(argv)
    if not (args.data / "sina-news-2018").is_dir():
        print(f"no shared data at {args.data}: pass --data", file=sys.stderr)
        return 2
    part_cost_and_pairs(args.data, args.limit)
    if args.reprints:
        part_reprints(args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
