"""DWDCS (newsdedup.dedup.dwdcs): each step on hand-checked examples, the index, the detector, the CLI, the crawl path."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from fractions import Fraction

import networkx as nx
import pytest
from conftest import REPO_ROOT
from test_esimhash import ROBOTS, WETLAND, WETLAND_EDITED, word_edit_ratio

from newsdedup.dedup.dwdcs import (
    KeyConceptExtractor,
    KeyConceptIndex,
    KeyConcepts,
    concept_network,
    concept_units,
    contribution_scores,
    cosine_similarity,
    is_near_duplicate,
    load_synonyms,
    merge_concepts,
    path_length_sums,
    position_variance,
    relatedness,
)
from newsdedup.dedup.features import FeatureConfig, FeatureExtractor
from newsdedup.dedup.single_pass import DWDCSDetector, NearSettings, SinglePassClusterer, make_detector

# -- concepts ---------------------------------------------------------------------------------


def test_concept_tokens_are_character_bigrams_and_rel_is_formula_7():
    assert concept_units("经济学") == {"经济", "济学"}
    assert concept_units("国") == {"国"} and concept_units("iphone") == {"iphone"}
    assert relatedness(concept_units("经济"), concept_units("经济学")) == pytest.approx(1 / 1.5)
    assert relatedness(concept_units("中国"), concept_units("美国")) == 0.0
    assert relatedness(concept_units("会议"), concept_units("议会")) == 0.0  # order matters, unlike a char set
    assert relatedness(concept_units("北京市"), concept_units("南京市")) == pytest.approx(1 / 2)


def test_merge_joins_a_phrase_to_an_overlapping_founder_and_never_chains():
    assert merge_concepts(["经济", "经济", "经济学", "中国", "美国"]) == {
        "经济": "经济", "经济学": "经济", "中国": "中国", "美国": "美国",
    }
    # The most frequent phrase founds the concept and names it.
    assert merge_concepts(["人民", "人民币", "人民币"])["人民"] == "人民币"
    # 科学 joins 科学家 (Rel 2/3); 科学院 overlaps 科学 (2/3) but the founder 科学家 only by 1/2: its own concept.
    phrases = ["科学家"] * 3 + ["科学"] * 2 + ["科学院"]
    assert merge_concepts(phrases) == {"科学家": "科学家", "科学": "科学家", "科学院": "科学院"}
    # A threshold of 0.7 keeps 科学 apart; Rel must be strictly greater than the threshold.
    assert merge_concepts(phrases, threshold=0.7)["科学"] == "科学"
    assert merge_concepts(["北京市", "南京市"], threshold=0.5)["南京市"] == "南京市"
    with pytest.raises(ValueError, match="Rel_thr"):
        merge_concepts(phrases, threshold=1.0)


def test_synonym_sets_from_a_file_merge_synonyms_under_the_set_name(tmp_path):
    path = tmp_path / "synonyms.txt"
    path.write_text("# Cilin-style lines\nBa01A01= 电脑 计算机 微机\nBa01A02# 电脑 手机\n土豆 马铃薯\n", encoding="utf-8")
    synonyms = load_synonyms(str(path))
    assert synonyms["电脑"] == {"Ba01A01="} and synonyms["土豆"] == {"line4"} and "手机" not in synonyms
    merged = merge_concepts(["计算机", "电脑", "电脑", "土豆", "马铃薯", "电视"], synonyms=synonyms)
    assert merged["计算机"] == merged["电脑"] == "Ba01A01="
    assert merged["土豆"] == merged["马铃薯"] == "line4" and merged["电视"] == "电视"
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no synonym sets"):
        load_synonyms(str(empty))


# -- the network ----------------------------------------------------------------------------------

# Concepts: two triangles (甲方 乙方 丙方 and 丁方 戊方 己方) joined through 桥梁 (丙方-桥梁-丁方);
# the 填 words occur once, so they are not nodes but still keep 丙方 and 丁方 more than 2 apart.
BRIDGE = (
    "甲方 乙方 丙方 甲方 乙方 丙方 填一 填二 丙方 桥梁 填三 桥梁 丁方 填四 填五 丁方 戊方 己方 丁方 戊方 己方"
).split()


def test_network_links_frequent_concepts_at_most_two_apart_and_prunes_what_is_cut_off():
    graph = concept_network(BRIDGE)
    assert set(graph.nodes) == {"甲方", "乙方", "丙方", "桥梁", "丁方", "戊方", "己方"}
    assert {frozenset(e) for e in graph.edges} == {frozenset(e) for e in (
        ("甲方", "乙方"), ("甲方", "丙方"), ("乙方", "丙方"), ("丙方", "桥梁"), ("桥梁", "丁方"),
        ("丁方", "戊方"), ("丁方", "己方"), ("戊方", "己方"),
    )}
    assert graph.frequency["丙方"] == 3 and graph.degree("丙方") == 3
    # Without the bridge the smaller part (one triangle, and an isolated pair) is pruned.
    fillers = iter(["填六", "填七"])
    cut = [w if w != "桥梁" else next(fillers) for w in BRIDGE] + ["填八", "填九", "孤岛", "孤岛"]
    pruned = concept_network(cut)
    assert set(pruned.nodes) in ({"甲方", "乙方", "丙方"}, {"丁方", "戊方", "己方"})
    # Equal parts: the one with more occurrences wins (丙方 and 丁方 occur three times each), then the smaller name.
    assert set(pruned.nodes) == {"丁方", "戊方", "己方"}
    assert concept_network(BRIDGE, min_frequency=3).number_of_nodes() == 1  # 丙方, 丁方: not linked, one kept
    assert concept_network(BRIDGE, max_nodes=3).number_of_nodes() <= 3


def test_contribution_to_the_average_shortest_path_by_hand():
    path = nx.path_graph(["a", "b", "c"])
    # d = (1 + 1 + 2) * 2 / 6 = 4/3. Without b, a and c are cut apart: the pair counts n = 3. Without a: 1.
    scores = contribution_scores(path, ["a", "b", "c"])
    assert scores["b"] == pytest.approx(3 - Fraction(4, 3))
    assert scores["a"] == scores["c"] == pytest.approx(1 - Fraction(4, 3))
    star = nx.star_graph(4)  # centre 0, leaves 1..4: d = (8 * 1 + 12 * 2) / 20 = 1.6
    scores = contribution_scores(star, [0, 1])
    assert scores[0] == pytest.approx(5 - 1.6)  # 12 ordered leaf pairs, all cut: 5 each
    assert scores[1] == pytest.approx(18 / 12 - 1.6)
    bridge = concept_network(BRIDGE)
    scores = contribution_scores(bridge, list(bridge.nodes))
    base = Fraction(92, 42)  # the 46 unordered distances of the two triangles and the bridge
    assert scores["桥梁"] == pytest.approx(Fraction(138, 30) - base)  # 9 cut pairs count 7 each
    assert scores["丙方"] == pytest.approx(Fraction(130, 30) - base)
    assert scores["甲方"] == pytest.approx(Fraction(62, 30) - base)
    with pytest.raises(ValueError, match="nodes of the graph"):
        contribution_scores(bridge, ["没有"])


@pytest.mark.parametrize("nodes, edges, seed", [(12, 14, 1), (40, 60, 2), (70, 120, 3), (150, 300, 4), (130, 140, 5)])
def test_bit_parallel_path_sums_equal_networkx(nodes, edges, seed):
    graph = nx.gnm_random_graph(nodes, edges, seed=seed)
    rng = random.Random(seed)
    removals = rng.sample(sorted(graph.nodes), 10)
    sums = path_length_sums(graph, removals)
    for result, removed in zip(sums, [None, *removals]):
        view = graph if removed is None else graph.subgraph(set(graph.nodes) - {removed})
        lengths = dict(nx.all_pairs_shortest_path_length(view))
        total = sum(sum(d.values()) for d in lengths.values())
        pairs = sum(len(d) - 1 for d in lengths.values())
        assert result == (total, pairs)


def test_key_concepts_are_the_best_scored_of_the_highest_degree_nodes():
    # Scored among all seven nodes, the bridge (degree 2) holds the network together best.
    every = KeyConceptExtractor(key_concepts=1, hub_candidates=7).extract(BRIDGE)
    assert every.concepts == ("桥梁",)
    assert every.positions == ((9 / 21, 11 / 21),)  # relative positions of its two occurrences
    # With l = 2 only the degree-3 nodes 丙方 and 丁方 are scored; they tie, the smaller name wins.
    assert KeyConceptExtractor(key_concepts=1, hub_candidates=2).extract(BRIDGE).concepts == ("丁方",)
    top = KeyConceptExtractor(key_concepts=3, hub_candidates=7).extract(BRIDGE)
    assert top.concepts == ("桥梁", "丁方", "丙方") and top.counts == (2, 3, 3)
    assert KeyConceptExtractor().extract(["孤词"]).concepts == ()
    with pytest.raises(ValueError, match="hub_candidates"):
        KeyConceptExtractor(key_concepts=20, hub_candidates=10)
    with pytest.raises(ValueError, match="str"):
        KeyConceptExtractor().extract("一段没有分词的文本")


# -- decision and index ------------------------------------------------------------------------------


def test_cosine_and_position_variance_by_hand():
    a = KeyConcepts(("北京", "大学", "清华"), ((0.1, 0.5), (0.3,), (0.7, 0.8)))
    b = KeyConcepts(("北京", "大学", "高校"), ((0.2, 0.4), (0.9,), (0.6,)))
    # counts (2, 1, 2) and (2, 1, 1): dot 2*2 + 1*1 = 5; norms sqrt(9) and sqrt(6).
    assert cosine_similarity(a, b) == pytest.approx(5 / (3 * math.sqrt(6)))
    # 北京: differences -0.1, 0.1 (variance 0.01); 大学: one pair (0). Mean over the 2 shared: 0.005.
    assert position_variance(a, b) == pytest.approx(0.005)
    assert position_variance(a, KeyConcepts(("上海",), ((0.5,),))) == math.inf
    shifted = KeyConcepts(a.concepts, tuple(tuple(x + 0.05 for x in p) for p in a.positions))
    assert cosine_similarity(a, shifted) == pytest.approx(1.0)
    assert position_variance(a, shifted) == pytest.approx(0.0)  # a constant shift is no reordering
    assert is_near_duplicate(a, shifted)
    quarter = KeyConcepts(("北京", "上海", "广州", "深圳"), ((0.1,), (0.2,), (0.3,), (0.4,)))
    other = KeyConcepts(("北京", "天津", "重庆", "成都"), ((0.1,), (0.2,), (0.3,), (0.4,)))
    assert cosine_similarity(quarter, other) == 0.25
    assert not is_near_duplicate(quarter, other, cosine_threshold=0.25)  # cosine must exceed Sim_thr
    assert is_near_duplicate(quarter, other, cosine_threshold=0.24)
    moved = KeyConcepts(a.concepts, ((0.5, 0.1), (0.3,), (0.7, 0.8)))
    assert position_variance(a, moved) == pytest.approx(0.16 / 3)  # 北京 differences 0.4, -0.4
    assert not is_near_duplicate(a, moved, max_variance=0.05) and is_near_duplicate(a, moved, max_variance=0.06)


def random_pages(rng: random.Random, count: int) -> list[KeyConcepts]:
    vocabulary = [f"概念{n}" for n in range(40)]
    bases = [rng.sample(vocabulary, 8) for _ in range(6)]
    pages = []
    for _ in range(count):
        names = list(rng.choice(bases))
        for _ in range(rng.randint(0, 2)):  # perturb: swap a concept for another
            names[rng.randrange(len(names))] = rng.choice(vocabulary)
        names = list(dict.fromkeys(names))
        positions = []
        for _ in names:
            start = rng.random() * 0.5
            positions.append(tuple(start + 0.1 * j + rng.uniform(0, 0.03) for j in range(rng.randint(1, 3))))
        pages.append(KeyConcepts(tuple(names), tuple(positions)))
    return pages


def test_inverted_index_returns_exactly_what_a_scan_returns():
    rng = random.Random(11)
    pages = random_pages(rng, 300)
    index = KeyConceptIndex(cosine_threshold=0.8, max_variance=0.002, min_key_concepts=5)
    for key, page in enumerate(pages[:200]):
        index.add(key, page)
    found = 0
    for page in pages[200:]:
        hits = index.query(page)
        assert hits == index.brute_force(page)
        found += bool(hits)
    assert found > 20  # the comparison is not vacuous
    with pytest.raises(ValueError, match="already indexed"):
        index.add(0, pages[0])


def test_pages_with_too_few_key_concepts_are_neither_indexed_nor_matched():
    index = KeyConceptIndex(min_key_concepts=3)
    small = KeyConcepts(("北京", "大学"), ((0.1,), (0.2,)))
    index.add("small", small)
    assert "small" not in index and len(index) == 0
    assert index.query(small) == []
    with pytest.raises(ValueError, match="Sim_thr"):
        KeyConceptIndex(cosine_threshold=1.0)


def test_key_concepts_survive_to_bytes_and_back():
    page = KeyConcepts(("湿地", "候鸟", "\udcff坏"), ((0.125, 0.5), (0.25,), ()))
    again = KeyConcepts.from_bytes(page.to_bytes())
    assert again.concepts == page.concepts and again.positions == page.positions  # exact in float32
    assert KeyConcepts.from_bytes(KeyConcepts((), ()).to_bytes()) == KeyConcepts((), ())


# -- end to end -------------------------------------------------------------------------------------


def test_a_copy_with_eleven_percent_edits_is_found_and_an_unrelated_article_is_not():
    assert 0.10 <= word_edit_ratio(WETLAND, WETLAND_EDITED) <= 0.20
    extractor = FeatureExtractor(FeatureConfig(method="dwdcs"))
    clusterer = SinglePassClusterer(make_detector(NearSettings(method="dwdcs")))
    features = {key: extractor.features(text) for key, text in (("w", WETLAND), ("r", ROBOTS), ("e", WETLAND_EDITED))}
    assert len(features["w"].key_concepts) == 20 and "湿地" in features["w"].key_concepts.concepts
    verdicts = {key: clusterer.assign(key, f) for key, f in features.items()}
    assert verdicts["r"].duplicate_of is None
    assert verdicts["e"].duplicate_of == "w" and verdicts["e"].match.score > 0.9  # the cosine
    assert verdicts["e"].match.measure == "cosine" and verdicts["e"].similarity < verdicts["e"].match.score
    assert cosine_similarity(features["w"].key_concepts, features["r"].key_concepts) < 0.2


def test_newsdedup_dedup_runs_dwdcs(tmp_path):
    docs = [{"id": "w", "text": WETLAND}, {"id": "r", "text": ROBOTS}, {"id": "e", "text": WETLAND_EDITED}]
    source = tmp_path / "docs.jsonl"
    source.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\n", encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", "dedup", "--input", str(source), "--output", str(out),
         "--workers", "0", "--method", "dwdcs"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    verdicts = {v["id"]: v for v in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert [verdicts[k]["status"] for k in "wre"] == ["unique", "unique", "near_duplicate"]
    assert verdicts["e"]["duplicate_of"] == "w" and verdicts["e"]["method"] == "dwdcs"
    bad = subprocess.run(
        [sys.executable, "-m", "newsdedup.cli", "dedup", "--input", "-", "--output", "-", "--method", "dwdcs",
         "--key-concepts", "40"],
        cwd=REPO_ROOT, capture_output=True, text=True, input="", timeout=300,
    )
    assert bad.returncode == 2 and "hub_candidates" in bad.stderr


def test_crawl_settings_build_the_dwdcs_detector_and_worker_config():
    from scrapy.settings import Settings

    from newsdedup.run.options import feature_config as feature_config_from_settings, near_settings as near_settings_from_settings

    settings = Settings({
        "NEWSDEDUP_NEAR_METHOD": "dwdcs", "NEWSDEDUP_DWDCS_KEY_CONCEPTS": "10", "NEWSDEDUP_DWDCS_HUB_CANDIDATES": "15",
        "NEWSDEDUP_DWDCS_COSINE": "0.85", "NEWSDEDUP_DWDCS_MAX_VARIANCE": "0.02",
    })
    config = feature_config_from_settings(settings)
    assert config.uses_key_concepts and config.rebuilds_from_text
    assert (config.dwdcs_key_concepts, config.dwdcs_hub_candidates) == (10, 15)
    detector = make_detector(near_settings_from_settings(settings))
    assert isinstance(detector, DWDCSDetector)
    assert (detector.index.cosine_threshold, detector.index.max_variance) == (0.85, 0.02)
    assert len(FeatureExtractor(config).features(WETLAND).key_concepts) == 10
    with pytest.raises(ValueError, match="synonym file"):
        FeatureConfig(method="dwdcs", dwdcs_synonyms="/nonexistent/synonyms.txt")
