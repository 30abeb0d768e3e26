"""Site templates: learning what recurs across a site's pages, and crawls of portals that fool one-page rules.

The crawls run the real spider (``scrapy crawl portal`` in a subprocess) against pages we write ourselves,
served on 127.0.0.1 by the test; the checks read the export and the store.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
import subprocess
import sys
from urllib.parse import urlsplit

import lxml.html
import pytest

from conftest import REPO_ROOT
from newsdedup.demo.server import LoopbackServer, Response, site_entry
from newsdedup.extract.related import normalize_heading
from newsdedup.extract.template import (
    FOREIGN_HEADLINE_SHARE,
    MIN_PAGES,
    PARAGRAPH_CHARS,
    SiteTemplate,
    headline_share,
    page_lines,
    speaks_of_headline,
    strip_boilerplate,
)

# Briefs of 40-150 characters, written for these tests.
BRIEFS = (
    ("城西老桥今起恢复通行", "今天上午，城西老桥结束为期三个月的加固施工，恢复双向通行。交通部门提醒过往车辆限速四十公里。"),
    ("北湖公园新增两条步道", "北湖公园东侧新修的两条环湖步道今天开放，全长一点八公里，沿途设有六处休息亭，夜间照明开放到二十二点。"),
    ("市图书馆延长周末开放时间", "从本周六起，市图书馆周末闭馆时间由十七点推迟到二十一点，自习室同步延长，读者凭借书证即可入座。"),
    ("第三中学机器人社团获全国一等奖", "在昨天结束的全国青少年机器人大赛上，市第三中学社团的四名高二学生凭借自主设计的分拣机器人获得一等奖。"),
    ("南郊蔬菜基地迎来采收高峰", "连日晴好天气让南郊蔬菜基地的青菜和萝卜集中上市，基地每天向市区超市供货二十多吨，价格比上周略有回落。"),
    ("老城区十二条小巷完成改造", "历时半年的老城区小巷改造日前完工，十二条小巷铺上了青石板，沿线新装路灯八十盏，雨污管道全部分流。"),
    ("江堤巡查进入汛期值守", "随着主汛期到来，沿江八个街道的巡堤人员实行三班轮换、昼夜值守，发现险情可通过热线直接上报指挥部。"),
    ("社区食堂推出老人午餐优惠", "城南三个社区食堂本月起为七十岁以上老人提供午餐优惠，两荤一素一汤十二元，行动不便的老人可预约送餐。"),
    ("夜间公交线路增至十条", "市公交集团宣布新开通两条夜间线路，夜班公交增至十条，覆盖主要商圈和火车站，末班车发车时间为凌晨一点。"),
    ("河滨绿道东段贯通", "河滨绿道东段最后一座人行桥完成吊装，绿道全线贯通，市民骑行可从老码头一路到达湿地公园。"),
)
# What each story goes on to say, for pages that need more than a brief.
MORE = (
    "施工期间，工人们更换了全部桥面铺装，加装了防撞护栏和排水管道。附近居民说，老桥恢复通行后，去菜场和学校都不用再绕行两公里了。桥头新设的公交站台也同步启用，三条线路恢复原来的走向。",
    "公园管理处介绍，步道采用透水材料铺设，雨后不积水；沿线还补种了两百多棵樱花和海棠，明年春天将形成一条花廊，欢迎市民前来散步。管理处还计划在湖边增设两处母婴室和一处无障碍卫生间。",
    "图书馆负责人表示，延长开放后将增加两名值班馆员，并在晚间开设少儿绘本专区。去年周末的日均到馆人数已超过三千人次，座位经常不够用。馆方同时提醒读者爱护图书，自习时请保持安静，不要占座。",
    "指导老师说，学生们从去年秋天开始设计，利用课余时间反复调试程序，失败了上百次。学校计划明年开设机器人选修课，让更多同学参与进来。获奖的分拣机器人将在市科技馆展出一个月，市民可免费参观。",
    "基地负责人表示，今年引进了滴灌设备和防虫网，蔬菜产量比去年提高了三成。为保证新鲜，采收下来的蔬菜当天分拣装车，第二天一早上架。农技人员还在基地开设了周末课堂，教市民在阳台上种菜。",
    "改造中，施工方保留了小巷原有的老井和门楼，请老居民一起商量设计方案。不少在外工作的年轻人回来看了以后说，找回了小时候的记忆。街道将组织志愿者定期巡查，及时修补破损的石板和路灯。",
    "防汛指挥部提醒，汛期内请市民不要到江边垂钓、游泳，遇到险情及时拨打热线。各街道还储备了沙袋、救生衣等物资，随时可以调用。气象部门预计未来一周仍有强降雨，沿江低洼地区要提前做好转移准备。",
    "社区负责人介绍，食堂的菜单每周更换，由营养师搭配，老人们可以提前一天在手机上点餐。开业一周以来，每天就餐的老人已经超过两百位。有老人说，以前一个人在家懒得做饭，现在每天都来食堂和老朋友聊天。",
    "公交集团表示，夜班车将根据客流情况调整发车间隔，乘客可以通过手机查询实时到站信息。新线路开通后，商圈员工下夜班回家方便了许多。下一步，公交集团还将试点定制公交，满足医院和工业园区的夜间出行需求。",
    "绿道沿线设置了十二个驿站，提供饮水、充电和自行车维修服务。管理部门提醒骑行者注意避让行人，周末人多时请适当减速，文明出行。明年，河滨绿道西段也将开工，建成后全长将超过二十公里。",
)
TOO_SHORT = ("简讯", "今晚有雷阵雨，请注意出行安全。")
# Headlines of a hot list that sits beside every article: about 1,400 characters, no links (the list is
# rendered by script handlers), every line a sentence of its own, like the summaries such lists show.
HOT = [
    f"{n}. 热点新闻第{n}条，全省重点项目集中开工，总投资超过三百亿元，涉及交通能源水利等领域，带动就业岗位上万个。"
    for n in range(1, 31)
]


# The story a page template was cut from and never emptied of: it stands in the article element of every page,
# before the page's own article (a shell some CMS exports leave behind).
LEFTOVER = (
    "据档案馆介绍，这批清代契约文书共三百二十件，年代跨越乾隆至宣统，内容涉及土地买卖、房屋典当、宗族分家和婚嫁聘礼。",
    "修复人员先用软毛刷清除表面浮尘，再以手工纸逐页托裱，破损严重的几件需要补配纸张，颜色、厚度和纹理都要与原件接近。",
)


# A forum published one page a speaker: every page opens with the forum's introduction, which names the speakers,
# and each headline quotes one of them ("X：Y"), sharing hardly a bigram with the introduction.
FORUM_INTRO = ("本报讯 昨日，第十二届城市发展论坛在青山会展中心举行，市规划院院长王建国、青山大学教授李明远、"
               "城建集团总经理赵红梅出席并发表主题演讲，论坛由市社科院院长陈立主持。")
FORUM_TALKS = (
    ("王建国：老城更新要留住烟火气", "王建国在演讲中表示，老城更新不能一拆了之，要让原来的居民留得下、住得好，"
     "小店、菜场和老字号是街区的灵魂，规划要先问居民想要什么，再决定修什么。"),
    ("李明远：数据让交通治理更精细", "李明远在演讲中表示，过去十年全市机动车增加了两倍，单靠修路已经解决不了拥堵，"
     "信号灯配时、公交线网和停车收费都应当依据实时数据动态调整，让有限的道路发挥更大作用。"),
    ("赵红梅：保障房建设要算长远账", "赵红梅在演讲中表示，保障房不能只看开工套数，更要看交付以后的物业、学校和公交配套，"
     "城建集团今年将试点由同一家单位负责建设和运营，让住户搬进来就能正常生活。"),
    ("陈立：研究要走进街巷 听听居民怎么说", "陈立在总结时表示，城市研究不能只坐在办公室里看报表，研究人员要走进街巷，"
     "和居民、商户、环卫工人聊一聊，问题往往就藏在这些日常的细节里。"),
    ("王建国：历史建筑保护要有耐心", "王建国在圆桌讨论中表示，历史建筑的修缮要慢下来，一砖一瓦都要有记录，"
     "宁可多花两年时间把材料和工艺弄清楚，也不能为了赶工期把老房子修成新房子。"),
)


def _page(title: str, text: str, *, anchored: bool, leftover: bool = False) -> bytes:
    """An article page with the hot list beside it. ``anchored`` pages carry the headline and dateline a
    one-page extractor anchors on, the hot list as list items; the others only a <title>, and the hot list as
    plain paragraphs that outweigh the article."""
    if anchored:
        head = f'<h1 class="tit">{html.escape(title)}</h1><div class="info">2024-05-06 08:30 来源：青山日报</div>'
        hot = '<ul class="hotlist">' + "".join(f"<li>{html.escape(line)}</li>" for line in HOT) + "</ul>"
    else:
        head, hot = "", "".join(f"<p>{html.escape(line)}</p>" for line in HOT)
    old = "".join(f"<p>{line}</p>" for line in LEFTOVER) if leftover else ""
    text = "</p><p>".join(html.escape(line) for line in text.split("\n"))  # a paragraph a line
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}_青山网</title></head>
<body><div class="top"><a href="/">首页</a> <a href="/list/1.html">本地</a> <a href="/list/1.html">财经</a></div>
<div class="wrap"><div class="main">{head}<div class="content">{old}<p>{text}</p></div></div>
<div class="side"><div class="hot-title">今日热点</div>{hot}</div></div>
<div class="foot">青山网 版权所有 未经授权禁止转载</div></body></html>""".encode()


