"""A site's page template, learned from its own pages: text that recurs across them is boilerplate.

A one-page extractor guesses which block is the article from that page alone. A crawler sees many pages of
the same site, and there the template gives itself away: navigation, hot lists, footers, editor lines and
disclaimers come back on page after page, while the article text differs from page to page. So:

- :func:`page_blocks` cuts a parsed page into text blocks (the text each block-level element holds outside
  nested blocks: a paragraph, a list item, a table cell) and :func:`line_hash` names each by a hash of its
  letters and digits;
- :class:`SiteTemplate` counts, over a window of the site's recent pages, on how many pages each block
  recurs outside the page's own body. A block on :data:`MIN_PAGES` or more of them is
  boilerplate (:meth:`~SiteTemplate.boilerplate`);
- :func:`strip_boilerplate` deletes the largest elements whose text is boilerplate, before the one-page rules
  run, so a hot list that outweighs a short article is gone before anyone weighs it;
- :meth:`SiteTemplate.failure` catches a *template failure*: a body made mostly of text that other pages of
  the site (other URLs) also carry, or holding recurring paragraphs that do not speak of the page's headline (the
  leftover of another article in the shell; :func:`speaks_of_headline`). Such text is not the page's article
  (a paragraph other pages print in their articles that does speak of it is: a series' introduction); the page
  is re-extracted without it (:meth:`~SiteTemplate.retry_boilerplate`) rather than let it join unrelated
  stories into one cluster. So is a body that repeats another page's body of the site exactly, under a headline
  unrelated to that page's (:meth:`SiteTemplate.repeat_of`): a site-wide overlay (a wallet or payment notice, a login
  box) taken for the article of pages whose own text is short or rendered by script. Two pages tell it, so it is
  caught from a site's second page on, before the template knows any block. :meth:`SiteTemplate.check` runs the whole judgement (failure, retry, :meth:`~SiteTemplate.settle`):
  the crawl and the evaluation both call it, so the evaluation's figures are what a crawl stores.

The template is plain data (:meth:`~SiteTemplate.to_bytes`), kept with the site's state between runs.

>>> import lxml.html
>>> def page(headline, story):
...     return lxml.html.document_fromstring(
...         f"<html><body><h1>{headline}</h1><div class='txt'><p>{story}</p></div>"
...         "<ul class='hot'><li>热门一：城东新区规划公布</li><li>热门二：地铁五号线开通</li></ul></body></html>")
>>> site = SiteTemplate()
>>> for n in range(3):
...     _ = site.learn(page_lines(page(f"标题{n}", f"第{n}篇正文，内容各不相同。"), f"标题{n}"))
>>> tree = page("标题9", "第九篇正文，内容也不同。")
>>> strip_boilerplate(tree, site.boilerplate(), "标题9")
1
>>> tree.text_content()
'标题9第九篇正文，内容也不同。'
"""

from __future__ import annotations

import bisect
import collections
import functools
import json
import re
import struct
from array import array
from collections.abc import Awaitable, Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Generic, TypeVar

from lxml.html import HtmlElement

from newsdedup.extract.related import normalize_heading
from newsdedup.text.hashing import hash64

__all__ = [
    "MIN_PAGES",
    "SiteTemplate",
    "TemplateCheck",
    "TemplateFailure",
    "headline_share",
    "line_hash",
    "normalized_line_hash",
    "normalized_line_hashes",
    "page_blocks",
    "page_lines",
    "speaks_of_headline",
    "strip_boilerplate",
]

