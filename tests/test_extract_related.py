"""remove_boilerplate: related-reading blocks by heading text, link-dense lists, named boilerplate."""

from __future__ import annotations

from pathlib import Path

import lxml.html
import pytest

from newsdedup.extract.related import (
    is_related_heading,
    measure,
    normalize_heading,
    remove_boilerplate,
)

PAGES = Path(__file__).parent / "fixtures" / "pages"
ARTICLE = "五月三日晚上，山城小镇的第一班夜间公交从汽车站缓缓驶出"
HEADLINES = [
    "隔壁县城开通城乡公交首日客流破万人次",  # under 相关阅读 inside the article body
    "春茶采摘进入高峰期茶农忙着赶制新茶",  # under 推荐阅读 in a separate box
    "夏季用电高峰将至供电部门提前检修线路",  # under 猜你喜欢 as a bare text node
    "一只走失的柴犬被热心市民送回主人身边",  # under 24小时排行 in a class-less box
]


def _tree(html: str):
    return lxml.html.document_fromstring(html)


def test_related_blocks_go_and_the_article_stays():
    tree = _tree((PAGES / "article_related.html").read_text(encoding="utf-8"))
    assert remove_boilerplate(tree) > 0
    text = tree.text_content()
    assert ARTICLE in text
    for headline in HEADLINES:
        assert headline not in text
    for heading in ("相关阅读", "推荐阅读", "猜你喜欢", "24小时排行", "网友评论", "分享到"):
        assert heading not in text


# Short articles followed by a related block with a summary line under each headline: the summaries are
# prose and outweigh the article, which once made the block look like the article and kept it.
SUMMARY_PAGES = {
    # heading + <ul><li><a>headline</a><span>date</span><p>summary</p></li>..., inside the article element
    "short_article_summary_list.html": ("便民桥本周一重新通行", "桥边种一排柳树", "新灶台", "热乎饭菜", "午饭"),
    # heading <div> + sibling <div> of <div><a><h4>headline</h4></a><span>summary</span></div> cards
    "short_article_summary_cards.html": ("一批新面孔", "办一场丰收节", "老城墙下的夜市", "上万名游客", "专业教练带"),
}


@pytest.mark.parametrize("name", sorted(SUMMARY_PAGES))
def test_a_related_block_with_summaries_goes_even_when_it_outweighs_a_short_article(name):
    *article, first_headline, first_summary, last_summary = SUMMARY_PAGES[name]
    tree = _tree((PAGES / name).read_text(encoding="utf-8"))
    remove_boilerplate(tree)
    text = tree.text_content()
    for kept in article:
        assert kept in text
    for gone in (first_headline, first_summary, last_summary, "相关阅读", "猜你喜欢"):
        assert gone not in text


def test_summary_cards_go_when_the_short_article_itself_follows_a_headline_link():
    """The article's only paragraph comes right after a long title link, so it counts as a summary too and
    the page has no "article prose" at all; the cards block must still not be protected as the article."""
    cards = "".join(
        f'<div class="item"><a href="/a/{n}.html"><h4>{headline}</h4></a><p class="summary">{summary}</p></div>'
        for n, (headline, summary) in enumerate([
            ("城西菜市场改造完成今起恢复营业", "经过三个月的改造，城西菜市场今天恢复营业，摊位由原来的八十个增加到一百二十个…"),
            ("全市中小学下周起推行课后延时服务", "市教育局今天发布通知，全市中小学下周起推行课后延时服务，家长可自愿选择…"),
            ("老旧小区加装电梯试点扩大到十个街道", "记者从市住建局获悉，老旧小区加装电梯试点今年将扩大到十个街道，补贴标准不变…"),
        ])
    )
    page = f"""<html><body><div id="container">
      <h1><a href="/a/9.html">山城小镇开通第一条夜间公交线路方便夜归居民</a></h1>
      <p>五月三日晚上，山城小镇的第一班夜间公交从汽车站缓缓驶出，末班车延后到晚上十一点。</p>
      <div class="rec-list"><div class="hd"><span>相关阅读</span></div><div class="bd">{cards}</div></div>
    </div></body></html>"""
    tree = _tree(page)
    remove_boilerplate(tree)
    text = tree.text_content()
    assert "第一班夜间公交" in text
    for gone in ("相关阅读", "城西菜市场", "课后延时服务", "加装电梯"):
        assert gone not in text


