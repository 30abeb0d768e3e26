"""Main text and metadata of a Chinese news page: decode, strip boilerplate, locate the article, trafilatura.

:func:`extract_article` is the one entry point (the spider's pipelines run it in a process pool, so it is a
plain top-level function whose arguments and results pickle). Steps:

1. refuse what is not an article page early: too large (> ``max_bytes``), empty, not HTML (binary, JSON);
2. decode bytes with :func:`~newsdedup.extract.decode.decode_html` (lying charset metas are common);
3. parse with lxml and read the metadata from the whole page (:mod:`newsdedup.extract.metadata`);
4. delete boilerplate: related-reading blocks by their heading text, link-dense lists, navigation, share
   bars, comments, the site's ``remove_selectors`` (:mod:`newsdedup.extract.related`);
5. locate the article: the element whose prose outweighs everything else it holds (table-layout portals
   otherwise hand trafilatura the whole page as one table; summary lines under the headlines of a related
   list count as other text, or they pull the locator to the list), and run ``trafilatura.extract`` on it
   (``deduplicate=False``: trafilatura's dedup cache is process-global and empties later documents);
6. tidy the text: a related-reading heading that survived is cut with the headline list under it, and
   byline lines (来源/责任编辑/作者/编辑...) that open or close the body are removed, as is a trailing
   "来源：X 编辑：Y" run at the end of the last paragraph. Measured against the cwced gold this is neutral
   (mean F1 0.9343 either way: the gold keeps such lines on some pages and drops them on others); they go
   because reprints of one story differ exactly in those lines, which would blur near-duplicate detection;
7. refuse pages without article text, with a reason: ``list_page``, ``video``, ``javascript_only``,
   ``too_short``.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
from array import array
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import lxml.html
from lxml import etree
from lxml.html import HtmlElement

from newsdedup import defaults  # the shipped defaults, written there only
from newsdedup.extract.decode import decode_html
from newsdedup.extract.metadata import around_datetimes, extract_metadata, find_datetimes, visible_text
from newsdedup.extract.related import TextStats, is_related_heading, measure, normalize_heading, remove_boilerplate
from newsdedup.extract.template import (
    PARAGRAPH_CHARS, line_hash, normalized_line_hashes, page_blocks, speaks_of_headline, strip_boilerplate,
)

__all__ = ["Article", "ExtractOptions", "SkipPage", "SKIP_REASONS", "extract_article"]

logger = logging.getLogger(__name__)

#: Why a page holds no article; ``template_only``: all its text is its site's template (a crawl's judgement,
#: see :meth:`~newsdedup.extract.template.SiteTemplate.settle`).
SKIP_REASONS = frozenset(
    {"not_html", "empty", "too_large", "javascript_only", "list_page", "video", "too_short", "malformed", "template_only"}
)

_BINARY_MAGIC = (b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x1f\x8b", b"RIFF", b"\x00\x00\x01\x00")
_TAG_RE = re.compile(r"<\s*[a-zA-Z!/]")
_SPACE = re.compile(r"\s+")
_XML_DECL_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[。！？!?；;…」”\"]")
_SENTENCE_PUNCT = re.compile(r"[，。！？；：、,.!?;]")
_FULL_STOP = re.compile(r"[。！？!?]")
# Lines that open or close a body and only say who wrote, edited or supplied it, or when.
_BYLINE_LINE = re.compile(
    r"^[\s\[【(（<《]*(?:文章来源|本文来源|稿件来源|信息来源|来源|来自|稿源|出处|责任编辑|责编|编辑|作者|记者|通讯员|"
    r"实习生|摄影|摄像|图片|校对|审核|审校|监制|主编|编审|制图|发布时间|发布日期|发表时间|时间|日期|点击数?|阅读数?|"
    r"浏览次数|字号|返回|打印|关闭窗口|分享)\s*[:：/]"
)
_DATE_ONLY_LINE = re.compile(r"^[\s\[(（]*(?:19|20)\d{2}[-/.年]\d{1,2}[-/.月]\d{1,2}日?(?:\s+\d{1,2}[:：]\d{2}(?:[:：]\d{2})?)?[\s\])）]*$")
# One "来源：X" / "（责任编辑：Y）" unit at the very end of a line. Matched repeatedly on the line's last
# _BYLINE_TAIL characters only, each match anchored at the end: no nested quantifiers, so a paragraph
# repeating "责任编辑：张" thousands of times costs a few steps, not a backtracking storm. Not inside a
# word: "（图片来源：视觉中国）" is a caption's credit, not a byline.
_TRAILING_BYLINE = re.compile(r"(?:[\[【(（]|(?<!\w))[ \t]*(?:来源|责任编辑|责编|编辑|作者)[ \t]*[:：][ \t]*[^\s:：\[\]【】()（）]{1,24}[ \t]*[\]】)）]?[ \t]*\Z")
_BYLINE_TAIL = 120
# A line that is only a short label and its colon; under it, at most _MAX_TAGS words of at most _TAG_CHARS
# characters (a tag bar's links).
_BARE_LABEL = re.compile(r"[^\s:：]{1,8}[ \t]*[:：][ \t]*$")
_MAX_TAGS = 10
_TAG_CHARS = 8
# A line naming a site's legal notice ("版权声明", "免责声明", "反侵权公告", "振兴东北网版权与免责声明：") opens it: the
# notice's paragraphs under it are the site's, not the article's (see _closing_notice).
_NOTICE_HEADING = re.compile(r"(?:版权|著作权|免责|侵权).{0,4}(?:声明|公告)")
_MAX_NOTICE_HEADING = 20
_MAX_BYLINE_LINE = 60
# A short line under the headline that carries a date and a source or author label is the dateline.
_DATELINE_LABEL = re.compile(r"来源|作者|记者|编辑|发布|时间|出处|稿源")
_SOURCE_LABEL = re.compile(r"(?:来源|作者|记者|编辑|稿源|出处|發佈|发布)[ \t]*[:：/]")
# "每日经济新闻 2018-06-14 13:20:39": a date with its time of day beside a name this short (an outlet, a reporter)
# and nothing else is the dateline, labels or not. A time of day is what sentences rarely print, datelines always.
_DATELINE_NAME = 16
_CLAUSE_PUNCT = re.compile(r"[，。！？；,!?;…]")
# How far under the headline (characters of visible text) a date or source line still belongs to it.
_DATELINE_WINDOW = 200
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Elements that end a run of loose text (see _wrap_loose_text).
_BLOCKS = frozenset(
    "address article aside blockquote center dd div dl dt figure footer form h1 h2 h3 h4 h5 h6 header hr li main "
    "nav ol p pre section table tbody td tfoot th thead tr ul".split()
)
# The element scoring the most prose minus this share of its other text is the article.
_NON_PROSE_PENALTY = 0.5
# Climbing from the first paragraph after the headline passes parents that add at most this many characters
# of other text (a headline, a date line, a picture caption) whatever else they add.
_SMALL_ADDITION = 60
# A line of this many characters is unique enough on a page to be put back where the page has it.
_MIN_MOVED = 8
# A table cell holding more text than this is a layout cell, not a data cell.
_LAYOUT_CELL = 100
# trafilatura's main extractor takes bare <div>s as whole blocks when the <p> text of its block is under three times
# its MIN_EXTRACTED_SIZE (250 by default): 3 x 250 characters (see _subdocument).
_MAIN_EXTRACTOR_TEXT = 750
# A located block under this share of the whole page's reading is checked against it (see _read).
_MIN_PART_SHARE = 0.5
# A sentence standing alone between headline and body (a summary box) of this much prose is the lead.
_MIN_LEAD = 15
# Five list items or more averaging at most this many characters are a list of headlines or teasers, not the
# rest of an article (whose paragraphs run longer).
_LIST_ITEMS = 5
_SHORT_ITEM = 80
# The block after the headline must hold this much prose to be the body (shorter: a caption, a notice, and
# the next block is tried). The least a news brief holds.
_MIN_ANCHORED_PROSE = 40
# A block with at least this share of its prose in summary lines under headline links is a card (a teaser).
_TEASER_SHARE = 0.8
_MAX_CARD_CHARS = 250  # a card's headline and summary (summaries run to 150 characters)
# Text a reader could see: script and style bodies and <noscript> notices are not content.
_VISIBLE_TEXT = "//body//text()[not(ancestor::script) and not(ancestor::style) and not(ancestor::noscript)]"
_PARSER = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, collect_ids=False)
# lxml makes a Python object for a node each time a walk reaches it while none is alive, and lxml.html picks
# its class in a Python callback (a special class for form controls, HtmlElement for every other tag): ~190
# calls a page for ours and trafilatura's walks. Every node is an HtmlElement here, picked in C (nothing
# reads the form controls' extra API, and they are dropped as boilerplate anyway).
_PARSER.set_element_class_lookup(etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity,
))


@dataclass(frozen=True)
class ExtractOptions:
    """The run's extraction settings (``NEWSDEDUP_EXTRACT_*``; :func:`newsdedup.run.options.extract_options`), handed
    to a worker with each page, so picklable; here, beside :func:`extract_article`, so the run's policy reads them
    without the crawl's glue."""

    min_chars: int = defaults.NEWSDEDUP_EXTRACT_MIN_CHARS
    brief_chars: int = defaults.NEWSDEDUP_EXTRACT_BRIEF_CHARS
    max_bytes: int = defaults.NEWSDEDUP_EXTRACT_MAX_BYTES
    keep_shared_prose: bool = True  # False when a template failure is retried (see strip_boilerplate)


