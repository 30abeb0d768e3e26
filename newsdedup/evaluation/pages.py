"""Page-level reprint benchmark: benchmark texts embedded into real portal page shells, served locally.

A *shell* is a real article page (from ``../shared/data``: gne, cx-extractor-163, cwced,
trafilatura-zh, readability-zh, newspaper-goose-zh) whose article body has been cut out: the element
newsdedup's extractor takes for the article (the element whose prose outweighs everything else it
holds, after boilerplate removal, found with the public :func:`~newsdedup.extract.related.measure` and
:func:`~newsdedup.extract.related.remove_boilerplate`) keeps its non-prose children (images, share
bars, its own related-reading blocks) and loses its prose children, whose place takes the benchmark
text as ``<p>`` paragraphs (with the class and style of the page's own paragraphs, if it has any).  The
headline (``<h1>``, ``<title>``, ``og:title``) becomes the document's title, the description metas its
first line; navigation, ads, related-reading blocks, footers, scripts and the 来源/date lines stay as
the portal wrote them.  Every page also gets a related-reading block (相关阅读, 猜你喜欢, 热点新闻...,
in one of several layouts, inside the article element or right after it) quoting *other* benchmark
documents' headlines and first lines, linking to their pages.

Shells are re-encoded as UTF-8 (``<meta charset>`` rewritten) except the NetEase (cx-extractor-163)
shells, which stay GBK with their own ``gb2312``/``gbk`` metas; :func:`build_site` puts about
``gbk_share`` of the pages on them.  Characters outside GBK become numeric character references, as
GBK portals write them.  Junk documents (texts that are only JavaScript) go into a ``<script>`` in
place of the body: a page whose content is rendered by script.

Every shell is used, however the extractor does on it (dropping the shells it fails on would hide exactly
those failures). :func:`build_site` adds shells built the hard way from a sample of the real ones
(:data:`HARD_VARIANTS`): a hot list of ~30 other documents' headlines with summary lines beside the article
(the same on every page of the shell, as a portal's is), the body as bare text between ``<br>`` tags, the
headline inside the body element. It assigns documents to shells (the documents of one story on shells of
different portals; unrelated documents share shells, so "different articles on the same shell" negatives
come with it) and renders every page and list pages of ``list_size`` links; :meth:`BenchSite.responses` is
what :class:`~newsdedup.demo.server.LoopbackServer` serves on 127.0.0.1 for ``scrapy crawl portal``.

Nothing of ``../shared/data`` ships with the package: shells are read at run time from ``data_dir``.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import html
import random
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lxml.html
from lxml import etree
from lxml.html import HtmlElement

from newsdedup.demo.server import Response, site_entry
from newsdedup.extract.decode import decode_html
from newsdedup.extract.related import measure, remove_boilerplate

__all__ = [
    "HARD_VARIANTS", "RELATED_HEADINGS_USED", "SHELL_SOURCES", "BenchPage", "BenchSite", "RelatedItem", "Shell",
    "ShellError", "build_site", "first_line", "hard_variant", "load_shells", "make_shell", "related_block", "render_page",
]

#: Where shells come from: (data set, glob under ``data_dir``).  Each file is one shell.
SHELL_SOURCES: tuple[tuple[str, str], ...] = (
    ("gne", "gne/tests/*/*.html"),
    ("gne", "gne/visiable_test/*/*.html"),
    ("cx-extractor-163", "cx-extractor-163/RawHtml/*.html"),
    ("cwced", "cwced/original/*.html"),
    ("trafilatura-zh", "trafilatura-zh/tests/*/*.html"),
    ("readability-zh", "readability-zh/test/test-pages/*/source.html"),
    ("newspaper-goose-zh", "newspaper-goose-zh/newspaper4k/tests/data/html/*.html"),
    ("newspaper-goose-zh", "newspaper-goose-zh/goose3/tests/data/content/*.html"),
)
#: Data sets whose shells keep their GBK bytes (all others are served as UTF-8).
GBK_SETS = frozenset({"cx-extractor-163"})

#: Headings of the added related-reading blocks (all known to newsdedup's related-block removal).
RELATED_HEADINGS_USED: tuple[str, ...] = (
    "相关阅读", "猜你喜欢", "热点新闻", "延伸阅读", "推荐阅读", "相关新闻", "为你推荐", "大家都在看",
)

# Placeholders in a shell template.  Tags survive lxml serialisation verbatim; the tokens are
# plain text that no real page contains.
_BODY_TAG = "nd-body"
_RELATED_IN_TAG = "nd-related-in"
_RELATED_AFTER_TAG = "nd-related-after"
_TITLE_TOKEN = "@@NDTITLE@@"
_DESC_TOKEN = "@@NDDESC@@"
_MARK = "data-nd-mark"
# The extractor's article score (newsdedup.extract.extractor): prose minus half the other text.
_NON_PROSE_PENALTY = 0.5
_SENTENCE_PUNCT = re.compile(r"[，。！？；：、,.!?;]")
_SPACE = re.compile(r"\s+")
_TITLE_SEPARATORS = re.compile(r"\s*(?:[_|｜]|\s[-–—]\s|--)\s*")
_TITLE_METAS = ("og:title", "twitter:title", "title", "headline")
_DESC_METAS = ("description", "og:description", "twitter:description")
_SUMMARY_NAMES = frozenset({"summary", "digest", "desc", "abstract", "lead", "daoyu", "zhaiyao", "intro"})
_NAME_SPLIT = re.compile(r"[\s_-]+")
_MIN_BODY_PROSE = 100  # characters of prose the article element of a usable shell holds
# Children that can be one paragraph of article text, and the block elements that delimit paragraphs.
_PARAGRAPH_TAGS = frozenset({"p", "div", "section", "span", "font", "blockquote", "center", "strong", "b", "pre", "h2", "h3", "h4", "h5", "h6"})
_BLOCK_TAGS = frozenset({
    "p", "div", "section", "article", "blockquote", "center", "pre", "li", "ul", "ol", "dl", "dd", "dt",
    "table", "tbody", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6",
})
_PARSER = lxml.html.HTMLParser(remove_pis=True, collect_ids=False)


class ShellError(ValueError):
    """A page cannot serve as a shell (no article element, no <head>...); the message says why."""


@dataclass(frozen=True)
class Shell:
    """A real page with its article body replaced by placeholders (see module doc).

    ``portal`` names the template family (documents of one story never share one); ``encoding``
    is the codec the page is served in (``utf-8`` or ``gbk``); ``paragraph`` is the opening tag the
    embedded paragraphs get: the page's own ``<p class=... style=...>``, plain ``<p>`` for pages
    whose text was ``<br>``-separated lines.
    """

    name: str
    portal: str
    encoding: str
    template: str
    paragraph: str
    source_bytes: int = 0
    bare: bool = False  # the body goes in as bare text between <br> tags, not as paragraphs

    @property
    def content_type(self) -> str:
        """The HTTP Content-Type: UTF-8 named; GBK named for half the GBK shells, left to the page's meta for the rest."""
        if self.encoding == "utf-8":
            return "text/html; charset=utf-8"
        return "text/html; charset=GBK" if zlib.crc32(self.name.encode()) % 2 else "text/html"


