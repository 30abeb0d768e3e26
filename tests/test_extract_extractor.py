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


# ---------------------------------------------------------------------------- one article, many templates
STORY = (
    "今天上午，城西老桥结束为期三个月的加固施工，恢复双向通行，交通部门提醒过往车辆限速四十公里。",
    "施工期间，工人们更换了全部桥面铺装，加装了防撞护栏和排水管道，前后共投入资金一千二百万元。",
    "附近居民说，老桥恢复通行后，去菜场和学校都不用再绕行两公里了，早上送孩子上学方便了很多。",
)
HEADLINE = "城西老桥今起恢复通行"


def _template_a(paragraphs: str) -> str:
    """The headline inside the body element, a dateline, a hot list of links beside it."""
    links = "".join(f'<li><a href="/n/{n}.html">第{n}条热门新闻的标题在这里</a></li>' for n in range(12))
    return (f"<html><head><title>{HEADLINE}_青山网</title></head><body><div class='nav'><a href='/'>首页</a></div>"
            f"<div class='article'><h1>{HEADLINE}</h1><p class='info'>2024-05-06 08:30 来源：青山日报</p>{paragraphs}</div>"
            f"<ul class='hot'>{links}</ul></body></html>")


def _template_b(paragraphs: str) -> str:
    """Another portal: the headline above the body in a table layout, related reading under it."""
    return (f"<html><head><meta property='og:title' content='{HEADLINE}'><title>{HEADLINE} - 河谷新闻</title></head>"
            f"<body><table><tr><td><h2>{HEADLINE}</h2><div>发布时间：2024年5月6日 来源：河谷晚报</div></td></tr>"
            f"<tr><td class='txt'>{paragraphs}</td></tr></table><div class='xgyd'><h3>相关阅读</h3>"
            "<ul><li><a href='/1'>河谷大桥完成年度检修</a></li><li><a href='/2'>城区新增三条公交专用道</a></li></ul></div>"
            "</body></html>")


@pytest.mark.parametrize("body", ["p", "br"])
def test_the_same_body_under_two_templates_is_an_exact_repeat(body):
    from newsdedup.dedup.features import FeatureConfig, FeatureExtractor

    paragraphs = "".join(f"<p>{p}</p>" for p in STORY) if body == "p" else "<br>".join(STORY)
    a, b = extract_article(_template_a(paragraphs)), extract_article(_template_b(paragraphs))
    assert a.title == b.title == HEADLINE
    assert a.text == b.text == "\n".join(STORY)  # no headline, no dateline, every paragraph, in order
    features = FeatureExtractor(FeatureConfig())
    assert features.fingerprint(a.text) == features.fingerprint(b.text)


def test_a_lead_outside_the_body_block_stays_first_and_repeated_lines_stay():
    prices = "<p>白菜 每斤1.2元</p>" * 3
    page = _template_a(f"<div class='lead'><p>{STORY[0]}</p></div><div class='content'><p>{STORY[1]}</p>{prices}"
                       f"<p>{STORY[2]}</p></div>")
    assert extract_article(page).text.splitlines() == [STORY[0], STORY[1], *["白菜 每斤1.2元"] * 3, STORY[2]]


def test_a_small_body_block_is_not_replaced_by_the_page_around_it():
    # A one-sentence 快讯 on a page full of menus, counters and template placeholders: the located block
    # stays the body instead of a whole-page reading that drags all of that in.
    junk = "".join(f"<div>{w}</div>" for w in ("关注我们", "微博", "{AddTime}", "评论", "图集", "打印", "纠错", "加载更多"))
    page = (f"<html><head><title>{HEADLINE}</title></head><body><div class='top'>{junk}</div>"
            f"<h1>{HEADLINE}</h1><div>2024-05-06 08:30 来源：青山日报</div><div class='c'><p>{STORY[0]}</p></div>"
            f"<div class='bottom'>{junk}<p>视频播放器加载中，请稍候</p></div></body></html>")
    assert extract_article(page).text == STORY[0]


