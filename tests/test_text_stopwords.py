"""Stopword lists: the packaged default and user files."""

from __future__ import annotations

from pathlib import Path

import pytest

from newsdedup.text.stopwords import load_stopwords, parse_stopwords


def test_packaged_list_has_function_words_punctuation_and_boilerplate() -> None:
    stopwords = load_stopwords()
    assert len(stopwords) > 500
    for word in ("的", "了", "在", "是", "我们", "这个", "因为", "但是", "，", "。", "、"):
        assert word in stopwords, word
    for word in ("记者", "编辑", "责任编辑", "来源", "报道", "新闻", "讯", "原标题"):
        assert word in stopwords, word
    for word in ("the", "var", "function"):
        assert word in stopwords, word


def test_packaged_list_keeps_content_words_out() -> None:
    stopwords = load_stopwords()
    for word in ("图书馆", "北京", "经济", "马拉松", "苹果", "腾讯", "#", "", "# newsdedup"):
        assert word not in stopwords, word


def test_packaged_list_is_loaded_once() -> None:
    assert load_stopwords() is load_stopwords()


def test_user_file_with_comments_blank_lines_bom_and_width(tmp_path: Path) -> None:
    path = tmp_path / "mine.txt"
    path.write_text("\ufeff# my list\n\n 图片 \n  \nＨＴＴＰ\n#not-a-word\n", encoding="utf-8")
    stopwords = load_stopwords(path)
    assert stopwords == {"图片", "ＨＴＴＰ", "http"}
    assert load_stopwords(str(path)) == stopwords


def test_parse_stopwords_folds_full_width_and_case() -> None:
    assert parse_stopwords("ＡＢＣ\n") == {"ＡＢＣ", "abc"}


def test_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not found"):
        load_stopwords(tmp_path / "absent.txt")