def test_summary_prose_is_the_prose_right_after_a_headline_link():
    tree = _tree(
        "<html><body><div id='list'><h3>相关阅读</h3><ul>"
        "<li><a href='/1'>城东新建的图书馆开放</a><span>2019-04-10</span><p>图书馆今天开馆，首批藏书十二万册。</p></li>"
        "</ul></div><div id='text'><p>正文提到<a href='/x'>某机构</a>，这一句跟在短链接后面，仍是正文。</p>"
        "<p><a href='/y'>这是一个足够长的链接文字</a>，后面这一句跟在长链接后面。</p></div></body></html>"
    )
    stats = measure(tree)
    listed, text = stats[tree.get_element_by_id("list")], stats[tree.get_element_by_id("text")]
    assert listed.prose == listed.summary > 0 and listed.article_prose == 0
    assert text.summary == len("，后面这一句跟在长链接后面。") and text.article_prose > 0


def test_long_runs_and_runs_far_from_a_headline_link_are_article_prose():
    paragraph = "这是正文的第一段，" * 20  # 180 characters: longer than any summary line
    tree = _tree(
        f"<html><body><h1><a href='/self'>标题本身也是一个链接</a></h1><p id='long'>{paragraph}</p>"
        "<div><a href='/s'>分享到微博的链接文字</a><span>扫描上方二维码关注我们的微信公众号 下载新闻客户端 阅读更多内容</span>"
        "<p id='far'>隔着一大段没有标点的文字以后，这一句是正文。</p></div></body></html>"
    )
    stats = measure(tree)
    for element_id in ("long", "far"):
        block = stats[tree.get_element_by_id(element_id)]
        assert block.prose > 0 and block.summary == 0


def test_an_article_wrapper_that_opens_with_a_summary_block_keeps_the_article():
    items = "".join(
        f"<li><a href='/{i}'>别的新闻标题第{i}条</a><p>这是第{i}条新闻的第一句话，写得比较长一些。</p></li>" for i in range(8)
    )
    tree = _tree(
        f"<html><body><div class='content'><div><h3>相关阅读</h3><ul>{items}</ul></div>"
        "<p>正文第一段，讲的是一件事情的来龙去脉，内容足够长。</p>"
        "<p>正文第二段，继续讲述<a href='/x'>某个机构</a>后来的经过和细节。</p></div></body></html>"
    )
    remove_boilerplate(tree)
    text = tree.text_content()
    assert "正文第一段" in text and "某个机构后来的经过" in text
    assert "别的新闻标题" not in text and "第一句话" not in text


def test_heading_words_inside_running_text_are_kept():
    html = (
        "<html><body><div><p>记者了解到，这份点击排行榜每周更新一次，读者可以在首页看到本周最受欢迎的十篇文章，"
        "编辑部也会据此调整选题。</p><p>第二段也很长，说的是排行榜以外的另一件事情，同样是正文的一部分。</p>"
        "</div></body></html>"
    )
    tree = _tree(html)
    remove_boilerplate(tree)
    assert "点击排行榜每周更新一次" in tree.text_content()
    assert "第二段也很长" in tree.text_content()


def test_link_dense_block_is_removed_but_prose_with_links_is_not():
    html = (
        "<html><body><div class='x'><a href='/1'>一号新闻标题</a> <a href='/2'>二号新闻标题</a> "
        "<a href='/3'>三号新闻标题</a></div><div><p>正文里提到<a href='/p'>某个机构</a>，"
        "这一段主要是文字，链接只是其中很小的一部分，所以不能删除。</p></div></body></html>"
    )
    tree = _tree(html)
    remove_boilerplate(tree)
    text = tree.text_content()
    assert "一号新闻标题" not in text
    assert "某个机构" in text and "所以不能删除" in text


