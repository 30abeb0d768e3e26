"""Every near-duplicate method of the evaluation run over document streams, and the tuning of their parameters.

The product's methods run as ``newsdedup dedup`` runs them: features from the product's
:class:`~newsdedup.crawl.analysis.AnalysisPool` (worker processes, one per core), then the exact stage and
Single-Pass of :class:`~newsdedup.dedup.engine.DedupEngine` in stream order, with the row's
:class:`~newsdedup.dedup.single_pass.NearSettings` (in the same worker processes, one stream and row per
task).  A row is the shipped defaults, the paper's parameters, or parameters :func:`tune` chose on the tune
split of the reprint benchmark; the figures reported are those of the held-out test split.  Baselines
(:mod:`newsdedup.evaluation.baselines`) run over the texts, or over the product's features when their row
names a feature configuration.  Cost is CPU time on one core: the worker's features plus the clustering.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from newsdedup.crawl.analysis import AnalysisPool, analyse_text
from newsdedup.dedup.engine import EXACT_DUPLICATE, DedupEngine
from newsdedup.dedup.features import DocFeatures, FeatureConfig
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector
from newsdedup.evaluation.scoring import Report, evaluate

#: The product default (``NEWSDEDUP_NEAR_METHOD``); the evaluation's "default" rows are this one's.
DEFAULT_METHOD = "spotsigs"
#: Product methods in the order their features are computed (one configuration in memory at a time).
METHODS = ("spotsigs", "hybrid", "simhash", "esimhash", "dwdcs")
#: The papers' own parameters, where they differ from the shipped defaults.  SpotSigs: Jaccard only (no
#: containment fallback), documents under 4 spots skipped as in the original authors' implementation.
PAPER = {"spotsigs": NearSettings(spotsigs_min_containment=None, spotsigs_min_signatures=4)}
#: What :func:`tune` searches on the tune split: NearSettings field -> candidate values, per method.
TUNING_GRID: dict[str, dict[str, tuple]] = {
    "spotsigs": {"spotsigs_tau": (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6),
                 "spotsigs_min_containment": (None, 0.6, 0.7, 0.8, 0.9),
                 "spotsigs_min_signatures": (3, 5, 8), "spotsigs_containment_min_spots": (5, 10, 20)},
    "simhash": {"simhash_max_distance": tuple(range(3, 13))},
    "esimhash": {"esimhash_max_distance": (10, 16, 22, 28, 34, 40)},
    "dwdcs": {"dwdcs_cosine": (0.7, 0.8, 0.9), "dwdcs_max_variance": (0.01, 0.02, 0.04, 0.08)},
}
#: The bar a tuned setting must pass before its F1 counts: what a monitoring user can live with (merging two
#: different stories hides one of them; pairwise precision alone would drown a few such merges in true pairs).
MIN_PRECISION, MAX_NEGATIVES_MERGED = 0.99, 0.01
#: A parameter moves from its current value only for a larger F1 gain: on ~3,000 documents less is a handful
#: of pairs, noise rather than a reason to change a shipped default.
MIN_GAIN = 0.002


@dataclass(frozen=True)
class MethodSpec:
    """One row of a comparison: a product method with some parameters, or a baseline."""

    name: str
    family: str  # "product" (shipped defaults), "paper", "tuned" or "baseline"
    description: str
    features: FeatureConfig | None = None  # the product's features; a baseline then clusters those
    near: NearSettings | None = None
    baseline: Callable[[], object] | None = None  # picklable; builds an object with .cluster(items)


def describe(near: NearSettings) -> str:
    """The parameters of a product row, in words."""
    if near.method in ("spotsigs", "hybrid"):
        containment = near.spotsigs_min_containment
        text = (f"tau {near.spotsigs_tau}, containment fallback "
                f"{f'{containment} (from {near.spotsigs_containment_min_spots} spots)' if containment else 'off'}, "
                f"junk guard {near.spotsigs_min_signatures} spots")
        if containment and near.spotsigs_containment_whole_below is not None:
            text += f", wholly contained below length ratio {near.spotsigs_containment_whole_below}"
        if containment and near.spotsigs_containment_min_share is not None:
            text += f", sharing {near.spotsigs_containment_min_share} of the longer text"
        return text + (f"; else the nearest Simhash within k={near.simhash_max_distance}" if near.method == "hybrid" else "")
    if near.method == "simhash":
        return f"{near.simhash_bits}-bit, tf-idf words, k={near.simhash_max_distance}"
    if near.method == "esimhash":
        return f"128-bit, W_t {near.esimhash_weight_cap:g}, k={near.esimhash_max_distance}"
    return f"l=30, p=20, cosine > {near.dwdcs_cosine}, variance < {near.dwdcs_max_variance}"


def product_specs(method: str, tuned: NearSettings | None = None) -> list[MethodSpec]:
    """The rows of one product method: its defaults (the paper's, where the product ships them), the paper's
    parameters where the defaults differ, and ``tuned`` where it differs from both."""
    config, default = FeatureConfig(method=method), NearSettings(method=method)
    paper = replace(PAPER[method], method=method) if method in PAPER else default
    family = "product" if method == DEFAULT_METHOD or method == "hybrid" else "paper"
    specs = [MethodSpec(method, family, describe(default), config, default)]
    if paper != default:
        specs.append(MethodSpec(f"{method}-paper", "paper", describe(paper), config, paper))
    if tuned is not None and tuned not in (default, paper):
        specs.append(MethodSpec(f"{method}-tuned", "tuned", describe(tuned), config, tuned))
    return specs


def baseline_specs() -> list[MethodSpec]:
    from newsdedup.evaluation import baselines

    return [
        MethodSpec("minhash-lsh", "baseline", "datasketch MinHashLSH, char 5-grams, 128 perm, Jaccard 0.5",
                   baseline=partial(baselines.MinHashLSHBaseline, threshold=0.5)),
        MethodSpec("shingling", "baseline", "word 3-shingles, exact Jaccard >= 0.5 (Broder)",
                   baseline=partial(baselines.ShinglingBaseline, threshold=0.5)),
        MethodSpec("i-match", "baseline", "I-Match: SHA-1 of the mid-IDF word set", baseline=baselines.IMatchBaseline),
    ]


@dataclass
class MethodRun:
    spec: MethodSpec
    predicted: dict[Hashable, Hashable]  # doc id -> cluster
    exact: set[Hashable]  # documents the exact stage caught
    features_ms: float | None
    cluster_ms: float


def _timed_features(text: str) -> tuple[DocFeatures, float]:
    started = time.process_time()
    return analyse_text(text), time.process_time() - started


def _cluster(spec: MethodSpec, items: Sequence[tuple[Hashable, object]]) -> tuple[dict, set, float]:
    """One stream through a row: the product's exact stage and Single-Pass, or the baseline."""
    started = time.process_time()
    if spec.baseline is not None:
        return dict(spec.baseline().cluster(items)), set(), time.process_time() - started
    dedup = DedupEngine.in_memory(SinglePassClusterer(make_detector(spec.near)), expected=len(items))
    predicted, exact = {}, set()
    for key, features in items:
        verdict = dedup.process(key, features)
        predicted[key] = verdict.cluster_id
        if verdict.status == EXACT_DUPLICATE:
            exact.add(key)
    return predicted, exact, time.process_time() - started


class Runner:
    """Runs rows over streams of ``(id, text)``: each stream through each row from a fresh state.

    Features are computed once per feature configuration over the texts of all streams, by a pool of
    worker processes kept while the configuration stays the same (the next call may reuse both); the
    streams and rows are clustered in the same processes.  Use it as a context manager.
    """

    def __init__(self, workers: int | None = None, progress: Callable[[str], None] | None = None) -> None:
        self.workers, self.progress = workers, progress or (lambda label: None)
        self._pool: AnalysisPool | None = None
        self._features: dict[str, tuple[DocFeatures, float]] = {}

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _use(self, config: FeatureConfig) -> AnalysisPool:
        if self._pool is None or self._pool.config != config:
            self.__exit__()
            self._pool, self._features = AnalysisPool(config, workers=self.workers), {}
            self._pool.start()
        return self._pool

    def run(self, streams: Sequence[Sequence[tuple[Hashable, str]]], specs: Sequence[MethodSpec]
            ) -> list[list[MethodRun]]:
        """``runs[stream][row]``."""
        runs: list[list[MethodRun]] = [[None] * len(specs) for _ in streams]  # type: ignore[list-item]
        for config in dict.fromkeys(s.features for s in specs):
            pool = self._use(config) if config else self._pool or self._use(FeatureConfig(method="simhash"))
            if config is not None:
                texts = [t for t in dict.fromkeys(text for stream in streams for _, text in stream)
                         if t not in self._features]
                self._features.update(zip(texts, pool.map(_timed_features, texts)))
            jobs = []
            for j, stream in enumerate(streams):
                items = [(key, self._features[text][0] if config else text) for key, text in stream]
                cost = 1000 * sum(self._features[t][1] for _, t in stream) / max(1, len(stream)) if config else None
                jobs += [(j, i, spec, cost, pool.submit(_cluster, spec, items))
                         for i, spec in enumerate(specs) if spec.features == config]
            for j, i, spec, cost, job in jobs:
                predicted, exact, seconds = job.result()
                runs[j][i] = MethodRun(spec, predicted, exact, cost, 1000 * seconds / max(1, len(streams[j])))
                self.progress(spec.name)
        return runs


def report_row(run: MethodRun, docs: Sequence[Mapping]) -> dict:
    """One row's figures (JSON-ready): pairwise P/R/F1, recall by kind and edit band, hard negatives merged,
    the share of whitespace-only copies the exact stage caught, and the cost."""
    original_of = {d["story"]: d["id"] for d in docs if d.get("kind") == "original"}
    copies = [(d["id"], original_of.get(d["story"])) for d in docs if d.get("kind") == "format"]
    exact = (round(sum(c in run.exact or o in run.exact for c, o in copies) / len(copies), 4)
             if copies and run.spec.baseline is None else None)
    cost = {"features": run.features_ms and round(run.features_ms, 3), "dedup": round(run.cluster_ms, 3),
            "total": round((run.features_ms or 0.0) + run.cluster_ms, 3)}
    return {"method": run.spec.name, "family": run.spec.family, "description": run.spec.description,
            **evaluate(docs, run.predicted).as_dict(), "exact_detection": exact, "ms_per_doc": cost}


def _merit(report: Report, bonus: float = 0.0) -> tuple[bool, float]:
    overall = report.overall
    return overall.precision >= MIN_PRECISION and report.negatives_fp.value <= MAX_NEGATIVES_MERGED, overall.f1 + bonus


def tune(runner: Runner, docs: Sequence[Mapping], method: str) -> tuple[NearSettings, list[dict]]:
    """The parameters of ``method`` that score best on ``docs`` (the tune split), and every setting tried.

    Coordinate ascent over :data:`TUNING_GRID` from the shipped defaults: each parameter in turn takes the
    value of highest F1 among settings with precision >= :data:`MIN_PRECISION` and at most
    :data:`MAX_NEGATIVES_MERGED` of the hard negatives merged (highest F1 when none passes), keeping its
    current value unless another gains more than :data:`MIN_GAIN`; rounds repeat until no parameter moves.
    """
    stream = [(d["id"], d["text"]) for d in docs]
    scores: dict[NearSettings, Report] = {}
    best = NearSettings(method=method)
    for _ in range(4):
        start = best
        for field, values in TUNING_GRID[method].items():
            candidates = [replace(best, **{field: value}) for value in values]
            todo = [near for near in dict.fromkeys(candidates) if near not in scores]
            specs = [MethodSpec("tuning", "tuned", describe(near), FeatureConfig(method=method), near) for near in todo]
            for near, run in zip(todo, runner.run([stream], specs)[0]):
                scores[near] = evaluate(docs, run.predicted)
            best = max(candidates, key=lambda near: _merit(scores[near], MIN_GAIN if near == best else 0.0))
        if best == start:
            break
    tried = [{"settings": describe(near), "chosen": near == best,
              **{k: v for k, v in scores[near].as_dict().items() if k in ("precision", "recall", "f1", "negatives_fp")}}
             for near in scores]
    return best, tried