@dataclass(frozen=True)
class Article:
    """What a news page says, with metadata (any metadata field may be None)."""

    title: str | None
    text: str
    published_at: str | None  # ISO 8601 with offset, e.g. 2018-05-03T10:21:00+08:00
    author: str | None
    source: str | None  # the outlet a reprint names after 来源
    canonical_url: str | None
    #: The distinct block hashes of the page, and of the paragraphs of its article: what its site's template
    #: learns from (:mod:`~newsdedup.extract.template`).
    block_hashes: array = field(default_factory=lambda: array("Q"), compare=False, repr=False)
    body_hashes: array = field(default_factory=lambda: array("Q"), compare=False, repr=False)


class SkipPage(Exception):
    """The page holds no article text; ``reason`` is one of :data:`SKIP_REASONS`."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(reason, message)
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return self.message


def _validate(
    page: object, url: object, remove_selectors: object, min_chars: object, brief_chars: object, max_bytes: object
) -> None:
    if not isinstance(page, (str, bytes, bytearray, memoryview)):
        raise ValueError(f"page must be str or bytes, got {type(page).__name__}; pass response.body")
    if url is not None and not isinstance(url, str):
        raise ValueError(f"url must be a str or None, got {type(url).__name__}")
    if isinstance(remove_selectors, str) or not isinstance(remove_selectors, Sequence):
        raise ValueError("remove_selectors must be a list of CSS selectors, e.g. ['div.related']")
    for name, value in (("min_chars", min_chars), ("brief_chars", brief_chars)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes <= 0:
        raise ValueError(f"max_bytes must be an int > 0, got {max_bytes!r}")


def extract_article(
    page: str | bytes,
    url: str | None = None,
    *,
    remove_selectors: Sequence[str] = (),
    min_chars: int = defaults.NEWSDEDUP_EXTRACT_MIN_CHARS,
    brief_chars: int = defaults.NEWSDEDUP_EXTRACT_BRIEF_CHARS,
    max_bytes: int = defaults.NEWSDEDUP_EXTRACT_MAX_BYTES,
    boilerplate: AbstractSet[int] = frozenset(),
    keep_shared_prose: bool = True,
    sign_offs: AbstractSet[int] = frozenset(),
) -> Article:
    """Extract the article from ``page`` (raw bytes or decoded HTML); raise :class:`SkipPage` when there is none.

    ``url`` resolves a relative canonical link and is the fallback canonical URL; ``remove_selectors`` are
    the site's CSS selectors of blocks to delete; ``min_chars`` is the least number of non-space characters
    an article body may have, ``brief_chars`` the least for a page with the shape of an article (a headline,
    a date or source line under it, the body block after it): news briefs are short. Fewer: ``too_short``.
    Pages over ``max_bytes`` are refused unparsed. ``boilerplate`` holds the block hashes of the site's
    learned template (:class:`~newsdedup.extract.template.SiteTemplate`), deleted before anything is weighed
    (``keep_shared_prose``: see :func:`~newsdedup.extract.template.strip_boilerplate`); ``sign_offs`` the paragraphs
    the site's pages carry in their bodies (:meth:`~newsdedup.extract.template.SiteTemplate.sign_offs`), cut where they
    close the body and do not speak of the headline.

    Arguments are validated up front (ValueError). After that, bad input of any kind (broken HTML, binary
    files, pages too large, pages without text) raises only :class:`SkipPage`.
    """
    _validate(page, url, remove_selectors, min_chars, brief_chars, max_bytes)
    try:
        return _extract(page, url, tuple(remove_selectors), min_chars, brief_chars, max_bytes, boilerplate,
                        keep_shared_prose, sign_offs)
    except SkipPage:
        raise
    except ValueError as exc:
        if "remove_selectors" in str(exc):
            raise  # a bad site config, not a bad page
        raise SkipPage("malformed", f"page could not be parsed: {exc}"[:200]) from exc
    except (RecursionError, etree.LxmlError, MemoryError) as exc:
        raise SkipPage("malformed", f"page could not be parsed: {type(exc).__name__}") from exc
    except Exception as exc:  # noqa: BLE001 - the contract is SkipPage for any bad input
        logger.debug("extraction failed on %s", url, exc_info=True)
        raise SkipPage("malformed", f"extraction failed: {type(exc).__name__}: {exc}"[:200]) from exc


def _extract(
    page: str | bytes, url: str | None, selectors: tuple[str, ...], min_chars: int, brief_chars: int, max_bytes: int,
    boilerplate: AbstractSet[int], keep_shared_prose: bool, sign_offs: AbstractSet[int],
) -> Article:
    html = _decode_checked(page, max_bytes)
    root = _parse(html)
    # lxml makes a Python object for a node each time a walk reaches it while no object for it is alive, and
    # lxml.html picks that object's class in a Python callback: the dozen walks below would pay that for
    # every node again. Holding one object per node for the whole extraction makes later walks reuse them.
    nodes = list(root.iter())  # noqa: F841 - held, not read
    body = root.find("body")
    if body is None or not _has_text(body):
        _raise_no_text(root, "page has no visible text")

    page_text = visible_text(root)
    meta = extract_metadata(root, url, text=page_text)
    anchor_texts = _anchor_texts(root)
    # Each block's text normalized once: its hash, the headline search and the body's paragraph hashes read it
    # (three normalizations a block were most of the ~970 a 150 KB page had).
    blocks = [(el, normalize_heading(own)) for el, own in page_blocks(root)]
    hashed = [(el, hashes, norm) for el, norm in blocks if (hashes := normalized_line_hashes(norm, meta.title))]
    lines = array("Q", sorted({h for _, hashes, _ in hashed for h in hashes}))
    headline = _headline(blocks, meta.title)
    dated = headline is not None and _has_dateline(page_text, meta.title)
    # Related-reading blocks first, while their headings are there to find them by (a template would take the
    # heading, the same on every page, and leave the headlines under it); then whatever else the site repeats.
    remove_boilerplate(root, selectors)
    strip_boilerplate(root, boilerplate, meta.title, keep_shared_prose=keep_shared_prose)
    if headline is not None and not _attached(headline, root):
        headline = None
    if headline is not None:
        _wrap_loose_text(headline)
    node, anchored, leads = _main_node(root, headline)
    text = _read(root, node, url, anchor_texts | set(boilerplate), meta.title, leads, anchored)
    if sign_offs:
        text = _without_sign_offs(text, meta.title, sign_offs)
    # One set of the article's elements, not a climb to the root from every block.
    in_node = None if node is None else set(node.iter())
    # A block holding half the body or more is the article's text however short (a 25-character 快讯): counted
    # outside the body, it became "template" to the site's next page carrying the same brief, which was then
    # skipped (xmu xinhua: 2 of 103 pages).
    body_chars = len(normalize_heading(text))
    least = min(PARAGRAPH_CHARS, body_chars / 2) if body_chars else PARAGRAPH_CHARS
    in_body = array("Q", sorted({h for el, hashes, norm in hashed if (in_node is None or el in in_node) and len(norm) >= least
                                 for h in hashes}))
    if _is_list_text(text, anchor_texts):
        raise SkipPage("list_page", "page is a list of links, not an article")
    length = _non_space_length(text)
    # A page with the shape of an article (headline, date or source line, the body right after the
    # headline) is an article however short: news briefs (快讯) run 40-150 characters.
    article_shaped = anchored and dated
    least = min(brief_chars, min_chars) if article_shaped else min_chars
    if length < least:
        # An article-shaped page is never called a list page, whatever links surround it.
        _raise_no_text(root, f"article text shorter than {least} characters", anchors=None if article_shaped else anchor_texts)
    return Article(
        title=meta.title,
        text=text,
        published_at=meta.published_at,
        author=meta.author,
        source=meta.source,
        canonical_url=meta.canonical_url,
        block_hashes=lines,
        body_hashes=in_body,
    )


def _decode_checked(page: str | bytes, max_bytes: int) -> str:
    if isinstance(page, str):
        size = len(page) if len(page) > max_bytes else len(page.encode("utf-8", "surrogatepass"))
    else:
        page = bytes(page)
        size = len(page)
    if size > max_bytes:
        raise SkipPage("too_large", f"page is {size:,} bytes, more than max_bytes={max_bytes:,}")
    if isinstance(page, bytes):
        if not page.strip():
            raise SkipPage("empty", "page is empty")
        head = page[:1024]
        if head.lstrip().startswith(_BINARY_MAGIC) or (b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff"))):
            raise SkipPage("not_html", "page is a binary file, not HTML")
        html = decode_html(page).text
    else:
        html = page
    if not html.strip():
        raise SkipPage("empty", "page is empty")
    if not _TAG_RE.search(html[:200_000]) or html.lstrip()[:1] in ("{", "["):
        raise SkipPage("not_html", "page has no HTML markup")
    return html


def _parse(html: str) -> HtmlElement:
    html = _XML_DECL_RE.sub("", html, count=1)
    try:
        root = lxml.html.document_fromstring(html, parser=_PARSER)
    except etree.ParserError as exc:
        raise SkipPage("empty", f"page has no content: {exc}") from exc
    if root is None:
        raise SkipPage("malformed", "page could not be parsed")
    _take_in_trailing_content(root)
    return root


def _take_in_trailing_content(root: HtmlElement) -> None:
    """Move what a page prints after its ``</html>`` into its body, as browsers show it. A CMS whose header
    include closes the document prints the whole article after it (a gov.cn bulletin page: skipped as too short
    while libxml2 left the article outside the root element, where no reading looked)."""
    trailing = list(root.itersiblings())
    if not trailing:
        return
    body = root.find("body")
    if body is None:
        body = etree.SubElement(root, "body")
    for node in trailing:
        body.append(node)  # with its tail


def _has_text(el: HtmlElement) -> bool:
    for node in el.iter():
        if not isinstance(node.tag, str) or node.tag in ("script", "style", "noscript", "template"):
            if node.tail and node.tail.strip():
                return True
            continue
        if (node.text and node.text.strip()) or (node.tail and node.tail.strip()):
            return True
    return False


def _anchor_texts(root: HtmlElement) -> set[str]:
    """The page's link texts of six letters or more, normalized."""
    texts = set()
    for text in _link_texts(root):
        norm = normalize_heading(text)
        if len(norm) >= 6:
            texts.add(norm)
    return texts


