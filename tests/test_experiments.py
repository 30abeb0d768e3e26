"""The papers' experiments: the edit operations, the one-segmentation features, recognition, and one run
on the shared data."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from newsdedup.dedup.features import DocFeatures, FeatureConfig, FeatureExtractor
from newsdedup.dedup.single_pass import Match, NearSettings, SinglePassClusterer, make_detector
from newsdedup.evaluation.experiments import (
    FIG4_THRESHOLDS,
    FIG5_SHARES,
    TextAnalyser,
    TextEditor,
    earlier_similar,
    format_markdown,
    is_recognised,
    replay_spotsigs_single_pass,
    run_paper_experiments,
)
from newsdedup.evaluation.reprints import split_units, unit_key

ARTICLE = (
    "市气象台今天上午发布暴雪蓝色预警，预计今天夜间到明天白天全市将出现中到大雪，局地暴雪。"
    "交通部门提醒市民尽量减少出行，驾车注意保持车距，减速慢行。"
    "全市中小学明天停课一天，具体安排以学校通知为准。"
    "环卫部门已经准备了两千吨融雪剂，出动除雪车辆三百余台，确保主干道畅通。"
    "气象专家表示，这次降雪过程将持续到周末，之后气温明显下降，请市民注意防寒保暖。"
    "供暖单位已经启动应急预案，对老旧小区的供热管网进行巡查，保证居民家中室温达标。"
)
OTHER = (
    "本届马拉松赛共有三万名选手参加，男子组冠军以两小时八分的成绩打破赛会纪录。"
    "赛事组委会表示，明年将增加半程马拉松名额，并在沿途增设补给站和医疗点。"
    "比赛当天，全市出动志愿者五千人，公交地铁提前一小时运营，方便选手和观众出行。"
    "女子组冠军由一名本地选手获得，她在赛后表示，家乡观众的加油声给了她很大的动力。"
)
DONORS = ["外地游客人数比去年同期增长了两成。", "这家企业去年的营业收入突破了百亿元。", "专家建议在决策前广泛听取意见。"]


def _is_subsequence(short: str, long: str) -> bool:
    rest = iter(long)
    return all(ch in rest for ch in short)


def _lcs(a: str, b: str) -> int:
    row = [0] * (len(b) + 1)
    for ch in a:
        previous_diagonal = 0
        for j, other in enumerate(b, 1):
            saved = row[j]
            row[j] = previous_diagonal + 1 if ch == other else max(row[j], row[j - 1])
            previous_diagonal = saved
    return row[-1]


def _editor(seed: int = 7) -> TextEditor:
    return TextEditor(random.Random(seed), DONORS)


@pytest.mark.parametrize("share", [0.01, 0.05, 0.2])
def test_add_inserts_exactly_the_share_and_keeps_the_original_in_order(share):
    edit = _editor().add(ARTICLE, share)
    budget = max(1, round(share * len(ARTICLE)))
    assert len(edit.text) == len(ARTICLE) + budget
    assert edit.changed == budget and edit.total == len(ARTICLE)
    assert _is_subsequence(ARTICLE, edit.text)


@pytest.mark.parametrize("share", [0.01, 0.05, 0.2])
def test_delete_removes_exactly_the_share(share):
    edit = _editor().delete(ARTICLE, share)
    budget = max(1, round(share * len(ARTICLE)))
    assert len(edit.text) == len(ARTICLE) - budget
    assert _is_subsequence(edit.text, ARTICLE)


@pytest.mark.parametrize("share", [0.05, 0.1, 0.2])
def test_modify_touches_exactly_the_share(share):
    edit = _editor().modify(ARTICLE, share)
    budget = round(share * len(ARTICLE))
    assert edit.changed == budget
    # Untouched characters keep their order: at least len - budget of them survive as a common subsequence,
    # and the edit did change something.
    common = _lcs(ARTICLE, edit.text)
    assert len(ARTICLE) - budget <= common < len(ARTICLE)
    # Only deletions shorten the text, never by more than the budget; nothing lengthens it.
    assert len(ARTICLE) - budget <= len(edit.text) <= len(ARTICLE)


def test_reorder_moves_whole_sentences():
    edit = _editor().reorder(ARTICLE)
    before = [unit_key(u) for u in split_units(ARTICLE)]
    after = [unit_key(u) for u in split_units(edit.text)]
    assert Counter(before) == Counter(after) and before != after
    assert edit.total == len(before) and 1 <= edit.changed < edit.total


def test_edits_are_seeded():
    assert _editor(3).modify(ARTICLE, 0.1) == _editor(3).modify(ARTICLE, 0.1)
    assert _editor(3).add(ARTICLE, 0.1).text != _editor(4).add(ARTICLE, 0.1).text


def test_edit_arguments_are_validated():
    with pytest.raises(ValueError, match="0.05"):
        _editor().add(ARTICLE, 5)
    with pytest.raises(ValueError, match="share"):
        _editor().delete(ARTICLE, 0.0)
    with pytest.raises(ValueError, match="donor"):
        TextEditor(random.Random(1), ["", ""])
    with pytest.raises(ValueError, match="two sentences"):
        _editor().reorder("只有一句话")
    with pytest.raises(ValueError, match="non-empty"):
        _editor().modify("  ", 0.1)


def test_analyser_gives_the_feature_extractors_features_from_one_segmentation():
    analyser = TextAnalyser()
    analysed = analyser.analyse(ARTICLE, tokens=True, shingles=True, simhash128=True)
    hybrid = FeatureExtractor(FeatureConfig(method="hybrid")).features(ARTICLE)
    esimhash = FeatureExtractor(FeatureConfig(method="esimhash")).features(ARTICLE)
    assert analysed.features.fingerprint == hybrid.fingerprint
    assert analysed.features.simhash == hybrid.simhash
    assert analysed.features.spots == hybrid.spots
    assert analysed.features.content_words == esimhash.content_words
    wide = FeatureExtractor(FeatureConfig(method="simhash", simhash_bits=128)).features(ARTICLE)
    assert analysed.simhash128 == wide.simhash
    optimized, basic = analyser.spot_sets(ARTICLE)
    assert optimized == hybrid.spots
    assert basic == FeatureExtractor(FeatureConfig(method="spotsigs", antecedents="basic")).features(ARTICLE).spots
    # Word 3-shingles: as many as distinct word triples, none when not asked for.
    words = analysed.tokens
    assert len(analysed.shingles) == len(set(zip(words, words[1:], words[2:])))
    assert analyser.analyse(ARTICLE).shingles is None and analyser.analyse(ARTICLE).tokens is None


class _StubDetector:
    def __init__(self, answer):
        self.answer = answer

    def best_match(self, features):
        return self.answer

    def add(self, key, features):
        raise AssertionError("not used")


def test_recognised_only_when_the_best_match_is_its_own_original():
    assert is_recognised(_StubDetector(Match("a", 0.9, 0.9, "jaccard")), "a", None)
    assert not is_recognised(_StubDetector(Match("b", 0.99, 0.99, "jaccard")), "a", None)
    assert not is_recognised(_StubDetector(None), "a", None)


@pytest.mark.parametrize("method", ["simhash", "spotsigs", "hybrid"])
def test_a_lightly_edited_copy_is_recognised_and_other_news_is_not(method):
    analyser = TextAnalyser()
    detector = make_detector(NearSettings(method=method))
    detector.add("weather", analyser.analyse(ARTICLE).features)
    detector.add("marathon", analyser.analyse(OTHER).features)
    copy = analyser.analyse(_editor().reorder(ARTICLE).text if method != "spotsigs" else ARTICLE + DONORS[0])
    assert is_recognised(detector, "weather", copy.features)
    assert not is_recognised(detector, "marathon", copy.features)
    unrelated = analyser.analyse("股市今天全线上涨，成交量比昨天放大了三成，券商板块领涨，分析人士认为市场情绪正在回暖。")
    assert not is_recognised(detector, "weather", unrelated.features)


def _synthetic_spot_sets(seed: int = 5) -> list[Counter]:
    """Stories of random spots with copies: subsets (short versions), additions, repeats, tiny pages."""
    rng = random.Random(seed)
    docs: list[Counter] = []
    for story in range(12):
        base = Counter({rng.randrange(10**6): rng.choice((1, 1, 1, 2)) for _ in range(rng.randint(6, 60))})
        docs.append(base)
        for _ in range(rng.randint(0, 4)):
            copy = Counter({spot: count for spot, count in base.items() if rng.random() < rng.choice((0.4, 0.8, 1.0))})
            for _ in range(rng.randint(0, 30)):
                copy[rng.randrange(10**6)] += 1
            docs.append(copy)
        docs.append(Counter({rng.randrange(10**6): 1 for _ in range(rng.randint(0, 5))}))  # near-empty page
    order = list(range(len(docs)))
    rng.shuffle(order)
    return [docs[i] for i in order]


def _single_pass_positions(spot_sets, settings) -> list[int]:
    clusterer = SinglePassClusterer(make_detector(settings))
    return [clusterer.assign(i, DocFeatures(fingerprint=b"", spots=s)).cluster_id for i, s in enumerate(spot_sets)]


SPOTSIGS_SETTINGS = [
    lambda tau: NearSettings(method="spotsigs", spotsigs_tau=tau, spotsigs_min_containment=None,
                             spotsigs_min_signatures=4),
    lambda tau: NearSettings(method="spotsigs", spotsigs_tau=tau),
    lambda tau: NearSettings(method="spotsigs", spotsigs_tau=tau, spotsigs_min_containment=0.5,
                             spotsigs_containment_min_spots=4),
]


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_replayed_single_pass_equals_the_product_clusterer(seed):
    spot_sets = _synthetic_spot_sets(seed)
    similar = earlier_similar(spot_sets, min_signatures=4, floor=0.1)
    sizes = [sum(s.values()) for s in spot_sets]
    merged = 0
    for make in SPOTSIGS_SETTINGS:
        for tau in FIG4_THRESHOLDS:
            replayed = replay_spotsigs_single_pass(sizes, similar, make(tau))
            assert replayed == _single_pass_positions(spot_sets, make(tau)), (make(tau), tau)
            merged += sum(c != i for i, c in enumerate(replayed))
    assert merged  # the fixture does exercise matches


def test_analysis_in_worker_processes_equals_analysis_inline():
    from newsdedup.evaluation.experiments import _analysed_groups, _Workers

    groups = [("a", [("x", ARTICLE), ("y", OTHER)]), ("b", [("z", ARTICLE + DONORS[0])])]
    options = {"tokens": True, "shingles": True, "simhash128": True}
    pool = _Workers(2)
    try:
        spawned = list(_analysed_groups(pool, groups, options, chunk=1))
    finally:
        pool.close()
    inline = list(_analysed_groups(_Workers(0), groups, options, chunk=1))
    assert [label for label, _ in spawned] == ["a", "b"]
    assert spawned == inline  # same features, shingle hashes included, whatever process made them


def test_replay_rejects_other_methods():
    with pytest.raises(ValueError, match="spotsigs"):
        replay_spotsigs_single_pass([], [], NearSettings(method="simhash"))


# ----------------------------------------------------------------------------------------------
# One run on the shared data (small sizes)


@pytest.fixture(scope="module")
def small_run(shared_data, tmp_path_factory):
    pytest.importorskip("matplotlib", reason="the plots need the evaluation extra: pip install -e '.[eval]'")
    from newsdedup.evaluation.reprints import build_text_benchmark

    docs = build_text_benchmark(shared_data, stories=40, singletons=40, disclaimer_negatives=10,
                                same_topic_pairs=10, junk=5)
    out = tmp_path_factory.mktemp("experiments")
    steps = []
    result = run_paper_experiments(shared_data, out, benchmark_docs=docs, bases=12,
                                   progress=lambda label, n: steps.append((label, n)))
    return result, out, steps


def _rows(result, key, **match):
    return [r for r in result[key]["rows"] if all(r[k] == v for k, v in match.items())]


def test_run_writes_three_pngs_and_json(small_run):
    result, out, steps = small_run
    assert result["plots"] == [result[k]["plot"] for k in ("spotsigs_fig4", "fingerprint_fig2", "esimhash_fig5")]
    for name in result["plots"]:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.dumps(result)  # serialisable as it is
    assert steps and all(n == 1 for _, n in steps)
    assert set(result["seconds"]) == {"spotsigs_fig4", "fingerprint_fig2", "esimhash_fig5"}


def test_fig4_precision_and_recall_move_with_the_threshold(small_run):
    result, _, _ = small_run
    names = [m["name"] for m in result["spotsigs_fig4"]["methods"]]
    assert len(result["spotsigs_fig4"]["rows"]) == len(FIG4_THRESHOLDS) * len(names)
    for name in names:
        low, high = (_rows(result, "spotsigs_fig4", method=name, threshold=t)[0] for t in (0.1, 0.9))
        assert low["recall"] >= high["recall"]
        assert high["precision"] >= 0.95
    for name in ("spotsigs-paper", "spotsigs-paper-basic"):  # Jaccard only: a higher bar loses pairs
        recalls = [_rows(result, "spotsigs_fig4", method=name, threshold=t)[0]["recall"] for t in FIG4_THRESHOLDS]
        assert recalls == sorted(recalls, reverse=True) and recalls[0] > recalls[-1]
    # The containment fallback only adds matches: recall never below the Jaccard-only run.
    for tau in FIG4_THRESHOLDS:
        paper = _rows(result, "spotsigs_fig4", method="spotsigs-paper", threshold=tau)[0]
        default = _rows(result, "spotsigs_fig4", method="spotsigs", threshold=tau)[0]
        assert default["recall"] >= paper["recall"]


def test_fig2_recognition_falls_as_more_text_changes(small_run):
    result, _, _ = small_run
    for method in ("simhash", "spotsigs", "shingling"):
        for operation in ("add", "delete"):
            first = _rows(result, "fingerprint_fig2", method=method, operation=operation, share=0.01)[0]
            last = _rows(result, "fingerprint_fig2", method=method, operation=operation, share=0.2)[0]
            assert first["rate"] >= last["rate"]
            assert first["copies"] == 12 and 0 <= first["recognised"] + first["wrong"] <= 12
    for method in ("simhash", "esimhash", "spotsigs", "hybrid", "shingling"):  # 1% of the text: still a copy
        assert _rows(result, "fingerprint_fig2", method=method, operation="add", share=0.01)[0]["rate"] >= 0.75
    reorder = {r["method"]: r for r in _rows(result, "fingerprint_fig2", operation="reorder")}
    assert reorder["simhash"]["rate"] >= reorder["shingling"]["rate"]  # bag of words vs word order


def test_fig5_dedup_rate_and_markdown(small_run):
    result, _, _ = small_run
    names = {m["name"] for m in result["esimhash_fig5"]["methods"]}
    assert {"simhash", "esimhash", "spotsigs", "hybrid", "i-match"} <= names
    for name in names:
        rates = [_rows(result, "esimhash_fig5", method=name, modification=s)[0]["rate"] for s in FIG5_SHARES]
        assert all(0.0 <= r <= 1.0 for r in rates)
        assert rates[0] >= rates[-1]
    text = format_markdown(result)
    for name in result["plots"]:
        assert f"]({name})" in text
    assert "| 0.1 |" in text and "| 5% |" in text and "0.833" in text
