"""List sources without a crawl: the site file's sources and canonical tables, the payload readers, paging, the
bundled portals' sources against payloads in their public shape, and the fetched_url schema step."""

from __future__ import annotations

import gzip
from pathlib import Path
from urllib.parse import urljoin

import pytest

from newsdedup.crawl.sites import SiteConfig, SiteConfigError, load_sites, parse_sites
from newsdedup.discovery import payloads, sitemaps
from newsdedup.discovery.listsources import Pager
from newsdedup.discovery.payloads import SourceError
from newsdedup.storage import open_store
from newsdedup.storage.sql import SCHEMA_VERSION
from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures
from test_storage import article, execute

FIXTURES = Path(__file__).parent / "fixtures" / "portal_lists"
SITE = """[[site]]
name = "demo"
start_urls = ["https://news.example.com/"]
allowed_domains = ["example.com"]
article_url_pattern = 'https?://(?:www|m)\\.example\\.com/a/\\d+'
"""


def one_site(extra: str = "") -> SiteConfig:
    (site,) = parse_sites(SITE + extra, source="sites.toml")
    return site


# -- the site file ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, expected", [
    ('[[site.sources]]\nkind = "xml"\nurl = "https://x.example.com/"\n',
     "sites.toml: site #1 ('demo'): sources #1: kind must be one of json, page_data, feed, sitemap, got 'xml'"),
    ('[[site.sources]]\nkind = "json"\nurl = "https://feed.other.com/?page={page}"\nlink = "url"\n',
     "sources #1 ('json'): url 'https://feed.other.com/?page={page}' is outside allowed_domains ['example.com']"),
    ('[[site.sources]]\nkind = "json"\nurl = "https://x.example.com/?page={page}"\n',
     "sources #1 ('json'): give either link"),
    ('[[site.sources]]\nkind = "json"\nurl = "https://x.example.com/?p={pg}"\nlink = "url"\n',
     "url 'https://x.example.com/?p={pg}' cannot be filled in (KeyError: 'pg'); only {page} and {offset}"),
    ('[[site.sources]]\nkind = "json"\nurl = "https://x.example.com/?o={offset}"\nlink = "url"\n',
     "url has {offset}: give page_size"),
    ('[[site.sources]]\nkind = "json"\nurl = "https://x.example.com/"\nitems = "result.[data"\nlink = "url"\n',
     "sources #1 ('json'): items 'result.[data' is not a JMESPath expression"),
    ('[[site.sources]]\nkind = "json"\nurl = "https://x.example.com/"\nlink_template = "https://www.example.com/a/{id"\n',
     "link_template must be a URL with {field} parts"),
    ('[[site.sources]]\nkind = "feed"\nurl = "https://x.example.com/rss.xml"\nlink = "url"\n',
     "sources #1 ('feed'): key(s) 'link' not used by kind 'feed'"),
    ('[[site.sources]]\nkind = "page_data"\nurl = "https://x.example.com/"\nvariable = "var allData"\nlink = "url"\n',
     "variable must name the script's data"),
    ('[[site.sources]]\nname = "html"\nkind = "feed"\nurl = "https://x.example.com/rss.xml"\n',
     "name 'html' must be lower-case letters, digits, '-' or '_', and not 'html' or 'scripts'"),
    ('[[site.sources]]\nname = "start1-feed"\nkind = "feed"\nurl = "https://x.example.com/rss.xml"\n',
     "nor start<N>-<kind> (the names of start URLs read as sources)"),
    ('[[site.sources]]\nkind = "feed"\nurl = "https://x.example.com/rss.xml"\nmax_pages = 0\n',
     "max_pages must be a whole number >= 1, got 0"),
    ('[[site.sources]]\nname = "a"\nkind = "feed"\nurl = "https://x.example.com/1.xml"\n'
     '[[site.sources]]\nname = "a"\nkind = "feed"\nurl = "https://x.example.com/2.xml"\n',
     "sources #2 repeats name 'a'"),
    ('[site.canonical]\nhosts = { "m.example.com" = "www.other.com" }\n',
     "canonical.hosts: 'm.example.com' -> 'www.other.com': 'www.other.com' is outside allowed_domains"),
    ('[site.canonical]\nhost = {}\n', "canonical: unknown key(s) 'host'"),
    ('[site.canonical]\nkeep_query = "id"\n', "canonical.keep_query must be a list of parameter names"),
    ('max_source_pages = "5"\n', "max_source_pages must be a whole number >= 1"),
])
def test_a_bad_source_or_canonical_table_is_refused_naming_the_site_and_key(extra, expected):
    with pytest.raises(SiteConfigError) as caught:
        one_site(extra)
    assert expected in str(caught.value)
    assert str(caught.value).startswith("sites.toml: site #1 ('demo')")


