"""The issue 26 veto study (newsdedup.evaluation.near_veto): its features, its rules and its fitting."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from newsdedup.dedup.single_pass import NearSettings
from newsdedup.evaluation import near_veto
from newsdedup.evaluation.near_veto import (
    Condition,
    Study,
    describe,
    headline_of,
    headline_similarity,
    load_headlines,
    pair_features,
    rules,
)
from newsdedup.evaluation.real_pair_scores import PairJudge, evaluate_real_pairs
from newsdedup.evaluation.real_pairs import SOGOU, load_labels

ARTICLE = ("记者从市教育局了解到，今年全市新建的十二所中小学已经全部投入使用，新增学位一万余个。在城东新区，一所可以容纳两千名"
           "学生的九年一贯制学校是今年秋季开学的。教育局有关负责人表示，这些学校的建设缓解了城区入学难的问题，也为周边的居民"
           "提供了便利。据介绍，明年还将有八所学校开工建设，其中有三所是在老城区改建的。家长们对此表示欢迎，认为孩子上学的路程"
           "缩短了，接送也更方便了。")
OTHER = ("本报讯，省气象台昨天发布消息，受冷空气影响，本周后期全省将迎来一次明显的降温过程，部分地区的气温将下降八度以上。"
         "气象专家提醒市民注意添衣保暖，出行的时候要注意交通安全，农业生产也要做好防冻的准备工作。据了解，这是今年入秋以来"
         "最强的一次冷空气过程，预计要到下周初才会逐步结束。")


def test_pair_features_tell_where_the_shared_text_lies_in_the_larger_text():
    judge = PairJudge()
    first_half = ARTICLE[:110]
    abridged = pair_features(judge, ARTICLE, first_half)  # the first part kept: an abridged copy
    stitched = pair_features(judge, OTHER + ARTICLE, first_half)  # the same part after another report
    assert abridged["containment"] == pytest.approx(1.0) and abridged["length_ratio"] < 0.8
    assert abridged["cover_small"] > 0.95 and abridged["lead"] < 0.05 and abridged["tail"] > 0.3
    assert stitched["lead"] > 0.4 and stitched["cover_large"] < abridged["cover_large"]
    unrelated = pair_features(judge, ARTICLE, OTHER)
    assert unrelated["merged"] == 0.0 and unrelated["cover_small"] == 0.0
    assert pair_features(judge, ARTICLE, ARTICLE + "（责任编辑：张三）")["merged"] == 1.0


def _study(values: list[tuple[str, str, float, float]]) -> Study:
    """Pairs (label, split, jaccard, lead), every one merged by the shipped setting, the other features neutral."""
    labels, features = [], {}
    for i, (label, split, jaccard, lead) in enumerate(values):
        labels.append({"a": f"a{i}", "b": f"b{i}", "label": label, "split": split})
        features[f"a{i}", f"b{i}"] = {"merged": 1.0, "jaccard": jaccard, "containment": 1.0, "length_ratio": 1.0,
                                      "small_spots": 100.0, "cover_small": 1.0, "cover_large": 1.0, "lead": lead,
                                      "tail": 0.0, "headline": 1.0}
    return Study(labels, features)


def test_a_rule_vetoes_when_all_conditions_of_any_clause_hold():
    study = _study([("near_duplicate", "tune", 0.9, 0.5), ("reuse", "tune", 0.5, 0.5), ("reuse", "tune", 0.5, 0.0)])
    low, late = Condition("jaccard", 0.6), Condition("lead", 0.4)
    assert study.called(()) == 0b111
    assert study.called(((low, late),)) == 0b101  # both must hold: only the second pair is vetoed
    assert study.called(((low,), (late,))) == 0b000  # either: all three
    assert describe(((low,), (late, Condition("tail", 0.5)))) == "veto if jaccard < 0.6 or (lead > 0.4 and tail > 0.5)"
    assert study.counts(((low,),), study.split["tune"]) == (1, 0, 0, 0)


def test_fit_wants_precision_first_and_cross_validation_scores_only_held_out_folds():
    values = [("near_duplicate", "tune", 0.9, 0.0)] * 40 + [("reuse", "tune", 0.55, 0.0)] * 4
    values += [("reuse", "tune", 0.82, 0.0)]  # one reuse pair far above the others: only its own fold lacks it
    values += [("near_duplicate", "tune", 0.5, 0.0)] * 6  # copies below the reuse: the veto that keeps P costs them
    values += [("near_duplicate", "test", 0.9, 0.0), ("reuse", "test", 0.88, 0.0)]
    study = _study(values)
    family = [(), *rules("A", ("jaccard", "lead"))]
    assert study.score((), "tune").f1 > 0.94  # no veto has the higher F1 (0.948), at precision 0.90
    fitted = study.fit(family, study.split["tune"])
    assert fitted == ((Condition("jaccard", 0.85),),)  # the first rule of the grid that vetoes every reuse pair
    assert study.score(fitted, "tune").precision == 1.0 and study.score(fitted, "tune").false_negatives == 6
    assert study.score(fitted, "test").reuse_called == 1  # the test half's reuse sits above what tune saw
    parts = study.folds()
    assert sum(bin(part).count("1") for part in parts) == 51 and all(a & b == 0 for a in parts for b in parts if a != b)
    assert all(bin(part & study.reuse).count("1") == 1 for part in parts)  # every label dealt evenly
    pooled = study.cross_validated(family)
    assert pooled.true_positives + pooled.false_negatives == 46 and pooled.reuse_pairs == 5
    # Fitted without it, the fold holding the 0.82 pair vetoes below 0.6 only and merges it: over-fitting shows.
    assert (pooled.false_positives, pooled.false_negatives) == (1, 6)


def test_rules_use_distinct_features_and_every_form_is_known():
    for form in near_veto.FORMS:
        for rule in rules(form, ("jaccard", "lead", "tail")):
            features = [c.feature for clause in rule for c in clause]
            assert len(features) == len(set(features)), rule
    assert len(rules("A or B", ("jaccard", "lead"))) == 8 * 6
    with pytest.raises(ValueError, match="unknown rule form"):
        rules("A xor B")


def test_headlines_come_from_sina_names_page_titles_and_sogou(tmp_path: Path):
    pages = tmp_path / "xmu-finance-news" / "pages"
    pages.mkdir(parents=True)
    with gzip.open(pages / "hexun_045.html.gz", "wb") as page:
        page.write("<html><head><title>美总统会见刘鹤-新闻频道-和讯网</title></head></html>".encode())
    sogou = tmp_path / SOGOU[0]
    sogou.parent.mkdir(parents=True)
    sogou.write_bytes("<doc><docno>x1</docno>\n<contenttitle>深圳地铁设头等车厢</contenttitle></doc>".encode("gb18030"))
    headlines = load_headlines(tmp_path)
    assert headline_of("xmu-finance-news:gold/hexun_045.txt", headlines) == "美总统会见刘鹤"
    assert headline_of("sogou-smarty:SogouCS/news_sohusite_xml.smarty.dat#x1", headlines) == "深圳地铁设头等车厢"
    assert headline_of("sina-news-2018:testTech/周鸿祎：重新定义360.txt", headlines) == "周鸿祎：重新定义360"
    assert headline_of("cwced:cleaned/1.txt", headlines) is None
    assert headline_similarity("周鸿祎：重新定义360", "周鸿祎重新定义360") == 1.0
    assert 0 < headline_similarity("李咏因病去世 哈文陪伴", "李咏因病去世 曾主持春晚") < 0.8


@pytest.mark.shared_data
def test_the_study_decides_pairs_as_the_pairs_stage_does(shared_data: Path):
    few = [row for row in load_labels() if row["label"] != "junk"][::12]
    rows = near_veto.study(shared_data, labels=few, test=False, forms=("A",), feature_sets={"spots": ("jaccard",)})
    shipped = rows[0]
    assert shipped["rule"] == "none (shipped)" and "test" not in shipped
    stage = evaluate_real_pairs(shared_data, labels=few, settings=[NearSettings()])[0]
    assert len(rows) == 2 and rows[1]["rule"].startswith(("veto if jaccard", "none"))
    assert {k: shipped["tune"][k] for k in ("tp", "fp", "fn")} == {k: stage["tune"][k] for k in ("tp", "fp", "fn")}


def test_the_command_rejects_an_unknown_flag_and_a_folder_without_the_data(tmp_path: Path, capsys):
    assert near_veto.main(["--certain", str(tmp_path)]) == 2
    assert "usage:" in capsys.readouterr().err
    assert near_veto.main(["--tune-only", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("newsdedup: error: ")
