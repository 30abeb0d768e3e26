"""Delete boilerplate blocks from a parsed HTML page before the main text is extracted.

Chinese portals surround an article with blocks that generic extractors keep: "相关阅读" / "推荐阅读" /
"猜你喜欢" headline lists, "24小时排行" rankings, navigation, share bars, comment areas and ads. Their class
names are often pinyin or meaningless (``xgyd``, ``bd2``), so they are found here by what they SAY and how
they LOOK, not only by name:

1. tags that never hold article text (script, style, nav, footer, aside, iframe, form controls...);
2. the site's own CSS selectors (``extra_selectors``, from ``remove_selectors`` in the site config);
3. related-reading blocks found by their heading TEXT (:data:`RELATED_HEADINGS`, plus comment and share
   headings): the heading, the block it opens (its container, climbing while the heading opens that
   container) and the headline lists that follow it;
4. elements whose class or id names a boilerplate role (nav, footer, share, comment, related, 推荐...);
5. link-dense blocks: most of their text inside ``<a>``, at least three links, no prose of their own.

Every rule spares an element that holds a large share of the page's prose (sentence-like text with
Chinese or Latin punctuation), so a badly named article wrapper is never deleted. Rules 3 and 5 weigh
ARTICLE prose, which leaves out summaries: a prose run that directly follows a headline-length link is the
first line printed under a headline in a list (``<li><a>标题</a><p>摘要……</p></li>``). Otherwise a related
block with a summary under each headline outweighs a short article and is spared as if it were the article.

>>> import lxml.html
>>> tree = lxml.html.document_fromstring(
...     "<html><body><div><p>正文第一段，讲的是一件事情的来龙去脉。</p></div>"
...     "<div><h3>相关阅读</h3><ul><li><a href='/1'>别的新闻标题一</a></li>"
...     "<li><a href='/2'>别的新闻标题二</a></li></ul></div></body></html>")
>>> remove_boilerplate(tree) > 0
True
>>> "别的新闻" in tree.text_content(), "正文第一段" in tree.text_content()
(False, True)
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from lxml import etree
from lxml.html import HtmlElement

from newsdedup.text.normalize import nfkc

__all__ = [
    "RELATED_HEADINGS",
    "COMMENT_HEADINGS",
    "SHARE_HEADINGS",
    "is_related_heading",
    "measure",
    "normalize_heading",
    "remove_boilerplate",
]

#: Headings that introduce related-reading, recommendation and ranking blocks (simplified and traditional).
RELATED_HEADINGS: tuple[str, ...] = (
    "相关阅读", "相关新闻", "相关文章", "相关报道", "相关链接", "相关推荐", "相关专题", "相关资讯", "相关内容",
    "相关视频", "相关图集", "相关评论", "延伸阅读", "扩展阅读", "推荐阅读", "推荐新闻", "推荐文章",
    "热门推荐", "热门文章", "热门新闻", "热门阅读", "热门资讯", "热门排行", "热门话题", "热点新闻",
    "热点推荐", "热点文章", "热点专题", "热点排行", "热读", "精彩推荐", "精彩阅读", "精彩图片",
    "精彩专题", "为你推荐", "为您推荐", "编辑推荐", "今日推荐", "本周推荐", "图片推荐", "视频推荐",
    "猜你喜欢", "猜您喜欢", "你可能感兴趣", "您可能感兴趣", "大家都在看", "看了本文的人还看了",
    "更多精彩", "更多新闻", "更多阅读", "更多推荐", "往期回顾", "往期精选", "最新新闻", "最新文章",
    "最新资讯", "排行", "排行榜", "24小时排行", "阅读排行", "点击排行", "新闻排行",
    # Traditional Chinese forms.
    "相關閱讀", "相關新聞", "相關文章", "相關報導", "相關報道", "延伸閱讀", "推薦閱讀", "熱門推薦",
    "熱門文章", "熱門新聞", "熱點新聞", "精彩推薦", "為你推薦", "猜你喜歡", "更多精彩",
)
#: Headings of comment areas (removed like related blocks; not counted as related-reading leaks).
COMMENT_HEADINGS: tuple[str, ...] = (
    "网友评论", "最新评论", "热门评论", "精彩评论", "全部评论", "评论列表", "发表评论", "我要评论",
    "已有评论", "用户评论", "读者评论", "回复线索", "网友留言", "發表評論", "網友評論",
)
#: Headings of share bars.
SHARE_HEADINGS: tuple[str, ...] = ("分享到", "分享至", "分享本文", "转发到", "分享給", "分享到：")

# A heading is a short text: the keyword plus a few words such as "24小时", "更多", "本周".
_MAX_HEADING_CHARS = 12
_HEADING_WORDS = tuple(sorted(set(RELATED_HEADINGS + COMMENT_HEADINGS + SHARE_HEADINGS), key=len, reverse=True))

# Tags whose content is never article text.
_DROP_TAGS = (
    "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object", "embed", "svg",
    "canvas", "nav", "footer", "aside", "button", "select", "textarea", "input", "label", "dialog", "menu",
)
# Whole class/id tokens that name a boilerplate role (tokens are split at spaces, '-' and '_').
_BOILERPLATE_TOKENS = frozenset(
    """
    nav navbar navigation menu menubar topbar top-bar breadcrumb breadcrumbs crumb crumbs crumbnav
    footer foot copyright copyrights sidebar side aside rightbar leftbar sidenav widget widgets
    share sharebar bdshare jiathis social sns toolbar tools
    comment comments commentlist comment-list pinglun reply replies
    related relate relatedlist relatednews related-news recommend recommends recommendation tuijian
    xgyd xgxw xgwz xiangguan hotnews hot-news hotlist hotarticle ranking rank ranklist paihang top10
    ad ads advert advertisement adsbygoogle banner gg guanggao sponsor promo promotion
    login signin register subscribe newsletter modal popup cookie cookies
    pagination pager
    """.split()
)
_TOKEN_SPLIT = re.compile(r"[\s\-_]+")
# One search of a lowercased name for a whole token of the set, at C speed (splitting every element's names into
# a set of tokens cost ~1 ms CPU of a 150 KB page): a word not preceded nor followed by a character that is no
# separator. A listed word holding a separator ("top-bar") is never a whole token, and is left out.
_BOILERPLATE_NAME = re.compile(r"(?<![^\s\-_])(?:%s)(?![^\s\-_])" % "|".join(
    re.escape(token) for token in sorted(_BOILERPLATE_TOKENS) if not _TOKEN_SPLIT.search(token)
))
_SENTENCE_PUNCT = re.compile(r"[，。！？；：、,.!?;]")
# Prose: a text run long enough, with sentence punctuation. Headlines and menus rarely qualify.
_MIN_PROSE_RUN = 10
# A block whose own prose is below this many characters is not article text.
_MAX_BLOCK_PROSE = 40
# An element holding at least this share of the page's prose is the article (or contains it).
_PROTECTED_PROSE_SHARE = 0.5
# A link whose text has at least this many characters is a headline: a prose run right after it is its summary.
# Shorter links are the names and terms that running text links to.
_MIN_HEADLINE_CHARS = 6
# A summary is one short line; a longer run after a link is article text (e.g. under a linked title).
_MAX_SUMMARY_CHARS = 150
# At most this much other text (a date, a source) lies between a headline and its summary.
_MAX_SUMMARY_GAP = 24
_ITEM_TAGS = frozenset({"li", "dd", "dt"})


# Letters and numbers (Unicode categories L* and N*): ``[^\W_]`` is exactly str.isalnum, and a
# regex scan is an order of magnitude faster than testing unicodedata.category per character.
_LETTERS_AND_NUMBERS = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s+")


def normalize_heading(text: str) -> str:
    """The text with whitespace, punctuation and symbols removed (``"【相关阅读】："`` -> ``"相关阅读"``)."""
    if len(text) <= _CACHED_CHARS:
        return _normalize_short(text)
    return _normalize_long(text) if len(text) <= _CACHED_LONG_CHARS else _normalize(text)


def _normalize(text: str) -> str:
    return "".join(_LETTERS_AND_NUMBERS.findall(nfkc(text)))


# A page normalizes ~600 texts (its blocks, links, headings), most of them its site's template: the same menus,
# footers and list headings on every page of the site. Short texts are remembered (NFKC of Chinese text with
# full-width punctuation costs ~4 us); long ones are an article's own paragraphs, seen once, and would only
# fill memory. 20,000 texts of at most 200 characters: ~6 MB a worker if they average 20 characters, 20 MB at most.
_CACHED_CHARS = 200
_normalize_short = functools.lru_cache(maxsize=20_000)(_normalize)
# Longer texts are the page's own paragraphs: seen on one page only, but there some seven times over (its blocks'
# hashes, the template's strip, the reading's tidy-up, the body's hashes, the template check), at ~0.15 ms each for
# 800 characters. The pages being read keep theirs: 256 texts of at most 10,000 characters, a few MB at most.
_CACHED_LONG_CHARS = 10_000
_normalize_long = functools.lru_cache(maxsize=256)(_normalize)


def _heading_word(text: str, words: Iterable[str] = _HEADING_WORDS) -> str | None:
    norm = normalize_heading(text)
    if not norm or len(norm) > _MAX_HEADING_CHARS:
        return None
    for word in words:
        if word in norm:
            return word
    return None


def is_related_heading(text: str) -> bool:
    """True when ``text`` is short and names a related-reading / recommendation / ranking block."""
    return _heading_word(text, RELATED_HEADINGS) is not None


@dataclass
class TextStats:
    """Character counts of one element's text, its descendants included."""

    text: int = 0  # non-space characters
    link: int = 0  # of which inside <a>
    prose: int = 0  # of which in sentence-like runs outside links
    links: int = 0  # number of <a> elements
    summary: int = 0  # of the prose, runs that directly follow a headline-length link
    items: int = 0  # list items (li, dd, dt) with text, outermost ones
    item_text: int = 0  # of the text, inside those items

    @property
    def article_prose(self) -> int:
        """Prose that is not a summary under a headline."""
        return self.prose - self.summary