# ------------------------------------------------------------------------------------- shells


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _is_prose_text(piece: str | None) -> bool:
    stripped = (piece or "").strip()
    return len(stripped) >= 10 and bool(_SENTENCE_PUNCT.search(stripped))


def _text_prose(piece: str | None) -> int:
    stripped = (piece or "").strip()
    return len(stripped) if _is_prose_text(stripped) else 0


def _article_node(root: HtmlElement) -> tuple[HtmlElement, set[str]]:
    """The article element and the marks of its paragraph children (the ones to replace).

    Elements are marked, a copy is cleaned of boilerplate (as the extractor cleans a page) and
    measured, and the winner is mapped back to the original tree by its mark, so everything the
    cleaning removes stays in the page.  The winner is the *paragraph container*: the element
    whose direct paragraph children (``p``/``div``/... mostly outside links) and text runs hold
    the most prose; when that is little, the extractor's own choice (prose minus half the other
    text) is taken instead.
    """
    for number, el in enumerate(root.iter()):
        if isinstance(el.tag, str):
            el.set(_MARK, str(number))
    clean = copy.deepcopy(root)
    remove_boilerplate(clean)
    stats = measure(clean)
    # Paragraphs under each element: a leaf prose block is one per prose text run (<br>-separated
    # lines are paragraphs too); a paragraph child holds at most one (a wrapper around one <p>).
    leaves: dict[HtmlElement, int] = {}
    for el in stats:  # children before parents
        below = sum(leaves.get(child, 0) for child in el)
        if below == 0 and el.tag in _BLOCK_TAGS and stats[el].prose > 0:
            runs = sum(1 for piece in [el.text] + [child.tail for child in el] if _text_prose(piece))
            below = max(1, runs)
        leaves[el] = below

    def paragraphs(el: HtmlElement) -> tuple[int, set[str]]:
        prose, marks = _text_prose(el.text), set()
        for child in el:
            if not isinstance(child.tag, str):
                prose += _text_prose(child.tail)
                continue
            s = stats[child]
            if child.tag in _PARAGRAPH_TAGS and s.prose > 0 and s.link <= 0.3 * s.text and leaves[child] <= 1:
                prose += s.prose
                marks.add(child.get(_MARK))
            prose += _text_prose(child.tail)
        return prose, marks

    best, best_prose, best_marks = None, 0, set()
    for el in stats:
        if el.tag in ("html", "head"):
            continue
        prose, marks = paragraphs(el)
        if prose > best_prose:
            best, best_prose, best_marks = el, prose, marks
    if best is None or best_prose < _MIN_BODY_PROSE:
        # No paragraph container: the extractor's choice, all of its prose children replaced.
        best, best_score = None, 0.0
        for el, s in stats.items():
            if el.tag in ("html", "head", "body") or s.prose == 0:
                continue
            score = s.prose - _NON_PROSE_PENALTY * (s.text - s.prose)
            if score > best_score:
                best, best_score = el, score
        if best is None or stats[best].prose < _MIN_BODY_PROSE:
            raise ShellError("no article element with enough prose")
    if best.tag != "body":
        # Everything of the article element that survived the cleaning and shows text goes: short
        # lines, captions and the editor line are the old article too.  Images stay.
        best_marks = {c.get(_MARK) for c in best if isinstance(c.tag, str) and stats[c].text > 0}
    mark = best.get(_MARK)
    node = next(el for el in root.iter() if isinstance(el.tag, str) and el.get(_MARK) == mark)
    return node, best_marks