CARDS = (
    ("北湖公园新增两条步道", "北湖公园东侧新修的两条环湖步道今天开放，全长一点八公里，沿途设有六处休息亭。"),
    ("市图书馆延长周末开放时间", "从本周六起，市图书馆周末闭馆时间由十七点推迟到二十一点，自习室同步延长开放。"),
    ("南郊蔬菜基地迎来采收高峰", "连日晴好天气让南郊蔬菜基地的青菜和萝卜集中上市，基地每天向市区超市供货二十多吨。"),
    ("老城区十二条小巷完成改造", "历时半年的老城区小巷改造日前完工，十二条小巷铺上了青石板，沿线新装路灯八十盏。"),
    ("江堤巡查进入汛期值守", "随着主汛期到来，沿江八个街道的巡堤人员实行三班轮换，发现险情可通过热线直接上报。"),
    ("社区食堂推出老人午餐优惠", "城南三个社区食堂本月起为七十岁以上老人提供午餐优惠，行动不便的老人可以预约送餐。"),
    ("夜间公交线路增至十条", "市公交集团宣布新开通两条夜间线路，夜班公交增至十条，覆盖主要商圈和火车站。"),
    ("河滨绿道东段贯通", "河滨绿道东段最后一座人行桥完成吊装，绿道全线贯通，市民骑行可以一路到达湿地公园。"),
)


def test_a_card_streams_summaries_never_join_a_short_article():
    # A column of cards (headline link, summary under it) beside a one-paragraph article outweighs it; trafilatura
    # reading the whole page prints the summaries without their links, so they looked like article text.
    cards = "".join(f"<li><a href='/n/{n}.html'>{h}</a><p>{summary}</p></li>" for n, (h, summary) in enumerate(CARDS))
    page = (f"<html><head><title>{HEADLINE}</title></head><body><div class='main'><div class='article'>"
            f"<h2>{HEADLINE}</h2><div class='src'>本文来源于:青山日报 2024/05/06</div><div class='content'><p>{STORY[0]}</p>"
            f"</div></div></div><div class='side'><div class='bt'>最新推荐</div><ul>{cards}</ul></div></body></html>")
    assert extract_article(page).text == STORY[0]


def test_a_tag_bar_closing_the_article_is_no_article_text():
    # A label and its tag links at the end of the article element, after the editor line: neither is the story.
    page = (f"<html><head><title>{HEADLINE}</title></head><body><div class='article'><h2>{HEADLINE}</h2>"
            f"<div class='src'>本文来源于:青山日报 2024/05/06</div><div class='content'><p>{STORY[0]}</p><p>{STORY[1]}</p>"
            "<div class='ed'>(编辑：王五)</div><div class='kw'>关键字：<a href='/tag/1'>老桥</a></div></div></div></body></html>")
    assert extract_article(page).text == "\n".join(STORY[:2])
    # A label followed by a sentence is text: a speaker's answer in an interview.
    answer = (f"<html><head><title>{HEADLINE}</title></head><body><div class='article'><h2>{HEADLINE}</h2>"
              f"<div class='src'>本文来源于:青山日报 2024/05/06</div><div class='content'><p>{STORY[0]}</p>"
              f"<p>王五：</p><p>{STORY[1]}</p></div></div></body></html>")
    assert extract_article(answer).text == "\n".join([STORY[0], "王五：", STORY[1]])


def test_a_headline_that_reads_like_a_sentence_never_pulls_the_body_up_to_its_dateline():
    # A headline with a figure ("0.3") has sentence punctuation, so it measures as prose. Counted as the
    # article's, it made the element holding headline, tool bar and source line outscore a brief's own
    # paragraph, and those lines were stored as the body's first lines.
    headline = "城东水厂今日恢复供水 管网水压回升至0.3兆帕"
    page = (f"<html><head><title>{headline}</title></head><body><div class='main'><div class='article'>"
            f"<h2>{headline}</h2><div class='tools'>收藏本文 大字体 小字体</div>"
            f"<div class='src'>本文来源于<a href='/s'>青山日报</a> <span>2024-05-06 08:30:00</span></div>"
            f"<div class='content'><p>{STORY[0]}</p><div class='editor'>(编辑：王五)</div></div>"
            f"</div></div></body></html>")
    assert extract_article(page).text == STORY[0]