def _visible(piece: str | None) -> int:
    # str.split() splits at exactly the characters the regex \s matches (both use str.isspace), several
    # times faster than summing the lengths of whitespace runs.
    return 0 if not piece else sum(map(len, piece.split()))


def _prose(piece: str | None) -> int:
    if not piece:
        return 0
    stripped = piece.strip()
    if len(stripped) < _MIN_PROSE_RUN or not _SENTENCE_PUNCT.search(stripped):
        return 0
    return _visible(stripped)


def measure(root: HtmlElement) -> dict[HtmlElement, TextStats]:
    """Text, link-text and prose character counts of every element (children counted in their parents).

    The dict lists children before their parents (reverse document order).
    """
    return _measure(root)[0]


# Elements whose text is no heading of a block (see _remove_heading_blocks).
_NOT_ANCHORS = frozenset({"html", "head", "title", "body"})
# More than _MAX_HEADING_CHARS CJK unified ideographs: NFKC keeps each of them as it is (it has no
# decomposition and composes with nothing) and each is a letter, so the normalized text is longer than any
# heading. Checked at C speed on the raw text, it spares normalizing the page's prose.
# Anchored (\A): unanchored, a search would retry from every position, quadratic on long text with few ideographs.
_MANY_IDEOGRAPHS = re.compile(r"\A(?:[^\u4e00-\u9fff]*[\u4e00-\u9fff]){%d}" % (_MAX_HEADING_CHARS + 1))
# Where NFKC finds CJK unified ideographs other than in themselves: radicals, enclosed and compatibility
# ideographs and their supplements (tests/test_extract_related.py checks this against all of Unicode).
_IDEOGRAPH_SOURCES = ((0x2E80, 0x2FDF), (0x3000, 0x33FF), (0xF900, 0xFAFF), (0x1F200, 0x1F2FF), (0x2F800, 0x2FA1F))


