"""E-Simhash (newsdedup.dedup.esimhash): each formula on hand-checked examples, the detector, the CLI, the crawl path.

The articles below are invented news written for these tests (no shared data).
"""

from __future__ import annotations

import difflib
import json
import math
import random
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from newsdedup.dedup.esimhash import (
    CorpusStatistics,
    ESimhashIndex,
    entropy_weight,
    esimhash,
    esimhash_weights,
    neighbour_entropy,
    weighted_fingerprint,
)
from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
from newsdedup.dedup.simhash import hamming, simhash
from newsdedup.dedup.single_pass import ESimhashDetector, NearSettings, SinglePassClusterer, make_detector
from newsdedup.text.hashing import hash64, hash128

WETLAND = (
    "本报讯 经过两年建设，位于青石河下游的青石湿地公园今天正式对市民开放。湿地公园总面积约三百二十公顷，"
    "其中水域面积占六成以上，是目前全市面积最大的城市湿地公园。公园管理处主任陈立新介绍，湿地公园按照"
    "保护优先、合理利用的原则分为核心保护区、生态修复区和科普游览区三个区域。核心保护区不对游客开放，"
    "主要用于候鸟栖息和水生植物保护；生态修复区种植了芦苇、菖蒲和荷花等四十多种水生植物，用来净化青石河"
    "来水；科普游览区则建设了木栈道、观鸟屋和湿地科普馆。陈立新说，每年冬季都有上万只候鸟在青石河下游"
    "越冬，其中包括白鹭、苍鹭和小天鹅等国家保护鸟类。为了减少游客对候鸟的干扰，观鸟屋全部采用半封闭设计，"
    "游客可以通过观察窗和望远镜观鸟。湿地科普馆内设有湿地知识、候鸟迁徙和水质净化三个展厅，市民可以通过"
    "互动屏幕了解湿地生态系统的运行方式。据了解，湿地公园建成后，青石河下游断面水质已由四类提升到三类，"
    "周边居民的生活环境明显改善。公园开放首日，不少市民带着孩子前来游览。市民王女士说，以前这里是一片荒滩，"
    "现在变成了候鸟的家园，孩子在湿地科普馆里学到了很多知识。管理处表示，湿地公园实行免费开放，每天开放"
    "时间为早上六点到晚上七点，节假日期间将实行预约入园，以控制游客数量，保护湿地生态。下一步，管理处还将"
    "与高校合作开展候鸟监测和水质研究，把湿地公园建设成为生态保护和科普教育的示范基地。"
    "据市园林局统计，青石湿地公园项目总投资约四亿元，建设期间共清理河道垃圾两万多吨，拆除违章养殖场三十余处，"
    "恢复自然岸线十二公里。园林局负责人表示，今后全市还将在东岭河和南湖周边再建设两处城市湿地公园，"
    "形成沿河分布的湿地公园群，让更多市民在家门口亲近自然。"
)
# About 15% edited: byline dropped, one sentence rewritten, words changed, a sentence cut, a source line added.
WETLAND_EDITED = (
    "经过两年建设，位于青石河下游的青石湿地公园今天正式对市民开放。湿地公园总面积约三百二十公顷，"
    "其中水域面积占六成以上，是目前全市面积最大的城市湿地公园。公园管理处主任陈立新介绍，湿地公园按照"
    "保护优先、合理利用的原则分为核心保护区、生态修复区和科普游览区三个区域。核心保护区不对游客开放，"
    "主要用于候鸟栖息和水生植物保护；生态修复区种植了芦苇、菖蒲和荷花等四十余种水生植物，用于净化青石河"
    "来水；科普游览区则建设了木栈道、观鸟屋和湿地科普馆。陈立新说，每到冬季，都有超过一万只候鸟在青石河下游"
    "越冬，其中包括白鹭、苍鹭和小天鹅等国家保护鸟类。为了减少游客对候鸟的干扰，观鸟屋全部采用半封闭设计，"
    "游客只能隔着观察窗，借助望远镜远距离观察鸟类。湿地科普馆内设有湿地知识、候鸟迁徙和水质净化三个展厅，"
    "开馆期间还有二十名志愿讲解员为游客免费讲解。据了解，"
    "湿地公园建成后，青石河下游断面水质已由四类提升到三类，周边居民的生活环境明显改善。开放第一天，"
    "公园里游人如织，许多家长带着孩子前来参观。市民王女士说，这里过去是一片荒滩，如今成了候鸟的家园，孩子在湿地科普馆里"
    "学到了很多知识。管理处表示，湿地公园免费向市民开放，每天开放时间为早上六点到晚上七点，节假日期间将"
    "实行预约入园，以控制游客数量，保护湿地生态。下一步，管理处还将与高校合作开展候鸟监测和水质研究，"
    "把湿地公园建设成为生态保护和科普教育的示范基地。市园林局的统计显示，青石湿地公园项目总投资约四亿元，"
    "建设期间共清理河道垃圾两万多吨，拆除违章养殖场三十余处，恢复自然岸线十二公里。园林局负责人表示，"
    "今后全市还将在东岭河和南湖周边再建两处城市湿地公园，让更多市民在家门口亲近自然。（来源：青石日报）"
)
ROBOTS = (
    "本报讯 第五届东岭机器人大赛昨天在东岭会展中心落下帷幕，来自全国一百二十所中学的六百多支队伍参加了"
    "比赛。本届大赛设置了机器人足球、智能搬运和创意设计三个项目，参赛学生需要在规定时间内完成机器人的"
    "组装、编程和调试。大赛组委会秘书长刘志强介绍，与往届相比，今年的比赛更加注重学生的动手能力和团队"
    "协作，智能搬运项目首次引入了随机障碍物，要求机器人能够自主识别路线并避开障碍。经过三天的激烈角逐，"
    "东岭第一中学代表队获得机器人足球项目冠军，南湖实验中学代表队获得智能搬运项目冠军，创意设计项目的"
    "一等奖则由一支来自山区学校的队伍获得。这支队伍设计的机器人可以帮助果农采摘高处的果实，评委认为"
    "这一作品贴近生活、实用性强。刘志强表示，机器人教育能够激发学生对科学技术的兴趣，培养学生的创新"
    "思维。近年来，东岭市已有八十多所中学开设了机器人课程，部分学校还成立了机器人社团。组委会透露，"
    "明年的大赛将增设无人机项目，并邀请港澳地区的中学代表队参加，进一步扩大比赛的影响力。"
)
# A light reprint: a headline line in front, a source line behind (about 3% of the words).
WETLAND_REPRINT = "青石湿地公园今日开园\n" + WETLAND.replace("本报讯 ", "") + "（来源：青石日报 记者 张敏）"


