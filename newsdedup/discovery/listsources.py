"""A site's list sources beyond ``<a href>``: the ``[[site.sources]]`` tables of the site file, and their paging.

Four kinds (README.md, *Site file*)::

    [[site.sources]]            # a JSON or JSONP feed (a callback wrapper is stripped)
    name = "roll"
    kind = "json"
    url = "https://feed.mix.sina.com.cn/api/roll/get?pageid=153&lid=2509&num=50&page={page}"
    items = "result.data"       # JMESPath to the list of items (left out: every object of the document)
    link = "url"                # JMESPath to the item's URL ...
    # link_template = "https://www.sohu.com/a/{id}_{authorId}"   # ... or a URL filled from its fields
    title = "title"             # optional, JMESPath
    time = "ctime"              # optional, JMESPath (epoch seconds or milliseconds, or a date and time)
    max_pages = 5               # optional, else the site's max_source_pages (default 10)

    [[site.sources]]            # JSON kept in a page's script: __NEXT_DATA__, window.__INITIAL_STATE__, var allData
    kind = "page_data"
    url = "https://www.thepaper.cn/"
    variable = "__NEXT_DATA__"
    link_template = "https://www.thepaper.cn/newsDetail_forward_{contId}"

    [[site.sources]]            # RSS or Atom
    kind = "feed"
    url = "https://www.chinanews.com.cn/rss/scroll-news.xml"

    [[site.sources]]            # a sitemap, a sitemap index (gzipped too), or robots.txt and its Sitemap: lines
    kind = "sitemap"
    url = "https://www.example.com/robots.txt"

``url`` may hold ``{page}`` (Python's format: ``{page:02d}`` pads), filled from ``first_page`` (default 1) on, and
``{offset}``, ``(page - first_page) * page_size`` for feeds that count items (``offset=0&limit=20``);
``first_url`` gives a first page that does not follow the pattern (163's ``cm_guonei.js`` before
``cm_guonei_02.js``). :class:`Pager` decides which page comes next: paging stops at the first page that brings no
article link the URL filter does not already know, at an empty page, or at ``max_pages``. A page that only names
sitemaps (a sitemap index, robots.txt) is not one of the ``max_pages``: under ``max_pages = 1`` an index's first
sitemap is still read (index pages have a limit of their own, ``max_pages`` more, against an index naming itself).

>>> source = parse_sources([{"kind": "json", "url": "https://feed.example.com/roll?page={page}",
...                          "items": "result.data", "link": "url"}], "site 'x'", ("example.com",), 3)[0]
>>> source.name, source.page_url(2), source.max_pages
('json', 'https://feed.example.com/roll?page=2', 3)
>>> pager = Pager(source)
>>> pager.next_url(), pager.page_done(links=50, new=50), pager.page_done(links=50, new=0)
('https://feed.example.com/roll?page=1', 'https://feed.example.com/roll?page=2', None)
>>> pager.stop_reason
'nothing_new'
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

KINDS = ("json", "page_data", "feed", "sitemap")
# Names the spider gives the links it finds on list pages by itself; a declared source may not take them.
HTML_LINKS = "html"
SCRIPT_LINKS = "scripts"
DEFAULT_MAX_PAGES = 10
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
# The names the crawl gives start URLs that are feeds or sitemaps (newsdedup.discovery.startsources).
_START_SOURCE_NAME = re.compile(r"start[1-9][0-9]*-(?:feed|sitemap|json)")
_COMMON_KEYS = ("name", "kind", "url", "first_url", "first_page", "page_size", "max_pages")
_ITEM_KEYS = ("items", "link", "link_template", "title", "time")
_KEYS_OF_KIND = {
    "json": _COMMON_KEYS + _ITEM_KEYS,
    "page_data": _COMMON_KEYS + _ITEM_KEYS + ("variable",),
    "feed": _COMMON_KEYS,
    "sitemap": _COMMON_KEYS,
}
# {expression} in a link template: a JMESPath expression on the item.
TEMPLATE_FIELD = re.compile(r"\{([^{}]+)\}")
# A page-data variable: a JavaScript name, dotted (window.__INITIAL_STATE__).
_VARIABLE_RE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")

# Why a source stopped paging (the summary names it).
STOP_NOTHING_NEW = "nothing_new"  # a page brought no article link the URL filter did not know
STOP_END = "end"  # no next page: an empty page, or a source without {page} that is done
STOP_MAX_PAGES = "max_pages"  # the source's page limit
STOP_FAILED = "failed"  # a page could not be read, and nothing else was queued


class SourceConfigError(ValueError):
    """A list source (or canonical table) of the site file cannot be used; the message names the site and key."""


@dataclass(frozen=True)
class ListSource:
    name: str
    kind: str
    url: str
    first_url: str | None = None
    first_page: int = 1
    page_size: int = 0  # items a page, for {offset}
    max_pages: int = DEFAULT_MAX_PAGES
    items: ParsedResult | None = None
    link: ParsedResult | None = None
    link_template: str | None = None
    title: ParsedResult | None = None
    time: ParsedResult | None = None
    variable: str | None = None

    @property
    def paged(self) -> bool:
        return "{page" in self.url or "{offset" in self.url

    def page_url(self, page: int) -> str:
        if page == self.first_page and self.first_url:
            return self.first_url
        return _fill(self.url, page, self.first_page, self.page_size) if self.paged else self.url


def _fill(template: str, page: int, first_page: int, page_size: int) -> str:
    return template.format(page=page, offset=(page - first_page) * page_size)


class Pager:
    """Which page of one source comes next (pure bookkeeping; the spider fetches).

    Its state travels with each page's request (:meth:`state`, given back to the constructor when the page is
    answered), not in the process that sent it: in a distributed crawl another process may receive the page, and a
    resumed ``JOBDIR`` crawl picks the paging up where it was."""

    def __init__(self, source: ListSource, *, page: int | None = None, pages: int = 0,
                 queued: Sequence[str] = (), indexes: int = 0) -> None:
        self.source = source
        self.pages = pages  # pages answered (read or failed)
        self.indexes = indexes  # of them, pages that only named sitemaps (not counted against max_pages)
        self.page = source.first_page if page is None else page
        self.queued: deque[str] = deque(queued)  # sitemaps an index or robots.txt named, not fetched yet
        self.stop_reason: str | None = None

    def state(self) -> dict[str, Any]:
        """What a page's request carries, to resume the paging with when it is answered."""
        return {"page": self.page, "pages": self.pages, "queued": list(self.queued), "indexes": self.indexes}

    def next_url(self) -> str:
        """The first page's URL."""
        return self.source.page_url(self.page)

    def page_done(self, *, links: int, new: int, children: Sequence[str] = ()) -> str | None:
        """A page was read: ``links`` article links on it, ``new`` of them unknown so far, ``children`` sitemaps it
        names. Returns the next page's URL, or None (``stop_reason`` says why)."""
        self.pages += 1
        if children and not links:
            self.indexes += 1
        self.queued.extendleft(reversed(children))  # an index's sitemaps come before the ones queued earlier
        if not children:
            if links == 0:
                return self._stop(STOP_END) if not self.queued else self._next()
            if new == 0:
                return self._stop(STOP_NOTHING_NEW)
        return self._next()

    def past_the_end(self) -> bool:
        """Whether a page that does not exist (HTTP 404) ends the source: a paged feed past its first page has no
        more pages (163's numbered list files end so). The source then stops, as at an empty page."""
        if self.source.paged and self.page > self.source.first_page and not self.queued:
            self.pages += 1
            self._stop(STOP_END)
            return True
        return False

    def page_failed(self) -> str | None:
        """A page could not be fetched or read: the next queued sitemap, else the source stops."""
        self.pages += 1
        if not self.queued:
            return self._stop(STOP_FAILED)
        return self._next()

    def _next(self) -> str | None:
        if self.pages - self.indexes >= self.source.max_pages or self.indexes > self.source.max_pages:
            if self.queued or self.source.paged:
                return self._stop(STOP_MAX_PAGES)
            return self._stop(STOP_END)
        if self.queued:
            return self.queued.popleft()
        if self.source.paged:
            self.page += 1
            return self.source.page_url(self.page)
        return self._stop(STOP_END)

    def _stop(self, reason: str) -> None:
        self.stop_reason = reason
        return None


