"""Can a SpotSigs match be vetoed by how much and where the two texts align?  The issue 26 study (not shipped).

Issue 26 asks near-duplicate F1 >= 0.95 with precision >= 0.98 on the held-out half of the labelled real pairs.
The shipped setting (SpotSigs tau 0.5, containment fallback 0.8) merges reuse pairs: a page stitched from two
reports, a commentary quoting most of a short item, short items repeating one announcement.  This study asks
whether a *veto* on the shipped matches, made of at most three threshold conditions over what the pipeline can
know of a pair, separates those from reprints:

- the spot figures of the match (:mod:`newsdedup.dedup.spotsigs`): multiset Jaccard, containment (common spots /
  the smaller text's), length ratio, the smaller text's spot count;
- the headlines' similarity (Dice of their character bigrams, :func:`headline_similarity`): a crawl has each
  page's title; for the labelled texts they are the Sina file names, the finance pages' ``<title>`` (the portal's
  suffix cut off) and the Sogou ``contenttitle``;
- the passages the shipped passage-reuse finder (:class:`newsdedup.dedup.reuse.ReuseIndex`, k 8, w 16, its bars
  off) aligns between the two texts, as it would if the reuse stage ran first in the crawl: the share of the
  smaller and of the larger text they cover, and where they lie in the larger text (the share before the first
  passage, ``lead``, and after the last, ``tail``: an abridged copy is the start of its article).

A rule vetoes a match when one of its clauses holds, a clause being one condition or two joined by *and*
(``cover_small < 0.85``: the aligned passages cover under 85% of the smaller text).  Conditions come from a fixed
grid per feature, each feature in the direction that means "less of a copy" (:data:`GRID`); the rule forms are
:data:`FORMS`, the feature sets :data:`FEATURE_SETS`.  Each form's rules are fitted on the tune half (the highest
tune F1 among rules reaching tune precision 0.98, else the highest tune F1; ties: fewer conditions, then the
grid's order), their over-fitting is measured by 5-fold cross-validation *within* the tune half (fitted on four
folds, scored on the fifth, counts pooled), and only then is the fitted rule scored on the test half.  The last
column bounds each form from above: the rule of that form fitted on the test half itself (chosen by nothing).

``python -m newsdedup.evaluation.near_veto DATA_DIR`` prints the table (about 15 s of CPU; ``--tune-only`` hides
the test half, as while choosing; ``--certain-only`` leaves out the pairs labelled borderline or uncertain); the figures and what they mean are in docs/evaluation.md ("Vetoing a match by a fitted rule").  Pairs are decided as
:mod:`newsdedup.evaluation.real_pair_scores` decides them (the product's DedupEngine and Single-Pass); the veto
itself is computed here, outside the product: none reached the issue's bar, so none was built into it.
"""

from __future__ import annotations

import gzip
import re
import sys
import unicodedata
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from newsdedup.dedup.features import FeatureConfig
from newsdedup.dedup.reuse import ReuseIndex
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.dedup.spotsigs import multiset_jaccard
from newsdedup.evaluation.real_pair_scores import MIN_PRECISION, PairJudge, Score
from newsdedup.evaluation.real_pairs import SOGOU, SPLITS, load_labels, load_texts

#: Per feature: the direction in which it says "less of a copy" (veto when the value is below / above the
#: threshold) and the thresholds tried.
GRID: dict[str, tuple[str, tuple[float, ...]]] = {
    "jaccard": ("<", (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)),
    "containment": ("<", (0.8, 0.85, 0.9, 0.95, 0.99)),
    "length_ratio": ("<", (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)),
    "small_spots": ("<", (8, 10, 15, 20, 30, 40)),
    "cover_small": ("<", (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)),
    "cover_large": ("<", (0.2, 0.3, 0.4, 0.5, 0.6)),
    "lead": (">", (0.2, 0.3, 0.4, 0.45, 0.5, 0.6)),
    "tail": (">", (0.3, 0.4, 0.5, 0.6, 0.7)),
    "headline": ("<", (0.2, 0.4, 0.6, 0.8, 0.95)),
}
FEATURES = tuple(GRID)
FOLDS = 5


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.S | re.I)
_SOGOU_TITLE = re.compile(r"<docno>(.*?)</docno>\s*<contenttitle>(.*?)</contenttitle>", re.S)
#: What separates a headline from the portal's name in a page title ("headline-新闻频道-和讯网", "headline_新浪财经").
_TITLE_PARTS = re.compile(r"\s*[-_|｜]\s*")