def _site(stories, *, anchored: bool, extra: bool = True, leftover: bool = False) -> dict[str, Response]:
    pages = {f"/news/{n + 1}.html": Response(_page(t, x, anchored=anchored, leftover=leftover))
             for n, (t, x) in enumerate(stories)}
    if extra:
        pages["/news/99.html"] = Response(_page(*TOO_SHORT, anchored=anchored))
        # A page under the article pattern that is a list of links.
        links = "".join(f'<li><a href="/news/{n}.html">第{n}条本地新闻的标题写在这里</a></li>' for n in range(1, 31))
        pages["/news/98.html"] = Response(f"<html><head><title>本地新闻</title></head><body><ul>{links}</ul></body></html>".encode())
    start = "".join(f'<a href="{path}">{path}</a> ' for path in sorted(pages))
    pages["/list/1.html"] = Response(f"<html><body>{start}</body></html>".encode())
    pages["/robots.txt"] = Response(b"User-agent: *\nAllow: /\n", "text/plain")
    return pages


def _crawl(tmp_path, pages: dict[str, Response], *settings: str) -> tuple[list[dict], str, str]:
    db = tmp_path / "news.sqlite"
    with LoopbackServer(pages) as server:
        sites = tmp_path / "sites.toml"
        sites.write_text(site_entry(server.base_url, name="qingshan", start_paths=["/list/1.html"],
                                    article_path=r"/news/\d+\.html", follow_path=r"/list/\d+\.html"), encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites}",
             "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{db}", "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False",
             # One request at a time: pages arrive in link order, so which page comes first is fixed.
             "-s", "CONCURRENT_REQUESTS=1", "-s", "NEWSDEDUP_WORKERS=0", "-s", "TELNETCONSOLE_ENABLED=False", *settings],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=240,
        )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-4000:]
    exported = subprocess.run([sys.executable, "-m", "newsdedup.cli", "export", "--storage", f"sqlite:///{db}"],
                              cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in exported.stdout.splitlines()], result.stderr, str(db)


