"""Site file loader (newsdedup.crawl.sites) and the shipped config/sites.toml.

Unit tests use small site files written here.  The data-driven tests check the shipped
article patterns against every real URL of a configured portal found in ../shared/data:
the page URLs recorded for saved article pages, and the links on the saved pages
(list pages and the related-reading / navigation links of article pages).
"""

from __future__ import annotations

import collections
import html
import json
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest
from lxml.cssselect import CSSSelector

from newsdedup.extract.extractor import extract_article

from newsdedup.crawl.sites import (
    SiteConfig,
    SiteConfigError,
    default_sites_path,
    load_sites,
    parse_sites,
)

MINIMAL = """
[[site]]
name = "demo"
start_urls = ["https://news.example.com/roll/"]
allowed_domains = ["example.com"]
article_url_pattern = 'https?://news\\.example\\.com/a/\\d+\\.html'
"""


def _site_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _entry(**overrides: object) -> str:
    """One [[site]] table with MINIMAL's values, some replaced (None drops the key)."""
    values: dict[str, object] = {
        "name": '"demo"',
        "start_urls": '["https://news.example.com/roll/"]',
        "allowed_domains": '["example.com"]',
        "article_url_pattern": "'https?://news\\.example\\.com/a/\\d+\\.html'",
    }
    values.update(overrides)
    lines = ["[[site]]"] + [f"{key} = {value}" for key, value in values.items() if value is not None]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- loader


def test_minimal_file_loads_with_defaults(tmp_path: Path) -> None:
    (site,) = load_sites(_site_file(tmp_path, MINIMAL))
    assert site.name == "demo"
    assert site.start_urls == ("https://news.example.com/roll/",)
    assert site.allowed_domains == ("example.com",)
    assert site.follow_url_pattern is None
    assert site.remove_selectors == ()
    assert site.is_article("https://news.example.com/a/1.html")
    assert not site.is_followable("https://news.example.com/roll/")  # no follow pattern


def test_path_may_be_str(tmp_path: Path) -> None:
    assert load_sites(str(_site_file(tmp_path, MINIMAL)))[0].name == "demo"


def test_parse_sites_names_its_source() -> None:
    with pytest.raises(SiteConfigError, match=r"^<demo>: .*missing required key\(s\) start_urls"):
        parse_sites(_entry(start_urls=None), source="<demo>")


def test_site_config_is_frozen() -> None:
    (site,) = parse_sites(MINIMAL)
    with pytest.raises(AttributeError):
        site.name = "other"  # type: ignore[misc]


def test_only_selects_the_named_entries() -> None:
    text = _entry() + _entry(name='"second"') + _entry(name='"third"')
    assert [s.name for s in parse_sites(text)] == ["demo", "second", "third"]
    assert [s.name for s in parse_sites(text, only="second")] == ["second"]
    assert [s.name for s in parse_sites(text, only="third, demo")] == ["demo", "third"]  # the file's order
    with pytest.raises(SiteConfigError, match="'fourth'"):
        parse_sites(text, only="demo,fourth")  # one unknown name is an error, not a smaller crawl