def words_of(text: str) -> list[str]:
    return FeatureExtractor(FeatureConfig(method="esimhash")).features(text).content_words


def word_edit_ratio(a: str, b: str) -> float:
    return 1 - difflib.SequenceMatcher(None, words_of(a), words_of(b), autojunk=False).ratio()


# -- formulas ---------------------------------------------------------------------------------

def test_neighbour_entropy_is_shannon_entropy_in_bits():
    assert neighbour_entropy([1, 1]) == 1.0
    assert neighbour_entropy([2, 1, 1]) == 1.5  # p = 1/2, 1/4, 1/4
    assert neighbour_entropy([5]) == 0.0 and neighbour_entropy([]) == 0.0
    assert neighbour_entropy([1, 1, 1]) == pytest.approx(math.log2(3))
    with pytest.raises(ValueError, match=">= 0"):
        neighbour_entropy([2, -1])


def test_statistics_count_left_and_right_neighbours_of_every_word():
    stats = CorpusStatistics(prior_documents=0)
    stats.observe(["北京", "上海", "北京", "广州"])
    # 北京: left neighbours {start, 上海}, right {上海, 广州}; 上海: left 北京, right 北京.
    assert (stats.left_entropy("北京"), stats.right_entropy("北京")) == (1.0, 1.0)
    assert (stats.left_entropy("上海"), stats.right_entropy("上海")) == (0.0, 0.0)
    stats.observe(["北京", "广州"])
    # 北京 now: left {start: 2, 上海: 1}, right {上海: 1, 广州: 2}: log2(3) - 2/3 bits on each side.
    expected = math.log2(3) - 2 / 3
    assert stats.left_entropy("北京") == pytest.approx(expected)
    assert stats.entropy("北京") == pytest.approx(expected)  # (E_left + E_right) / 2, formula 9
    # 广州: left {北京: 2} (0 bits), right {end: 2} (0 bits).
    assert stats.entropy("广州") == 0.0
    assert stats.documents == 2 and stats.document_frequency("北京") == 2 and stats.document_frequency("上海") == 1
    assert stats.entropy("未见过") == 0.0