def _stat(log: str, name: str) -> int:
    match = re.search(rf"'{re.escape(name)}': (\d+)", log)
    return int(match.group(1)) if match else 0


def test_a_hot_list_beside_every_short_article_never_makes_one_story(tmp_path):
    rows, log, db = _crawl(tmp_path, _site(BRIEFS, anchored=True))
    by_path = {urlsplit(r["url"]).path: r for r in rows}
    assert sorted(by_path) == sorted(f"/news/{n}.html" for n in range(1, len(BRIEFS) + 1))
    assert len({r["cluster_id"] for r in rows}) == len(BRIEFS)  # distinct stories
    for n, (title, text) in enumerate(BRIEFS, start=1):
        row = by_path[f"/news/{n}.html"]
        assert row["status"] == "unique" and row["text"] == text and row["title"] == title
    # Briefs of 40-150 characters are stored; the shorter page and the list page are skipped, each for
    # its own reason.
    assert all(40 <= len(text) <= 150 for _, text in BRIEFS)
    with sqlite3.connect(db) as conn:
        skipped = dict(conn.execute("SELECT url, reason FROM skipped"))
    assert {urlsplit(u).path: r for u, r in skipped.items()} == {"/news/99.html": "too_short", "/news/98.html": "list_page"}
    assert _stat(log, "newsdedup/extract/skipped/too_short") == 1
    assert _stat(log, "newsdedup/extract/skipped/list_page") == 1
    assert _stat(log, "newsdedup/extract/template_failures") == 0