def test_only_unknown_name_lists_known_names(tmp_path: Path) -> None:
    path = _site_file(tmp_path, _entry() + _entry(name='"second"'))
    with pytest.raises(SiteConfigError) as info:
        load_sites(path, only="thrid")
    message = str(info.value)
    assert str(path) in message and "'thrid'" in message and "demo, second" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", r"no \[\[site\]\] entries"),
        ("[[site]\nname = 1", r"not valid TOML"),
        ("title = 'x'\n" + MINIMAL, r"unknown top-level key\(s\) 'title'"),
        ("site = 3", r"no \[\[site\]\] entries"),
        (_entry(article_url_pattern=None), r"site #1 \('demo'\): missing required key\(s\) article_url_pattern"),
        (_entry(name=None), r"site #1: missing required key\(s\) name"),
        (_entry(article_url_patern="'x'"), r"unknown key\(s\) 'article_url_patern' \(did you mean 'article_url_pattern'\?\)"),
        (_entry(remove_selector='[".x"]'), r"did you mean 'remove_selectors'"),
        (_entry(name="3"), r"name must be a non-empty string"),
        (_entry(name='"Sina News"'), r"lower-case letters"),
        (_entry(start_urls='"https://news.example.com/"'), r"start_urls must be a list of strings; write start_urls = \["),
        (_entry(start_urls="[]"), r"start_urls is empty"),
        (_entry(start_urls='["news.example.com/roll/"]'), r"start URL 'news.example.com/roll/' is not an absolute http\(s\) URL"),
        (_entry(start_urls='["ftp://news.example.com/"]'), r"not an absolute http\(s\) URL"),
        (_entry(start_urls='["https://news.other.org/"]'), r"outside allowed_domains"),
        (_entry(allowed_domains='["https://example.com"]'), r"is not a bare host name"),
        (_entry(allowed_domains='["Example.com"]'), r"is not a bare host name"),
        (_entry(allowed_domains="[1]"), r"allowed_domains must be a list of non-empty strings"),
        (_entry(article_url_pattern="'https?://news\\.example\\.com/a/(\\d+\\.html'"), r"site #1 \('demo'\): article_url_pattern is not a valid regular expression"),
        (_entry(follow_url_pattern="'[a-'"), r"follow_url_pattern is not a valid regular expression"),
        (_entry(article_url_pattern="''"), r"article_url_pattern must be a non-empty string"),
        (_entry(remove_selectors='["div..related"]'), r"remove_selectors entry 'div..related' is not a usable CSS selector"),
        (_entry(remove_selectors='["a:frobnicate"]'), r"remove_selectors entry 'a:frobnicate' is not a usable CSS selector"),
        (_entry(remove_selectors='".related"'), r"remove_selectors must be a list of strings"),
        (_entry() + _entry(), r"site #2 repeats name 'demo' of site #1"),
        ("site = [1]", r"site #1 is not a table"),
    ],
)
def test_invalid_files_are_rejected_naming_file_entry_and_fix(tmp_path: Path, text: str, expected: str) -> None:
    path = _site_file(tmp_path, text)
    with pytest.raises(SiteConfigError, match=expected) as info:
        load_sites(path)
    assert str(info.value).startswith(str(path))
    assert isinstance(info.value, ValueError)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(SiteConfigError, match=r"nope\.toml: site file not found"):
        load_sites(tmp_path / "nope.toml")


def test_non_utf8_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_bytes(MINIMAL.replace("demo", "演示").encode("gbk"))
    with pytest.raises(SiteConfigError, match="not UTF-8"):
        load_sites(path)


# --------------------------------------------------------------------------- matching


@pytest.fixture(scope="module")
def example_site() -> SiteConfig:
    (site,) = parse_sites(
        _entry(
            follow_url_pattern="'https?://news\\.example\\.com/roll/(?:index_\\d+\\.html)?'",
            article_url_pattern="'https?://news\\.example\\.com/a/\\d+\\.html|https?://news\\.example\\.com/show\\.php\\?id=\\d+'",
        )
    )
    return site


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://news.example.com/a/123.html", True),
        ("http://news.example.com/a/123.html", True),
        ("https://NEWS.Example.COM/a/123.html", True),  # host is case-insensitive
        ("https://news.example.com/a/123.html#comments", True),  # fragment ignored
        ("https://news.example.com/a/123.html?from=home&cre=tianyi", True),  # tracking query ignored
        ("https://news.example.com/show.php?id=42", True),  # a pattern may spell out a query
        ("https://news.example.com/show.php", False),
        ("https://news.example.com/a/123.html.bak", False),  # fullmatch, not a prefix
        ("https://news.example.com/a/123.htmlx", False),
        ("https://news.example.com/roll/", False),
        # search() would accept the article URL embedded in a share/comment link; fullmatch does not.
        ("https://share.example.com/view.html?docUrl=https://news.example.com/a/123.html", False),
        ("https://news.example.com/comment?u=https://news.example.com/a/123.html", False),
        ("ftp://news.example.com/a/123.html", False),
        ("/a/123.html", False),  # relative: the spider resolves links before asking
        ("", False),
    ],
)
def test_is_article_fullmatches_without_fragment_and_tracking_query(
    example_site: SiteConfig, url: str, expected: bool
) -> None:
    assert example_site.is_article(url) is expected