def _key_chars(words: Sequence[str]) -> str | None:
    """Ideographs such that every word holds one (chosen greedily, fewest first), or None if a word has none."""
    left = [set(word) for word in words]
    chosen = []
    while left:
        candidates = {c for word in left for c in word if "\u4e00" <= c <= "\u9fff"}
        if not candidates or any(not any("\u4e00" <= c <= "\u9fff" for c in word) for word in left):
            return None
        best = max(sorted(candidates), key=lambda c: sum(c in word for word in left))
        chosen.append(best)
        left = [word for word in left if best not in word]
    return "".join(chosen)


class _HeadingSearch:
    """:func:`_heading_word` for ``words``, with an exact screen that rejects most texts before normalizing.

    Every word holds one of a few key ideographs; a text whose NFKC form holds none of them (no key, and no
    character that NFKC turns into one) holds no word, and neither does one with too many ideographs.
    """

    def __init__(self, words: Sequence[str]) -> None:
        self.words = tuple(words)
        keys = _key_chars(self.words)
        if keys is None:
            self.screen = None
            return
        # Each candidate normalized once, not once a key: every process imports this (~40 ms saved in each).
        key_set = set(keys)
        sources = key_set | {chr(code) for low, high in _IDEOGRAPH_SOURCES for code in range(low, high + 1)
                             if not key_set.isdisjoint(unicodedata.normalize("NFKC", chr(code)))}
        self.screen = re.compile("[" + "".join(sorted(sources)) + "]")

    def __call__(self, text: str) -> str | None:
        if self.screen is not None and (_MANY_IDEOGRAPHS.match(text) or not self.screen.search(text)):
            return None
        return _heading_word(text, self.words)


