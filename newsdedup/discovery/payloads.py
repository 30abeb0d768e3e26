"""Reading list payloads: JSON and JSONP feeds, JSON kept in a page's scripts, URLs in scripts, RSS/Atom.

Every reader returns :class:`Listed` entries (an article candidate's URL, with the title and time the list gives)
or raises :class:`SourceError` whose ``reason`` the crawl counts (``not_json`` for an HTML login or block page
where a feed was expected, ``malformed_json``, ``no_page_data``, ``not_a_feed`` ...). Which URLs are articles is
the site's pattern's business, not this module's.

>>> feed = b'data_callback([{"title": "A", "docurl": "https:\\\\/\\\\/www.163.com\\\\/news\\\\/article\\\\/X.html",'
>>> feed += b' "time": "01/05/2026 10:20:30"}]);'
>>> source = ListSource("cm", "json", "https://temp.163.com/x.js", link=jmespath.compile("docurl"),
...                     title=jmespath.compile("title"), time=jmespath.compile("time"))
>>> json_items(json_document(feed, None), source)
[Listed(url='https://www.163.com/news/article/X.html', title='A', time='2026-01-05T10:20:30+08:00')]
>>> urls_in_scripts(['var u = "\\\\/\\\\/news.example.com\\\\u002Fa\\\\u002F1.html";'], "https://news.example.com/")
['https://news.example.com/a/1.html']
"""

from __future__ import annotations

import email.utils
import io
import json
import re
import time as _time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urljoin

import jmespath

from newsdedup.clock import CHINA_OFFSET
from newsdedup.discovery.listsources import TEMPLATE_FIELD, ListSource

# Reasons a source page is counted as failed (besides the download failures: http_404, connection, ...).
NOT_JSON = "not_json"  # an HTML page (a login or block page) or other text where JSON was expected
MALFORMED_JSON = "malformed_json"
NO_PAGE_DATA = "no_page_data"  # the page has no script that sets the variable
MALFORMED_PAGE_DATA = "malformed_page_data"
BAD_ITEMS = "bad_items"  # the items expression does not give a list
NOT_A_FEED = "not_a_feed"
NOT_A_SITEMAP = "not_a_sitemap"
MALFORMED_SITEMAP = "malformed_sitemap"

# JSONP: callback( ... ) with an optional ; after it, as 163's list files are written.
_JSONP_RE = re.compile(rb"^\s*[A-Za-z_$][\w$.]*\s*\((.*)\)\s*;?\s*$", re.DOTALL)
_HTML_START_RE = re.compile(rb"^\s*(?:\xef\xbb\xbf)?\s*<", re.DOTALL)
_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
# URLs written in scripts: absolute or protocol-relative; escaped slashes are undone before the search.
_SCRIPT_URL_RE = re.compile(r"(?:https?:)?//[A-Za-z0-9.-]+(?::\d+)?/[^\s\"'<>\\`]*")
_UNICODE_ESCAPE_RE = re.compile(r"\\u([0-9a-fA-F]{4})")


class SourceError(ValueError):
    """A source page that cannot be read: ``reason`` is counted, the message logged."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class Listed:
    url: str
    title: str | None = None
    time: str | None = None  # ISO 8601 with offset, as the extractor writes published_at


def decode(body: bytes, encoding: str | None) -> str:
    """Text of a payload: the declared encoding, else UTF-8, else GB18030 (older portals' files)."""
    for candidate in (encoding, "utf-8-sig", "gb18030"):
        if not candidate:
            continue
        try:
            return body.decode(candidate)
        except (UnicodeDecodeError, LookupError):
            continue
    return body.decode("utf-8", errors="replace")


def _looks_like_html(body: bytes) -> str | None:
    if not _HTML_START_RE.match(body[:200]):
        return None
    title = _TITLE_RE.search(decode(body[:20000], None))
    return " ".join(title.group(1).split())[:80] if title else ""


def json_document(body: bytes, encoding: str | None) -> Any:
    """A JSON or JSONP response's document."""
    title = _looks_like_html(body)
    if title is not None:
        raise SourceError(NOT_JSON, "an HTML page where JSON was expected (a login or block page?)"
                          + (f": <title>{title}</title>" if title else ""))
    match = _JSONP_RE.match(body)
    payload = match.group(1) if match else body
    try:
        return json.loads(decode(payload, encoding))
    except ValueError as exc:
        raise SourceError(MALFORMED_JSON, f"not valid JSON{' (JSONP stripped)' if match else ''}: {exc}") from None


def page_data(html: str, variable: str) -> Any:
    """The JSON a page's script sets: ``<script id="__NEXT_DATA__">``, ``window.__INITIAL_STATE__ = {...}``,
    ``var allData = {...};``."""
    if variable == "__NEXT_DATA__":
        match = re.search(r"<script[^>]*\bid=[\"']__NEXT_DATA__[\"'][^>]*>(.*?)</script>", html, re.DOTALL | re.I)
        if match:
            try:
                return json.loads(match.group(1))
            except ValueError as exc:
                raise SourceError(MALFORMED_PAGE_DATA, f"__NEXT_DATA__ is not valid JSON: {exc}") from None
    name = re.escape(variable)
    if "." not in variable:
        name = rf"(?:\b(?:var|let|const)\s+|\bwindow\.){name}"
    assignment = re.search(rf"{name}\s*=\s*", html)
    if assignment is None:
        raise SourceError(NO_PAGE_DATA, f"no script on the page sets {variable}")
    try:
        document, _ = json.JSONDecoder().raw_decode(html, assignment.end())
    except ValueError as exc:
        raise SourceError(MALFORMED_PAGE_DATA, f"{variable} is not JSON (a JavaScript literal?): {exc}") from None
    return document


def json_items(document: Any, source: ListSource) -> list[Listed]:
    """The listed articles of a feed document (``items``, else every object of it that gives a link)."""
    if source.items is not None:
        items = source.items.search(document)
        if items is None:
            return []  # an empty page often drops the list altogether
        if not isinstance(items, list):
            raise SourceError(BAD_ITEMS, f"items gives a {type(items).__name__}, not a list")
    else:
        items = list(_objects(document))
    found: list[Listed] = []
    for item in items:
        url = _link_of(item, source)
        if url:
            found.append(Listed(url, _text(source.title.search(item)) if source.title and isinstance(item, dict) else None,
                                listed_time(source.time.search(item)) if source.time and isinstance(item, dict) else None))
    return found


def _objects(document: Any) -> Iterator[dict]:
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            yield value
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))


