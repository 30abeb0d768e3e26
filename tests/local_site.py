"""A tiny news site on 127.0.0.1 for crawl tests: portals with a list page each and article pages whose
text, publication time and response order a test sets; plus the checks every crawl test makes on a store.

The story texts are invented for these tests (no third-party text).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO_ROOT
from newsdedup.demo.server import LoopbackServer, Request, Response
from newsdedup.storage.origin import earliest

STORY = [
    "临江市今年起在全市推行社区食堂建设，计划用三年时间实现中心城区每个街道至少一家社区食堂的目标。",
    "市民政局负责人介绍，社区食堂由街道提供场地，引入专业餐饮企业运营，老年人就餐可享受每餐三元的补贴。",
    "在滨河街道的第一家社区食堂，记者看到十多种菜品摆放整齐，价格标注清楚，不少老人已经在排队取餐。",
    "七十二岁的王大爷说，自己一个人住，以前做饭又麻烦又浪费，现在走几分钟就能吃上热乎的饭菜，心里踏实多了。",
    "为了保证食品安全，市场监管部门对每家社区食堂实行明厨亮灶，并且每月开展一次抽检，结果在门口公示。",
    "该负责人表示，下一步还将探索为行动不便的老人提供送餐上门服务，让更多老年人在家门口享受到便利。",
]
OTHER_STORY = [
    "南岭省气象台发布消息，受冷空气影响，本周后期全省大部分地区将出现明显降温，局部地区降温幅度超过十度。",
    "气象专家提醒，此次降温过程伴有大风天气，沿海海面风力较大，过往船只要注意防范，及时回港避风。",
    "农业部门建议种植户提前做好大棚加固和保温措施，防止低温冻害对在田作物和设施农业造成不利影响。",
    "交通部门表示，将密切关注天气变化，必要时对部分山区路段采取临时管制措施，确保群众出行安全。",
    "据了解，降温过后全省天气将以晴好为主，气温逐步回升，下周初各地最高气温将恢复到十五度左右。",
]


def edited(paragraphs: list[str]) -> list[str]:
    """A reprint's edit: one sentence reworded, one added at the end (a near duplicate, not an exact one)."""
    changed = list(paragraphs)
    changed[2] = "记者在滨河街道第一家社区食堂看到，十多种菜品摆放整齐，价格清楚，许多老人正在排队取餐。"
    return changed + ["据悉，全市首批二十家社区食堂将在年底前全部投入运营。"]


def article_html(site: str, title: str, paragraphs: list[str], published: str | None) -> bytes:
    """``published``: China time as a byline writes it (``2026-11-16 08:40``), also given as a <meta>."""
    meta = byline = ""
    if published:
        meta = f'<meta property="article:published_time" content="{published.replace(" ", "T")}:00+08:00">'
        byline = f"{published} 来源：{site}"
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}_{site}</title>{meta}</head><body>'
        f'<div class="nav"><a href="/">首页</a> <a href="/">国内</a> <a href="/">国际</a></div>'
        f'<h1>{title}</h1><div class="info">{byline}</div><div class="article">{body}</div>'
        f'<div class="footer">版权所有 {site}</div></body></html>'
    ).encode("utf-8")


def list_html(site: str, links: list[str]) -> bytes:
    items = "".join(f'<li><a href="{href}">新闻 {i}</a></li>' for i, href in enumerate(links, 1))
    return f'<html><head><meta charset="utf-8"><title>{site}</title></head><body><ul>{items}</ul></body></html>'.encode()


@dataclass
class Page:
    body: bytes
    gate: threading.Event | None = None  # the response waits until a test sets it (an event, not a guess of time)
    after: str | None = None  # the response waits until this other path's response was sent whole


