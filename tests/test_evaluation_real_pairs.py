"""The hand-labelled real pairs (issue 26): the label file, the sampler's parts, and the stage that scores settings.

The label file ships with the package (ids and notes only); the tests marked ``shared_data`` resolve its ids to the
real texts in ``../shared/data`` and run the scoring stage on a few pairs.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from newsdedup.dedup.single_pass import NearSettings
from newsdedup.evaluation import real_pairs
from newsdedup.evaluation.real_pair_scores import (
    PairJudge,
    describe,
    evaluate_real_pairs,
    grid,
    score,
    stage_results,
    suggest,
)
from newsdedup.evaluation.real_pairs import (
    BINS,
    LABELS,
    bin_of,
    candidate_pairs,
    compact,
    gram_hashes,
    jaccard,
    load_labels,
    passages,
    shared_blocks,
    split_pairs,
)
from newsdedup.evaluation.reprints import char_ngram_jaccard
from newsdedup.evaluation.suite import format_markdown, format_summary, parse_stages

REPORT = ("国家统计局今天发布数据，十月份居民消费价格同比上涨百分之二点五，涨幅比上月回落零点一个百分点。"
          "其中食品价格上涨百分之三点三，非食品价格上涨百分之二点三。专家认为物价总体平稳。")
ARTICLE = ("记者从市教育局了解到，今年全市新建的十二所中小学已经全部投入使用，新增学位一万余个。在城东新区，一所可以容纳两千名"
           "学生的九年一贯制学校是今年秋季开学的。教育局有关负责人表示，这些学校的建设缓解了城区入学难的问题，也为周边的居民"
           "提供了便利。据介绍，明年还将有八所学校开工建设，其中有三所是在老城区改建的。家长们对此表示欢迎，认为孩子上学的路程"
           "缩短了，接送也更方便了。")
COMMENT = ("评论员文章：物价走势如何看？" + REPORT[:61].replace("，", "， ") + "这意味着通胀压力可控，"
           "但猪肉价格的季节性波动仍需关注，货币政策不必因此收紧。")


@pytest.fixture(scope="module")
def labels() -> list[dict]:
    return load_labels()


# The label file as labelled (evaluation/labels): a relabelled or added pair changes these on purpose.
LABEL_COUNTS = {"near_duplicate": 143, "different": 134, "reuse": 123, "junk": 8}
PAIRS_BY_BIN = {"0.05-0.1": 72, "0.1-0.2": 77, "0.2-0.35": 63, "0.35-0.5": 61, "0.5-0.7": 45, "0.7-0.9": 45,
                "0.9-1.0": 45}


def test_the_label_file_holds_400_pairs_in_every_bin_split_half_and_half(labels):
    assert len(labels) == sum(LABEL_COUNTS.values()) == 408
    counts = Counter(row["label"] for row in labels)
    assert set(counts) <= set(LABELS)
    assert counts == LABEL_COUNTS  # at least 100 of each of the three kinds the scores are about
    by_bin: dict[str, Counter] = defaultdict(Counter)
    for row in labels:
        by_bin[row["bin"]][row["split"]] += 1
    assert set(by_bin) == {f"{low}-{high}" for low, high in BINS}
    assert {name: sum(halves.values()) for name, halves in by_bin.items()} == PAIRS_BY_BIN  # at least 40 a bin
    for name, halves in by_bin.items():
        assert abs(halves["tune"] - halves["test"]) <= 1, (name, halves)
    # The split is the seeded hash's, not edited by hand: recomputing it gives the stored one.
    expected = split_pairs(labels)
    assert all(row["split"] == expected[real_pairs.pair_id(row["a"], row["b"])] for row in labels)


def test_every_reuse_pair_names_its_passages_and_borderline_calls_are_marked(labels):
    for row in labels:
        if row["label"] == "reuse":
            for passage in row["passages"]:
                assert 0 <= passage["a"][0] < passage["a"][1] and 0 <= passage["b"][0] < passage["b"][1]
        assert row["certain"] == (not row["note"].startswith(("uncertain", "borderline")))


@pytest.mark.parametrize("change, message", [
    ({"label": "duplicate"}, "not in"),
    ({"split": "train"}, "not in"),
    ({"jaccard": 0.95}, "is not in bin"),
    ({"passages": []}, "names its passages"),
])
def test_load_labels_rejects_a_bad_line_naming_it(tmp_path: Path, change, message):
    good = {"a": "x:1", "b": "x:2", "jaccard": 0.25, "bin": "0.2-0.35", "split": "tune", "label": "reuse",
            "certain": True, "passages": [{"a": [0, 90], "b": [10, 100], "chars": 90}], "note": "quoted"}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "a": "x:0", **change}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        load_labels(path)
    assert ":2:" in str(error.value)
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="written once"):
        load_labels(path)


def test_bins_cover_the_range_from_005():
    assert (bin_of(0.049), bin_of(0.05), bin_of(0.35), bin_of(0.9), bin_of(1.0)) == ("", "0.05-0.1", "0.35-0.5", "0.9-1.0", "0.9-1.0")


def test_passages_locate_a_quoted_paragraph_in_both_texts_despite_spacing():
    other = "另一篇报道：某地今年粮食产量再创新高，农民收入稳步增长。" * 3
    corpus = "\x00".join(compact(t) for t in (REPORT, COMMENT, other))
    found = passages(REPORT, COMMENT, corpus)
    assert len(found) == 1
    (passage,) = found
    quoted_in_report = REPORT[passage["a"][0]:passage["a"][1]]
    quoted_in_comment = COMMENT[passage["b"][0]:passage["b"][1]]
    assert compact(quoted_in_report) == compact(quoted_in_comment) and passage["chars"] >= 55
    assert quoted_in_report.startswith("国家统计局") and COMMENT[:passage["b"][0]] == "评论员文章：物价走势如何看？"
    assert shared_blocks(REPORT, other) == []
    # Text that more than max_texts documents carry is boilerplate, not a reused passage.
    assert passages(REPORT, COMMENT, "\x00".join([compact(REPORT)] * 30)) == []


def test_candidate_pairs_find_the_overlapping_pair_and_fold_identical_texts():
    filler = "完全无关的另一段文字讲述体育比赛的结果，主队在最后时刻绝杀客队，球迷欢呼雀跃。"
    texts = {"s:1": REPORT, "s:2": COMMENT, "s:3": REPORT, "s:4": filler * 2}
    found = candidate_pairs(texts)
    assert set(found) == {("s:1", "s:2")}  # s:3 is s:1 again (folded), s:4 shares nothing
    assert found["s:1", "s:2"] == pytest.approx(jaccard(gram_hashes(REPORT), gram_hashes(COMMENT)), abs=1e-4)
    assert found["s:1", "s:2"] == pytest.approx(char_ngram_jaccard(REPORT, COMMENT), abs=0.01)


def test_score_counts_reuse_as_a_false_positive_and_leaves_junk_out():
    rows = [{"a": str(i), "b": f"{i}b", "split": "tune", "label": label, "certain": i != 2}
            for i, label in enumerate(["near_duplicate", "near_duplicate", "reuse", "different", "junk"])]
    called = {("0", "0b"): True, ("1", "1b"): False, ("2", "2b"): True, ("3", "3b"): False, ("4", "4b"): True}
    result = score(rows, called, "tune")
    assert (result.true_positives, result.false_positives, result.false_negatives) == (1, 1, 1)
    assert (result.reuse_called, result.reuse_pairs, result.different_pairs) == (1, 1, 1)
    assert (result.precision, result.recall, result.precision_without_reuse) == (0.5, 0.5, 1.0)
    assert score(rows, called, "tune", certain_only=True).false_positives == 0
    assert score(rows, called, "test").true_positives == 0


def test_the_grid_covers_the_issue_settings_and_the_suggestion_needs_precision():
    settings = grid()
    assert NearSettings(method="spotsigs") in settings and NearSettings(method="simhash") in settings
    # tau x (containment off, or 4 values with and without the whole rule, each with and without the share rule)
    assert len(settings) == 7 * (1 + 4 * 2 * 2) + 4
    assert NearSettings(method="spotsigs", spotsigs_containment_whole_below=0.6) in settings
    assert NearSettings(method="spotsigs", spotsigs_containment_min_share=None) in settings
    row = lambda name, p, f1, reuse: {"setting": name, "method": "spotsigs", "tune": {"precision": p, "f1": f1, "reuse_called": reuse}}
    rows = [row("loose", 0.90, 0.95, 5), row("strict", 0.99, 0.90, 0), row("stricter", 0.99, 0.90, 1)]
    assert suggest(rows, "spotsigs") == (rows[1], True)
    assert suggest(rows[:1], "spotsigs") == (rows[0], False)


@pytest.mark.shared_data
def test_label_ids_resolve_to_the_texts_and_their_jaccard(shared_data: Path, labels):
    texts = real_pairs.load_texts(shared_data)
    for row in labels:
        a, b = texts[row["a"]], texts[row["b"]]
        assert jaccard(gram_hashes(a), gram_hashes(b)) == pytest.approx(row["jaccard"], abs=1e-4), row["note"]
        for passage in row.get("passages", []):
            piece_a, piece_b = a[slice(*passage["a"])], b[slice(*passage["b"])]
            assert len(compact(piece_a)) >= passage["chars"] - 1 and len(compact(piece_b)) >= passage["chars"] - 1
            # Merged across short gaps, so not verbatim; offsets gone wrong would share next to nothing.
            assert char_ngram_jaccard(piece_a, piece_b) > 0.3, (row["note"], piece_a[:40], piece_b[:40])


@pytest.mark.shared_data
def test_the_stage_decides_clear_pairs_under_every_default(shared_data: Path, labels):
    clear = [row for row in labels if row["certain"]]
    copies = sorted((r for r in clear if r["label"] == "near_duplicate"), key=lambda r: -r["jaccard"])[:3]
    unrelated = sorted((r for r in clear if r["label"] == "different"), key=lambda r: r["jaccard"])[:3]
    few = [{**row, "split": "tune"} for row in copies + unrelated]
    rows = evaluate_real_pairs(shared_data, labels=few,
                               settings=[NearSettings(method="spotsigs"), NearSettings(method="simhash")])
    for row in rows:
        tune = row["tune"]
        assert (tune["tp"], tune["fn"], tune["fp"]) == (3, 0, 0), (row["setting"], tune)
        assert row["test"]["tp"] + row["test"]["fn"] == 0


def test_the_judge_files_b_as_a_copy_of_a_only_when_it_is_one(tmp_path: Path):
    judge = PairJudge()
    near = NearSettings(method="spotsigs")
    assert judge.is_near_duplicate(near, ARTICLE, ARTICLE + "（责任编辑：张三）")
    assert judge.is_near_duplicate(NearSettings(method="simhash"), ARTICLE, " ".join(ARTICLE))  # exact stage
    assert not judge.is_near_duplicate(near, ARTICLE, "完全无关的一段文字，" + REPORT)
    with pytest.raises(ValueError, match="not in"):
        evaluate_real_pairs(tmp_path, labels=[{"a": "nowhere:1", "b": "nowhere:2", "split": "tune",
                                                  "label": "different"}], texts={})


@pytest.mark.shared_data
def test_newsdedup_eval_reports_the_pairs_stage(shared_data: Path, labels):
    assert "pairs" in parse_stages("text,pairs")
    few = [row for row in labels if row["certain"]][:12]
    results = {"meta": {"data": str(shared_data), "seed": 1, "python": "3", "cpus": 1, "started": "now",
                        "seconds": {}}, "real_pairs": stage_results(shared_data, labels=few)}
    assert len(results["real_pairs"]["rows"]) == len(grid())
    default = results["real_pairs"]["default"]  # what floors name: real_pairs.default.test.f1 and the like
    assert default["setting"] == describe(NearSettings()) and set(default) >= {"tune", "test", "certain"}
    assert sum(sum(c.values()) for c in results["real_pairs"]["pairs"].values()) == 12
    report, summary = format_markdown(results), format_summary(results)
    assert "## Real labelled pairs" in report and "| simhash k=6 |" in report
    assert f"spotsigs: shipped {describe(NearSettings(method='spotsigs'))}" in summary and "simhash: shipped simhash k=" in summary


def test_the_relations_stage_scores_both_stages_and_leaves_disputed_pairs_apart(tmp_path):
    """newsdedup.evaluation.relations on invented texts: a copy (near), a commentary quoting a report (reuse, linked),
    an unrelated pair, and a pair the second reader disputes."""
    from newsdedup.evaluation import relations

    report = ("国家统计局今天发布数据显示，十月份全国居民消费价格同比上涨百分之二点五，其中城市上涨百分之二点五，农村上涨百分之"
              "二点四；食品价格上涨百分之三点三，非食品价格上涨百分之二点四。统计局的专家表示，猪肉和鲜菜的价格是主要的推动"
              "因素，而能源价格的上涨也在其中起了一定的作用。")
    comment = ("评论员文章：物价走势如何看？市场对这组数据的解读出现了分歧，有人担心通胀抬头，也有人认为不必过虑。\n" + report
               + "\n在我们看来，这意味着通胀压力总体可控。一方面，猪肉价格的周期性上涨已经接近尾声，生猪存栏量正在逐步恢复；"
               "另一方面，国际油价近期回落，输入性通胀的压力也在减轻。货币政策因此没有必要因为短期的菜价波动而收紧。")
    other = ("第二届中国国际进口博览会今天在上海开幕，来自一百五十多个国家和地区的三千多家企业参展。展会期间还将举办虹桥国际"
             "经济论坛，围绕开放创新、贸易与投资等议题展开讨论。主办方表示，本届展会的展览面积比上一届扩大了三万平方米。")
    texts = {"x:report": report, "x:copy": "（来源：新华社）" + report, "y:comment": comment, "z:other": other}
    labels = [
        {"a": "x:copy", "b": "x:report", "split": "test", "label": "near_duplicate"},
        {"a": "x:report", "b": "y:comment", "split": "test", "label": "reuse"},
        {"a": "x:report", "b": "z:other", "split": "test", "label": "different"},
        {"a": "y:comment", "b": "z:other", "split": "test", "label": "reuse"},  # disputed: the second says different
    ]
    second = tmp_path / relations.SECOND_READER
    second.parent.mkdir(parents=True)
    second.write_text(json.dumps({"a": "y:comment", "b": "z:other", "label": "different"}) + "\n", encoding="utf-8")
    results = relations.stage_results(tmp_path, labels=labels, texts=texts)
    test = results["test"]
    assert (test["tp"], test["fp"], test["fn"]) == (1, 0, 0)
    assert (test["reuse_linked"], test["reuse"], test["different_linked"], test["different"]) == (1, 1, 0, 1)
    assert results["test_with_disputed"]["reuse"] == 2 and results["test_with_disputed"]["reuse_linked"] == 1
    assert results["disputed"] == [{"a": "y:comment", "b": "z:other", "split": "test", "first": "reuse",
                                    "second": "different", "call": "none"}]
    assert "disputed" in "\n".join(relations.markdown(results)) and len(relations.lines(results)) == 4