_HEADINGS = _HeadingSearch(_HEADING_WORDS)


@dataclass
class _Walk:
    """What one measuring walk saw of each element (by its index in document order), for re-measuring the tree
    after removals without walking again what they left as it was (see :func:`_measure`)."""

    elements: list[HtmlElement]
    rows: list[list[int]]
    #: Per element: the walk's state entering it (its dead parts as -1), the state right after it (before its
    #: tail: after_headline, gap, link_chars), the elements of its subtree (itself included).
    trail: list[tuple[tuple[bool, int, int], bool, int, int, int]]
    stats: list[TextStats]
    index: dict[HtmlElement, int]


def _measure(
    root: HtmlElement, headings: _HeadingSearch | None = None, *, record: bool = False, before: _Walk | None = None,
    changed: AbstractSet[HtmlElement] = frozenset(),
) -> tuple[dict[HtmlElement, TextStats], list[HtmlElement], _Walk | None]:
    """:func:`measure`, and with ``headings`` the elements one of whose own text pieces (its text, its
    children's tails) is such a heading, in document order; and with ``record`` the record of the walk
    (keeping it costs ~1 ms a 150 KB page: only the boilerplate remover, which re-measures, asks for it).

    ``before``: the record of an earlier walk of this tree, since which only elements were dropped, and
    ``changed`` holds every ancestor they had. An element outside ``changed`` that the walk enters in the
    state it entered it before holds the same text and is walked the same way: its subtree's counts and the
    state after it are taken from the record instead (re-measuring the whole tree after each removal pass
    cost ~3.7 ms CPU of a 150 KB page's ~42 ms extraction, 0.7 ms this way; most of the tree is left as it was).

    One walk over the tree reads every text piece once: the counts, the summary lines under headlines and
    the heading search all come from it. Walking the text in document order, after a link of
    :data:`_MIN_HEADLINE_CHARS` or more the next prose run outside links is that headline's summary when it
    is short (:data:`_MAX_SUMMARY_CHARS`) and only a little text without sentence punctuation (a date, a
    source name) lies between the two.
    """
    elements: list[HtmlElement] = []  # in document order
    # Per element: text, link, prose, links, summary, items, item_text (TextStats' fields, in that order).
    rows: list[list[int]] = []
    trail: list = []  # with record: _Walk.trail
    made: list[TextStats | None] = []  # with `before`: the counts of what is taken from it, None for the rest
    fresh: list[int] = []  # with `before`: the elements walked again
    state = None
    reused_end = (False, -1, -1)  # the state after the element whose subtree is taken from `before`
    anchors: set[int] = set()
    # The elements being walked, outermost first: (row, an <a> or inside one, index, may be a heading, state
    # entering it (with record), tag).
    stack: list[tuple[list[int], bool, int, bool, tuple[bool, int, int] | None, str | None]] = []
    after_headline = False
    linked = False  # the innermost open element is an <a> or inside one
    gap = 0  # characters of other text since the headline
    link_chars = 0  # visible characters inside the link being walked
    # The walk yields elements only; comments and processing instructions (which a page parsed without
    # removing them holds) are pieces of their parent through their tails, outside the summary search.
    others: dict[HtmlElement, list[str]] = {}
    for node in root.iter(etree.Comment, etree.ProcessingInstruction, etree.Entity):
        parent = node.getparent()
        if node is not root and parent is not None and node.tail:
            others.setdefault(parent, []).append(node.tail)

    screen = headings.screen.search if headings is not None and headings.screen is not None else None
    walker = etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        if event == "start":
            tag = el.tag
            parent_linked = linked  # the innermost open element's (False outside the root)
            if record:
                # The state the subtree's walk depends on: gap counts only after a headline, link_chars only
                # inside a link (outside one, the next link resets it before reading it).
                state = (after_headline, gap if after_headline else -1, link_chars if parent_linked else -1)
                i = before.index.get(el, -1) if before is not None and stack and el not in changed else -1
                if i >= 0 and before.trail[i][0] == state:
                    j = i + before.trail[i][4]
                    elements += before.elements[i:j]
                    rows += before.rows[i:j]  # final rows: nothing adds to them any more
                    trail += before.trail[i:j]
                    made += before.stats[i:j]
                    stack.append((before.rows[i], parent_linked, -1, False, None, None))
                    reused_end = before.trail[i][1:4]
                    walker.skip_subtree()
                    continue
            if tag == "a":
                linked = True
                if not parent_linked:
                    link_chars = 0
            else:
                linked = parent_linked
            index = len(elements)
            row = [0, 0, 0, 0, 0, 0, 0]
            anchorable = headings is not None and tag not in _NOT_ANCHORS
            stack.append((row, linked, index, anchorable, state, tag))
            elements.append(el)
            rows.append(row)
            if record:
                trail.append(None)
                if before is not None:
                    made.append(None)
                    fresh.append(index)
            if others and el in others:
                for piece in others[el]:  # counted, not searched for summaries
                    n = _visible(piece)
                    if n:
                        row[0] += n
                        if linked:
                            row[1] += n
                        else:
                            row[2] += _prose(piece)
                        if anchorable and headings(piece):
                            anchors.add(index)
            piece = el.text
        else:
            # The tag as the start read it: lxml builds a new str at each read.
            row, _, closed, _, state, tag = stack.pop()
            if closed < 0:
                pass  # taken from `before`, final
            elif tag == "a":
                row[3] += 1
            elif tag in _ITEM_TAGS:  # an item counts once, whatever items it holds
                row[5], row[6] = (1, row[0]) if row[0] else (0, 0)
            if not stack:
                if record:
                    trail[closed] = (state, after_headline, gap, link_chars, len(elements) - closed)
                break  # the root's tail is no part of it
            parent_row, linked, index, anchorable, _, _ = stack[-1]
            if row[0] or row[3]:  # else every count is 0 (each is part of the text or needs text), nothing to add
                parent_row[0] += row[0]
                parent_row[1] += row[1]
                parent_row[2] += row[2]
                parent_row[3] += row[3]
                parent_row[4] += row[4]
                parent_row[5] += row[5]
                parent_row[6] += row[6]
            if closed < 0:  # taken from `before`: so is the state after it
                after_headline, gap, link_chars = reused_end
            else:
                if tag == "a" and not linked:
                    if link_chars >= _MIN_HEADLINE_CHARS:
                        after_headline, gap = True, 0
                    else:  # a short link (a source, "更多") between headline and summary is part of the gap
                        gap += link_chars
                        after_headline = after_headline and gap <= _MAX_SUMMARY_GAP
                if record:
                    trail[closed] = (state, after_headline, gap, link_chars, len(elements) - closed)
            piece = el.tail
            row = parent_row
        # The piece (an element's text, or the tail of the element just closed) belongs to `row`.
        if not piece or piece.isspace():  # most pieces are a tag's indentation: one C check, no split
            continue
        n = len("".join(piece.split()))  # _visible, inline: this runs for every text piece of the page
        # The heading search's screen first, inline: it rejects nearly every piece without a call.
        if anchorable and index not in anchors and (screen is None or screen(piece)) and headings(piece):
            anchors.add(index)
        row[0] += n
        if linked:
            row[1] += n
            link_chars += n
            continue
        p = n if (n >= _MIN_PROSE_RUN or len(piece.strip()) >= _MIN_PROSE_RUN) and _SENTENCE_PUNCT.search(piece) else 0
        if p:
            row[2] += p
            if after_headline and p <= _MAX_SUMMARY_CHARS:
                row[4] += p
            after_headline = False
        else:
            gap += n
            after_headline = after_headline and gap <= _MAX_SUMMARY_GAP
    if before is None:
        made = list(itertools.starmap(TextStats, rows))
    for i in fresh:
        made[i] = TextStats(*rows[i])
    walk = _Walk(elements, rows, trail, made, dict(zip(elements, range(len(elements))))) if record else None
    stats = dict(zip(reversed(elements), reversed(made)))  # children before their parents
    return stats, [elements[i] for i in sorted(anchors)], walk


