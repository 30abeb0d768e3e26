"""The reprint benchmark generator: sentence units, edit ratios, determinism (small real sample)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from newsdedup.evaluation import reprints
from newsdedup.evaluation.reprints import (
    DISCLAIMER,
    Editor,
    NEGATIVE_KINDS,
    REPRINT_KINDS,
    build_text_benchmark,
    join_units,
    read_jsonl,
    sentence_edit_ratio,
    split_units,
    unit_key,
    write_jsonl,
)

TEXT = "　　第一段说明事情的经过。记者了解到，“这是第一次！”\n　　第二段补充细节；有人表示担忧？最后一句没有句号"


def test_split_units_covers_the_text_and_keeps_wording_in_each_unit():
    units = split_units(TEXT)
    assert "".join(units) == TEXT
    assert [unit_key(u) for u in units] == [
        "第一段说明事情的经过。", "记者了解到，“这是第一次！”", "第二段补充细节；", "有人表示担忧？", "最后一句没有句号",
    ]


def test_join_units_separates_units_that_would_run_together():
    units = ["没有句号的标题", "正文第一句。", "正文第二句。"]
    text = join_units(units)
    assert text == "没有句号的标题\n正文第一句。正文第二句。"
    assert [unit_key(u) for u in split_units(text)] == [unit_key(u) for u in units]


@pytest.mark.parametrize(
    ("reprint", "ratio"),
    [
        ("甲。乙。丙。丁。", 0.0),
        ("甲。\n乙。  丙。丁。", 0.0),  # whitespace only
        ("甲。乙。新。丙。丁。", 0.25),  # one added
        ("甲。丙。丁。", 0.25),  # one deleted
        ("甲。新。丙。新二。", 0.5),  # two replaced
        ("丁。甲。乙。丙。", 0.25),  # one moved
        ("乙。甲。丁。丙。", 0.5),  # two moved
    ],
)
def test_sentence_edit_ratio(reprint, ratio):
    assert sentence_edit_ratio("甲。乙。丙。丁。", reprint) == pytest.approx(ratio)


def test_sentence_edit_ratio_needs_an_original():
    with pytest.raises(ValueError):
        sentence_edit_ratio("   ", "甲。")


def test_arguments_are_validated_before_reading_data(tmp_path):
    with pytest.raises(ValueError, match="stories"):
        build_text_benchmark(tmp_path, stories=-1)
    with pytest.raises(ValueError, match="kinds"):
        build_text_benchmark(tmp_path, kinds=("paraphrase",))
    with pytest.raises(ValueError, match="edit ratios"):
        build_text_benchmark(tmp_path, min_edit_ratio=0.5, max_edit_ratio=0.2)
    with pytest.raises(ValueError, match="split"):
        build_text_benchmark(tmp_path, split="train")
    with pytest.raises(ValueError, match="shared data"):
        build_text_benchmark(tmp_path)  # no corpus there


SMALL = {"stories": 40, "singletons": 10, "disclaimer_negatives": 5, "same_topic_pairs": 5, "junk": 12, "other_corpus": 5}


@pytest.fixture(scope="module")
def small(shared_data):
    return build_text_benchmark(shared_data, seed=1, **SMALL)


def test_same_seed_same_documents_other_seed_others(shared_data, small):
    reprints._corpus.cache_clear()  # rebuild from the files, not from this process's cache
    assert build_text_benchmark(shared_data, seed=1, **SMALL) == small
    other = build_text_benchmark(shared_data, seed=2, **SMALL)
    assert [d["text"] for d in other] != [d["text"] for d in small]


def test_documents_have_the_promised_fields_and_counts(small):
    assert all(set(d) >= {"id", "text", "title", "story", "kind", "edit_ratio"} for d in small)
    assert len({d["id"] for d in small}) == len(small)
    kinds = Counter(d["kind"] for d in small)
    assert kinds["original"] == 40 and kinds["singleton"] == 10
    assert kinds["disclaimer"] == 5 and kinds["junk"] == 12 and kinds["same_topic"] == 10 and kinds["other_corpus"] == 5
    per_story = Counter(d["story"] for d in small if d["kind"] != "original")
    originals = {d["story"] for d in small if d["kind"] == "original"}
    assert all(1 <= per_story[story] <= 4 for story in originals)
    # Negatives and singletons are stories of one document.
    for d in small:
        if d["kind"] in (*NEGATIVE_KINDS, "singleton"):
            assert per_story[d["story"]] == 1 and d["story"] not in originals


def _common_in_order(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (dynamic programming)."""
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal, row[0] = 0, 0
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def _units_edited(kind: str, before: list[str], after: list[str]) -> int:
    """How many sentence units the reprint operation ``kind`` edited, read off the two unit lists alone (not with
    sentence_edit_ratio, which the generator uses): units added, deleted, replaced in place, or moved."""
    common = _common_in_order(before, after)
    if kind == "add":
        assert common == len(before), "an addition keeps every original unit, in order"
        return len(after) - len(before)
    if kind == "delete":
        assert common == len(after), "a deletion keeps the rest in order"
        return len(before) - len(after)
    if kind == "replace":
        assert len(after) == len(before)
        return sum(x != y for x, y in zip(before, after))
    assert sorted(after) == sorted(before), "a reordering keeps every unit"
    return len(before) - common


