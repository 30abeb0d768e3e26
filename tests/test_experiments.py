"""The papers' experiments: recognition counting on hand-made runs, and one small run on the shared data."""

from __future__ import annotations

import json

import pytest

from newsdedup.dedup.single_pass import NearSettings
from newsdedup.evaluation.experiments import (
    FIG2_SHARES,
    FIG4_THRESHOLDS,
    FIG5_SHARES,
    _recognised,
    format_markdown,
    run_paper_experiments,
)
from newsdedup.evaluation.methods import MethodRun, MethodSpec, Runner, product_specs


def test_a_copy_counts_as_recognised_only_in_its_own_originals_cluster():
    predicted = {"a": "a", "b": "b", "c": "c",
                 "copy:a": "a",  # recognised
                 "copy:b": "a",  # put with another original: wrong
                 "copy:c": "copy:c"}  # a cluster of its own: missed
    run = MethodRun(MethodSpec("m", "paper", ""), predicted, set(), None, 0.0)
    assert _recognised(run, ["a", "b", "c"]) == (1, 1)
    # An original that itself joined another original's cluster: its copy there counts as its own.
    assert _recognised(MethodRun(run.spec, {**predicted, "b": "a"}, set(), None, 0.0), ["a", "b", "c"]) == (2, 0)


@pytest.fixture(scope="module")
def small_run(shared_data, tmp_path_factory):
    from newsdedup.evaluation.reprints import build_text_benchmark

    docs = build_text_benchmark(shared_data, stories=40, singletons=40, disclaimer_negatives=10,
                                same_topic_pairs=10, junk=5, other_corpus=10)
    out = tmp_path_factory.mktemp("experiments")
    steps = []
    return run_paper_experiments(shared_data, out, benchmark_docs=docs, bases=12, workers=2,
                                 progress=steps.append), out, steps, docs


def _rows(result, key, **match):
    return [r for r in result[key]["rows"] if all(r[k] == v for k, v in match.items())]


def test_run_writes_three_pngs_and_json(small_run):
    result, out, steps, _ = small_run
    assert result["plots"] == [result[k]["plot"] for k in ("spotsigs_fig4", "fingerprint_fig2", "esimhash_fig5")]
    for name in result["plots"]:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.dumps(result)  # serialisable as it is
    assert steps and set(result["seconds"]) == {"spotsigs_fig4", "fingerprint_fig2", "esimhash_fig5"}


def test_fig4_runs_the_products_single_pass(small_run):
    result, _, _, docs = small_run
    names = [m["name"] for m in result["spotsigs_fig4"]["methods"]]
    assert len(result["spotsigs_fig4"]["rows"]) == len(FIG4_THRESHOLDS) * len(names) == 36
    with Runner(workers=0) as runner:  # the text level's default row over the same documents
        ((run,),) = runner.run([[(d["id"], d["text"]) for d in docs]], product_specs("spotsigs")[:1])
    gold = {d["id"]: d["story"] for d in docs}
    from newsdedup.evaluation.scoring import pair_counts

    counts = pair_counts(gold, run.predicted)
    (row,) = _rows(result, "spotsigs_fig4", method="spotsigs", threshold=NearSettings().spotsigs_tau)
    assert (row["true_pairs"], row["predicted_pairs"], row["correct_pairs"]) == (
        counts.true_pairs, counts.predicted_pairs, counts.correct_pairs)
    for name in ("spotsigs-paper", "spotsigs-paper-basic"):  # Jaccard only: a higher bar loses pairs
        recalls = [_rows(result, "spotsigs_fig4", method=name, threshold=t)[0]["recall"] for t in FIG4_THRESHOLDS]
        assert recalls == sorted(recalls, reverse=True) and recalls[0] > recalls[-1]
    for tau in FIG4_THRESHOLDS:  # the containment fallback only adds matches
        paper, default = (_rows(result, "spotsigs_fig4", method=m, threshold=tau)[0] for m in ("spotsigs-paper", "spotsigs"))
        assert default["recall"] >= paper["recall"]


def test_fig2_recognition_falls_as_more_text_changes(small_run):
    result, _, _, _ = small_run
    assert len(result["fingerprint_fig2"]["rows"]) == (2 * len(FIG2_SHARES) + 1) * 5
    for method in ("simhash", "esimhash", "shingling"):
        for operation in ("add", "delete"):
            first, last = (_rows(result, "fingerprint_fig2", method=method, operation=operation, share=s)[0]
                           for s in (0.01, 0.2))
            assert first["rate"] > last["rate"] and first["copies"] == 12
    for method in ("simhash", "esimhash", "spotsigs", "hybrid", "shingling"):  # 1% of the text: still a copy
        assert _rows(result, "fingerprint_fig2", method=method, operation="add", share=0.01)[0]["rate"] >= 0.75
    reorder = {r["method"]: r for r in _rows(result, "fingerprint_fig2", operation="reorder")}
    assert reorder["simhash"]["rate"] > reorder["shingling"]["rate"]  # a bag of words against word order


def test_fig5_dedup_rate_and_markdown(small_run):
    result, _, _, _ = small_run
    names = {m["name"] for m in result["esimhash_fig5"]["methods"]}
    assert names == {"simhash", "simhash-128-k10", "esimhash", "spotsigs", "hybrid", "i-match"}
    for name in ("simhash", "esimhash", "simhash-128-k10"):
        rates = [_rows(result, "esimhash_fig5", method=name, modification=s)[0]["rate"] for s in FIG5_SHARES]
        assert rates[0] > rates[-1]
    text = format_markdown(result)
    assert all(f"]({name})" in text for name in result["plots"])
    assert "| 0.1 |" in text and "| 5% |" in text and "0.833" in text
