"""Scrapy's meta-refresh redirects, without decoding every page that plainly has none.

Scrapy's ``MetaRefreshMiddleware`` looks for ``<meta http-equiv="refresh">`` in the first 4,096 characters of
every HTML response, and to get them it decodes the whole body (``response.text``): for a 150 KB portal page about
0.4 ms of the crawl process's CPU, and without a declared charset a guess of the charset over the whole body
(docs/performance.md). The crawl process never reads an article page's text itself (the workers decode and parse it),
so that decoding is all the middleware's.

:class:`HeadMetaRefreshMiddleware` first looks at the raw bytes: a page whose first 16,384 bytes (the most that
4,096 characters take in any encoding of the web) do not hold the letters ``refresh`` in any case declares no
refresh there, since every encoding of the web but UTF-16 spells ASCII letters as their ASCII bytes (WHATWG
Encoding Standard). Such a page is passed on undecoded; any other page (``refresh`` among its first bytes, a
UTF-16 page, NUL bytes, a declared charset that spells ``refresh`` otherwise) goes through Scrapy's own
middleware, which decides as it always did.
"""

from __future__ import annotations

import codecs
import re

from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Request, Response

# Scrapy reads the first 4,096 characters; a character takes at most 4 bytes (UTF-8, GB18030).
HEAD_BYTES = 4 * 4096
_CHARSET = re.compile(rb"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)


def may_declare_refresh(body: bytes, content_type: bytes | None = None) -> bool:
    """False when the first 4,096 characters of the HTML ``body`` certainly hold no meta refresh.

    >>> may_declare_refresh(b'<html><head><meta charset="utf-8"><title>t</title></head><body>' + 5000 * b"x")
    False
    >>> may_declare_refresh(b'<meta http-equiv="Refresh" content="0; url=/m/">')
    True
    >>> may_declare_refresh('<meta http-equiv="refresh" content="0">'.encode("utf-16"))  # not ASCII letters
    True
    """
    head = body[:HEAD_BYTES]
    # bytes.lower() folds ASCII letters only, as a bytes regex's IGNORECASE does: 7x faster than the regex's search.
    if b"refresh" in head.lower() or b"\x00" in head or head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    charset = _CHARSET.search(content_type or b"")
    if charset is not None:  # a header's charset that spells the word otherwise (UTF-16, an EBCDIC code page)
        try:
            return "refresh".encode(charset.group(1).decode("ascii")) != b"refresh"
        except (LookupError, UnicodeError):
            return True
    return False


class HeadMetaRefreshMiddleware(MetaRefreshMiddleware):
    """``MetaRefreshMiddleware`` that passes on undecoded the HTML responses :func:`may_declare_refresh` clears."""

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        if isinstance(response, HtmlResponse) and not may_declare_refresh(
            response.body, response.headers.get(b"Content-Type")
        ):
            return response
        return super().process_response(request, response)