def test_a_site_of_sources_alone_needs_no_start_page_but_one_of_the_two():
    text = SITE.replace('start_urls = ["https://news.example.com/"]\n', "")
    (site,) = parse_sites(text + '[[site.sources]]\nkind = "feed"\nurl = "https://news.example.com/rss.xml"\n')
    assert site.start_urls == () and [s.name for s in site.sources] == ["feed"]
    with pytest.raises(SiteConfigError, match="missing required key.*start_urls"):
        parse_sites(text)


def test_two_unnamed_sources_of_one_kind_are_told_apart():
    site = one_site('[[site.sources]]\nkind = "feed"\nurl = "https://x.example.com/1.xml"\n'
                    '[[site.sources]]\nkind = "feed"\nurl = "https://x.example.com/2.xml"\n')
    assert [s.name for s in site.sources] == ["feed", "feed-2"]


def test_canonical_rules_fold_twins_and_tracking_into_one_url():
    site = one_site('[site.canonical]\nhosts = { "m.example.com" = "www.example.com" }\nkeep_query = ["id"]\n')
    twins = ["https://m.example.com/a/1?from=timeline", "https://www.example.com/a/1#comments",
             "https://WWW.example.com/a/1?spm=smpc.home&utm_source=x"]
    assert {site.canonical.apply(url) for url in twins} == {"https://www.example.com/a/1"}
    assert site.canonical.apply("https://m.example.com:8080/a/2?x=1&id=7") == "https://www.example.com:8080/a/2?id=7"
    # Without a canonical table a URL is left as it is; keep_query left out keeps the query.
    assert one_site().canonical.apply("https://m.example.com/a/1?x=1") == "https://m.example.com/a/1?x=1"
    kept = one_site('[site.canonical]\nhosts = { "m.example.com" = "www.example.com" }\n')
    assert kept.canonical.apply("https://m.example.com/a/1?x=1#c") == "https://www.example.com/a/1?x=1"


# -- the summary and the exit status -------------------------------------------------------------------
def test_the_summary_counts_links_by_source_only_where_a_source_found_any_and_a_failed_source_fails_the_run():
    from newsdedup.run.runstats import format_table, source_key, tallies_of
    from newsdedup.run.verdict import ExitCode, RunFacts, judge

    stats = {"newsdedup/site/a/list_pages": 3, "newsdedup/site/a/article_links": 9, "newsdedup/site/a/fetched": 9,
             "newsdedup/site/a/unique": 9, source_key("a", "roll", "links"): 8, source_key("a", "roll", "pages"): 2,
             source_key("a", "roll", "stopped"): "nothing_new", source_key("a", "html", "links"): 1,
             source_key("a", "rss", "links"): 0, source_key("a", "rss", "pages"): 1,
             source_key("a", "rss", "failed/not_a_feed"): 1, source_key("a", "rss", "error"): "http://x/rss: not RSS",
             "newsdedup/site/b/list_pages": 1, "newsdedup/site/b/article_links": 2, "newsdedup/site/b/fetched": 2,
             "newsdedup/site/b/unique": 2, source_key("b", "html", "links"): 2}
    a, b = tallies_of(stats)
    lines = format_table([a, b]).splitlines()
    assert lines[2].strip().split("; ") == ["links by source: roll 8 in 2 pages (stopped: nothing_new), html 1, rss 0 in 1 page",
                                    "sources failed: rss (not_a_feed 1)"]
    assert lines[2].startswith(" " * 4) and lines[3].split()[0] == "b" and len(lines) == 4  # b: <a href> only
    verdict = judge(RunFacts("finished", [a, b]))
    assert verdict.code == ExitCode.SITE_FAILED
    assert verdict.problems == ["site a: list source rss failed (not_a_feed 1): http://x/rss: not RSS; "
                                "the site's other lists were crawled"]
    assert judge(RunFacts("finished", [b])).code == ExitCode.OK


