"""Segmenter: both backends on our own sentences, backend choice, user dictionaries, caching."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from newsdedup.text.segment import Segmenter, get_segmenter

# Our own sentences, written to touch what differs between jieba and raw jieba-rs: Latin words joined by
# "." or "-", dotted numbers, dictionary words with symbols (AT&T, C#), percentages, ideographs outside
# jieba's range (CJK Extension A/B), full-width forms, whitespace runs.
SENTENCES = [
    "市图书馆新馆于10月18日上午正式向市民开放，设计藏书量达到三百万册。",
    "男子全程冠军由肯尼亚选手以2小时09分41秒夺得，完赛率达到93.5%。",
    "EXO-CBX将于2018.10.30在北京举办见面会，门票售价为380元。",
    "AT&T与T-Mobile宣布合作，C#和C++开发者可访问api.example.com获取文档。",
    "据统计，R.E.M乐队的专辑销量超过3.5亿张，S.H.E也曾翻唱过他们的歌。",
    "㐀㐁是扩展A区的字，𠮷野家是一家连锁店，鿏是新的化学元素名。",
    "ＡＢＣ全角字母和１２３数字　全角空格，\t制表符\n\n换行  多个空格",
    "他说：“你好！”——然后转身离开了……",
]


@pytest.fixture(scope="module")
def jieba_segmenter() -> Segmenter:
    return get_segmenter("jieba")


@pytest.fixture(scope="module")
def rjieba_segmenter() -> Segmenter:
    return get_segmenter("rjieba")


def test_jieba_backend_splits_words(jieba_segmenter: Segmenter) -> None:
    assert jieba_segmenter.backend_name == "jieba"
    assert jieba_segmenter.cut("我来到北京清华大学") == ["我", "来到", "北京", "清华大学"]


def test_rjieba_backend_splits_words(rjieba_segmenter: Segmenter) -> None:
    assert rjieba_segmenter.backend_name == "rjieba"
    assert rjieba_segmenter.cut("我来到北京清华大学") == ["我", "来到", "北京", "清华大学"]


@pytest.mark.parametrize("sentence", SENTENCES)
def test_backends_agree_token_for_token(
    jieba_segmenter: Segmenter, rjieba_segmenter: Segmenter, sentence: str
) -> None:
    assert rjieba_segmenter.cut(sentence) == jieba_segmenter.cut(sentence)


@pytest.mark.parametrize("backend", ["jieba", "rjieba"])
def test_jieba_rules_for_latin_runs_and_rare_ideographs(backend: str) -> None:
    segmenter = get_segmenter(backend)
    tokens = segmenter.cut(SENTENCES[2])
    assert tokens[:3] == ["EXO", "-", "CBX"]  # non-dictionary Latin runs split at "-" ...
    assert "2018.10" in tokens and "30" in tokens  # ... and at the second "."
    assert "AT&T" in segmenter.cut(SENTENCES[3])  # dictionary words stay whole
    assert segmenter.cut("㐀㐁是字")[:2] == ["㐀", "㐁"]  # outside jieba's range: one character each


@pytest.mark.parametrize("backend", ["jieba", "rjieba"])
def test_no_whitespace_tokens(backend: str) -> None:
    tokens = get_segmenter(backend).cut(SENTENCES[6] + " \r\n \u3000 ")
    assert tokens and all(token.strip() for token in tokens)
    assert get_segmenter(backend).cut("  \n\t ") == []
    assert get_segmenter(backend).cut("") == []


def test_auto_prefers_rjieba_without_user_dict() -> None:
    assert get_segmenter().backend_name == "rjieba"
    assert get_segmenter("auto") is get_segmenter()


def test_user_dict_honoured_by_both_backends_and_auto_uses_jieba(tmp_path: Path) -> None:
    user_dict = tmp_path / "user.txt"
    user_dict.write_text("滨江马拉松 10 nz\n创客工坊\n芯片计时 5\n", encoding="utf-8")
    sentence = "今年滨江马拉松首次采用芯片计时，新馆六层开辟了创客工坊。"
    plain = get_segmenter("jieba").cut(sentence)
    assert "滨江马拉松" not in plain and "创客工坊" not in plain
    for backend in ("jieba", "rjieba"):
        tokens = Segmenter(backend, user_dict).cut(sentence)
        assert {"滨江马拉松", "芯片计时", "创客工坊"} <= set(tokens), backend
    # jieba-rs computes frequencies for entries without one itself; equality with jieba is only proven
    # without user dictionaries, so "auto" falls back to the reference.
    assert Segmenter("auto", user_dict).backend_name == "jieba"
    # A user dictionary must not leak into the shared default segmenters.
    assert get_segmenter("jieba").cut(sentence) == plain
    assert get_segmenter("rjieba").cut(sentence) == plain


def test_get_segmenter_caches_per_arguments(tmp_path: Path) -> None:
    assert get_segmenter("jieba") is get_segmenter("jieba")
    assert get_segmenter("jieba") is not get_segmenter("rjieba")
    user_dict = tmp_path / "user.txt"
    user_dict.write_text("创客工坊\n", encoding="utf-8")
    assert get_segmenter("rjieba", user_dict) is get_segmenter("rjieba", str(user_dict))


def test_jieba_loads_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    Segmenter("jieba").cut("新闻")
    captured = capfd.readouterr()
    assert "Prefix dict" not in captured.err and "Building" not in captured.err


def test_pickles_by_rebuilding(rjieba_segmenter: Segmenter) -> None:
    copy = pickle.loads(pickle.dumps(rjieba_segmenter))
    assert copy.backend_name == "rjieba"
    assert copy.cut(SENTENCES[0]) == rjieba_segmenter.cut(SENTENCES[0])


def test_invalid_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="auto, jieba, rjieba"):
        Segmenter("pkuseg")
    with pytest.raises(ValueError, match="auto, jieba, rjieba"):
        get_segmenter("thulac")
    with pytest.raises(ValueError, match="not a file"):
        Segmenter("jieba", tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="decode bytes first"):
        get_segmenter("rjieba").cut(b"bytes")  # type: ignore[arg-type]
