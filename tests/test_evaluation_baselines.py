"""The evaluation's baseline clusterers (MinHash-LSH, Shingling, I-Match) on small hand-written texts."""

from __future__ import annotations

import pytest

from newsdedup.evaluation.baselines import IMatchBaseline, MinHashLSHBaseline, ShinglingBaseline, char_shingles, words

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


def test_shingles_and_words():
    assert char_shingles("  ") == set() and char_shingles("短文") == {"短文"}
    assert char_shingles("ＡＢ　ＣＤ", 3) == {"ABC", "BCD"}  # NFKC, whitespace dropped
    assert words("北京，ＡＩ 大会。") == ["北京", "ai", "大会"]


@pytest.mark.parametrize("baseline", [MinHashLSHBaseline(), ShinglingBaseline()], ids=["minhash", "shingling"])
def test_reprint_joins_its_original_and_other_news_stays_apart(baseline):
    assert baseline.cluster(_items(BASE, OTHER, REPRINT, "")) == {"d0": "d0", "d1": "d1", "d2": "d0", "d3": "d3"}


def test_single_pass_compares_with_centres_only():
    # a ~ b and b ~ c but a !~ c: c does not join through b, which is no centre.
    a, b = BASE, BASE + OTHER[:40]
    c = OTHER + BASE[: len(BASE) // 2]
    shingling = ShinglingBaseline(threshold=0.4)
    assert shingling.cluster(_items(a, b))["d1"] == "d0" and shingling.cluster(_items(b, c))["d1"] == "d0"
    assert shingling.cluster(_items(a, c))["d1"] == "d1"
    assert shingling.cluster(_items(a, b, c)) == {"d0": "d0", "d1": "d0", "d2": "d2"}


def test_most_similar_centre_wins_and_ids_must_be_unique():
    shingling, query = ShinglingBaseline(threshold=0.1), BASE[:70] + OTHER
    a, b, q = (shingling.shingles(text) for text in (BASE, OTHER, query))
    assert 0.1 <= len(q & a) / len(q | a) < len(q & b) / len(q | b)  # both centres qualify, the later is closer
    assert shingling.cluster(_items(BASE, OTHER, query))["d2"] == "d1"
    with pytest.raises(ValueError, match="twice"):
        MinHashLSHBaseline().cluster([("x", BASE), ("x", OTHER)])


BASE3 = BASE[:85]
EDITED = BASE3 + "环卫部门已经准备了两千吨融雪剂。"  # character 5-gram Jaccard with BASE3 about 0.75


def test_minhash_banding_is_the_one_asked_for():
    # datasketch's banding for 0.5 makes a 0.75 pair a candidate with probability 0.9999; 2 bands of 64 rows
    # with probability 2e-8.
    assert MinHashLSHBaseline(threshold=0.5).cluster(_items(BASE3, EDITED))["d1"] == "d0"
    strict = MinHashLSHBaseline(threshold=0.5, bands=2, rows=64)
    assert strict.num_perm == 128 and strict.cluster(_items(BASE3, EDITED))["d1"] == "d1"
    with pytest.raises(ValueError, match="together"):
        MinHashLSHBaseline(bands=32)


def test_minhash_over_given_feature_sets():
    lsh = MinHashLSHBaseline(threshold=0.4, bands=32, rows=6, features=sorted)  # the SpotSigs paper's LSH
    spots = {101, 202, 303, 404, 505}
    items = [("a", spots), ("b", spots | {606}), ("c", {707, 808}), ("d", set())]
    assert lsh.num_perm == 192 and lsh.cluster(items) == {"a": "a", "b": "a", "c": "c", "d": "d"}


# Whitespace-tokenised collections keep the IDF arithmetic visible; "common" is in every document.
COLLECTION = [
    ("a1", "common 暴雪 预警 交通 停课"),
    ("a2", "停课 交通 预警 暴雪 common"),  # the same words in another order
    ("b1", "common 马拉松 选手 纪录 补给"),
    ("b2", "common 马拉松 选手 纪录 补给 拼写错"),  # plus a word no other document has (df = 1)
    ("c1", "common 股市 上涨 成交"),
    ("c2", "common 股市 上涨 成交 预警"),  # plus a word of another story (in the IDF band)
]


def test_imatch_keeps_the_mid_idf_band():
    clusters = IMatchBaseline(tokenize=str.split).cluster(COLLECTION)
    assert clusters["a2"] == "a1"  # equal word sets, whatever the order
    assert clusters["b2"] == "b1"  # 拼写错 occurs once: nidf 1.0, above the band, dropped
    assert clusters["c2"] == "c2"  # 预警 (3 of 6 documents) is inside the band: I-Match is brittle
    assert len({clusters["a1"], clusters["b1"], clusters["c1"]}) == 3
    docs = [("x", "甲 乙 丙 常见"), ("y", "甲 乙 丙"), ("z", "丁 戊 常见"), ("w", "己 庚 常见")]
    assert IMatchBaseline(min_nidf=0.3, tokenize=str.split).cluster(docs)["y"] == "x"  # 常见 too frequent
    assert IMatchBaseline(min_nidf=0.0, max_nidf=1.0, tokenize=str.split).cluster(docs)["y"] == "y"
    with pytest.raises(ValueError, match="min_nidf <= max_nidf"):
        IMatchBaseline(min_nidf=0.8, max_nidf=0.2)
