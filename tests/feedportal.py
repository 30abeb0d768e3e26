"""A portal on 127.0.0.1 whose lists are what today's Chinese portals publish, each article reachable by one only.

Each list is served in the shape its public original has (see config/sites.toml for the originals):

- a start page with ``<a href>`` links (one to an article's mobile twin with tracking parameters) and a
  ``window.__INITIAL_STATE__`` script holding article URLs escaped as ``\\/`` and ``\\u002F``, one protocol-relative;
- ``roll``: sina's roll API, ``{"result": {"status": ..., "data": [{url, title, ctime}]}}``, paged by ``page=``;
- ``cm``: 163's JSONP list files, GBK without a charset, ``data_callback([...{title, docurl, time}])``: ``cm_guonei.js``,
  then ``cm_guonei_02.js``, and 404 past the last one, as 163 answers;
- ``feed``: sohu's public-api feed, items with ``id`` and ``authorId`` only (the URL is a template);
- ``next``: a Next.js page whose ``__NEXT_DATA__`` holds ``contId``s (thepaper);
- ``alldata``: a channel page with ``var allData = {...}`` and protocol-relative URLs (ifeng);
- ``rss`` (RSS 2.0), ``atom`` (Atom 1.0);
- ``sitemaps``: robots.txt with a ``Sitemap:`` line -> a sitemap index -> a gzipped news sitemap and a plain one
  (which also lists a page robots.txt forbids);
- bad ones: ``endless`` (every page brings new articles, forever), ``broken`` (malformed JSON), ``blocked`` (an HTML
  login page where JSON was expected), ``missing`` (a sitemap answering 404).

The mobile twin host is ``localhost`` (the desktop one ``127.0.0.1``): the same server, another host name. Every
request is counted by host and path with its query (``served``). Article texts come from
:func:`faultsite.article_paragraphs` (our own invented text, distinct per article).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter

from faultsite import article_paragraphs
from local_site import article_html
from newsdedup.demo.server import LoopbackServer, Request, Response

# Article 10 has no date on its page: its time comes from the roll feed's ctime (2026-01-05 10:20:30 China time).
UNDATED_ARTICLE = 10
UNDATED_CTIME = 1767579630
UNDATED_PUBLISHED = "2026-01-05T10:20:30+08:00"
ROLL_PAGE_SIZE = 2
ENDLESS_MAX_PAGES = 3


class FeedPortal(LoopbackServer):
    def __init__(self) -> None:
        super().__init__({})
        self.served: Counter[tuple[str, str]] = Counter()  # (host name, path with query)
        self.roll = [10, 11, 12, 13]  # newest first, as sina's roll lists

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    @property
    def base(self) -> str:
        return self.base_url

    @property
    def mobile(self) -> str:
        return f"http://localhost:{self.port}"

    def respond(self, request: Request) -> Response | None:
        with self._lock:
            self.served[(request.host, request.target)] += 1
        return self.reply(request.target)

    # -- what is reachable, and how -----------------------------------------------------------------------
    def article_url(self, key) -> str:
        """Canonical (desktop) URL of an article: a number (/news/N.html) or a path."""
        return f"{self.base}/news/{key}.html" if isinstance(key, int) else f"{self.base}{key}"

    def expected_articles(self) -> set[str]:
        """Every article a full first crawl must store (each reachable through one kind of list)."""
        numbered = [1, 2, 3, *self.roll, 20, 21, 22, 60, 61, 62, 70, 71, 72,
                    *range(80 + 2, 80 + 2 * ENDLESS_MAX_PAGES + 2)]
        paths = ["/a/30_7", "/a/31_7", "/newsDetail_forward_40", "/newsDetail_forward_41", "/c/8AbCdEf050",
                 "/c/8AbCdEf051"]
        return {self.article_url(n) for n in numbered} | {self.article_url(p) for p in paths}

    def sites_toml(self) -> str:
        b = self.base
        return f"""
[[site]]
name = "fixture"
start_urls = ["{b}/index.html"]
allowed_domains = ["127.0.0.1", "localhost"]
article_url_pattern = 'https?://(?:127\\.0\\.0\\.1|localhost):\\d+/(?:news/\\d+\\.html|a/\\d+_\\d+|newsDetail_forward_\\d+|c/[0-9A-Za-z]{{8,}}|private/\\d+\\.html)'
max_source_pages = {ENDLESS_MAX_PAGES}

[site.canonical]
hosts = {{ "localhost" = "127.0.0.1" }}
keep_query = []

[[site.sources]]
name = "roll"
kind = "json"
url = "{b}/api/roll/get?pageid=153&lid=2509&num={ROLL_PAGE_SIZE}&page={{page}}"
items = "result.data"
link = "url"
title = "title"
time = "ctime"
max_pages = 10

[[site.sources]]
name = "cm"
kind = "json"
first_url = "{b}/special/00804KVA/cm_guonei.js?callback=data_callback"
url = "{b}/special/00804KVA/cm_guonei_{{page:02d}}.js?callback=data_callback"
link = "docurl"
title = "title"
time = "time"

