"""Unicode normalisation of article text.

``normalize_text`` is the canonical form behind the exact-duplicate fingerprint: two copies of one article
that differ only in character width (全角/半角), invisible characters or whitespace layout normalise to the
same string.

>>> normalize_text("  ＡＢＣ　１２３，\\u200b你好\\n\\n 世界\\t")
'ABC 123,你好 世界'
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

__all__ = ["is_word", "normalize_text"]

# Letters and numbers (Unicode categories L* and N*): ``[^\W_]`` is exactly str.isalnum, and one
# regex search is much faster than looking up unicodedata.category per character.
_LETTER_OR_NUMBER = re.compile(r"[^\W_]")

# Control (Cc), format (Cf: zero-width space/joiners, BOM, bidi marks, soft hyphen, ...) and lone surrogate
# (Cs) characters are invisible in a rendered page but differ between copies of one article. Whitespace
# control characters (\t \n \r \x1c-\x1f \x85) are kept here: they are collapsed to one space afterwards.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})


@functools.cache
def _invisible_chars_pattern() -> re.Pattern[str]:
    """Regex matching every invisible character, built once from the running Python's Unicode tables."""
    # Scanning all code points costs ~0.25 s, paid on first use rather than at import time; deriving the set
    # from unicodedata (instead of a hand-written list) keeps it right when Python's Unicode version moves.
    ranges: list[tuple[int, int]] = []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES and not char.isspace():
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    parts = "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges
    )
    return re.compile(f"[{parts}]+")


def normalize_text(text: str) -> str:
    """Return ``text`` in canonical form for exact-duplicate detection.

    Steps: drop invisible control/format characters (zero-width space, BOM, bidi marks, soft hyphen, C0/C1
    controls other than whitespace); apply NFKC, which folds full-width Latin letters, digits and
    punctuation to half width (``ＡＢＣ１２３，`` -> ``ABC123,``) and the ideographic space to a plain
    space; collapse every run of whitespace to one space; strip both ends.

    Idempotent: ``normalize_text(normalize_text(t)) == normalize_text(t)``.

    >>> normalize_text("新闻\\u3000\\u3000正文\\r\\n") == normalize_text("新闻 正文")
    True
    """
    if not isinstance(text, str):
        raise ValueError(f"normalize_text expects str, got {type(text).__name__}; decode bytes first")
    # Drop before NFKC, not after: removing a zero-width character between a letter and a combining mark
    # after NFKC would leave an uncomposed pair, and a second call would then change the text.
    text = _invisible_chars_pattern().sub("", text)
    text = unicodedata.normalize("NFKC", text)
    # str.split() with no argument splits on every Unicode whitespace run and drops empty ends.
    return " ".join(text.split())


def exact_form(normalized_text: str) -> str:
    """The normalised text without any whitespace: what the exact stage fingerprints.

    Line breaks and spacing are layout, not wording: a reprint that flattens the paragraphs or re-indents
    them is the same article (Chinese text has no spaces between words, so nothing that carries meaning
    is lost; two Latin texts that differ only in where the spaces fall are rarer than a hash collision).

    >>> exact_form(normalize_text("第一段。\\n\\n  第二段 text A")) == exact_form("第一段。第二段textA")
    True
    """
    return "".join(normalized_text.split())


def is_word(token: str) -> bool:
    """True when ``token`` holds a letter or a digit (Chinese characters are letters).

    Punctuation, symbol and whitespace tokens, which segmenters such as jieba return, carry no wording.

    >>> is_word("新闻"), is_word("2014"), is_word("，"), is_word("——"), is_word("")
    (True, True, False, False, False)
    """
    return _LETTER_OR_NUMBER.search(token) is not None
