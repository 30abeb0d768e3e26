"""The passage-reuse finder (:mod:`newsdedup.dedup.reuse`) on the hand-labelled real pairs, tune and test halves.

How a pair is decided.  One :class:`~newsdedup.dedup.reuse.ReuseIndex` holds every text of the shared data
(:func:`~newsdedup.evaluation.real_pairs.load_texts`, ~10k texts), as a crawl's retention window holds the
stories before a new page: so fingerprints that page boilerplate or form text spreads over many texts are
discounted as they would be in a crawl.  For a pair, text ``b`` is queried (itself excluded) and the finder's
record for source ``a``, if any, is the call.

The rule (stated here because the labels allow more than one):

* a ``reuse`` pair is *found* when the finder reports ``a`` as a source of ``b`` with a passage overlapping one
  of the labelled passages in both texts; reported with no such passage, it counts as a false positive (the
  wrong passage);
* a ``different`` pair reported is a false positive;
* a ``near_duplicate`` pair is not scored: it shares its text, and the pipeline decides it as a near duplicate
  before it looks for reuse; how many the finder reports is shown (``near_dup_reported``).  Under *pipeline*
  the near-duplicate stage (the product's default setting) runs first, as in a crawl, and a pair it merges
  gets no reuse record: that is what a crawl would store;
* ``junk`` pairs are left out.

Precision is found / (found + false positives), recall found / reuse pairs.  Only the boilerplate cut
(``max_sources``) and the bar (``min_chars``, ``min_passage``, ``min_fraction``) act after the index is built, so
the grid builds one index per ``(k, w)``, looks the pairs up once per cut and applies the bar to the records
(:func:`~newsdedup.dedup.reuse.qualify`, the index's own rule).  The tune half alone chooses (:func:`suggest`).
``python -m newsdedup.evaluation.reuse_scores DATA_DIR`` prints the settings of highest tune F1 with both halves
side by side, the setting the tune half chooses with its test figures, and the cost per text over the Sina texts
beside the SpotSigs decision's; :func:`held_out` scores the shipped setting alone, for the eval's floors.
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from newsdedup.dedup.reuse import (K, MAX_SOURCES, MIN_CHARS, MIN_FRACTION, MIN_PASSAGE, W, Reuse, ReuseIndex, overlaps,
                                   qualify)
from newsdedup.evaluation import scoring
from newsdedup.evaluation.real_pairs import SINA, SPLITS, load_labels, load_texts

#: The grid: k-gram and window sizes (index-time), the boilerplate cut (query-time), and the bar: aligned
#: characters in all, the shortest passage that counts, the fraction of one of the two texts (on the records).
KS = (6, 8, 10, 13)
WS = (8, 12, 16, 24)
MAX_SOURCES_GRID = (4, 8, 16, 32)
MIN_CHARS_GRID = (60, 80, 100, 120)
MIN_PASSAGE_GRID = (0, 30, 40, 60, 80)
MIN_FRACTION_GRID = (0.0, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2)
#: The issue's acceptance on the held-out half; a setting the tune half suggests must keep this precision there.
MIN_PRECISION = 0.9
MIN_RECALL = 0.8


@dataclass(frozen=True)
class ReuseSetting:
    k: int = K
    w: int = W
    min_chars: int = MIN_CHARS
    max_sources: int = MAX_SOURCES
    min_passage: int = MIN_PASSAGE
    min_fraction: float = MIN_FRACTION

    def index(self) -> ReuseIndex:
        return ReuseIndex(k=self.k, w=self.w, min_chars=self.min_chars, max_sources=self.max_sources,
                          min_passage=self.min_passage, min_fraction=self.min_fraction)

    def describe(self) -> str:
        return (f"k={self.k} w={self.w} min_chars={self.min_chars} max_sources={self.max_sources} "
                f"min_passage={self.min_passage} min_fraction={self.min_fraction}")


@dataclass(frozen=True)
class ReuseScore:
    found: int
    false_positives: int
    reuse_pairs: int
    different_reported: int
    different_pairs: int
    near_dup_reported: int
    near_dup_pairs: int

    @property
    def precision(self) -> float:
        return scoring.precision(self.found, self.found + self.false_positives)

    @property
    def recall(self) -> float:
        return scoring.recall(self.found, self.reuse_pairs)

    def as_dict(self) -> dict:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4), "found": self.found,
                "fp": self.false_positives, "reuse_pairs": self.reuse_pairs,
                "different_reported": self.different_reported, "different_pairs": self.different_pairs,
                "near_dup_reported": self.near_dup_reported, "near_dup_pairs": self.near_dup_pairs}


def labelled_found(row: Mapping, reuse: Reuse | None) -> bool:
    """Whether ``reuse`` (``b``'s record for source ``a``) overlaps a labelled passage in both texts."""
    return reuse is not None and any(overlaps(reuse.passages, p["b"][0], p["b"][1], p["a"][0], p["a"][1])
                                     for p in row.get("passages", ()))


def score(labels: Iterable[Mapping], reported: Mapping[tuple[str, str], Reuse | None], split: str, *,
          certain_only: bool = False, merged: Mapping[tuple[str, str], bool] | None = None) -> ReuseScore:
    """The counts of one half (``merged``: pairs the near-duplicate stage merges, which get no reuse record)."""
    c = dict.fromkeys(("found", "fp", "reuse", "diff", "diff_rep", "near", "near_rep"), 0)
    for row in labels:
        if row["split"] != split or row["label"] == "junk" or (certain_only and not row.get("certain", True)):
            continue
        pair = row["a"], row["b"]
        reuse = None if merged and merged[pair] else reported.get(pair)
        if row["label"] == "reuse":
            c["reuse"] += 1
            hit = labelled_found(row, reuse)
            c["found"] += hit
            c["fp"] += reuse is not None and not hit
        elif row["label"] == "different":
            c["diff"] += 1
            c["diff_rep"] += reuse is not None
            c["fp"] += reuse is not None
        else:
            c["near"] += 1
            c["near_rep"] += reuse is not None
    return ReuseScore(c["found"], c["fp"], c["reuse"], c["diff_rep"], c["diff"], c["near_rep"], c["near"])


def background_index(texts: Mapping[str, str], k: int, w: int) -> ReuseIndex:
    """Every text indexed, bar off (``min_chars=0``) and boilerplate cut at the grid's largest value: the
    records are filtered afterwards (:func:`apply`)."""
    index = ReuseIndex(k=k, w=w, min_chars=0, min_passage=0, min_fraction=0.0, max_sources=max(MAX_SOURCES_GRID))
    for key in sorted(texts):
        index.add(key, texts[key])
    return index


def records(index: ReuseIndex, labels: Sequence[Mapping], texts: Mapping[str, str], max_sources: int
            ) -> dict[tuple[str, str], Reuse | None]:
    """Pair -> ``b``'s record for source ``a`` (or None), with fingerprints held by more than ``max_sources``
    texts discounted."""
    index.max_sources = max_sources
    out: dict[tuple[str, str], Reuse | None] = {}
    for row in labels:
        found = index.find(texts[row["b"]], exclude=(row["b"],))
        out[row["a"], row["b"]] = next((r for r in found if r.source == row["a"]), None)
    return out


def apply(reported: Mapping[tuple[str, str], Reuse | None], min_chars: int, min_passage: int = 0,
          min_fraction: float = 0.0) -> dict[tuple[str, str], Reuse | None]:
    """The records the bar keeps (:func:`~newsdedup.dedup.reuse.qualify`, as :class:`ReuseIndex` applies it)."""
    return {pair: r and qualify(r.source, r.passages, r.text_chars, r.source_chars, min_passage=min_passage,
                                min_chars=min_chars, min_fraction=min_fraction)
            for pair, r in reported.items()}


def near_merged(labels: Sequence[Mapping], texts: Mapping[str, str]) -> dict[tuple[str, str], bool]:
    """Pair -> whether the product's default near-duplicate setting merges ``b`` into ``a``."""
    from newsdedup.dedup.single_pass import NearSettings
    from newsdedup.evaluation.real_pair_scores import PairJudge

    judge, near = PairJudge(), NearSettings()
    return {(row["a"], row["b"]): judge.is_near_duplicate(near, texts[row["a"]], texts[row["b"]]) for row in labels}


def evaluate_reuse(data_dir: Path | str, *, labels: Sequence[Mapping] | None = None,
                   texts: Mapping[str, str] | None = None, ks: Sequence[int] = KS, ws: Sequence[int] = WS,
                   max_sources: Sequence[int] = MAX_SOURCES_GRID, min_chars: Sequence[int] = MIN_CHARS_GRID,
                   min_passage: Sequence[int] = MIN_PASSAGE_GRID, min_fraction: Sequence[float] = MIN_FRACTION_GRID,
                   merged: Mapping[tuple[str, str], bool] | None = None) -> list[dict]:
    """One row per setting: ``{"setting", "params": ReuseSetting, "tune", "test", "certain": {...},
    "pipeline": {...}}`` (``pipeline``: after the near-duplicate stage; ``merged={}`` leaves it out, as the
    figures without it)."""
    labels = [row for row in (labels if labels is not None else load_labels())]
    texts = texts if texts is not None else load_texts(data_dir)
    unknown = sorted({row[side] for row in labels for side in "ab"} - texts.keys())
    if unknown:
        raise ValueError(f"{len(unknown)} labelled text ids are not in {data_dir} (first: {unknown[0]}): "
                         "pass data_dir=the shared data folder")
    merged = merged if merged is not None else near_merged(labels, texts)
    rows = []
    for k in ks:
        for w in ws:
            index = background_index(texts, k, w)
            for sources in max_sources:
                found = records(index, labels, texts, sources)
                for bar, passage, fraction in product(min_chars, min_passage, min_fraction):
                    called = apply(found, bar, passage, fraction)
                    setting = ReuseSetting(k, w, bar, sources, passage, fraction)
                    row = {"setting": setting.describe(), "params": setting,
                           **{split: score(labels, called, split).as_dict() for split in SPLITS},
                           "certain": {s: score(labels, called, s, certain_only=True).as_dict() for s in SPLITS}}
                    if merged:
                        row["pipeline"] = {s: score(labels, called, s, merged=merged).as_dict() for s in SPLITS}
                    rows.append(row)
    return rows


def suggest(rows: Sequence[Mapping], *, min_precision: float = MIN_PRECISION, min_recall: float = MIN_RECALL
            ) -> tuple[Mapping, bool]:
    """The row the tune half suggests, and whether it meets both aims there: the highest tune F1 among the rows
    with tune precision at least ``min_precision`` and recall at least ``min_recall`` (ties: the higher
    precision, then the stricter bar, then the larger window and k-gram: fewer fingerprints, fewer chance
    seeds), else the highest tune F1 of all.  Only tune figures are read."""
    def key(row: Mapping) -> tuple:
        p, tune = row["params"], row["tune"]
        return (round(scoring.f1(tune["precision"], tune["recall"]), 4), tune["precision"], p.min_fraction,
                p.min_passage, p.min_chars, p.w, p.k, -p.max_sources)

    enough = [row for row in rows if row["tune"]["precision"] >= min_precision and row["tune"]["recall"] >= min_recall]
    if enough:
        return max(enough, key=key), True
    return max(rows, key=key), False


def table(rows: Sequence[Mapping], *, part: str | None = None) -> str:
    """Markdown, tune and test side by side (``part``: ``certain`` or ``pipeline`` for those figures)."""
    lines = ["| setting | tune P | tune R | tune found/reuse | tune FP (different) | test P | test R "
             "| test found/reuse | test FP (different) | near dup reported (tune/test) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        halves = row[part] if part else row
        cells = [row["setting"]]
        for split in SPLITS:
            s = halves[split]
            cells += [f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['found']}/{s['reuse_pairs']}",
                      f"{s['fp']} ({s['different_reported']}/{s['different_pairs']})"]
        cells.append(f"{halves['tune']['near_dup_reported']}/{halves['tune']['near_dup_pairs']} · "
                     f"{halves['test']['near_dup_reported']}/{halves['test']['near_dup_pairs']}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sina_texts(data_dir: Path | str) -> list[str]:
    with gzip.open(Path(data_dir) / SINA, "rt", encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


def cost(data_dir: Path | str, *, setting: ReuseSetting = ReuseSetting(), limit: int | None = None) -> dict:
    """CPU milliseconds per text over the Sina texts in corpus order, in this process: the reuse stage (find,
    then add) beside the SpotSigs decision (features, then the exact stage and Single-Pass with its index), as
    the crawl pays them per page.  ``time.process_time``: the machine may be shared."""
    from newsdedup.dedup.engine import DedupEngine
    from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
    from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector

    texts = sina_texts(data_dir)[:limit]
    extractor = FeatureExtractor(FeatureConfig(method="spotsigs"))
    extractor.features("预热一下分词器。")  # the dictionaries load outside the timing
    dedup = DedupEngine.in_memory(SinglePassClusterer(make_detector(NearSettings(method="spotsigs"))), expected=len(texts))
    started = time.process_time()
    for n, text in enumerate(texts):
        dedup.process(n, extractor.features(text))
    spotsigs = time.process_time() - started
    index = setting.index()
    started, reported = time.process_time(), 0
    for n, text in enumerate(texts):
        reported += bool(index.find(text))
        index.add(str(n), text)
    reuse = time.process_time() - started
    return {"texts": len(texts), "spotsigs_ms": round(1000 * spotsigs / len(texts), 3),
            "reuse_ms": round(1000 * reuse / len(texts), 3), "texts_reusing": reported,
            "postings_per_text": round(index.postings / len(texts), 1)}


def held_out(data_dir: Path | str, *, labels: Sequence[Mapping] | None = None,
             texts: Mapping[str, str] | None = None) -> dict:
    """The shipped setting alone on both halves (one index, ~10 s): ``{"setting", "tune", "test", "certain"}``,
    what ``newsdedup eval``'s ``pairs`` stage writes under ``reuse`` and the quality floors check."""
    s = ReuseSetting()
    row = evaluate_reuse(data_dir, labels=labels, texts=texts, ks=(s.k,), ws=(s.w,), max_sources=(s.max_sources,),
                         min_chars=(s.min_chars,), min_passage=(s.min_passage,), min_fraction=(s.min_fraction,),
                         merged={})[0]
    return {key: value for key, value in row.items() if key != "params"}


def summary_lines(result: Mapping) -> list[str]:
    """Plain lines for the eval's summary: the shipped setting's reuse precision and recall on each half."""
    return [f"reuse ({result['setting']}): " + "; ".join(
        f"{split} P {result[split]['precision']:.3f} R {result[split]['recall']:.3f} "
        f"({result[split]['found']}/{result[split]['reuse_pairs']} found, {result[split]['fp']} FP)"
        for split in SPLITS)]


def stage_results(data_dir: Path | str, *, labels: Sequence[Mapping] | None = None, with_cost: bool = True,
                  **grid: Sequence) -> dict:
    """JSON-ready: every setting's rows, the shipped setting's row under ``default``, the tune half's
    suggestion, and the cost (:func:`cost`)."""
    rows = evaluate_reuse(data_dir, labels=labels, **grid)
    chosen, meets = suggest(rows)
    default = next((row for row in rows if row["params"] == ReuseSetting()), None)
    plain = [{k: v for k, v in row.items() if k != "params"} for row in rows]
    return {"rows": plain, "default": default and {k: v for k, v in default.items() if k != "params"},
            "suggested": {"setting": chosen["setting"], "meets_aims_on_tune": meets},
            "cost": cost(data_dir) if with_cost else None}


def best(rows: Sequence[Mapping], count: int = 20) -> list[Mapping]:
    """The ``count`` rows of highest tune F1 among those with tune precision >= MIN_PRECISION (else all)."""
    precise = [row for row in rows if row["tune"]["precision"] >= MIN_PRECISION] or list(rows)
    return sorted(precise, key=lambda row: -scoring.f1(row["tune"]["precision"], row["tune"]["recall"]))[:count]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m newsdedup.evaluation.reuse_scores DATA_DIR", file=sys.stderr)
        return 2
    try:
        results = stage_results(args[0])
    except ValueError as error:
        print(f"newsdedup: error: {error}", file=sys.stderr)
        return 2
    rows = results["rows"]
    top = best(rows)
    print(f"Reuse found on the labelled real pairs, {len(rows)} settings; the {len(top)} of highest tune F1 with "
          f"tune precision >= {MIN_PRECISION} (junk left out; near duplicates not scored):\n")
    print(table(top))
    print("\nThe same settings after the near-duplicate stage (the product's default), as a crawl stores it:\n")
    print(table(top, part="pipeline"))
    print("\nThe same settings without the borderline and uncertain pairs:\n")
    print(table(top, part="certain"))
    by_setting = {row["setting"]: row for row in rows}
    chosen = by_setting[results["suggested"]["setting"]]
    print(f"\ntune suggests {chosen['setting']} (meets the aims on tune: {results['suggested']['meets_aims_on_tune']})"
          f":\n  tune {chosen['tune']}\n  test {chosen['test']}\n  pipeline test {chosen['pipeline']['test']}")
    if results["default"]:
        print(f"shipped {results['default']['setting']}:\n  tune {results['default']['tune']}\n"
              f"  test {results['default']['test']}")
    print(f"cost: {results['cost']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