[[site.sources]]
name = "feed"
kind = "json"
url = "{b}/public-api/feed?scene=CATEGORY&sceneId=1460&page={{page}}&size=20"
link_template = "{b}/a/{{id}}_{{authorId}}"
title = "title"
time = "publicTime"

[[site.sources]]
name = "next"
kind = "page_data"
url = "{b}/thepaper/"
variable = "__NEXT_DATA__"
link_template = "{b}/newsDetail_forward_{{contId}}"

[[site.sources]]
name = "alldata"
kind = "page_data"
url = "{b}/ifeng/"
variable = "allData"
link = "url"
title = "title"
time = "newsTime"

[[site.sources]]
name = "rss"
kind = "feed"
url = "{b}/rss/news.xml"

[[site.sources]]
name = "atom"
kind = "feed"
url = "{b}/atom.xml"

[[site.sources]]
name = "sitemaps"
kind = "sitemap"
url = "{b}/robots.txt"
max_pages = 5

[[site.sources]]
name = "endless"
kind = "json"
url = "{b}/api/endless?page={{page}}"
items = "data"
link = "url"

[[site.sources]]
name = "broken"
kind = "json"
url = "{b}/api/broken?page={{page}}"
items = "result.data"
link = "url"

[[site.sources]]
name = "blocked"
kind = "json"
url = "{b}/api/blocked?page={{page}}"
items = "data"
link = "url"

