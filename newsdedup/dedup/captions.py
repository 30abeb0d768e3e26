"""Caption-only pages: a photo page's text is its captions, and two of them are one story only with the same captions.

A gallery of one event, a set of photos of one campaign: each caption follows a formula ("图为……", "……新华社记者某某
摄", "（资料图）"), and SpotSigs' spots come from the formula's words (为, 在, 的 before the next word), so two pages
of different photos of one event share nearly all of their spots and would be clustered as copies (issue 34).  Their
texts tell them apart: a copy of a caption page carries the same captions.  So a page whose text is captions only
(:func:`caption_lines`) is a near duplicate of another caption-only page only when their captions are the same
(:func:`same_captions`); against a page of another kind (an article with its photos' captions) the near-duplicate
stage decides as always.

>>> one = "图为市民在公园赏菊。新华社记者王明摄\\n图为游客在菊展上拍照留念。新华社记者王明摄"
>>> other = "图为志愿者在公园清扫落叶。新华社记者李华摄\\n图为孩子们在草坪上放风筝。新华社记者李华摄"
>>> sorted(caption_lines(one))[0]
'图为市民在公园赏菊。新华社记者王明摄'
>>> same_captions(caption_lines(one), caption_lines(other)), same_captions(caption_lines(one), caption_lines(one))
(False, True)
>>> caption_lines("国家统计局今天发布数据显示，十月份全国居民消费价格同比上涨百分之二点五。" * 4) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable

from newsdedup.text.normalize import exact_form, normalize_text

#: A caption is a short line: longer ones are an article's paragraphs.
MAX_CAPTION_CHARS = 120
#: The formulas a caption carries: a photographer's credit, "图为", a picture's source, "资料图", "组图".
CAPTION_MARK = re.compile(r"摄$|摄[）)]|摄影|图为|图片来源|图片由|供图|资料图|组图|[（(]图[)）]|图／|图/|[Pp]hoto")
#: Two caption pages are one story when this share of their captions (Jaccard of the two sets) is the same.
SAME_CAPTIONS = 0.8
_LINES = re.compile(r"[\n\r\u2028\u2029\ue40c]+")


def caption_lines(text: str) -> frozenset[str] | None:
    """The page's captions (each line normalised as the exact stage does) when the text is captions only: every
    line short (:data:`MAX_CAPTION_CHARS`) and at least half of them carrying a caption formula; else None."""
    raw = _LINES.split(text)
    if any(len(line) > 2 * MAX_CAPTION_CHARS for line in raw):  # an article's paragraph: the usual case, cheaply
        return None
    lines = [exact_form(normalize_text(line)) for line in raw]
    lines = [line for line in lines if line]
    if not lines or any(len(line) > MAX_CAPTION_CHARS for line in lines):
        return None
    if 2 * sum(bool(CAPTION_MARK.search(line)) for line in lines) < len(lines):
        return None
    return frozenset(lines)


def same_captions(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two caption pages carry the same captions (:data:`SAME_CAPTIONS` of them)."""
    return len(a & b) >= SAME_CAPTIONS * len(a | b)


def caption_check(text: str, captions_of: Callable[[Hashable], frozenset[str] | None]
                  ) -> Callable[[Hashable], bool] | None:
    """The near-duplicate stage's confirmation for a page of ``text`` (None when it is not captions only: nothing to
    confirm): a stored story whose captions ``captions_of`` gives matches only with the same captions."""
    captions = caption_lines(text)
    if captions is None:
        return None

    def confirm(centre: Hashable) -> bool:
        other = captions_of(centre)
        return other is None or same_captions(captions, other)

    return confirm


__all__ = ["CAPTION_MARK", "MAX_CAPTION_CHARS", "SAME_CAPTIONS", "caption_check", "caption_lines", "same_captions"]