# -- payloads -------------------------------------------------------------------------------------------
def test_a_feed_answering_html_a_bad_json_or_a_page_without_its_data_is_a_named_failure():
    login = "<!DOCTYPE html><html><head><title>安全验证</title></head><body>请完成验证</body></html>".encode()
    with pytest.raises(SourceError) as caught:
        payloads.json_document(login, None)
    assert caught.value.reason == "not_json" and "<title>安全验证</title>" in str(caught.value)
    with pytest.raises(SourceError) as caught:
        payloads.json_document(b'data_callback([{"docurl": "x"}', None)
    assert caught.value.reason == "malformed_json"
    with pytest.raises(SourceError) as caught:
        payloads.page_data("<html><script>var other = {};</script></html>", "allData")
    assert caught.value.reason == "no_page_data"
    with pytest.raises(SourceError) as caught:
        payloads.page_data("<script>window.__INITIAL_STATE__ = {list: [1]};</script>", "window.__INITIAL_STATE__")
    assert caught.value.reason == "malformed_page_data"
    with pytest.raises(SourceError) as caught:
        payloads.feed_entries(login)
    assert caught.value.reason == "not_a_feed"
    for body in (login, b"", gzip.compress(login)):
        with pytest.raises(SourceError) as caught:
            sitemaps.read_sitemap(body, max_size=10_000)
        assert caught.value.reason == "not_a_sitemap"
    with pytest.raises(SourceError) as caught:
        sitemaps.read_sitemap(gzip.compress(b"<urlset/>" * 50_000), max_size=10_000)  # over the size limit
    assert caught.value.reason == "malformed_sitemap"


def test_script_urls_escaped_protocol_relative_and_unicode_escaped_are_found():
    scripts = ['window.__INITIAL_STATE__={"a":"https:\\/\\/www.example.com\\/a\\/1","b":"\\u002F\\u002Fwww.example.com'
               '\\u002Fa\\u002F2","c":"//m.example.com/a/3?from=x"}; // a comment, not a URL',
               "var s = '/relative/path'; location.href = 'https://cdn.example.com/app.js';"]
    assert payloads.urls_in_scripts(scripts, "https://news.example.com/") == [
        "https://www.example.com/a/1", "https://www.example.com/a/2", "https://m.example.com/a/3?from=x",
        "https://cdn.example.com/app.js"]


def test_page_data_reads_next_data_initial_state_and_var_alldata():
    next_page = '<script id="__NEXT_DATA__" type="application/json">{"props":{"x":[{"contId":"5"}]}}</script>'
    assert payloads.page_data(next_page, "__NEXT_DATA__") == {"props": {"x": [{"contId": "5"}]}}
    state = '<script>window.__INITIAL_STATE__ = {"a": [1, 2]};window.x = 1;</script>'
    assert payloads.page_data(state, "window.__INITIAL_STATE__") == {"a": [1, 2]}
    assert payloads.page_data(state, "__INITIAL_STATE__") == {"a": [1, 2]}
    assert payloads.page_data('<script>\nvar allData = {"n": 1};\nvar adData = {};</script>', "allData") == {"n": 1}


