"""Baseline clusterers (MinHashLSH, Shingling + Jaccard) on small hand-written texts."""

from __future__ import annotations

import pytest

from newsdedup.evaluation.baselines import (
    MinHashLSHBaseline,
    ShinglingJaccardBaseline,
    char_shingles,
    word_shingles,
)

BASE = (
    "市气象台今天上午发布暴雪蓝色预警，预计今天夜间到明天白天全市将出现中到大雪，局地暴雪。"
    "交通部门提醒市民尽量减少出行，驾车注意保持车距，减速慢行。"
    "全市中小学明天停课一天，具体安排以学校通知为准。"
    "环卫部门已经准备了两千吨融雪剂，出动除雪车辆三百余台，确保主干道畅通。"
)
REPRINT = BASE + "来源：晚报 责任编辑：王敏"
OTHER = (
    "本届马拉松赛共有三万名选手参加，男子组冠军以两小时八分的成绩打破赛会纪录。"
    "赛事组委会表示，明年将增加半程马拉松名额，并在沿途增设补给站和医疗点。"
)


def _items(*texts):
    return [(f"d{i}", text) for i, text in enumerate(texts)]


def test_char_and_word_shingles():
    assert char_shingles("  ", 5) == set()
    assert char_shingles("短文", 5) == {"短文"}
    assert char_shingles("ＡＢ　ＣＤ", 3) == {"ABC", "BCD"}  # NFKC, whitespace dropped
    assert word_shingles(["一", "。", "二", "三"], 2) == {"一 二", "二 三"}
    with pytest.raises(ValueError):
        char_shingles("文本", 0)


@pytest.mark.parametrize(
    "baseline",
    [
        MinHashLSHBaseline(),
        ShinglingJaccardBaseline(unit="chars", width=5),
        ShinglingJaccardBaseline(unit="words", width=3),
    ],
    ids=lambda b: b.name,
)
def test_reprint_joins_its_original_and_other_news_stays_apart(baseline):
    clusters = baseline.cluster(_items(BASE, OTHER, REPRINT))
    assert clusters == {"d0": "d0", "d1": "d1", "d2": "d0"}


def test_empty_text_is_a_cluster_of_its_own():
    clusters = MinHashLSHBaseline().cluster(_items("", "  ", BASE))
    assert clusters == {"d0": "d0", "d1": "d1", "d2": "d2"}


def test_single_pass_compares_with_centres_union_find_with_everyone():
    # a ~ b and b ~ c but a !~ c at this threshold: single-pass keeps c out (b is no centre),
    # union-find chains all three.
    a = BASE
    b = BASE + OTHER[:40]
    c = OTHER[:40] + OTHER[40:] + BASE[: len(BASE) // 2]
    baseline = ShinglingJaccardBaseline(threshold=0.4, unit="chars", width=5)
    assert baseline.cluster(_items(a, b))["d1"] == "d0"  # the premise: a ~ b,
    assert baseline.cluster(_items(b, c))["d1"] == "d0"  # b ~ c
    assert baseline.cluster(_items(a, c))["d1"] == "d1"  # and a !~ c
    assert baseline.cluster(_items(a, b, c), linkage="single_pass") == {"d0": "d0", "d1": "d0", "d2": "d2"}
    assert baseline.cluster(_items(a, b, c), linkage="union_find") == {"d0": "d0", "d1": "d0", "d2": "d0"}


def test_arguments_are_validated():
    with pytest.raises(ValueError, match="threshold"):
        MinHashLSHBaseline(threshold=0)
    with pytest.raises(ValueError, match="unit"):
        ShinglingJaccardBaseline(unit="sentences")
    with pytest.raises(ValueError, match="linkage"):
        MinHashLSHBaseline().cluster(_items(BASE), linkage="complete")
    with pytest.raises(ValueError, match="twice"):
        MinHashLSHBaseline().cluster([("x", BASE), ("x", OTHER)])