#: A block recurring on this many of a site's pages (distinct titles) is template. Two pages can share a
#: paragraph honestly (a follow-up quoting its predecessor, one story under two headlines); three unrelated
#: pages sharing it is the template speaking.
MIN_PAGES = 3
#: Pages remembered per site: enough to see a daily hot list recur, bounded so the state stays small
#: (about 3 KB a page).
WINDOW = 100
#: An element goes when at most this share of its text is new to the site and none of that is prose: a hot
#: list with one fresh headline is still the hot list.
_MAX_NEW_SHARE = 0.1
#: A block in the body this long (letters and digits) is a paragraph of the article: it never counts as template,
#: however many pages print it (the same article twice, a series' introduction). Shorter lines in a body (a
#: promotion, a headline link, an editor line the extractor let in) do count.
PARAGRAPH_CHARS = 50
#: A body with at least this share of its characters in lines other pages of the site carry is a template
#: failure ("mostly", so an article that quotes one shared notice is not one).
FAILURE_SHARE = 0.5
#: Body paragraphs that this many of a site's pages carry, the page read among them (``min_pages``), and that share
#: less than this part of the page's headline (its character bigrams) are another article's text: the leftover
#: of the shell's own story, a fixed feature, a standing column. A page's headline shares a median 63% of its
#: bigrams with its own article and an unrelated text shares a median 0% (1,367 titles of the page benchmark,
#: seed 1): below 20% lie 3.4% of own articles and 96.5% of unrelated texts. Checked on pages it was not chosen on
#: (883 cwced and xmu-finance-news pages, our extracted headline against the gold text, and against another page's
#: gold of the same set): 1.9% and 92.2%. The page-level benchmark's leftover shells merged unrelated stories into
#: one cluster through such paragraphs (90 false pairs in 1,455).
FOREIGN_HEADLINE_SHARE = 0.2
#: A headline "X：Y" quotes X, or files Y under X: "易纲：放宽或取消外资股比限制不意味着放松监管",
#: "林义相：限售制度存缺陷 要区别对待". Talks, forums and press conferences are published so, one page a speaker or an
#: answer, and every page opens with the event's introduction, which names the speakers but shares few of the
#: bigrams of a headline that is mostly the speaker's words (xmu sina: a forum series of 10 pages, 6-18% of 9 of
#: their headlines; cjw: a press conference's 3 answers, 3-10%). Text naming X speaks of the headline all the same.
#: X is 2 to 12 letters (a name, an agency, a column: "商务部", "新华社评论员"). Against another article of the same
#: portal (whole gold texts of the development portals, 410 pages) the headline check says "speaks of it" for
#: 12.8% of pairs with X, 12.3% without (held-out portals, checked after: 7.5% and 7.3%); for the page's own text
#: 97.6% either way.
_HEADLINE_SUBJECT = re.compile(r"^\s*([^：:\s]{2,12})\s*[：:]")
#: ...when they hold at least this many characters (two paragraphs' worth: a standing editor line or two is not
#: enough to join stories, and each failure costs the page a second extraction).
FOREIGN_MIN_CHARS = 2 * PARAGRAPH_CHARS
#: A page left with this many characters of its own once the shared text is gone has an article of its own
#: (a brief's worth), however short.
_MIN_OWN = 40
#: Recent template failures kept per site with their reasons.
_FAILURES_KEPT = 50

_BLOCK_TAGS = frozenset(
    "address article aside blockquote body center dd details dialog div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section table tbody td tfoot th thead tr ul".split()
)
_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title"})
_SENTENCE_PUNCT = re.compile(r"[，。！？；：、,.!?;]")
_MIN_PROSE = 10  # a text run this long with sentence punctuation is prose (as in related.py)
_MAGIC = b"NDT3"  # the layout of the saved bytes (NDT2: no headlines and body texts; still read)
_OLD_MAGIC = b"NDT2"


def line_hash(text: str, title: str | None = None) -> int | None:
    """The hash naming a block of text by its letters and digits; None for text without any.

    The page's own ``title`` inside a longer block is left out: template text that quotes the headline
    ("想了解更多关于《标题》的报道", a breadcrumb ending in it) recurs on every page all the same.

    >>> line_hash("【相关阅读】") == line_hash("相关 阅读")
    True
    >>> line_hash("分享《甲地下雨》到微博", "甲地下雨") == line_hash("分享《乙地放晴》到微博", "乙地放晴")
    True
    """
    return normalized_line_hash(normalize_heading(text), title)


def normalized_line_hash(norm: str, title: str | None) -> int | None:
    """:func:`line_hash` of text already normalized."""
    hashes = normalized_line_hashes(norm, title)
    return hashes[0] if hashes else None


def normalized_line_hashes(norm: str, title: str | None) -> tuple[int, ...]:
    """:func:`normalized_line_hash` of text already normalized, and for a block that quotes the page's headline inside
    longer text also the hash of the block as it stands: the way every other page of the site names it. A site's hot
    list often names the very story a page tells ("headline + its first line"); hashed with the headline left out,
    that one entry was new on the page, stayed when the template stripped the rest and was read into the body, and
    the page taught no other page the entry (one hot-list site of the page benchmark leaked on 1 to 4 of its 6
    pages in four runs, on none in three runs since). Empty for no text.
    """
    if not norm:
        return ()
    headline = _normalized_title(title or "")
    if len(headline) >= 4 and headline != norm and headline in norm:
        return hash64(norm.replace(headline, "\x00")), hash64(norm)
    return (hash64(norm),)


@functools.lru_cache(maxsize=256)
def _normalized_title(title: str) -> str:
    """A page's title, normalized once for the hundreds of blocks hashed against it."""
    return normalize_heading(title)


