"""Article metadata from a parsed Chinese news page: title, publication time, author, source, canonical URL.

Each field is read from the most reliable place first:

- title: ``og:title`` / the ``<h1>`` that agrees with ``<title>``, then ``<title>`` with the site suffix
  (``"... _新浪网"``, ``"... - 搜狐财经"``) cut off;
- published_at: publication ``<meta>`` tags and JSON-LD, then the first date written near the headline
  in the visible text (``2018年05月03日 10:21``, ``2018-05-03 10:21:00``, ``2018/5/3``; on the day the URL
  gives, when it gives one), then the date in the URL (``/2018-05/03/``, ``/20180503/``). Dates that open or
  close a span in the text (``11月1日至11月30日``, ``截止2006年8月10日``, ``5月3日起施行``) are deadlines and
  effective dates, never the publication. Normalised to ISO 8601 with an offset, see :func:`normalize_datetime`;
- author: byline lines (作者/记者/文/执笔, then 编辑/责任编辑), then ``<meta name=author>`` and
  trafilatura's author;
- source: the outlet a reprint names (``来源：新华社`` -> ``新华社``);
- canonical_url: ``<link rel=canonical>``, ``og:url``, else the URL the page was fetched from.

>>> normalize_datetime("2018年05月03日 10:21")
'2018-05-03T10:21:00+08:00'
>>> normalize_datetime("2018-05-03T02:21:00Z")
'2018-05-03T02:21:00+00:00'
>>> clean_title("四年前中500万现穷困潦倒__商贸_产业资讯_新浪网")
'四年前中500万现穷困潦倒'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import urljoin, urlsplit

from lxml import etree
from lxml.html import HtmlElement

from newsdedup.clock import CHINA_OFFSET

__all__ = [
    "PageMetadata",
    "extract_metadata",
    "normalize_datetime",
    "find_datetimes",
    "url_date",
    "clean_title",
    "find_author",
    "find_source",
    "visible_text",
    "CHINA_OFFSET",
]

# Chinese portals almost never state a time zone; they publish in China Standard Time (UTC+8, no daylight
# saving). A page without an offset is therefore assumed to be +08:00 (one definition, in newsdedup.monitoring.timespec).

# (?<!\s): a separator's leading spaces are matched from the start of their run only, so a long run of
# spaces is scanned once, not once for every position in it.
_TITLE_SEPARATORS = re.compile(r"(?<!\s)\s*(?:_{1,2}|\||｜|丨|--?|—+|–|::|»|·|&gt;|>)\s*")
_SKIP_TEXT_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "select", "option", "iframe"})
_BLOCK_TAGS = frozenset(
    "p div br li tr td th h1 h2 h3 h4 h5 h6 table ul ol dl dt dd section article header footer blockquote pre".split()
)

_PUBLISHED_META = (
    "article:published_time", "og:published_time", "og:release_date", "published_time", "article:published",
    "pubdate", "publishdate", "publish_date", "publishtime", "publish-time", "pubtime", "datepublished",
    "dc.date.issued", "dc.date", "dcterms.date", "dcterms.created", "date", "sailthru.date", "parsely-pub-date",
    "weibo:article:create_at", "createdate", "creationdate", "firstpublishedtime", "releasedate", "ptime",
    "article:modified_time",
)
_DATE_RE = re.compile(
    # 2018-05-03, 2018/5/3, 2018.05.03 (no spaces: "2004 - 01/01/2005" is a range, not a date), 2018年5月3日
    r"(?<!\d)(?P<y>(?:19|20)\d{2})(?:(?P<sep>[-/.])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?!\d)|"
    r"\s*年\s*(?P<m2>\d{1,2})\s*月\s*(?P<d2>\d{1,2})\s*日?)"
    r"(?:\s*(?:T|\s|&nbsp;)?\s*(?:(?P<ampm>上午|下午|晚上|凌晨|早上|中午)\s*)?"
    r"(?P<H>\d{1,2})\s*[:：时點点]\s*(?P<M>\d{1,2})(?:\s*[:：分]\s*(?P<S>\d{1,2}))?(?:\.\d+)?\s*"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2}(?![\d:]))?)?"
)
# ISO-like values in <meta> content: 2018-05-03T10:21:00+0800, 20180503T102100.
# 9/17/2004 5:54:13 AM: month first, the convention that writes AM/PM.
_US_DATE_RE = re.compile(
    r"(?<!\d)(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>(?:19|20)\d{2})\s+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?"
    r"\s*(?P<ampm>AM|PM|am|pm)"
)
# A date in an article URL: /2018-05-03/, /2018/0503/, /2018-05/03/ (xinhua), /20180503/ (four-digit years only:
# 163's /18/0503/ is too ambiguous to trust).
_URL_DATE_RE = re.compile(
    r"(?<![\d])(?P<y>(?:19|20)\d{2})[-/_]?(?P<m>0[1-9]|1[0-2])[-/_]?(?P<d>0[1-9]|[12]\d|3[01])(?![\d])"
)
# A date that opens or closes a span is a deadline or an effective date mentioned in the text
# ("报名日期为2003年11月1日至2003年11月30日", "截止2006年8月10日", "自2018年5月3日起施行").
_SPAN_BEFORE = re.compile(r"(?:截止|截至|至|到|自|从|直到|期限为?|日期为)\s*$")
_SPAN_AFTER = re.compile(r"^\s*(?:至|到|～|~|—|起|以前|之前|前|止|截止)")
_COMPACT_DATE_RE = re.compile(r"^(?P<y>(?:19|20)\d{2})(?P<m>\d{2})(?P<d>\d{2})(?:T?(?P<H>\d{2})(?P<M>\d{2})(?P<S>\d{2})?)?")

# A Chinese name, or a Latin user name (not an HTML attribute such as size="20" leaking into the text).
_NAME = r"[\u4e00-\u9fff·]{2,4}|[A-Za-z][\w.&\-]{1,30}(?![\w=])"
_CJK_NAME = r"[\u4e00-\u9fff·]{2,4}"
# Several names are separated by spaces, 、 or commas, never by a line break.
# A word followed by a colon is the next label ("作者： 流泉 访问统计："), not a name.
_NAMES = rf"(?:{_NAME})(?:[ \t、，,/]+(?:{_NAME})(?![ \t]*[:：]))*"
# Byline labels, strongest first. 记者 lines ("新京报记者 彭冲 山东冠县报道") are bylines too.
_AUTHOR_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"(?:作\s*者|撰\s*文|执\s*笔(?:人)?|署\s*名)\s*[:：]\s*(?P<n>{_NAMES})"),
    re.compile(rf"(?:^|[\s（(【\[])文\s*[/／|｜:：]\s*(?P<n>{_NAMES})"),
    # "新京报记者 彭冲 山东冠县报道": the names end at a space, a bracket, 摄, or " 报道".
    re.compile(
        rf"记者[ \t:：]+(?P<n>{_NAMES})"
        rf"(?=[ \t]*(?:\n|$|[）)】\]]|摄|/文|发自)|[ \t]+[\u4e00-\u9fff]{{0,8}}报道)"
    ),
    # "本报记者罗科苏盈发自北京", "记者马俊峰/文": no space, but a closing word right after the name.
    re.compile(rf"记者(?P<n>{_NAMES})(?=[ \t]*(?:[）)】\]]|摄|/文|发自))"),
    # Blogs and forums: "由海姑娘张贴", "本贴由大卫于2005年...", "ggjjzhzz 发表于 2005-9-15", "by duscha".
    re.compile(rf"由\s*(?P<n>{_NAME})\s*(?:张贴|于\s*(?:19|20)\d\d)"),
    re.compile(rf"(?:^|\n)(?P<n>{_NAME})\s+发表于\s*(?:19|20)\d\d"),
    # A closing "（姚峰 上海报道）" / "（常书香 马丹阳）" at the end of a paragraph.
    re.compile(rf"[（(][ \t]*(?P<n>{_CJK_NAME}(?:[ \t、]+{_CJK_NAME})*?)[ \t]+[\u4e00-\u9fff]{{0,8}}报道[ \t]*[）)]"),
    re.compile(rf"[（(][ \t]*(?P<n>{_CJK_NAME}(?:[ \t、]+{_CJK_NAME})+)[ \t]*[）)][ \t]*(?:\n|$)"),
)
_EDITOR_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"(?<!责任)(?<!责)编\s*辑\s*[:：]\s*(?P<n>{_NAMES})"),
    re.compile(rf"(?:责任编辑|责编)\s*[:：]\s*(?P<n>{_NAMES})"),
)
# Words a byline regex would take for a name although they are not one.
_NOT_NAMES = frozenset(
    "本报 本刊 本台 记者 编辑 通讯员 实习生 实习记者 特约记者 报道 来源 发布 时间 日期 阅读 评论 我来说两句 首页 新闻 "
    "责任编辑 作者 佚名 未知 网友 admin 摄影 图片 原创 转载 供稿 不详 暂无".split()
)
# <meta name=author> often names the site or its software rather than a person.
_ORGANISATION = re.compile(r"(?i)team|publish|网络|网站|出版社|公司|集团|中心|编辑部|新闻网|\bweb\b|powered|\.com|\.cn")
_SOURCE_RE = re.compile(
    r"(?:文章来源|本文来源|稿件来源|信息来源|新闻来源|稿源|来源|来自|出处|來源)\s*[:：]\s*[\[【《(（]?\s*"
    r"(?P<s>[^\s\]】》)）|｜,，。;；:：<>\"'“”]{2,24})"
)
_SOURCE_STOP = re.compile(r"(?:作者|编辑|责任编辑|记者|发布|时间|日期|浏览|点击|阅读|字号|\d{4}[-年/]).*$")


@dataclass(frozen=True)
class PageMetadata:
    """Metadata of one page; any field may be None when the page does not say."""

    title: str | None
    published_at: str | None
    author: str | None
    source: str | None
    canonical_url: str | None


# visible_text's reading as an XSLT stylesheet: libxslt walks the tree in C (~0.8 ms a page of ../shared/data against
# ~1.8 ms for lxml's iterwalk driven from Python). Skipped elements give nothing (their tails are text nodes of the parent,
# read in their place), a block gives a line break before and after its content, comments and processing
# instructions nothing; text, tails after comments included, comes in document order, as the walk reads it. Only the
# element asked for is read: libxml2 may leave nodes beside a document's root element (see the extractor's _parse).
_VISIBLE_TEXT_XSLT = etree.XSLT(etree.XML(f"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="utf-8"/>
<xsl:template match="/"><xsl:apply-templates select="*[1]"/></xsl:template>
<xsl:template match="{"|".join(sorted(_SKIP_TEXT_TAGS))}"/>
<xsl:template match="{"|".join(sorted(_BLOCK_TAGS - _SKIP_TEXT_TAGS))}"><xsl:text>&#10;</xsl:text><xsl:apply-templates/><xsl:text>&#10;</xsl:text></xsl:template>
<xsl:template match="comment()|processing-instruction()"/>
</xsl:stylesheet>"""))


