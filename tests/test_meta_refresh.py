"""Meta-refresh redirects (newsdedup/crawl/middlewares.py): followed as Scrapy follows them, without decoding a page whose
first bytes show none."""

from __future__ import annotations

import sqlite3

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from local_site import STORY, LocalSite, Page, crawl
from newsdedup.crawl.middlewares import HEAD_BYTES, HeadMetaRefreshMiddleware, may_declare_refresh


class UndecodedResponse(HtmlResponse):
    """A response whose text must not be read."""

    @property
    def text(self) -> str:
        raise AssertionError("the response was decoded")


@pytest.fixture()
def middleware():
    return HeadMetaRefreshMiddleware.from_crawler(get_crawler(settings_dict={"METAREFRESH_ENABLED": True}))


def page(head: str = "", body: str = "正文", filler: int = 0) -> str:
    return f'<html><head><meta charset="utf-8">{head}<title>标题</title></head><body>{"x" * filler}{body}</body></html>'


def test_a_page_without_refresh_in_its_first_bytes_is_passed_on_undecoded(middleware):
    request = Request("http://example.com/a/1.html")
    response = UndecodedResponse(request.url, body=page().encode("utf-8"), request=request,
                                 headers={"Content-Type": "text/html"})
    assert middleware.process_response(request, response) is response


@pytest.mark.parametrize("encoding", ["utf-8", "gbk", "utf-16"])
def test_a_refresh_is_followed_in_any_encoding(middleware, encoding):
    request = Request("http://example.com/a/1.html")
    html = page('<meta http-equiv="Refresh" content="0; url=/m/1.html">')
    response = HtmlResponse(request.url, body=html.encode(encoding), request=request,
                            headers={"Content-Type": f"text/html; charset={encoding}"})
    redirected = middleware.process_response(request, response)
    assert isinstance(redirected, Request) and redirected.url == "http://example.com/m/1.html"


def test_the_word_refresh_elsewhere_goes_to_scrapys_own_check_which_finds_no_redirect(middleware):
    request = Request("http://example.com/a/1.html")
    html = page("<script>autoRefresh(60)</script>")
    response = HtmlResponse(request.url, body=html.encode("utf-8"), request=request)
    assert may_declare_refresh(response.body)
    assert middleware.process_response(request, response) is response


def test_what_the_byte_check_clears_and_what_it_leaves_to_scrapy():
    # Beyond Scrapy's 4,096 characters (16,384 bytes at most): not a refresh Scrapy would follow either.
    late = page(body='<meta http-equiv="refresh" content="0; url=/m/">', filler=HEAD_BYTES).encode("utf-8")
    assert not may_declare_refresh(late)
    assert may_declare_refresh(page().encode("utf-16"))  # NUL bytes: letters are not ASCII bytes
    assert may_declare_refresh(page().encode("utf-8"), b"text/html; charset=cp500")  # EBCDIC spells it otherwise
    assert not may_declare_refresh(page().encode("gbk"), b"text/html; charset=GBK")
    assert may_declare_refresh(page().encode("utf-8"), b"text/html; charset=no-such-codec")


def test_a_crawl_follows_an_article_links_meta_refresh_and_stores_the_page_it_leads_to(tmp_path):
    db = tmp_path / "news.sqlite"
    with LocalSite(("alpha",)) as site:
        moved = site.publish("alpha", 1, "临江推行社区食堂", STORY, "2026-11-16 08:40")
        target = moved.replace("/news/1.html", "/news/2.html")
        site.pages["/alpha/news/2.html"] = site.pages["/alpha/news/1.html"]  # the article under its new address
        site.pages["/alpha/news/1.html"] = Page(
            '<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=/alpha/news/2.html">'
            "</head><body>页面已迁移</body></html>".encode("utf-8"))
        sites_file = tmp_path / "sites.toml"
        sites_file.write_text(site.sites_toml(), encoding="utf-8")
        crawl(sites_file, db)
        assert site.requests["/alpha/news/2.html"] == 1
    with sqlite3.connect(db) as conn:
        assert [row[0] for row in conn.execute("SELECT url FROM articles")] == [target]