def load_headlines(data_dir: Path | str) -> dict[str, str]:
    """The headline of every labelled source's text, by text id (see :func:`~newsdedup.evaluation.real_pairs.
    load_texts`): Sina's file name, a finance page's ``<title>`` (its longest part: the portal's suffix cut off),
    Sogou's ``contenttitle``.  Texts without one (cwced, cx-extractor-163) are left out."""
    data = Path(data_dir)
    headlines: dict[str, str] = {}
    for path in sorted((data / "xmu-finance-news" / "pages").glob("*.html.gz")):
        found = _TITLE.search(gzip.open(path).read().decode("utf-8", errors="replace"))
        if found:
            headline = max(_TITLE_PARTS.split(found.group(1).strip()), key=len)
            headlines[f"xmu-finance-news:gold/{path.name.removesuffix('.html.gz')}.txt"] = headline
    for name in SOGOU:
        if (data / name).is_file():
            for docno, title in _SOGOU_TITLE.findall((data / name).read_bytes().decode("gb18030", errors="replace")):
                headlines[f"sogou-smarty:{Path(*name.parts[1:]).as_posix()}#{docno}"] = title
    return headlines


def headline_of(text_id: str, headlines: Mapping[str, str]) -> str | None:
    if text_id.startswith("sina-news-2018:"):
        return text_id.split("/", 1)[1].removesuffix(".txt")  # the Sina texts are named by their headline
    return headlines.get(text_id)


def headline_similarity(a: str | None, b: str | None) -> float:
    """Dice of the two headlines' character bigrams (NFKC, letters and digits only); 0.0 when one is missing.

    >>> headline_similarity("直击|百度与亚信科技达成合作", "直击百度与亚信科技达成合作")
    1.0
    >>> headline_similarity("李咏因病去世", None)
    0.0
    """
    if not a or not b:
        return 0.0
    grams = []
    for title in (a, b):
        kept = "".join(ch for ch in unicodedata.normalize("NFKC", title) if ch.isalnum())
        grams.append({kept[i : i + 2] for i in range(len(kept) - 1)})
    return 2 * len(grams[0] & grams[1]) / (len(grams[0]) + len(grams[1])) if grams[0] and grams[1] else 0.0


def pair_features(judge: PairJudge, a: str, b: str) -> dict[str, float]:
    """What a veto may look at for the pair (``a`` stored, ``b`` arriving), and whether the shipped setting
    merges it (``merged``, 0 or 1)."""
    shipped = NearSettings()
    spots_a = judge.features(FeatureConfig(method="spotsigs"), a).spots
    spots_b = judge.features(FeatureConfig(method="spotsigs"), b).spots
    size_a, size_b = sum(spots_a.values()), sum(spots_b.values())
    smaller, larger = min(size_a, size_b), max(size_a, size_b)
    common = sum((spots_a & spots_b).values())
    row = {"merged": float(judge.is_near_duplicate(shipped, a, b)), "jaccard": multiset_jaccard(spots_a, spots_b),
           "containment": common / smaller if smaller else 0.0, "length_ratio": smaller / larger if larger else 0.0,
           "small_spots": float(smaller)}
    index = ReuseIndex(min_chars=0, min_passage=0, min_fraction=0.0)  # the shipped alignment, every bar off
    index.add("a", a)
    found = index.find(b)
    if not found:
        return {**row, "cover_small": 0.0, "cover_large": 0.0, "lead": 1.0, "tail": 1.0}
    reuse = found[0]
    b_is_larger = reuse.text_chars > reuse.source_chars
    cover_small, cover_large = ((reuse.source_fraction, reuse.fraction) if b_is_larger
                                else (reuse.fraction, reuse.source_fraction))
    if b_is_larger:
        spans, length = [(p.start, p.start + p.length) for p in reuse.passages], len(b)
    else:
        spans, length = [(p.source_start, p.source_start + p.source_length) for p in reuse.passages], len(a)
    return {**row, "cover_small": cover_small, "cover_large": cover_large,
            "lead": min(start for start, _ in spans) / length, "tail": 1 - max(end for _, end in spans) / length}


@dataclass(frozen=True)
class Condition:
    feature: str
    threshold: float

    def holds(self, features: Mapping[str, float]) -> bool:
        value = features[self.feature]
        return value < self.threshold if GRID[self.feature][0] == "<" else value > self.threshold

    def __str__(self) -> str:
        return f"{self.feature} {GRID[self.feature][0]} {self.threshold:g}"


def conditions() -> list[Condition]:
    return [Condition(feature, threshold) for feature, (_, thresholds) in GRID.items() for threshold in thresholds]