def visible_text(root: HtmlElement, *, limit: int = 2_000_000) -> str:
    """The page's readable text with one line per block (scripts, styles and the head left out).

    Reading stops once ``limit`` characters of element text are read.
    """
    raw = str(_VISIBLE_TEXT_XSLT(root))
    if len(raw) < limit:  # then the walk below reads all of it too: the same text, in C
        return _fold_lines(raw)
    return _visible_text_walk(root, limit)


_BLANK_RUN = re.compile(r"[ \t\r\f\v]+")


def _fold_lines(text: str) -> str:
    """Non-breaking and ideographic spaces as spaces, runs of spaces as one, a line break with the space around it
    as one, the ends stripped."""
    text = _BLANK_RUN.sub(" ", text.replace("\xa0", " ").replace("\u3000", " "))
    # Line by line, not re.sub(r"\s*\n\s*"): that pattern gives back a blank run without a line break one
    # character at a time from every start in it, n²/2 steps (16,000 &ensp; in a paragraph took 0.5 s, 32,000
    # 2.3 s). str.strip and \s agree on what is blank; blank lines go, as the pattern folded them.
    return "\n".join(line for line in (part.strip() for part in text.split("\n")) if line)


def _visible_text_walk(root: HtmlElement, limit: int) -> str:
    """:func:`visible_text` read from Python, stopping at ``limit`` (a page holding that much text)."""
    parts: list[str] = []
    size = 0
    # lxml's C walk (iterwalk) instead of a Python stack: 3.8 -> 2.7 ms CPU on a 150 KB page.
    # It yields elements only, so the tails of comments and processing instructions go in where a reader
    # passes them: after the element before them, or after their parent's own text.
    after: dict[HtmlElement, list[str | None]] = {}
    first: dict[HtmlElement, list[str | None]] = {}
    for node in root.iter(etree.Comment, etree.ProcessingInstruction, etree.Entity):
        parent = node.getparent()
        if node is root or parent is None:
            continue
        before = node.getprevious()
        while before is not None and not isinstance(before.tag, str):
            before = before.getprevious()
        (after if before is not None else first).setdefault(before if before is not None else parent, []).append(node.tail)

    def loose(tails: list[str | None]) -> bool:
        """Add the tails; False when the limit stopped the reading first."""
        for tail in tails:
            if size >= limit:
                return False
            if tail:
                parts.append(tail)
        return True

    walker = etree.iterwalk(root, events=("start", "end"))
    for event, node in walker:
        tag = node.tag
        if tag in _SKIP_TEXT_TAGS:
            if event == "end":
                continue  # its tail went in at its start
            if size >= limit:
                break
            if node.tail:
                parts.append(node.tail)
            walker.skip_subtree()
            tails = after.get(node)
        else:
            if size >= limit:
                break
            if tag in _BLOCK_TAGS:
                parts.append("\n")
            piece = node.text if event == "start" else node.tail
            if piece:
                parts.append(piece)
                size += len(piece)
            tails = (first if event == "start" else after).get(node)
        if tails and not loose(tails):
            break
    return _fold_lines("".join(parts))