def _paragraph_tag(node: HtmlElement, prose_marks: set[str]) -> str:
    """The opening tag of the page's first prose paragraph (its class/style kept), else ``<p>``."""
    for child in node:
        if child.get(_MARK) not in prose_marks:
            continue
        for p in child.iter("p"):
            if _is_prose_text(p.text_content()):
                attrs = "".join(
                    f' {name}="{html.escape(p.get(name), quote=True)}"'
                    for name in ("class", "style", "align")
                    if p.get(name)
                )
                return f"<p{attrs}>"
    return "<p>"


def _replace_body(node: HtmlElement, prose_marks: set[str]) -> None:
    """Cut the prose out of the article element; leave placeholders for the body and related blocks."""
    first_removed: int | None = None
    position = 0
    for child in list(node):
        is_prose = isinstance(child.tag, str) and child.get(_MARK) in prose_marks
        if is_prose or child.tag == "br":
            if first_removed is None:
                first_removed = position
            # drop_tree keeps the tail; article text in a tail goes below.
            child.drop_tree()
            continue
        position += 1
    # Loose text is the old article too: all of it in an article element, only prose in <body>
    # (where short loose text is more likely the page's own).
    loose = (lambda piece: bool(piece and piece.strip())) if node.tag != "body" else _is_prose_text
    if loose(node.text):
        node.text = None
    for child in node:
        if loose(child.tail):
            child.tail = None
    body = etree.Element(_BODY_TAG)
    node.insert(first_removed if first_removed is not None else 0, body)
    body.tail = "\n"
    node.append(etree.Element(_RELATED_IN_TAG))
    if node.getparent() is not None:
        after = etree.Element(_RELATED_AFTER_TAG)
        node.addnext(after)


def _headline(root: HtmlElement) -> str | None:
    for h1 in root.iter("h1"):
        text = _norm(h1.text_content())
        if 4 <= len(text) <= 100:
            return text
    for meta in root.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").lower() == "og:title":
            text = _norm(meta.get("content") or "")
            if len(text) >= 4:
                return text
    title = root.find(".//title")
    if title is not None:
        first = _TITLE_SEPARATORS.split(_norm(title.text_content()))[0]
        if len(first) >= 4:
            return first
    return None


def _description(root: HtmlElement) -> str:
    for meta in root.iter("meta"):
        if (meta.get("name") or meta.get("property") or "").lower() in _DESC_METAS:
            text = _norm(meta.get("content") or "")
            if text:
                return text
    return ""


def _replace_summaries(root: HtmlElement, body_node: HtmlElement) -> None:
    """Summary blocks outside the article (NetEase's ``ep-summary``...) get the description placeholder.

    They repeat the old article's first sentences; left alone, every page of the shell would share them.
    """
    description = _description(root)
    body_elements = set(body_node.iter())
    for el in root.iter("p", "div", "span", "td", "section"):
        if el in body_elements or len(el) > 2:
            continue
        text = _norm(el.text_content())
        if not _is_prose_text(text):
            continue
        names = {t for t in _NAME_SPLIT.split(f"{el.get('class') or ''} {el.get('id') or ''}".lower()) if t}
        same = bool(description) and (text[:20] == description[:20] or text in description)
        if same or names & _SUMMARY_NAMES:
            for child in list(el):
                child.drop_tree()
            el.text = _DESC_TOKEN


