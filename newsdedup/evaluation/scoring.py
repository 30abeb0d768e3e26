"""Pairwise precision, recall and F1 of a clustering against gold stories, as the papers measure.

A *true pair* is two documents of one gold story, a *predicted pair* two documents in one predicted cluster.
No predicted pair gives precision 1.0 (nothing wrong was claimed), no true pair recall 1.0.

>>> counts = pair_counts({"a": 1, "b": 1, "c": 1, "d": 2}, {"a": "x", "b": "x", "c": "y", "d": "y"})
>>> counts.true_pairs, counts.predicted_pairs, counts.correct_pairs, round(counts.f1, 3)
(3, 2, 1, 0.4)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from newsdedup.evaluation.reprints import NEGATIVE_KINDS

#: Upper bounds (inclusive) of the edit-ratio bands that recall is split by; the last band is open.
EDIT_BANDS: tuple[tuple[str, float], ...] = (
    ("0", 0.0), ("(0,5%]", 0.05), ("(5,10%]", 0.10), ("(10,20%]", 0.20), ("(20,30%]", 0.30), (">30%", float("inf")),
)


def precision(correct: int, called: int) -> float:
    """Share of what was called that is correct (1.0 when nothing was called: no false call was made)."""
    return correct / called if called else 1.0


def recall(correct: int, positives: int) -> float:
    """Share of the positives that were found (1.0 when there were none to find)."""
    return correct / positives if positives else 1.0


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class PairCounts:
    true_pairs: int
    predicted_pairs: int
    correct_pairs: int

    @property
    def precision(self) -> float:
        return precision(self.correct_pairs, self.predicted_pairs)

    @property
    def recall(self) -> float:
        return recall(self.correct_pairs, self.true_pairs)

    @property
    def f1(self) -> float:
        return f1(self.precision, self.recall)


@dataclass(frozen=True)
class Rate:
    """``hits`` of ``total`` (a recall or a false-positive rate); ``value`` 0.0 when empty."""

    hits: int
    total: int

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else 0.0

    def as_dict(self) -> dict:
        return {"hits": self.hits, "total": self.total, "rate": round(self.value, 4)}


def pair_counts(gold: Mapping[Hashable, Hashable], predicted: Mapping[Hashable, Hashable]) -> PairCounts:
    """True, predicted and correct pairs, counted from cluster sizes (the pairs are never listed)."""
    if gold.keys() != predicted.keys():
        raise ValueError(
            f"gold and predicted must label the same documents ({len(gold.keys() - predicted.keys())} missing "
            f"from predicted, {len(predicted.keys() - gold.keys())} not in gold)"
        )
    pairs = [sum(n * (n - 1) // 2 for n in Counter(labels).values())
             for labels in (gold.values(), predicted.values(), ((gold[d], predicted[d]) for d in gold))]
    return PairCounts(*pairs)


def edit_band(ratio: float) -> str:
    """The :data:`EDIT_BANDS` label of an edit ratio."""
    if ratio < 0:
        raise ValueError(f"an edit ratio is >= 0, got {ratio}")
    return next(label for label, upper in EDIT_BANDS if ratio <= upper)


def _recall_by(gold: Mapping, predicted: Mapping, groups_of_pair: Callable[[Hashable, Hashable], Iterable[str]]
               ) -> dict[str, Rate]:
    """Recall of the true pairs per group that ``groups_of_pair(a, b)`` names (a pair may count in two)."""
    members: dict[Hashable, list[Hashable]] = defaultdict(list)
    for doc, story in gold.items():
        members[story].append(doc)
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for docs in members.values():
        for a, b in combinations(docs, 2):
            for group in set(groups_of_pair(a, b)):
                totals[group] += 1
                hits[group] += predicted[a] == predicted[b]
    return {group: Rate(hits[group], totals[group]) for group in totals}


@dataclass(frozen=True)
class Report:
    """One clustering scored against the benchmark."""

    overall: PairCounts
    by_kind: dict[str, Rate]  # recall per reprint kind
    by_band: dict[str, Rate]  # recall per edit-ratio band
    negatives_fp: Rate  # hard negatives put with another story
    fp_by_kind: dict[str, Rate]

    def as_dict(self) -> dict:
        """JSON-ready figures (the rows of results.json)."""
        return {
            "precision": round(self.overall.precision, 4), "recall": round(self.overall.recall, 4),
            "f1": round(self.overall.f1, 4),
            "pairs": {"true": self.overall.true_pairs, "predicted": self.overall.predicted_pairs,
                      "correct": self.overall.correct_pairs},
            "negatives_fp_rate": round(self.negatives_fp.value, 4), "negatives_fp": self.negatives_fp.as_dict(),
            "fp_by_kind": {k: v.as_dict() for k, v in self.fp_by_kind.items()},
            "recall_by_kind": {k: v.as_dict() for k, v in sorted(self.by_kind.items())},
            "recall_by_band": {k: self.by_band[k].as_dict() for k, _ in EDIT_BANDS if k in self.by_band},
        }


def evaluate(docs: Sequence[Mapping], predicted: Mapping[Hashable, Hashable], *,
             negative_kinds: Sequence[str] = NEGATIVE_KINDS) -> Report:
    """Score ``predicted`` (doc id -> cluster) against the benchmark documents ``docs``.

    Recall by kind charges a true pair to the kind of its more edited member (larger ``edit_ratio``;
    both kinds on a tie), so an always-missed kind (``short``) does not drag down its partners; recall by
    band takes the larger edit ratio of the pair.
    """
    gold = {d["id"]: d["story"] for d in docs}
    overall = pair_counts(gold, predicted)
    kind = {d["id"]: d["kind"] for d in docs}
    ratio = {d["id"]: float(d.get("edit_ratio") or 0.0) for d in docs}

    def kinds(a: Hashable, b: Hashable) -> set[str]:
        if ratio[a] != ratio[b]:
            return {kind[max((a, b), key=ratio.__getitem__)]}
        return ({kind[a], kind[b]} - {"original"}) or {"original"}

    stories_in: dict[Hashable, set] = defaultdict(set)
    for doc, cluster in predicted.items():
        stories_in[cluster].add(gold[doc])
    merged = {k: [len(stories_in[predicted[d["id"]]]) > 1 for d in docs if d["kind"] == k] for k in negative_kinds}
    return Report(overall, _recall_by(gold, predicted, kinds),
                  _recall_by(gold, predicted, lambda a, b: [edit_band(max(ratio[a], ratio[b]))]),
                  Rate(sum(sum(m) for m in merged.values()), sum(len(m) for m in merged.values())),
                  {k: Rate(sum(m), len(m)) for k, m in merged.items()})


def clusters_from_verdicts(verdicts: Iterable[Mapping]) -> dict[Hashable, Hashable]:
    """``doc id -> cluster`` from ``newsdedup dedup`` verdict lines (``cluster_id``, else ``duplicate_of``'s)."""
    clusters: dict[Hashable, Hashable] = {}
    for verdict in verdicts:
        cluster = verdict.get("cluster_id")
        if cluster is None:
            earlier = verdict.get("duplicate_of")
            cluster = clusters.get(earlier, earlier) if earlier is not None else verdict["id"]
        clusters[verdict["id"]] = cluster
    return clusters
