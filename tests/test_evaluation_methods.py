"""The evaluation's method runner: the product's methods through Deduplicator, baselines, scores and cost."""

from __future__ import annotations

from test_cli import OTHER, STORY

from newsdedup.evaluation.methods import DEFAULT_METHOD, MethodSpec, method_specs, report_row, run_methods

EDITED = STORY.replace("十二公里", "约十二公里").replace("两千余人次", "两千多人次") + "本文来源：临江日报。"
DOCS = [
    {"id": "a", "text": STORY, "story": "s1", "kind": "original", "edit_ratio": 0.0},
    {"id": "b", "text": OTHER, "story": "s2", "kind": "singleton", "edit_ratio": 0.0},
    {"id": "c", "text": "  " + STORY.replace("，", ",") + "\n", "story": "s1", "kind": "format", "edit_ratio": 0.0},
    {"id": "d", "text": EDITED, "story": "s1", "kind": "source", "edit_ratio": 0.1},
]
ITEMS = [(d["id"], d["text"]) for d in DOCS]


def test_specs_name_the_default_and_every_product_method_once():
    specs = method_specs(baselines=False)
    names = [s.name for s in specs]
    assert len(names) == len(set(names))
    assert DEFAULT_METHOD in names
    assert {s.near.method for s in specs} == {"simhash", "spotsigs", "hybrid", "esimhash", "dwdcs"}
    # Specs sharing a feature configuration are adjacent, so the runner segments each text once per config.
    configs = [s.features for s in specs]
    assert all(configs.index(c) == i or configs[i - 1] == c for i, c in enumerate(configs))


def test_default_method_clusters_the_reprints_and_catches_the_exact_copy():
    spec = next(s for s in method_specs(baselines=False) if s.name == DEFAULT_METHOD)
    (run,) = run_methods(ITEMS, [spec], workers=0)
    assert run.predicted["a"] == run.predicted["c"] == run.predicted["d"] != run.predicted["b"]
    assert run.exact == {"c"}
    row = report_row(run, DOCS)
    assert (row["precision"], row["recall"], row["f1"]) == (1.0, 1.0, 1.0)
    assert row["exact_detection"] == 1.0
    assert row["ms_per_doc"]["features"] > 0 and row["ms_per_doc"]["total"] >= row["ms_per_doc"]["dedup"]


class _OneCluster:
    """A clusterer that puts every document with the first one."""

    def cluster(self, items):
        items = list(items)
        return {key: items[0][0] for key, _ in items}


def test_a_method_that_merges_everything_loses_precision():
    spec = MethodSpec("one-cluster", "test", "merges everything", baseline=_OneCluster)
    (run,) = run_methods(ITEMS, [spec], workers=0)
    row = report_row(run, DOCS)
    assert row["precision"] == 0.5 and row["recall"] == 1.0  # 3 true pairs of 6 predicted
    assert row["negatives_fp"]["total"] == 0


def test_baselines_run_through_the_same_scoring():
    specs = [s for s in method_specs() if s.family == "baseline"]
    assert {"minhash-lsh", "shingling"} <= {s.name for s in specs}
    runs = run_methods(ITEMS, specs, workers=0)
    for run in runs:
        row = report_row(run, DOCS)
        assert run.predicted["b"] != run.predicted["a"]
        assert row["exact_detection"] is None and row["ms_per_doc"]["features"] is None
