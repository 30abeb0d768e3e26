"""Spot signatures, multiset Jaccard, antecedent lists and length partitions (the paper's vectors)."""

from __future__ import annotations

import doctest
from collections import Counter
from fractions import Fraction

import pytest

from newsdedup.dedup import antecedents, spotsigs, spotsigs_index
from newsdedup.dedup.spotsigs import (
    is_word,
    length_partitions,
    load_antecedents,
    multiset_jaccard,
    read_word_list,
    spot_signatures,
)

EXAMPLE_1 = (
    "The unified loan and return system in Chengdu was rolled out in 2014 and gives local residents free "
    "access to all public library resources at all branches."
)
EXAMPLE_1_ANTECEDENTS = {"and", "in", "out", "was", "to", "at"}


def test_paper_example_1_exactly() -> None:
    tokens = EXAMPLE_1.rstrip(".").split(" ")
    spots = spot_signatures(tokens, EXAMPLE_1_ANTECEDENTS, chain_length=2, distance=1)
    assert spots == Counter(
        {
            "and:return:system": 1,
            "in:Chengdu:rolled": 1,
            "was:rolled:2014": 1,
            "out:2014:gives": 1,
            "in:2014:gives": 1,
            "and:gives:local": 1,
            "to:all:public": 1,
            "at:all:branches": 1,
        }
    )


def test_trailing_punctuation_token_is_ignored() -> None:
    tokens = EXAMPLE_1.rstrip(".").split(" ") + ["."]
    assert sum(spot_signatures(tokens, EXAMPLE_1_ANTECEDENTS, chain_length=2).values()) == 8


def test_chinese_defaults_n1_d1_and_multiset_counts() -> None:
    tokens = ["记者", "在", "北京", "看到", "了", "，", "新", "的", "变化", "。", "在", "北京", "的", "变化", "是", "大"]
    spots = spot_signatures(tokens, {"的", "在", "了", "是"})
    assert spots == Counter({"在:北京": 2, "了:新": 1, "的:变化": 2, "是:大": 1})


def test_consecutive_antecedents_share_the_next_word() -> None:
    # "在 了 北京": both antecedents chain to 北京; antecedents never appear inside a chain.
    assert spot_signatures(["在", "了", "北京"], {"在", "了"}) == Counter({"在:北京": 1, "了:北京": 1})


def test_chains_running_off_the_end_are_dropped() -> None:
    tokens = ["a", "x", "y", "a", "z"]
    assert spot_signatures(tokens, {"a"}, chain_length=2) == Counter({"a:x:y": 1})
    assert spot_signatures(tokens, {"a"}, chain_length=3) == Counter({"a:x:y:z": 1})
    assert spot_signatures(tokens, {"a"}, chain_length=4) == Counter()
    assert spot_signatures(["x", "a"], {"a"}) == Counter()


def test_distance_takes_every_dth_non_antecedent() -> None:
    tokens = ["a", "w1", "b", "w2", "w3", "w4", "w5"]
    spots = spot_signatures(tokens, {"a", "b"}, chain_length=3, distance=2)
    # a: w1, w3, w5 (b is skipped as an antecedent); b: w2, w4, (w6 missing) -> dropped
    assert spots == Counter({"a:w1:w3:w5": 1})
    assert spot_signatures(tokens, {"a", "b"}, chain_length=2, distance=2) == Counter(
        {"a:w1:w3": 1, "b:w2:w4": 1}
    )


def test_no_antecedent_gives_empty_multiset() -> None:
    assert spot_signatures(["今天", "天气", "很好"], {"的"}) == Counter()
    assert spot_signatures([], {"的"}) == Counter()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"chain_length": 0}, "chain_length"), ({"distance": 0}, "distance"), ({"chain_length": 1.5}, "chain_length")],
)
def test_spot_signatures_validates_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spot_signatures(["的", "x"], {"的"}, **kwargs)


def test_spot_signatures_rejects_an_unsegmented_string() -> None:
    with pytest.raises(ValueError, match="segment"):
        spot_signatures("的新闻", {"的"})


