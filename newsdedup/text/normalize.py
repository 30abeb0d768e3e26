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

__all__ = ["exact_form_with_offsets", "find_letter_or_number", "is_word", "nfkc", "normalize_text"]

# Letters and numbers (Unicode categories L* and N*): ``[^\W_]`` is exactly str.isalnum, and one
# regex search is much faster than looking up unicodedata.category per character.
_LETTER_OR_NUMBER = re.compile(r"[^\W_]")

# Control (Cc), format (Cf: zero-width space/joiners, BOM, bidi marks, soft hyphen, ...) and lone surrogate
# (Cs) characters are invisible in a rendered page but differ between copies of one article. Whitespace
# control characters (\t \n \r \x1c-\x1f \x85) are kept here: they are collapsed to one space afterwards.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})


# What the scan below finds in Unicode 14.0 (Python 3.11): every worker process would otherwise pay the scan
# (~0.3 s CPU) when it starts. tests/test_text_normalize.py checks the two agree.
_INVISIBLE_RANGES_14 = (
    (0x0, 0x8), (0xE, 0x1B), (0x7F, 0x84), (0x86, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)


def _invisible_ranges() -> list[tuple[int, int]]:
    """The code point ranges of invisible characters, scanned from the running Python's Unicode tables."""
    ranges: list[tuple[int, int]] = []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES and not char.isspace():
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return ranges


@functools.cache
def _invisible_chars_pattern() -> re.Pattern[str]:
    """Regex matching every invisible character, built once (from the running Python's Unicode tables when they are
    not the version the ranges above were scanned from: deriving the set, not writing it by hand, keeps it right when
    Python's Unicode version moves)."""
    ranges = _INVISIBLE_RANGES_14 if unicodedata.unidata_version == "14.0.0" else _invisible_ranges()
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
    text = nfkc(text)
    # str.split() with no argument splits on every Unicode whitespace run and drops empty ends.
    return " ".join(text.split())


# The compatibility characters Chinese pages print all the time, with their NFKC forms: full-width ASCII (，：；！？（）
# and full-width letters and digits), the ideographic and the no-break space, the ellipsis.
_COMMON_COMPATIBILITY = {chr(code): unicodedata.normalize("NFKC", chr(code))
                         for code in (*range(0xFF01, 0xFF5F), 0x3000, 0xA0, 0x2026)}
_COMMON_COMPATIBILITY_RE = re.compile("[" + "".join(map(re.escape, _COMMON_COMPATIBILITY)) + "]")


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, three times as fast on Chinese prose.

    NFKC decomposes every character before it composes, so writing a character as its own NFKC form beforehand
    changes nothing. Chinese prose is otherwise in NFKC already but for its full-width punctuation, and once that is
    written so, Python's quick check passes and the full normalization is skipped (~140 to ~50 us for 800
    characters; tests/test_text_normalize.py compares the two on random text).

    >>> nfkc("ＡＢＣ１２３，你好\u3000世界…") == unicodedata.normalize("NFKC", "ＡＢＣ１２３，你好\u3000世界…")
    True
    """
    text = _COMMON_COMPATIBILITY_RE.sub(lambda match: _COMMON_COMPATIBILITY[match.group()], text)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def exact_form(normalized_text: str) -> str:
    """The normalised text without any whitespace: what the exact stage fingerprints.

    Line breaks and spacing are layout, not wording: a reprint that flattens the paragraphs or re-indents
    them is the same article (Chinese text has no spaces between words, so nothing that carries meaning
    is lost; two Latin texts that differ only in where the spaces fall are rarer than a hash collision).

    >>> exact_form(normalize_text("第一段。\\n\\n  第二段 text A")) == exact_form("第一段。第二段textA")
    True
    """
    return "".join(normalized_text.split())


# Runs of non-space characters; the ellipsis, which Chinese prose uses often and NFKC writes as three dots, on its
# own, so that the run around it keeps the one-for-one fast path below.
_NON_SPACE_RUN = re.compile(r"\u2026|[^\s\u2026]+")
_SPACE = re.compile(r"\s")
# Hangul medial and final jamo compose with the preceding jamo under NFKC.
_HANGUL_JAMO_TAIL = range(0x1161, 0x11C3)


def _composes_with_previous(char: str) -> bool:
    """Whether NFKC may join ``char`` to the character before it (a combining mark, a voiced-sound mark, a jamo)."""
    first = unicodedata.normalize("NFKD", char)[:1]
    return bool(first) and (unicodedata.combining(first) != 0 or ord(first) in _HANGUL_JAMO_TAIL)


def exact_form_with_offsets(text: str) -> tuple[str, list[int]]:
    """:func:`exact_form` of :func:`normalize_text`, with each character's offset in the raw ``text``.

    For passages found in the normalised form to be shown in the stored text: ``offsets[i]`` is where the
    ``i``-th normalised character came from (a character NFKC writes as several, ``…`` as ``...``, gives each
    of them its own offset).  The string equals ``exact_form(normalize_text(text))`` for real text; NFKC is
    applied to each character with the combining marks that follow it, so a mark separated from its letter by
    whitespace or an invisible character stays apart here (normalize_text would join them).

    >>> form, offsets = exact_form_with_offsets("新闻，\\u200b正文…\\n  ＡＢ")
    >>> form, offsets
    ('新闻,正文...AB', [0, 1, 2, 4, 5, 6, 6, 6, 10, 11])
    >>> form == exact_form(normalize_text("新闻，\\u200b正文…\\n  ＡＢ"))
    True
    """
    if not isinstance(text, str):
        raise ValueError(f"exact_form_with_offsets expects str, got {type(text).__name__}; decode bytes first")
    invisible = _invisible_chars_pattern()
    parts: list[str] = []
    offsets: list[int] = []
    for run in _NON_SPACE_RUN.finditer(text):
        raw, start = run.group(), run.start()
        folded = nfkc(raw)
        if len(folded) == len(raw) and not invisible.search(raw) and not _SPACE.search(folded):
            parts.append(folded)  # the common case: one character for one (full-width punctuation folded)
            offsets.extend(range(start, run.end()))
            continue
        group, group_start = "", start
        for i, char in enumerate(raw, start):
            if invisible.fullmatch(char):
                continue
            if group and not _composes_with_previous(char):
                kept = "".join(nfkc(group).split())
                parts.append(kept)
                offsets.extend([group_start] * len(kept))
                group, group_start = "", i
            if not group:
                group_start = i
            group += char
        if group:
            kept = "".join(nfkc(group).split())
            parts.append(kept)
            offsets.extend([group_start] * len(kept))
    return "".join(parts), offsets


def is_word(token: str) -> bool:
    """True when ``token`` holds a letter or a digit (Chinese characters are letters).

    Punctuation, symbol and whitespace tokens, which segmenters such as jieba return, carry no wording.

    >>> is_word("新闻"), is_word("2014"), is_word("，"), is_word("——"), is_word("")
    (True, True, False, False, False)
    """
    return _LETTER_OR_NUMBER.search(token) is not None


#: :func:`is_word` as a bare regex search (a match or None), for ``filter`` over a page's thousands of tokens
#: without a Python call each.
find_letter_or_number = _LETTER_OR_NUMBER.search
