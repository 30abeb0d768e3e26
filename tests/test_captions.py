"""Caption-only pages (issue 34): two photo pages of one event share their caption formula's spots, and are one story
only with the same captions; the library, the pairs' judge and the crawl's near stage ask the same question."""

from __future__ import annotations

import newsdedup
from newsdedup.dedup.captions import caption_check, caption_lines, same_captions
from newsdedup.dedup.engine import DedupEngine
from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
from newsdedup.dedup.single_pass import NearSettings, SinglePassClusterer, make_detector

# Two sets of photos of one marathon, captioned to one formula.
MORNING = "\n".join(f"11月18日，{who}在2026临江马拉松比赛中{what}。当日，2026临江马拉松在临江市举行。新华社记者张明摄"
                    for who, what in (("选手们", "起跑"), ("一名选手", "冲过终点"), ("志愿者", "为选手递水"),
                                      ("观众", "为选手加油"), ("选手", "经过滨江大道")))
AFTERNOON = "\n".join(f"11月18日，{who}在2026临江马拉松比赛中{what}。当日，2026临江马拉松在临江市举行。新华社记者张明摄"
                      for who, what in (("冠军", "庆祝胜利"), ("女子组选手", "在赛道上奔跑"), ("医护人员", "在终点待命"),
                                        ("选手们", "在颁奖仪式上合影"), ("一名小选手", "参加迷你跑")))
ARTICLE = ("11月18日，2026临江马拉松在临江市举行，来自国内外的三万名选手参加了比赛。男子组冠军以2小时08分的成绩打破赛会纪录，"
           "女子组冠军由一名本土选手获得。赛事组委会介绍，今年的赛道首次经过滨江大道和老城区，沿途设置了二十个补给站，"
           "三千名志愿者参与了服务保障工作。")


def test_caption_pages_are_told_from_articles():
    assert caption_lines(MORNING) is not None and len(caption_lines(MORNING)) == 5
    assert caption_lines(ARTICLE) is None
    assert caption_lines(MORNING + "\n" + ARTICLE) is None  # an article with its photos' captions
    assert not same_captions(caption_lines(MORNING), caption_lines(AFTERNOON))
    assert caption_check(ARTICLE, lambda _: None) is None  # nothing to confirm for an article


def test_two_caption_pages_of_one_event_are_one_story_only_with_the_same_captions():
    extractor = FeatureExtractor(FeatureConfig(method="spotsigs"))
    # The formula's spots alone make the two pages copies of each other...
    plain = DedupEngine.in_memory(SinglePassClusterer(make_detector(NearSettings())))
    plain.process("morning", extractor.features(MORNING))
    assert plain.process("afternoon", extractor.features(AFTERNOON)).status == "near_duplicate"
    # ...which their captions refute; the same captions (laid out again) are one story still.
    dedup = newsdedup.Deduplicator()
    assert [dedup.add(text, id=key).status for key, text in
            (("morning", MORNING), ("afternoon", AFTERNOON), ("again", "\n\n".join(MORNING.split("\n"))),
             ("article", ARTICLE))] == ["unique", "unique", "exact_duplicate", "unique"]
    reordered = "\n".join(reversed(AFTERNOON.split("\n")))
    verdict = dedup.add(reordered, id="reordered")
    assert verdict.status in ("near_duplicate", "exact_duplicate") and verdict.cluster_id == "afternoon"


def test_a_store_asks_the_same(tmp_path):
    uri = f"sqlite:///{tmp_path / 'news.sqlite'}"
    with newsdedup.Deduplicator(store=uri) as dedup:
        dedup.add(MORNING, id="https://a.example.cn/1.html")
    with newsdedup.Deduplicator(store=uri) as dedup:
        assert dedup.add(AFTERNOON, id="https://a.example.cn/2.html").status == "unique"