def test_site_selectors_are_applied_and_validated():
    html = "<html><body><div class='ad-slot'>广告位招租，联系电话一二三四五。</div><p>正文内容在这里，很长很长。</p></body></html>"
    tree = _tree(html)
    remove_boilerplate(tree, ["div.ad-slot"])
    assert "广告位" not in tree.text_content()
    with pytest.raises(ValueError, match="invalid CSS selector"):
        remove_boilerplate(_tree(html), ["div[[["])
    with pytest.raises(ValueError, match="sequence"):
        remove_boilerplate(_tree(html), "div.ad-slot")  # type: ignore[arg-type]


def test_article_wrapper_with_a_boilerplate_class_name_is_protected():
    paragraphs = "".join(f"<p>第{i}段正文，讲述事情的经过和细节，字数足够多。</p>" for i in range(8))
    html = f"<html><body><div class='share-content'>{paragraphs}</div><div class='nav'><a href='/'>首页</a></div></body></html>"
    tree = _tree(html)
    remove_boilerplate(tree)
    assert "第7段正文" in tree.text_content()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("相关阅读", True),
        ("【相关新闻】：", True),
        ("24小时排行", True),
        (" 猜你喜欢 >>", True),
        ("相關閱讀", True),
        ("这是一句很长的正文，其中提到了相关阅读这个词，但它不是标题", False),
        ("本地新闻", False),
    ],
)
def test_is_related_heading(text, expected):
    assert is_related_heading(text) is expected


def test_normalize_heading_strips_punctuation_and_space():
    assert normalize_heading("【相关 阅读】：") == "相关阅读"


def test_normalize_heading_remembers_short_texts_only():
    from newsdedup.extract import related

    related._normalize_short.cache_clear()  # other tests of this process filled it
    paragraph = "正文里很长的一段话，" * 100
    assert normalize_heading(paragraph) == "正文里很长的一段话" * 100
    assert related._normalize_short.cache_info().currsize == 0  # an article's paragraph: seen once
    assert normalize_heading("［首页］ ｜ 国内新闻") == normalize_heading("［首页］ ｜ 国内新闻") == "首页国内新闻"
    info = related._normalize_short.cache_info()
    assert (info.currsize, info.hits) == (1, 1)


def test_measure_counts_the_tails_of_comments_and_every_piece_in_its_element():
    parser = lxml.html.HTMLParser(remove_comments=False)
    tree = lxml.html.document_fromstring(
        "<html><body><div id='d'>开头<!-- note -->注释后面的一句话，也是正文的一部分。<a href='/1'>链接文字</a>尾巴</div>"
        "<ul id='u'><li>第一项</li><li><a href='/2'>第二项</a></li><li> </li></ul></body></html>", parser=parser)
    stats = measure(tree)
    d, u = stats[tree.get_element_by_id("d")], stats[tree.get_element_by_id("u")]
    tail = "注释后面的一句话，也是正文的一部分。"
    assert (d.text, d.link, d.prose, d.links) == (2 + len(tail) + 4 + 2, 4, len(tail), 1)
    assert (u.items, u.item_text, u.link, u.links) == (2, 6, 3, 1)
    assert list(stats)[-2:] == [tree.find("body"), tree]  # children before their parents