#: A rule is a tuple of clauses, a clause a tuple of conditions: the match is vetoed when every condition of
#: some clause holds.  The forms tried (``A``, ``B``, ``C``: conditions on distinct features).
FORMS = ("A", "A or B", "A and B", "A or B or C", "A or (B and C)")
#: The feature sets tried: the figures the SpotSigs index itself holds (a veto on them needs no text in the near
#: stage), with the headline (a crawl item has its title), with the alignment (needs both texts), and all.
SPOT_FEATURES = ("jaccard", "containment", "length_ratio", "small_spots")
ALIGNMENT_FEATURES = ("cover_small", "cover_large", "lead", "tail")
FEATURE_SETS = {"spots": SPOT_FEATURES, "spots+headline": SPOT_FEATURES + ("headline",),
                "spots+alignment": SPOT_FEATURES + ALIGNMENT_FEATURES,
                "spots+alignment+headline": FEATURES}

Rule = tuple[tuple[Condition, ...], ...]


def rules(form: str, features: Sequence[str] = FEATURES) -> list[Rule]:
    """Every rule of ``form`` over the grid's conditions on ``features`` (distinct features within a rule)."""
    grid = [c for c in conditions() if c.feature in features]
    distinct = lambda *cs: len({c.feature for c in cs}) == len(cs)  # noqa: E731
    if form == "A":
        return [((a,),) for a in grid]
    if form == "A or B":
        return [((a,), (b,)) for a, b in combinations(grid, 2) if distinct(a, b)]
    if form == "A and B":
        return [((a, b),) for a, b in combinations(grid, 2) if distinct(a, b)]
    if form == "A or B or C":
        return [((a,), (b,), (c,)) for a, b, c in combinations(grid, 3) if distinct(a, b, c)]
    if form == "A or (B and C)":
        return [((a,), (b, c)) for a in grid for b, c in combinations(grid, 2) if distinct(a, b, c)]
    raise ValueError(f"unknown rule form {form!r}: one of {FORMS}")


def describe(rule: Rule) -> str:
    if not rule:
        return "none (shipped)"
    clauses = [" and ".join(map(str, clause)) for clause in rule]
    return "veto if " + " or ".join(c if len(rule) == 1 or " and " not in c else f"({c})" for c in clauses)


class Study:
    """The labelled pairs' features, and each rule's confusion counts on any subset of them, as bit sets (one
    bit a pair), so that the hundred thousand rules are scored in seconds."""

    def __init__(self, labels: Sequence[Mapping], features: Mapping[tuple[str, str], Mapping[str, float]]) -> None:
        self.labels = [row for row in labels if row["label"] != "junk"]
        bits = lambda test: sum(1 << i for i, row in enumerate(self.labels) if test(row))  # noqa: E731
        self.merged = bits(lambda row: features[row["a"], row["b"]]["merged"] > 0)
        self.positive = bits(lambda row: row["label"] == "near_duplicate")
        self.reuse = bits(lambda row: row["label"] == "reuse")
        self.split = {split: bits(lambda row, s=split: row["split"] == s) for split in SPLITS}
        self.vetoed = {c: bits(lambda row, c=c: c.holds(features[row["a"], row["b"]])) for c in conditions()}

    def called(self, rule: Rule) -> int:
        veto = 0
        for clause in rule:
            holds = -1
            for condition in clause:
                holds &= self.vetoed[condition]
            veto |= holds
        return self.merged & ~veto

    def counts(self, rule: Rule, subset: int) -> tuple[int, int, int, int]:
        """True positives, false positives, false negatives and reuse pairs merged among ``subset``."""
        called = self.called(rule) & subset
        tp = (called & self.positive).bit_count()
        return (tp, (called & ~self.positive).bit_count(), (subset & self.positive).bit_count() - tp,
                (called & self.reuse).bit_count())

    def fit(self, candidates: Sequence[Rule], subset: int, *,
            min_precision: float = MIN_PRECISION) -> Rule:
        """The rule of highest F1 on ``subset`` among those reaching ``min_precision`` there, else of highest F1;
        ties: fewer conditions, then the earlier candidate."""
        best, best_key = (), None
        for order, rule in enumerate(candidates):
            tp, fp, fn, _ = self.counts(rule, subset)
            s = Score(tp, fp, fn, 0, 0, 0, 0)
            key = (s.precision >= min_precision, s.f1, -sum(map(len, rule)), -order)
            if best_key is None or key > best_key:
                best, best_key = rule, key
        return best

    def folds(self, count: int = FOLDS) -> list[int]:
        """The tune half in ``count`` folds, each label's pairs dealt round by a CRC-32 of their ids."""
        parts = [0] * count
        dealt: dict[str, int] = {}
        tune = [i for i, row in enumerate(self.labels) if self.split["tune"] >> i & 1]
        for i in sorted(tune, key=lambda i: zlib.crc32(f"{self.labels[i]['a']}|{self.labels[i]['b']}".encode())):
            label = self.labels[i]["label"]
            parts[dealt.get(label, 0) % count] |= 1 << i
            dealt[label] = dealt.get(label, 0) + 1
        return parts

    def cross_validated(self, candidates: Sequence[Rule]) -> Score:
        """Pooled counts of the rules fitted on four folds of the tune half and scored on the fifth."""
        totals = [0, 0, 0, 0]
        parts = self.folds()
        for held in parts:
            rule = self.fit(candidates, self.split["tune"] & ~held)
            totals = [x + y for x, y in zip(totals, self.counts(rule, held))]
        return Score(totals[0], totals[1], totals[2], totals[3], (self.split["tune"] & self.reuse).bit_count(), 0, 0)

    def score(self, rule: Rule, split: str) -> Score:
        tp, fp, fn, reuse = self.counts(rule, self.split[split])
        return Score(tp, fp, fn, reuse, (self.split[split] & self.reuse).bit_count(), 0, 0)