def test_idf_follows_formula_4_and_the_prior_adds_pseudo_documents():
    stats = CorpusStatistics(prior_documents=0)
    for words in (["北京", "上海"], ["北京"], ["广州"]):
        stats.observe(words)
    assert stats.idf("北京") == pytest.approx(math.log(3 / (2 + 1)))
    assert stats.idf("上海") == pytest.approx(math.log(3 / (1 + 1)))
    assert stats.idf("火星") == pytest.approx(math.log(3 / 1))
    primed = CorpusStatistics(prior_documents=100, prior_idf=({"北京": 2.0}, 10.0))
    primed.observe(["北京"])
    # 100 pseudo-documents of which 100 * exp(-2) contain 北京, 100 * exp(-10) an unknown word.
    assert primed.idf("北京") == pytest.approx(math.log(101 / (1 + 100 * math.exp(-2) + 1)))
    assert primed.idf("火星") == pytest.approx(math.log(101 / (100 * math.exp(-10) + 1)))


def test_weight_is_the_quadratic_mean_of_tfidf_and_entropy_cut_at_the_cap():
    assert entropy_weight(3.0, 4.0, cap=90.0) == pytest.approx(math.sqrt(12.5))
    assert entropy_weight(150.0, 10.0, cap=90.0) == 90.0
    assert entropy_weight(0.0, 0.0, cap=90.0) == 0.0
    with pytest.raises(ValueError, match="cap"):
        entropy_weight(1.0, 1.0, cap=0)

    stats = CorpusStatistics(prior_documents=0)
    stats.observe(["北京", "上海"])
    document = ["北京", "上海", "北京", "广州"]
    stats.observe(document)
    weights = dict(esimhash_weights(document, stats))
    assert list(weights) == ["北京", "上海", "广州"]  # first occurrence order
    tfidf = 2 * math.log(2 / 3)  # tf is the count (module docstring), idf = log(|D| / (df + 1))
    assert weights["北京"] == pytest.approx(math.sqrt((tfidf**2 + stats.entropy("北京") ** 2) / 2))
    normalized = dict(esimhash_weights(document, stats, tf="normalized"))
    tfidf = (2 / 4) * math.log(2 / 3)  # formula 3: count / document length
    assert normalized["北京"] == pytest.approx(math.sqrt((tfidf**2 + stats.entropy("北京") ** 2) / 2))
    capped = dict(esimhash_weights(["北京"] * 500 + ["上海"], stats, weight_cap=5.0))
    assert capped["北京"] == 5.0 and capped["上海"] < 5.0
    with pytest.raises(ValueError, match="tf mode"):
        esimhash_weights(document, stats, tf="log")