def parse_sources(value: Any, where: str, allowed_domains: Sequence[str], max_pages: int) -> tuple[ListSource, ...]:
    """The ``sources`` of a site entry (a list of tables), validated; ``where`` names the file and site."""
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise SourceConfigError(f"{where}: sources must be a list of tables; write each as [[site.sources]]")
    sources: list[ListSource] = []
    for index, entry in enumerate(value, start=1):
        source = _parse_source(entry, f"{where}: sources #{index}", allowed_domains, max_pages)
        taken = {s.name for s in sources}
        if source.name in taken and "name" not in entry:  # two of one kind, unnamed: json, json-2
            source = _renamed(source, taken)
        if source.name in taken:
            raise SourceConfigError(f"{where}: sources #{index} repeats name {source.name!r}; give each its own name")
        sources.append(source)
    return tuple(sources)


def _renamed(source: ListSource, taken: set[str]) -> ListSource:
    n = 2
    while f"{source.name}-{n}" in taken:
        n += 1
    return ListSource(**{**source.__dict__, "name": f"{source.name}-{n}"})


def _parse_source(entry: dict, where: str, allowed_domains: Sequence[str], max_pages: int) -> ListSource:
    kind = entry.get("kind")
    if kind not in KINDS:
        raise SourceConfigError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    name = entry.get("name", kind)
    if (not isinstance(name, str) or not _NAME_RE.fullmatch(name) or name in (HTML_LINKS, SCRIPT_LINKS)
            or _START_SOURCE_NAME.fullmatch(name)):
        raise SourceConfigError(
            f"{where}: name {name!r} must be lower-case letters, digits, '-' or '_', and not "
            f"{HTML_LINKS!r} or {SCRIPT_LINKS!r} (the summary's names for links found on list pages) nor "
            "start<N>-<kind> (the names of start URLs read as sources)"
        )
    where = f"{where} ({name!r})"
    unknown = [key for key in entry if key not in _KEYS_OF_KIND[kind]]
    if unknown:
        raise SourceConfigError(
            f"{where}: key(s) {', '.join(map(repr, unknown))} not used by kind {kind!r}; "
            f"its keys: {', '.join(_KEYS_OF_KIND[kind])}"
        )
    fields: dict[str, Any] = {"name": name, "kind": kind}
    first_page = _integer(entry, "first_page", where, 1, minimum=0)
    fields["first_page"] = first_page
    fields["max_pages"] = _integer(entry, "max_pages", where, max_pages, minimum=1)
    page_size = fields["page_size"] = _integer(entry, "page_size", where, 0, minimum=0)
    fields["url"] = _url(entry, "url", where, allowed_domains, first_page, page_size)
    if "{offset" in fields["url"] and not page_size:
        raise SourceConfigError(f"{where}: url has {{offset}}: give page_size, the number of items a page")
    if "first_url" in entry:
        fields["first_url"] = _url(entry, "first_url", where, allowed_domains, first_page, page_size)
    if kind in ("json", "page_data"):
        if ("link" in entry) == ("link_template" in entry):
            raise SourceConfigError(
                f"{where}: give either link (JMESPath to the item's URL, e.g. \"url\") or link_template "
                "(a URL filled from the item's fields, e.g. \"https://www.sohu.com/a/{id}_{authorId}\")"
            )
        for key in ("items", "link", "title", "time"):
            if key in entry:
                fields[key] = _jmespath(entry, key, where)
        if "link_template" in entry:
            fields["link_template"] = _link_template(entry, where)
    if kind == "page_data":
        variable = entry.get("variable")
        if not isinstance(variable, str) or not _VARIABLE_RE.fullmatch(variable):
            raise SourceConfigError(
                f"{where}: variable must name the script's data: \"__NEXT_DATA__\" (a Next.js page), "
                f"\"window.__INITIAL_STATE__\" or \"allData\" (var allData = {{...}}), got {variable!r}"
            )
        fields["variable"] = variable
    return ListSource(**fields)