def study(data_dir: Path | str, *, labels: Sequence[Mapping] | None = None, test: bool = True,
          forms: Sequence[str] = FORMS, feature_sets: Mapping[str, Sequence[str]] = FEATURE_SETS) -> list[dict]:
    """One row per feature set and rule form (and one for no veto): the rule fitted on the tune half, its tune and
    cross-validated (within tune) scores and, unless ``test`` is false (while choosing), its test scores."""
    labels = list(labels if labels is not None else load_labels())
    texts = load_texts(data_dir)
    judge = PairJudge()
    headlines = load_headlines(data_dir)
    features = {(row["a"], row["b"]): {**pair_features(judge, texts[row["a"]], texts[row["b"]]),
                                       "headline": headline_similarity(headline_of(row["a"], headlines),
                                                                       headline_of(row["b"], headlines))}
                for row in labels if row["label"] != "junk"}
    data = Study(labels, features)
    families = [("-", "none", [()])] + [(name, form, [(), *rules(form, names)])
                                        for name, names in feature_sets.items() for form in forms]
    rows = []
    for name, form, family in families:
        rule = data.fit(family, data.split["tune"])
        rows.append({"features": name, "form": form, "rule": describe(rule), "candidates": len(family) - 1,
                     "tune": data.score(rule, "tune").as_dict(), "cv": data.cross_validated(family).as_dict(),
                     **({"test": data.score(rule, "test").as_dict(),
                         # What the form could reach at best: a rule fitted on the test half itself.  A bound,
                         # printed after every choice was made on the tune half; nothing is chosen by it.
                         "ceiling": data.score(data.fit(family, data.split["test"]), "test").as_dict()}
                        if test else {})})
    return rows


def table(rows: Sequence[Mapping]) -> str:
    lines = ["| features | form (rules) | fitted on tune | tune P | tune R | tune F1 | tune reuse merged | 5-fold CV P | CV R "
             "| CV F1 | test P | test R | test F1 | test reuse merged | ceiling: fitted on test, P / F1 |",
             "|---|---|---|" + "---|" * 12]
    for row in rows:
        t, cv = row["tune"], row["cv"]
        cells = [row["features"], f"{row['form']} ({row['candidates']})", row["rule"], *_cells(t, reuse=True), *_cells(cv)]
        if "test" in row:
            cells += [*_cells(row["test"], reuse=True),
                      f"{row['ceiling']['precision']:.3f} / {row['ceiling']['f1']:.3f}"]
        else:
            cells += ["(hidden)"] * 5
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cells(s: Mapping, *, reuse: bool = False) -> list[str]:
    return [f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['f1']:.3f}"] + (
        [f"{s['reuse_called']}/{s['reuse_pairs']}"] if reuse else [])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    flags = {arg for arg in args if arg.startswith("--")}
    args = [arg for arg in args if not arg.startswith("--")]
    if len(args) != 1 or flags - {"--tune-only", "--certain-only"}:
        print("usage: python -m newsdedup.evaluation.near_veto [--tune-only] [--certain-only] DATA_DIR",
              file=sys.stderr)
        return 2
    # --certain-only: without the pairs whose label is marked borderline or uncertain (as real_pair_scores' second
    # table); the bar counts every pair.
    labels = [row for row in load_labels() if "--certain-only" not in flags or row.get("certain", True)]
    try:
        rows = study(args[0], labels=labels, test="--tune-only" not in flags)
    except ValueError as error:
        print(f"newsdedup: error: {error}", file=sys.stderr)
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
