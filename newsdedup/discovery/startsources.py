"""A feed, a sitemap or a JSON Feed given as a plain start URL: recognised by its content, read as a list source.

The first thing a newcomer tries is ``start_urls = ["https://www.example.com/rss.xml"]``. Read as a list page, a
feed has no ``<a href>`` and a sitemap no link at all, so its articles would be missed without a word. The spider
looks at what a start URL answers: an RSS/Atom feed (``<rss>``, ``<feed>``, ``<rdf:RDF>``), a sitemap or sitemap
index (``<urlset>``, ``<sitemapindex>``, gzipped too) or a JSON Feed (jsonfeed.org: ``"version":
"https://jsonfeed.org/version/1.1"``) is read as the list source it is, named ``start<N>-<kind>`` (N: its place in
``start_urls``), and the log shows the ``[[site.sources]]`` table that declares it (:func:`declared_form`).

>>> recognise(b'<?xml version="1.0"?>\\n<!-- news -->\\n<rss version="2.0"><channel></channel></rss>')
'feed'
>>> recognise(b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></sitemapindex>')
'sitemap'
>>> recognise(b'{"version": "https://jsonfeed.org/version/1.1", "items": []}')
'json'
>>> recognise(b'<!DOCTYPE html><html><body><a href="/a/1.html">1</a></body></html>') is None
True
>>> source = start_source("feed", "https://www.example.com/rss.xml", 2, max_pages=10)
>>> source.name, source_named("start2-feed", ["https://www.example.com/", source.url], 10) == source
('start2-feed', True)
>>> print(declared_form(source))
[[site.sources]]
name = "rss"
kind = "feed"
url = "https://www.example.com/rss.xml"
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence

import jmespath

from newsdedup.discovery.listsources import ListSource

# What each kind is called in the log.
DESCRIPTIONS = {"feed": "an RSS/Atom feed", "sitemap": "a sitemap", "json": "a JSON Feed"}
# The name a declared table would give it (a suggestion in the log; the crawl's own name is start<N>-<kind>).
_SUGGESTED_NAMES = {"feed": "rss", "sitemap": "sitemaps", "json": "jsonfeed"}
# JSON Feed 1.0 and 1.1 (https://www.jsonfeed.org/version/1.1/): items, each with url, title, date_published.
_JSON_FEED_FIELDS = {"items": "items", "link": "url", "title": "title", "time": "date_published"}
_JSON_FEED_VERSION = "https://jsonfeed.org/version/"
_NAME_RE = re.compile(r"start([1-9][0-9]*)-(feed|sitemap|json)")  # listsources refuses these for declared sources
_GZIP_MAGIC = b"\x1f\x8b\x08"
_HEAD = 4096  # bytes looked at for the root element (a prolog, comments and a doctype come before it)
# The XML prolog, comments, doctype and processing instructions before the root element.
_PROLOG = re.compile(rb"\s*(?:<\?.*?\?>|<!--.*?-->|<![^>]*>)", re.DOTALL)
_ROOT = re.compile(rb"\s*<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)")


def recognise(body: bytes) -> str | None:
    """``"feed"``, ``"sitemap"`` or ``"json"`` (a JSON Feed) when ``body`` is one, else None (a page to read for
    its links)."""
    head = body[:_HEAD]
    if head.startswith(_GZIP_MAGIC):
        try:  # only the start: a gzipped sitemap is unpacked, within the download limit, when it is read
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, _HEAD)
        except zlib.error:
            return None
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if head.startswith(b"{"):
        return "json" if _is_json_feed(body) else None
    position = 0
    while match := _PROLOG.match(head, position):
        position = match.end()
    root = _ROOT.match(head, position)
    if root is None:
        return None
    name = root.group(2).lower()
    if name in (b"rss", b"feed", b"rdf"):
        return "feed"
    if name in (b"urlset", b"sitemapindex"):
        return "sitemap"
    return None


def _is_json_feed(body: bytes) -> bool:
    try:
        document = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return False
    return (isinstance(document, dict) and str(document.get("version", "")).startswith(_JSON_FEED_VERSION)
            and isinstance(document.get("items"), list))


def start_source(kind: str, url: str, number: int, *, max_pages: int) -> ListSource:
    """The list source a start URL (the ``number``-th of ``start_urls``, from 1) of ``kind`` is read as."""
    fields = {key: jmespath.compile(value) for key, value in _JSON_FEED_FIELDS.items()} if kind == "json" else {}
    return ListSource(name=f"start{number}-{kind}", kind=kind, url=url, max_pages=max_pages, **fields)


def source_named(name: str, start_urls: Sequence[str], max_pages: int) -> ListSource | None:
    """The start URL's source called ``name`` (a page of it answered, maybe in another process), or None."""
    match = _NAME_RE.fullmatch(name)
    if match is None or int(match.group(1)) > len(start_urls):
        return None
    number = int(match.group(1))
    return start_source(match.group(2), start_urls[number - 1], number, max_pages=max_pages)


def declared_form(source: ListSource) -> str:
    """The ``[[site.sources]]`` table that declares ``source`` in a site file."""
    lines = ["[[site.sources]]", f'name = "{_SUGGESTED_NAMES[source.kind]}"', f'kind = "{source.kind}"',
             f"url = {json.dumps(source.url, ensure_ascii=False)}"]
    if source.kind == "json":
        lines += [f'{key} = "{value}"' for key, value in _JSON_FEED_FIELDS.items()]
    return "\n".join(lines)


__all__ = ["DESCRIPTIONS", "declared_form", "recognise", "source_named", "start_source"]