def _replace_title(root: HtmlElement, body_node: HtmlElement) -> None:
    """Put the title placeholder where the page names its headline; description metas get the first line."""
    headline = _headline(root)
    if headline:
        for el in root.iter("h1", "h2", "h3", "div", "span", "p", "a", "strong", "b", "em", "td", "font"):
            if el is body_node or len(el) > 2:
                continue
            if _norm(el.text_content()) == headline:
                for child in list(el):
                    child.drop_tree()
                el.text = _TITLE_TOKEN
    _replace_summaries(root, body_node)
    title = root.find(".//title")
    if title is None:
        title = etree.SubElement(_head(root), "title")
    current = _norm(title.text_content())
    for child in list(title):
        child.drop_tree()
    if headline and headline in current:
        title.text = current.replace(headline, _TITLE_TOKEN, 1)
    else:
        parts = _TITLE_SEPARATORS.split(current, maxsplit=1)
        title.text = _TITLE_TOKEN + (current[len(parts[0]):] if len(parts) > 1 else "")
    for meta in root.iter("meta"):
        key = (meta.get("property") or meta.get("name") or meta.get("itemprop") or "").lower()
        if key in _TITLE_METAS and meta.get("content") is not None:
            meta.set("content", _TITLE_TOKEN)
        elif key in _DESC_METAS and meta.get("content") is not None:
            meta.set("content", _DESC_TOKEN)


def _head(root: HtmlElement) -> HtmlElement:
    """The page's <head>, created when the page has none (old pages start with <body>)."""
    head = root.find("head")
    if head is None:
        head = etree.Element("head")
        root.insert(0, head)
    return head


def _declared_gb_label(root: HtmlElement) -> str:
    """The GB-family label the page declares (gb2312, gbk...), ``gbk`` when it declares none."""
    for meta in root.iter("meta"):
        label = meta.get("charset") or ""
        if not label and (meta.get("http-equiv") or "").lower() == "content-type":
            label = (meta.get("content") or "").lower().partition("charset=")[2]
        label = label.strip().strip("\"';").lower()
        if label in ("gb2312", "gbk", "gb18030", "x-gbk", "cp936"):
            return label
    return "gbk"


def _set_charset(root: HtmlElement, encoding: str) -> None:
    """Replace every charset declaration with one ``<meta charset>`` naming ``encoding``."""
    head = _head(root)
    for meta in list(root.iter("meta")):
        if meta.get("charset") is not None or (meta.get("http-equiv") or "").lower() == "content-type":
            meta.drop_tree()
    meta = etree.Element("meta", charset=encoding)
    meta.tail = "\n"
    head.insert(0, meta)


def make_shell(page: str | bytes, *, name: str, portal: str, encoding: str = "utf-8") -> Shell:
    """Turn one article page (bytes or decoded HTML) into a :class:`Shell`; raise :class:`ShellError` if unusable.

    ``encoding`` is what the page will be served in: ``utf-8`` or ``gbk``; the page's charset
    declarations become one ``<meta charset>`` naming it (for GBK the page's own GB label).
    """
    if encoding not in ("utf-8", "gbk"):
        raise ValueError(f"encoding must be 'utf-8' or 'gbk', got {encoding!r}")
    if not name or not portal:
        raise ValueError("name and portal must be non-empty strings (portal groups pages of one template)")
    size = len(page) if isinstance(page, bytes) else len(page.encode("utf-8"))
    text = decode_html(page).text if isinstance(page, bytes) else page
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text, count=1)
    try:
        root = lxml.html.document_fromstring(text, parser=_PARSER)
    except (etree.ParserError, ValueError) as exc:
        raise ShellError(f"cannot parse: {exc}") from None
    doctype = root.getroottree().docinfo.doctype
    node, prose_marks = _article_node(root)
    paragraph = _paragraph_tag(node, prose_marks)
    _replace_body(node, prose_marks)
    _replace_title(root, node)
    # Always rewritten: libxml2's serializer drops <meta http-equiv="Content-Type"> from text output.
    _set_charset(root, "utf-8" if encoding == "utf-8" else _declared_gb_label(root))
    for el in root.iter():
        if isinstance(el.tag, str) and _MARK in el.attrib:
            del el.attrib[_MARK]
    template = lxml.html.tostring(root, encoding="unicode", doctype=doctype or None)
    return Shell(name=name, portal=portal, encoding=encoding, template=template, paragraph=paragraph, source_bytes=size)