def page_blocks(root: HtmlElement) -> list[tuple[HtmlElement, str]]:
    """Every block-level element holding text of its own, in document order, with that text.

    A block's own text is what it holds outside nested blocks: ``<p>a<b>b</b><div>c</div>d</p>`` gives
    ``(p, "abd")`` and ``(div, "c")``. Scripts, styles and the head hold none.
    """
    owner: dict[HtmlElement, HtmlElement | None] = {}
    pieces: dict[HtmlElement, list[str]] = {}
    for el in root.iter():
        parent = el.getparent()
        outer = owner.get(parent, root) if parent is not None else root
        if not isinstance(el.tag, str) or el.tag in _SKIP_TAGS:
            owner[el] = None
        else:
            own = (el if el.tag in _BLOCK_TAGS else outer) if outer is not None else None
            owner[el] = own
            if own is not None and el.text:
                pieces.setdefault(own, []).append(el.text)
        if el.tail and parent is not None and outer is not None:
            pieces.setdefault(outer, []).append(el.tail)
    return [(el, "".join(parts)) for el, parts in pieces.items()]


def page_lines(root: HtmlElement, title: str | None = None) -> array:
    """The distinct block hashes of a page titled ``title`` (what :meth:`SiteTemplate.learn` counts)."""
    return array("Q", sorted({h for _, text in page_blocks(root)
                              for h in normalized_line_hashes(normalize_heading(text), title)}))


def strip_boilerplate(
    root: HtmlElement, boilerplate: AbstractSet[int], title: str | None = None, *, keep_shared_prose: bool = True
) -> int:
    """Delete the largest elements whose text is the site's template; return how many were deleted.

    An element goes when at most :data:`_MAX_NEW_SHARE` of its text is new to the site and none of the new
    text is prose, so a container holding the article (new prose) always stays. With ``keep_shared_prose``,
    template prose that stands among the article's own paragraphs and speaks of the page's headline
    (:func:`speaks_of_headline`) stays too: a series of articles shares an introduction that names its
    subject, and that is the article's text however often the site repeats it. A copyright notice or another
    article's leftover among the paragraphs goes (a template failure is retried without any mercy).
    """
    if not boilerplate:
        return 0
    total: dict[HtmlElement, int] = collections.defaultdict(int)
    new: dict[HtmlElement, int] = collections.defaultdict(int)
    new_prose: dict[HtmlElement, int] = collections.defaultdict(int)
    known_prose: dict[HtmlElement, int] = collections.defaultdict(int)
    paragraphs: set[HtmlElement] = set()  # blocks whose own text is new prose
    for el, text in page_blocks(root):
        norm = normalize_heading(text)
        if not norm:
            continue
        known = not boilerplate.isdisjoint(normalized_line_hashes(norm, title))
        prose = len(text.strip()) >= _MIN_PROSE and bool(_SENTENCE_PUNCT.search(text))
        if prose and not known:
            paragraphs.add(el)
        # Template prose earns the mercy only when it speaks of the page's headline: a standing copyright notice
        # or another article's leftover among the paragraphs does not.
        merciful = known and prose and speaks_of_headline(title, norm)
        for node in (el, *el.iterancestors()):  # charged to the block and every ancestor
            total[node] += len(norm)
            if not known:
                new[node] += len(norm)
                new_prose[node] += len(norm) if prose else 0
            elif merciful:
                known_prose[node] += len(norm)
    doomed: list[HtmlElement] = []
    done: set[HtmlElement] = set()  # deleted or kept whole
    for el in root.iter():
        if el.getparent() in done:
            done.add(el)
        elif el.tag not in ("html", "body") and el in total and not new_prose[el] and new[el] <= _MAX_NEW_SHARE * total[el]:
            done.add(el)
            if not (keep_shared_prose and known_prose[el]
                    and any(s in paragraphs for s in (*el.itersiblings(), *el.itersiblings(preceding=True)))):
                doomed.append(el)
    for el in doomed:
        el.drop_tree()
    return len(doomed)


def headline_share(title: str, text: str) -> float:
    """The share of the headline's character bigrams (letters and digits) that ``text`` contains.

    >>> headline_share("甲地下雨", "今天甲地下了一场大雨")
    0.6666666666666666
    >>> headline_share("甲地下雨", "乙城放晴")
    0.0
    """
    grams = _headline_bigrams(title)
    return sum(1 for g in grams if g in text) / len(grams) if grams else 1.0


