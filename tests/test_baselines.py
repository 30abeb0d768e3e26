"""I-Match and the MinHash-LSH options (explicit banding, given feature sets) on small hand-made inputs."""

from __future__ import annotations

import pytest

from newsdedup.evaluation.baselines import IMatchBaseline, JaccardSetIndex, MinHashLSHBaseline

# Whitespace-tokenised collections keep the IDF arithmetic visible: tokenize=str.split.
SPLIT = str.split

# "common" is in every document (IDF 0, dropped as too frequent); each story has its own words.
COLLECTION = [
    ("a1", "common 暴雪 预警 交通 停课"),
    ("a2", "停课 交通 预警 暴雪 common"),  # the same words in another order
    ("b1", "common 马拉松 选手 纪录 补给"),
    ("b2", "common 马拉松 选手 纪录 补给 拼写错"),  # plus a word no other document has (df = 1)
    ("c1", "common 股市 上涨 成交"),
    ("c2", "common 股市 上涨 成交 预警"),  # plus a word of another story (in the IDF band)
]


def test_imatch_equal_word_sets_are_duplicates_whatever_the_order():
    clusters = IMatchBaseline(tokenize=SPLIT).cluster(COLLECTION)
    assert clusters["a1"] == clusters["a2"] == "a1"


def test_imatch_drops_the_rarest_words_but_not_mid_band_ones():
    clusters = IMatchBaseline(tokenize=SPLIT).cluster(COLLECTION)
    # 拼写错 occurs once in the collection: nidf 1.0, above the band, so b2 still matches b1.
    assert clusters["b2"] == "b1"
    # 预警 occurs in 3 of 6 documents: inside the band, so c2's fingerprint differs (I-Match is brittle).
    assert clusters["c2"] == "c2"
    assert len({clusters["a1"], clusters["b1"], clusters["c1"]}) == 3


def test_imatch_drops_the_most_frequent_words():
    # Without the low end of the band, a word in every document would be kept; with it, documents that
    # differ only by such a word still match.
    docs = [("x", "甲 乙 丙 常见"), ("y", "甲 乙 丙"), ("z", "丁 戊 常见"), ("w", "己 庚 常见")]
    assert IMatchBaseline(min_nidf=0.3, tokenize=SPLIT).cluster(docs)["y"] == "x"
    assert IMatchBaseline(min_nidf=0.0, max_nidf=1.0, tokenize=SPLIT).cluster(docs)["y"] == "y"


def test_imatch_with_a_supplied_idf_table():
    table = {"北京": 10.0, "下雪": 8.0, "的": 0.5, "交通": 6.0}
    imatch = IMatchBaseline(idf=table, tokenize=SPLIT)  # band [0.2, 0.95] of idf_max 10
    digests = imatch.fingerprints([("a", "北京 的 下雪 交通"), ("b", "下雪 交通 生僻词"), ("c", "的 北京")])
    # 北京 (nidf 1.0) and the unknown 生僻词 count as rarest, 的 (0.05) as too frequent: a and b keep {下雪, 交通}.
    assert digests["a"] == digests["b"] is not None
    assert digests["c"] is None  # nothing in the band: no fingerprint
    assert imatch.cluster([("a", "北京 的"), ("b", "北京 的")]) == {"a": "a", "b": "b"}
    assert imatch.name == "i-match nidf [0.2, 0.95] table idf"


def test_imatch_tokenizes_chinese_by_default():
    texts = [("a", "北京今天下雪，交通受到影响。"), ("b", "交通受到影响，北京今天下雪。"), ("c", "上海明天晴朗。"),
             ("d", "广州后天有雨。")]
    clusters = IMatchBaseline(min_nidf=0.0, max_nidf=1.0).cluster(texts)
    assert clusters["b"] == "a" and clusters["c"] == "c"


