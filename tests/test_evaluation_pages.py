"""Page-level benchmark: shells from our own small pages, the local server, and one small real run."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest

from newsdedup.demo.server import LoopbackServer
from newsdedup.evaluation.extraction import token_prf
from newsdedup.evaluation.page_level import benchmark_sizes, predicted_clusters, run_page_level
from newsdedup.evaluation.pages import (
    HARD_VARIANTS,
    RELATED_HEADINGS_USED,
    RelatedItem,
    ShellError,
    build_site,
    hard_variant,
    make_shell,
    related_block,
    render_page,
)
from newsdedup.crawl.sites import parse_sites
from newsdedup.extract.extractor import SkipPage, extract_article

OLD_PARAGRAPHS = (
    "青石镇的老码头在上个月完成了改造，原来堆满杂物的河岸变成了一条两公里长的步行道，镇上的居民傍晚都爱来这里散步。",
    "负责工程的施工队介绍，步行道沿用了旧码头的条石，栏杆则换成了防腐木，夜里还有暖色的路灯照着水面。",
    "镇文化站站长说，接下来还会在码头旁边开一间小型展览室，陈列老船工留下的渔具和照片，让年轻人知道这里的过去。",
)
NEW_TEXT = (
    "山脚下的果园今年迎来了丰收，三百多亩苹果树上挂满了红彤彤的果子，果农们天不亮就上山采摘。\n"
    "合作社的负责人告诉记者，今年春天雨水充足，加上去年冬天请来农技员修剪了枝条，单株产量比往年高出两成。\n"
    "为了让苹果卖得更远，合作社和县里的物流公司签了协议，采摘下来的果子当天分拣装箱，第二天就能送到省城的超市。\n"
    "不少在外打工的年轻人也回到村里，帮着家里直播卖果，有人一晚上就卖出去上千箱，村里人都说这是过去想都不敢想的事。"
)
NEW_TITLE = "山村果园喜获丰收 直播带货卖出上千箱"
OTHERS = (
    RelatedItem("/a/2018/1.shtml", "城东新建的图书馆正式向市民开放", "城东新建的图书馆今天上午正式开馆，首批藏书十二万册。"),
    RelatedItem("/a/2018/2.shtml", "暴雨过后江堤巡查人员昼夜值守", "连续三天的暴雨过后，江堤沿线的巡查人员分成三班昼夜值守。"),
    RelatedItem("/a/2018/3.shtml", "老街改造保留了百年骑楼的原貌", "历时一年的老街改造近日完工，沿街的百年骑楼保留了原来的样子。"),
    RelatedItem("/a/2018/4.shtml", "中学生机器人社团捧回全国大奖", "市第三中学的机器人社团在全国比赛中拿到了一等奖，队员们都是高二学生。"),
)


def portal_page(*, charset: str = "utf-8", paragraphs: tuple[str, ...] = OLD_PARAGRAPHS, br: bool = False) -> str:
    body = "<br>\n".join(paragraphs) if br else "\n".join(f'<p class="txt">{p}</p>' for p in paragraphs)
    return f"""<!DOCTYPE html>
<html><head><meta http-equiv="Content-Type" content="text/html; charset={charset}">
<title>青石镇老码头变身滨河步行道_青山新闻网</title>
<meta name="description" content="青石镇的老码头在上个月完成了改造，原来堆满杂物的河岸变成了步行道。">
<meta property="og:title" content="青石镇老码头变身滨河步行道">
<script>var pageConfig = {{channel: "local", id: 1024}};</script>
</head><body>
<div class="topnav"><a href="/">首页</a> <a href="/local/">本地</a> <a href="/ent/">娱乐</a> <a href="/sports/">体育</a></div>
<div class="adbox"><a href="/ad/1">秋季家装节 全场五折起</a></div>
<div class="main">
  <h1 class="title">青石镇老码头变身滨河步行道</h1>
  <div class="info">2018-10-12 09:30 来源：青山日报</div>
  <div class="article">
    {body}
  </div>
  <div class="xgxw"><h3>相关新闻</h3><ul>
    <li><a href="/local/7.shtml">青石镇举办第一届渔火节</a></li>
    <li><a href="/local/8.shtml">河道清淤工程年底前完工</a></li>
    <li><a href="/local/9.shtml">老船工讲述码头往事</a></li>
  </ul></div>