def test_each_word_hash_is_xored_with_its_position_and_fingerprints_have_128_bits():
    stats = CorpusStatistics()
    stats.observe(["湿地"])
    # One word decides every bit: the fingerprint is its hash XOR its position 1.
    assert esimhash(["湿地"], stats) == hash128("湿地") ^ 1
    assert esimhash(["湿地"], stats, bits=64) == hash64("湿地") ^ 1
    words = words_of(WETLAND)
    stats.observe(words)
    fingerprint = esimhash(words, stats)
    assert 0 <= fingerprint < 2**128 and fingerprint >> 64 != 0
    with pytest.raises(ValueError, match="128"):
        esimhash(words, stats, bits=32)


def test_reordering_changes_only_the_low_bits_the_positions_reach():
    # The paper's figure 2: plain Simhash cannot tell a reordered sentence from the original.
    first = ["能力", "比", "学历", "重要性", "高"]
    reordered = [["学历", "比", "能力", "重要性", "高"], list(reversed(first))]
    for other in reordered:
        assert simhash({w: 1.0 for w in first}) == simhash({w: 1.0 for w in other})
    stats = CorpusStatistics()
    for words in (first, *reordered):
        stats.observe(words)
    a = esimhash(first, stats)
    for other in reordered:
        # Same words, same weights: only the XORed positions 1..5 (3 bits) differ.
        assert (a ^ esimhash(other, stats)) >> 3 == 0
    # Whether those bits change depends on the votes; a word that outweighs the others decides them.
    heavy_first, heavy_last = ["湿地", "湿地", "湿地", "公园"], ["公园", "湿地", "湿地", "湿地"]
    stats = CorpusStatistics(prior_documents=0)
    stats.observe(heavy_first)
    stats.observe(heavy_last)
    weights = dict(esimhash_weights(heavy_first, stats))
    assert weights["湿地"] > weights["公园"]
    assert esimhash(heavy_first, stats) ^ esimhash(heavy_last, stats) == (1 ^ 2)  # 湿地 moved from position 1 to 2


def test_weighted_fingerprint_is_the_bitwise_weighted_vote():
    rng = random.Random(7)
    for _ in range(50):
        features = [(rng.getrandbits(128), rng.choice([0.0, 1.0, 2.5, rng.uniform(0, 90)])) for _ in range(rng.randint(1, 30))]
        expected = 0
        for bit in range(128):
            with_bit = sum(w for h, w in features if h >> bit & 1)
            without = sum(w for h, w in features if not h >> bit & 1)
            if with_bit > without + 1e-9:
                expected |= 1 << bit
        assert weighted_fingerprint(features, bits=128) == expected
    assert weighted_fingerprint([(0b01, 1.0), (0b10, 1.0)], bits=64) == 0  # exact ties give 0
    assert weighted_fingerprint([]) == 0
    with pytest.raises(ValueError, match="finite"):
        weighted_fingerprint([(1, float("nan"))])


# -- statistics over time ---------------------------------------------------------------------

def test_statistics_and_index_survive_to_bytes_and_back():
    index = ESimhashIndex()
    for key, text in enumerate((WETLAND, ROBOTS)):
        index.add(key, index.learn(words_of(text)))
    blob = index.to_bytes()
    restored = ESimhashIndex.from_bytes(blob)
    edited = words_of(WETLAND_EDITED)
    assert restored.fingerprint(edited) == index.fingerprint(edited)
    assert restored.statistics.documents == 2 and len(restored) == 2
    assert restored.query(index.fingerprint(words_of(WETLAND))) == index.query(index.fingerprint(words_of(WETLAND)))
    stats = CorpusStatistics.from_bytes(index.statistics.to_bytes())
    assert stats.entropy("湿地") == index.statistics.entropy("湿地") > 0
    assert stats.idf("湿地") == index.statistics.idf("湿地")
    with pytest.raises(ValueError, match="magic"):
        ESimhashIndex.from_bytes(b"nonsense")
    with pytest.raises(ValueError, match="statistics"):
        CorpusStatistics.from_bytes(blob)  # an index blob is not a statistics blob
    with pytest.raises(ValueError, match="version"):
        ESimhashIndex.from_bytes(blob[:4] + b"\x09" + blob[5:])