def test_is_followable(example_site: SiteConfig) -> None:
    assert example_site.is_followable("https://news.example.com/roll/")
    assert example_site.is_followable("https://news.example.com/roll/index_2.html?page=2")
    assert not example_site.is_followable("https://news.example.com/a/123.html")
    assert not example_site.is_followable("https://news.example.com/roll/index_2.html.tmp")


def test_is_allowed_takes_subdomains(example_site: SiteConfig) -> None:
    assert example_site.is_allowed("https://example.com/")
    assert example_site.is_allowed("https://news.example.com/a/1.html")
    assert not example_site.is_allowed("https://badexample.com/")
    assert not example_site.is_allowed("https://example.com.evil.org/")


# --------------------------------------------------------------------------- shipped file


@pytest.fixture(scope="module")
def shipped() -> dict[str, SiteConfig]:
    return {site.name: site for site in load_sites()}


def test_default_file_is_the_repository_config(shipped: dict[str, SiteConfig]) -> None:
    assert default_sites_path().is_file()
    assert Path(str(default_sites_path())).resolve() == (
        Path(__file__).resolve().parent.parent / "config" / "sites.toml"
    )
    assert list(shipped) == ["sina", "sohu", "qq", "163", "xinhua", "people", "ifeng", "thepaper", "chinanews"]
    assert load_sites(only="163")[0].name == "163"