def test_the_pager_stops_at_nothing_new_at_the_end_at_the_limit_and_goes_through_an_index():
    site = one_site('max_source_pages = 3\n[[site.sources]]\nkind = "json"\nurl = "https://x.example.com/?p={page}"\n'
                    'link = "url"\n[[site.sources]]\nkind = "sitemap"\nurl = "https://www.example.com/robots.txt"\n')
    feed, sitemap = site.sources
    pager = Pager(feed)
    assert [pager.next_url(), pager.page_done(links=2, new=2), pager.page_done(links=2, new=1),
            pager.page_done(links=2, new=2), pager.stop_reason] == [
        "https://x.example.com/?p=1", "https://x.example.com/?p=2", "https://x.example.com/?p=3", None, "max_pages"]
    pager = Pager(feed)
    assert pager.page_done(links=2, new=2) and pager.page_done(links=2, new=0) is None
    assert pager.stop_reason == "nothing_new"
    pager = Pager(feed)
    assert pager.page_done(links=0, new=0) is None and pager.stop_reason == "end"
    pager = Pager(feed)
    assert pager.page_done(links=2, new=2) and pager.past_the_end() and pager.stop_reason == "end"
    assert not Pager(feed).past_the_end()  # a first page that does not exist is a failure, not an end
    pager = Pager(sitemap)
    assert pager.page_done(links=0, new=0, children=["https://www.example.com/index.xml"]) == \
        "https://www.example.com/index.xml"
    assert pager.page_done(links=0, new=0, children=["https://www.example.com/1.xml", "https://www.example.com/2.xml"]) \
        == "https://www.example.com/1.xml"
    # robots.txt and the index only named sitemaps: not counted against max_source_pages = 3.
    assert pager.page_failed() == "https://www.example.com/2.xml"
    assert pager.page_done(links=2, new=2) is None and pager.stop_reason == "end"
    assert (pager.pages, pager.indexes) == (4, 2)
    # Under max_pages = 1 an index's first sitemap is read, and only that one.
    (small,) = one_site('[[site.sources]]\nkind = "sitemap"\nurl = "https://www.example.com/index.xml"\n'
                        'max_pages = 1\n').sources
    pager = Pager(small)
    children = ["https://www.example.com/1.xml", "https://www.example.com/2.xml"]
    assert pager.page_done(links=0, new=0, children=children) == "https://www.example.com/1.xml"
    resumed = Pager(small, **pager.state())  # the state a request carries
    assert resumed.page_done(links=3, new=3) is None and resumed.stop_reason == "max_pages"
    # An index that names itself stops at max_pages index pages.
    pager = Pager(small)
    assert pager.page_done(links=0, new=0, children=["https://www.example.com/index.xml"])
    assert pager.page_done(links=0, new=0, children=["https://www.example.com/index.xml"]) is None
    assert pager.stop_reason == "max_pages"


# -- the bundled portals ------------------------------------------------------------------------------------
SHIPPED = {site.name: site for site in load_sites()}
# Listed URLs of the fixtures that are not articles (the pattern must refuse them).
NOT_ARTICLES = {
    "https://slide.news.sina.com.cn/w/slide_1_2841_123456.html",
    "https://video.sina.com.cn/p/news/2026-11-26/detail-inhaaaaa1234571.d.html",
    "https://www.163.com/v/video/VF1A2B3E4.html",
    "https://v.ifeng.com/c/8oAbCdEfGh3",
}


# The articles each bundled source's fixture (tests/fixtures/portal_lists) lists.
ARTICLES_LISTED = {("sina", "roll"): 3, ("sohu", "feed"): 2, ("163", "cm-guonei"): 2, ("people", "rss-politics"): 2,
                   ("thepaper", "channel-25950"): 2, ("chinanews", "rss-scroll"): 2}


def _read(site: SiteConfig, source, body: bytes) -> list[payloads.Listed]:
    if source.kind == "json":
        return payloads.json_items(payloads.json_document(body, None), source)
    if source.kind == "page_data":
        return payloads.json_items(payloads.page_data(payloads.decode(body, None), source.variable), source)
    if source.kind == "feed":
        return payloads.feed_entries(body)
    return sitemaps.read_sitemap(body, max_size=10_000_000).listed


@pytest.mark.parametrize("name, source", [(site.name, source.name) for site in SHIPPED.values()
                                          for source in site.sources])
def test_every_bundled_source_yields_article_urls_its_site_accepts(name, source):
    site = SHIPPED[name]
    declared = next(s for s in site.sources if s.name == source)
    (fixture,) = FIXTURES.glob(f"{name}-{source}.*")
    listed = _read(site, declared, fixture.read_bytes())
    urls = [urljoin(declared.page_url(declared.first_page), entry.url) for entry in listed]
    articles = [url for url in urls if url not in NOT_ARTICLES]
    assert len(articles) == ARTICLES_LISTED[name, source], urls
    for url in articles:
        assert site.is_article(url), url
        assert site.is_article(site.canonical.apply(url)), url  # the URL requested is still the site's article
    assert not [url for url in urls if url in NOT_ARTICLES and site.is_article(url)]
    assert all(entry.title for entry in listed)
    if declared.time is not None:
        assert all(entry.time and entry.time.startswith("2026-11-26T") for entry in listed), listed


def test_bundled_portals_without_a_source_find_their_script_lists_by_the_script_scan():
    site = SHIPPED["ifeng"]
    html = (FIXTURES / "ifeng-page.html").read_text(encoding="utf-8")
    scripts = html.split("<script>", 1)[1].split("</script>", 1)[0]
    urls = payloads.urls_in_scripts([scripts], "https://news.ifeng.com/")
    assert [url for url in urls if site.is_article(url)] == [
        "https://news.ifeng.com/c/8oAbCdEfGh1", "https://news.ifeng.com/c/8oAbCdEfGh2"]
    assert "https://v.ifeng.com/c/8oAbCdEfGh3" in urls and not site.is_article("https://v.ifeng.com/c/8oAbCdEfGh3")


