"""The offline demo mini-portal: server behaviour, site file, manifest and content traps."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
import urllib.robotparser
from collections.abc import Iterator
from datetime import datetime
from email.utils import parsedate_to_datetime
from importlib.resources import files
from pathlib import Path
from urllib.parse import urljoin

import lxml.html
import pytest
from lxml.cssselect import CSSSelector

from newsdedup.crawl.sites import load_sites
from newsdedup.demo.content import ARTICLE_KINDS, render_site, stories
from newsdedup.demo.server import DemoPortalServer, load_manifest

MANIFEST = load_manifest()
PAGES = MANIFEST["pages"]
# Where each demo template keeps the article body (the tests read the served text from it).
BODY_XPATH = {
    "dongfang": "//div[@id='artibody']",
    "nanling": "//div[@id='rwb_zw']",
    "xinghe": "//div[@class='post_body']",
    "qinghe": "//div[@id='detail']",
}


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def fetch(url: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> Response:
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return Response(reply.status, dict(reply.headers.items()), reply.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, dict(error.headers.items()), error.read())


@pytest.fixture(scope="module")
def server() -> Iterator[DemoPortalServer]:
    """A day-1 server shared by the read-only tests (nothing here calls set_day)."""
    with DemoPortalServer(day=1) as running:
        yield running


def _decode(page_path: str, body: bytes) -> str:
    return body.decode(PAGES[page_path]["encoding"])


def _body_paragraphs(page_path: str, body: bytes) -> list[str]:
    """Plain text paragraphs of the article body (no editor line, statements or links)."""
    doc = lxml.html.fromstring(_decode(page_path, body))
    (container,) = doc.xpath(BODY_XPATH[PAGES[page_path]["portal"]])
    return [
        re.sub(r"\s+", "", p.text_content())
        for p in container.iter("p")
        if p.get("class") is None and len(p) == 0 and p.text_content().strip()
    ]


def _sentences(paragraphs: list[str]) -> set[str]:
    text = "".join(paragraphs)
    return {s for s in re.split(r"(?<=[。！？])(?![”’])|(?<=[。！？][”’])", text) if s}


def _links(base_url: str, page_path: str, body: bytes) -> set[str]:
    doc = lxml.html.fromstring(_decode(page_path, body))
    return {urljoin(base_url + page_path, href).removeprefix(base_url) for href in doc.xpath("//a/@href")}


# --------------------------------------------------------------------------- server basics


def test_server_binds_an_ephemeral_loopback_port_and_stops() -> None:
    demo = DemoPortalServer()
    with pytest.raises(RuntimeError, match="not running"):
        demo.base_url
    demo.start()
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", demo.base_url)
        assert not demo.base_url.endswith(":0")
        assert fetch(demo.base_url + "/robots.txt").status == 200
        with pytest.raises(RuntimeError, match="already running"):
            demo.start()
    finally:
        demo.stop()
    demo.stop()  # twice is harmless
    with pytest.raises(RuntimeError):
        demo.base_url


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"day": 3}, r"day must be one of \(1, 2\)"),
        ({"host": "0.0.0.0"}, "loopback"),
        ({"host": "example.com"}, "loopback"),
        ({"port": 70000}, "port must be"),
    ],
)
def test_arguments_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DemoPortalServer(**kwargs)  # type: ignore[arg-type]


def test_robots_txt_disallows_admin_and_the_preview_path(server: DemoPortalServer) -> None:
    reply = fetch(server.base_url + "/robots.txt")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/plain")
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(reply.body.decode("utf-8").splitlines())
    (preview,) = [path for path, page in PAGES.items() if page.get("skip_reason") == "robots_disallowed"]
    assert not robots.can_fetch("newsdedup", server.base_url + preview)
    assert not robots.can_fetch("newsdedup", server.base_url + "/admin/")
    for path, page in PAGES.items():
        if page["kind"] != "skip":
            assert robots.can_fetch("newsdedup", server.base_url + path), path
    # The disallowed paths are linked from pages, so a polite crawler has something to refuse.
    index = fetch(server.base_url + "/qinghe/index.htm")
    assert {preview, "/admin/"} <= _links(server.base_url, "/qinghe/index.htm", index.body)


def test_unknown_paths_and_dead_links_are_404(server: DemoPortalServer) -> None:
    for path in ["/nope.html", "/dongfang/news/2026-11-16/doc-inothere.shtml", "/admin/"]:
        reply = fetch(server.base_url + path)
        assert reply.status == 404, path
        assert "页面不存在" in reply.body.decode("utf-8")
    dead = [path for path, page in PAGES.items() if page.get("skip_reason") == "http_404"]
    assert dead and all(fetch(server.base_url + path).status == 404 for path in dead)


def test_headers_charsets_and_last_modified(server: DemoPortalServer) -> None:
    for path, page in PAGES.items():
        if page["day"] != 1 or page.get("skip_reason") == "http_404":
            continue
        reply = fetch(server.base_url + path)
        assert reply.status == 200, path
        content_type = reply.headers["Content-Type"]
        assert content_type == MANIFEST["portals"][page["portal"]]["content_type"], path
        modified = parsedate_to_datetime(reply.headers["Last-Modified"])
        if page["kind"] in ARTICLE_KINDS:
            assert modified == datetime.fromisoformat(page["published"]), path
    assert "charset" not in fetch(server.base_url + "/xinghe/").headers["Content-Type"]


def test_conditional_get_and_head(server: DemoPortalServer) -> None:
    path = "/dongfang/roll/"
    first = fetch(server.base_url + path)
    again = fetch(server.base_url + path, headers={"If-Modified-Since": first.headers["Last-Modified"]})
    assert again.status == 304 and again.body == b""
    older = fetch(server.base_url + path, headers={"If-Modified-Since": "Mon, 02 Nov 2026 00:00:00 GMT"})
    assert older.status == 200 and older.body == first.body
    head = fetch(server.base_url + path, method="HEAD")
    assert head.status == 200 and head.body == b"" and int(head.headers["Content-Length"]) == len(first.body)


def test_requests_are_counted_per_path() -> None:
    with DemoPortalServer() as demo:
        fetch(demo.base_url + "/xinghe/")
        fetch(demo.base_url + "/xinghe/?from=nav")
        fetch(demo.base_url + "/missing")
        assert demo.requests_served["/xinghe/"] == 2
        assert demo.requests_served["/missing"] == 1
        assert "/qinghe/index.htm" not in demo.requests_served


# --------------------------------------------------------------------------- encodings


def test_gbk_portal_sends_gbk_bytes(server: DemoPortalServer) -> None:
    gbk_pages = [path for path, page in PAGES.items() if page["encoding"] == "gbk" and page["day"] == 1]
    assert len(gbk_pages) >= 5
    for path in gbk_pages:
        reply = fetch(server.base_url + path)
        assert "charset=gbk" in reply.headers["Content-Type"].lower()
        text = reply.body.decode("gbk")  # strict
        with pytest.raises(UnicodeDecodeError):
            reply.body.decode("utf-8")
        assert re.search(r'<meta http-equiv="Content-Type" content="text/html; charset=gbk"', text)
        if PAGES[path]["kind"] in ARTICLE_KINDS:
            assert PAGES[path]["title"] in text


def test_lying_meta_page_declares_gb2312_but_is_utf8(server: DemoPortalServer) -> None:
    (path,) = [p for p, page in PAGES.items() if page.get("declared_charset") == "gb2312"]
    reply = fetch(server.base_url + path)
    assert "charset" not in reply.headers["Content-Type"]
    assert b'<meta charset="gb2312">' in reply.body
    text = reply.body.decode("utf-8")  # the bytes are UTF-8
    assert PAGES[path]["title"] in text
    assert PAGES[path]["title"] not in reply.body.decode("gb18030", errors="replace")  # trusting the meta garbles it


# --------------------------------------------------------------------------- days


def test_day_two_adds_links_and_pages() -> None:
    new = MANIFEST["by_day"][2]["new_article_pages"]
    assert len(new) == 3
    with DemoPortalServer(day=1) as demo:
        lists = [path for path, page in PAGES.items() if page["kind"] == "list"]
        before = {path: _links(demo.base_url, path, fetch(demo.base_url + path).body) for path in lists}
        assert all(fetch(demo.base_url + path).status == 404 for path in new)
        demo.set_day(2)
        assert demo.day == 2
        after = {path: _links(demo.base_url, path, fetch(demo.base_url + path).body) for path in lists}
        added = set().union(*(after[path] - before[path] for path in lists))
        assert set(new) <= added
        assert all(before[path] <= after[path] for path in lists)  # day 2 = day 1 plus more
        for path in new:
            assert fetch(demo.base_url + path).status == 200
        # A day-1 article is byte-identical on day 2; a list page that grew says so in Last-Modified.
        article = next(p for p, page in PAGES.items() if page["kind"] == "original" and page["day"] == 1)
        demo.set_day(1)
        day1 = fetch(demo.base_url + article)
        front1 = fetch(demo.base_url + "/dongfang/roll/")
        demo.set_day(2)
        assert fetch(demo.base_url + article).body == day1.body
        assert parsedate_to_datetime(fetch(demo.base_url + "/dongfang/roll/").headers["Last-Modified"]) > parsedate_to_datetime(
            front1.headers["Last-Modified"]
        )
    with pytest.raises(ValueError):
        DemoPortalServer().set_day(0)


# --------------------------------------------------------------------------- site file


def test_sites_toml_loads_and_separates_the_portals(server: DemoPortalServer, tmp_path: Path) -> None:
    path = tmp_path / "demo-sites.toml"
    path.write_text(server.sites_toml(), encoding="utf-8")
    sites = load_sites(path)
    assert sorted(site.name for site in sites) == sorted(MANIFEST["portals"])
    by_name = {site.name: site for site in sites}
    for page_path, page in PAGES.items():
        url = server.base_url + page_path
        articles = [site.name for site in sites if site.is_article(url)]
        followable = [site.name for site in sites if site.is_followable(url)]
        if page["kind"] == "list":
            assert articles == [] and followable == [page["portal"]], page_path
        else:  # article-shaped: articles, and the pages a crawler must fetch (or refuse) to skip
            assert articles == [page["portal"]] and followable == [], page_path
    for site in sites:
        assert site.allowed_domains == ("127.0.0.1",)
        for url in site.start_urls:
            assert PAGES[url.removeprefix(server.base_url)]["kind"] == "list"
    # One portal leaves its related-reading blocks to the generic removal on purpose.
    assert by_name["nanling"].remove_selectors == ()
    assert [site.name for site in load_sites(path, only="nanling")] == ["nanling"]


def test_remove_selectors_of_the_site_file_hit_the_demo_blocks(server: DemoPortalServer) -> None:
    for portal, info in MANIFEST["portals"].items():
        article = next(p for p, page in PAGES.items() if page["portal"] == portal and page["kind"] == "original")
        raw = fetch(server.base_url + article).body
        doc = lxml.html.fromstring(_decode(article, raw))
        body = _body_paragraphs(article, raw)
        for selector in info["remove_selectors"]:
            blocks = CSSSelector(selector, translator="html")(doc)
            assert blocks, (portal, selector)
            for block in blocks:  # none of them holds article text
                block_text = re.sub(r"\s+", "", block.text_content())
                assert not any(paragraph in block_text for paragraph in body), (portal, selector)


# --------------------------------------------------------------------------- manifest and content


def test_manifest_pages_are_served_exactly(server: DemoPortalServer) -> None:
    site = render_site(server.base_url, 1)
    expected = {p for p, page in PAGES.items() if page["day"] == 1 and page.get("skip_reason") != "http_404"}
    assert set(site) == expected
    by_day = MANIFEST["by_day"]
    assert by_day[1]["stories"] == 13 and by_day[2]["stories"] == 14
    assert by_day[1]["article_pages"] == 20 and by_day[2]["article_pages"] == 23
    assert by_day[2]["verbatim_reprints"] == 5 and by_day[2]["edited_reprints"] == 4
    assert set(by_day[1]["skipped"].values()) == {"javascript_only", "video", "empty", "http_404"}
    assert len(MANIFEST["stories"]) == 14
    assert {MANIFEST["stories"][s]["topic"] for s in MANIFEST["stories"]} >= {"科技", "财经", "体育", "社会", "国际", "文化"}


def test_every_article_page_is_linked_from_its_list_page(server: DemoPortalServer) -> None:
    for path, page in PAGES.items():
        if page["kind"] == "list" or page["day"] != 1:
            continue
        listing = page["listed_on"]
        assert path in _links(server.base_url, listing, fetch(server.base_url + listing).body), path


def test_article_pages_carry_portal_metadata(server: DemoPortalServer) -> None:
    for path, page in PAGES.items():
        if page["kind"] not in ARTICLE_KINDS or page["day"] != 1:
            continue
        text = _decode(path, fetch(server.base_url + path).body)
        doc = lxml.html.fromstring(text)
        assert doc.xpath("//link[@rel='canonical']/@href") == [server.base_url + path]
        assert page["title"] in doc.xpath("//meta[@property='og:title']/@content")
        assert re.search("来源[：:]\\s*(?:<a[^>]*>)?" + re.escape(page["source"]), text), path
        assert page["editor"] and page["editor"] in text and re.search("责任编辑|责编", text)
        assert re.search(r"2026(?:-11-|年11月)\d{2}日? ?\d{2}:\d{2}", text), path
        body = "".join(_body_paragraphs(path, fetch(server.base_url + path).body))
        assert 400 <= len(body) <= 1500, (path, len(body))


def test_reprints_share_their_text_with_the_original() -> None:
    with DemoPortalServer(day=2) as demo:
        body = {path: _body_paragraphs(path, fetch(demo.base_url + path).body) for path, page in PAGES.items() if page["kind"] in ARTICLE_KINDS}
    pairs = [(path, page) for path, page in PAGES.items() if page["kind"] in ("verbatim_reprint", "edited_reprint")]
    assert len(pairs) == 9
    for path, page in pairs:
        original = page["of"]
        assert PAGES[original]["story"] == page["story"] and PAGES[original]["portal"] != page["portal"]
        if page["kind"] == "verbatim_reprint":
            assert body[path] == body[original], path
            assert page["title"] == PAGES[original]["title"]
        else:
            mine, theirs = _sentences(body[path]), _sentences(body[original])
            changed = 1 - len(mine & theirs) / len(theirs)
            assert 0.10 <= changed <= 0.30, (path, changed)
            assert body[path] != body[original] and len(page["title"]) < len(PAGES[original]["title"])


def test_hard_negatives_look_alike_but_are_different_stories(server: DemoPortalServer) -> None:
    negatives = [(path, page) for path, page in PAGES.items() if page["kind"] == "negative"]
    assert len(negatives) == 3
    for path, page in negatives:
        mine = _body_paragraphs(path, fetch(server.base_url + path).body)
        for other in page["confusable_with"]:
            theirs = _body_paragraphs(other, fetch(server.base_url + other).body)
            assert PAGES[other]["story"] != page["story"]
            shared = set(mine) & set(theirs)
            if "disclaimer" in page["negative_reason"]:
                (disclaimer,) = shared  # exactly one long paragraph in common
                assert len(disclaimer) >= 150
            else:
                assert not shared and not (_sentences(mine) & _sentences(theirs))


def test_related_reading_quotes_other_articles(server: DemoPortalServer) -> None:
    """The trap: blocks outside the body repeat other articles' headlines and first sentences."""
    all_stories = stories()
    for path, page in PAGES.items():
        if page["kind"] not in ARTICLE_KINDS or page["day"] != 1:
            continue
        text = re.sub(r"\s+", "", lxml.html.fromstring(_decode(path, fetch(server.base_url + path).body)).text_content())
        body = "".join(_body_paragraphs(path, fetch(server.base_url + path).body))
        quoted = [
            other
            for other_path, other in PAGES.items()
            if other["kind"] in ARTICLE_KINDS and other["day"] == 1 and other["story"] != page["story"]
            and all_stories[other["variant"]].first_sentence.replace(" ", "") in text
        ]
        headlines = [
            other
            for other in PAGES.values()
            if other["kind"] in ARTICLE_KINDS and other["day"] == 1 and other["story"] != page["story"]
            and other["title"].replace(" ", "") in text
        ]
        assert quoted or page["portal"] == "qinghe", path  # qinghe quotes headlines only
        assert len(headlines) >= 3, path
        assert not any(all_stories[o["variant"]].first_sentence in body for o in quoted)


def test_pages_that_must_be_skipped(server: DemoPortalServer) -> None:
    reasons = {page["skip_reason"]: path for path, page in PAGES.items() if page["kind"] == "skip"}
    empty = fetch(server.base_url + reasons["empty"])
    assert empty.status == 200 and empty.body == b""
    script = lxml.html.fromstring(fetch(server.base_url + reasons["javascript_only"]).body.decode("utf-8"))
    hidden_text = stories()["x-script"].paragraphs[0]
    assert hidden_text in "".join(script.xpath("//script/text()"))
    for element in script.xpath("//script"):
        element.drop_tree()
    assert len(re.sub(r"\s+", "", script.text_content())) < 40
    video = lxml.html.fromstring(fetch(server.base_url + reasons["video"]).body.decode("utf-8"))
    (description,) = video.xpath("//div[@class='video_wrap']")
    assert len(re.sub(r"\s+", "", description.text_content())) < 80
    assert video.xpath("//video")


def test_package_data_is_small() -> None:
    portal = files("newsdedup.demo") / "portal"
    total = 0
    stack = [portal]
    while stack:
        entry = stack.pop()
        if entry.is_dir():
            stack.extend(entry.iterdir())
        else:
            total += len(entry.read_bytes())
    assert total < 400_000, total