def test_retain_drops_the_other_centres_but_keeps_the_statistics_and_what_is_saved_after():
    index = ESimhashIndex()
    for key, text in enumerate((WETLAND, ROBOTS)):
        index.add(key, index.learn(words_of(text)))
    wetland = index.fingerprint(words_of(WETLAND))
    assert index.query(wetland)[0][0] == 0
    assert index.retain([1]) == 1
    assert 0 not in index and 1 in index and len(index) == 1
    assert all(key != 0 for key, _ in index.query(wetland))
    assert index.statistics.documents == 2  # the corpus statistics are every document's still
    restored = ESimhashIndex.from_bytes(index.to_bytes())
    assert 0 not in restored and 1 in restored


def test_the_pair_table_stays_bounded_by_dropping_the_rarest_pairs():
    stats = CorpusStatistics(prior_documents=0, max_bigrams=1000)
    for n in range(400):
        stats.observe([f"词{n}甲", f"词{n}乙", f"词{n}丙", "常见", "常见"])
    assert stats.bigrams <= 1000 and stats.pruned_below >= 1
    assert stats.documents == 400 and stats.document_frequency("常见") == 400
    # Its neighbour counts (n and s) are kept whole: left {词N丙: 1 each, 常见: 400}, right {常见: 400, end: 400}.
    left = math.log2(800) - 400 * math.log2(400) / 800
    assert stats.entropy("常见") == pytest.approx((left + 1.0) / 2)


def test_detector_learns_each_document_once():
    extractor = FeatureExtractor(FeatureConfig(method="esimhash"))
    detector = ESimhashDetector()
    clusterer = SinglePassClusterer(detector)
    wetland, robots = extractor.features(WETLAND), extractor.features(ROBOTS)
    clusterer.assign("w", wetland)  # best_match learns, add reuses its fingerprint
    assert detector.index.statistics.documents == 1
    clusterer.add_centre("r", robots)  # a restored centre is learnt by add
    assert detector.index.statistics.documents == 2 and len(detector) == 2
    restored = ESimhashDetector.from_bytes(detector.to_bytes())
    restored.add("w", wetland)  # already indexed: nothing counted twice
    assert restored.index.statistics.documents == 2 and "w" in restored
    with pytest.raises(ValueError, match="content words"):
        detector.best_match(FeatureExtractor(FeatureConfig(method="simhash")).features(WETLAND))


# -- near-duplicates --------------------------------------------------------------------------

def cluster(texts: dict[str, str], **settings) -> dict:
    extractor = FeatureExtractor(FeatureConfig(method="esimhash"))
    clusterer = SinglePassClusterer(make_detector(NearSettings(method="esimhash", **settings)))
    return {key: clusterer.assign(key, extractor.features(text)) for key, text in texts.items()}


def test_a_light_reprint_is_found_at_the_papers_threshold_and_an_unrelated_article_is_not():
    verdicts = cluster({"wetland": WETLAND, "robots": ROBOTS, "reprint": WETLAND_REPRINT})
    assert verdicts["robots"].duplicate_of is None
    assert verdicts["reprint"].duplicate_of == "wetland"
    assert verdicts["reprint"].match.measure == "hamming" and verdicts["reprint"].match.score <= 10


def test_a_copy_with_eleven_percent_edits_needs_a_wider_threshold_than_the_papers():
    # What Simhash-family fingerprints do: ~11% of the words edited flips ~11% of the bits (14 of 128),
    # over the paper's 10; unrelated articles stay about 64 bits apart.
    assert 0.10 <= word_edit_ratio(WETLAND, WETLAND_EDITED) <= 0.20
    texts = {"wetland": WETLAND, "robots": ROBOTS, "edited": WETLAND_EDITED}
    assert cluster(texts)["edited"].duplicate_of is None
    wide = cluster(texts, esimhash_max_distance=16)
    assert wide["edited"].duplicate_of == "wetland" and wide["robots"].duplicate_of is None
    index = ESimhashIndex()
    assert hamming(index.learn(words_of(WETLAND)), index.learn(words_of(ROBOTS))) > 40