# Every link's text (its XPath string value, as text_content() gives it), each followed by a separator, read by libxslt
# in one C walk: a text_content() call is an XPath evaluation of its own, ~1.5 us for each of a page's ~300 links.
_LINK_SEPARATOR = "\ue000"  # a private-use character: a page whose links hold it is read link by link
_LINK_TEXTS_XSLT = etree.XSLT(etree.XML(f"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="utf-8"/>
<xsl:template match="/"><xsl:for-each select="*[1]/descendant-or-self::a"><xsl:value-of select="."/><xsl:text>&#x{ord(_LINK_SEPARATOR):X};</xsl:text></xsl:for-each></xsl:template>
</xsl:stylesheet>"""))


def _link_texts(root: HtmlElement) -> list[str]:
    """The text of each ``<a>`` in ``root`` (itself included), in document order."""
    # The stylesheet reads the document's first element: ``root`` when it is the document's root with nothing before it.
    if root.getparent() is None and root.getprevious() is None and root.getroottree().getroot() is root:
        links = int(root.xpath("count(descendant-or-self::a)"))
        texts = str(_LINK_TEXTS_XSLT(root)).split(_LINK_SEPARATOR)
        if len(texts) == links + 1:  # no link text holds the separator
            return texts[:-1]
    return [a.text_content() for a in root.iter("a")]


def _raise_no_text(root: HtmlElement, message: str, *, anchors: set[str] | None = None) -> None:
    """Raise SkipPage with the most telling reason for a page without (enough) article text."""
    if _is_video(root):
        raise SkipPage("video", "video page without article text")
    script_chars = sum(len(s.text or "") for s in root.iter("script"))
    # Visible text only: script bodies and "please enable JavaScript" notices are not content.
    body_text = len(normalize_heading("".join(root.xpath(_VISIBLE_TEXT))))
    if script_chars > 0 and (body_text < 50 or script_chars > 20 * max(body_text, 1)):
        raise SkipPage("javascript_only", "page content is rendered by JavaScript")
    if anchors and len(anchors) >= 20:
        raise SkipPage("list_page", f"page is a list of {len(anchors)} links, not an article")
    if body_text == 0:
        raise SkipPage("empty", message)
    raise SkipPage("too_short", message)


def _is_video(root: HtmlElement) -> bool:
    for meta in root.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").lower() == "og:type":
            if (meta.get("content") or "").lower().startswith("video"):
                return True
    return next(root.iter("video"), None) is not None


def _wrap_loose_text(headline: HtmlElement) -> None:
    """Give each run of loose text beside the headline its own ``<p>``: a template that puts the headline and
    the body's bare text (``<br>``-separated lines) into one element leaves the body no element of its own to
    be located by.
    """
    for el in [a for a in headline.iterancestors() if a.tag not in ("body", "html")]:
        if not any(child.tag == "br" or child.tag in _BLOCKS for child in el):
            continue
        if not any(_prose_run(piece) for piece in (el.text, *(child.tail for child in el))):
            continue
        items: list = [el.text] if el.text else []
        for child in list(el):
            tail, child.tail = child.tail, None
            items += [child, tail] if tail else [child]
            el.remove(child)
        el.text = None
        run: list = []
        for item in [*items, None]:  # None: the end flushes the last run
            if item is not None and (isinstance(item, str) or (item.tag != "br" and item.tag not in _BLOCKS)):
                run.append(item)
                continue
            if any(x.strip() if isinstance(x, str) else x.text_content().strip() for x in run):
                paragraph = etree.SubElement(el, "p")
                for x in run:
                    if not isinstance(x, str):
                        paragraph.append(x)
                    elif len(paragraph):
                        paragraph[-1].tail = (paragraph[-1].tail or "") + x
                    else:
                        paragraph.text = (paragraph.text or "") + x
            else:
                for x in run:
                    if not isinstance(x, str):
                        el.append(x)
            run = []
            if item is not None and item.tag != "br":
                el.append(item)


def _prose_run(piece: str | None) -> bool:
    stripped = (piece or "").strip()
    return len(stripped) >= 10 and bool(_SENTENCE_PUNCT.search(stripped))


def _headline(blocks: Sequence[tuple[HtmlElement, str]], title: str | None) -> HtmlElement | None:
    """The block that shows the page's title (an ``<h1>`` first, a block outside links next, first in order).

    ``blocks``: the page's blocks with their own text normalized (:func:`normalize_heading`).
    """
    target = normalize_heading(title or "")
    if len(target) < 2:
        return None
    best, best_rank = None, 9
    for el, norm in blocks:
        if len(target) < 4 and (norm != target or el.tag not in _HEADING_TAGS):
            continue  # a headline of two or three characters ("简讯") only as a heading of its own
        # The same headline with a word more or less ("图文：", a column name) still names the page.
        if not norm or not (norm == target or (norm in target or target in norm) and
                            min(len(norm), len(target)) >= 0.8 * max(len(norm), len(target))):
            continue
        rank = (0 if el.tag == "h1" else 1 if el.tag in _HEADING_TAGS else 2) + (
            3 if el.tag == "a" or next(el.iter("a"), None) is not None or next(el.iterancestors("a"), None) is not None
            else 0
        )
        if rank < best_rank:
            best, best_rank = el, rank
    return best


def _has_dateline(page_text: str, title: str | None) -> bool:
    """A date or a source/author label right under the headline in the page's visible text."""
    norm_title = (title or "").strip()
    position = page_text.find(norm_title[:12]) if norm_title else -1
    if position < 0:
        return False
    window = page_text[position + len(norm_title[:12]) : position + _DATELINE_WINDOW]
    return bool(find_datetimes(window) or _SOURCE_LABEL.search(window))


def _attached(el: HtmlElement, root: HtmlElement) -> bool:
    return el is root or any(ancestor is root for ancestor in el.iterancestors())


def _score(s: TextStats, not_article: int = 0) -> float:
    """Article prose minus :data:`_NON_PROSE_PENALTY` of the other text; ``not_article`` characters of the
    prose count as other text (the headline's, see :func:`_grow`)."""
    return s.article_prose - not_article - _NON_PROSE_PENALTY * (s.text - s.article_prose + not_article)


def _main_node(
    root: HtmlElement, headline: HtmlElement | None
) -> tuple[HtmlElement | None, bool, list[HtmlElement]]:
    """The article element (None: the whole body), whether it is the block that follows the headline, and
    the lead sentences standing alone between the headline and it (a 摘要 box).

    Anchored on the headline: the body is the first block of article prose after it, grown to the ancestor
    that holds the rest of the article (:func:`_grow`), not the heaviest block anywhere (a hot list or a card
    stream beside a short article can outweigh it). Without a headline, the block scoring the most prose
    minus half its other text, grown the same way.
    """
    stats = measure(root)
    node, leads = _anchored_node(root, headline, stats) if headline is not None else (None, [])
    is_anchored = node is not None
    if node is None:
        scored = [(_score(s), n, el) for n, (el, s) in enumerate(stats.items()) if s.article_prose and el.tag != "head"]
        node = max(scored, key=lambda item: (item[0], -item[1]))[2] if scored else None
    # A page whose best block is shorter than a brief and not even one sentence (a date, a credit line: the
    # page is lyrics or a poem in short unpunctuated lines) gives the locator nothing to go by: read it whole.
    if node is None or node.tag == "body" or (
        stats[node].article_prose < _MIN_ANCHORED_PROSE and not _FULL_STOP.search(node.text_content())
    ):
        return None, is_anchored, leads
    if not is_anchored:
        node = _grow(node, stats, headline)
    return (None if node.tag in ("body", "html") else node), is_anchored, leads


def _anchored_node(
    root: HtmlElement, headline: HtmlElement, stats: dict[HtmlElement, TextStats]
) -> tuple[HtmlElement | None, list[HtmlElement]]:
    """The first block after ``headline`` with article prose, grown, and the leads passed over on the way.

    Blocks under :data:`_MIN_ANCHORED_PROSE` (a caption, a notice, a summary box) are passed over for the next
    one; those that are a whole sentence or more (:func:`_is_lead`) are kept as the article's lead. List items
    are never the start of a body (a hot list beside a brief). When nothing after the headline holds enough
    prose, the first short block is the body: the page is an article too short to keep, not a list.
    """
    order = {el: n for n, el in enumerate(root.iter())}
    skip_until = max(order[d] for d in headline.iter())
    leads: list[HtmlElement] = []
    short = None
    for el in root.iter():
        if order[el] <= skip_until or el not in stats:
            continue
        own = stats[el].article_prose - sum(stats[c].article_prose for c in el if c in stats)
        if own <= 0:
            continue
        item = next((a for a in (el, *el.iterancestors()) if a.tag in ("li", "dd", "dt")), None)
        if item is not None:
            skip_until = max(order[d] for d in item.iter())
            continue
        line = _SPACE.sub(" ", el.text_content()).strip()
        if _is_byline(line, dates=True) or _is_bare_dateline(line):
            continue  # the dateline under the headline: no body starts there
        node = _grow(el, stats, headline)
        if stats[node].article_prose >= _MIN_ANCHORED_PROSE:
            return node, leads
        if _is_lead(node, stats[node]):
            leads.append(node)
        short = short if short is not None else node
        skip_until = max(order[d] for d in node.iter())
    return short, [lead for lead in leads if lead is not short]


def _is_lead(node: HtmlElement, s: TextStats) -> bool:
    """A block of one or more whole sentences without links: a summary box above the body, not a caption."""
    text = node.text_content().strip()
    return s.link == 0 and s.article_prose >= _MIN_LEAD and bool(text) and text[-1] in "。！？!?”」"


def _grow(node: HtmlElement, stats: dict[HtmlElement, TextStats], headline: HtmlElement | None = None) -> HtmlElement:
    """Climb from ``node`` while each parent adds at least as much article text as other text (a lead
    paragraph, the rest of the body) or little else (a headline, a date line); stop at a parent that adds
    mostly links or other non-prose (a sidebar, menus, player controls), or a list of short items (a hot
    list, cards). Of the elements passed, the one scoring best (:func:`_score`).

    The ``headline``'s text scores as other text, never as the article's prose, even when it reads like a
    sentence ("人民币中间价上调194点 报6.3962": the figure's full stop makes it prose): it is not the body (the
    tidy-up drops it), and counted as prose it made the element holding headline, comment link and source line
    outscore a short brief's own paragraph once the site's template took the breadcrumb link that made the
    headline a "summary" (xmu cjw: 2 of 82 pages read 0.80 with the template, 1.0 without).
    """
    title_prose = stats[headline].article_prose if headline is not None and headline in stats else 0
    above = {headline, *headline.iterancestors()} if title_prose else set()

    def score(el: HtmlElement) -> float:
        return _score(stats[el], title_prose if el in above else 0)

    best, best_score = node, score(node)
    while True:
        parent = node.getparent()
        if parent is None or parent.tag == "html" or parent not in stats:
            return best
        p, c = stats[parent], stats[node]
        added = p.text - c.text
        prose = p.article_prose - c.article_prose
        other = added - prose
        if other > _SMALL_ADDITION and (prose < other or p.link - c.link > 0.5 * added):
            return best
        # A list of short items beside the article (a hot list, a card stream) is prose-like but no part of it.
        items = p.items - c.items
        if items >= _LIST_ITEMS and p.item_text - c.item_text >= 0.5 * added and added <= _SHORT_ITEM * items:
            return best
        node = parent
        if score(node) > best_score:
            best, best_score = node, score(node)


def _subdocument(node: HtmlElement, article: bool = False) -> HtmlElement:
    doc = lxml.html.document_fromstring("<html><head></head><body></body></html>", parser=_PARSER)
    part = copy.deepcopy(node)
    part.tail = None
    if part.tag in ("td", "th", "tr", "tbody", "thead", "tfoot", "li", "dd"):
        part.tag = "div"  # a lone table cell is not a table; trafilatura would drop or mangle it
    # A table with a cell of running text or of paragraphs is page layout (old portals set whole articles in
    # one), not data: as a table trafilatura would print the article as one "| ... |" row.
    for table in list(part.iter("table")):
        cells = list(table.iter("td", "th"))
        if any(_non_space_length(cell.text_content()) > _LAYOUT_CELL or next(cell.iter("p", "div", "br", "table"), None)
               is not None for cell in cells):
            for el in [table, *table.iter("tbody", "thead", "tfoot", "tr", "td", "th")]:
                el.tag = "div"
    # Links inside running text are words of its sentence; trafilatura's text output put each on a line of its
    # own ("决定韩正、\n孙春兰\n、\n胡春华"), so such a paragraph keeps their text without the links. A paragraph
    # that is mostly link (a related headline) keeps its link, for trafilatura to weigh.
    for paragraph in part.iter("p"):
        linked = sum(_non_space_length(a.text_content()) for a in paragraph.iter("a"))
        if linked and 2 * linked < _non_space_length(paragraph.text_content()):
            etree.strip_tags(paragraph, "a")
    # trafilatura looks for the main block by name (an <article>, or an id or class such as "article-content") and,
    # finding none, falls back to reading only <p>, table and quote text: the part's subheadings, list items,
    # captions and text beside a picture were lost. Handed over as an <article>, the part is read by trafilatura's
    # main extractor (development pages, with the closing-notice rule of _tidy: 14 of 423 read better, 4 worse, by a
    # section heading or a notice kept; token F1 up on cwced, hexun and xinhua, the same on cjw and sina).
    # Only the ``article`` block that follows the headline: a block found without one is the best-scoring element,
    # often most of the page, and the main extractor reads the lists in it, a hot list among them (page-level
    # benchmark: 3 more crawled pages of 149 held hot-list text; lists closing the block go as well, see
    # _drop_closing_lists). And only when its paragraphs hold trafilatura's own bar of text (_MAIN_EXTRACTOR_TEXT):
    # under it, it reads each bare <div> whole, as one line, headline, date line and body together (a brief on
    # sina's template).
    body = doc.find("body")
    if article and sum(_non_space_length(piece) for piece in part.xpath(".//p//text()")) >= _MAIN_EXTRACTOR_TEXT:
        _drop_closing_lists(part)
        etree.SubElement(body, "article").append(part)
    else:
        body.append(part)
    return doc


def _drop_closing_lists(part: HtmlElement) -> None:
    """Delete the lists of :data:`_LIST_ITEMS` items or more after which ``part`` holds no prose: a hot list or a
    card stream closing the article block, which trafilatura's main extractor would print as list items (its
    fallback never read lists). A list the article's text goes on after (steps, points) stays. The list goes with
    the elements around it that add at most :data:`_SMALL_ADDITION` characters (its heading, "今日热点"). Page-level
    benchmark, its 174 hot-list pages read one at a time: 40 held hot-list text before trafilatura's main extractor
    read the block, 36 after, with this."""
    for found in list(part.iter("ul", "ol")):
        if found.getparent() is None or sum(1 for item in found if item.tag == "li") < _LIST_ITEMS:
            continue
        if any(_prose_run(piece) for piece in found.xpath("following::text()[not(ancestor::ul) and not(ancestor::ol)]")):
            continue
        node = found
        while (parent := node.getparent()) is not None and parent is not part and _non_space_length(
                parent.text_content()) - _non_space_length(node.text_content()) <= _SMALL_ADDITION:
            node = parent
        if node.getparent() is not None:
            node.drop_tree()


def _trafilatura(tree: HtmlElement, url: str | None) -> str:
    import trafilatura  # imported lazily: it loads slowly, and process-pool workers pay once

    options = copy.copy(_trafilatura_options())
    options.url = url
    options.source = url and url.encode("utf-8", "replace").decode("utf-8")  # as Extractor sets it from url
    return trafilatura.extract(tree, options=options) or ""


@functools.cache
def _trafilatura_options():
    """trafilatura's settings for our readings, built once: ``Extractor()`` reads eight numbers from its
    ConfigParser each time (~0.25 ms of a page's ~3.6 ms trafilatura run). A copy a call carries the URL."""
    from trafilatura.settings import Extractor

    return Extractor(output_format="txt", dedup=False, comments=False, tables=True, with_metadata=False)


def _read(
    root: HtmlElement, node: HtmlElement | None, url: str | None, known: AbstractSet, title: str | None,
    leads: Sequence[HtmlElement] = (), anchored: bool = False,
) -> str:
    """The tidy text of ``node`` (None: the page), checked against a whole-page reading when it is small.

    A located block under half of what trafilatura reads from the whole (cleaned) page may be one paragraph
    of an article spread over sibling blocks, or the page may be right to hold more. The whole-page reading
    wins when its extra article text outweighs the block: prose lines that are no link text of the page,
    no list item, no summary under a link (a card) and no block of the site's template (``known`` holds the
    link texts and the template). Extra lines that
    are menus, player controls, forms, template placeholders or headline lists leave the block as it is.
    It also wins when the block's text is all byline (an article in short unpunctuated lines has hardly
    any prose to be located by).
    """
    if node is None:
        return _tidy(_in_page_order(_trafilatura(root, url), root), title)
    raw = _in_page_order(_trafilatura(_subdocument(node, anchored), url), node)
    lead = [_SPACE.sub(" ", el.text_content()).strip() for el in leads]
    part = _tidy("\n".join([*lead, raw]), title)
    # The whole-page run costs as much again: skip it when the part holds half the page's visible text,
    # since it can then not be under half of what the whole page gives.
    if _non_space_length(raw) >= _MIN_PART_SHARE * _visible_text_length(root):
        return part
    whole = _tidy(_in_page_order(_trafilatura(root, url), root), title)
    if _non_space_length(part) >= _MIN_PART_SHARE * _non_space_length(whole):
        return part
    if not part:
        return whole
    have = {normalize_heading(line) for line in part.splitlines()}
    # List items are headlines and teasers (a hot list, cards) however sentence-like, and so is each part of one: a
    # card's summary under its headline link (xmu cjw: a "最新推荐" column of eight cards, whose summaries trafilatura
    # printed without their links, outweighed a one-paragraph article and was appended to it).
    known = set(known) | {normalize_heading(el.text_content()) for item in root.iter("li", "dd", "dt") for el in item.iter()}
    # So is a block that is mostly the summary under a headline link (a related list of cards outside <li>: a
    # heading link and a teaser paragraph a card), which trafilatura prints without the link: counted as article
    # text, a long related list outweighed a short article beside it and the whole page was read.
    teasers = _teasers(root)
    known |= teasers
    article = 0
    after_link = False
    for line in whole.splitlines():
        norm = normalize_heading(line)
        linked = norm in known
        # A prose line right under a link is a card's summary (a teaser), not article text.
        if norm not in have and not linked and not after_link and _is_prose_line(line):
            article += len(norm) if line_hash(line, title) not in known else 0
        after_link = linked
    if article <= len(normalize_heading(part)):
        return part
    # The article goes on outside the located block (a paragraph beside it), and so may a related list of cards
    # inside the same container: its teasers, and the headline links standing next to them, are no article text.
    lines = whole.splitlines()
    norms = [normalize_heading(line) for line in lines]
    teaser = [norm in teasers for norm in norms]
    return "\n".join(line for n, line in enumerate(lines) if not teaser[n] and not (
        norms[n] in known and any(teaser[m] for m in (n - 1, n + 1) if 0 <= m < len(lines))))


def _teasers(root: HtmlElement) -> set[str]:
    """The normalized texts of a list of cards: :data:`_LIST_ITEMS` or more blocks, each a headline link and the summary
    under it (:attr:`~newsdedup.extract.related.TextStats.summary` most of its prose) and short, with every block they
    hold. A single such block is no list (the article's first paragraph under a breadcrumb link reads as a summary)."""
    stats = measure(root)
    cards = [el for el, s in stats.items() if s.links and s.summary and s.summary >= _TEASER_SHARE * s.prose
             and s.text <= _MAX_CARD_CHARS and el.tag not in ("html", "body")]
    if len(cards) < _LIST_ITEMS:
        return set()
    return {normalize_heading(el.text_content()) for card in cards for el in card.iter() if isinstance(el.tag, str)}


def _visible_text_length(root: HtmlElement) -> int:
    """Characters of text a reader could see on the page, whitespace left out."""
    if next(root.iter("script", "style", "noscript"), None) is None:
        # What the extraction reads has had them dropped (remove_boilerplate): one C walk of the body's text then
        # counts the same as the XPath's ancestor tests for every text node (~0.4 ms of a 150 KB page).
        return sum(_non_space_length("".join(body.itertext())) for body in root.iter("body"))
    return sum(_non_space_length(piece) for piece in root.xpath(_VISIBLE_TEXT))


def _in_page_order(text: str, part: HtmlElement) -> str:
    """``text``'s lines in the order the page shows them.

    trafilatura picks its own main block inside the part it is given and appends what it recovers around it
    afterwards, so a lead paragraph above the body block came out last. A line is looked for after the line
    before it first (repeated lines take successive occurrences); a line of :data:`_MIN_MOVED` characters or
    more found only earlier in the page moves back there; anything else stays where it is.
    """
    lines = text.splitlines()
    if len(lines) < 2:
        return text
    page = _SPACE.sub("", "".join(part.itertext()))
    placed: list[tuple[float, int, str]] = []
    cursor, position = 0, -1.0
    for n, line in enumerate(lines):
        key = _SPACE.sub("", line)
        found = page.find(key, cursor) if key else -1
        if found < 0 and len(key) >= _MIN_MOVED:
            found = page.find(key)
        if found >= 0:
            position = float(found)
            cursor = max(cursor, found + len(key))
        else:
            position += 0.001
        placed.append((position, n, line))
    placed.sort()
    return "\n".join(line for _, _, line in placed)


def _non_space_length(text: str) -> int:
    return sum(len(piece) for piece in text.split())


def _is_prose_line(line: str) -> bool:
    return len(line) >= 30 and bool(_SENTENCE_PUNCT.search(line))


def _is_byline(line: str, *, dates: bool = False) -> bool:
    if len(line) > _MAX_BYLINE_LINE:
        return False
    if _BYLINE_LINE.match(line) or (dates and _DATE_ONLY_LINE.match(line)):
        return True
    # "2018-06-14 09:21 来源：华尔街见闻 作者：某某": a date with labels and no sentence is the dateline.
    return dates and bool(_DATELINE_LABEL.search(line) and find_datetimes(line) and not _SENTENCE_END.search(line))


def _is_bare_dateline(line: str) -> bool:
    """A date with its time of day and a short name beside it, no label: "每日经济新闻 2018-06-14 13:20:39". Taken
    for the dateline once, where the body opens: a live report's entries look the same ("2018-06-14 10:30 沪指高开")."""
    if len(line) > _MAX_BYLINE_LINE or _CLAUSE_PUNCT.search(line):
        return False
    rest = around_datetimes(line)
    return rest is not None and len(normalize_heading(rest)) <= _DATELINE_NAME


def _strip_trailing_bylines(line: str) -> str:
    head, tail = line[:-_BYLINE_TAIL], line[-_BYLINE_TAIL:]
    while True:
        stripped = _TRAILING_BYLINE.sub("", tail.rstrip(), count=1)
        if stripped == tail.rstrip():
            return (head + stripped).rstrip()
        tail = stripped


def _is_title(line: str, title: str) -> bool:
    """The line is the headline, or the headline with a word less (a line that adds words, "摘要：" and a
    full stop, is a summary sentence and stays)."""
    norm = normalize_heading(line)
    return bool(norm) and norm in title and len(norm) >= 0.8 * len(title)


def _tidy(text: str, title: str | None = None) -> str:
    lines = [re.sub(r"[ \t\u3000\xa0]+", " ", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line and line.strip("| ")]
    # A related-reading heading that escaped the tree cleaning: cut it and the headline list under it.
    kept: list[str] = []
    skipping = False
    for line in lines:
        if is_related_heading(line.strip("| ")):
            skipping = True
            continue
        if skipping and not _is_prose_line(line):
            continue
        skipping = False
        kept.append(line)
    lines = kept
    # The headline is not the body: many templates put it inside the body element, and a reprint under
    # another template must still be the same text. Datelines under it go too.
    norm_title = normalize_heading(title or "")
    bare_dateline = True  # still allowed
    while lines:
        if (len(norm_title) >= 4 and _is_title(lines[0], norm_title)) or _is_byline(lines[0], dates=True):
            lines.pop(0)
        elif bare_dateline and _is_bare_dateline(lines[0]):
            lines.pop(0)
            bare_dateline = False
        else:
            break
    # On the last line a date alone is a notice's signature date: it stays.
    while lines:
        if _is_byline(lines[-1]):
            lines.pop()
        elif (start := _tag_bar(lines)) is not None or (start := _closing_notice(lines)) is not None:
            del lines[start:]
        else:
            break
    if lines:
        lines[-1] = _strip_trailing_bylines(lines[-1])
        if not lines[-1]:
            lines.pop()
    return "\n".join(lines)


def _without_sign_offs(text: str, title: str | None, sign_offs: AbstractSet[int]) -> str:
    """``text`` without the site's sign-offs closing it: paragraphs other pages of the site carry in their bodies
    (:meth:`~newsdedup.extract.template.SiteTemplate.sign_offs`) that do not speak of the headline, a notice the site
    closes its articles with ("特别提醒：如果我们使用了您的图片……"), not the closing paragraph of an article it printed
    again, nor a series' introduction (which opens the body, and speaks of the headline).

    Only when a line of the page's own (none of those paragraphs) stands before them: a body made of such paragraphs
    only is another story left in the page's template (or the site printing one story again), which the template
    check reads again (:meth:`~newsdedup.extract.template.SiteTemplate.check`); cut down from its end here it left
    nothing to check (page-level benchmark: 12 pages skipped as too short). Cut from the reading :func:`_read` chose,
    not from the readings it weighs: a block shorter by its sign-off weighed against the whole page lost to it
    (page-level benchmark: a blog shell's page read as another entry of the blog, three stories joined through it).
    """
    lines = text.splitlines()
    end = len(lines)
    # Hashed from the end, as far as the sign-offs go: on most pages the last line is none and nothing else is hashed.
    while end and line_hash(lines[end - 1], title) in sign_offs and not speaks_of_headline(
            title, normalize_heading(lines[end - 1])):
        end -= 1
    if end == len(lines) or all(line_hash(line, title) in sign_offs for line in lines[:end]):
        return text
    return _tidy("\n".join(lines[:end]), title)  # what the sign-off stood after may close the body now


def _tag_bar(lines: Sequence[str]) -> int | None:
    """Where a tag bar closing the body starts: a bare label ("关键字：", "标签：") with nothing under it but
    words (its tag links), none of them a sentence; None when the body does not end in one."""
    for n in range(len(lines) - 1, max(len(lines) - 1 - _MAX_TAGS, -1) - 1, -1):
        if _BARE_LABEL.match(lines[n]):
            return n
        if len(lines[n]) > _TAG_CHARS or _SENTENCE_PUNCT.search(lines[n]):
            return None
    return None


def _closing_notice(lines: Sequence[str]) -> int | None:
    """Where a site's legal notice closing the body starts: a short line naming a copyright or disclaimer notice
    (:data:`_NOTICE_HEADING`, no sentence) in the second half of the body; None when there is none. A site's
    template learns its notice once it has seen a few pages; this is for the pages before, and for one page alone
    (cwced: 3 pages of 3 sites closed by one, none of them gold text). Only a heading standing alone: a notice's
    label opening a line of text ("【免责声明】本文仅代表作者本人观点……") is text some sites print inside the article and
    their readers' gold keeps (xmu: cutting from such a line lowered a held-out portal's recall 0.998 -> 0.987)."""
    total = sum(len(line) for line in lines)
    seen = 0
    for n, line in enumerate(lines):
        if 2 * seen >= total and len(normalize_heading(line)) <= _MAX_NOTICE_HEADING and _NOTICE_HEADING.search(line) \
                and not _FULL_STOP.search(line):
            return n
        seen += len(line)
    return None


def _is_list_text(text: str, anchor_texts: set[str]) -> bool:
    """Most of the extracted text repeats link texts of the page: it is a list of headlines."""
    if not text or not anchor_texts:
        return False
    total = linked = linked_lines = 0
    for line in text.splitlines():
        norm = normalize_heading(line)
        total += len(norm)
        if norm in anchor_texts:
            linked += len(norm)
            linked_lines += 1
    # Five headlines at least: a short gallery page whose caption repeats its own link is no list.
    return linked_lines >= 5 and linked >= 0.5 * total
