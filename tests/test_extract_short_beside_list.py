"""A short article (150-250 characters) beside a long related or hot list of cards (a headline link and a teaser
under it, outside any <li>): read one page at a time, the article stays and the list goes.

The pages are written here; the data-driven check reads the short articles of the hand-labelled gold sets in
``../shared/data`` (skipped without it).
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from newsdedup.extract.extractor import extract_article
from newsdedup.extract.related import normalize_heading
from test_site_templates import BRIEFS, MORE

TITLE, _ = BRIEFS[2]
# Three paragraphs of one short article, about 200 characters.
ARTICLE = (BRIEFS[2][1], MORE[2], "市民可以通过图书馆公众号预约座位，每人每天限约一次，逾时十五分钟未到将自动取消。")
# Twenty cards of other stories: a headline link and the first line of the story, about 1,700 characters.
OTHERS = [n for n in range(len(BRIEFS)) if n != 2]
CARDS = [(f"/news/{n}.html", f"{BRIEFS[OTHERS[n % 9]][0]}：后续报道与追踪观察之{n}", MORE[OTHERS[(n + 3) % 9]][:60])
         for n in range(20)]


def _card(layout: str, href: str, headline: str, teaser: str) -> str:
    headline, teaser = html.escape(headline), html.escape(teaser)
    if layout == "heading":  # <div><h3><a>headline</a></h3><p>teaser</p></div>
        return f'<div class="item"><h3><a href="{href}">{headline}</a></h3><p>{teaser}</p></div>'
    return f'<p><a href="{href}">{headline}</a> {teaser}</p>'  # "inline": the link, then the teaser


def _page(layout: str, *, inside: bool, dated: bool = True) -> str:
    cards = '<div class="rel">' + "".join(_card(layout, *c) for c in CARDS) + "</div>"
    paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in ARTICLE)
    content = f'<div class="content">{paragraphs}{cards if inside else ""}</div>'
    dateline = '<div class="info">2024-05-06 08:30 来源：青山日报</div>' if dated else ""
    return f"""<html><head><meta charset="utf-8"><title>{TITLE}_青山网</title></head><body>
<div class="nav"><a href="/">首页</a> <a href="/list/1.html">本地</a></div>
<div class="main"><h1>{TITLE}</h1>{dateline}{content}{"" if inside else cards}</div>
<div class="foot">青山网 版权所有</div></body></html>"""


@pytest.mark.parametrize("layout", ["heading", "inline"])
@pytest.mark.parametrize("inside", [False, True], ids=["list-after-the-article", "list-inside-its-block"])
@pytest.mark.parametrize("dated", [True, False], ids=["dated", "undated"])
def test_a_short_article_beside_a_long_list_of_cards_keeps_the_article_and_nothing_of_the_list(layout, inside, dated):
    assert 150 <= len(normalize_heading("".join(ARTICLE))) <= 250
    article = extract_article(_page(layout, inside=inside, dated=dated))
    assert article.text.splitlines() == list(ARTICLE)
    assert not any(teaser[:20] in article.text or headline in article.text for _, headline, teaser in CARDS)


def test_short_articles_of_the_gold_sets_are_read_without_the_lists_beside_them(shared_data: Path):
    """Every trusted gold page whose article is 150-250 letters long (cwced, xmu-finance-news: 31 pages), read one
    page at a time: precision (bag of jieba tokens) at least 0.65 on each (the lowest measured 0.705: gold lines the
    curators left out) and 0.85 on average. With the whole-page reading always taken (the way a list beside a short
    article got in), cjw_055 reads 0.27."""
    pytest.importorskip("jieba")
    from newsdedup.evaluation.extraction import _gold_pages, token_prf

    pages = [p for p in _gold_pages(shared_data) if p.clean and p.set in ("cwced", "xmu-finance-news")
             and 150 <= len(normalize_heading(p.gold)) <= 250]
    assert len(pages) == 31  # the shared gold sets as they are: a change there is seen here
    precision = {p.name: token_prf(extract_article(p.html()).text, p.gold)[0] for p in pages}
    assert min(precision.values()) >= 0.65, sorted(precision.items(), key=lambda item: item[1])[:5]
    assert sum(precision.values()) / len(precision) >= 0.85