# One real-shaped article URL per portal (the examples in config/sites.toml) ...
ARTICLE_EXAMPLES = {
    "sina": [
        "https://news.sina.com.cn/c/2018-05-03/doc-ifzyqqiq5591226.shtml",
        "https://finance.sina.com.cn/stock/usstock/c/2019-09-09/doc-iicezzrq4681677.shtml",
        "https://news.sina.com.cn/c/2005-06-01/08106069583s.shtml",
        "https://k.sina.com.cn/article_6878579340_199feca8c00100niss.html?cre=tianyi&mod=pcpager_tech",
    ],
    "sohu": [
        "https://www.sohu.com/a/123456789_123456",
        "http://news.sohu.com/20050601/n225789219.shtml",
        "http://auto.sohu.com/06/35/article215403506.shtml",
    ],
    "qq": [
        "https://new.qq.com/rain/a/20230101A01ABC00",
        "https://news.qq.com/rain/a/20230101A01ABC00",
        "https://new.qq.com/omn/20190907/20190907A0BNPN00.html",
        "https://news.qq.com/a/20190101/001234.htm",
    ],
    "163": [
        "https://www.163.com/news/article/FJ9E9ICC0001899O.html",
        "https://www.163.com/dy/article/G33O1QTA05372UZS.html",
        "https://news.163.com/18/0503/10/DHBDQCUV0001875N.html",
        "http://biz.163.com/41210/1/17867KR700020QBK.html",
    ],
    "xinhua": [
        "http://www.news.cn/politics/2023-01/01/c_1129250000.htm",
        "http://www.xinhuanet.com/local/2020-02/19/c_1125597921.htm",
        "https://www.news.cn/politics/20240105/0123456789abcdef0123456789abcdef/c.html",
        "http://www.he.xinhuanet.com/news/2012-06/04/content_25340717.htm",
    ],
    "people": [
        "http://world.people.com.cn/n1/2019/0101/c1002-30497621.html",
        "http://politics.people.com.cn/GB/1024/4568922.html",
    ],
    "ifeng": ["https://news.ifeng.com/c/7rtKNyg6PU9", "http://nb.ifeng.com/a/20200911/14526474_0.shtml"],
    "thepaper": ["https://www.thepaper.cn/newsDetail_forward_1234567", "https://m.thepaper.cn/newsDetail_forward_1234567"],
    "chinanews": [
        "https://www.chinanews.com.cn/gn/2023/01-01/9999999.shtml",
        "http://www.chinanews.com/sh/2020/11-26/9347661.shtml",
    ],
}
# ... and list / channel / non-news pages of the same portals.
NOT_ARTICLE_EXAMPLES = {
    "sina": ["https://news.sina.com.cn/roll/", "http://blog.sina.com.cn/s/blog_580673590102zrj4.html",
             "http://video.sina.com.cn/p/news/o/doc/2018-11-23/073869081792.html"],
    "sohu": ["https://news.sohu.com/", "http://business.sohu.com/7/0404/94/column219789403.shtml"],
    "qq": ["https://new.qq.com/ch/sports", "https://new.qq.com/omv/video/m3001hppjc2"],
    "163": ["https://news.163.com/domestic/", "http://news.163.com/photoview/00AN0001/2309498.html"],
    "xinhua": ["http://www.news.cn/politics/", "http://www.xinhuanet.com/video/2019-12/10/c_1210388818.htm"],
    "people": ["http://opinion.people.com.cn/GB/427456/index.html"],
    "ifeng": ["https://v.ifeng.com/c/7rt84vmsUXP",
              "https://gentie.ifeng.com/view.html?docName=x&docUrl=https://news.ifeng.com/c/7rt84vmsUXP"],
    "thepaper": ["https://www.thepaper.cn/channel_25950", "https://www.thepaper.cn/asktopic_detail_10016534"],
    "chinanews": ["https://www.chinanews.com.cn/scroll-news/news1.html"],
}


@pytest.mark.parametrize("name", list(ARTICLE_EXAMPLES))
def test_shipped_examples_match_exactly_their_own_portal(shipped: dict[str, SiteConfig], name: str) -> None:
    for url in ARTICLE_EXAMPLES[name]:
        owners = [site.name for site in shipped.values() if site.is_article(url)]
        assert owners == [name], url
        assert not shipped[name].is_followable(url), url
    for url in NOT_ARTICLE_EXAMPLES[name]:
        assert not shipped[name].is_article(url), url


def test_shipped_start_urls_are_followable_list_pages(shipped: dict[str, SiteConfig]) -> None:
    for site in shipped.values():
        assert site.start_urls and site.follow_url_pattern is not None
        for url in site.start_urls:
            assert site.is_followable(url), (site.name, url)
            assert not site.is_article(url), (site.name, url)
            assert site.is_allowed(url), (site.name, url)


ARTICLE_PARAGRAPHS = (
    "临江市今天正式开通首条全自动驾驶公交线路，线路全长十二公里，沿途设置十八个站点，覆盖老城区和新区。",
    "市交通运输局负责人介绍，首批投入运营的十辆自动驾驶公交车均配备激光雷达和毫米波雷达，可以全天候运行。",
    "车辆在封闭测试场内累计完成了三万公里的测试，各项安全指标均达到设计要求，专家组已经完成验收。",
    "首日运营期间，线路共运送乘客两千余人次，未发生任何安全事故，不少市民专程前来体验。",
    "按照计划，明年上半年全市还将新增三条自动驾驶公交线路，覆盖高铁站和主要商业区，方便市民出行。",
)