def _link_of(item: Any, source: ListSource) -> str | None:
    if not isinstance(item, dict):
        return item.strip() if source.link is None and isinstance(item, str) else None
    if source.link is not None:
        value = source.link.search(item)
        return unescape_url(value) if isinstance(value, str) and value.strip() else None
    assert source.link_template is not None
    values = []
    for expression in TEMPLATE_FIELD.findall(source.link_template):
        value = jmespath.search(expression, item)
        if value is None or value == "" or isinstance(value, (dict, list, bool)):
            return None
        values.append(str(value))
    parts = iter(values)
    return TEMPLATE_FIELD.sub(lambda _: next(parts), source.link_template)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = " ".join(str(value).split())
    return text or None


def unescape_url(text: str) -> str:
    """``\\/`` and ``\\u002F`` (JSON and JavaScript escapes) undone."""
    if "\\" not in text:
        return text.strip()
    text = _UNICODE_ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return text.replace("\\/", "/").strip()


def urls_in_scripts(scripts: Iterable[str], base_url: str) -> list[str]:
    """Absolute URLs written in script texts (escaped and protocol-relative ones too), in order, once each."""
    seen: dict[str, None] = {}
    for script in scripts:
        for raw in _SCRIPT_URL_RE.findall(unescape_url(script)):
            seen.setdefault(urljoin(base_url, raw), None)
    return list(seen)


def feed_entries(body: bytes) -> list[Listed]:
    """The entries of an RSS or Atom document (feedparser: every RSS version and Atom, their dates and encodings)."""
    import feedparser  # a core dependency; imported here, where the crawl reads its first feed

    parsed = feedparser.parse(io.BytesIO(body))
    if not parsed.get("version") and not parsed.entries:
        title = _looks_like_html(body)
        if title is not None:
            raise SourceError(NOT_A_FEED, "an HTML page where RSS/Atom was expected (a login or block page?)"
                              + (f": <title>{title}</title>" if title else ""))
        problem = parsed.get("bozo_exception")
        raise SourceError(NOT_A_FEED, f"not RSS or Atom{f': {problem}' if problem else ''}")
    found = []
    for entry in parsed.entries:
        url = entry.get("link") or (entry.get("id") if str(entry.get("id", "")).startswith("http") else None)
        if url:
            stamp = entry.get("published_parsed") or entry.get("updated_parsed")
            found.append(Listed(url.strip(), _text(entry.get("title")), listed_time(stamp)))
    return found


# Date-time shapes of the portals' feeds: 2026-01-05 10:20:30, 2026/01/05 10:20, 01/05/2026 10:20:30 (163).
_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d %H:%M", "%m/%d/%Y %H:%M:%S",
                 "%m/%d/%Y %H:%M")


def listed_time(value: Any) -> str | None:
    """A list's time as ISO 8601 in China time: epoch seconds or milliseconds (numbers or digit strings), a
    ``time.struct_time`` in UTC (feedparser), ISO 8601, RFC 822, or the portals' date-time forms (China time).
    Anything else (``2小时前``) is None.

    >>> listed_time(1767579630), listed_time("1767579630000"), listed_time("01/05/2026 10:20:30")
    ('2026-01-05T10:20:30+08:00', '2026-01-05T10:20:30+08:00', '2026-01-05T10:20:30+08:00')
    >>> listed_time("Mon, 05 Jan 2026 02:20:30 GMT"), listed_time("2小时前")
    ('2026-01-05T10:20:30+08:00', None)
    """
    moment: datetime | None = None
    if isinstance(value, _time.struct_time):
        moment = datetime(*value[:6], tzinfo=timezone.utc)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) or (
            isinstance(value, str) and value.strip().isdigit()):
        number = float(value)
        if number > 1e11:  # milliseconds
            number /= 1000
        if 1e8 < number < 1e10:
            moment = datetime.fromtimestamp(number, timezone.utc)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            for shape in _TIME_FORMATS:
                try:
                    moment = datetime.strptime(text, shape)
                    break
                except ValueError:
                    continue
            else:
                try:
                    moment = email.utils.parsedate_to_datetime(text)
                except (TypeError, ValueError, IndexError):
                    moment = None
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=CHINA_OFFSET)
    return moment.astimezone(CHINA_OFFSET).isoformat(timespec="seconds")


__all__ = [
    "Listed", "SourceError", "decode", "feed_entries", "json_document", "json_items", "listed_time", "page_data",
    "unescape_url", "urls_in_scripts",
]