def test_is_word() -> None:
    assert is_word("新闻") and is_word("2014") and is_word("a")
    assert not is_word("，") and not is_word(" ") and not is_word("——") and not is_word("")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (Counter(), Counter(), 0.0),
        (Counter({"x": 1}), Counter(), 0.0),
        (Counter({"x": 2}), Counter({"x": 2}), 1.0),
        (Counter({"x": 2, "y": 1}), Counter({"x": 1, "z": 1}), 1 / 4),  # min 1 / max 2+1+1
        (Counter({"x": 3}), Counter({"x": 1}), 1 / 3),
        (Counter({"x": 1, "y": 1}), Counter({"z": 1}), 0.0),
        (Counter({"x": 2, "y": 3, "z": 1}), Counter({"x": 5, "y": 1, "w": 2}), (2 + 1) / (5 + 3 + 1 + 2)),
    ],
)
def test_multiset_jaccard(a: Counter, b: Counter, expected: float) -> None:
    assert multiset_jaccard(a, b) == pytest.approx(expected)
    assert multiset_jaccard(b, a) == multiset_jaccard(a, b)


def test_multiset_jaccard_differs_from_set_jaccard_and_ignores_non_positive_counts() -> None:
    a, b = Counter({"x": 3, "y": 1}), Counter({"x": 1, "y": 1})
    assert multiset_jaccard(a, b) == 0.5  # a set Jaccard would say 1.0
    assert multiset_jaccard(Counter({"x": 1, "y": 0, "z": -2}), Counter({"x": 1, "y": 3})) == 0.25
    assert multiset_jaccard({1: 2, 2: 1}, {1: 2, 2: 1}) == 1.0  # any hashable spot, plain dicts


def test_length_partitions_paper_example_2_exact() -> None:
    assert length_partitions(0.5, 261) == [(1, 3), (4, 9), (10, 21), (22, 45), (46, 93), (94, 189), (190, None)]
    assert length_partitions(0.6, 261) == [
        (1, 2), (3, 6), (7, 12), (13, 22), (23, 39), (40, 67), (68, 114), (115, 192), (193, None),
    ]  # fmt: skip


@pytest.mark.parametrize("tau", [0.1, 0.35, 0.5, 0.6, 0.75, 0.8, 0.9, 1.0])
def test_length_partitions_rule_and_coverage(tau: float) -> None:
    partitions = length_partitions(tau, 5000)
    assert partitions[0][0] == 1 and partitions[-1][1] is None
    exact = Fraction(str(tau))
    for (start, end), (next_start, _) in zip(partitions, partitions[1:]):
        assert end == int(start / exact) + 1  # every partition ends at floor(start / tau) + 1
        assert next_start == end + 1  # contiguous, no gaps
        assert end < 5000
    assert partitions[-1][0] <= 5000
    # Documents two partitions apart can never reach tau: their length ratio is below tau.
    for (_, end), (start2, _) in zip(partitions, partitions[2:]):
        assert Fraction(end, start2) < exact


def test_length_partitions_small_max_and_validation() -> None:
    assert length_partitions(0.5, 1) == [(1, None)]
    assert length_partitions(0.5, 3) == [(1, None)]
    assert length_partitions(0.5, 4) == [(1, 3), (4, None)]
    for tau in (0, -0.5, 1.5, True):
        with pytest.raises(ValueError, match="tau"):
            length_partitions(tau, 100)
    with pytest.raises(ValueError, match="max_length"):
        length_partitions(0.5, 0)


def test_load_packaged_antecedents() -> None:
    basic = load_antecedents("basic")
    optimized = load_antecedents("optimized")
    assert {"的", "在", "了", "是"} <= basic
    assert basic < optimized  # optimized = basic + the optimized list
    assert load_antecedents() == optimized
    assert all(is_word(word) and "#" not in word for word in optimized)


def test_load_antecedents_from_a_file(tmp_path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("# my list\n的\n\n在  # t1 t2\n  了\n", encoding="utf-8")
    assert load_antecedents(path) == frozenset({"的", "在", "了"})
    assert load_antecedents(str(path)) == frozenset({"的", "在", "了"})
    assert read_word_list(path) == ["的", "在", "了"]


def test_load_antecedents_errors_name_the_fix(tmp_path) -> None:
    with pytest.raises(ValueError, match="basic, optimized"):
        load_antecedents("no-such-list")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        load_antecedents(empty)


@pytest.mark.parametrize("module", [spotsigs, spotsigs_index, antecedents])
def test_docstring_examples_run(module) -> None:
    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0
