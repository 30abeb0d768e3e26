"""A site-wide overlay (a wallet or payment notice, a login box) that a site's pages carry beside a short or
script-rendered article: read alone, every page keeps the overlay as its body, and pages under unrelated headlines
become exact repeats of each other. The template calls that a failure from the site's second page on.

The crawls run the real spider (``scrapy crawl portal`` in a subprocess) against pages written here, served on
127.0.0.1 by the test; the checks read the export and the store.
"""

from __future__ import annotations

import html
import sqlite3
import struct
from urllib.parse import urlsplit

from newsdedup.demo.server import Response
from newsdedup.extract.related import normalize_heading
from newsdedup.extract.template import FOREIGN_HEADLINE_SHARE, SiteTemplate, headline_share, line_hash, speaks_of_headline
from test_site_templates import BRIEFS, MORE, _crawl, _stat

# A membership overlay, written for these tests: about 190 characters of prose, more than any brief beside it.
OVERLAY = ("开通会员钱包，畅读全站付费内容：首次充值满五十元赠送二十元阅读券，连续包月每月仅需十五元，可随时取消。"
           "登录后即可同步阅读记录与收藏夹，支持微信、支付宝和银行卡付款，发票可在个人中心申请开具，如有疑问请拨打客服热线咨询。"
           "本优惠活动最终解释权归本站所有，活动期间每位用户限领一次，未使用的阅读券将在三十日后自动过期。")