def test_edit_ratios_are_what_the_texts_show(small):
    original = {d["story"]: d["text"] for d in small if d["kind"] == "original"}
    reprinted = [d for d in small if d["kind"] in REPRINT_KINDS]
    assert reprinted
    for d in reprinted:
        base = original[d["story"]]
        n = len(split_units(base))
        if d["kind"] in ("add", "delete", "replace", "reorder"):
            before, after = ([unit_key(u) for u in split_units(text)] for text in (base, d["text"]))
            edited = _units_edited(d["kind"], before, after)
            assert d["edit_ratio"] == pytest.approx(edited / n, abs=1e-6), d
            assert 0 < d["edit_ratio"] <= 0.30, d
        elif d["kind"] == "format":
            assert d["edit_ratio"] == 0 and d["text"] != base
        elif d["kind"] == "short":
            assert base.startswith(d["text"].rstrip()) and len(d["text"]) < 0.5 * len(base)
        elif d["kind"] in ("source", "mixed"):
            assert "来源" in d["text"] or "编辑" in d["text"]


def test_negatives_are_what_they_claim(small):
    for d in small:
        if d["kind"] == "disclaimer":
            assert d["text"].endswith(DISCLAIMER)
        elif d["kind"] == "junk":
            assert sum("\u4e00" <= ch <= "\u9fff" for ch in d["text"]) < 0.1 * len(d["text"])


def test_stories_share_no_text_unless_the_benchmark_put_it_there(small):
    # No two originals/singletons share a sentence of 20+ characters (natural duplicates removed).
    owner: dict[str, str] = {}
    for d in small:
        if d["kind"] not in ("original", "singleton"):
            continue
        for key in {unit_key(u) for u in split_units(d["text"])}:
            if len(key) >= 20:
                assert owner.setdefault(key, d["story"]) == d["story"], key


def test_write_and_read_jsonl_round_trip(tmp_path, small):
    path = tmp_path / "docs.jsonl"
    assert write_jsonl(small[:5], path) == 5
    assert read_jsonl(path) == small[:5]
    assert "\\u" not in path.read_text(encoding="utf-8")  # Chinese written as is, not escaped


def test_the_tune_half_shares_no_text_with_the_test_half(shared_data, small):
    tune = build_text_benchmark(shared_data, seed=1, split="tune", **SMALL)
    assert "other_corpus" not in {d["kind"] for d in tune}  # the other corpus stays unseen by tuning
    # Junk pages of one script template share their CSS lines whatever the half: that is what junk is.
    sentences = [{unit_key(u) for d in docs if d["kind"] != "junk" for u in split_units(d["text"])
                  if len(unit_key(u)) >= 20} for docs in (small, tune)]
    shared = sentences[0] & sentences[1]
    assert shared <= {unit_key(u) for u in split_units(DISCLAIMER)}  # only the made-up disclaimer is in both
    assert {d["origin"] for d in small if d["kind"] == "original"}.isdisjoint(d["origin"] for d in tune)


ARTICLE = "市气象台今天上午发布暴雪蓝色预警，预计今天夜间到明天白天全市将出现中到大雪。交通部门提醒市民尽量减少出行。" * 3


def _editor(seed: int = 7) -> Editor:
    return Editor(random.Random(seed), ["外来的一句话。", "这家企业去年的营业收入突破了百亿元。"])


def _is_subsequence(short: str, long: str) -> bool:
    rest = iter(long)
    return all(ch in rest for ch in short)


@pytest.mark.parametrize("share", [0.01, 0.05, 0.2])
def test_character_edits_change_exactly_the_share(share):
    budget = max(1, round(share * len(ARTICLE)))
    added, deleted = _editor().add_chars(ARTICLE, share), _editor().delete_chars(ARTICLE, share)
    assert len(added) == len(ARTICLE) + budget and _is_subsequence(ARTICLE, added)
    assert len(deleted) == len(ARTICLE) - budget and _is_subsequence(deleted, ARTICLE)
    modified = _editor().modify_chars(ARTICLE, share)
    # Untouched characters keep their order (only moved spans leave it), nothing lengthens the text.
    assert len(ARTICLE) - budget <= len(modified) <= len(ARTICLE) and modified != ARTICLE
    kept = Counter(ARTICLE) - Counter(modified)
    assert kept.total() <= budget  # at most the touched characters went missing


def test_edits_are_seeded_and_validated():
    assert _editor(3).modify_chars(ARTICLE, 0.1) == _editor(3).modify_chars(ARTICLE, 0.1)
    assert _editor(3).add_chars(ARTICLE, 0.1) != _editor(4).add_chars(ARTICLE, 0.1)
    with pytest.raises(ValueError, match="0.05"):
        _editor().add_chars(ARTICLE, 5)
    with pytest.raises(ValueError, match="non-empty"):
        _editor().modify_chars("  ", 0.1)
    with pytest.raises(ValueError, match="two sentences"):
        _editor().reorder(["只有一句话"])
    with pytest.raises(ValueError, match="donors"):
        Editor(random.Random(1), ["", ""])


def test_reorder_moves_whole_sentences():
    units = split_units(ARTICLE)
    moved = _editor().reorder(units, moved=3)
    assert Counter(moved) == Counter(units) and moved != units
    assert 0 < sentence_edit_ratio(ARTICLE, join_units(moved)) <= 3 / len(units)
