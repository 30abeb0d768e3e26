"""Pairwise precision, recall and F1 of a clustering against gold stories, as the papers measure.

A *true pair* is two documents of the same gold story; a *predicted pair* is two documents in
the same predicted cluster (for ``newsdedup dedup`` output: the same ``cluster_id``).  Precision
is correct predicted pairs / predicted pairs, recall correct pairs / true pairs.  Conventions
for empty denominators: no predicted pair gives precision 1.0 (nothing wrong was claimed), no
true pair gives recall 1.0, and F1 is 0.0 when precision + recall is 0.

All functions are pure and take plain mappings ``doc id -> label``.

>>> gold = {"a": 1, "b": 1, "c": 1, "d": 2}
>>> predicted = {"a": "x", "b": "x", "c": "y", "d": "y"}
>>> counts = pair_counts(gold, predicted)
>>> counts.true_pairs, counts.predicted_pairs, counts.correct_pairs
(3, 2, 1)
>>> round(counts.precision, 3), round(counts.recall, 3), round(counts.f1, 3)
(0.5, 0.333, 0.4)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

__all__ = [
    "EDIT_BANDS",
    "NEGATIVE_KINDS",
    "PairCounts",
    "Rate",
    "Report",
    "clusters_from_verdicts",
    "edit_band",
    "evaluate",
    "false_positive_rate",
    "pair_counts",
    "recall_by",
    "recall_by_edit_band",
    "recall_by_kind",
]

NEGATIVE_KINDS = ("disclaimer", "same_topic", "junk")

#: Upper bounds (inclusive) of the edit-ratio bands; the last band is open.
EDIT_BANDS: tuple[tuple[str, float], ...] = (
    ("0", 0.0),
    ("(0,5%]", 0.05),
    ("(5,10%]", 0.10),
    ("(10,20%]", 0.20),
    ("(20,30%]", 0.30),
    (">30%", float("inf")),
)


@dataclass(frozen=True)
class PairCounts:
    true_pairs: int
    predicted_pairs: int
    correct_pairs: int

    @property
    def precision(self) -> float:
        return self.correct_pairs / self.predicted_pairs if self.predicted_pairs else 1.0

    @property
    def recall(self) -> float:
        return self.correct_pairs / self.true_pairs if self.true_pairs else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class Rate:
    """``hits`` out of ``total`` (a recall or a false-positive rate); ``value`` is 0.0 when empty."""

    hits: int
    total: int

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else 0.0


def _check_same_ids(gold: Mapping[Hashable, Hashable], predicted: Mapping[Hashable, Hashable]) -> None:
    if gold.keys() != predicted.keys():
        missing = len(gold.keys() - predicted.keys())
        extra = len(predicted.keys() - gold.keys())
        raise ValueError(
            f"gold and predicted must label the same documents ({missing} missing from predicted, "
            f"{extra} not in gold): score the verdicts of exactly the benchmark's documents"
        )


def _pairs_within(sizes: Iterable[int]) -> int:
    return sum(n * (n - 1) // 2 for n in sizes)


def pair_counts(gold: Mapping[Hashable, Hashable], predicted: Mapping[Hashable, Hashable]) -> PairCounts:
    """Count true, predicted and correct pairs without listing them (cluster sizes suffice)."""
    _check_same_ids(gold, predicted)
    both = Counter((gold[doc], predicted[doc]) for doc in gold)
    return PairCounts(
        true_pairs=_pairs_within(Counter(gold.values()).values()),
        predicted_pairs=_pairs_within(Counter(predicted.values()).values()),
        correct_pairs=_pairs_within(both.values()),
    )


def recall_by(
    gold: Mapping[Hashable, Hashable],
    predicted: Mapping[Hashable, Hashable],
    groups_of_pair: Callable[[Hashable, Hashable], Iterable[str]],
) -> dict[str, Rate]:
    """Recall of the true pairs, split by the group(s) ``groups_of_pair(a, b)`` names for each pair.

    A pair named under two groups counts in both.

    >>> gold = {"a": 1, "b": 1, "c": 1}
    >>> predicted = {"a": 0, "b": 0, "c": 9}
    >>> kind = {"a": "original", "b": "add", "c": "short"}
    >>> rates = recall_by(gold, predicted, lambda x, y: {kind[x], kind[y]} - {"original"})
    >>> {k: (r.hits, r.total) for k, r in sorted(rates.items())}
    {'add': (1, 2), 'short': (0, 2)}
    """
    _check_same_ids(gold, predicted)
    members: dict[Hashable, list[Hashable]] = defaultdict(list)
    for doc, story in gold.items():
        members[story].append(doc)
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for docs in members.values():
        for a, b in combinations(docs, 2):
            found = predicted[a] == predicted[b]
            for group in set(groups_of_pair(a, b)):
                totals[group] += 1
                hits[group] += found
    return {group: Rate(hits[group], totals[group]) for group in totals}


def recall_by_kind(docs: Sequence[Mapping], predicted: Mapping[Hashable, Hashable]) -> dict[str, Rate]:
    """Recall per reprint kind.

    A true pair counts under the kind of its more edited member (larger ``edit_ratio``; both
    kinds on a tie, ``original`` only when both are originals), so a kind that is always missed
    (say ``short``) does not drag down the kinds it is paired with.

    >>> docs = [{"id": "o", "story": 1, "kind": "original", "edit_ratio": 0.0},
    ...         {"id": "f", "story": 1, "kind": "format", "edit_ratio": 0.0},
    ...         {"id": "s", "story": 1, "kind": "short", "edit_ratio": 0.6}]
    >>> rates = recall_by_kind(docs, {"o": 0, "f": 0, "s": 1})
    >>> {k: (r.hits, r.total) for k, r in sorted(rates.items())}
    {'format': (1, 1), 'short': (0, 2)}
    """
    gold = {d["id"]: d["story"] for d in docs}
    kind = {d["id"]: d["kind"] for d in docs}
    ratio = {d["id"]: float(d.get("edit_ratio") or 0.0) for d in docs}

    def kinds(a: Hashable, b: Hashable) -> set[str]:
        if ratio[a] != ratio[b]:
            return {kind[max((a, b), key=ratio.__getitem__)]}
        return ({kind[a], kind[b]} - {"original"}) or {"original"}

    return recall_by(gold, predicted, kinds)


def edit_band(ratio: float) -> str:
    """The :data:`EDIT_BANDS` label of an edit ratio."""
    if ratio < 0:
        raise ValueError(f"an edit ratio is >= 0, got {ratio}")
    for label, upper in EDIT_BANDS:
        if ratio <= upper:
            return label
    raise AssertionError("unreachable: the last band is open")


def recall_by_edit_band(docs: Sequence[Mapping], predicted: Mapping[Hashable, Hashable]) -> dict[str, Rate]:
    """Recall per edit-ratio band of a pair: the larger ``edit_ratio`` of its two documents."""
    gold = {d["id"]: d["story"] for d in docs}
    ratio = {d["id"]: float(d.get("edit_ratio") or 0.0) for d in docs}
    return recall_by(gold, predicted, lambda a, b: [edit_band(max(ratio[a], ratio[b]))])


def false_positive_rate(
    gold: Mapping[Hashable, Hashable], predicted: Mapping[Hashable, Hashable], docs: Iterable[Hashable]
) -> Rate:
    """Share of ``docs`` put in a predicted cluster together with a document of another story.

    >>> gold = {"a": 1, "b": 2, "c": 3}
    >>> predicted = {"a": 0, "b": 0, "c": 5}
    >>> rate = false_positive_rate(gold, predicted, ["b", "c"])
    >>> rate.hits, rate.total
    (1, 2)
    """
    _check_same_ids(gold, predicted)
    stories_in: dict[Hashable, set[Hashable]] = defaultdict(set)
    for doc, cluster in predicted.items():
        stories_in[cluster].add(gold[doc])
    checked = list(docs)
    unknown = [d for d in checked if d not in gold]
    if unknown:
        raise ValueError(f"{len(unknown)} documents are not in gold (e.g. {unknown[0]!r}): pass ids of scored docs")
    hits = sum(1 for d in checked if len(stories_in[predicted[d]]) > 1)
    return Rate(hits, len(checked))


def clusters_from_verdicts(verdicts: Iterable[Mapping]) -> dict[Hashable, Hashable]:
    """``doc id -> cluster`` from verdict dicts (``newsdedup dedup`` output lines).

    A verdict's ``cluster_id`` is its cluster; a verdict without one (older output) falls back to
    its ``duplicate_of``'s cluster, else to its own id.
    """
    clusters: dict[Hashable, Hashable] = {}
    for verdict in verdicts:
        doc = verdict["id"]
        cluster = verdict.get("cluster_id")
        if cluster is None:
            earlier = verdict.get("duplicate_of")
            cluster = clusters.get(earlier, earlier) if earlier is not None else doc
        clusters[doc] = cluster
    return clusters


@dataclass
class Report:
    """Everything the benchmark prints for one run."""

    overall: PairCounts
    by_kind: dict[str, Rate]
    by_band: dict[str, Rate]
    negatives_fp: Rate
    fp_by_kind: dict[str, Rate] = field(default_factory=dict)


def evaluate(
    docs: Sequence[Mapping],
    predicted: Mapping[Hashable, Hashable],
    *,
    negative_kinds: Sequence[str] = NEGATIVE_KINDS,
) -> Report:
    """Score ``predicted`` (doc id -> cluster) against the benchmark documents ``docs``."""
    gold = {d["id"]: d["story"] for d in docs}
    negatives: dict[str, list[Hashable]] = {kind: [] for kind in negative_kinds}
    for d in docs:
        if d["kind"] in negatives:
            negatives[d["kind"]].append(d["id"])
    return Report(
        overall=pair_counts(gold, predicted),
        by_kind=recall_by_kind(docs, predicted),
        by_band=recall_by_edit_band(docs, predicted),
        negatives_fp=false_positive_rate(gold, predicted, [d for ids in negatives.values() for d in ids]),
        fp_by_kind={kind: false_positive_rate(gold, predicted, ids) for kind, ids in negatives.items()},
    )