def test_a_sites_first_pages_wait_for_its_template_and_never_keep_the_hot_list(tmp_path):
    # Without a headline to anchor on, the one-page rules take the hot list (plain paragraphs) for the article:
    # read alone, the site's first page kept it as its body. Now the first MIN_PAGES pages only teach the
    # template and are read again with it.
    stories = [(title, text + more) for (title, text), more in zip(BRIEFS, MORE)]
    # Without a headline these pages are no briefs: the ordinary minimum length applies, lowered to fit them.
    rows, log, db = _crawl(tmp_path, _site(stories, anchored=False, extra=False), "-s", "NEWSDEDUP_EXTRACT_MIN_CHARS=100")
    assert _stat(log, "newsdedup/extract/template_warmup/held") == MIN_PAGES
    assert _stat(log, "newsdedup/extract/template_warmup/reread") == MIN_PAGES
    assert not [r for r in rows if HOT[0] in r["text"]]
    assert sorted(r["text"] for r in rows) == sorted(text for _, text in stories)
    assert all(r["text"] == dict(stories)[r["title"]] for r in rows)
    assert len({r["cluster_id"] for r in rows}) == len(rows)  # nothing joined through template text
    with sqlite3.connect(db) as conn:
        blob = conn.execute("SELECT data FROM state WHERE name = 'extract/template/qingshan'").fetchone()[0]
    template = SiteTemplate.from_bytes(bytes(blob))
    assert template.pages == len(stories)  # each page taught it once, the pages read again too
    # The next run starts with the template it saved: its new pages are read at once, nothing is held.
    follow_ups = [(f"{title}（续）", more + text) for (title, text), more in zip(BRIEFS, MORE)]
    pages = {path.replace("/news/", "/news/2"): page for path, page in _site(follow_ups, anchored=False, extra=False).items()}
    pages["/list/1.html"] = Response("".join(f'<a href="{p}">{p}</a> ' for p in pages if p.startswith("/news/")).encode())
    new_rows, log, _ = _crawl(tmp_path, pages, "-s", "NEWSDEDUP_EXTRACT_MIN_CHARS=100")
    assert _stat(log, "newsdedup/extract/template_warmup/held") == 0
    assert len(new_rows) == 2 * len(stories) and not [r for r in new_rows if HOT[0] in r["text"]]


def test_another_articles_text_left_in_every_page_never_makes_one_story(tmp_path):
    # Every page's article element starts with the same two paragraphs of a story none of the headlines is
    # about; read alone, each page keeps them. They are less than half of each body, so the pages' bodies are not
    # "mostly shared text": only their unlikeness to the headline gives them away.
    assert all(headline_share(title, "".join(LEFTOVER)) < FOREIGN_HEADLINE_SHARE for title, _ in BRIEFS)
    stories = [(title, text + more) for (title, text), more in zip(BRIEFS, MORE)]
    first_run = stories[:7]
    rows, log, _ = _crawl(tmp_path, _site(first_run, anchored=True, extra=False, leftover=True))
    assert sorted(r["text"] for r in rows) == sorted(text for _, text in first_run)  # own text only, none lost
    assert len({r["cluster_id"] for r in rows}) == len(first_run)
    # The first pages' bodies show the leftover beside their own text, and the retry strips it. Each corrected
    # reading teaches the template the leftover as text outside the body. How many pages of this run were read
    # before the template had learned it depends on how far the downloads ran ahead of the pipelines (a matter of
    # machine speed), so this run only bounds it; the next run's pages all come after the learning.
    assert MIN_PAGES <= _stat(log, "newsdedup/extract/template_failures") <= len(first_run)
    assert "unlike the headline; re-extracted" in log, re.findall("template failure.*", log)
    # The next run (the site's new pages; the server has another port) reads them with the template the store kept:
    # it strips the leftover before reading, so they need no second reading.
    rows, log, _ = _crawl(tmp_path, _site(stories[len(first_run):], anchored=True, extra=False, leftover=True))
    assert sorted(r["text"] for r in rows) == sorted(text for _, text in stories)
    assert len({r["cluster_id"] for r in rows}) == len(stories)
    assert _stat(log, "newsdedup/extract/template_failures") == 0, re.findall("template failure.*", log)


def test_a_forums_introduction_on_every_speakers_page_stays_and_never_makes_one_story(tmp_path):
    # Each page opens with the forum's introduction, which recurs in the body of every page and names the speaker
    # the headline quotes: it is the article's own text, not another story's leftover, however short the talk.
    for title, _ in FORUM_TALKS:
        assert headline_share(title, FORUM_INTRO) < FOREIGN_HEADLINE_SHARE and speaks_of_headline(title, FORUM_INTRO)
    stories = [(title, f"{FORUM_INTRO}\n{talk}") for title, talk in FORUM_TALKS]
    rows, log, _ = _crawl(tmp_path, _site(stories, anchored=True, extra=False))
    assert sorted(r["text"] for r in rows) == sorted(text for _, text in stories)  # the introduction kept
    assert len({r["cluster_id"] for r in rows}) == len(stories) and {r["status"] for r in rows} == {"unique"}
    assert _stat(log, "newsdedup/extract/template_failures") == 0 and not [r for r in rows if HOT[0] in r["text"]]