def _portal_of(data_set: str, relative: Path) -> str:
    """The template family of a shell file: the site folder for gne, one for the NetEase set, else the file."""
    if data_set == "gne":
        return "gne-" + relative.parent.name
    if data_set == "cx-extractor-163":
        return "163-money"
    if data_set == "readability-zh":
        return "readability-" + relative.parent.name
    return f"{data_set}-{relative.stem[:24]}"


def _shell_from_file(path: Path, name: str, portal: str, encoding: str) -> Shell | str:
    """The shell of one file, or why it cannot be one (a top-level function: it runs in worker processes)."""
    try:
        return make_shell(path.read_bytes(), name=name, portal=portal, encoding=encoding)
    except ShellError as exc:
        return str(exc)


def load_shells(
    data_dir: Path,
    *,
    sources: Sequence[tuple[str, str]] = SHELL_SOURCES,
    executor: Executor | None = None,
    sample: int | None = None,
    seed: int = 1,
) -> tuple[list[Shell], dict[str, str]]:
    """Read the shell pages under ``data_dir``: (usable shells, ``{name: why not}`` for the rest).

    ``executor`` (e.g. a ``ProcessPoolExecutor``) spreads the pages over its workers; ``sample``
    reads only that many pages, drawn with ``seed`` (a fifth of them GBK when there are any).
    """
    if sample is not None and (not isinstance(sample, int) or sample < 1):
        raise ValueError(f"sample must be a positive integer or None, got {sample!r}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ValueError(f"{data_dir} is not a folder: pass data_dir=the shared data folder (../shared/data)")
    jobs = []
    for data_set, pattern in sources:
        for path in sorted(data_dir.glob(pattern)):
            relative = path.relative_to(data_dir)
            encoding = "gbk" if data_set in GBK_SETS else "utf-8"
            jobs.append((path, relative.as_posix(), _portal_of(data_set, relative.relative_to(data_set)), encoding))
    if not jobs:
        raise ValueError(f"no shell pages found under {data_dir}: pass the shared data folder (../shared/data)")
    if sample is not None and sample < len(jobs):
        rng = random.Random(seed)
        gbk = [job for job in jobs if job[3] != "utf-8"]
        utf8 = [job for job in jobs if job[3] == "utf-8"]
        n_gbk = min(len(gbk), max(1, sample // 5)) if gbk else 0
        jobs = rng.sample(gbk, n_gbk) + rng.sample(utf8, min(len(utf8), sample - n_gbk))
    if executor is None:
        results = [_shell_from_file(*job) for job in jobs]
    else:
        results = [f.result() for f in [executor.submit(_shell_from_file, *job) for job in jobs]]
    shells = [r for r in results if isinstance(r, Shell)]
    rejected = {job[1]: r for job, r in zip(jobs, results) if isinstance(r, str)}
    return shells, rejected


# ------------------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class RelatedItem:
    """One entry of an added related-reading block: another document's page, headline and first line."""

    href: str
    headline: str
    first_line: str


def first_line(text: str, *, limit: int = 48) -> str:
    """The first sentence of ``text`` (its first line, cut after the first 。！？), at most ``limit`` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    match = re.search(r"[。！？!?]", line)
    if match:
        line = line[: match.end()]
    return line if len(line) <= limit else line[:limit] + "…"


def related_block(items: Sequence[RelatedItem], *, heading: str, layout: int) -> str:
    """HTML of a related-reading block in one of five layouts (``layout`` 0-4), as portals write them."""
    if heading not in RELATED_HEADINGS_USED:
        raise ValueError(f"heading must be one of {RELATED_HEADINGS_USED}, got {heading!r}")
    esc = html.escape
    layout %= 5
    if layout == 0:  # plain headline list
        rows = "".join(f'<li><a href="{esc(i.href)}" target="_blank">{esc(i.headline)}</a></li>' for i in items)
        return f'<div class="xgyd"><h3>{heading}</h3><ul>{rows}</ul></div>'
    if layout == 1:  # cards with a summary line under each headline
        rows = "".join(
            f'<div class="item"><a href="{esc(i.href)}"><h4>{esc(i.headline)}</h4></a>'
            f'<p class="summary">{esc(i.first_line)}</p></div>'
            for i in items
        )
        return f'<div class="rec-list"><div class="hd"><span>{heading}</span></div><div class="bd">{rows}</div></div>'
    if layout == 2:  # definition list: headline, then first line
        rows = "".join(f'<dt><a href="{esc(i.href)}">{esc(i.headline)}</a></dt><dd>{esc(i.first_line)}</dd>' for i in items)
        return f'<div class="bd2"><h2 class="tit">{heading}</h2><dl>{rows}</dl></div>'
    if layout == 3:  # a bracketed heading paragraph and one linked paragraph per headline
        rows = "".join(f'<p><a href="{esc(i.href)}">{esc(i.headline)}</a></p>' for i in items)
        return f'<div class="box-m"><p class="title"><strong>【{heading}】</strong></p>{rows}</div>'
    rows = "".join(
        f'<li><a href="{esc(i.href)}">{esc(i.headline)}</a><span class="time">2018-0{1 + n % 9}-1{n % 10}</span>'
        f"<p>{esc(i.first_line)}</p></li>"
        for n, i in enumerate(items)
    )
    return f'<div class="m-news"><div class="title">{heading}</div><ul class="list">{rows}</ul></div>'


def _body_html(shell: Shell, text: str, *, script: bool) -> str:
    if script:
        return '<script type="text/javascript">\n' + text.replace("</", "<\\/") + "\n</script>"
    lines = [html.escape(line.rstrip(), quote=False) for line in text.splitlines() if line.strip()]
    if shell.bare:
        return "<br>\n".join(lines)
    return "\n".join(f"{shell.paragraph}{line}</p>" for line in lines)


#: How :func:`hard_variant` makes a shell harder.
HARD_VARIANTS = ("hot_list", "bare_text", "headline_in_body")


def hard_variant(shell: Shell, kind: str, hot: Sequence[RelatedItem] = ()) -> Shell:
    """A harder copy of ``shell`` (a template of its own: another portal name): ``hot_list`` puts ``hot``
    (headlines, each with its summary line, no links: a list rendered by script handlers) beside the article;
    ``bare_text`` writes the body as text between ``<br>`` tags; ``headline_in_body`` repeats the headline as
    the body element's first line."""
    after = f"<{_RELATED_AFTER_TAG}></{_RELATED_AFTER_TAG}>"
    template = shell.template
    if kind == "hot_list":
        if not hot:
            raise ValueError("a hot_list variant needs the hot list's items")
        rows = "".join(f"<li><b>{html.escape(i.headline)}</b> {html.escape(i.first_line)}</li>" for i in hot)
        template = template.replace(after, f'{after}<div class="hot-news"><div class="tit">今日热点</div><ul>{rows}</ul></div>', 1)
    elif kind == "headline_in_body":
        template = template.replace(f"<{_BODY_TAG}>", f"<h1>{_TITLE_TOKEN}</h1><{_BODY_TAG}>", 1)
    elif kind != "bare_text":
        raise ValueError(f"kind must be one of {HARD_VARIANTS}, got {kind!r}")
    return dataclasses.replace(shell, name=f"{shell.name}#{kind}", portal=f"{shell.portal}+{kind}", template=template,
                               bare=kind == "bare_text")


def render_page(
    shell: Shell,
    *,
    title: str,
    text: str,
    related: str = "",
    related_inside: bool = False,
    script: bool = False,
) -> bytes:
    """The page bytes of ``text`` under ``title`` in ``shell``, in the shell's encoding.

    ``related`` is a block from :func:`related_block`, put at the end of the article element
    (``related_inside``) or right after it; ``script`` puts ``text`` into a ``<script>`` instead of
    paragraphs (a page rendered by JavaScript).
    """
    if not text.strip():
        raise ValueError("text is empty: give the document's text")
    title_html = html.escape(title.strip() or first_line(text, limit=24), quote=True)
    description = "" if script else html.escape(first_line(text, limit=80), quote=True)
    page = (
        shell.template.replace(f"<{_BODY_TAG}></{_BODY_TAG}>", _body_html(shell, text, script=script))
        .replace(f"<{_RELATED_IN_TAG}></{_RELATED_IN_TAG}>", related if related_inside else "")
        .replace(f"<{_RELATED_AFTER_TAG}></{_RELATED_AFTER_TAG}>", "" if related_inside else related)
        .replace(_TITLE_TOKEN, title_html)
        .replace(_DESC_TOKEN, description)
    )
    return page.encode(shell.encoding, "xmlcharrefreplace")


# ------------------------------------------------------------------------------------- the site


@dataclass(frozen=True)
class BenchPage:
    """One article page of the benchmark site."""

    path: str
    doc_id: str
    shell: str
    body: bytes
    content_type: str
    related_layout: int | None = None
    quoted: tuple[str, ...] = ()
    """Headlines and first-line beginnings the added related block quotes (a body holding one leaked it)."""


@dataclass
class BenchSite:
    """Everything the server sends: article pages, list pages, robots.txt; built by :func:`build_site`."""

    pages: list[BenchPage]
    list_pages: dict[str, bytes]
    hot: dict[str, tuple[str, ...]]  # per hot-list shell, the lines of its hot list (a body holding one leaked it)
    robots_txt: bytes = b"User-agent: *\nDisallow: /admin/\n"
    list_path_pattern: str = r"/list/\d+\.html"

    @property
    def doc_of_path(self) -> dict[str, str]:
        return {p.path: p.doc_id for p in self.pages}

    def sites_toml(self, base_url: str) -> str:
        """The site file for a crawl of this site at ``base_url``: one site per portal (its pages' first path
        segment), as a crawl of real portals has, so each learns its own template."""
        portals = sorted({p.path.split("/")[1] for p in self.pages})
        return "\n".join(site_entry(base_url, name=portal, start_paths=["/list/1.html"],
                                     article_path=f"/{portal}/2018\\d{{4}}/\\d+\\.shtml",
                                     follow_path=self.list_path_pattern) for portal in portals)

    def responses(self) -> dict[str, Response]:
        """What the server sends for each path."""
        served = {p.path: Response(p.body, p.content_type) for p in self.pages}
        served.update({path: Response(body) for path, body in self.list_pages.items()})
        served["/robots.txt"] = Response(self.robots_txt, "text/plain; charset=utf-8")
        return served


_JUNK_KINDS = frozenset({"junk"})
_MAX_PAGES = 90_000  # five-digit page numbers


def _slugs(shells: Sequence[Shell]) -> dict[str, str]:
    """A short unique URL segment (and site name) per portal: ``s007-gne-sina``."""
    portals = sorted({s.portal for s in shells})
    return {p: f"s{n:03d}-" + re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-")[-32:] for n, p in enumerate(portals)}


def _assign(docs: Sequence[Mapping], shells: Sequence[Shell], rng: random.Random, gbk_share: float) -> list[Shell]:
    """A shell per document: stories spread over different portals; shells used evenly; ~gbk_share on GBK."""
    gbk = [s for s in shells if s.encoding != "utf-8"]
    utf8 = [s for s in shells if s.encoding == "utf-8"]
    use = collections.Counter()
    portals_of_story: dict[Any, set[str]] = collections.defaultdict(set)
    chosen: list[Shell] = []
    for doc in docs:
        pools = [gbk, utf8] if gbk and (not utf8 or rng.random() < gbk_share) else [utf8, gbk]
        taken = portals_of_story[doc["story"]]
        shell = None
        for pool in pools:
            free = [s for s in pool if s.portal not in taken]
            if free:
                least = min(use[s.name] for s in free)
                shell = rng.choice([s for s in free if use[s.name] == least])
                break
        if shell is None:  # more documents in the story than portals: reuse one
            shell = rng.choice(list(shells))
        use[shell.name] += 1
        taken.add(shell.portal)
        chosen.append(shell)
    return chosen


def _list_page(number: int, total: int, links: Iterable[tuple[str, str]]) -> bytes:
    rows = "\n".join(f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>' for href, text in links)
    pager = " ".join(
        f'<a href="/list/{n}.html">{n}</a>' if n != number else f"<span>{n}</span>" for n in range(1, total + 1)
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>滚动新闻 第'
        f"{number}页</title></head>\n<body><div class=\"nav\"><a href=\"/list/1.html\">滚动新闻</a></div>\n"
        f'<ul class="list">\n{rows}\n</ul>\n<div class="pager">{pager}</div></body></html>\n'
    ).encode("utf-8")


def build_site(
    docs: Sequence[Mapping],
    shells: Sequence[Shell],
    *,
    seed: int = 1,
    gbk_share: float = 0.2,
    list_size: int = 50,
    related_items: tuple[int, int] = (4, 8),
    hard_share: float = 0.15,
) -> BenchSite:
    """Render every benchmark document (``{"id", "text", "title", "story", "kind"}``) into a page.

    Documents keep their order on the list pages (``list_size`` links each).  Each page gets a
    related-reading block of ``related_items`` (min, max) entries quoting documents of other stories.
    For each of :data:`HARD_VARIANTS`, ``hard_share`` of the shells (at least one) get a hard variant too.
    """
    if not docs:
        raise ValueError("docs is empty: pass the benchmark documents")
    if not shells:
        raise ValueError("shells is empty: load shells with load_shells(data_dir)")
    if not 0 <= gbk_share <= 1:
        raise ValueError(f"gbk_share must be within [0, 1], got {gbk_share}")
    if list_size < 1:
        raise ValueError(f"list_size must be >= 1, got {list_size}")
    low, high = related_items
    if not 1 <= low <= high:
        raise ValueError(f"related_items must be (min, max) with 1 <= min <= max, got {related_items}")
    if len(docs) > _MAX_PAGES:
        raise ValueError(f"at most {_MAX_PAGES} documents fit the site's URL scheme, got {len(docs)}")
    ids = [d["id"] for d in docs]
    if len(set(ids)) != len(ids):
        raise ValueError("document ids repeat: give each document its own id")
    rng = random.Random(seed)
    headlines = [RelatedItem("", d["title"].strip(), first_line(d["text"], limit=30)) for d in docs
                 if d.get("kind") not in _JUNK_KINDS and d.get("title", "").strip()]
    hard = [hard_variant(shell, kind, rng.sample(headlines, min(30, len(headlines))))
            for kind in HARD_VARIANTS for shell in rng.sample(list(shells), max(1, round(hard_share * len(shells))))]
    shells = [*shells, *hard]
    assigned = _assign(docs, shells, rng, gbk_share)
    slugs = _slugs(shells)
    serials = rng.sample(range(10_000, 10_000 + _MAX_PAGES), len(docs))
    paths = [
        f"/{slugs[shell.portal]}/2018{1 + n % 12:02d}{1 + n % 28:02d}/{serial}.shtml"
        for n, (shell, serial) in enumerate(zip(assigned, serials))
    ]
    quotable = [
        RelatedItem(path, d["title"].strip(), first_line(d["text"]))
        for d, path in zip(docs, paths)
        if d.get("kind") not in _JUNK_KINDS and d.get("title", "").strip()
    ]
    story_of_path = {path: d["story"] for d, path in zip(docs, paths)}
    hot_rows = {s.name: [tuple(map(html.unescape, row)) for row in re.findall(r"<li><b>(.*?)</b> (.*?)</li>", s.template)]
                for s in hard if s.portal.endswith("+hot_list")}
    hot = {name: tuple(headline for headline, _ in rows) for name, rows in hot_rows.items()}
    hot_lines = {name: [" ".join(row) for row in rows] for name, rows in hot_rows.items()}
    pages: list[BenchPage] = []
    for doc, shell, path in zip(docs, assigned, paths):
        others = [item for item in rng.sample(quotable, min(len(quotable), 3 * high)) if story_of_path[item.href] != doc["story"]]
        items = others[: rng.randint(low, high)]
        layout = rng.randrange(5) if items else None
        block = related_block(items, heading=rng.choice(RELATED_HEADINGS_USED), layout=layout) if items else ""
        body = render_page(
            shell,
            title=doc.get("title") or "",
            text=doc["text"],
            related=block,
            related_inside=rng.random() < 0.5,
            script=doc.get("kind") in _JUNK_KINDS,
        )
        pages.append(BenchPage(path=path, doc_id=doc["id"], shell=shell.name, body=body, content_type=shell.content_type,
                               related_layout=layout, quoted=_quoted(items, hot_lines.get(shell.name, ()))))
    docs_by_id = {d["id"]: d for d in docs}
    lists = [pages[i : i + list_size] for i in range(0, len(pages), list_size)]
    list_pages = {
        f"/list/{n}.html": _list_page(n, len(lists), ((p.path, _link_text(docs_by_id, p)) for p in chunk))
        for n, chunk in enumerate(lists, start=1)
    }
    return BenchSite(pages=pages, list_pages=list_pages, hot=hot)


def _quoted(items: Sequence[RelatedItem], hot: Sequence[str] = ()) -> tuple[str, ...]:
    """What of ``items`` would show a leak: headlines of 8+ characters, first lines' first 20 characters.

    A quote that the shell's hot list (its lines ``hot``) also shows is left out: the hot list draws on the same
    stories (a reprint's headline, a shared first line), so a body holding that text may hold it from the hot
    list, which is counted as a hot-list leak, not twice.
    """
    quoted = [i.headline for i in items if len(i.headline) >= 8]
    quoted += [i.first_line.rstrip("…")[:20] for i in items if len(i.first_line) >= 10]
    return tuple(q for q in quoted if not any(q in line for line in hot))


def _link_text(docs_by_id: Mapping[str, Mapping], page: BenchPage) -> str:
    doc = docs_by_id[page.doc_id]
    return (doc.get("title") or "").strip() or first_line(doc["text"], limit=24)
