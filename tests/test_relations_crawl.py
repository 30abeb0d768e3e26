"""Relations a reader can trust, end to end (issue 34): a site's boilerplate is never a relation, quotations point
from the page published later to the story published first whatever order the pages arrive in, and ``newsdedup
dedup`` gives the records a crawl stores.

Real ``scrapy crawl`` processes against a local site (tests/local_site.py) writing to SQLite; the texts are invented
for this test.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from local_site import LocalSite, check_store_consistent, crawl, export_rows, newsdedup

DISCLAIMER = ("风险提示：本文所载信息仅供参考，不构成任何投资建议。市场有风险，投资需谨慎。基金、黄金等金融产品的过往业绩并不"
              "预示其未来表现，投资者在作出投资决策前，应当认真阅读相关产品的法律文件，充分了解产品的风险收益特征。")
# Four finance stories of one site, each closing with the site's disclaimer.
STORIES = [
    ("国际金价创下历史新高", [
        "国际金价周一继续走高，伦敦现货黄金一度突破每盎司两千一百美元，创下历史新高，年内累计涨幅超过百分之十五。",
        "分析人士认为，美联储降息预期升温、美元指数走弱以及地缘局势紧张，共同推动了避险资金持续流入黄金市场。",
        "国内金饰品牌的报价随之上调，多家品牌足金饰品价格突破每克六百元，部分门店出现了排队购买的情况。"]),
    ("公募基金发行市场明显回暖", [
        "本周公募基金发行市场明显回暖，新成立基金的募集规模环比增长超过三成，其中债券型基金的占比过半。",
        "业内人士表示，在利率持续下行的背景下，稳健型产品更受投资者青睐，权益类基金的发行仍待市场情绪修复。",
        "数据显示，今年以来新成立基金的平均募集规模为九亿元，较去年同期有所下降，爆款基金明显减少。"]),
    ("沪深两市小幅震荡", [
        "沪深两市周二小幅震荡，上证指数收跌零点二个百分点，成交额较前一交易日略有萎缩，两市合计不足八千亿元。",
        "盘面上，半导体和医药板块表现活跃，银行和煤炭板块走弱，北向资金全天小幅净流出十余亿元。",
        "机构认为，短期市场仍以结构性行情为主，建议关注业绩确定性较高的消费龙头和高股息资产。"]),
    ("人民币汇率小幅走升", [
        "人民币对美元汇率中间价周三上调八十个基点，报七点一零二五，在岸人民币盘中一度升破七点一零关口。",
        "市场人士表示，美元指数回落、出口企业结汇需求增加，是人民币近期走强的主要原因。",
        "展望后市，分析人士预计人民币汇率将在合理均衡水平上保持基本稳定，双向波动的弹性将进一步增强。"]),
]
QUOTED = STORIES[1][1][0] + STORIES[1][1][1]  # two sentences of the fund story, as the commentary quotes them
COMMENTARY = [
    "理财市场的风向正在悄然转变，过去追逐高收益的投资者，如今更看重产品的稳健程度和回撤控制。",
    "据财经媒体报道：",
    QUOTED,
    "这一变化并不意外。在经历了连续两年的市场调整之后，许多个人投资者的风险偏好明显下降，更愿意把钱放在"
    "波动较小的产品里。对于基金公司而言，这意味着需要重新思考产品布局，而不是一味追求规模。",
    "对于普通投资者来说，更重要的是认清自己的风险承受能力，在收益和风险之间找到适合自己的平衡点，"
    "不要因为短期的市场情绪而频繁调整自己的资产配置。",
]
TIMES = ["2026-11-20 08:00", "2026-11-20 09:00", "2026-11-20 10:00", "2026-11-20 11:00"]
COMMENTARY_TIME = "2026-11-20 15:00"


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def publish_finance(site: LocalSite, count: int) -> list[str]:
    return [site.publish("qianhai", n, title, [*paragraphs, DISCLAIMER], TIMES[n - 1])
            for n, (title, paragraphs) in enumerate(STORIES[:count], 1)]


def normalised(records: list[dict]) -> list[tuple]:
    """(quoting URL, quoted URL, characters, passages, basis): one relation, whichever page carried it."""
    return sorted(records)


def crawled_relations(db) -> tuple[list[tuple], dict[str, dict]]:
    rows = {row["url"]: row for row in export_rows(db)}
    relations = [(url, reuse["source_url"], reuse["chars"], json.dumps(reuse["passages"]), reuse["basis"])
                 for url, row in rows.items() for reuse in row["reuses"]]
    return normalised(relations), rows


@pytest.mark.parametrize("stories", [2, 4], ids=["2-stories", "4-stories"])
@pytest.mark.parametrize("finance_first", [True, False], ids=["quoted-site-first", "quoting-site-first"])
def test_a_sites_disclaimer_is_no_relation_and_a_quotation_points_to_the_story_published_first(tmp_path,
                                                                                              finance_first, stories):
    """Two stories: both keep the disclaimer (the site template cuts a sign-off from three pages on), so the reuse
    stage tells it from a quotation; four: the first page read keeps it, the template cuts it from the others."""
    db = tmp_path / "news.sqlite"
    sites_file = tmp_path / "sites.toml"
    with LocalSite(("qianhai", "pinglun")) as site:
        if finance_first:
            urls = publish_finance(site, stories)
            sites_file.write_text(site.sites_toml(("qianhai",)), encoding="utf-8")
            crawl(sites_file, db)
            commentary_url = site.publish("pinglun", 1, "理财风向转变 稳健产品受青睐", COMMENTARY, COMMENTARY_TIME)
            sites_file.write_text(site.sites_toml(), encoding="utf-8")
            crawl(sites_file, db)
        else:  # the commentary arrives first, the stories it quotes (published earlier) after it
            commentary_url = site.publish("pinglun", 1, "理财风向转变 稳健产品受青睐", COMMENTARY, COMMENTARY_TIME)
            sites_file.write_text(site.sites_toml(("pinglun",)), encoding="utf-8")
            crawl(sites_file, db)
            urls = publish_finance(site, stories)
            sites_file.write_text(site.sites_toml(), encoding="utf-8")
            crawl(sites_file, db)
    check_store_consistent(db)
    relations, rows = crawled_relations(db)
    assert all(rows[url]["status"] == "unique" for url in [*urls, commentary_url])
    # The disclaimer is in the stored texts (the reuse stage had it to judge), not cut by the extractor.
    carrying = sum(DISCLAIMER[:20] in rows[url]["text"] for url in urls)
    assert carrying == 2 if stories == 2 else carrying >= 1
    [(quoting, quoted, chars, passages, basis)] = relations  # exactly one: the disclaimer links nothing
    assert (quoting, quoted, basis) == (commentary_url, urls[1], "published")
    assert len(squeeze(QUOTED)) <= chars <= len(squeeze(QUOTED)) + 5
    for passage in json.loads(passages):
        taken = rows[commentary_url]["text"][passage["start"]:passage["start"] + passage["length"]]
        source = rows[urls[1]]["text"][passage["source_start"]:passage["source_start"] + passage["source_length"]]
        assert squeeze(taken) == squeeze(source) and squeeze(taken) in squeeze(QUOTED)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM reuses").fetchone()[0] == 1
    conn.close()

    # The same two pages fed to `newsdedup dedup` in the order the crawl met them give the same record.
    order = [urls[1], commentary_url] if finance_first else [commentary_url, urls[1]]
    source = tmp_path / "pages.jsonl"
    source.write_text("".join(json.dumps({"id": url, "text": rows[url]["text"], "title": rows[url]["title"],
                                          "site": rows[url]["site"], "published_at": rows[url]["published_at"]},
                                         ensure_ascii=False) + "\n" for url in order), encoding="utf-8")
    output = tmp_path / "verdicts.jsonl"
    result = newsdedup("dedup", "--input", str(source), "--output", str(output), "--workers", "0")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    deduplicated = []
    for line in lines:
        for reuse in line["reuses"]:
            quoting, quoted = (reuse["source_id"], line["id"]) if reuse.get("quoted_by") else (line["id"],
                                                                                                reuse["source_id"])
            deduplicated.append((quoting, quoted, reuse["chars"], json.dumps(reuse["passages"]), reuse["basis"]))
    assert normalised(deduplicated) == relations
    assert [bool(line["reuses"]) for line in lines] == [False, True]  # carried by the page that arrived second


def test_two_caption_pages_of_one_event_are_two_stories_in_a_crawl(tmp_path):
    """Photo pages whose texts are captions to one formula (their spots are the formula's) stay two stories; the
    same captions on another page are a copy."""
    from test_captions import AFTERNOON, MORNING

    db = tmp_path / "news.sqlite"
    sites_file = tmp_path / "sites.toml"
    with LocalSite(("tupian",)) as site:
        urls = [site.publish("tupian", n, title, text.split("\n"), f"2026-11-18 1{n}:00")
                for n, (title, text) in enumerate((("临江马拉松开跑", MORNING), ("临江马拉松颁奖", AFTERNOON),
                                                   ("组图：临江马拉松", "\n".join(reversed(MORNING.split("\n"))))), 1)]
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        crawl(sites_file, db)
    rows = {row["url"]: row for row in export_rows(db)}
    assert all(caption_lines_of(rows[url]["text"]) for url in urls)  # stored as captions only
    assert rows[urls[0]]["cluster_id"] != rows[urls[1]]["cluster_id"]
    assert rows[urls[2]]["cluster_id"] == rows[urls[0]]["cluster_id"]


def caption_lines_of(text: str):
    from newsdedup.dedup.captions import caption_lines

    return caption_lines(text)