def test_a_briefs_only_paragraph_is_body_text_for_the_site_template_however_short():
    from newsdedup.extract.template import line_hash

    brief = "新华社快讯：城西老桥今天恢复双向通行。"
    article = extract_article(_template_a(f"<p>{brief}</p>"), min_chars=0, brief_chars=0)
    assert article.text == brief and len(brief) < 50
    # Counted outside the body, the site's template would take the brief for template text on the next page
    # that carries it; counted inside, it is the article's.
    assert line_hash(brief, HEADLINE) in article.body_hashes
    longer = extract_article(_template_a(f"<p>{brief}</p><p>{STORY[1]}</p><p>{STORY[2]}</p>"))
    assert line_hash(brief, HEADLINE) not in longer.body_hashes  # a short line among paragraphs: as before


def test_briefs_on_article_shaped_pages_are_kept_and_list_pages_are_not():
    brief = _template_a(f"<p>{STORY[0]}</p>")
    assert 40 <= len(STORY[0]) < 150 and extract_article(brief).text == STORY[0]
    assert _skip_reason(brief, brief_chars=60) == "too_short"  # still an article: never a list page
    # The same short text on a page without a headline and a dateline is no brief.
    loose = f"<html><body><div>{''.join(f'<a href=/x/{n}>第{n}条新闻的标题写在这里</a>' for n in range(25))}</div><p>{STORY[0]}</p></body></html>"
    assert _skip_reason(loose) == "list_page"
    assert _skip_reason(_page("list_page.html"), brief_chars=0) == "list_page"


# ---------------------------------------------------------------------------- regular expressions
def _patterns():
    """Every compiled regular expression of newsdedup.extract, with the module it lives in."""
    import re
    import newsdedup.extract as package
    from importlib import import_module
    from pkgutil import iter_modules

    for info in iter_modules(package.__path__):
        module = import_module(f"newsdedup.extract.{info.name}")
        for name, value in vars(module).items():
            for pattern in value if isinstance(value, tuple) else (value,):
                if isinstance(pattern, re.Pattern):
                    yield f"{info.name}.{name}", pattern


def _adversarial_inputs(pattern) -> list[str]:
    """Long repeats of the pattern's own words and characters, with and without an ending that lets it match."""
    import re

    source = pattern.pattern.decode("latin-1") if isinstance(pattern.pattern, bytes) else pattern.pattern
    words = re.findall(r"[\u4e00-\u9fff]{2,}|[A-Za-z]{2,}", source)[:12] or ["新闻"]
    inputs = []
    for word in words:
        for glue in ("：张", " ", "：", "2018-05-03 ", "（", "", "1"):
            inputs.append((word + glue) * 2000)
    inputs += ["　 \t" * 5000 + "x", "2018年5月3日 10:21:" * 1000, "（" * 5000, "张" * 10000 + "：", "a" * 10000 + "="]
    if isinstance(pattern.pattern, bytes):
        inputs = [("<meta " + text).encode("utf-8") for text in inputs]
    return inputs


def test_every_regular_expression_of_extraction_is_linear_on_adversarial_input():
    import time

    # Generous: a linear scan of these 20,000-character inputs takes milliseconds; a backtracking storm
    # (the old trailing-byline expression on "责任编辑：张" repeated) runs for minutes.
    budget = 5.0
    patterns = list(_patterns())
    assert len(patterns) >= 15
    slow = {}
    for name, pattern in patterns:
        started = time.perf_counter()
        for text in _adversarial_inputs(pattern):
            pattern.search(text)
            pattern.sub(type(text)(), text[-3000:])
            for _ in pattern.finditer(text[:5000]):
                pass
        if time.perf_counter() - started > budget:
            slow[name] = round(time.perf_counter() - started, 1)
    assert not slow  # seconds each slow expression took


