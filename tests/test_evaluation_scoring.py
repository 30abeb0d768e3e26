"""Pairwise scoring on tiny hand-made clusterings (every expected number is countable by hand)."""

from __future__ import annotations

import pytest

from newsdedup.evaluation.scoring import PairCounts, clusters_from_verdicts, edit_band, evaluate, pair_counts

# Story 1 = {a, b, c} (3 true pairs), story 2 = {d, e} (1 true pair), story 3 = {f}: 4 true pairs.
GOLD = {"a": 1, "b": 1, "c": 1, "d": 2, "e": 2, "f": 3}


def test_perfect_clustering_scores_one():
    counts = pair_counts(GOLD, {doc: f"cluster-{story}" for doc, story in GOLD.items()})
    assert (counts.true_pairs, counts.predicted_pairs, counts.correct_pairs) == (4, 4, 4)
    assert counts.precision == counts.recall == counts.f1 == 1.0


def test_all_singletons_claim_nothing_and_find_nothing():
    counts = pair_counts(GOLD, {doc: doc for doc in GOLD})
    assert counts == PairCounts(true_pairs=4, predicted_pairs=0, correct_pairs=0)
    assert counts.precision == 1.0  # no pair claimed, none wrong
    assert counts.recall == 0.0
    assert counts.f1 == 0.0


def test_one_big_cluster_finds_everything_with_low_precision():
    counts = pair_counts(GOLD, {doc: "all" for doc in GOLD})
    assert (counts.predicted_pairs, counts.correct_pairs) == (15, 4)  # C(6,2) = 15
    assert counts.recall == 1.0
    assert counts.precision == pytest.approx(4 / 15)
    assert counts.f1 == pytest.approx(2 * (4 / 15) / (1 + 4 / 15))


def test_split_story_and_false_merge():
    # c is split from a, b and merged with d, e: predicted pairs ab, cd, ce, de; correct ab, de.
    predicted = {"a": "x", "b": "x", "c": "y", "d": "y", "e": "y", "f": "z"}
    counts = pair_counts(GOLD, predicted)
    assert (counts.true_pairs, counts.predicted_pairs, counts.correct_pairs) == (4, 4, 2)
    assert counts.precision == 0.5 and counts.recall == 0.5 and counts.f1 == 0.5


def test_cluster_labels_need_not_match_story_labels():
    relabelled = {"a": 7, "b": 7, "c": 7, "d": 1, "e": 1, "f": 2}  # 1 now names story 2's cluster
    assert pair_counts(GOLD, relabelled).f1 == 1.0


def test_different_documents_are_rejected():
    with pytest.raises(ValueError, match="same documents"):
        pair_counts(GOLD, {"a": 1})


DOCS = [
    {"id": "o", "story": "s", "kind": "original", "edit_ratio": 0.0},
    {"id": "add", "story": "s", "kind": "add", "edit_ratio": 0.04},
    {"id": "short", "story": "s", "kind": "short", "edit_ratio": 0.66},
    {"id": "o2", "story": "t", "kind": "original", "edit_ratio": 0.0},
    {"id": "del", "story": "t", "kind": "delete", "edit_ratio": 0.25},
    {"id": "junk1", "story": "j1", "kind": "junk", "edit_ratio": 0.0},
    {"id": "junk2", "story": "j2", "kind": "junk", "edit_ratio": 0.0},
    {"id": "topic", "story": "q", "kind": "same_topic", "edit_ratio": 0.0},
]
# The short version is missed, the delete reprint found, the two junk texts merged.
PREDICTED = {"o": 1, "add": 1, "short": 2, "o2": 3, "del": 3, "junk1": 4, "junk2": 4, "topic": 5}


def test_recall_by_kind_charges_the_more_edited_member():
    rates = evaluate(DOCS, PREDICTED).by_kind
    # Pairs: o-add (add, found), o-short (short, missed), add-short (short, missed), o2-del (delete, found).
    assert {k: (r.hits, r.total) for k, r in rates.items()} == {"add": (1, 1), "short": (0, 2), "delete": (1, 1)}


def test_recall_by_edit_band_uses_the_larger_ratio():
    rates = evaluate(DOCS, PREDICTED).by_band
    assert {k: (r.hits, r.total) for k, r in rates.items()} == {
        "(0,5%]": (1, 1), ">30%": (0, 2), "(20,30%]": (1, 1)
    }


@pytest.mark.parametrize(
    ("ratio", "band"),
    [(0.0, "0"), (0.01, "(0,5%]"), (0.05, "(0,5%]"), (0.051, "(5,10%]"), (0.2, "(10,20%]"),
     (0.3, "(20,30%]"), (0.31, ">30%"), (0.9, ">30%")],
)
def test_edit_band_edges(ratio, band):
    assert edit_band(ratio) == band


def test_edit_band_rejects_negative_ratio():
    with pytest.raises(ValueError):
        edit_band(-0.1)


def test_false_positive_rate_counts_negatives_clustered_with_another_story():
    fp = evaluate(DOCS, PREDICTED).fp_by_kind
    assert (fp["junk"].hits, fp["junk"].total) == (2, 2)  # merged with each other
    assert (fp["same_topic"].hits, fp["same_topic"].total) == (0, 1)
    # A reprint in its own story's cluster is no false positive, even when its story is a hard negative's kind.
    docs = [*DOCS, {"id": "junk1-copy", "story": "j1", "kind": "junk", "edit_ratio": 0.0}]
    assert evaluate(docs, {**PREDICTED, "junk2": 6, "junk1-copy": 4}).fp_by_kind["junk"].hits == 0


def test_evaluate_puts_it_together():
    report = evaluate(DOCS, PREDICTED)
    # True pairs: 3 in s + 1 in t = 4; predicted: o-add, o2-del, junk1-junk2 = 3; correct 2.
    assert (report.overall.true_pairs, report.overall.predicted_pairs, report.overall.correct_pairs) == (4, 3, 2)
    assert (report.negatives_fp.hits, report.negatives_fp.total) == (2, 3)
    assert report.fp_by_kind["junk"].value == 1.0
    assert report.fp_by_kind["same_topic"].value == 0.0
    assert report.fp_by_kind["disclaimer"].total == 0
    row = report.as_dict()
    assert (row["precision"], row["recall"], row["negatives_fp_rate"]) == (0.6667, 0.5, 0.6667)
    assert row["recall_by_band"] == {"(0,5%]": {"hits": 1, "total": 1, "rate": 1.0},
                                     "(20,30%]": {"hits": 1, "total": 1, "rate": 1.0},
                                     ">30%": {"hits": 0, "total": 2, "rate": 0.0}}


def test_clusters_from_verdicts_reads_cluster_ids_and_falls_back():
    verdicts = [
        {"id": "a", "status": "unique", "duplicate_of": None, "cluster_id": "a"},
        {"id": "b", "status": "near_duplicate", "duplicate_of": "a", "cluster_id": "a"},
        {"id": "c", "status": "exact_duplicate", "duplicate_of": "b"},  # no cluster_id: follows b
        {"id": "d", "status": "unique", "duplicate_of": None},
    ]
    assert clusters_from_verdicts(verdicts) == {"a": "a", "b": "a", "c": "a", "d": "d"}