def _norm_space(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").replace("\xa0", " ").replace("\u3000", " ")).strip()


def clean_title(title: str, reference: str | None = None) -> str:
    """Strip site-name suffixes from a ``<title>``; ``reference`` (an h1) wins when the title starts with it."""
    title = _norm_space(title)
    if reference:
        ref = _norm_space(reference)
        if ref and len(ref) >= 4 and title.startswith(ref):
            return ref
    parts = [p for p in _TITLE_SEPARATORS.split(title) if p.strip()]
    if len(parts) <= 1:
        return title
    # The headline comes first on Chinese portals ("标题_频道_站点"); a very short first part is a site prefix
    # ("新浪网 - 标题"), then the longest part is the headline.
    first = parts[0].strip()
    if len(first) >= 6 or len(first) >= max(len(p) for p in parts):
        return first
    return max(parts, key=len).strip()


def _meta_values(root: HtmlElement) -> dict[str, str]:
    values: dict[str, str] = {}
    for meta in root.iter("meta"):
        key = (meta.get("property") or meta.get("name") or meta.get("itemprop") or meta.get("http-equiv") or "")
        content = meta.get("content")
        if key and content and content.strip():
            values.setdefault(key.strip().lower(), content.strip())
    return values


def _json_ld(root: HtmlElement) -> list[dict]:
    found: list[dict] = []
    for script in root.iter("script"):
        if (script.get("type") or "").lower() != "application/ld+json" or not script.text:
            continue
        try:
            data = json.loads(script.text)
        except (ValueError, RecursionError):
            continue
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                found.append(item)
                graph = item.get("@graph")
                if isinstance(graph, list):
                    stack.extend(graph)
    return found


def _h1_texts(root: HtmlElement, *, shortest: int = 4) -> list[str]:
    return [t for t in (_norm_space(h.text_content()) for h in root.iter("h1")) if shortest <= len(t) <= 120]


def _find_title(root: HtmlElement, meta: dict[str, str], ld: list[dict]) -> str | None:
    title_el = root.find(".//title")
    html_title = _norm_space(title_el.text_content()) if title_el is not None else ""
    h1s = _h1_texts(root)
    # An h1 that the <title> starts with (or contains) is the headline without the site suffix; a short one
    # ("金锺国") only when the title starts with it.
    for h1 in _h1_texts(root, shortest=2):
        if html_title and (h1 in html_title if len(h1) >= 4 else html_title.startswith(h1)):
            return h1
    for key in ("og:title", "twitter:title"):
        if meta.get(key):
            return clean_title(meta[key], h1s[0] if h1s else None)
    for item in ld:
        headline = item.get("headline")
        if isinstance(headline, str) and headline.strip():
            return _norm_space(headline)
    if html_title:
        return clean_title(html_title, h1s[0] if h1s else None) or None
    return h1s[0] if h1s else None


def _moment(parts: dict[str, str | None], default_offset: timezone) -> datetime | None:
    try:
        year = int(parts["y"])  # type: ignore[arg-type]
        month = int(parts.get("m") or parts.get("m2") or 0)
        day = int(parts.get("d") or parts.get("d2") or 0)
        hour = int(parts["H"]) if parts.get("H") else 0
        minute = int(parts["M"]) if parts.get("M") else 0
        second = int(parts["S"]) if parts.get("S") else 0
        ampm = (parts.get("ampm") or "").lower()
        if ampm in ("下午", "晚上", "pm") and hour < 12:
            hour += 12
        elif ampm in ("am", "凌晨") and hour == 12:
            hour = 0
        tzinfo = default_offset
        tz = parts.get("tz")
        if tz:
            if tz == "Z":
                tzinfo = timezone.utc
            else:
                sign = 1 if tz[0] == "+" else -1
                digits = tz[1:].replace(":", "")
                tzinfo = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))
        moment = datetime(year, month, day, hour, minute, second, tzinfo=tzinfo)
    except (ValueError, OverflowError, TypeError):
        return None
    if not 1990 <= moment.year <= datetime.now().year + 1:
        return None
    return moment