def speaks_of_headline(title: str | None, text: str) -> bool:
    """Whether ``text`` (normalized: :func:`~newsdedup.extract.related.normalize_heading`) speaks of the page's
    headline: it holds :data:`FOREIGN_HEADLINE_SHARE` of the headline's bigrams, or names whom a headline "X：Y"
    quotes (:data:`_HEADLINE_SUBJECT`). True without a headline (nothing to tell it by).

    >>> speaks_of_headline("林义相：限售制度存缺陷 要区别对待", "今日天相投顾董事长林义相做客中国政法大学发表主题演讲")
    True
    >>> speaks_of_headline("林义相：限售制度存缺陷 要区别对待", "据档案馆介绍这批清代契约文书共三百二十件")
    False
    """
    if not title:
        return True
    if headline_share(title, text) >= FOREIGN_HEADLINE_SHARE:
        return True
    subject = _headline_subject(title)
    return bool(subject) and subject in text


@functools.lru_cache(maxsize=256)
def _headline_subject(title: str) -> str | None:
    """Whom a headline "X：Y" quotes (X normalized), None for other headlines."""
    match = _HEADLINE_SUBJECT.match(title)
    subject = normalize_heading(match.group(1)) if match else ""
    return subject if len(subject) >= 2 else None


@functools.lru_cache(maxsize=256)
def _headline_bigrams(title: str) -> frozenset[str]:
    """A headline's character bigrams, made once for the blocks of its page that :func:`strip_boilerplate` weighs."""
    norm = _normalized_title(title)
    return frozenset(norm[i : i + 2] for i in range(len(norm) - 1))


@dataclass(frozen=True)
class TemplateFailure:
    """Why a page's body was taken for template text."""

    share: float  # of the body's characters, in lines other pages of the site carry
    pages: int  # the most other pages any of those lines appears on
    template_pages: int = 0  # ...outside those pages' own bodies (where it is template, not an article)
    foreign: bool = False  # the recurring text does not share the page's headline: another article's text
    introduction: frozenset[int] = frozenset()  # the series' introduction the body opens with (a retry keeps it)
    repeat_of: str | None = None  # the body repeats the body of another page of the site, titled so, exactly
    repeated: frozenset[int] = frozenset()  # ...and these blocks carry it (a retry strips them)

    @property
    def reason(self) -> str:
        if self.repeat_of is not None:
            what = "the body repeats" if self.share >= 1 else f"{self.share:.0%} of the body repeats"
            return f"{what} text of another page of the site under an unrelated headline ({self.repeat_of!r}; {self.pages} page(s))"
        unlike = ", unlike the headline" if self.foreign else ""
        return f"{self.share:.0%} of the body recurs on other pages of the site (up to {self.pages} of them){unlike}"


Reading = TypeVar("Reading")


@dataclass(frozen=True)
class TemplateCheck(Generic[Reading]):
    """What :meth:`SiteTemplate.check` made of a page whose body was a template failure."""

    failure: TemplateFailure
    outcome: str  # "re-extracted", "too_short" or "template_only" (see SiteTemplate.settle)
    reading: Reading | None = None  # the page read again without the shared text, for "re-extracted"