# A notice the site closes every article with, inside the article element: a paragraph of the body on every page
# (PARAGRAPH_CHARS letters or more: a shorter line in a body is counted as template wherever it stands).
SIGN_OFF = ("特别提醒：本网刊载的部分图片来自网络，如涉及版权，请作者在三十日内与本站联系索取稿酬；如您不希望作品出现在本站，"
            "可联系我们要求撤下您的作品。")


def test_a_sign_off_closing_every_article_goes_and_the_series_introduction_opening_it_stays(tmp_path):
    # Both recur in the body of every page; the introduction opens the body and names whom the headline quotes, the
    # sign-off closes it and speaks of none of the headlines. Read alone, a page keeps both.
    assert not any(speaks_of_headline(title, SIGN_OFF) for title, _ in FORUM_TALKS)
    assert len(normalize_heading(SIGN_OFF)) >= PARAGRAPH_CHARS
    stories = [(title, f"{FORUM_INTRO}\n{talk}") for title, talk in FORUM_TALKS]
    rows, log, _ = _crawl(tmp_path, _site([(t, f"{x}\n{SIGN_OFF}") for t, x in stories], anchored=True, extra=False))
    assert sorted(r["text"] for r in rows) == sorted(text for _, text in stories)
    assert len({r["cluster_id"] for r in rows}) == len(stories) and {r["status"] for r in rows} == {"unique"}
    assert _stat(log, "newsdedup/extract/template_failures") == 0


def test_recurring_paragraphs_unlike_the_headline_are_a_failure_and_a_reprint_under_its_headline_is_not():
    site = SiteTemplate()
    own = [f"<p>{text}{more}</p>" for (_, text), more in zip(BRIEFS, MORE)]
    leftover = "".join(f"<p>{line}</p>" for line in LEFTOVER)
    for n in range(MIN_PAGES - 1):  # two other pages: the leftover is on MIN_PAGES pages with the next one
        tree = _tree(BRIEFS[n][0], leftover + own[n])
        site.learn(page_lines(tree, BRIEFS[n][0]), page_lines(tree.find_class("txt")[0], BRIEFS[n][0]))
    title, text = BRIEFS[5]
    body = "\n".join([*LEFTOVER, text + MORE[5]])
    failure = site.failure(title, body)
    assert failure is not None and failure.foreign and "unlike the headline" in failure.reason
    assert site.settle("u5", title, failure, text + MORE[5]) == "re-extracted"
    assert site.failure(title, text + MORE[5]) is None
    # The same story on two other pages of the site, under its own headline: a reprint, left to the dedup stages.
    reprint = SiteTemplate()
    story = BRIEFS[0][1] + MORE[0]
    for n in range(MIN_PAGES - 1):
        tree = _tree(f"{BRIEFS[0][0]}（{n}）", f"<p>{story}</p>")
        reprint.learn(page_lines(tree, BRIEFS[0][0]), page_lines(tree.find_class("txt")[0], BRIEFS[0][0]))
    assert reprint.failure(BRIEFS[0][0], story) is None
    # ...and the leftover on fewer pages is not known to recur yet.
    fresh = SiteTemplate()
    tree = _tree(BRIEFS[1][0], leftover + own[1])
    fresh.learn(page_lines(tree, BRIEFS[1][0]), page_lines(tree.find_class("txt")[0], BRIEFS[1][0]))
    assert fresh.failure(title, body) is None


def _tree(title: str, body: str, hot: str = "热榜：城东新区规划公布；地铁五号线开通试运营。") -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(
        f"<html><body><h1>{title}</h1><div class='txt'>{body}</div><div class='hot'><p>{hot}</p></div></body></html>"
    )


def test_blocks_on_min_pages_pages_are_boilerplate_and_stripped():
    site = SiteTemplate()
    for n in range(MIN_PAGES - 1):
        site.learn(page_lines(_tree(f"标题{n}", f"<p>第{n}篇正文，内容各不相同。</p>"), f"标题{n}"))
    tree = _tree("标题9", "<p>第九篇正文，内容也不同。</p>")
    assert strip_boilerplate(tree, site.boilerplate(), "标题9") == 0  # seen on too few pages
    site.learn(page_lines(_tree("标题8", "<p>第八篇正文。</p>"), "标题8"))
    assert strip_boilerplate(tree, site.boilerplate(), "标题9") == 1
    assert "热榜" not in tree.text_content() and "第九篇正文" in tree.text_content()