def _date_matches(text: str, default_offset: timezone) -> list[tuple[int, int, datetime, bool]]:
    """Every valid date in ``text`` as (start, end, datetime, has_time), in text order."""
    found = []
    for regex in (_DATE_RE, _US_DATE_RE):
        for match in regex.finditer(text):
            parts = match.groupdict()
            moment = _moment(parts, default_offset)
            if moment is not None:
                found.append((match.start(), match.end(), moment, bool(parts.get("H"))))
    found.sort(key=lambda item: item[0])
    return found


def find_datetimes(text: str, *, default_offset: timezone = CHINA_OFFSET) -> list[tuple[int, datetime, bool]]:
    """Every valid date in ``text`` as (position, datetime, has_time), in text order."""
    return [(start, moment, has_time) for start, _, moment, has_time in _date_matches(text, default_offset)]


def around_datetimes(text: str) -> str | None:
    """``text`` without its dates, when one of them has a time of day; None when none has.

    >>> around_datetimes("每日经济新闻 2018-06-14 13:20:39")
    '每日经济新闻 '
    >>> around_datetimes("2018年6月14日，美联储宣布加息") is None
    True
    """
    matches = _date_matches(text, CHINA_OFFSET)
    if not any(has_time for *_, has_time in matches):
        return None
    pieces, at = [], 0
    for start, end, _, _ in matches:
        if start >= at:
            pieces.append(text[at:start])
            at = end
    return "".join(pieces) + text[at:]