def _block_matching(selector: str, number: int) -> str:
    """A prose block that ``selector`` selects (the shipped forms: .class, #id, [class^="prefix"])."""
    form = re.fullmatch(r'\.([\w-]+)|#([\w-]+)|\[class\^="([\w-]+)"\]', selector)
    assert form, f"a shipped selector of a new form, teach this test to build its element: {selector}"
    name, ident, prefix = form.groups()
    attribute = f'class="{name}"' if name else f'id="{ident}"' if ident else f'class="{prefix}3dZa1SAf"'
    return f"<div {attribute}><p>第{number}号附加段落：这段文字讲另外一件事情，读者在这里看到的并不是正文的内容。</p></div>"


@pytest.mark.parametrize("name", [site.name for site in load_sites() if site.remove_selectors])
def test_shipped_remove_selectors_take_their_blocks_out_of_the_extracted_article(name: str) -> None:
    (site,) = load_sites(only=name)
    blocks = "".join(_block_matching(selector, i) for i, selector in enumerate(site.remove_selectors))
    body = "".join(f"<p>{p}</p>" for p in ARTICLE_PARAGRAPHS)
    page = (f"<html><head><meta charset='utf-8'><title>自动驾驶公交开通</title></head><body><h1>自动驾驶公交开通</h1>"
            f"<div class='article'>{body}{blocks}</div></body></html>")
    markers = [f"第{i}号附加" for i in range(len(site.remove_selectors))]
    kept = extract_article(page, "http://example.com/a.html", remove_selectors=site.remove_selectors).text
    assert all(p in kept for p in ARTICLE_PARAGRAPHS)
    assert [m for m in markers if m in kept] == []
    # The premise: without the site's selectors the extractor keeps some of these blocks.
    unaided = extract_article(page, "http://example.com/a.html").text
    assert [m for m in markers if m in unaided], "every block goes anyway: this test would prove nothing"


def test_shipped_file_documents_every_entry_with_an_example_url() -> None:
    text = default_sites_path().read_text(encoding="utf-8")
    blocks = re.split(r"^\[\[site\]\]$", text, flags=re.M)[1:]
    assert len(blocks) == 9
    for block in blocks:
        comment = "\n".join(line for line in block.splitlines() if line.startswith("#"))
        assert re.search(r"e\.g\. https?://", comment), block[:200]


# --------------------------------------------------------------------------- real URLs (shared data)

# Pages a news deduplicator does not store although their links carry headlines: video, photo
# galleries, blogs, forums, live rooms, topic / keyword / column pages, Q&A, shops, ads.  The
# article patterns must reject these; a headline link that is none of these must be an article.
NON_NEWS_URL = re.compile(
    r"""//(?:v|video|slide(?:\.[a-z]+)*|photo|blog|bbs(?:\.[a-z]+)*|club(?:\.[a-z]+)*|forum(?:\.[a-z]+)*
           |live(?:\.[a-z]+)*|zhibo|comment\d*(?:\.[a-z]+)*|gentie|yuedu|[a-z]+\.yuedu|piao|mall|baoxian
           |vip(?:\.[a-z]+)?|reg\d*(?:\.[a-z]+)*|adclient|lz(?:\.[a-z]+)*|zhongce|guba|book|mp\.weixin
           |www\.yc)\.
       |/(?:photoview|photonew|photos?|video|special|zt|keywords|s\d{4}|chart|omv|column|subject|[a-z]+_bbs
           |lianzai|bozhu|room|product|courses|media|cinema|source|book_reader|asktopic_detail_|list_
           |channel_|gov_|ch/|detail/\d+/\d+\.html)""",
    re.VERBOSE,
)
CJK = re.compile(r"[\u4e00-\u9fff]")
HEADLINE_MIN_CJK = 8
# A link whose text is just an outlet's name is a source credit (来源：中国新闻网) to the original article.
SOURCE_CREDIT_NAMES = frozenset(
    {"中国新闻网", "中新网", "新华网", "新华社", "人民网", "澎湃新闻", "凤凰网", "腾讯新闻", "网易新闻", "搜狐新闻", "新浪新闻"}
)
# Relative links need the page's URL; where no page URL is recorded, the folder tells the host.
FOLDER_BASE = {
    "gne/tests/thepaper": "https://www.thepaper.cn/",
    "gne/visiable_test/thepaper": "https://www.thepaper.cn/",
    "gne/test_list_page/163": "https://news.163.com/",
}
PAGE_GLOBS = (
    "gne/tests/*/*.html",
    "gne/visiable_test/*/*.html",
    "gne/test_list_page/*/*.html",
    "cwced/original/*.html",
    "cx-extractor-163/**/*.htm*",
    "trafilatura-zh/tests/**/*.html",
    "newspaper-goose-zh/**/*.html",
    "readability-zh/test/test-pages/*/source.html",
)


