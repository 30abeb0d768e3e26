"""Simhash fingerprints and feature extraction: properties on our own Chinese articles."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from newsdedup.dedup.simhash import (
    char_shingle_features,
    default_idf,
    hamming,
    shingle_features,
    simhash,
    word_features,
)
from newsdedup.text.hashing import hash64, hash128
from newsdedup.text.normalize import normalize_text
from newsdedup.text.segment import get_segmenter
from newsdedup.text.stopwords import load_stopwords

# Our own articles (invented news, written for these tests).
LIBRARY = (
    "本报讯（记者 王晓明）10月18日上午，位于河西新区的市图书馆新馆正式向市民开放。新馆总建筑面积约5.2万平方米，"
    "地上六层、地下两层，设计藏书量达到三百万册，可同时容纳四千名读者在馆阅读。开馆首日，不少市民一早就在门口排起了长队，"
    "有的家长带着孩子专程从城东赶来。记者在现场看到，新馆一层设有少儿阅览区和绘本剧场，二层至四层为社科、文学和科技图书借阅区，"
    "五层是地方文献和古籍特藏室，六层则开辟了自习空间和创客工坊。市图书馆馆长李红介绍，新馆全面引入自助借还系统和智能书架，"
    "读者凭身份证或电子读者证即可办理借阅，归还图书时无需排队，系统会自动识别并更新记录。与老馆相比，新馆的开放时间也延长至每晚九点，"
    "周末和法定节假日照常开放。为方便市民出行，公交公司新开通了两条途经图书馆的线路，地铁三号线图书馆站的出口与新馆广场直接相连。"
    "据了解，老馆将改造为城市阅读推广中心，继续承担流动图书车和社区分馆的配送任务。今后三年，全市计划新建社区分馆六十个，"
    "逐步形成覆盖城乡的公共图书馆服务网络，让市民在家门口就能借到书、读好书。"
)

# The same article lightly edited: one sentence rewritten, a few words changed, the byline dropped.
LIBRARY_EDITED = (
    "10月18日上午，位于河西新区的市图书馆新馆正式向市民开放。新馆总建筑面积约5.2万平方米，"
    "地上六层、地下两层，设计藏书量达到三百万册，可同时容纳四千名读者在馆阅读。开馆当天，许多市民一早就在门口排起了长队，"
    "有的家长带着孩子专程从城东赶来。记者在现场看到，新馆一层设有少儿阅览区和绘本剧场，二层至四层为社科、文学和科技图书借阅区，"
    "五层是地方文献和古籍特藏室，六层则开辟了自习空间和创客工坊。市图书馆馆长李红介绍，新馆全面引入自助借还系统和智能书架，"
    "读者凭身份证或电子读者证即可办理借阅，归还图书时无需排队，系统会自动识别并更新记录。与老馆相比，新馆每天开放到晚上九点，"
    "周末和法定节假日照常开放。为方便市民出行，公交公司新开通了两条途经图书馆的线路，地铁三号线图书馆站的出口与新馆广场直接相连。"
    "据了解，老馆将改造为城市阅读推广中心，继续承担流动图书车和社区分馆的配送任务。今后三年，全市计划新建社区分馆六十个，"
    "逐步形成覆盖城乡的公共图书馆服务网络，让市民在家门口就能借到书、读好书。"
)

MARATHON = (
    "11月4日，2018年滨江国际马拉松赛鸣枪开跑，来自二十三个国家和地区的三万名跑者参加了全程、半程和迷你跑三个项目的角逐。"
    "男子全程冠军由肯尼亚选手基普罗蒂奇以2小时09分41秒夺得，女子全程冠军被埃塞俄比亚选手阿贝贝收入囊中。"
    "中国选手杨建华以2小时13分05秒获得男子第五名，创造了个人最好成绩，也是本届比赛成绩最好的国内男子选手。"
    "今年赛事首次采用芯片计时与人脸识别相结合的检录方式，有效杜绝了替跑和蹭跑现象。组委会在沿途设置了二十个补给站、"
    "十二个医疗点和八百名志愿者，并安排了百余名医护跑者随队保障。比赛当天气温适宜，赛道沿江而设，不少跑者表示风景优美、"
    "组织有序。赛后，组委会公布数据显示，全程项目完赛率达到百分之九十三，较去年提高四个百分点。主办方表示，明年将继续优化赛道，"
    "增加观赛区和市民互动区，力争把滨江马拉松打造成具有国际影响力的品牌赛事。"
)


def fingerprint(text: str, bits: int = 64, *, use_idf: bool = True) -> int:
    tokens = get_segmenter().cut(normalize_text(text))
    table, median = default_idf()
    features = word_features(
        tokens, load_stopwords(), idf=table if use_idf else None, default_idf=median if use_idf else None
    )
    return simhash(features, bits)


def test_fixture_articles_are_article_sized() -> None:
    assert 400 <= len(LIBRARY) <= 600 and len(MARATHON) >= 350


@pytest.mark.parametrize("bits", [64, 128])
def test_identical_features_give_identical_fingerprints_in_any_order_and_any_process(bits: int) -> None:
    # Float sums of these weights depend on their order (1e16 + 1.0 == 1e16): the textbook loop gives 7
    # fingerprints over the 120 orders. Stored fingerprints are compared across runs, so it must be one.
    features = {"北京": 1.0, "上海": 1.0, "广州": 1e16, "深圳": 0.7, "杭州": 1e16}
    assert len({naive_simhash(dict(order), bits) for order in itertools.permutations(features.items())}) > 1
    assert len({simhash(list(order), bits) for order in itertools.permutations(features.items())}) == 1
    # Another process with another str hash seed (Python's hash() would differ) computes the same value.
    code = (
        "import sys\nfrom test_simhash import fingerprint\n"
        f"print(fingerprint(sys.stdin.read(), {bits}))"
    )
    other = subprocess.run([sys.executable, "-c", code], input=LIBRARY, capture_output=True, text=True, check=True,
                           cwd=Path(__file__).parent, env={**os.environ, "PYTHONHASHSEED": "12345"}, timeout=120)
    assert int(other.stdout) == fingerprint(LIBRARY, bits)


@pytest.mark.parametrize("bits", [64, 128])
def test_width_and_whitespace_copies_fingerprint_equal(bits: int) -> None:
    copy = LIBRARY.replace("，", ",").replace("5.2", "５.２").replace("。", "。\n\n  ")
    assert fingerprint(copy, bits) == fingerprint(LIBRARY, bits)


@pytest.mark.parametrize(("bits", "near", "far"), [(64, 8, 20), (128, 16, 40)])
@pytest.mark.parametrize("use_idf", [True, False])
def test_small_edit_small_distance_unrelated_large(bits: int, near: int, far: int, use_idf: bool) -> None:
    original = fingerprint(LIBRARY, bits, use_idf=use_idf)
    edited = fingerprint(LIBRARY_EDITED, bits, use_idf=use_idf)
    unrelated = fingerprint(MARATHON, bits, use_idf=use_idf)
    assert 0 < hamming(original, edited) <= near
    assert hamming(original, unrelated) >= far
    assert hamming(edited, unrelated) >= far


@pytest.mark.parametrize("bits", [64, 128])
def test_shingle_features_behave_alike(bits: int) -> None:
    segmenter = get_segmenter()
    word = [simhash(shingle_features(segmenter.cut(text)), bits) for text in (LIBRARY, LIBRARY_EDITED, MARATHON)]
    char = [simhash(char_shingle_features(text), bits) for text in (LIBRARY, LIBRARY_EDITED, MARATHON)]
    for original, edited, unrelated in (word, char):
        assert hamming(original, edited) < bits // 4 < hamming(original, unrelated)


def naive_simhash(features: dict[str, float], bits: int) -> int:
    """The textbook definition: +w for 1 bits, -w for 0 bits, sign per bit."""
    hash_feature = hash64 if bits == 64 else hash128
    totals = [0.0] * bits
    for feature, weight in features.items():
        feature_hash = hash_feature(feature)
        for bit in range(bits):
            totals[bit] += weight if feature_hash >> bit & 1 else -weight
    return sum(1 << bit for bit in range(bits) if totals[bit] > 0)


@pytest.mark.parametrize("bits", [64, 128])
def test_matches_textbook_definition(bits: int) -> None:
    features = word_features(get_segmenter().cut(LIBRARY + MARATHON), load_stopwords(), idf=default_idf()[0])
    assert simhash(features, bits) == naive_simhash(features, bits)
    integer_features = {f"词{i}": float(i % 3 + 1) for i in range(40)}  # integer weights: exact ties stay ties
    assert simhash(integer_features, bits) == naive_simhash(integer_features, bits)


def test_edge_cases() -> None:
    assert simhash({}) == 0 and simhash([], 128) == 0
    assert simhash({"新闻": 0.0}) == 0
    assert simhash({"新闻": 3.5}) == hash64("新闻")  # one feature: its own hash
    assert simhash({"新闻": 1.0}, 128) == hash128("新闻")
    assert simhash({"a": 1.0, "b": 1.0}) == hash64("a") & hash64("b")  # exact ties give 0 bits
    assert simhash([("新闻", 1.0), ("新闻", 1.0), ("北京", 1.5)]) == simhash({"新闻": 2.0, "北京": 1.5})
    assert simhash({"新闻": 2.0, "北京": 1.0}) == simhash({"新闻": 2e-6, "北京": 1e-6})  # scale-free


@pytest.mark.parametrize("bits", [0, 32, 63, 256, "64"])
def test_simhash_rejects_bad_bits(bits: object) -> None:
    with pytest.raises(ValueError, match="64 or 128"):
        simhash({"新闻": 1.0}, bits)  # type: ignore[arg-type]


@pytest.mark.parametrize("weight", [-1.0, math.nan, math.inf])
def test_simhash_rejects_bad_weights(weight: float) -> None:
    with pytest.raises(ValueError, match="finite and >= 0"):
        simhash({"新闻": 1.0, "北京": weight})


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0, 2**64 - 1) == 64
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(2**127, 0) == 1
    with pytest.raises(ValueError, match="from_signed64"):
        hamming(-1, 0)


def test_word_features_drops_noise_and_counts() -> None:
    tokens = ["北京", "的", "北京", "2018", "10.5%", "12:30", "a", "，", "AI", "Apple", "apple", "新", " ", "..."]
    assert word_features(tokens, frozenset({"的"})) == {"北京": 2.0, "ai": 1.0, "apple": 2.0, "新": 1.0}


def test_word_features_idf_weighting() -> None:
    table, median = default_idf()
    assert len(table) > 200_000 and 10 < median < 13
    assert default_idf() is default_idf()
    features = word_features(["图书馆", "图书馆", "新馆", "zzqxj"], frozenset(), idf=table)
    assert features["图书馆"] == pytest.approx(2 * table["图书馆"])
    assert features["zzqxj"] == pytest.approx(median)  # unseen word: the median, as jieba's TF-IDF does
    custom = word_features(["甲", "乙", "乙"], frozenset(), idf={"甲": 1.0, "丙": 3.0})
    assert custom == {"甲": 1.0, "乙": 4.0}  # unseen: median of the custom table (2.0)


def test_word_features_stopwords_remove_function_words_and_boilerplate() -> None:
    tokens = get_segmenter().cut("本报讯（记者 王晓明）新华社北京电 我们的新馆开放了，责任编辑：李四")
    features = word_features(tokens, load_stopwords())
    assert set(features) >= {"新馆", "开放"}
    assert not set(features) & {"本报讯", "记者", "新华社", "我们", "的", "了", "责任编辑", "讯", "电"}


def test_word_features_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="segment the text first"):
        word_features("北京大学", frozenset())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="only used together with idf"):
        word_features(["北京"], frozenset(), default_idf=5.0)
    with pytest.raises(ValueError, match="default_idf must be finite"):
        word_features(["北京"], frozenset(), idf={"北京": 1.0}, default_idf=math.nan)
    with pytest.raises(ValueError, match="idf is empty"):
        word_features(["北京"], frozenset(), idf={})


def test_shingle_features() -> None:
    assert shingle_features(["我", "爱", "，", "北京", "天安门"], k=2) == {
        "我\x1f爱": 1.0,
        "爱\x1f北京": 1.0,
        "北京\x1f天安门": 1.0,
    }
    assert shingle_features(["A", "b"], k=3) == {"a\x1fb": 1.0}
    assert shingle_features(["，", " "]) == {}
    assert shingle_features(["a", "b", "a", "b"], k=2) == {"a\x1fb": 2.0, "b\x1fa": 1.0}
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        shingle_features(["a"], k=0)
    with pytest.raises(ValueError, match="segment the text first"):
        shingle_features("北京", k=2)  # type: ignore[arg-type]


def test_char_shingle_features() -> None:
    assert char_shingle_features("北京，北京 北京", k=4) == {"北京北京": 2.0, "京北京北": 1.0}
    assert char_shingle_features("北京", k=4) == {"北京": 1.0}
    assert char_shingle_features("。 ，") == {}
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        char_shingle_features("北京", k=True)  # type: ignore[arg-type]