def _dateline_candidates(text: str) -> list[tuple[int, datetime, bool]]:
    """The dates of ``text`` that can be a publication time: not one end of a span (see _SPAN_BEFORE)."""
    return [
        (start, moment, has_time)
        for start, end, moment, has_time in _date_matches(text, CHINA_OFFSET)
        if not _SPAN_BEFORE.search(text[max(0, start - 6):start]) and not _SPAN_AFTER.match(text[end:end + 4])
    ]


def url_date(url: str | None) -> datetime | None:
    """The publication day an article URL states, if it states one (midnight China time).

    >>> url_date("http://www.xinhuanet.com/local/2020-02/19/c_1125597921.htm").date().isoformat()
    '2020-02-19'
    >>> url_date("https://news.sina.com.cn/c/2018-05-03/doc-ihacuuvt1234567.shtml").date().isoformat()
    '2018-05-03'
    >>> url_date("https://www.163.com/dy/article/H1234567.html") is None
    True
    """
    if not url:
        return None
    path = urlsplit(url).path
    for match in _URL_DATE_RE.finditer(path):
        moment = _moment({**match.groupdict(), "H": None}, CHINA_OFFSET)
        if moment is not None:
            return moment
    return None


def normalize_datetime(value: str, *, default_offset: timezone = CHINA_OFFSET) -> str | None:
    """Parse a date/time written the ways Chinese pages write it; ISO 8601 with an offset, or None.

    A missing time becomes 00:00:00; a missing offset becomes ``default_offset`` (+08:00, see
    :data:`CHINA_OFFSET`).
    """
    if not value or not value.strip():
        return None
    found = find_datetimes(value.strip(), default_offset=default_offset)
    if found:
        return found[0][1].isoformat()
    match = _COMPACT_DATE_RE.search(value.strip())
    moment = _moment(match.groupdict(), default_offset) if match else None
    return moment.isoformat() if moment else None