def _integer(entry: dict, key: str, where: str, default: int, *, minimum: int) -> int:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SourceConfigError(f"{where}: {key} must be a whole number >= {minimum}, got {value!r}")
    return value


def _url(entry: dict, key: str, where: str, allowed_domains: Sequence[str], first_page: int, page_size: int) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SourceConfigError(f"{where}: {key} must be a URL (a string), got {value!r}")
    value = value.strip()
    try:
        filled = _fill(value, first_page, first_page, page_size)
    except (KeyError, IndexError, ValueError) as exc:
        raise SourceConfigError(
            f"{where}: {key} {value!r} cannot be filled in ({type(exc).__name__}: {exc}); only {{page}} and {{offset}} "
            "are filled (write a literal brace as {{ or }}, or %7B %7D)"
        ) from None
    parts = urlsplit(filled)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SourceConfigError(f"{where}: {key} {value!r} is not an absolute http(s) URL")
    host = parts.hostname
    if not any(host == d or host.endswith("." + d) for d in allowed_domains):
        raise SourceConfigError(
            f"{where}: {key} {value!r} is outside allowed_domains {list(allowed_domains)}; add its domain "
            "(the offsite filter would drop it)"
        )
    return value


def _jmespath(entry: dict, key: str, where: str) -> ParsedResult:
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise SourceConfigError(f"{where}: {key} must be a JMESPath expression (a string), got {value!r}")
    try:
        return jmespath.compile(value)
    except JMESPathError as exc:
        raise SourceConfigError(f"{where}: {key} {value!r} is not a JMESPath expression: {exc}") from None


def _link_template(entry: dict, where: str) -> str:
    value = entry["link_template"]
    if not isinstance(value, str) or not TEMPLATE_FIELD.search(value):
        raise SourceConfigError(
            f"{where}: link_template must be a URL with {{field}} parts, e.g. \"https://www.sohu.com/a/{{id}}_{{authorId}}\""
        )
    for expression in TEMPLATE_FIELD.findall(value):
        try:
            jmespath.compile(expression)
        except JMESPathError as exc:
            raise SourceConfigError(f"{where}: link_template field {{{expression}}} is not a JMESPath expression: {exc}") from None
    return value


__all__ = [
    "DEFAULT_MAX_PAGES", "HTML_LINKS", "KINDS", "ListSource", "Pager", "SCRIPT_LINKS", "SourceConfigError",
    "parse_sources",
]