[[site.sources]]
name = "missing"
kind = "sitemap"
url = "{b}/missing-sitemap.xml"
"""

    # -- the pages ------------------------------------------------------------------------------------------
    def reply(self, path: str) -> Response | None:
        html, js = "text/html; charset=utf-8", "application/json; charset=utf-8"
        route, _, query = path.partition("?")
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        page = int(params.get("page", "1") or 1)
        b = self.base
        if route.startswith("/news/") or route.startswith(("/a/", "/newsDetail_forward_", "/c/", "/private/")):
            return Response(self._article(route), html)
        if route == "/index.html":
            state = ('{"list":[{"url":"http:\\/\\/127.0.0.1:%d\\/news\\/2.html"},'
                     '{"link":"\\u002F\\u002F127.0.0.1:%d\\u002Fnews\\u002F3.html"}],'
                     '"static":"\\/\\/127.0.0.1:%d\\/static\\/app.js"}') % (self.port, self.port, self.port)
            body = (f'<html><head><meta charset="utf-8"><title>测试门户</title></head><body><ul>'
                    f'<li><a href="/news/1.html">新闻一</a></li>'
                    f'<li><a href="{self.mobile}/news/1.html?from=timeline">新闻一（手机版）</a></li>'
                    f'<li><a href="/news/1.html?spm=smpc.home.top-news1#comments">新闻一（追踪）</a></li></ul>'
                    f'<div id="app"></div><script>window.__INITIAL_STATE__ = {state};</script></body></html>')
            return Response(body.encode(), html)
        if route == "/api/roll/get":
            start = (page - 1) * ROLL_PAGE_SIZE
            data = [{"docid": f"comos:{n}", "url": self.article_url(n), "wapurl": f"{self.mobile}/news/{n}.html",
                     "title": f"滚动新闻{n}", "ctime": str(UNDATED_CTIME + n - UNDATED_ARTICLE), "intime": "0"}
                    for n in self.roll[start:start + ROLL_PAGE_SIZE]]
            if page == 2:  # a video in the roll: not an article (the pattern decides)
                data.append({"url": f"{b}/video/5.html", "title": "视频", "ctime": str(UNDATED_CTIME)})
            doc = {"result": {"status": {"code": 0, "msg": "succ"}, "timestamp": "Mon Jan 05 10:30:00 +0800 2026",
                              "top": [], "data": data, "total": len(self.roll), "lid": "2509"}}
            return Response(json.dumps(doc, ensure_ascii=False).encode(), js)
        if route == "/special/00804KVA/cm_guonei.js":
            return self._jsonp([(20, b), (21, b)])
        if route == "/special/00804KVA/cm_guonei_02.js":
            # A mobile twin with a tracking parameter, and article 1 again (found on the start page too).
            return self._jsonp([(22, self.mobile, "?spss=np"), (1, b)])
        if route == "/public-api/feed":
            items = [{"id": n, "authorId": 7, "authorName": "测试号", "title": f"搜狐新闻{n}", "mobileTitle": "",
                      "type": 0, "publicTime": 1767579630000 + n} for n in ((30, 31) if page == 1 else ())]
            return Response(json.dumps(items, ensure_ascii=False).encode(), js)
        if route == "/thepaper/":
            data = {"props": {"pageProps": {"data": {"list": [
                {"contId": "40", "name": "澎湃新闻40", "pubTime": "2小时前", "nodeInfo": {"nodeId": 25950}},
                {"contId": "41", "name": "澎湃新闻41", "pubTime": "3小时前"}]}}},
                "page": "/", "query": {}, "buildId": "abc123"}
            body = (f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><div id="__next"></div>'
                    f'<script id="__NEXT_DATA__" type="application/json">{json.dumps(data, ensure_ascii=False)}'
                    f'</script></body></html>')
            return Response(body.encode(), html)
        if route == "/ifeng/":
            all_data = {"nav": [{"title": "首页", "url": f"//127.0.0.1:{self.port}/"}],
                        "newsstream": [{"id": "8AbCdEf050", "url": f"//127.0.0.1:{self.port}/c/8AbCdEf050",
                                        "title": "凤凰新闻50", "newsTime": "2026-01-05 09:00:00"},
                                       {"id": "8AbCdEf051", "url": f"//127.0.0.1:{self.port}/c/8AbCdEf051",
                                        "title": "凤凰新闻51", "newsTime": "2026-01-05 09:10:00"}]}
            body = (f'<html><head><meta charset="utf-8"></head><body><script>var allData = '
                    f'{json.dumps(all_data, ensure_ascii=False)};\nvar adKeys = [];</script></body></html>')
            return Response(body.encode(), html)
        if route == "/rss/news.xml":
            items = "".join(
                f"<item><title>中新新闻{n}</title><link>{self.article_url(n)}</link>"
                f"<pubDate>Mon, 05 Jan 2026 0{n - 60}:00:00 GMT</pubDate><description><![CDATA[摘要]]></description></item>"
                for n in (60, 61))
            body = (f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>滚动新闻</title>'
                    f'<link>{b}/</link><description>测试</description>{items}</channel></rss>')
            return Response(body.encode(), "application/rss+xml; charset=utf-8")
        if route == "/atom.xml":
            body = (f'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>测试</title>'
                    f'<id>{b}/</id><updated>2026-01-05T10:00:00Z</updated><entry><title>原子新闻62</title>'
                    f'<link rel="alternate" href="{self.article_url(62)}"/><id>tag:test,2026:62</id>'
                    f'<updated>2026-01-05T10:00:00Z</updated></entry></feed>')
            return Response(body.encode(), "application/atom+xml")
        if route == "/robots.txt":
            return Response(f"User-agent: *\nDisallow: /private/\n\nSitemap: {b}/sitemap_index.xml\n".encode(), "text/plain")
        if route == "/sitemap_index.xml":
            body = (f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                    f'<sitemap><loc>{b}/sitemaps/more.xml</loc><lastmod>2026-01-01</lastmod></sitemap>'
                    f'<sitemap><loc>{b}/sitemaps/news.xml.gz</loc><lastmod>2026-01-05</lastmod></sitemap>'
                    f'</sitemapindex>')
            return Response(body.encode(), "application/xml")
        if route == "/sitemaps/news.xml.gz":
            urls = "".join(
                f'<url><loc>{self.article_url(n)}</loc><news:news><news:publication><news:name>测试</news:name>'
                f'<news:language>zh</news:language></news:publication><news:publication_date>2026-01-05T10:0{n - 70}:00+08:00'
                f'</news:publication_date><news:title>新闻地图{n}</news:title></news:news></url>' for n in (70, 71))
            body = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
                    f'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">{urls}</urlset>')
            return Response(gzip.compress(body.encode()), "application/x-gzip")
        if route == "/sitemaps/more.xml":
            body = (f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                    f'<url><loc>{self.article_url(72)}</loc><lastmod>2026-01-04</lastmod></url>'
                    f'<url><loc>{b}/private/99.html</loc></url></urlset>')
            return Response(body.encode(), "application/xml")
        if route == "/api/endless":  # never ends: two new articles on every page
            data = [{"url": self.article_url(80 + 2 * page + i), "title": f"无尽{page}"} for i in (0, 1)]
            return Response(json.dumps({"data": data}).encode(), js)
        if route == "/api/broken":
            return Response(b'{"result": {"data": [{"url": "' + self.article_url(90).encode() + b'", "title": "', js)
        if route == "/api/blocked":
            return Response('<html><head><title>用户登录</title></head><body><form>请登录</form></body></html>'.encode(), html)
        return None

    def _jsonp(self, items: list[tuple]) -> Response:
        entries = [{"title": f"网易新闻{n}", "digest": "", "docurl": f"{host}/news/{n}.html{extra[0] if extra else ''}",
                    "commenturl": f"https://comment.tie.163.com/{n}.html", "tienum": 12, "label": "其它",
                    "keywords": [{"akey_link": "/keywords/x.html", "keyname": "测试"}],
                    "time": f"01/05/2026 08:{n:02d}:00", "newstype": "article", "imgurl": ""}
                   for n, host, *extra in items]
        body = "data_callback(" + json.dumps(entries, ensure_ascii=False, indent=1) + ")"
        return Response(body.encode("gbk"), "application/javascript")  # 163's files: GBK, no charset declared

    def _article(self, route: str) -> bytes:
        digits = "".join(ch for ch in route if ch.isdigit()) or "0"
        number = int(digits)
        published = None if number == UNDATED_ARTICLE else "2026-01-05 08:00"
        return article_html("测试门户", f"测试新闻{number}", article_paragraphs(number), published)