def _find_published(root: HtmlElement, meta: dict[str, str], ld: list[dict], text: str, title: str | None,
                    url: str | None = None) -> str | None:
    declared: str | None = None
    for key in _PUBLISHED_META:
        if key in meta:
            declared = normalize_datetime(meta[key])
            if declared:
                break
    if not declared:
        for item in ld:
            for key in ("datePublished", "dateCreated", "uploadDate"):
                if isinstance(item.get(key), str):
                    declared = normalize_datetime(item[key])
                    if declared:
                        break
            if declared:
                break
    if not declared:
        for el in root.iter("time"):
            declared = normalize_datetime(el.get("datetime") or el.text_content() or "")
            if declared:
                break
    # The byline under the headline carries the publication time; dates elsewhere (related lists, the
    # footer's copyright years, "blog created on") belong to other things.
    start = 0
    if title:
        position = text.find(title[:12])
        if position >= 0:
            start = position
    near = (_dateline_candidates(text[start : start + 1500]) or _dateline_candidates(text[:start])[-1:]
            or _dateline_candidates(text)[:1])
    stated_day = url_date(url)
    if stated_day is not None and not declared:
        # The URL says the day: a byline of that day beats other dates near the headline (related items, the
        # day's edition); without one, the URL's day is the best the page offers.
        on_day = [item for item in near if item[1].date() == stated_day.date()]
        near = on_day or [(0, stated_day, False)]
    if declared:
        if "T00:00:00" in declared:
            # A <meta> date without the time: the byline may give the time of that same day.
            for _, moment, has_time in near:
                if has_time and moment.date().isoformat() == declared[:10]:
                    return moment.isoformat()
        return declared
    if not near:
        return None
    # Prefer the first date that states a time (a byline) over a bare date (often a mention in the text).
    for _, moment, has_time in near[:5]:
        if has_time:
            return moment.isoformat()
    return near[0][1].isoformat()


def _clean_names(raw: str) -> str | None:
    names = [n for n in re.split(r"[\s、，,/]+", raw.strip()) if n]
    kept = []
    for name in names:
        for word in ("报道", "摄影", "摄", "发自", "编辑", "责任编辑", "通讯员", "实习生"):
            if name.endswith(word) and len(name) > len(word):
                name = name[: -len(word)]
        if name and name not in _NOT_NAMES and not name.isdigit():
            kept.append(name)
    return " ".join(kept) or None


def find_author(text: str, meta_author: str | None = None) -> str | None:
    """The byline author(s) in ``text`` (space-separated), else ``meta_author``, else an editor."""
    for pattern in _AUTHOR_PATTERNS:
        for match in pattern.finditer(text):
            names = _clean_names(match.group("n"))
            if names:
                return names
    if meta_author and not _ORGANISATION.search(meta_author):
        names = _clean_names(meta_author)
        if names:
            return names
    for pattern in _EDITOR_PATTERNS:
        for match in pattern.finditer(text):
            names = _clean_names(match.group("n"))
            if names:
                return names
    return None


def find_source(text: str) -> str | None:
    """The outlet named after 来源 (``"来源：新华社 编辑：某某"`` -> ``"新华社"``)."""
    for match in _SOURCE_RE.finditer(text):
        source = _SOURCE_STOP.sub("", match.group("s")).strip(" -_·")
        if len(source) >= 2 and not source.isdigit():
            return source
    return None


def _find_canonical(root: HtmlElement, meta: dict[str, str], url: str | None) -> str | None:
    for link in root.iter("link"):
        rel = (link.get("rel") or "").lower().split()
        href = (link.get("href") or "").strip()
        if "canonical" in rel and href:
            return urljoin(url, href) if url else href
    og = meta.get("og:url")
    if og and og.startswith(("http://", "https://", "/")):
        return urljoin(url, og) if url else og
    return url


def extract_metadata(root: HtmlElement, url: str | None = None, *, text: str | None = None) -> PageMetadata:
    """Metadata of the page ``root`` (the whole parsed document, before any boilerplate removal).

    ``text`` is the page's :func:`visible_text` if the caller already has it.
    """
    meta = _meta_values(root)
    ld = _json_ld(root)
    if text is None:
        text = visible_text(root)
    title = _find_title(root, meta, ld)
    published = _find_published(root, meta, ld, text, title, url)
    meta_author = meta.get("author") or meta.get("article:author") or meta.get("dc.creator")
    if meta_author and meta_author.startswith(("http://", "https://")):
        meta_author = None
    author = find_author(text, meta_author)
    source = meta.get("source") or meta.get("article:source")
    source = find_source(text) or (_norm_space(source) or None)
    return PageMetadata(
        title=title or None,
        published_at=published,
        author=author,
        source=source,
        canonical_url=_find_canonical(root, meta, url),
    )