</div>
<div class="footer">关于我们 | 联系方式 | 版权所有 青山新闻网</div>
</body></html>
"""


def extracted(page: bytes) -> str:
    return extract_article(page).text


def token_f1(predicted: str, gold: str) -> float:
    return token_prf(predicted, gold)[2]


@pytest.fixture(scope="module")
def shell():
    return make_shell(portal_page(), name="fixture/qingshan.html", portal="qingshan")


def test_the_body_is_replaced_and_the_page_around_it_kept(shell):
    block = related_block(OTHERS, heading="相关阅读", layout=0)
    page = render_page(shell, title=NEW_TITLE, text=NEW_TEXT, related=block).decode("utf-8")
    assert not any(old[:12] in page for old in OLD_PARAGRAPHS)
    for line in NEW_TEXT.splitlines():
        assert f'<p class="txt">{line}</p>' in page  # the page's own paragraph markup
    for kept in ("首页", "秋季家装节", "青石镇举办第一届渔火节", "版权所有 青山新闻网", "var pageConfig", "来源：青山日报"):
        assert kept in page, kept
    assert f"<title>{NEW_TITLE}_青山新闻网</title>" in page
    assert re.search(rf"<h1[^>]*>{NEW_TITLE}</h1>", page)
    assert 'content="山脚下的果园今年迎来了丰收' in page  # the description names the new text
    assert "相关阅读" in page and all(item.headline in page for item in OTHERS)
    assert re.search(r'<meta charset="utf-8">', page) and "charset=gbk" not in page.lower()


@pytest.mark.parametrize("layout", range(5))
@pytest.mark.parametrize("inside", [True, False])
def test_the_extractor_gets_the_embedded_text_and_not_the_related_block(shell, layout, inside):
    block = related_block(OTHERS, heading=RELATED_HEADINGS_USED[layout], layout=layout)
    text = extracted(render_page(shell, title=NEW_TITLE, text=NEW_TEXT, related=block, related_inside=inside))
    assert token_f1(text, NEW_TEXT) >= 0.9, text
    for item in OTHERS:
        assert item.headline not in text and item.first_line[:15] not in text
    assert "渔火节" not in text and "青石镇" not in text


def test_a_gbk_shell_stays_gbk_and_characters_outside_gbk_become_references():
    raw = portal_page(charset="gb2312").encode("gbk")
    shell = make_shell(raw, name="fixture/gbk.html", portal="gbk-portal", encoding="gbk")
    text = NEW_TEXT + "\n果农笑称今年的收成是“𠮷”年。"  # 𠮷 is outside GBK
    page = render_page(shell, title=NEW_TITLE, text=text)
    with pytest.raises(UnicodeDecodeError):
        page.decode("utf-8")
    assert "山脚下的果园" in page.decode("gbk")
    assert b"&#134071;" in page
    assert b'<meta charset="gb2312">' in page
    assert "𠮷" in extracted(page)


def test_br_separated_pages_get_plain_paragraphs_in_place_of_their_lines():
    shell = make_shell(portal_page(br=True), name="fixture/br.html", portal="br")
    assert shell.paragraph == "<p>"
    page = render_page(shell, title=NEW_TITLE, text=NEW_TEXT).decode("utf-8")
    assert "<p>合作社的负责人" in page and "来源：青山日报" in page
    assert not any(old[:12] in page for old in OLD_PARAGRAPHS) and "<br>" not in page
    assert token_f1(extracted(page.encode("utf-8")), NEW_TEXT) >= 0.9


def test_junk_goes_into_a_script_and_the_page_has_no_article(shell):
    junk = "var ua = navigator.userAgent.toLowerCase();\nif (ua) { location.replace('/m/</script>'); }\n" * 5
    page = render_page(shell, title="", text=junk, script=True)
    assert b"<\\/script>" in page and b"<p class=\"txt\">var ua" not in page
    try:
        text = extracted(page)
    except SkipPage:
        return
    assert "navigator" not in text


def test_a_page_without_article_text_is_no_shell():
    links = "".join(f'<li><a href="/n/{i}.shtml">第{i}条新闻的标题在这里</a></li>' for i in range(40))
    with pytest.raises(ShellError):
        make_shell(f"<html><head><title>列表</title></head><body><ul>{links}</ul></body></html>", name="l", portal="l")


@pytest.mark.parametrize("kind", HARD_VARIANTS)
def test_hard_variants_and_the_extractor_on_them(shell, kind):
    hot = [RelatedItem("", f"第{n}条热点：城东新区规划公布", f"第{n}条热点的摘要，城东新区今年将新建三所学校。") for n in range(30)]
    variant = hard_variant(shell, kind, hot)
    assert variant.portal == f"qingshan+{kind}" and variant.name.endswith("#" + kind)
    page = render_page(variant, title=NEW_TITLE, text=NEW_TEXT).decode("utf-8")
    if kind == "hot_list":
        assert page.count("城东新区规划公布") == 30 and page.index("村里人都说") < page.index("第0条热点")  # beside it
    elif kind == "bare_text":
        assert "<br>" in page and '<p class="txt">' not in page
    else:
        assert re.search(rf"<div class=\"article\">\s*<h1>{NEW_TITLE}</h1>", page)
    text = extracted(page.encode("utf-8"))
    assert text == NEW_TEXT  # every line, no headline, no hot list
    with pytest.raises(ValueError, match="kind must be"):
        hard_variant(shell, "upside_down")


def docs_fixture() -> list[dict]:
    texts = [NEW_TEXT, "\n".join(OLD_PARAGRAPHS)] + [item.first_line * 6 for item in OTHERS]
    docs = []
    for n, text in enumerate(texts):
        story = f"s{n % 4}"
        docs.append({"id": f"d{n}", "text": text, "title": f"标题{n}号新闻稿件", "story": story, "kind": "original"})
    return docs


def shells_fixture() -> list:
    names = [("p1", "one"), ("p2", "two"), ("p3", "three")]
    shells = [make_shell(portal_page(), name=n, portal=p) for n, p in names]
    shells.append(make_shell(portal_page(charset="gbk").encode("gbk"), name="g1", portal="gbk", encoding="gbk"))
    return shells


def test_build_site_spreads_stories_over_portals_and_quotes_other_stories():
    docs = docs_fixture()
    site = build_site(docs, shells_fixture(), seed=3, gbk_share=0.5, list_size=4)
    assert [p.doc_id for p in site.pages] == [d["id"] for d in docs]
    story_of = {d["id"]: d["story"] for d in docs}
    portal_of = {"p1": "one", "p2": "two", "p3": "three", "g1": "gbk"}
    portal_of.update({f"{n}#{k}": f"{p}+{k}" for n, p in list(portal_of.items()) for k in HARD_VARIANTS})
    assert len(site.hot) == 1 and all(len(lines) == len(docs) for lines in site.hot.values())  # one hot shell of 4
    by_story: dict[str, list[str]] = {}
    for page in site.pages:
        by_story.setdefault(story_of[page.doc_id], []).append(portal_of[page.shell])
    assert all(len(set(portals)) == len(portals) for portals in by_story.values())
    assert sorted(site.list_pages) == ["/list/1.html", "/list/2.html"]
    first_list = site.list_pages["/list/1.html"].decode("utf-8")
    assert all(p.path in first_list for p in site.pages[:4]) and 'href="/list/2.html"' in first_list
    path_story = {p.path: story_of[p.doc_id] for p in site.pages}
    for page in site.pages:
        linked = re.findall(rb'href="(/[a-z0-9-]+/2018\d{4}/\d+\.shtml)"', page.body)
        assert linked and all(path_story[h.decode()] != story_of[page.doc_id] for h in linked)
    with pytest.raises(ValueError, match="ids repeat"):
        build_site(docs + docs[:1], shells_fixture())


def test_the_server_serves_lists_articles_robots_and_a_site_file_that_matches_them():
    site = build_site(docs_fixture(), shells_fixture(), seed=1, list_size=4)
    with LoopbackServer(site.responses()) as server:
        base = server.base_url
        assert base.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(base + "/list/1.html") as response:
            assert "滚动新闻" in response.read().decode("utf-8")
        page = site.pages[0]
        with urllib.request.urlopen(base + page.path) as response:
            assert response.read() == page.body
            assert response.headers["Content-Type"] == page.content_type
        with urllib.request.urlopen(base + "/robots.txt") as response:
            assert b"User-agent" in response.read()
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(base + "/nothing.html")
        assert missing.value.code == 404
        entries = parse_sites(site.sites_toml(base))  # one site per portal
        assert len(entries) == len({p.path.split("/")[1] for p in site.pages}) >= 2
        assert all(e.start_urls == (base + "/list/1.html",) for e in entries)
        assert all(sum(e.is_article(base + p.path) for e in entries) == 1 for p in site.pages)
        assert entries[0].is_followable(base + "/list/2.html") and not entries[0].is_article(base + "/list/2.html")
        assert server.requests_served[page.path] == 1
    with pytest.raises(ValueError, match="loopback"):
        LoopbackServer(site.responses(), host="0.0.0.0")


def test_predicted_clusters_and_sizes():
    rows = [
        {"url": "http://h/a.shtml", "cluster_id": 3, "duplicate_of": None},
        {"url": "http://h/b.shtml", "cluster_id": 3, "duplicate_of": "http://h/a.shtml"},
        {"url": "http://h/x.shtml", "cluster_id": 4, "duplicate_of": None},
    ]
    predicted, unknown = predicted_clusters(rows, {"/a.shtml": "d1", "/b.shtml": "d2"})
    assert predicted == {"d1": "c3", "d2": "c3"} and unknown == ["http://h/x.shtml"]
    assert sum(benchmark_sizes(40).values()) >= 10
    with pytest.raises(ValueError, match="docs must be"):
        benchmark_sizes(5)


def test_a_small_page_level_run_through_the_real_spider(shared_data, tmp_path):
    result = run_page_level(shared_data, docs=40, max_shells=16, workdir=tmp_path, workers=2)
    crawl = result["crawl"]
    assert crawl["article_requests"] == crawl["pages"] == result["docs"]
    assert crawl["exported"] + crawl["skipped"] == crawl["pages"] and crawl["unknown_urls"] == 0
    assert result["shells"]["real"] >= 8 and result["shells"]["gbk_pages"] > 0
    assert all(n >= 1 for n in result["shells"]["hard"].values()) and result["extraction"]["f1_by_shell"]
    assert result["pairs"]["true"] > 10
    assert result["f1"] > 0.8, result
    assert (tmp_path / "export.jsonl").stat().st_size > 0


def test_a_related_quote_the_hot_list_also_shows_is_not_counted_as_a_related_leak():
    from newsdedup.evaluation.pages import _quoted

    items = [RelatedItem("/a", "转：城东新区规划公布 三所学校开建", "城东新区今年将新建三所学校，首批明年招生。"),
             RelatedItem("/b", "地铁五号线今日开通运营", "记者今天从市轨道交通集团获悉，五号线正式开通。")]
    hot = ["城东新区规划公布 三所学校开建 城东新区今年将新建三所学校，首批明年招生。"]  # a reprint of /a's story
    first_lines = tuple(i.first_line[:20] for i in items)
    assert _quoted(items) == ("转：城东新区规划公布 三所学校开建", "地铁五号线今日开通运营", *first_lines)
    # /a's first line is on the hot list: a body holding it may hold it from there (a hot-list leak)
    assert _quoted(items, hot) == ("转：城东新区规划公布 三所学校开建", "地铁五号线今日开通运营", first_lines[1])