def _long_story(paragraphs: int) -> list[str]:
    """Distinct paragraphs of about 95 characters each."""
    return [f"第{n + 1}段，记者回访了工地。" + STORY[n % 3] + STORY[(n + 1) % 3] for n in range(paragraphs)]


def _con_page(block: str) -> str:
    """A page whose article block ("con", a name trafilatura does not know) follows the headline and dateline."""
    return (f"<html><head><title>{HEADLINE}_青山网</title></head><body><div class='nav'><a href='/'>首页</a></div>"
            f"<div class='wrap'><h1>{HEADLINE}</h1><div class='info'>2024-05-06 08:30 来源：青山日报</div>"
            f"<div class='con'>{block}</div></div></body></html>")


def test_subheadings_and_list_items_of_a_long_article_stay_in_its_body():
    # trafilatura finds its main block by name; a body block named otherwise ("con") went to its fallback, which
    # keeps <p> text only: the article's subheadings and list items were lost.
    story = _long_story(9)
    body = (f"<p>{story[0]}</p><p>{story[1]}</p><h3>施工回顾</h3><p>{story[2]}</p><p>{story[3]}</p>"
            f"<h3>居民怎么说</h3><p>{story[4]}</p><p>{story[5]}</p><ul><li>桥面铺装全部更换</li><li>新装防撞护栏</li></ul>"
            f"<p>{story[6]}</p><p>{story[7]}</p><p>{story[8]}</p>")
    lines = extract_article(_con_page(body)).text.splitlines()
    assert lines == [story[0], story[1], "施工回顾", story[2], story[3], "居民怎么说", story[4], story[5],
                     "- 桥面铺装全部更换", "- 新装防撞护栏", *story[6:]]  # trafilatura marks list items


def test_the_text_after_a_picture_in_a_table_layout_stays():
    # An old portal's table layout: the sentence goes on after a picture set in a small table of its own, as loose
    # text, which trafilatura's fallback (the body block has no name it knows) never reads.
    picture = "<table align='left'><tr><td><a href='/p/1.html'><img src='/p/1.jpg'></a></td></tr></table>"
    story = "".join(f"<p>{p}</p>" for p in _long_story(8))
    page = (f"<html><head><title>{HEADLINE}</title></head><body><table><tr><th>{HEADLINE}</th></tr>"
            f"<tr><td>2024年05月06日 08:30 青山日报</td></tr><tr><td><p>{STORY[0]}</p></td></tr>"
            f"<tr><td><table><tr><td><p>施工期间，工人们更换了全部桥面铺装，{picture}加装了防撞护栏和排水管道。</p>"
            f"{story}</td></tr></table></td></tr></table></body></html>")
    assert "加装了防撞护栏和排水管道。" in extract_article(page).text


def test_a_sites_legal_notice_closing_the_article_is_no_article_text():
    notice = ("<p>振兴网版权与免责声明：</p><p>① 凡本网注明“来源：振兴网”的所有作品，版权均属于本网，未经本网授权不得转载、"
              "摘编或利用其它方式使用上述作品。</p><p>② 如因作品内容、版权和其它问题需要同本网联系的，请在30日内进行。</p>")
    page = _template_a("".join(f"<p>{p}</p>" for p in STORY) + notice)
    assert extract_article(page).text == "\n".join(STORY)
    # An article that speaks of a notice keeps it: the words are inside a sentence, or the notice is most of the text.
    quoted = _template_a(f"<p>{STORY[0]}</p><p>江城日报社昨天发布反侵权公告，提醒各网站规范转载行为。</p><p>{STORY[1]}</p>")
    assert "反侵权公告" in extract_article(quoted).text
    first = _template_a(f"<p>反侵权公告</p><p>{STORY[0]}</p><p>{STORY[1]}</p>")
    assert extract_article(first).text.startswith("反侵权公告\n")