def _drop(el: HtmlElement) -> bool:
    parent = el.getparent()
    if parent is None:
        return False
    el.drop_tree()  # keeps el.tail in the parent
    return True


def _is_top(el: HtmlElement) -> bool:
    return el.tag in ("html", "body", "head") or el.getparent() is None


class _Remover:
    def __init__(self, root: HtmlElement, headings: _HeadingSearch) -> None:
        self.root = root
        self.walk: _Walk | None = None
        self.changed: set[HtmlElement] = set()  # ancestors of what was dropped since the last walk
        self.refresh(headings)

    def drop(self, el: HtmlElement) -> bool:
        """Drop ``el`` (keeping its tail), noting what that changes for the next :meth:`refresh`."""
        self.changed.update(el.iterancestors())
        return _drop(el)

    def refresh(self, headings: _HeadingSearch | None = None) -> None:
        """Measure the tree again (and find the elements holding one of ``headings``)."""
        before = self.walk if headings is None else None
        self.stats, self.anchors, self.walk = _measure(
            self.root, headings, record=True, before=before, changed=self.changed
        )
        self.changed = set()
        body = self.root.find("body") if self.root.tag == "html" else self.root
        page = self.stats.get(body) if body is not None else None
        self.total_prose = page.prose if page is not None else 0
        # Summaries under headlines are left out: they are a related block's prose, not the article's.
        self.total_article_prose = page.article_prose if page is not None else 0

    def protected(self, el: HtmlElement) -> bool:
        """The element holds much of the page's article prose: it is (or wraps) the article."""
        s = self.stats.get(el)
        if s is None:
            return False
        if self.total_article_prose == 0:  # all prose follows links (or there is none): nothing to tell apart
            if s.links >= 3 and 2 * s.summary >= s.prose:
                # Headlines each with its summary line: a related list, even when it outweighs a short
                # article whose lone paragraph also follows a link (the page-level benchmark leaked 4 such).
                return False
            return self.total_prose > 0 and s.prose >= _PROTECTED_PROSE_SHARE * self.total_prose
        return s.article_prose >= _PROTECTED_PROSE_SHARE * self.total_article_prose

    def minor(self, el: HtmlElement) -> bool:
        """A named boilerplate block may hold some prose (a comment, a notice) but never the article."""
        s = self.stats.get(el)
        return s is None or self.total_prose == 0 or s.prose < 0.2 * self.total_prose

    def non_prose(self, el: HtmlElement) -> bool:
        """A block that is not article text: mostly links, or short text without sentences."""
        s = self.stats.get(el)
        if s is None:
            return True
        if self.protected(el):
            return False
        if s.text == 0:
            return True
        if s.prose < _MAX_BLOCK_PROSE and s.link * 2 >= s.text:
            return True
        if s.summary > 0 and s.links >= 3 and s.article_prose < _MAX_BLOCK_PROSE:
            return True  # headlines, each with its summary line
        return s.prose == 0 and s.text < 60