def test_a_hot_list_entry_naming_the_pages_own_story_goes_with_the_rest_of_the_list():
    # A site's hot list names the stories of the day, the one a page tells among them ("headline + its first line").
    entries = [f"{title} {text[:20]}…" for title, text in BRIEFS[:6]]

    def page(n: int) -> lxml.html.HtmlElement:
        title, text = BRIEFS[n]
        hot = "".join(f"<li>{html.escape(entry)}</li>" for entry in entries)
        return lxml.html.document_fromstring(f"<html><body><h1>{title}</h1><div class='txt'><p>{text}</p></div>"
                                             f"<ul class='hot'>{hot}</ul></body></html>")

    site = SiteTemplate()
    for n in (6, 7, 0):  # page 0's own story is in the list: it teaches the entry as the other pages show it
        site.learn(page_lines(page(n), BRIEFS[n][0]))
    for n in (0, 1):  # on the page the entry names and on another page, the whole list goes, that entry too
        tree = page(n)
        assert strip_boilerplate(tree, site.boilerplate(), BRIEFS[n][0]) == 1
        assert tree.find(".//ul") is None and BRIEFS[n][1] in tree.text_content()
    # The retry of a template failure knows the entry as well: a body holding the list beside page 0's article is
    # mostly text other pages carry, the entry naming its story included.
    body = BRIEFS[0][1] + "\n" + "\n".join(entries)
    listed = sum(len(normalize_heading(entry)) for entry in entries)
    failure = site.failure(BRIEFS[0][0], body)
    assert failure is not None
    assert failure.share == pytest.approx(listed / (listed + len(normalize_heading(BRIEFS[0][1]))))


def test_template_prose_among_the_articles_paragraphs_stays_when_it_speaks_of_the_headline():
    shared = "本报讯 今日，全市经济工作会议召开，以下为会议发言摘要。"
    notice = "如需转载请与本报联系，未经授权严禁转载或镜像，违者必究。"
    site = SiteTemplate()
    for n in range(4):
        title = f"经济工作会议发言摘要之{n}"
        body = f"<p>{shared}</p><p>第{n}位发言人表示，要做好今年的工作。</p><p>{notice}</p>"
        site.learn(page_lines(_tree(title, body), title))
    tree = _tree("经济工作会议发言摘要之九", f"<p>{shared}</p><p>第九位发言人表示，要抓好项目落地。</p><p>{notice}</p>")
    strip_boilerplate(tree, site.boilerplate(), "经济工作会议发言摘要之九")
    # The series' introduction names the meeting the headline names; the notice names nothing of it.
    assert shared in tree.text_content() and "热榜" not in tree.text_content() and notice not in tree.text_content()
    assert "第九位发言人" in tree.text_content()


def test_the_window_forgets_and_bodies_are_never_template():
    site = SiteTemplate(window=3)
    for n in range(4):
        site.learn([7, 8, 100 + n], body=[8])
    assert site.pages == 3 and site.boilerplate() == frozenset({7})  # 8 sits in every body: article text
    assert site.retry_boilerplate() == frozenset({7, 8, 101, 102, 103})


def test_failure_settle_and_round_trip():
    site = SiteTemplate()
    body = "\n".join(HOT[:5])
    lines = page_lines(_tree("第一页", "", hot="</p><p>".join(HOT[:5])), "第一页")
    site.learn(lines)
    # One other page shows these lines beside its article: no template yet (a brief's sentence that another
    # story quotes in its lead is shown by two pages too).
    assert site.failure("第二页", body) is None
    site.learn(lines)
    failure = site.failure("第三页", body)
    assert failure is not None and failure.share == 1.0 and failure.pages == 2 and failure.template_pages == 2
    assert site.failure("第三页", body.replace("热点新闻", "另一条新闻")) is None
    assert site.settle("u3", "第三页", failure, "第三页自己的正文，与别的页面都不一样。") == "re-extracted"
    assert site.settle("u3", "第三页", failure, None) == "template_only"
    clone = SiteTemplate.from_bytes(site.to_bytes())
    assert clone.pages == site.pages and clone.boilerplate() == site.boilerplate()
    assert list(clone.failures) == list(site.failures) and len(clone.failures) == 2
    with pytest.raises(ValueError, match="site template"):
        SiteTemplate.from_bytes(b"NDT1\x01")
    with pytest.raises(ValueError, match="magic"):
        SiteTemplate.from_bytes(b"something else")


