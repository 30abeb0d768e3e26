"""Every near-duplicate method of the evaluation, run over one document stream and scored.

The product's methods run exactly as ``newsdedup dedup`` runs them: :func:`newsdedup.analysis.analyse_text`
on worker processes (one segmentation per document, as in the crawl), then the exact stage and
Single-Pass clustering of :class:`~newsdedup.dedup.engine.Deduplicator` in input order.  Each appears
with the papers' parameters and, where a different setting measured better on the reprint benchmark,
a tuned row.  The baselines (:mod:`newsdedup.evaluation.baselines`) run in this process.

Per-document cost is CPU time on one core: the worker's feature extraction (timed inside the worker)
plus the main process's exact stage, clustering and index (timed around ``Deduplicator.process``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from newsdedup.analysis import AnalysisPool, analyse_text
from newsdedup.dedup.engine import EXACT_DUPLICATE, Deduplicator
from newsdedup.dedup.features import DocFeatures, FeatureConfig
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector
from newsdedup.evaluation.scoring import EDIT_BANDS, Rate, evaluate

__all__ = [
    "DEFAULT_METHOD",
    "MethodSpec",
    "method_specs",
    "report_row",
    "run_methods",
]

#: The product default (``NEWSDEDUP_NEAR_METHOD``); the evaluation's "default" rows are this one's.
DEFAULT_METHOD = "spotsigs"


@dataclass(frozen=True)
class MethodSpec:
    """One row of the comparison: a product method with some parameters, or a baseline."""

    name: str
    family: str  # "product" (the crawl's default settings), "paper" (the paper's own), "tuned", "baseline"
    description: str
    features: FeatureConfig | None = None
    near: NearSettings | None = None
    baseline: Callable[[], object] | None = None  # builds an object with .cluster(items) -> {id: cluster}


def method_specs(*, baselines: bool = True) -> list[MethodSpec]:
    """The evaluation's rows: product defaults, the papers' parameters, tuned settings, baselines."""
    spots, simhash = FeatureConfig(method="spotsigs"), FeatureConfig(method="simhash")
    specs = [
        MethodSpec("spotsigs", "product", "SpotSigs, tau 0.4, containment fallback 0.7 (the default)",
                   spots, NearSettings(method="spotsigs")),
        MethodSpec("spotsigs-paper", "paper", "SpotSigs as the paper runs it: multiset Jaccard >= 0.4 only",
                   spots, NearSettings(method="spotsigs", spotsigs_min_containment=None, spotsigs_min_signatures=4)),
        MethodSpec("hybrid", "product", "SpotSigs; when it finds nothing, the nearest Simhash within k=3",
                   FeatureConfig(method="hybrid"), NearSettings(method="hybrid")),
        MethodSpec("simhash", "paper", "Simhash 64-bit, tf-idf words, Hamming <= 3 (paper, product default)",
                   simhash, NearSettings(method="simhash")),
        MethodSpec("simhash-k8", "tuned", "Simhash 64-bit, Hamming <= 8 (best k on this benchmark)",
                   simhash, NearSettings(method="simhash", simhash_max_distance=8)),
        MethodSpec("esimhash", "paper", "E-Simhash 128-bit, W_t 90, Hamming <= 10 (paper, product default)",
                   FeatureConfig(method="esimhash"), NearSettings(method="esimhash")),
        MethodSpec("esimhash-k16", "tuned", "E-Simhash 128-bit, Hamming <= 16",
                   FeatureConfig(method="esimhash"), NearSettings(method="esimhash", esimhash_max_distance=16)),
        MethodSpec("dwdcs", "paper", "DWDCS l=30, p=20, cosine > 0.9, variance < 0.01 (paper, product default)",
                   FeatureConfig(method="dwdcs"), NearSettings(method="dwdcs")),
        MethodSpec("dwdcs-cos0.8", "tuned", "DWDCS, cosine > 0.8, variance < 0.02",
                   FeatureConfig(method="dwdcs"), NearSettings(method="dwdcs", dwdcs_cosine=0.8, dwdcs_max_variance=0.02)),
    ]
    if baselines:
        from newsdedup.evaluation import baselines as base

        specs += [
            MethodSpec("minhash-lsh", "baseline", "datasketch MinHashLSH, char 5-grams, 128 perm, Jaccard 0.5",
                       baseline=lambda: base.MinHashLSHBaseline(threshold=0.5)),
            MethodSpec("shingling", "baseline", "word 3-shingles, exact Jaccard >= 0.5 (Broder)",
                       baseline=lambda: base.ShinglingJaccardBaseline(threshold=0.5)),
        ]
        if hasattr(base, "IMatchBaseline"):
            specs.append(MethodSpec("i-match", "baseline", "I-Match: SHA-1 of the mid-IDF word set",
                                    baseline=lambda: base.IMatchBaseline()))
    return specs


def _timed_features(text: str) -> tuple[DocFeatures, float]:
    """Worker task: the features of ``text`` and the CPU seconds they took."""
    started = time.process_time()
    features = analyse_text(text)
    return features, time.process_time() - started


@dataclass
class MethodRun:
    spec: MethodSpec
    predicted: dict[Hashable, Hashable]
    exact: set[Hashable]
    features_ms: float | None
    cluster_ms: float
    wall_seconds: float


def _run_product(spec: MethodSpec, items: Sequence[tuple[Hashable, str]], features: list[tuple[DocFeatures, float]]) -> MethodRun:
    started = time.perf_counter()
    dedup = Deduplicator(SinglePassClusterer(make_detector(spec.near)))
    predicted: dict[Hashable, Hashable] = {}
    exact: set[Hashable] = set()
    cpu = time.process_time()
    for (key, _), (doc_features, _) in zip(items, features):
        verdict = dedup.process(key, doc_features)
        predicted[key] = verdict.cluster_id
        if verdict.status == EXACT_DUPLICATE:
            exact.add(key)
    cluster_cpu = time.process_time() - cpu
    n = max(1, len(items))
    return MethodRun(spec, predicted, exact, 1000 * sum(seconds for _, seconds in features) / n,
                     1000 * cluster_cpu / n, time.perf_counter() - started)


def _run_baseline(spec: MethodSpec, items: Sequence[tuple[Hashable, str]]) -> MethodRun:
    started = time.perf_counter()
    cpu = time.process_time()
    predicted = dict(spec.baseline().cluster(items))
    n = max(1, len(items))
    return MethodRun(spec, predicted, set(), None, 1000 * (time.process_time() - cpu) / n, time.perf_counter() - started)


def run_methods(
    items: Sequence[tuple[Hashable, str]],
    specs: Sequence[MethodSpec],
    *,
    workers: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[MethodRun]:
    """Cluster ``items`` (``(id, text)`` in stream order) with every spec; features once per feature config."""
    runs: list[MethodRun] = []
    cache: dict[FeatureConfig, list[tuple[DocFeatures, float]]] = {}
    for spec in specs:
        if progress:
            progress(spec.name)
        if spec.baseline is not None:
            runs.append(_run_baseline(spec, items))
            continue
        if spec.features not in cache:
            cache.clear()  # specs sharing a config are listed together; keep one config's features in memory
            pool = AnalysisPool(spec.features, workers=workers)
            pool.start()
            try:
                cache[spec.features] = list(pool.map(_timed_features, (text for _, text in items)))
            finally:
                pool.shutdown()
        runs.append(_run_product(spec, items, cache[spec.features]))
    return runs


def _rate(rate: Rate) -> dict:
    return {"hits": rate.hits, "total": rate.total, "rate": round(rate.value, 4)}


def report_row(run: MethodRun, docs: Sequence[Mapping]) -> dict:
    """One method's scores (JSON-ready): pairwise P/R/F1, recall by kind and edit band, hard-negative
    false positives, exact-repeat detection and cost."""
    report = evaluate(docs, run.predicted)
    # A whitespace-only copy and its original are one exact repeat pair, whichever of the two came first.
    original_of = {d["story"]: d["id"] for d in docs if d.get("kind") == "original"}
    exact_copies = [(d["id"], original_of.get(d["story"])) for d in docs if d.get("kind") == "format"]
    return {
        "method": run.spec.name,
        "family": run.spec.family,
        "description": run.spec.description,
        "precision": round(report.overall.precision, 4),
        "recall": round(report.overall.recall, 4),
        "f1": round(report.overall.f1, 4),
        "pairs": {"true": report.overall.true_pairs, "predicted": report.overall.predicted_pairs,
                  "correct": report.overall.correct_pairs},
        "negatives_fp_rate": round(report.negatives_fp.value, 4),
        "negatives_fp": _rate(report.negatives_fp),
        "fp_by_kind": {k: _rate(v) for k, v in report.fp_by_kind.items()},
        "recall_by_kind": {k: _rate(v) for k, v in sorted(report.by_kind.items())},
        "recall_by_band": {k: _rate(report.by_band[k]) for k, _ in EDIT_BANDS if k in report.by_band},
        # Whitespace-only copies are exact repeats after normalisation: the exact stage's share of them.
        "exact_detection": (round(sum(1 for copy, original in exact_copies if copy in run.exact or original in run.exact)
                                  / len(exact_copies), 4)
                            if exact_copies and run.spec.baseline is None else None),
        "ms_per_doc": {
            "features": None if run.features_ms is None else round(run.features_ms, 3),
            "dedup": round(run.cluster_ms, 3),
            "total": round((run.features_ms or 0.0) + run.cluster_ms, 3),
        },
        "wall_seconds": round(run.wall_seconds, 2),
    }

