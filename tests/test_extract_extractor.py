"""extract_article on small hand-made pages: article text, skip reasons, robustness, pickling."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from newsdedup.extract.extractor import SKIP_REASONS, Article, SkipPage, extract_article

PAGES = Path(__file__).parent / "fixtures" / "pages"
URL = "https://news.example.cn/local/night-bus.html"


def _page(name: str) -> bytes:
    return (PAGES / name).read_bytes()


def _skip_reason(page, **kwargs) -> str:
    with pytest.raises(SkipPage) as info:
        extract_article(page, **kwargs)
    assert info.value.reason in SKIP_REASONS
    assert str(info.value)  # a short human message
    return info.value.reason


def test_article_with_related_blocks():
    article = extract_article(_page("article_related.html"), URL)
    assert article.title == "山城小镇试行夜间公交 市民出行更方便"
    assert article.text.startswith("五月三日晚上，山城小镇的第一班夜间公交")
    assert article.text.endswith("方便乘客夜间候车。")  # the （责任编辑：…） line is gone
    for leaked in ("隔壁县城开通城乡公交", "春茶采摘", "夏季用电高峰", "走失的柴犬", "相关阅读", "推荐阅读",
                   "猜你喜欢", "排行", "网友甲", "分享到", "版权所有", "首页"):
        assert leaked not in article.text
    assert article.published_at == "2018-05-03T10:21:00+08:00"
    assert article.author == "林小河"
    assert article.source == "新华社"
    assert article.canonical_url == "https://news.example.cn/2018/05/03/night-bus.html"


@pytest.mark.parametrize(
    ("name", "first", "last", "related"),
    [
        ("short_article_summary_list.html", "河湾村通往镇上的便民桥", "在桥边种一排柳树。", ("灶台", "热乎饭菜", "专家门诊", "午饭")),
        ("short_article_summary_cards.html", "城南社区的共享菜园", "办一场丰收节。", ("夜市", "上万名游客", "游泳班", "专业教练")),
    ],
)
def test_a_short_article_loses_a_related_block_with_summaries(name, first, last, related):
    text = extract_article(_page(name)).text
    assert text.startswith(first) and text.endswith(last)
    for leaked in (*related, "相关阅读", "猜你喜欢"):
        assert leaked not in text


def test_str_and_bytes_input_agree():
    html = _page("article_related.html")
    assert extract_article(html, URL) == extract_article(html.decode("utf-8"), URL)


@pytest.mark.parametrize("name", ["gbk_lying_utf8_meta.html", "utf8_declares_gb2312.html", "gbk_invalid_bytes.html"])
def test_encoding_traps_give_clean_text(name):
    article = extract_article(_page(name), min_chars=50)
    assert "河谷村的村民第一次用上了自来水" in article.text
    assert "孩子们终于能在学校洗手喝水" in article.text


def test_remove_selectors_delete_site_blocks():
    html = _page("article_related.html").decode("utf-8").replace(
        "<p>交通办表示", "<p class='tip-box'>扫码下载示例新闻客户端，每天推送本地要闻，第一时间了解身边发生的事情。</p><p>交通办表示"
    )
    assert "扫码下载" in extract_article(html, min_chars=50).text
    assert "扫码下载" not in extract_article(html, remove_selectors=["p.tip-box"], min_chars=50).text


def test_list_page_is_skipped():
    assert _skip_reason(_page("list_page.html")) == "list_page"


def test_javascript_only_page_is_skipped():
    assert _skip_reason(_page("javascript_only.html")) == "javascript_only"


def test_video_page_is_skipped():
    assert _skip_reason(_page("video.html")) == "video"


@pytest.mark.parametrize("page", [b"", b"   \n\t ", "", _page("empty_body.html")])
def test_empty_pages_are_skipped(page):
    assert _skip_reason(page) == "empty"


@pytest.mark.parametrize(
    "page",
    [b"%PDF-1.4 binary stuff \x00\x01", b"\x89PNG\r\n\x1a\n\x00\x00", '{"json": "not html"}', "纯文本，没有任何标签。"],
)
def test_non_html_is_skipped(page):
    assert _skip_reason(page) == "not_html"


def test_too_short_article_is_skipped():
    html = "<html><body><h1>短讯</h1><p>今天下午，城西老桥恢复双向通行。</p></body></html>"
    assert _skip_reason(html) == "too_short"
    assert "城西老桥" in extract_article(html, min_chars=5).text


def test_huge_page_is_refused_before_parsing():
    filler = "<p>" + "很长的段落，" * 200 + "</p>"
    huge = ("<html><body>" + filler * 1500 + "</body></html>").encode("utf-8")
    assert len(huge) > 5_000_000
    assert _skip_reason(huge) == "too_large"
    assert _skip_reason(_page("article_related.html"), max_bytes=1000) == "too_large"
    assert _skip_reason("<p>" + "字" * 400 + "</p>", max_bytes=1000) == "too_large"  # counted in UTF-8 bytes


def test_malformed_html_still_gives_the_text():
    article = extract_article(_page("malformed_article.html"), min_chars=50)
    assert "县公路段完成了对城西老桥的加固检修" in article.text
    assert "确保群众出行安全" in article.text


@pytest.mark.parametrize(
    "page",
    [
        _page("malformed.html"),
        b"<html><body>" + b"<div>" * 5000 + b"\xe4\xb8\xad" * 10 + b"</body></html>",
        b"<" * 10000,
        "<html><body><p>\x00\x01\x02控制字符</p></body></html>",
        b"\xff\xfe<\x00h\x00t\x00m\x00l\x00>\x00",
        b"<?xml version='1.0' encoding='utf-8'?><html><body><p>xml declaration</p></body></html>",
    ],
)
def test_bad_input_raises_only_skip_page(page):
    try:
        extract_article(page)
    except SkipPage as exc:
        assert exc.reason in SKIP_REASONS


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_chars": -1}, "min_chars"),
        ({"max_bytes": 0}, "max_bytes"),
        ({"remove_selectors": "div.ad"}, "remove_selectors"),
        ({"url": 42}, "url"),
    ],
)
def test_arguments_are_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        extract_article("<p>x</p>", **kwargs)
    with pytest.raises(ValueError, match="str or bytes"):
        extract_article(None)  # type: ignore[arg-type]


def test_results_and_errors_pickle():
    article = extract_article(_page("article_related.html"), URL)
    assert pickle.loads(pickle.dumps(article)) == article
    error = SkipPage("list_page", "page is a list of links")
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.reason, str(clone)) == ("list_page", "page is a list of links")


def test_runs_in_a_process_pool():
    with ProcessPoolExecutor(max_workers=1) as pool:
        article = pool.submit(extract_article, _page("article_related.html"), URL).result()
    assert isinstance(article, Article)
    assert article.source == "新华社"
