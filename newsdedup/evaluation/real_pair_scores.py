"""Each near-duplicate setting's decision on the hand-labelled real pairs, scored on their tune and test halves.

A pair is decided as the pipeline decides it: features from the product's
:class:`~newsdedup.dedup.features.FeatureExtractor`, then a fresh
:class:`~newsdedup.dedup.engine.DedupEngine` (exact stage, then Single-Pass over the setting's detector) sees
text ``a`` and then text ``b``; the pair is called a near duplicate when ``b`` comes out an exact or near duplicate
of ``a``.  A positive is a ``near_duplicate`` pair; ``reuse`` and ``different`` pairs are negatives (a reuse pair
called a near duplicate would hide the reusing article under its source), and ``junk`` pairs are left out of the
scores (see the guideline, ``labels/GUIDELINE.md``).  How many reuse pairs each setting calls near duplicates is
reported beside precision, recall and F1.

The labels come from :data:`~newsdedup.evaluation.real_pairs.LABEL_FILE`; the texts are read from ``data_dir``
(the shared data folder) at run time.  ``python -m newsdedup.evaluation.real_pair_scores DATA_DIR`` prints the
grid as a table; ``newsdedup eval --stages pairs`` records it (:func:`stage_results`) in its results and report.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from newsdedup.dedup.captions import caption_check, caption_lines
from newsdedup.dedup.engine import DedupEngine
from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector
from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE
from newsdedup.evaluation import scoring
from newsdedup.evaluation.real_pairs import SPLITS, load_labels, load_texts

#: The grid of the issue: SpotSigs tau 0.3-0.6 with the containment fallback at 0.6-0.9 or off, Simhash k 3-6.
SPOTSIGS_TAUS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
SPOTSIGS_CONTAINMENTS = (None, 0.6, 0.7, 0.8, 0.9)
#: Each containment setting also with the fallback's whole-containment rule below this length ratio
#: (``spotsigs_containment_whole_below``; 0.6 was chosen on the tune half, see docs/evaluation.md).
SPOTSIGS_WHOLE_BELOW = (None, 0.6)
#: Each containment setting also without issue 34's rule (``spotsigs_containment_min_share``, shipped 0.5: a longer
#: text whose own story outweighs what it shares is a reuse, not a copy).
SPOTSIGS_MIN_SHARE = (None, 0.5)
SIMHASH_DISTANCES = (3, 4, 5, 6)
#: A setting the tune half suggests must keep this precision (the issue's bar for the held-out half).
MIN_PRECISION = 0.98


def grid() -> list[NearSettings]:
    """Every setting scored: the SpotSigs grid, then the Simhash distances (other parameters at their defaults)."""
    spotsigs = [NearSettings(method="spotsigs", spotsigs_tau=tau, spotsigs_min_containment=containment,
                             spotsigs_containment_whole_below=whole, spotsigs_containment_min_share=share)
                for tau in SPOTSIGS_TAUS for containment in SPOTSIGS_CONTAINMENTS
                for whole in (SPOTSIGS_WHOLE_BELOW if containment is not None else (None,))
                for share in (SPOTSIGS_MIN_SHARE if containment is not None else (None,))]
    return spotsigs + [NearSettings(method="simhash", simhash_max_distance=k) for k in SIMHASH_DISTANCES]


def describe(settings: NearSettings) -> str:
    if settings.method == "simhash":
        return f"simhash k={settings.simhash_max_distance}"
    containment = settings.spotsigs_min_containment
    whole = settings.spotsigs_containment_whole_below
    share = settings.spotsigs_containment_min_share
    return (f"spotsigs tau={settings.spotsigs_tau} containment={'off' if containment is None else containment}"
            + ("" if containment is None or whole is None else f" whole<{whole}")
            + ("" if containment is None or share is None else f" share>={share}"))


class PairJudge:
    """Decides pairs of texts with any setting; the features of a text are computed once per feature configuration."""

    def __init__(self) -> None:
        self._extractors: dict[FeatureConfig, FeatureExtractor] = {}
        self._features: dict[tuple[FeatureConfig, str], DocFeatures] = {}

    def features(self, config: FeatureConfig, text: str) -> DocFeatures:
        key = (config, text)
        if key not in self._features:
            if config not in self._extractors:
                self._extractors[config] = FeatureExtractor(config)
            self._features[key] = self._extractors[config].features(text)
        return self._features[key]

    def is_near_duplicate(self, settings: NearSettings, a: str, b: str) -> bool:
        """Whether the pipeline, having stored ``a``, files ``b`` as a duplicate of it."""
        config = FeatureConfig(method=settings.method)
        dedup = DedupEngine.in_memory(SinglePassClusterer(make_detector(settings)), expected=2)
        dedup.process("a", self.features(config, a))
        # As the crawl: a caption-only text joins another caption page only with the same captions.
        verdict = dedup.process("b", self.features(config, b),
                                confirm=caption_check(b, lambda _: caption_lines(a)))
        return verdict.status in (EXACT_DUPLICATE, NEAR_DUPLICATE) and verdict.duplicate_of == "a"


@dataclass(frozen=True)
class Score:
    """One setting on one half: the near-duplicate confusion counts and the reuse pairs it merged."""

    true_positives: int
    false_positives: int
    false_negatives: int
    reuse_called: int
    reuse_pairs: int
    different_called: int
    different_pairs: int

    @property
    def precision(self) -> float:
        return scoring.precision(self.true_positives, self.true_positives + self.false_positives)

    @property
    def precision_without_reuse(self) -> float:
        """Precision were reuse pairs not counted at all: what merging only truly different articles costs."""
        return scoring.precision(self.true_positives, self.true_positives + self.false_positives - self.reuse_called)

    @property
    def recall(self) -> float:
        return scoring.recall(self.true_positives, self.true_positives + self.false_negatives)

    @property
    def f1(self) -> float:
        return scoring.f1(self.precision, self.recall)

    def as_dict(self) -> dict:
        return {"precision": round(self.precision, 4), "precision_without_reuse": round(self.precision_without_reuse, 4),
                "recall": round(self.recall, 4), "f1": round(self.f1, 4),
                "tp": self.true_positives, "fp": self.false_positives, "fn": self.false_negatives,
                "reuse_called": self.reuse_called, "reuse_pairs": self.reuse_pairs,
                "different_called": self.different_called, "different_pairs": self.different_pairs}


def score(labels: Iterable[Mapping], called: Mapping[tuple[str, str], bool], split: str, *,
          certain_only: bool = False) -> Score:
    """The confusion counts of ``called`` (pair -> called a near duplicate) over the ``split`` half; junk left out,
    and with ``certain_only`` the pairs whose note says the call was borderline or uncertain."""
    counts = dict.fromkeys(("tp", "fp", "fn", "reuse", "reuse_called", "different", "different_called"), 0)
    for row in labels:
        if row["split"] != split or row["label"] == "junk" or (certain_only and not row.get("certain", True)):
            continue
        verdict = called[row["a"], row["b"]]
        if row["label"] == "near_duplicate":
            counts["tp" if verdict else "fn"] += 1
            continue
        counts["fp"] += verdict
        kind = row["label"]  # reuse | different
        counts[kind] += 1
        counts[f"{kind}_called"] += verdict
    return Score(counts["tp"], counts["fp"], counts["fn"], counts["reuse_called"], counts["reuse"],
                 counts["different_called"], counts["different"])


def evaluate_real_pairs(data_dir: Path | str, *, labels: Sequence[Mapping] | None = None,
                        settings: Sequence[NearSettings] | None = None,
                        texts: Mapping[str, str] | None = None) -> list[dict]:
    """One row per setting: ``{"setting", "method", "near": NearSettings, "tune": {...}, "test": {...},
    "certain": {"tune": {...}, "test": {...}}}`` (``certain``: the scores without the borderline pairs)."""
    labels = list(labels if labels is not None else load_labels())
    texts = texts if texts is not None else load_texts(data_dir)
    unknown = sorted({row[side] for row in labels for side in "ab"} - texts.keys())
    if unknown:
        raise ValueError(f"{len(unknown)} labelled text ids are not in {data_dir} (first: {unknown[0]}): "
                         "pass data_dir=the shared data folder")
    judge = PairJudge()
    rows = []
    for near in settings if settings is not None else grid():
        called = {(row["a"], row["b"]): judge.is_near_duplicate(near, texts[row["a"]], texts[row["b"]]) for row in labels}
        rows.append({"setting": describe(near), "method": near.method, "near": near,
                     **{split: score(labels, called, split).as_dict() for split in SPLITS},
                     "certain": {split: score(labels, called, split, certain_only=True).as_dict() for split in SPLITS}})
    return rows


def suggest(rows: Sequence[Mapping], method: str, *, min_precision: float = MIN_PRECISION) -> tuple[Mapping, bool]:
    """The row of ``method`` the tune half suggests, and whether it reaches ``min_precision``: the highest tune F1
    among rows with tune precision at least ``min_precision``, else (none does) the highest tune F1 of all (ties:
    fewer reuse pairs merged, then the earlier row of the grid)."""
    own = [(i, row) for i, row in enumerate(rows) if row["method"] == method]
    if not own:
        raise ValueError(f"no row of method {method!r} to choose from")
    precise = [(i, row) for i, row in own if row["tune"]["precision"] >= min_precision]
    best = max(precise or own, key=lambda item: (item[1]["tune"]["f1"], -item[1]["tune"]["reuse_called"], -item[0]))
    return best[1], bool(precise)


def table(rows: Sequence[Mapping], *, certain_only: bool = False) -> str:
    """Markdown: tune and test side by side (P without reuse: reuse pairs not counted)."""
    lines = ["| setting | tune P | tune P w/o reuse | tune R | tune F1 | tune reuse merged "
             "| test P | test P w/o reuse | test R | test F1 | test reuse merged |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = [row["setting"]]
        for split in SPLITS:
            s = row["certain"][split] if certain_only else row[split]
            cells += [f"{s['precision']:.3f}", f"{s['precision_without_reuse']:.3f}", f"{s['recall']:.3f}",
                      f"{s['f1']:.3f}", f"{s['reuse_called']}/{s['reuse_pairs']}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stage_results(data_dir: Path | str, *, labels: Sequence[Mapping] | None = None) -> dict:
    """What ``newsdedup eval --stages pairs`` records (JSON-ready): every setting's scores, the product's default
    setting's row again under ``default``, the settings the tune half suggests, and the pairs per label and half
    (``labels``: default the file's)."""
    labels = list(labels if labels is not None else load_labels())
    rows = evaluate_real_pairs(data_dir, labels=labels)
    summary: dict = {"shipped": {}, "suggested": {}}
    for method in ("spotsigs", "simhash"):
        chosen, precise = suggest(rows, method)
        summary["shipped"][method] = describe(NearSettings(method=method))
        summary["suggested"][method] = {"setting": chosen["setting"], "reaches_min_precision": precise}
    counts: dict = {}
    for row in labels:
        counts.setdefault(row["label"], dict.fromkeys(SPLITS, 0))[row["split"]] += 1
    # The product's default setting under its own key, so floors can name its figures ("real_pairs.default.test.f1").
    default = next((row for row in rows if row["near"] == NearSettings()), None)
    return {"pairs": counts, "min_precision": MIN_PRECISION,
            "default": default and {"setting": default["setting"], **{split: default[split] for split in SPLITS},
                                    "certain": default["certain"]},
            "rows": [{k: v for k, v in row.items() if k != "near"} for row in rows], **summary}


def summary_lines(results: Mapping) -> list[str]:
    """Per method: the shipped setting's test F1, and what the tune half suggests with its test figures."""
    by_setting = {row["setting"]: row for row in results["rows"]}
    lines = []
    for method in ("spotsigs", "simhash"):
        shipped, chosen = results["shipped"][method], results["suggested"][method]
        test = by_setting[chosen["setting"]]["test"]
        lines.append(f"- {method}: shipped {shipped} (test F1 {by_setting[shipped]['test']['f1']}); the tune half "
                     f"suggests {chosen['setting']}" + ("" if chosen["reaches_min_precision"] else
                                                       f" (none reaches tune precision {results['min_precision']})")
                     + f": test P {test['precision']}, R {test['recall']}, F1 {test['f1']}, reuse merged "
                     f"{test['reuse_called']}/{test['reuse_pairs']}")
    return lines


def markdown(results: Mapping) -> list[str]:
    """The report's section on the real pairs."""
    return ["## Real labelled pairs", "",
            "Hand-labelled pairs of real texts (`newsdedup/evaluation/labels/real_pairs.jsonl`, rules in "
            "`labels/GUIDELINE.md`), each decided as the pipeline decides it. Positives: `near_duplicate`; `reuse` "
            "and `different` pairs are negatives (P w/o reuse: reuse pairs not counted); junk left out. Pairs per "
            "label (tune/test): " + ", ".join(f"{label} {c['tune']}/{c['test']}" for label, c in results["pairs"].items())
            + ".", "", table(results["rows"]), "", *summary_lines(results), ""]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m newsdedup.evaluation.real_pair_scores DATA_DIR", file=sys.stderr)
        return 2
    try:
        rows = evaluate_real_pairs(args[0])
    except ValueError as error:
        print(f"newsdedup: error: {error}", file=sys.stderr)
        return 2
    print("All labelled pairs (junk left out):\n")
    print(table(rows))
    print("\nWithout the pairs labelled borderline or uncertain:\n")
    print(table(rows, certain_only=True))
    for method in ("spotsigs", "simhash"):
        default = NearSettings(method=method)
        shipped = next((r for r in rows if r["near"] == default), None)
        chosen, precise = suggest(rows, method)
        print(f"\n{method}: shipped {describe(default)}" + (f" -> test {shipped['test']}" if shipped else ""))
        print(f"{method}: tune suggests {chosen['setting']}"
              + ("" if precise else f" (no setting reaches tune precision {MIN_PRECISION}: highest tune F1)")
              + f" -> test {chosen['test']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
