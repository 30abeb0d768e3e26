"""decode_html: lying charset declarations, GB-family pages, invalid bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from newsdedup.extract.decode import DecodedPage, decode_html, normalize_encoding_label

PAGES = Path(__file__).parent / "fixtures" / "pages"
TEXT = "河谷村的村民第一次用上了自来水"


def test_gbk_bytes_behind_a_lying_utf8_meta_decode_as_gb18030():
    page = decode_html((PAGES / "gbk_lying_utf8_meta.html").read_bytes())
    assert page.encoding == "gb18030"
    assert TEXT in page.text
    assert "\ufffd" not in page.text


def test_utf8_bytes_that_declare_gb2312_decode_as_utf8():
    page = decode_html((PAGES / "utf8_declares_gb2312.html").read_bytes())
    assert page.encoding == "utf-8"
    assert TEXT in page.text


def test_http_header_that_lies_is_overruled_by_the_bytes():
    body = "<p>今天北京下雨了</p>".encode("gbk")
    assert decode_html(body, declared="utf-8") == DecodedPage("<p>今天北京下雨了</p>", "gb18030")
    assert decode_html("<p>今天北京下雨了</p>".encode("utf-8"), declared="gbk").encoding == "utf-8"


def test_invalid_gb_bytes_are_replaced_not_fatal():
    page = decode_html((PAGES / "gbk_invalid_bytes.html").read_bytes())
    assert page.encoding == "gb18030"
    assert TEXT in page.text and "村支书说" in page.text
    assert 1 <= page.text.count("\ufffd") <= 2


def test_gb18030_only_characters_survive():
    text = "<p>䶮字与𠀀字</p>"  # outside GBK, inside GB18030
    assert decode_html(text.encode("gb18030"), declared="gb2312").text == text


def test_byte_order_mark_wins():
    assert decode_html("\ufeff<p>新闻</p>".encode("utf-8"), declared="gbk").text == "<p>新闻</p>"


def test_big5_declared_page_decodes():
    page = decode_html('<meta charset="big5"><p>臺灣新聞報導</p>'.encode("big5"))
    assert "臺灣新聞報導" in page.text


def test_labels_are_normalized():
    assert normalize_encoding_label("GB2312") == "gb18030"
    assert normalize_encoding_label(" gbk ") == "gb18030"
    assert normalize_encoding_label("UTF8") == "utf-8"
    assert normalize_encoding_label("no-such-charset") is None
    assert normalize_encoding_label(None) is None


def test_rejects_str_input_with_a_hint():
    with pytest.raises(ValueError, match="response.body"):
        decode_html("<p>text</p>")  # type: ignore[arg-type]