def _decode(data: bytes) -> str:
    # Enough to read links and headlines; the real decoder lives in newsdedup.extract.
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("gb18030", errors="replace")


def _unwrap_wayback(url: str) -> str:
    match = re.match(r"https?://web\.archive\.org/web/\d+[a-z_]*/(https?://.+)", url)
    return match.group(1) if match else url


def _site_for_host(sites: dict[str, SiteConfig], url: str) -> SiteConfig | None:
    for site in sites.values():
        if site.is_allowed(url):
            return site
    return None


@lru_cache(maxsize=1)
def _known_page_urls(data: Path) -> dict[str, str]:
    """URL -> where it was recorded, for saved article pages whose own URL is known."""
    found: dict[str, str] = {}
    for line in (data / "gne" / "inventory.derived.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) > 4 and fields[4].startswith("http"):
            found[html.unescape(fields[4])] = f"gne/{fields[0]} (inventory)"
    for url in json.loads((data / "trafilatura-zh" / "evaldata_zh.derived.json").read_text(encoding="utf-8")):
        found[_unwrap_wayback(url)] = "trafilatura-zh/evaldata_zh.derived.json"
    for path in sorted((data / "newspaper-goose-zh").rglob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        for key in ("url", "final_url"):
            value = record.get(key) or record.get("expected", {}).get(key)
            if isinstance(value, str) and value.startswith("http"):
                found[value] = str(path.relative_to(data))
    for path in sorted(data.glob("*/MANIFEST.md")):  # page URLs quoted in the manifests
        for url in re.findall(r"https?://[^\s`)>\];,]+", path.read_text(encoding="utf-8")):
            if re.search(r"\.s?html?$", url):
                found.setdefault(url, str(path.relative_to(data)))
    for path in sorted(data.glob("readability-zh/test/test-pages/*/source.html")):
        doc = lxml.html.fromstring(_decode(path.read_bytes()))
        for url in doc.xpath("//link[@rel='canonical']/@href | //meta[@property='og:url']/@content"):
            found[url] = str(path.relative_to(data))
    return found


@lru_cache(maxsize=1)
def _page_links(data: Path) -> tuple[tuple[str, str, str], ...]:
    """(absolute URL, anchor text, page) for every link on every saved page."""
    recorded = {where.split(" ")[0]: url for url, where in _known_page_urls(data).items()}
    links = []
    pages = sorted({path for pattern in PAGE_GLOBS for path in data.glob(pattern)})
    for page in pages:
        relative = str(page.relative_to(data))
        base = recorded.get(relative) or FOLDER_BASE.get(str(Path(relative).parent))
        doc = lxml.html.fromstring(_decode(page.read_bytes()))
        for anchor in doc.iter("a"):
            href = (anchor.get("href") or "").strip()
            if href.startswith("//"):
                href = "http:" + href
            if not re.match(r"https?://", href):
                if not base or not href or href.startswith(("javascript:", "#", "mailto:")):
                    continue
                href = urljoin(base, href)
            text = re.sub(r"\s+", "", anchor.text_content())
            links.append((href, text, relative))
    return tuple(links)


def _is_index_like(url: str) -> bool:
    """Front, channel and list pages by URL shape alone: a directory, an index file, or no digits."""
    path = urlsplit(url).path
    last = path.rsplit("/", 1)[-1]
    return (
        path in ("", "/")
        or path.endswith("/")
        or re.fullmatch(r"(?:index|default)(?:_?\d+)?\.\w+", last) is not None
        or not re.search(r"\d", path)
    )


@pytest.mark.shared_data
def test_article_patterns_match_the_urls_of_real_saved_articles(shared_data: Path) -> None:
    sites = {site.name: site for site in load_sites()}
    checked: collections.Counter[str] = collections.Counter()
    failures = []
    for url, where in sorted(_known_page_urls(shared_data).items()):
        site = _site_for_host(sites, url)
        if site is None or NON_NEWS_URL.search(url):  # e.g. a WeChat article saved as qq.com
            continue
        checked[site.name] += 1
        owners = [s.name for s in sites.values() if s.is_article(url)]
        if owners != [site.name] or site.is_followable(url):
            failures.append((url, where, owners))
    print(f"\nreal saved-article URLs checked per portal: {dict(sorted(checked.items()))}")
    assert not failures, failures
    # The shared data holds saved articles of at least these portals with a known URL.
    assert {"sina", "163", "ifeng", "xinhua", "sohu"} <= set(checked), checked


@pytest.mark.shared_data
def test_article_patterns_classify_real_links(shared_data: Path) -> None:
    """Every headline (or source-credit) link to a configured portal is an article unless it is
    a non-news kind; list, channel and index links and non-news kinds never are."""
    sites = {site.name: site for site in load_sites()}
    headline: dict[str, set[str]] = collections.defaultdict(set)
    excluded: dict[str, set[str]] = collections.defaultdict(set)
    index: dict[str, set[str]] = collections.defaultdict(set)
    unmatched_headlines, matched_non_articles = [], []
    for url, text, page in _page_links(shared_data):
        site = _site_for_host(sites, url)
        if site is None:
            continue
        if _is_index_like(url):
            index[site.name].add(url)
            if site.is_article(url):
                matched_non_articles.append((url, text[:20], page))
        elif NON_NEWS_URL.search(url):
            excluded[site.name].add(url)
            if site.is_article(url):
                matched_non_articles.append((url, text[:20], page))
        elif len(CJK.findall(text)) >= HEADLINE_MIN_CJK or text in SOURCE_CREDIT_NAMES:
            headline[site.name].add(url)
            if not site.is_article(url):
                unmatched_headlines.append((url, text[:20], page))
        # Other links (images, "[详细]", short labels) are neither asserted nor counted.
    summary = {
        name: {"headline": len(headline[name]), "index": len(index[name]), "non-news": len(excluded[name])}
        for name in sites
        if headline[name] or index[name] or excluded[name]
    }
    print(f"\ndistinct real link URLs checked per portal: {summary}")
    assert not unmatched_headlines, sorted(set(unmatched_headlines))[:40]
    assert not matched_non_articles, sorted(set(matched_non_articles))[:40]
    assert sum(len(urls) for urls in headline.values()) > 1000  # the check really ran on data
    assert {"sina", "163", "qq", "ifeng", "thepaper", "xinhua", "people", "sohu"} <= set(headline)


@pytest.mark.shared_data
def test_real_163_list_pages_are_followable_and_link_to_articles(shared_data: Path) -> None:
    (site,) = load_sites(only="163")
    assert site.is_followable("https://news.163.com/")  # the saved list pages are news.163.com
    links = [(url, page) for url, _, page in _page_links(shared_data) if page.startswith("gne/test_list_page/163/")]
    articles = {url for url, _ in links if site.is_article(url)}
    followable = {url.split("#")[0] for url, _ in links if site.is_followable(url)}
    assert len(articles) > 100, len(articles)
    # Channel pages linked from the list page are followed; articles are not "followed" as lists.
    assert {"https://news.163.com/domestic/", "https://news.163.com/world/"} <= followable, followable
    assert not articles & followable


# Saved pages per portal folder of gne, with GNE's extracted body for some (result.txt).
GNE_FOLDER_SITE = {"sina": "sina", "163": "163", "qq": "qq", "thepaper": "thepaper", "ifeng": "ifeng",
                   "people": "people", "xinhuanet": "xinhua"}


def _gne_bodies(data: Path) -> dict[str, str]:
    text = (data / "gne" / "result.txt").read_text(encoding="utf-8")
    bodies = {}
    for match in re.finditer(r">{5,}(tests/[^>\n]+)>{5,}\n(\{.*?\n\})", text, re.S):
        bodies[match.group(1)] = json.loads(match.group(2))["content"]
    return bodies


@pytest.mark.shared_data
def test_remove_selectors_hit_real_blocks_and_keep_the_article_body(shared_data: Path) -> None:
    sites = {site.name: site for site in load_sites()}
    bodies = _gne_bodies(shared_data)
    removed_chars: collections.Counter[str] = collections.Counter()
    checked_bodies = 0
    for folder, name in GNE_FOLDER_SITE.items():
        site = sites[name]
        pages = sorted((shared_data / "gne" / "tests" / folder).glob("*.html"))
        pages += sorted((shared_data / "gne" / "visiable_test" / folder).glob("*.html"))
        for page in pages:
            doc = lxml.html.fromstring(_decode(page.read_bytes()))
            for selector in site.remove_selectors:
                for element in CSSSelector(selector, translator="html")(doc):
                    if element.getparent() is not None:
                        removed_chars[name] += len(element.text_content())
                        element.drop_tree()
            kept = re.sub(r"\s+", "", doc.text_content())
            body = bodies.get(str(page.relative_to(shared_data / "gne")))
            if body:
                lines = [re.sub(r"\s+", "", line) for line in body.splitlines() if len(line.strip()) >= 15]
                lost = [line for line in lines if line not in kept]
                assert not lost, (page.name, name, lost[:3])
                checked_bodies += 1
    assert checked_bodies >= 10
    for name in GNE_FOLDER_SITE.values():
        assert removed_chars[name] > 0, f"no remove_selector of {name} matched a saved {name} page"


@pytest.mark.parametrize("key, pattern", [
    ("article_url_pattern", r"/a/\d+\.html"),  # written as Scrapy's LinkExtractor(allow=...) users write it
    ("article_url_pattern", r"^/news/\d+"),
    ("follow_url_pattern", r"/roll/index_\d+\.html"),
])
def test_a_path_only_pattern_is_refused_with_the_whole_url_form(key: str, pattern: str) -> None:
    patterns = {"article_url_pattern": r"https?://x\.com/a/\d+", key: pattern}
    text = '[[site]]\nname = "x"\nstart_urls = ["https://x.com/"]\nallowed_domains = ["x.com"]\n' + "".join(
        f"{name} = '{value}'\n" for name, value in patterns.items())
    with pytest.raises(SiteConfigError, match=re.escape(f"{key} '{pattern}' starts with '/'")) as error:
        parse_sites(text)
    assert "https?://[^/]+" + pattern.lstrip("^") in str(error.value)


def test_a_whole_url_pattern_matches_a_path_only_mistake_corrected() -> None:
    [site] = parse_sites(
        '[[site]]\nname = "x"\nstart_urls = ["https://x.com/"]\nallowed_domains = ["x.com"]\n'
        "article_url_pattern = 'https?://[^/]+/a/\\d+\\.html'\n"
    )
    assert site.is_article("https://x.com/a/12.html?from=roll") and not site.is_article("https://x.com/b/12.html")