# -- command line and crawl ----------------------------------------------------------------------

def test_newsdedup_dedup_runs_esimhash(tmp_path):
    docs = [{"id": "w", "text": WETLAND}, {"id": "r", "text": ROBOTS}, {"id": "p", "text": WETLAND_REPRINT}]
    source = tmp_path / "docs.jsonl"
    source.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\n", encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", "dedup", "--input", str(source), "--output", str(out),
         "--workers", "0", "--method", "esimhash"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    verdicts = {v["id"]: v for v in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert [verdicts[k]["status"] for k in "wrp"] == ["unique", "unique", "near_duplicate"]
    assert verdicts["p"]["duplicate_of"] == "w" and {v["method"] for v in verdicts.values()} == {"esimhash"}


def crawler_settings(**values):
    from scrapy.settings import Settings

    return Settings({"NEWSDEDUP_NEAR_METHOD": "esimhash", **values})


def test_crawl_settings_build_the_esimhash_detector_and_worker_config():
    from newsdedup.run.options import feature_config as feature_config_from_settings, near_settings as near_settings_from_settings

    settings = crawler_settings(NEWSDEDUP_ESIMHASH_MAX_DISTANCE="12", NEWSDEDUP_ESIMHASH_WEIGHT_CAP="50")
    config = feature_config_from_settings(settings)
    assert config.uses_content_words and config.rebuilds_from_text and not config.uses_simhash
    detector = make_detector(near_settings_from_settings(settings))
    assert isinstance(detector, ESimhashDetector)
    assert detector.index.max_distance == 12 and detector.index.weight_cap == 50.0 and detector.bits == 128
    assert FeatureExtractor(config).features(WETLAND).content_words == words_of(WETLAND)


def test_crawl_rebuild_relearns_statistics_from_the_stored_centres(tmp_path):
    from scrapy.utils.test import get_crawler

    from newsdedup.crawl.indexes import DedupIndexes
    from newsdedup.crawl.pipelines.state import CrawlSettings
    from newsdedup.storage import open_store
    from newsdedup.dedup.status import NEAR_DUPLICATE
    from newsdedup.storage.base import ArticleRecord

    uri = f"sqlite:///{tmp_path / 'news.sqlite'}"
    extractor = FeatureExtractor(FeatureConfig(method="esimhash"))
    with open_store(uri) as store:
        for number, (text, status) in enumerate(((WETLAND, "unique"), (ROBOTS, "unique"), (WETLAND_REPRINT, NEAR_DUPLICATE))):
            article_id = store.new_article_id()
            store.add_article(ArticleRecord(
                id=article_id, url=f"http://example.cn/{number}", site="demo", title="标题", text=text,
                published_at=None, author=None, source=None, canonical_url=None, fetched_at="2026-11-21T00:00:00+00:00",
                fingerprint=extractor.fingerprint(text), status=status, cluster_id=article_id, method="esimhash",
            ))
    crawler = get_crawler(settings_dict={"NEWSDEDUP_NEAR_METHOD": "esimhash", "NEWSDEDUP_STORAGE_URI": uri})
    settings = CrawlSettings.from_settings(crawler.settings)
    indexes = DedupIndexes(settings.features, settings.near, exact_error_rate=settings.exact_error_rate,
                           retention_days=settings.retention_days)
    with open_store(uri) as store:
        indexes.rebuild(store, crawler.stats)
    detector = indexes.clusterer.detector
    assert isinstance(detector, ESimhashDetector) and len(detector) == 2
    # Only the centres are re-learnt (the near-duplicate is missing from the statistics until snapshots exist).
    assert detector.index.statistics.documents == 2
    assert indexes.clusterer.assign(99, extractor.features(WETLAND_REPRINT)).duplicate_of is not None
