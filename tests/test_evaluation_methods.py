"""The evaluation's method runner and tuning: the product's methods through Deduplicator, baselines, scores."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

from test_cli import OTHER, STORY

from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
from newsdedup.dedup.simhash import hamming
from newsdedup.dedup.single_pass import NearSettings
from newsdedup.evaluation import methods
from newsdedup.evaluation.methods import (
    DEFAULT_METHOD,
    MethodSpec,
    Runner,
    baseline_specs,
    product_specs,
    report_row,
    tune,
)

EDITED = STORY.replace("十二公里", "约十二公里").replace("两千余人次", "两千多人次") + "本文来源：临江日报。"
DOCS = [
    {"id": "a", "text": STORY, "story": "s1", "kind": "original", "edit_ratio": 0.0},
    {"id": "b", "text": OTHER, "story": "s2", "kind": "singleton", "edit_ratio": 0.0},
    {"id": "c", "text": "  " + STORY.replace("，", ",") + "\n", "story": "s1", "kind": "format", "edit_ratio": 0.0},
    {"id": "d", "text": EDITED, "story": "s1", "kind": "source", "edit_ratio": 0.1},
]
ITEMS = [(d["id"], d["text"]) for d in DOCS]


def test_rows_name_the_default_the_papers_and_a_tuned_setting_only_where_it_differs():
    rows = {method: product_specs(method) for method in methods.METHODS}
    assert [s.name for s in rows["spotsigs"]] == ["spotsigs", "spotsigs-paper"]
    assert rows["spotsigs"][0].near == NearSettings() and rows["spotsigs"][1].near.spotsigs_min_containment is None
    assert [s.name for s in rows["simhash"]] == ["simhash"]  # the product ships the paper's k=3
    tuned = replace(NearSettings(method="simhash"), simhash_max_distance=7)
    assert [s.name for s in product_specs("simhash", tuned)] == ["simhash", "simhash-tuned"]
    assert product_specs("simhash", tuned)[1].description == "64-bit, tf-idf words, k=7"
    assert [s.name for s in product_specs("simhash", NearSettings(method="simhash"))] == ["simhash"]
    assert {s.name for s in baseline_specs()} == {"minhash-lsh", "shingling", "i-match"}


def test_default_method_clusters_the_reprints_and_catches_the_exact_copy():
    with Runner(workers=0) as runner:
        ((run,),) = runner.run([ITEMS], product_specs(DEFAULT_METHOD)[:1])
    assert run.predicted["a"] == run.predicted["c"] == run.predicted["d"] != run.predicted["b"]
    assert run.exact == {"c"}
    row = report_row(run, DOCS)
    assert (row["precision"], row["recall"], row["f1"], row["exact_detection"]) == (1.0, 1.0, 1.0, 1.0)
    assert row["ms_per_doc"]["features"] > 0 and row["ms_per_doc"]["total"] >= row["ms_per_doc"]["dedup"]


class _OneCluster:
    """A clusterer that puts every document with the first one."""

    def cluster(self, items):
        items = list(items)
        return {key: items[0][0] for key, _ in items}


def test_a_method_that_merges_everything_loses_precision():
    with Runner(workers=0) as runner:
        ((run,),) = runner.run([ITEMS], [MethodSpec("one-cluster", "baseline", "merges everything", baseline=_OneCluster)])
    row = report_row(run, DOCS)
    assert row["precision"] == 0.5 and row["recall"] == 1.0  # 3 true pairs of 6 predicted
    assert row["exact_detection"] is None and row["ms_per_doc"]["features"] is None


def test_worker_processes_give_what_inline_gives_for_every_stream_and_row():
    specs = [*product_specs("hybrid"), *baseline_specs()[:1]]
    streams = [ITEMS, ITEMS[::-1]]
    with Runner(workers=2) as runner:
        spawned = [[run.predicted for run in runs] for runs in runner.run(streams, specs)]
    with Runner(workers=0) as runner:
        inline = [[run.predicted for run in runs] for runs in runner.run(streams, specs)]
    assert spawned == inline and spawned[0][0] != spawned[1][0]  # the second stream starts from "d", not "a"


def test_tuning_picks_the_smallest_distance_that_finds_the_copy_and_merges_nothing():
    extractor = FeatureExtractor(FeatureConfig(method="simhash"))
    distance = hamming(extractor.features(STORY).simhash, extractor.features(EDITED).simhash)
    assert 3 < distance <= 10  # the premise: the paper's k=3 misses this copy, the grid reaches it
    docs = [DOCS[0], DOCS[1], DOCS[3]]
    with Runner(workers=0) as runner:
        chosen, tried = tune(runner, docs, "simhash")
    assert chosen == NearSettings(method="simhash", simhash_max_distance=distance)
    assert len(tried) == len(methods.TUNING_GRID["simhash"]["simhash_max_distance"])
    assert [row["f1"] for row in tried if row["chosen"]] == [1.0]


def test_tuning_keeps_the_default_when_nothing_scores_better():
    with Runner(workers=0) as runner:
        chosen, _ = tune(runner, DOCS[:2], "dwdcs")  # no true pair, no false one: every setting ties
    assert chosen == NearSettings(method="dwdcs")


def test_baselines_run_over_product_features_when_a_row_names_them():
    from newsdedup.evaluation.baselines import MinHashLSHBaseline
    from newsdedup.evaluation.experiments import spot_keys

    lsh = MethodSpec("lsh", "baseline", "over spots", FeatureConfig(), baseline=partial(
        MinHashLSHBaseline, threshold=0.5, bands=32, rows=6, features=spot_keys))
    with Runner(workers=0) as runner:
        ((run,),) = runner.run([ITEMS], [lsh])
    assert run.predicted["d"] == "a" != run.predicted["b"]


def test_every_product_row_clusters_as_newsdedup_dedup_does(tmp_path):
    # The evaluation's figures stand for the product only while its runner gives what the product's own command
    # gives: the demo portal's 20 texts (reprints among them), a whitespace copy of each third, in one stream.
    from newsdedup.cli import main
    from newsdedup.demo.content import stories

    texts = [story.text for story in stories().values()]
    items = [(f"t{i}", text) for i, text in enumerate(texts)]
    items += [(f"copy{i}", " " + text.replace("，", ", ") + "\n") for i, text in enumerate(texts) if i % 3 == 0]
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": k, "text": t}, ensure_ascii=False) + "\n" for k, t in items),
                      encoding="utf-8")
    merged = 0
    with Runner(workers=0) as runner:
        for method in methods.METHODS:
            out = tmp_path / f"{method}.jsonl"
            assert main(["dedup", "--input", str(source), "--output", str(out), "--method", method, "--workers", "0"]) == 0
            verdicts = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
            ((run,),) = runner.run([items], product_specs(method)[:1])
            assert run.predicted == {v["id"]: v["cluster_id"] for v in verdicts}, method
            assert run.exact == {v["id"] for v in verdicts if v["status"] == "exact_duplicate"}, method
            merged += sum(v["status"] == "near_duplicate" for v in verdicts)
    assert merged  # the premise: near duplicates are found, so the comparison covers Single-Pass matches