def test_imatch_arguments_are_validated():
    with pytest.raises(ValueError, match="min_nidf <= max_nidf"):
        IMatchBaseline(min_nidf=0.8, max_nidf=0.2)
    with pytest.raises(ValueError, match="idf"):
        IMatchBaseline(idf={})
    with pytest.raises(ValueError, match="twice"):
        IMatchBaseline(tokenize=SPLIT).cluster([("a", "x"), ("a", "y")])
    with pytest.raises(ValueError, match="linkage"):
        IMatchBaseline(tokenize=SPLIT).cluster(COLLECTION, linkage="complete")


BASE = (
    "市气象台今天上午发布暴雪蓝色预警，预计今天夜间到明天白天全市将出现中到大雪，局地暴雪。"
    "交通部门提醒市民尽量减少出行，驾车注意保持车距，减速慢行。"
    "全市中小学明天停课一天，具体安排以学校通知为准。"
)
# Character 5-gram Jaccard 0.75 with BASE: its last sentence swapped for another.
EDITED = BASE[:85] + "环卫部门已经准备了两千吨融雪剂。"


def test_minhash_banding_is_the_one_asked_for():
    items = [("a", BASE), ("b", EDITED)]
    # datasketch's banding for 0.5 (25 bands of 5 rows) makes a 0.75 pair a candidate with probability
    # 0.9999; 2 bands of 64 rows with probability 2e-8.
    assert MinHashLSHBaseline(threshold=0.5, verify=False).cluster(items)["b"] == "a"
    strict = MinHashLSHBaseline(threshold=0.5, verify=False, bands=2, rows=64)
    assert strict.num_perm == 128
    assert strict.cluster(items)["b"] == "b"


def test_minhash_paper_banding_over_given_feature_sets():
    lsh = MinHashLSHBaseline(threshold=0.4, bands=32, rows=6, features=sorted)
    assert lsh.num_perm == 192 and lsh.name == "minhash-lsh features t=0.4 perm=192 b=32 r=6"
    spots = {"的:新闻", "在:北京", "了:比赛", "是:冠军", "在:上海"}
    items = [("a", spots), ("b", spots | {"的:记者"}), ("c", {"的:股市", "了:上涨"}), ("d", set())]
    clusters = lsh.cluster(items)
    assert clusters == {"a": "a", "b": "a", "c": "c", "d": "d"}
    # Sketches made once give the same clusters at any threshold they are reused for.
    sketches = [(key, lsh.sketch(item)) for key, item in items]
    assert lsh.cluster_sketches(sketches) == clusters
    assert sketches[3][1] is None  # no feature: no sketch, a cluster of its own


def test_minhash_int_features_are_hashed():
    lsh = MinHashLSHBaseline(threshold=0.5, bands=16, rows=4, features=list)
    clusters = lsh.cluster([("a", [1, 2, 3, 4, 5]), ("b", [1, 2, 3, 4, 5]), ("c", [6, 7, 8, 9])])
    assert clusters == {"a": "a", "b": "a", "c": "c"}


def test_minhash_banding_arguments_are_validated():
    with pytest.raises(ValueError, match="together"):
        MinHashLSHBaseline(bands=32)
    with pytest.raises(ValueError, match="exceeds num_perm"):
        MinHashLSHBaseline(bands=32, rows=6, num_perm=128)
    with pytest.raises(ValueError, match="bands must be"):
        MinHashLSHBaseline(bands=1, rows=6)
    with pytest.raises(ValueError, match="features"):
        MinHashLSHBaseline(features="spots")
    assert MinHashLSHBaseline().num_perm == 128  # the default is unchanged


def test_jaccard_set_index_finds_everything_at_or_above_the_threshold():
    index = JaccardSetIndex(0.5)
    index.add("a", frozenset({1, 2, 3, 4}))
    index.add("b", frozenset({3, 4, 5, 6}))
    assert index.query(frozenset({1, 2, 3, 4})) == [("a", 1.0)]
    assert index.query(frozenset({2, 3, 4, 5})) == [("a", 0.6), ("b", 0.6)]
    assert len(index) == 2
    with pytest.raises(ValueError, match="threshold"):
        JaccardSetIndex(0.0)