def _text_before(parent: HtmlElement, child: HtmlElement) -> int:
    """Visible characters of ``parent`` that come before ``child`` (normalized: no punctuation)."""
    count = len(normalize_heading(parent.text or ""))
    for sibling in parent:
        if sibling is child:
            break
        if isinstance(sibling.tag, str):
            count += len(normalize_heading(sibling.text_content()))
        count += len(normalize_heading(sibling.tail or ""))
        if count > 4:
            break
    return count


def _remove_heading_blocks(remover: _Remover) -> int:
    """Delete the blocks opened by the headings the remover found (:attr:`_Remover.anchors`)."""
    removed = 0
    for anchor in remover.anchors:
        if anchor.getparent() is None or not _attached(anchor, remover.root):
            continue  # already gone with an earlier block
        stats = remover.stats.get(anchor)
        if stats is None or remover.protected(anchor) or stats.article_prose >= _MAX_BLOCK_PROSE:
            continue  # the words occur inside running text: not a heading
        node = anchor
        # Climb while the heading opens its container: nothing but the heading comes before it, and the
        # container is no article.
        while True:
            parent = node.getparent()
            if parent is None or _is_top(parent) or remover.protected(parent):
                break
            if _text_before(parent, node) > 4:
                break
            node = parent
        # The block the heading opens may continue in the following siblings (a heading <div> followed by
        # a list <div>): drop them while they are not prose.
        followers = []
        sibling = node.getnext()
        while sibling is not None:
            if isinstance(sibling.tag, str):
                if not remover.non_prose(sibling):
                    break
                followers.append(sibling)
            sibling = sibling.getnext()
        for el in [node, *followers]:
            removed += remover.drop(el)
    return removed


