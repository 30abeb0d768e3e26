"""Metadata: title, published_at (ISO 8601 with offset), author, source, canonical URL."""

from __future__ import annotations

import lxml.html
import pytest

from newsdedup.extract.metadata import (
    clean_title,
    extract_metadata,
    find_author,
    find_source,
    normalize_datetime,
    visible_text,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2018年05月03日 10:21", "2018-05-03T10:21:00+08:00"),
        ("2018-05-03 10:21:00", "2018-05-03T10:21:00+08:00"),
        ("2018/5/3", "2018-05-03T00:00:00+08:00"),
        ("发布时间：2018年5月3日", "2018-05-03T00:00:00+08:00"),
        ("2018-05-03T02:21:00Z", "2018-05-03T02:21:00+00:00"),
        ("2018-05-03T10:21:00+0800", "2018-05-03T10:21:00+08:00"),
        ("2018年5月3日下午3:05", "2018-05-03T15:05:00+08:00"),
        ("9/17/2004 5:54:13 PM", "2004-09-17T17:54:13+08:00"),
        ("20180503", "2018-05-03T00:00:00+08:00"),
        ("2018-13-45", None),
        ("访问量 12000", None),
        ("", None),
    ],
)
def test_normalize_datetime(value, expected):
    assert normalize_datetime(value) == expected


def test_a_range_is_not_a_date():
    assert normalize_datetime("2004 - 01/01/2005") is None


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("四年前中500万现穷困潦倒__商贸_产业资讯_新浪网", "四年前中500万现穷困潦倒"),
        ("工商部门初定SKII广告属于虚假宣传-搜狐财经", "工商部门初定SKII广告属于虚假宣传"),
        ("马克龙星期一在莫斯科与普京会面 - 法国报纸摘要", "马克龙星期一在莫斯科与普京会面"),
        ("新浪网 | 山城小镇试行夜间公交", "山城小镇试行夜间公交"),
        ("没有后缀的标题", "没有后缀的标题"),
    ],
)
def test_clean_title(title, expected):
    assert clean_title(title) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2018-05-03 10:21 作者：林小河 来源：新华社", "林小河"),
        ("新京报记者 彭冲 山东冠县报道\n【编辑:刘欢】", "彭冲"),
        ("光明日报记者 王建宏 张文攀\n土豆，听名字就土", "王建宏 张文攀"),
        ("本报记者罗科苏盈发自北京", "罗科苏盈"),
        ("正文最后一段。（姚峰 上海报道）\n", "姚峰"),
        ("正文。\n（责任编辑：周一鸣）", "周一鸣"),
        ("由海姑娘张贴 @ 2005-06-14 03:25:55", "海姑娘"),
        ("记者来到这家医院，看到她躺在床上。记者表示，", None),
        ("作者：\nsize=\"20\"\n来源：", None),
    ],
)
def test_find_author(text, expected):
    assert find_author(text) == expected


def test_meta_author_that_names_the_site_is_ignored():
    assert find_author("正文没有署名。", meta_author="Discuz! Team and Comsenz UI Team") is None
    assert find_author("正文没有署名。", meta_author="张三") == "张三"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("来源：新华社 编辑：山石", "新华社"),
        ("2005年3月11日12:12 来源：[ 人民网 ]", "人民网"),
        ("文章来源：千龙网", "千龙网"),
        ("来源: 中国新闻网2018-05-03", "中国新闻网"),
        ("没有出处的正文。", None),
    ],
)
def test_find_source(text, expected):
    assert find_source(text) == expected


HTML = """<html><head><title>山城小镇试行夜间公交 市民出行更方便_本地新闻_示例新闻网</title>
<meta name="author" content="示例新闻网">
<link rel="canonical" href="/2018/05/03/night-bus.html"></head>
<body><div class="nav"><a href="/">首页</a> 2017-01-01</div>
<h1>山城小镇试行夜间公交 市民出行更方便</h1>
<div class="info">2018年05月03日 10:21　来源：新华社　责任编辑：周一鸣</div>
<p>五月三日晚上，第一班夜间公交驶出。</p>
<ul><li><a href="/x">旧闻</a> 2016-02-02 08:00</li></ul></body></html>"""