def test_the_heading_screen_rests_on_facts_of_unicode():
    # related._HeadingSearch rejects a text without normalizing it on two grounds, checked here on all of Unicode:
    # (1) a CJK unified ideograph is its own NFKC form, a letter, and part of no canonical composition;
    import sys
    import unicodedata

    from newsdedup.extract import related

    ideographs = [chr(c) for c in range(0x4E00, 0xA000)]
    assert all(unicodedata.normalize("NFKC", c) == c and c.isalnum() for c in ideographs)
    for code in range(sys.maxunicode + 1):
        decomposition = unicodedata.decomposition(chr(code))
        if decomposition and not decomposition.startswith("<"):
            parts = [int(part, 16) for part in decomposition.split()]
            assert len(parts) < 2 or not any(0x4E00 <= part <= 0x9FFF for part in parts), hex(code)
    # (2) outside _IDEOGRAPH_SOURCES no character normalizes to text holding such an ideograph.
    sources = related._IDEOGRAPH_SOURCES
    for code in range(sys.maxunicode + 1):
        if any(low <= code <= high for low, high in sources) or 0x4E00 <= code <= 0x9FFF:
            continue
        assert not any("\u4e00" <= c <= "\u9fff" for c in unicodedata.normalize("NFKD", chr(code))), hex(code)


def test_the_heading_screen_agrees_with_the_full_check():
    from newsdedup.extract.related import _HEADING_WORDS, _HEADINGS, _heading_word

    texts = ["相关阅读", "【相关阅读】：", "相 关 阅 读", "⽂章推荐", "推荐文章", "更多精彩", "首页", "国内新闻",
             "网友评论（12）", "分享到：", "热读", "今天的天气很好，" * 3, "这是一段很长的正文里顺便提到相关阅读四个字",
             "24小时排行", "２４小时排行", "精彩推薦", "㊙相关新闻", "", " "]
    for text in texts:
        assert _HEADINGS(text) == _heading_word(text, _HEADING_WORDS), text
    # Every heading word written with the radicals and compatibility ideographs NFKC turns into its characters.
    import unicodedata

    from newsdedup.extract.related import _IDEOGRAPH_SOURCES

    variant_of = {}
    for low, high in _IDEOGRAPH_SOURCES:
        for code in range(low, high + 1):
            normal = unicodedata.normalize("NFKC", chr(code))
            if len(normal) == 1:
                variant_of.setdefault(normal, chr(code))
    written = ["".join(variant_of.get(c, c) for c in word) for word in _HEADING_WORDS]
    assert sum(w != word for w, word in zip(written, _HEADING_WORDS)) >= 20
    for text in written:
        assert _HEADINGS(text) is not None and _HEADINGS(text) == _heading_word(text, _HEADING_WORDS), text


def test_re_measuring_after_drops_equals_measuring_afresh():
    # The re-measure after a removal pass takes unchanged subtrees from the walk before (related._measure); what a
    # drop changes beyond its ancestors must still be counted: the dropped block's headline link made the next
    # block's first sentence a summary (no longer once it is gone), and the dropped block's tail joins the text
    # before it into one piece that is prose where neither half was.
    from newsdedup.extract.related import _HEADINGS, _Remover

    tree = _tree(
        "<html><body><div id='main'><p>正文第一段，讲的是一件事情的来龙去脉，细节很多。</p>"
        "<div id='box'>前面五个字<span id='gone'><a href='/1'>一条足够长的新闻标题</a></span>，后面还有五字</div>"
        "<p id='next'>这一句紧跟在标题链接后面。</p><p>正文第二段，又讲了另一件事情的经过。</p></div>"
        "<ul id='list'><li><a href='/2'>另一条足够长的新闻标题</a></li></ul></body></html>"
    )
    remover = _Remover(tree, _HEADINGS)
    before = remover.stats[tree.get_element_by_id("next")]
    assert before.summary > 0 and remover.stats[tree.get_element_by_id("box")].prose == 0
    assert remover.drop(tree.get_element_by_id("gone"))
    remover.refresh()
    afresh = measure(tree)
    assert list(remover.stats) == list(afresh) and remover.stats == afresh
    assert remover.stats[tree.get_element_by_id("next")].summary == 0
    assert remover.stats[tree.get_element_by_id("box")].prose == len("前面五个字，后面还有五字")