def test_a_hot_list_closing_the_article_block_stays_out_of_the_body_and_a_list_inside_it_stays():
    # A hot list of headlines with their first lines (no links: rendered by script) inside the article's block, after
    # its text: trafilatura's main extractor would print it as list items. A list the text goes on after stays.
    story = _long_story(9)
    steps = "<ul><li>桥面铺装全部更换</li><li>新装防撞护栏</li><li>更换排水管道</li><li>重画交通标线</li><li>加装路灯</li></ul>"
    hot = "".join(f"<li><b>{h}</b> {summary}</li>" for h, summary in CARDS)
    body = "".join(f"<p>{p}</p>" for p in story[:4]) + steps + "".join(f"<p>{p}</p>" for p in story[4:])
    text = extract_article(_con_page(f"{body}<div class='hot-news'><div class='tit'>今日热点</div><ul>{hot}</ul></div>")).text
    assert text.splitlines()[-1] == story[-1] and "- 加装路灯" in text
    assert not any(h in text for h, _ in CARDS) and "今日热点" not in text


def test_an_unlabelled_dateline_opening_the_body_goes_once():
    # "每日经济新闻 2018-06-14 13:20:39": a name and a date with its time of day, no label, as the first line of the
    # body (inside the body element, so the locator does not leave it out).
    page = _template_a("<p>青山日报 2024-05-06 08:30:15</p>" + "".join(f"<p>{p}</p>" for p in STORY))
    assert extract_article(page).text == "\n".join(STORY)
    # Only once, where the body opens: a live report's entries look the same and stay.
    live = ["2024-05-06 10:30 沪指高开", "2024-05-06 10:45 创业板指翻红", *STORY]
    page = _template_a("<p>青山日报 2024-05-06 08:30:15</p>" + "".join(f"<p>{p}</p>" for p in live))
    assert extract_article(page).text.splitlines() == live
    # A sentence with a date and a time is text.
    sentence = "2024年5月6日10:30，老桥正式通车，首批车辆驶过桥面"
    assert extract_article(_template_a(f"<p>{sentence}</p>" + "".join(f"<p>{p}</p>" for p in STORY))).text.startswith(sentence)


def test_a_sites_sign_off_closing_the_body_goes_and_stays_anywhere_else():
    from newsdedup.extract.template import line_hash

    notice = "特别提醒：如果我们使用了您的图片，请作者与本站联系索取稿酬。如您不希望作品出现在本站，可联系我们要求撤下您的作品。"
    sign_offs = frozenset({line_hash(notice, HEADLINE)})
    closing = _template_a("".join(f"<p>{p}</p>" for p in (*STORY, notice)))
    assert extract_article(closing).text.endswith(notice)  # without the site's template: one page tells nothing
    assert extract_article(closing, sign_offs=sign_offs).text == "\n".join(STORY)
    # Not closing the body: the article goes on after it, so it is the article's text (a series' introduction).
    inside = _template_a("".join(f"<p>{p}</p>" for p in (STORY[0], notice, *STORY[1:])))
    assert notice in extract_article(inside, sign_offs=sign_offs).text
    # Closing the body but speaking of the headline: the article's own closing paragraph, printed again.
    own = f"{HEADLINE}后，附近居民出行更加方便。"
    assert extract_article(_template_a("".join(f"<p>{p}</p>" for p in (*STORY, own))),
                           sign_offs=frozenset({line_hash(own, HEADLINE)})).text.endswith(own)


def test_visible_text_length_counts_the_same_with_and_without_scripts():
    """The one-walk count (what the extraction reads: scripts already dropped) equals the XPath's on the same tree, and
    a tree that still holds scripts, styles and <noscript> notices is counted without them."""
    import lxml.html

    from newsdedup.extract import extractor

    page = ("<html><head><title>t</title></head><body><div>正文 第一段，\u3000有空格。<b>加粗</b>尾巴</div>"
            "<p> 第二段 <a>链接</a> 尾 </p>{extra}</body></html>")
    plain = lxml.html.document_fromstring(page.format(extra=""))
    scripted = lxml.html.document_fromstring(
        page.format(extra="<script>var a = '脚本文字';</script><style>p {}</style><noscript>请启用脚本</noscript>"))
    by_xpath = sum(extractor._non_space_length(piece) for piece in plain.xpath(extractor._VISIBLE_TEXT))
    assert by_xpath == len("正文第一段，有空格。加粗尾巴第二段链接尾")
    assert extractor._visible_text_length(plain) == by_xpath
    assert extractor._visible_text_length(scripted) == by_xpath


