"""``similarity`` means one thing for every method (estimated overlap in [0, 1]); ``score`` is the method's own."""

import pytest

from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
from newsdedup.dedup.single_pass import (
    NearSettings,
    SinglePassClusterer,
    hamming_match,
    jaccard_of_cosine,
    make_detector,
)

SENTENCES = [
    "市交通运输局昨天宣布，城东新区的自动驾驶公交线路将在下月正式开通运营。",
    "这条线路全长约十二公里，沿途设有十八个站点，连接了地铁站、学校和医院。",
    "试运营期间，车辆在安全员的陪同下累计行驶了三万多公里，没有发生一起事故。",
    "乘客可以在手机上查询车辆的实时位置，并通过扫码的方式乘车，票价为两元。",
    "负责人表示，今后还将根据乘客的反馈调整发车的间隔，在早晚高峰增加班次。",
    "一些市民在体验之后认为，车辆起步和刹车都很平稳，与普通的公交车没有区别。",
    "专家指出，自动驾驶技术在公共交通中的应用，需要在法规和保险方面继续完善。",
    "据了解，该市计划在两年内把自动驾驶公交扩展到其他的五个区，总里程超过百公里。",
    "此前，该市已经在港口和物流园区开展了自动驾驶货车的测试，积累了不少的经验。",
]
ARTICLE = "".join(SENTENCES * 2)


def test_fingerprint_distance_maps_to_an_overlap_that_falls_with_the_distance():
    values = [hamming_match("k", d, 64).similarity for d in range(0, 33, 4)]
    assert values[0] == 1.0 and values == sorted(values, reverse=True) and values[-1] == 0.0
    assert hamming_match("k", 3, 64).score == 3 and hamming_match("k", 3, 64).measure == "hamming"
    assert jaccard_of_cosine(0.5) == pytest.approx(1 / 3)


def test_a_short_version_reports_its_containment_as_score_and_its_overlap_as_similarity():
    extractor = FeatureExtractor(FeatureConfig(method="spotsigs"))
    # Issue 34's rule off: a longer text whose own story outweighs the shared part is no copy under it (below).
    clusterer = SinglePassClusterer(make_detector(NearSettings(method="spotsigs", spotsigs_containment_min_share=None)))
    clusterer.assign("full", extractor.features(ARTICLE))
    short = clusterer.assign("short", extractor.features("".join(SENTENCES[:5])))
    assert short.duplicate_of == "full"
    assert short.match.measure == "containment" and short.match.score >= 0.7
    # The short text shares all its spots but covers well under half of the article's.
    assert 0 < short.similarity < 0.5 < short.match.score
    # Under the default rule the article's own text outweighs the part it shares: the short text is a story of its own
    # (the passage-reuse stage relates the two), while a copy sharing most of the article's spots still matches.
    clusterer = SinglePassClusterer(make_detector(NearSettings(method="spotsigs")))
    clusterer.assign("full", extractor.features(ARTICLE))
    assert clusterer.assign("short", extractor.features("".join(SENTENCES[:5]))).duplicate_of is None
    longer = clusterer.assign("longer", extractor.features("".join(SENTENCES * 2)[: -len(SENTENCES[-1]) * 3]))
    assert longer.duplicate_of == "full"


def test_the_same_copy_reads_alike_under_spotsigs_and_simhash():
    copy = ARTICLE[: -len(SENTENCES[-1])]  # one sentence of eighteen cut
    results = {}
    for method in ("spotsigs", "simhash"):
        extractor = FeatureExtractor(FeatureConfig(method=method))
        clusterer = SinglePassClusterer(make_detector(NearSettings(method=method, simhash_max_distance=8)))
        clusterer.assign("a", extractor.features(ARTICLE))
        results[method] = clusterer.assign("b", extractor.features(copy)).match
    assert results["spotsigs"].measure == "jaccard" and results["simhash"].measure == "hamming"
    # A Jaccard of spots and a bit distance, read on one scale: both say about 94% overlap.
    assert results["simhash"].score > 0 and results["spotsigs"].similarity < 1
    assert results["spotsigs"].similarity == pytest.approx(results["simhash"].similarity, abs=0.05), results


COMMENTARY = [
    "评论员认为，无人驾驶公交的推出固然令人期待，但是城市管理者更应该关注它的长期运营成本。",
    "过去几年，不少城市都曾高调推出过新型的交通工具，最后却因为客流不足而悄然停运。",
    "如果没有稳定的财政补贴和清晰的商业模式，再先进的技术也难以在街头长期存在下去。",
    "与其追求数量上的扩张，不如先把一条线路做精做细，让市民真正感受到出行的便利。",
    "此外，公众对于安全问题的担忧并没有完全消除，相关部门需要及时公开运营的数据。",
    "只有在透明和信任的基础上，新技术才能够赢得市民的支持，从而走得更远更稳。",
]


def test_whole_containment_below_a_length_ratio_keeps_an_abridged_copy_and_not_a_commentary_quoting_the_report():
    """An abridged copy is verbatim; a commentary that quotes most of a short report (the last clause of
    one sentence changed) contains most of its spots but not all, and is its own article."""
    extractor = FeatureExtractor(FeatureConfig(method="spotsigs"))
    report = "".join(SENTENCES[:5])
    rewritten = "试运营期间，车辆在安全员的陪同下累计行驶了三万多公里，目前运行平稳。"  # its last clause changed
    commentary = "".join(COMMENTARY[:3] + SENTENCES[:2] + [rewritten] + SENTENCES[3:5] + COMMENTARY[3:] * 2)
    decided = {}
    for whole_below in (None, 0.6):
        near = NearSettings(method="spotsigs", spotsigs_containment_whole_below=whole_below,
                            spotsigs_containment_min_share=None)  # the rule of issue 34 off: this one alone
        quoting = SinglePassClusterer(make_detector(near))
        quoting.assign("report", extractor.features(report))
        abridging = SinglePassClusterer(make_detector(near))
        abridging.assign("full", extractor.features(ARTICLE))
        decided[whole_below] = (quoting.assign("commentary", extractor.features(commentary)).match,
                                abridging.assign("abridged", extractor.features(report)).match)
    quoted, abridged = decided[None]
    assert quoted is not None and quoted.measure == "containment" and 0.8 <= quoted.score < 0.99  # merged today
    assert abridged is not None and abridged.score >= 0.99
    quoted, abridged = decided[0.6]
    assert quoted is None  # the commentary stays its own story
    assert abridged is not None and abridged.key == "full" and abridged.measure == "containment"