class SiteTemplate:
    """What recurs across one site's recent pages (see the module doc).

    Every block a page shows counts toward :meth:`failure` (text other pages carry, their bodies included);
    only the blocks outside the page's own body count toward :meth:`boilerplate`: an article the site prints
    twice, or a series' shared paragraph, sits in bodies, and bodies are never the template.
    """

    def __init__(self, *, window: int = WINDOW, min_pages: int = MIN_PAGES) -> None:
        if window < 1 or min_pages < 2:
            raise ValueError(f"window must be >= 1 and min_pages >= 2, got {window} and {min_pages}")
        self.window = window
        self.min_pages = min_pages
        self._pages: collections.deque[tuple[array, array]] = collections.deque()  # blocks outside, inside the body
        # Aligned with _pages: each page's headline and the hashes of the bodies read on it (exact repeats).
        self._said: collections.deque[tuple[str, frozenset[int]]] = collections.deque()
        self._count: collections.Counter[int] = collections.Counter()  # pages showing the block
        self._outside: collections.Counter[int] = collections.Counter()  # ...outside their body
        self._known: set[int] = set()
        self._frozen: frozenset[int] | None = frozenset()  # boilerplate() as last made, None once _known changed
        self._in_bodies: set[int] = set()  # blocks inside the bodies of min_pages pages or more (sign_offs())
        self._frozen_in_bodies: frozenset[int] | None = frozenset()
        self.failures: collections.deque[dict] = collections.deque(maxlen=_FAILURES_KEPT)

    @property
    def pages(self) -> int:
        """Pages the template has seen, at most ``window``."""
        return len(self._pages)

    def learn(
        self, lines: Iterable[int], body: Iterable[int] = (), *, title: str | None = None, texts: Iterable[str] = ()
    ) -> tuple[array, array]:
        """Count one page's block hashes (``body``: those inside its article); return what was counted, for
        :meth:`forget`. ``title`` and ``texts`` (the bodies read on the page: the one kept, and one a template
        failure replaced) are what :meth:`repeat_of` compares the site's next pages with."""
        lines, body = set(lines), set(body)
        page = (array("Q", sorted(lines - body)), array("Q", sorted(lines & body)))
        self._pages.append(page)
        self._said.append((title or "", frozenset(h for text in texts if (h := _text_hash(text)) is not None)))
        self._add(page, +1)
        if len(self._pages) > self.window:
            self._add(self._pages.popleft(), -1)
            self._said.popleft()
        return page

    def forget(self, page: tuple[array, array]) -> None:
        """Take back what :meth:`learn` counted for a page (nothing when the window has dropped it already): a page
        read again is checked against the other pages only, not against its own first reading."""
        for n, seen in enumerate(self._pages):
            if seen is page:
                del self._pages[n]
                del self._said[n]
                self._add(page, -1)
                return

    def _add(self, page: tuple[array, array], step: int) -> None:
        # A page's lines are distinct and each count moves by one, so a block becomes boilerplate exactly when its
        # count outside the bodies reaches min_pages, and stops being boilerplate when it falls below. Counting up
        # is Counter.update's C loop; this runs in the crawl process for every page (twice once the window is full).
        outside, body = page
        # A block's count inside bodies is its count less its count outside them.
        count, counted_outside, least = self._count, self._outside, self.min_pages
        if step > 0:
            count.update(outside)
            count.update(body)
            counted_outside.update(outside)
            risen = [h for h in outside if counted_outside[h] == least]
            if risen:
                self._known.update(risen)
                self._frozen = None
            risen = [h for h in body if count[h] - counted_outside.get(h, 0) == least]
            if risen:
                self._in_bodies.update(risen)
                self._frozen_in_bodies = None
            return
        for counter, lines in ((count, outside), (count, body), (counted_outside, outside)):
            for h in lines:
                n = counter[h] - 1
                if n > 0:
                    counter[h] = n
                else:
                    del counter[h]
        fallen = [h for h in outside if counted_outside.get(h, 0) == least - 1]
        if fallen:
            self._known.difference_update(fallen)
            self._frozen = None
        fallen = [h for h in body if count.get(h, 0) - counted_outside.get(h, 0) == least - 1]
        if fallen:
            self._in_bodies.difference_update(fallen)
            self._frozen_in_bodies = None

    def boilerplate(self) -> frozenset[int]:
        """Blocks outside the body on at least ``min_pages`` of the site's pages: what :func:`strip_boilerplate` deletes."""
        if self._frozen is None:  # made again only when it changed: the crawl asks for it for every page
            self._frozen = frozenset(self._known)
        return self._frozen

    def sign_offs(self) -> frozenset[int]:
        """Paragraphs in the bodies of at least ``min_pages`` of the site's pages: what the extractor cuts where they
        close a body and do not speak of its headline (a site's sign-off: "特别提醒：如果我们使用了您的图片……", a
        reprint disclaimer). Not stripped anywhere else: in a body a recurring paragraph may be the article's own (a
        series' introduction opens each page of the series; an article the site prints again carries all of its
        paragraphs), and a sign-off is told from them by where it stands, after the article's own text."""
        if self._frozen_in_bodies is None:
            self._frozen_in_bodies = frozenset(self._in_bodies)
        return self._frozen_in_bodies

    def retry_boilerplate(self) -> frozenset[int]:
        """The stricter template a template failure is retried with: every block other pages of the site carry
        outside their bodies, and every block on :attr:`min_pages` of its pages with the page read. (Every such
        block, not only the body lines that failed: a body's lines and the page's blocks need not align, as when a
        leftover article is one block of ``<br>`` lines.) Not a paragraph only one other page carries in its body:
        a story the site printed twice, the page's own text (stripped, a forum's talk reprinted once beside a
        shared introduction left the page nothing and had it skipped as ``template_only``: xmu sina, 2 of 99)."""
        return frozenset(h for h, n in self._count.items() if n >= self.min_pages - 1 or self._outside.get(h, 0))

    def failure(self, title: str | None, text: str) -> TemplateFailure | None:
        """A :class:`TemplateFailure` when most of ``text`` (the body of a page titled ``title``) is lines that
        other pages of the site carry, or when paragraphs that recur on :attr:`min_pages` of its pages (this one
        counted) do not share the page's headline (:data:`FOREIGN_HEADLINE_SHARE`). Call it before :meth:`learn`
        for the same page. The introduction a series' pages open with (:meth:`_introduction`: paragraphs other
        pages carry in their bodies that speak of the headline, sharing it or naming whom it quotes) is the
        article's own text, however much of a short body it is: it is not counted as shared.

        A line other pages carry outside their bodies counts toward "most" when :attr:`min_pages` pages show it, this
        one counted. A paragraph other pages carry only in their bodies counts toward "most" when :attr:`min_pages` other pages
        carry it: on fewer it is a story the site printed twice (an exact or edited reprint, for the dedup stages,
        whose text a retry would cut down to the edits), while a hot list taken for the article sits on every
        page. A reprint keeps its story's headline; the leftover text of a shell beside the page's own article
        does not. Failing those, text one other page of the site shows under an unrelated headline
        (:meth:`repeat_of`).
        """
        total = shared = most = most_outside = 0
        recurring: dict[int, str] = {}  # shared lines and paragraphs on min_pages pages with this one
        introduction = self._introduction(title, text)
        for line in text.splitlines():
            norm = normalize_heading(line)
            total += len(norm)
            hashes = normalized_line_hashes(norm, title)
            if not hashes:
                continue
            h = hashes[0]
            # A line quoting the headline counts as often as other pages show it as it stands (see the function).
            count = max(self._count.get(x, 0) for x in hashes)
            outside = max(self._outside.get(x, 0) for x in hashes)
            # Outside their bodies, on min_pages pages with this one: a line one other page shows beside its article
            # (a brief's sentence in another story's lead or side column) is no template (xmu xinhua: 2 of 103
            # briefs read as "all template" and skipped). A site's first pages wait until its template has seen
            # min_pages pages, so a hot list is on that many already. A series' introduction is the article's own
            # text, however many pages of the site print it (it still speaks for the recurring text it stands with).
            is_shared = (outside >= self.min_pages - 1 or count >= self.min_pages) and h not in introduction
            if is_shared:
                shared += len(norm)
            if is_shared or (len(norm) >= PARAGRAPH_CHARS and count >= self.min_pages - 1):
                most, most_outside = max(most, count), max(most_outside, outside)
                # Recurring means on min_pages pages, this one counted, for short lines too: subheadings another
                # page of the site also shows once ("市场驱动力量是什么？" in a market report and its update) are
                # no other article's text (xmu sina: 2 of 99 pages read again, losing 35-46% of their text).
                if count >= self.min_pages - 1:
                    recurring[h] = norm
        if total == 0:
            return None
        text_of_others = "".join(recurring.values())
        foreign = bool(title) and len(text_of_others) >= FOREIGN_MIN_CHARS and not speaks_of_headline(title, text_of_others)
        if shared >= FAILURE_SHARE * total:
            return TemplateFailure(shared / total, most, most_outside, foreign, introduction)
        if foreign:
            return TemplateFailure(len(text_of_others) / total, most, most_outside, foreign, introduction)
        # Too few pages carry it for the rules above (a site's first pages, the one other page it repeats).
        return self.repeat_of(title, text)

    def repeat_of(self, title: str | None, text: str) -> TemplateFailure | None:
        """A :class:`TemplateFailure` when ``text``, the body of a page titled ``title``, repeats what another page of
        the site whose headline is unrelated to this one (neither headline holds :data:`FOREIGN_HEADLINE_SHARE` of the
        other's bigrams) showed: its whole body exactly (letters and digits), unless the text speaks of both
        headlines (:func:`speaks_of_headline`); or paragraphs of :data:`PARAGRAPH_CHARS` or more that one such page
        shows, together :data:`FOREIGN_MIN_CHARS` or more and :data:`FAILURE_SHARE` of the body, that do not speak of
        this page's headline. A site-wide overlay (a wallet or
        payment notice, a login box) taken for the article, or read into it beside a short one, is such text; it
        would make the pages exact or near repeats of each other, one story. One other page tells it, so it is
        caught before the template has seen :attr:`min_pages` pages. An article the site prints again keeps a
        headline like its own, or speaks of both: the dedup stages' business, not the template's. No headline,
        nothing to tell it by: None."""
        whole = _text_hash(text)
        if whole is None or not title or not self._said:
            return None
        unrelated = functools.cache(lambda n: bool(self._said[n][0]) and _unrelated_headlines(title, self._said[n][0]))
        matches = [n for n, (_, texts) in enumerate(self._said) if whole in texts and unrelated(n)]
        norm = normalize_heading(text)
        if matches and not all(speaks_of_headline(t, norm) for t in (title, self._said[matches[0]][0])):
            # The blocks that carry it: the body's lines, and every block of the pages it repeats (a body of <br>
            # lines is one block on the page; a page re-extracted since shows the repeated text outside its body).
            repeated = {h for line in text.splitlines() for h in normalized_line_hashes(normalize_heading(line), title)}
            for n in matches:
                repeated.update(self._pages[n][0])
                repeated.update(self._pages[n][1])
            return TemplateFailure(1.0, len(matches), foreign=True, repeat_of=self._said[matches[0]][0],
                                   repeated=frozenset(repeated))
        # Paragraphs another page shows: its blocks are sorted arrays, searched only for what the site has seen.
        shown: dict[int, dict[str, tuple[int, ...]]] = collections.defaultdict(dict)  # page -> paragraphs -> hashes
        for line in text.splitlines():
            line_norm = normalize_heading(line)
            hashes = normalized_line_hashes(line_norm, title) if len(line_norm) >= PARAGRAPH_CHARS else ()
            if not any(h in self._count for h in hashes):
                continue  # no page of the window shows it
            for n, page in enumerate(self._pages):
                if any(_holds(page[0], h) or _holds(page[1], h) for h in hashes) and unrelated(n):
                    shown[n][line_norm] = hashes
        if not shown:
            return None
        # One page showing most of the body, as an overlay is shown whole on every page: a roundup of the site's
        # stories (a forum's talks on one page, xmu sina) takes a part from each, and a market report quoting a
        # paragraph or two of another story is passage reuse, not template (xmu: 4 such pages of 819, read again
        # and cut short while the pages' paragraphs were summed).
        best = max(shown, key=lambda n: sum(map(len, shown[n])))
        text_of_others = "".join(shown[best])
        if (len(text_of_others) < max(FOREIGN_MIN_CHARS, FAILURE_SHARE * len(norm))
                or speaks_of_headline(title, text_of_others)):
            return None
        return TemplateFailure(len(text_of_others) / max(1, len(norm)), len(shown), foreign=True,
                               repeat_of=self._said[best][0], repeated=frozenset(h for hs in shown[best].values() for h in hs))

    def _introduction(self, title: str | None, text: str) -> frozenset[int]:
        """The hashes of the paragraphs a series' pages open with: the body's paragraphs, before its first one
        that no other page carries, that other pages of the site carry in their articles (not outside them on
        :attr:`min_pages` - 1 pages) and that speak of the headline (:func:`speaks_of_headline`). The article's own
        text, however many pages print it and however much of a short body it is. Only the opening: a hot list
        read into the body beside the article comes after it, and its lines may name the story too."""
        hashes = set()
        for line in text.splitlines():
            norm = normalize_heading(line)
            h = normalized_line_hash(norm, title) if norm else None
            if h is None:
                continue
            if len(norm) >= PARAGRAPH_CHARS and h not in self._count:
                break  # the page's own text has begun
            if (title and len(norm) >= PARAGRAPH_CHARS and self._outside.get(h, 0) < self.min_pages - 1
                    and _SENTENCE_PUNCT.search(line) and speaks_of_headline(title, norm)):
                hashes.add(h)
        return frozenset(hashes)

    def settle(
        self, url: str, title: str | None, failure: TemplateFailure, retried_text: str | None, own_chars: int = 0
    ) -> str | None:
        """What to make of a page whose body was a template failure. Call it before :meth:`learn`.

        ``retried_text`` is the page re-extracted without the text other pages of the site carry (None: that
        gave no article), ``own_chars`` how many characters of its own were left all the same. Outcomes:
        ``"re-extracted"``, use the retried text; ``"too_short"``, the page's own text is real but too short
        to keep; ``"template_only"``, nothing of its own is left and the shared text is template (outside the
        bodies of :attr:`min_pages` pages or more, this one counted), or text unlike the headline on as many.
        None: nothing of its own is left and the text is other pages' body text: it is the article, reprinted on
        this site under another title.
        Failures are kept in :attr:`failures` with their reason and outcome.
        """
        if retried_text and self.failure(title, retried_text) is None:
            outcome = "re-extracted"
        elif own_chars >= _MIN_OWN:
            outcome = "too_short"
        elif failure.repeat_of is not None or max(failure.template_pages, failure.pages if failure.foreign else 0) >= self.min_pages - 1:
            outcome = "template_only"
        else:
            return None
        self.failures.append({"url": url, "title": title, "reason": failure.reason, "outcome": outcome})
        return outcome

    async def check(
        self, url: str, title: str | None, text: str,
        reread: Callable[[frozenset[int], bool], Awaitable[tuple[Reading, str | None]]],
    ) -> TemplateCheck[Reading] | None:
        """Judge the body ``text`` of the page at ``url`` titled ``title``, read with this template; None when it
        stands (no :meth:`failure`, or one :meth:`settle` leaves to the dedup stages). Call it before :meth:`learn`.

        On a failure the page is read again without every block other pages of the site carry:
        ``reread(boilerplate, lenient)`` reads it (with no mercy for shared prose; ``lenient``: keeping any
        text however short) and returns the reading and its article text (None: no article). When the strict
        reading gives no article, a lenient one tells how much of the page's own text is left
        (``own_chars`` of :meth:`settle`). The crawl passes a reading on its worker pool, the evaluation one in
        its own process: both judge by this one method. (A retry that takes away little of the body is not left
        out: leaving pages as read when under a quarter of the body went kept one cjw page's press-conference
        introduction, and let a hot list stay beside short articles on 9-12 of 153 page-benchmark pages, not 5.)
        """
        failure = self.failure(title, text)
        if failure is None:
            return None
        # Not the introduction the body opens with (see _introduction): a retry for a hot list keeps it.
        shared = (self.retry_boilerplate() | failure.repeated) - failure.introduction
        retried, retried_text = await reread(shared, False)
        own = 0
        if retried_text is None:
            own = len((await reread(shared, True))[1] or "")
        outcome = self.settle(url, title, failure, retried_text, own)
        if outcome is None:
            return None
        return TemplateCheck(failure, outcome, retried if outcome == "re-extracted" else None)

    # -- persistence --------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The template as bytes: pages oldest first (blocks outside and inside the body, the hashes of the bodies
        read, the headline), then the recorded failures as JSON."""
        parts = [_MAGIC, struct.pack("<III", self.window, self.min_pages, len(self._pages))]
        for (outside, body), (title, texts) in zip(self._pages, self._said):
            said, headline = array("Q", sorted(texts)), title.encode("utf-8")
            parts += [struct.pack("<IIII", len(outside), len(body), len(said), len(headline)),
                      outside.tobytes(), body.tobytes(), said.tobytes(), headline]
        parts.append(json.dumps(list(self.failures), ensure_ascii=False).encode("utf-8"))
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> SiteTemplate:
        """A template saved by :meth:`to_bytes` (or by the release before, without headlines and body texts);
        ValueError when ``data`` is not one."""
        if not data.startswith((_MAGIC, _OLD_MAGIC)):
            raise ValueError("not a saved site template (bad magic)")
        said = data.startswith(_MAGIC)
        try:
            window, min_pages, count = struct.unpack_from("<III", data, 4)
            template = cls(window=window, min_pages=min_pages)
            offset = 16
            for _ in range(count):
                if said:
                    n_outside, n_body, n_said, n_title = struct.unpack_from("<IIII", data, offset)
                    offset += 16
                else:
                    (n_outside, n_body), n_said, n_title = struct.unpack_from("<II", data, offset), 0, 0
                    offset += 8
                arrays = []
                for n in (n_outside, n_body, n_said):
                    lines = array("Q")
                    lines.frombytes(data[offset : offset + 8 * n])
                    if len(lines) != n:
                        raise ValueError("truncated")
                    offset += 8 * n
                    arrays.append(lines)
                title = data[offset : offset + n_title].decode("utf-8")
                if len(title.encode("utf-8")) != n_title:
                    raise ValueError("truncated")
                offset += n_title
                page = (arrays[0], arrays[1])
                template._pages.append(page)
                template._said.append((title, frozenset(arrays[2])))
                template._add(page, +1)
            template.failures.extend(json.loads(data[offset:].decode("utf-8") or "[]"))
        except (struct.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"damaged site template: {exc}") from exc
        return template


def _holds(lines: array, h: int) -> bool:
    """Whether the sorted array ``lines`` holds ``h``."""
    i = bisect.bisect_left(lines, h)
    return i < len(lines) and lines[i] == h


def _text_hash(text: str) -> int | None:
    """The hash naming a whole body by its letters and digits (an exact repeat has the same); None for no text."""
    norm = normalize_heading(text)
    return hash64(norm) if norm else None


def _unrelated_headlines(a: str, b: str) -> bool:
    """Neither headline holds :data:`FOREIGN_HEADLINE_SHARE` of the other's character bigrams: two stories."""
    return (headline_share(a, _normalized_title(b)) < FOREIGN_HEADLINE_SHARE
            and headline_share(b, _normalized_title(a)) < FOREIGN_HEADLINE_SHARE)