def test_an_article_the_site_prints_again_is_no_template_and_no_failure_to_skip():
    story = "今天上午，城西老桥结束为期三个月的加固施工，恢复双向通行。"
    site = SiteTemplate()
    for n in range(4):  # the same article under four headlines: its paragraph sits in every page's body
        tree = _tree(f"标题{n}", f"<p>{story}</p>")
        lines = page_lines(tree, f"标题{n}")
        body = [h for h in lines if h in page_lines(lxml.html.fragment_fromstring(f"<div><p>{story}</p></div>"))]
        site.learn(lines, body)
    assert page_lines(lxml.html.fragment_fromstring(f"<div><p>{story}</p></div>"))[0] not in site.boilerplate()
    failure = site.failure("标题9", story)
    assert failure is not None and failure.pages == 4 and failure.template_pages == 0
    assert site.settle("u9", "标题9", failure, None) is None  # kept: a reprint, left to the dedup stages


def test_a_reprint_on_the_same_site_is_no_template_failure_until_min_pages_pages_carry_its_paragraphs():
    # An edited reprint shares most paragraphs with its original's body: cutting it down to the edits would
    # hide it from the near-duplicate stage. A hot list taken for the article is on every page instead.
    paragraphs = [MORE[n] for n in range(3)]
    body = lxml.html.fragment_fromstring("<div>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</div>")
    site = SiteTemplate()
    site.learn(page_lines(body), page_lines(body))
    reprint = "\n".join([paragraphs[0], paragraphs[1], paragraphs[2].replace("公交", "巴士")])
    assert site.failure("另一个标题", reprint) is None
    for _ in range(MIN_PAGES - 1):
        site.learn(page_lines(body), page_lines(body))
    assert site.failure("另一个标题", reprint) is not None


def test_forget_takes_back_exactly_what_learn_counted():
    site = SiteTemplate()
    hot = page_lines(_tree("标题0", "正文"), "标题0")
    first = site.learn(hot)
    for n in range(1, MIN_PAGES):
        site.learn(page_lines(_tree(f"标题{n}", f"第{n}篇正文，各不相同。"), f"标题{n}"))
    assert site.pages == MIN_PAGES and site.boilerplate()  # the hot list is on MIN_PAGES pages
    site.forget(first)
    assert site.pages == MIN_PAGES - 1 and not site.boilerplate()  # ...and on one page fewer now
    site.forget(first)  # forgotten already: nothing changes
    assert site.pages == MIN_PAGES - 1


def test_recurring_text_unlike_the_headline_is_taken_away_by_the_retry_however_small_its_share():
    import asyncio

    # Every page opens with the same two paragraphs of a story none of the headlines is about, nor names whom a
    # headline quotes: a failure by the headline check, and the retry takes them away even when they are a small
    # part of the body (leaving such pages as read let hot lists stay beside short articles).
    intro = LEFTOVER[0] + LEFTOVER[1]
    site = SiteTemplate()
    for n in range(MIN_PAGES - 1):
        tree = _tree(BRIEFS[n][0], f"<p>{intro}</p><p>{MORE[n]}</p><p>{MORE[n + 3]}</p><p>{MORE[n + 6]}</p>")
        site.learn(page_lines(tree, BRIEFS[n][0]), page_lines(tree.find_class("txt")[0], BRIEFS[n][0]))
    title = BRIEFS[5][0]
    answers = [MORE[5], MORE[8], MORE[2], MORE[9]]
    page = lxml.html.tostring(_tree(title, "".join(f"<p>{p}</p>" for p in (intro, *answers)), hot=""))
    reading = _reading(page)
    assert reading.text == "\n".join([intro, *answers])
    assert headline_share(title, intro) < FOREIGN_HEADLINE_SHARE and len(intro) < len(reading.text) / 4
    assert site.failure(title, reading.text).foreign

    async def reread(boilerplate, lenient):
        article = _reading(page, boilerplate, keep_shared_prose=False)
        return article, article.text

    check = asyncio.run(site.check("/news/a", title, reading.text, reread))
    assert check.outcome == "re-extracted" and check.reading.text == "\n".join(answers)
    # Beside a brief it is most of the body: the leftover of another story, taken away too.
    brief = lxml.html.tostring(_tree(title, f"<p>{intro}</p><p>{BRIEFS[5][1]}</p>", hot=""))

    async def reread_brief(boilerplate, lenient):
        article = _reading(brief, boilerplate, keep_shared_prose=False, min_chars=0)  # no headline to anchor a brief
        return article, article.text

    check = asyncio.run(site.check("/news/b", title, _reading(brief).text, reread_brief))
    assert check.outcome == "re-extracted" and check.reading.text == BRIEFS[5][1]


