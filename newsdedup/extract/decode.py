"""Turn the bytes of an HTML page into text without mojibake.

Chinese portals lie about their encoding surprisingly often: pages re-saved as UTF-8 keep their old
``<meta charset=gb2312>``, archive toolbars inject a ``charset=utf-8`` meta in front of GB2312 bytes, and
old GBK pages contain a few byte sequences that are not valid in any GB codec. So no declaration is
trusted blindly; every candidate is judged by how many decode errors it produces:

1. a byte-order mark wins;
2. bytes that are valid UTF-8 are UTF-8 (random GB bytes almost never form valid UTF-8, while UTF-8
   bytes often decode as GB mojibake without a single error, so UTF-8 must be tried first);
3. the HTTP charset, then each ``<meta>`` charset, then GB18030 (the default of this Chinese-news
   project), each GB-family label widened to GB18030 (a superset of GB2312 and GBK); the one with the
   fewest decode errors wins if it is nearly clean;
4. otherwise charset-normalizer's guess competes too;
5. the winner decodes with ``errors="replace"`` so a few bad bytes never lose the rest of the page.

>>> decode_html("<p>新闻</p>".encode("gbk"), declared="utf-8").encoding
'gb18030'
>>> decode_html("<meta charset=gb2312><p>新闻</p>".encode("utf-8")).text[-9:]
'<p>新闻</p>'
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["DecodedPage", "decode_html", "normalize_encoding_label"]

# Only the head of a page is searched for <meta> declarations (browsers look at the first 1024 bytes;
# real pages push them further down behind long comments and scripts).
_META_SCAN_BYTES = 16_384
_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""",
    re.IGNORECASE,
)
_GB_FAMILY = {"gb2312", "gbk", "gb18030", "cp936", "936", "x-gbk", "euc-cn", "hz-gb-2312", "gb_2312-80", "csgb2312"}
# Labels servers send by default ("text/html; charset=ISO-8859-1"); they never describe a Chinese page
# correctly and decode anything without error, so they only count when nothing else decodes.
_WEAK = {"latin_1", "iso8859_1", "cp1252", "ascii"}
# A candidate with at most this share of undecodable characters is accepted as "nearly clean"
# (the invalid-byte GBK pages in the wild have a handful of bad pairs among tens of thousands).
_MAX_ERROR_RATE = 0.002
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True)
class DecodedPage:
    """The decoded page and the Python codec name that produced it."""

    text: str
    encoding: str


def normalize_encoding_label(label: str | None) -> str | None:
    """Map a charset label to a Python codec name, GB-family labels to ``gb18030``; None if unknown."""
    if not label:
        return None
    cleaned = label.strip().strip("\"'").lower()
    if cleaned in _GB_FAMILY:
        return "gb18030"
    try:
        name = codecs.lookup(cleaned).name
    except LookupError:
        return None
    if name in {"gb2312", "gbk", "gb18030", "hz"}:
        return "gb18030"
    if name in {"big5", "cp950"}:
        # big5hkscs is a superset of big5 (more characters decode, nothing changes meaning).
        return "big5hkscs"
    if name.startswith("utf-16") or name.startswith("utf-32"):
        # A page that says utf-16 in an ASCII-readable meta tag is not UTF-16.
        return None
    return name


def _count_errors(body: bytes, encoding: str) -> tuple[int, str]:
    text = body.decode(encoding, errors="replace")
    return text.count("\ufffd"), text


def _declared_candidates(body: bytes, declared: str | None) -> list[str]:
    labels: list[str | None] = [declared]
    labels.extend(m.decode("ascii", "ignore") for m in _META_CHARSET.findall(body[:_META_SCAN_BYTES]))
    labels.append("gb18030")
    seen: list[str] = []
    for label in labels:
        name = normalize_encoding_label(label)
        if name and name not in seen:
            seen.append(name)
    # Weak Western labels go last: they decode anything and are only right for Western pages.
    return [n for n in seen if n not in _WEAK] + [n for n in seen if n in _WEAK]


_ASCII = bytes(range(0x80))


def decode_html(body: bytes, declared: str | None = None) -> DecodedPage:
    """Decode HTML ``body``; ``declared`` is the charset from the HTTP Content-Type header, if any.

    Never raises on bad bytes: the chosen codec decodes with ``errors="replace"``.
    """
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise ValueError(f"decode_html expects bytes, got {type(body).__name__}; pass response.body, not response.text")
    body = bytes(body)
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return DecodedPage(body.decode(encoding, errors="replace"), encoding)
    try:
        return DecodedPage(body.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass

    non_ascii = len(body.translate(None, _ASCII)) or 1  # bytes >= 0x80, counted in C
    best: tuple[int, str, str] | None = None  # (errors, encoding, text)
    for encoding in _declared_candidates(body, declared):
        errors, text = _count_errors(body, encoding)
        if errors == 0:
            return DecodedPage(text, encoding)
        if best is None or errors < best[0]:
            best = (errors, encoding, text)
    if best is not None and best[0] / non_ascii <= _MAX_ERROR_RATE:
        return DecodedPage(best[2], best[1])

    guess = _charset_normalizer_guess(body)
    if guess:
        errors, text = _count_errors(body, guess)
        if best is None or errors < best[0]:
            best = (errors, guess, text)
    if best is None:  # pragma: no cover - gb18030 is always a candidate
        errors, text = _count_errors(body, "utf-8")
        best = (errors, "utf-8", text)
    # Among nearly equal candidates UTF-8 is the safer final answer for mostly broken bytes.
    utf8_errors, utf8_text = _count_errors(body, "utf-8")
    if utf8_errors < best[0]:
        best = (utf8_errors, "utf-8", utf8_text)
    return DecodedPage(best[2], best[1])


def _charset_normalizer_guess(body: bytes) -> str | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    match = from_bytes(body[:200_000]).best()
    if match is None:
        return None
    return normalize_encoding_label(match.encoding)