def _attached(el: HtmlElement, root: HtmlElement) -> bool:
    while el is not None:
        if el is root:
            return True
        el = el.getparent()
    return False


def _names_boilerplate(el: HtmlElement) -> bool:
    """A whole token (split at spaces, '-' and '_') of the element's class, id or role is in _BOILERPLATE_TOKENS."""
    for attr in ("class", "id", "role"):
        value = el.get(attr)
        if value and _BOILERPLATE_NAME.search(value.lower()):
            return True
    return False


def _remove_outermost(remover: _Remover, doomed: Callable[[HtmlElement], bool]) -> int:
    """Drop the outermost elements (below html, head and body) that are ``doomed``: what they hold goes with
    them unexamined.

    The elements are read from the remover's last measuring walk (:attr:`_Remover.walk`, in document order with
    each element's subtree size), which matches the tree: every pass that drops something is followed by a
    refresh. A doomed element's subtree is stepped over by its size, with no walk of the tree in lxml and no
    Python proxy handed out per node (a walk of its own per pass was ~0.25 ms of a 150 KB page)."""
    walk = remover.walk
    elements, trail = walk.elements, walk.trail
    found = []
    i, end = 0, len(elements)
    while i < end:
        el = elements[i]
        if doomed(el) and not _is_top(el):  # both pure: the cheap, nearly always false test first
            found.append(el)
            i += trail[i][4]
        else:
            i += 1
    return sum(remover.drop(el) for el in found)


def _remove_by_name(remover: _Remover) -> int:
    return _remove_outermost(remover, lambda el: _names_boilerplate(el) and remover.minor(el))


_LINK_BLOCK_TAGS = frozenset(
    "div ul ol dl table tbody tr td th p section span li dd dt font center header h1 h2 h3 h4 h5 h6".split()
)


def _remove_link_dense(remover: _Remover) -> int:
    def link_dense(el: HtmlElement) -> bool:
        if el.tag not in _LINK_BLOCK_TAGS:
            return False
        s = remover.stats.get(el)
        if s is None or s.links < 3 or s.text < 10:
            return False
        return s.link >= 0.6 * s.text and s.prose < _MAX_BLOCK_PROSE and not remover.protected(el)

    return _remove_outermost(remover, link_dense)


def remove_boilerplate(tree: HtmlElement, extra_selectors: Sequence[str] = ()) -> int:
    """Delete boilerplate from ``tree`` in place; return how many elements were removed.

    ``extra_selectors`` are CSS selectors of blocks the site config wants gone (e.g. ``"div.xgyd"``).
    """
    if isinstance(extra_selectors, str):
        raise ValueError("extra_selectors must be a sequence of CSS selectors, not one string; wrap it in a list")
    root = tree.getroot() if isinstance(tree, etree._ElementTree) else tree
    removed = 0
    for el in [el for el in root.iter(*_DROP_TAGS)]:
        removed += _drop(el)
    for selector in extra_selectors:
        try:
            matches = root.cssselect(selector)
        except Exception as exc:  # cssselect raises its own SelectorError family
            raise ValueError(f"invalid CSS selector {selector!r} in remove_selectors: {exc}") from exc
        for el in matches:
            if el is not root:
                removed += _drop(el)
    remover = _Remover(root, _HEADINGS)
    # Each pass works on the counts of what is left; re-measuring walks the whole tree, so it is done
    # only when the pass before removed something.
    dropped = _remove_heading_blocks(remover)
    if dropped:
        remover.refresh()
    removed += dropped
    dropped = _remove_by_name(remover)
    if dropped:
        remover.refresh()
    removed += dropped
    removed += _remove_link_dense(remover)
    return removed