def test_a_series_introduction_naming_whom_the_headline_quotes_is_no_failure_and_survives_a_retry():
    import asyncio

    site = SiteTemplate()
    for title, talk in FORUM_TALKS[:MIN_PAGES]:
        tree = _tree(title, f"<p>{FORUM_INTRO}</p><p>{talk}</p>")
        site.learn(page_lines(tree, title), page_lines(tree.find_class("txt")[0], title))
    title, talk = FORUM_TALKS[3]
    # Most of a short body, in the bodies of MIN_PAGES other pages, unlike the headline's bigrams: its own text.
    assert len(FORUM_INTRO) > len(talk) and site.failure(title, f"{FORUM_INTRO}\n{talk}") is None
    # Under a headline that quotes nobody it names, the same body is mostly text other pages carry.
    assert site.failure("研究要走进街巷 听听居民怎么说", f"{FORUM_INTRO}\n{talk}").share > 0.5
    # A page that fails for another reason (the hot list read into its body) is read again without the hot list
    # only: the introduction stays.
    for n in range(MIN_PAGES):
        site.learn(page_lines(_tree(f"标题{n}", "", hot="</p><p>".join(HOT[:5])), f"标题{n}"))
    page = lxml.html.tostring(_tree(title, f"<p>{FORUM_INTRO}</p><p>{talk}</p>", hot="</p><p>".join(HOT[:5])))
    body = "\n".join([FORUM_INTRO, talk, *HOT[:5]])
    assert site.failure(title, body) is not None

    async def reread(boilerplate, lenient):
        article = _reading(page, boilerplate, keep_shared_prose=False, min_chars=0)  # no dateline: no brief's length
        return article, article.text

    check = asyncio.run(site.check("/news/c", title, body, reread))
    assert check.outcome == "re-extracted" and check.reading.text == f"{FORUM_INTRO}\n{talk}"


def _reading(page: bytes, boilerplate=frozenset(), **options):
    """A page read the way the crawl's workers read it, with the hashes a template learns from it."""
    from newsdedup.extract.extractor import SkipPage, extract_article

    try:
        return extract_article(page, boilerplate=boilerplate, **options)
    except SkipPage:
        return None


def test_check_reads_a_template_failure_again_and_settles_it_as_the_crawl_and_the_evaluation_do():
    import asyncio

    # Every page's article element starts with another story's two paragraphs: read alone, each page keeps them
    # in its body, so the template learns them as body text and cannot strip them as boilerplate.
    stories = [(title, text + more) for (title, text), more in zip(BRIEFS, MORE)]
    site = SiteTemplate()
    for title, text in stories[:4]:
        first = _reading(_page(title, text, anchored=True, leftover=True), min_chars=0)
        assert first.text.startswith(LEFTOVER[0])
        site.learn(first.block_hashes, first.body_hashes)
    calls = []

    def judge(title: str, text: str, least: int = 40):
        page = _page(title, text, anchored=True, leftover=True)

        async def reread(boilerplate, lenient):
            calls.append(lenient)
            article = _reading(page, boilerplate, keep_shared_prose=False, min_chars=0 if lenient else least,
                               brief_chars=0 if lenient else least)
            return article, None if article is None else article.text

        reading = _reading(page, site.boilerplate(), min_chars=0)
        assert reading.text.startswith(LEFTOVER[0])
        return asyncio.run(site.check(f"/news/{title}", title, reading.text, reread))

    title, text = stories[5]
    check = judge(title, text)
    assert check.outcome == "re-extracted" and check.reading.text == text and calls == [False]
    assert check.failure.foreign and "unlike the headline" in check.failure.reason
    # A page with no more than a line of its own: read leniently to see what is left, then skipped.
    calls.clear()
    check = judge(*TOO_SHORT)
    assert check.outcome == "template_only" and check.reading is None and calls == [False, True]
    # A brief of its own, shorter than the site's least length: real text, skipped as too short.
    calls.clear()
    check = judge(*BRIEFS[6], least=300)
    assert check.outcome == "too_short" and check.reading is None and calls == [False, True]
    # A page whose body is its own is left alone, read once.
    calls.clear()
    assert asyncio.run(site.check("/news/x", title, text, None)) is None and calls == []
    assert [f["outcome"] for f in site.failures] == ["re-extracted", "template_only", "too_short"]