def test_an_article_printed_after_the_closing_html_tag_is_read_as_browsers_show_it():
    # A CMS whose header include closes the document prints the article after </html>; libxml2 leaves it beside the
    # root element, where the page's reading never looked, and the page was skipped as too short.
    story = "".join(f"<p>{line}</p>" for line in STORY)
    page = (f"<html><head><meta charset='utf-8'><title>{HEADLINE}_青山网</title></head><body>"
            "<div class='top'><a href='/'>首页</a> <a href='/local/'>本地</a></div></body></html>\n"
            f"<!--正文--><div class='content'><h1>{HEADLINE}</h1><div class='txt'>{story}</div></div>"
            "<div class='foot'>青山网 版权所有</div>")
    article = extract_article(page.encode(), URL, min_chars=100)
    assert article.title == HEADLINE
    assert article.text == "\n".join(STORY)


def test_visible_text_reads_what_the_python_walk_reads():
    """The stylesheet's reading (in C) equals the walk's: blocks on lines of their own, skipped elements without their
    text but with their tails, comments' and processing instructions' tails in place, only the element asked for;
    a page past the limit is read by the walk, which stops there."""
    import lxml.html

    from newsdedup.extract import metadata

    pages = [
        "<html><head><title>标题</title><style>p{}</style></head><body><p>甲<!--注释-->乙<i>丙</i>丁<?pi x?>戊</p>"
        "<script>var s = '脚本';</script>尾巴<div>块<br>换行</div><select><option>选项</option></select>后"
        "<o:p>Word 标签</o:p>&nbsp;空格\u3000全角<table><tr><td>格一</td><td>格二</td></tr></table></body></html>",
        "<html><body><div>正文</div></body></html>\n<!--x--><div>html 之后</div>",
        "<p>only</p>",
    ]
    for page in pages:
        root = lxml.html.document_fromstring(page)
        walked = metadata._visible_text_walk(root, 2_000_000)
        assert metadata.visible_text(root) == walked
        body = root.find("body")
        assert metadata.visible_text(body) == metadata._visible_text_walk(body, 2_000_000)
    root = lxml.html.document_fromstring(pages[0])
    assert metadata.visible_text(root) == "甲乙丙丁戊\n尾巴\n块\n换行\n后Word 标签 空格 全角\n格一\n格二"
    assert metadata.visible_text(root, limit=3) == metadata._visible_text_walk(root, 3) == "甲乙丙丁"


def test_link_texts_in_one_pass_are_each_links_text_content():
    """The link texts read in one stylesheet pass (the list-page and related-headline tests weigh them) are what
    text_content() gives each link: on every fixture page, for a link whose text holds the pass's separator, and for
    a part of a document (read link by link)."""
    import lxml.html

    from newsdedup.extract.extractor import _LINK_SEPARATOR, _link_texts, _parse

    pages = sorted(PAGES.glob("*.html"))
    assert pages
    for path in pages:
        root = _parse(path.read_bytes().decode("utf-8", "replace"))
        assert _link_texts(root) == [a.text_content() for a in root.iter("a")], path.name
    root = lxml.html.document_fromstring(
        f"<html><body><a href='/1'>甲{_LINK_SEPARATOR}乙</a><p><a href='/2'>丙<b>丁</b>戊</a>尾</p><a href='/3'></a></body></html>")
    assert _link_texts(root) == [f"甲{_LINK_SEPARATOR}乙", "丙丁戊", ""]
    assert _link_texts(root.find("body/p")) == ["丙丁戊"]