def test_extract_metadata_from_a_page():
    meta = extract_metadata(lxml.html.document_fromstring(HTML), "https://news.example.cn/night-bus?from=rss")
    assert meta.title == "山城小镇试行夜间公交 市民出行更方便"
    assert meta.published_at == "2018-05-03T10:21:00+08:00"
    assert meta.author == "周一鸣"  # editor as the last resort; the site-named meta author is ignored
    assert meta.source == "新华社"
    assert meta.canonical_url == "https://news.example.cn/2018/05/03/night-bus.html"


def test_meta_tags_win_and_a_missing_time_is_taken_from_the_byline():
    html = """<html><head><title>标题</title><meta property="og:title" content="开放图谱标题 - 示例网">
    <meta property="article:published_time" content="2018-05-03"><meta property="og:url" content="https://e.cn/a">
    </head><body><p>2018-05-03 10:21:00 来源：示例日报</p></body></html>"""
    meta = extract_metadata(lxml.html.document_fromstring(html), None)
    assert meta.title == "开放图谱标题"
    assert meta.published_at == "2018-05-03T10:21:00+08:00"
    assert meta.canonical_url == "https://e.cn/a"


def test_canonical_falls_back_to_the_given_url():
    meta = extract_metadata(lxml.html.document_fromstring("<html><body><p>x</p></body></html>"), "https://e.cn/b")
    assert meta.canonical_url == "https://e.cn/b"
    assert meta.published_at is None and meta.author is None and meta.source is None


def _published(html: str, url: str | None = None) -> str | None:
    return extract_metadata(lxml.html.fromstring(html), url).published_at


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # A span's ends are a deadline and an effective date, not when the page was published.
        ("<p>报名日期为2003年11月1日至2003年11月30日，外地考生可以提前函报。</p>", None),
        ("<p>精选文章(截止2006年8月10日)</p><p>湘菜粤菜兵分两路</p><p>2005-06-14 03:25:55</p>",
         "2005-06-14T03:25:55+08:00"),
        ("<p>本办法自2018年5月3日起施行。</p><p>发布时间：2018-04-20 09:30</p>", "2018-04-20T09:30:00+08:00"),
    ],
)
def test_dates_that_open_or_close_a_span_are_not_the_publication(body, expected):
    assert _published(f"<html><body><h1>标题文字在此</h1>{body}</body></html>") == expected


def test_the_url_day_picks_the_byline_and_is_the_last_resort():
    url = "http://www.example.com.cn/local/2020-02/19/c_1125597921.htm"
    undated = "<html><body><h1>武汉的声音</h1><p>正文没有日期。</p></body></html>"
    assert _published(undated, url) == "2020-02-19T00:00:00+08:00"
    # A related item's time comes first under the headline; the byline of the URL's day wins.
    page = ("<html><body><h1>武汉的声音</h1><p>相关：2020-02-18 22:10 另一条新闻</p>"
            "<p>2020-02-19 08:05 来源：新华网</p></body></html>")
    assert _published(page, url) == "2020-02-19T08:05:00+08:00"
    assert _published(page) == "2020-02-18T22:10:00+08:00"  # without the URL: the first time near the headline


def test_visible_text_folds_blank_runs_and_lines():
    page = lxml.html.fromstring(
        "<div><p>一\u00a0\u00a0二\t 三</p>\n \u2002\n<p>\u3000四 \u2002\u2002 五 </p><p> </p>六</div>")
    assert visible_text(page) == "一 二 三\n四 \u2002\u2002 五\n六"


def test_a_long_blank_run_without_a_line_break_is_read_in_one_pass():
    # 2,000,000 en spaces: hours for the regular expression this reading replaced (n²/2 steps), an instant now;
    # the test's time limit is the check.
    page = lxml.html.fromstring("<div><p>开始" + "\u2002" * 2_000_000 + "结束</p><p>下一段</p></div>")
    assert visible_text(page, limit=10_000_000) == "开始" + "\u2002" * 2_000_000 + "结束\n下一段"