def test_bundled_twins_fold_into_one_url():
    for name, twins in {
        "sohu": ["https://m.sohu.com/a/812345678_121106991?scm=1.2", "https://www.sohu.com/a/812345678_121106991"],
        "thepaper": ["https://m.thepaper.cn/newsDetail_forward_29412345", "https://www.thepaper.cn/newsDetail_forward_29412345"],
        "qq": ["https://new.qq.com/rain/a/20261126A01ABC00", "https://news.qq.com/rain/a/20261126A01ABC00"],
        "chinanews": ["https://www.chinanews.com/gn/2026/11-26/10512345.shtml",
                      "https://www.chinanews.com.cn/gn/2026/11-26/10512345.shtml?f=qbapp"],
        "sina": ["https://news.sina.com.cn/c/2026-11-26/doc-inhaaaaa1234567.shtml?cre=tianyi&mod=pcpager_news"
                 "&loc=1&r=0&rfunc=62&tj=cxvertical_pc_pager_spt",
                 "https://news.sina.com.cn/c/2026-11-26/doc-inhaaaaa1234567.shtml"],
    }.items():
        site = SHIPPED[name]
        assert all(site.is_article(url) for url in twins)
        assert len({site.canonical.apply(url) for url in twins}) == 1, name


# -- storage: the URL fetched beside the canonical one ---------------------------------------------------
def test_a_schema_4_database_gets_fetched_url_filled_with_its_urls(store_uri):
    with open_store(store_uri) as store:
        store.add_article(article(store, "http://a/1", b"f" * 16))
        store.add_article(article(store, "http://www.example.com/a/2", b"g" * 16, fetched_url="http://m.example.com/a/2"))
    # Back to what newsdedup wrote before: no fetched_url column, schema version 4.
    statements = ["ALTER TABLE articles DROP COLUMN fetched_url", "ALTER TABLE repeats DROP COLUMN fetched_url",
                  "UPDATE meta SET value = '4' WHERE key = 'schema_version'"]
    execute(store_uri, statements)
    with open_store(store_uri) as store:
        store.add_article(article(store, "http://www.example.com/a/3", b"h" * 16, fetched_url="http://m.example.com/a/3"))
    from test_storage import rows

    assert rows(store_uri, "SELECT url, fetched_url FROM articles ORDER BY url") == [
        ("http://a/1", "http://a/1"), ("http://www.example.com/a/2", "http://www.example.com/a/2"),
        ("http://www.example.com/a/3", "http://m.example.com/a/3")]
    assert rows(store_uri, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]


# -- real pages ---------------------------------------------------------------------------------------------
@pytest.mark.shared_data
def test_the_script_scan_finds_article_links_real_163_and_ifeng_pages_hold_in_scripts(shared_data: Path):
    """Saved 163 pages (gne) list related and recommended articles from script data, not <a href>: the scan finds
    them. ifeng's scripts repeat its links with a #fragment tracking the click: folded into the same URLs."""
    import parsel

    def scan(name: str, pages: list[str]) -> tuple[set[str], set[str]]:
        site, in_scripts, in_hrefs = SHIPPED[name], set(), set()
        for page in pages:
            selector = parsel.Selector((shared_data / "gne" / page).read_bytes().decode("utf-8"))
            base = "https://www.example.com/"
            in_hrefs |= {site.canonical.apply(urljoin(base, h)) for h in selector.css("a::attr(href)").getall()}
            urls = payloads.urls_in_scripts(selector.xpath("//script/text()").getall(), base)
            in_scripts |= {site.canonical.apply(url) for url in urls if site.is_article(url)}
        return in_scripts, in_hrefs

    scripts_163, hrefs_163 = scan("163", ["tests/163/1.html", "tests/163/8.html", "visiable_test/163/1.html"])
    assert len(scripts_163 - hrefs_163) == 23, scripts_163 - hrefs_163  # of 34 in the scripts: the rest are also links
    scripts_ifeng, hrefs_ifeng = scan("ifeng", ["tests/ifeng/1.html", "tests/ifeng/2.html"])
    assert len(scripts_ifeng) == 8 and not [url for url in scripts_ifeng if "#" in url], scripts_ifeng