class LocalSite(LoopbackServer):
    """Serves ``pages`` (path -> Page) on 127.0.0.1; portals are path prefixes ``/<site>/``."""

    def __init__(self, sites: tuple[str, ...]) -> None:
        super().__init__({})
        self.sites = sites
        self.pages: dict[str, Page] = {}
        self._links: dict[str, list[str]] = {site: [] for site in sites}
        for name in sites:
            self.pages[f"/{name}/index.html"] = Page(list_html(name, []))

    @property
    def requests(self) -> Counter[str]:
        """Requests received per path as requested (query kept)."""
        return self.requests_received

    def respond(self, request: Request) -> Response | None:
        page = self.pages.get(request.target)
        if page is None:
            return None
        if page.gate is not None:
            page.gate.wait(300)
        if page.after is not None:
            self.sent(page.after).wait(300)
        return Response(page.body)

    def publish(self, site: str, number: int, title: str, paragraphs: list[str], published: str | None,
                *, after: str | None = None) -> str:
        """Put an article on ``site``'s list page; returns its URL. ``after``: a URL this page is answered after."""
        path = f"/{site}/news/{number}.html"
        after_path = after.removeprefix(self.base_url) if after else None
        self.pages[path] = Page(article_html(site, title, paragraphs, published), after=after_path)
        self._links[site].append(path)
        self.pages[f"/{site}/index.html"] = Page(list_html(site, self._links[site]))
        return self.base_url + path

    def sites_toml(self, names: tuple[str, ...] | None = None) -> str:
        """A site file for ``names`` (default: every site). A site whose list page links no article fails a
        run (exit status 6), so a test adds a site to the file once it has published something."""
        return "".join(
            f'[[site]]\nname = "{name}"\nstart_urls = ["{self.base_url}/{name}/index.html"]\n'
            f'allowed_domains = ["127.0.0.1"]\n'
            f"article_url_pattern = 'http://127\\.0\\.0\\.1:\\d+/{name}/news/\\d+\\.html'\n\n"
            for name in (self.sites if names is None else names)
        )


def crawl(sites_file: Path, db: Path, *extra: str, prefix: tuple[str, ...] = ()) -> str:
    """A real ``scrapy crawl portal`` from the project root; returns its log."""
    command = [
        *prefix, sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites_file}",
        "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{db}", "-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False",
        "-s", "NEWSDEDUP_WORKERS=1", "-s", "TELNETCONSOLE_ENABLED=False", "-s", "LOG_LEVEL=INFO", *extra,
    ]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    return result.stderr


def newsdedup(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "newsdedup.cli", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=240)


def export_rows(db: Path) -> list[dict]:
    result = newsdedup("export", "--storage", f"sqlite:///{db}")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@dataclass
class _Dated:
    url: str
    dated_at: str
    fetched_at: str


def check_store_consistent(db: Path) -> None:
    """Each URL stored once; every cluster row equals what its members give (origin, count, fetch times);
    every near duplicate points at a page of its own cluster."""
    conn = sqlite3.connect(db)
    urls = [r[0] for r in conn.execute("SELECT url FROM articles UNION ALL SELECT url FROM repeats")]
    assert len(urls) == len(set(urls))
    for cluster_id, origin_url, members, first, last in conn.execute(
        "SELECT cluster_id, origin_url, members, first_fetched_at, last_fetched_at FROM clusters"
    ).fetchall():
        pages = [_Dated(*r) for r in conn.execute(
            """SELECT url, dated_at, fetched_at FROM articles WHERE cluster_id = ? UNION ALL
               SELECT r.url, r.dated_at, r.fetched_at FROM repeats r JOIN articles a ON a.url = r.repeat_of
               WHERE a.cluster_id = ?""", (cluster_id, cluster_id))]
        assert earliest(pages).url == origin_url
        assert (members, first, last) == (len(pages), min(p.fetched_at for p in pages),
                                          max(p.fetched_at for p in pages))
    assert {r[0] for r in conn.execute("SELECT DISTINCT cluster_id FROM articles")} == {
        r[0] for r in conn.execute("SELECT cluster_id FROM clusters")}
    bad = conn.execute(
        """SELECT a.url FROM articles a JOIN articles m ON m.url = a.duplicate_of
           WHERE a.status = 'near_duplicate' AND m.cluster_id != a.cluster_id"""
    ).fetchall()
    assert bad == []
    conn.close()