def _page(title: str, text: str) -> bytes:
    """A page with the overlay after the article: ``text`` is a dated brief, or "" for an article rendered by
    script (the page's only text block is then the overlay)."""
    if text:
        own = f'<div class="info">2024-05-06 08:30 来源：青山日报</div><div class="content"><p>{html.escape(text)}</p></div>'
    else:
        own = '<div class="content" id="app"></div><script>renderArticle()</script>'
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}_青山网</title></head>
<body><div class="top"><a href="/">首页</a> <a href="/list/1.html">本地</a></div>
<div class="main"><h1>{html.escape(title)}</h1>{own}</div>
<div class="mask"><div class="pay-box"><h3>会员登录</h3><p>{OVERLAY}</p><button>立即开通</button></div></div>
<div class="foot">青山网 版权所有</div></body></html>""".encode()


def _site(stories) -> dict[str, Response]:
    pages = {f"/news/{n + 1}.html": Response(_page(title, text)) for n, (title, text) in enumerate(stories)}
    pages["/list/1.html"] = Response("".join(f'<a href="{path}">{path}</a> ' for path in pages).encode())
    pages["/robots.txt"] = Response(b"User-agent: *\nAllow: /\n", "text/plain")
    return pages


def _stored_or_skipped(tmp_path, stories) -> tuple[dict[str, dict], dict[str, str], str]:
    tmp_path.mkdir(exist_ok=True)
    rows, log, db = _crawl(tmp_path, _site(stories))
    with sqlite3.connect(db) as conn:
        skipped = {urlsplit(url).path: reason for url, reason in conn.execute("SELECT url, reason FROM skipped")}
    stored = {urlsplit(r["url"]).path: r for r in rows}
    # Every page is stored as its own story or skipped with a reason; none is both, none is lost.
    assert sorted([*stored, *skipped]) == sorted(f"/news/{n}.html" for n in range(1, len(stories) + 1)), (stored, skipped)
    assert len({r["cluster_id"] for r in rows}) == len(rows), [(r["title"], r["status"], r["cluster_id"]) for r in rows]
    assert {r["status"] for r in rows} <= {"unique"}
    assert not [r for r in rows if normalize_heading(OVERLAY[:30]) in normalize_heading(r["text"])]
    return stored, skipped, log


def test_an_overlay_on_every_page_never_makes_one_story_even_on_a_sites_first_two_pages(tmp_path):
    # The headlines are unrelated to each other and the overlay speaks of none of them.
    for title, _ in BRIEFS:
        assert not speaks_of_headline(title, normalize_heading(OVERLAY))
        assert all(headline_share(title, normalize_heading(other)) < FOREIGN_HEADLINE_SHARE
                   for other, _ in BRIEFS if other != title)
    # Two pages only: the template never sees MIN_PAGES pages in this run. Read alone, both pages' body is the
    # overlay; before, they were stored as one story (one unique page and its exact repeat).
    stored, skipped, log = _stored_or_skipped(tmp_path / "two", [(title, "") for title, _ in BRIEFS[:2]])
    assert stored == {} and set(skipped.values()) == {"template_only"}
    assert _stat(log, "newsdedup/extract/template_failures") == 2
    assert "the body repeats text of another page of the site under an unrelated headline" in log


def test_a_brief_beside_the_overlay_is_stored_alone_and_a_page_of_only_the_overlay_is_skipped(tmp_path):
    # Every third page has no article of its own in its HTML; the others a dated brief the overlay outweighs.
    stories = [(title, "" if n % 3 == 2 else text) for n, (title, text) in enumerate(BRIEFS[:6])]
    stored, skipped, _ = _stored_or_skipped(tmp_path, stories)
    assert {path: row["text"] for path, row in stored.items()} == {
        f"/news/{n + 1}.html": text for n, (_, text) in enumerate(stories) if text}
    assert skipped == {f"/news/{n + 1}.html": "template_only" for n, (_, text) in enumerate(stories) if not text}
    # Two pages of a new site tell it too (the template has seen one other page: no block is template yet).
    stored, skipped, _ = _stored_or_skipped(tmp_path / "two", stories[:2])
    assert {path: row["text"] for path, row in stored.items()} == {"/news/1.html": stories[0][1], "/news/2.html": stories[1][1]}


def _overlay_site() -> SiteTemplate:
    """A template that has seen one page whose body was the overlay."""
    site = SiteTemplate()
    site.learn([1, 2, line_hash(OVERLAY)], [line_hash(OVERLAY)], title=BRIEFS[0][0], texts=[OVERLAY])
    return site


def test_a_body_repeating_another_pages_under_an_unrelated_headline_is_a_failure_and_a_reprint_is_not():
    site = _overlay_site()
    failure = site.failure(BRIEFS[1][0], OVERLAY)
    assert failure is not None and failure.repeat_of == BRIEFS[0][0] and line_hash(OVERLAY) in failure.repeated
    assert site.settle("/news/2", BRIEFS[1][0], failure, None) == "template_only"
    # The same text under a headline like the other page's (a story the site printed again): no failure.
    assert site.failure(BRIEFS[0][0] + "（图）", OVERLAY) is None
    # The same article under two unrelated headlines that it speaks of both: the dedup stages' business.
    story = "城西老桥今起恢复通行：" + BRIEFS[0][1] + "另据报道，北湖公园新增两条步道，" + BRIEFS[1][1]
    reprinted = SiteTemplate()
    reprinted.learn([line_hash(story)], [line_hash(story)], title=BRIEFS[0][0], texts=[story])
    assert reprinted.failure(BRIEFS[1][0], story) is None
    # No headline, nothing to judge by; and a page never repeats itself once forgotten.
    assert site.failure(None, OVERLAY) is None
    first = site._pages[0]  # noqa: SLF001 - what learn() returned
    site.forget(first)
    assert site.failure(BRIEFS[1][0], OVERLAY) is None


def test_paragraphs_one_other_page_shows_under_an_unrelated_headline_are_a_failure_unless_they_speak_of_it():
    site = _overlay_site()
    brief = BRIEFS[1][1]
    failure = site.failure(BRIEFS[1][0], f"{brief}\n{OVERLAY}")
    assert failure is not None and failure.repeat_of == BRIEFS[0][0] and 0.5 < failure.share < 1
    assert site.failure(BRIEFS[1][0], brief) is None  # the brief alone is the page's own
    # A paragraph that speaks of the page's headline is its own, however often the site shows it.
    assert site.failure("会员钱包开通优惠", f"{brief}\n{OVERLAY}") is None


def test_headlines_and_bodies_read_survive_a_save_and_an_old_template_still_loads():
    site = _overlay_site()
    restored = SiteTemplate.from_bytes(site.to_bytes())
    assert restored.failure(BRIEFS[1][0], OVERLAY) is not None
    # The layout before headlines were kept (NDT2): counts only, no repeat to tell.
    old = b"NDT2" + struct.pack("<III", 100, 3, 1) + struct.pack("<II", 1, 0) + struct.pack("<Q", 7) + b"[]"
    loaded = SiteTemplate.from_bytes(old)
    assert loaded.pages == 1 and loaded.failure(BRIEFS[1][0], OVERLAY) is None


def test_a_roundup_of_the_sites_stories_and_a_quoted_paragraph_are_no_failure():
    # Each of three pages tells one story; a roundup page carries a paragraph of each under a headline of its own,
    # and a market report quotes one of them beside its own text: passage reuse, for the reuse stage, not template.
    site = SiteTemplate()
    stories = [(title, text + more) for (title, text), more in zip(BRIEFS[3:6], MORE[3:6])]
    for title, text in stories:
        site.learn([line_hash(text)], [line_hash(text)], title=title, texts=[text])
    roundup = "\n".join(text for _, text in stories)
    assert site.failure("本周城市生活要闻回顾", roundup) is None
    report = f"{BRIEFS[8][1]}{MORE[8]}\n{stories[0][1]}\n{BRIEFS[9][1]}{MORE[9]}"
    assert site.failure(BRIEFS[8][0], report) is None
    # One page showing most of the body under an unrelated headline is one: the overlay case.
    assert site.failure("本周城市生活要闻回顾", f"{stories[0][1]}\n{BRIEFS[9][1]}") is not None
