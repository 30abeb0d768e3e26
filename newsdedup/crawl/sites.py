"""Site file: which portals to crawl, where to start, which links are articles.

The site file is TOML (docs/site-file.md), one ``[[site]]`` table per portal::

    [[site]]
    name = "sina"
    start_urls = ["https://news.sina.com.cn/roll/"]
    allowed_domains = ["sina.com.cn"]
    article_url_pattern = 'https?://[a-z]+\\.sina\\.com\\.cn/.+/\\d{4}-\\d{2}-\\d{2}/doc-[a-z0-9]+\\.shtml'
    follow_url_pattern = 'https?://news\\.sina\\.com\\.cn/roll/'      # optional
    remove_selectors = [".blk-related", ".blk-comment"]             # optional

A site may also declare list sources beyond its list pages (``[[site.sources]]``: JSON/JSONP feeds, page data,
RSS/Atom, sitemaps) and its canonical URL form (``[site.canonical]``); :mod:`newsdedup.discovery` validates and
reads them.

``load_sites`` reads and validates the whole file up front and raises ``SiteConfigError``
naming the file, the entry and the fix, so a typo fails before any request is sent.

URL matching (``SiteConfig.is_article`` / ``is_followable``) uses ``re.fullmatch``, not
``re.search``: a pattern describes a whole URL, so a share or comment link that merely
*contains* an article URL in its query (``gentie.ifeng.com/view.html?docUrl=https://news.ifeng.com/c/...``)
is not taken for the article.  Before matching, the ``#fragment`` is dropped and the scheme
and host are lower-cased.  Portals append tracking queries to article links
(``?cre=tianyi&mod=...``), so when the URL with its query does not match, the URL without its
query is tried too; a site whose article identity lives in the query can still spell the
query out in its pattern. Scrapy's ``LinkExtractor(allow=...)`` searches instead, so its users write
path-only patterns; such a pattern (starting with ``/``) could never match here and is refused when
the file is read, with the whole-URL form to write.

This module has no Scrapy import; the spider turns a ``SiteConfig`` into requests.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit, urlunsplit

import cssselect

from newsdedup.discovery.canonical import IDENTITY, CanonicalRules, parse_canonical
from newsdedup.discovery.listsources import DEFAULT_MAX_PAGES, ListSource, SourceConfigError, parse_sources

__all__ = [
    "SiteConfig",
    "SiteConfigError",
    "default_sites_path",
    "load_sites",
    "parse_sites",
]

_REQUIRED_KEYS = ("name", "start_urls", "allowed_domains", "article_url_pattern")
# sources, canonical and max_source_pages: newsdedup.discovery (list feeds, page data, RSS, sitemaps; one URL an article).
_OPTIONAL_KEYS = ("follow_url_pattern", "remove_selectors", "sources", "canonical", "max_source_pages")
_KNOWN_KEYS = _REQUIRED_KEYS + _OPTIONAL_KEYS
# A name is passed on the command line (-a site=NAME) and appears in stats and stored rows.
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
# A pattern that starts with the path: it can never match a whole URL.
_PATH_ONLY_RE = re.compile(r"\^?/")
# A bare host name or IP address, as Scrapy's allowed_domains expects (no scheme, port or path).
_DOMAIN_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")
# HTMLTranslator is what parsel (Scrapy's selectors) uses, so a selector accepted here works there.
_CSS_TRANSLATOR = cssselect.HTMLTranslator()


class SiteConfigError(ValueError):
    """The site file cannot be used; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class SiteConfig:
    """One portal of the site file.

    >>> site = SiteConfig(
    ...     name="demo", start_urls=("https://news.example.com/roll/",),
    ...     allowed_domains=("example.com",),
    ...     article_url_pattern=re.compile(r"https?://news\\.example\\.com/a/\\d+\\.html"),
    ...     follow_url_pattern=re.compile(r"https?://news\\.example\\.com/roll/(?:index_\\d+\\.html)?"),
    ...     remove_selectors=(".related",))
    >>> site.is_article("https://news.example.com/a/123.html?from=home#comments")
    True
    >>> site.is_article("https://share.example.com/?u=https://news.example.com/a/123.html")
    False
    >>> site.is_followable("https://news.example.com/roll/index_2.html")
    True
    """

    name: str
    start_urls: tuple[str, ...]
    allowed_domains: tuple[str, ...]
    article_url_pattern: re.Pattern[str]
    follow_url_pattern: re.Pattern[str] | None
    remove_selectors: tuple[str, ...]
    sources: tuple[ListSource, ...] = ()
    canonical: CanonicalRules = IDENTITY
    max_source_pages: int = DEFAULT_MAX_PAGES  # also the limit of a start URL that is a feed or sitemap

    def is_article(self, url: str) -> bool:
        """Whether ``url`` is an article page of this portal (whole-URL match, see module doc)."""
        return _url_matches(self.article_url_pattern, url)

    def is_followable(self, url: str) -> bool:
        """Whether ``url`` is a list page worth following for more article links.

        False when the site has no ``follow_url_pattern``.  Independent of ``is_article``:
        a spider asks ``is_article`` first.
        """
        if self.follow_url_pattern is None:
            return False
        return _url_matches(self.follow_url_pattern, url)

    def is_allowed(self, url: str) -> bool:
        """Whether the host of ``url`` is one of ``allowed_domains`` or a subdomain of one."""
        return _host_allowed(urlsplit(url.strip()).hostname or "", self.allowed_domains)


def default_sites_path() -> Traversable:
    """The site file shipped with the package (``config/sites.toml`` in the repository)."""
    return files("newsdedup.config") / "sites.toml"


def load_sites(
    path: str | os.PathLike[str] | Traversable | None = None, *, only: str | None = None
) -> list[SiteConfig]:
    """Read and validate a site file; ``None`` reads the packaged default.

    ``only`` keeps the entries of those names, comma-separated (``"sina,163"``; the whole file is still validated).
    Raises ``SiteConfigError`` for anything wrong, with the file, the entry and the fix.
    """
    if path is None:
        source: Traversable | Path = default_sites_path()
    elif isinstance(path, (str, os.PathLike)):
        source = Path(path)
    else:
        source = path
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        raise SiteConfigError(
            f"{source}: site file not found; pass an existing TOML file (--sites PATH) "
            f"or omit it to use the packaged default"
        ) from None
    except OSError as exc:
        raise SiteConfigError(f"{source}: cannot read the site file: {exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SiteConfigError(f"{source}: not UTF-8 ({exc}); save the site file as UTF-8") from None
    return parse_sites(text, source=str(source), only=only)


def parse_sites(text: str, *, source: str = "<string>", only: str | None = None) -> list[SiteConfig]:
    """Validate site-file text (the contents of a TOML file); ``source`` names it in errors; ``only``: as in
    :func:`load_sites`."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SiteConfigError(f"{source}: not valid TOML: {exc}") from None
    extra = sorted(set(document) - {"site"})
    if extra:
        raise SiteConfigError(
            f"{source}: unknown top-level key(s) {', '.join(map(repr, extra))}; "
            f"a site file holds only [[site]] tables"
        )
    entries = document.get("site")
    if not isinstance(entries, list) or not entries:
        raise SiteConfigError(
            f"{source}: no [[site]] entries; add at least one [[site]] table with "
            f"{', '.join(_REQUIRED_KEYS)}"
        )
    sites: list[SiteConfig] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries, start=1):
        site = _parse_entry(entry, source=source, index=index)
        if site.name in seen:
            raise SiteConfigError(
                f"{source}: site #{index} repeats name {site.name!r} of site #{seen[site.name]}; "
                f"give every [[site]] its own name"
            )
        seen[site.name] = index
        sites.append(site)
    if only is not None:
        names = [name.strip() for name in only.split(",") if name.strip()]
        unknown = [name for name in names if name not in seen]
        if unknown or not names:
            raise SiteConfigError(
                f"{source}: no site named {', '.join(map(repr, unknown or [only]))}; known sites: {', '.join(seen)}"
            )
        return [site for site in sites if site.name in names]
    return sites


def _parse_entry(entry: Any, *, source: str, index: int) -> SiteConfig:
    if not isinstance(entry, dict):
        raise SiteConfigError(f"{source}: site #{index} is not a table; write it as [[site]]")
    raw_name = entry.get("name")
    label = f"site #{index} ({raw_name!r})" if isinstance(raw_name, str) else f"site #{index}"
    where = f"{source}: {label}"

    unknown = [key for key in entry if key not in _KNOWN_KEYS]
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise SiteConfigError(
            f"{where}: unknown key(s) {', '.join(hints)}; known keys: {', '.join(_KNOWN_KEYS)}"
        )
    # A site whose lists are all feeds or sitemaps needs no start page.
    missing = [key for key in _REQUIRED_KEYS if key not in entry and not (key == "start_urls" and "sources" in entry)]
    if missing:
        raise SiteConfigError(f"{where}: missing required key(s) {', '.join(missing)}")

    name = _string(entry, "name", where)
    if not _NAME_RE.fullmatch(name):
        raise SiteConfigError(
            f"{where}: name {name!r} must be lower-case letters, digits, '-' or '_' "
            f"(it is used on the command line as -a site=NAME)"
        )
    allowed_domains = _string_list(entry, "allowed_domains", where, required=True)
    for domain in allowed_domains:
        if not _DOMAIN_RE.fullmatch(domain):
            raise SiteConfigError(
                f"{where}: allowed_domains entry {domain!r} is not a bare host name; "
                f"write e.g. 'sina.com.cn' (no scheme, port, path or upper case)"
            )
    start_urls = _string_list(entry, "start_urls", where, required="sources" not in entry)
    for url in start_urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SiteConfigError(
                f"{where}: start URL {url!r} is not an absolute http(s) URL; "
                f"write e.g. 'https://news.example.com/roll/'"
            )
        if not _host_allowed(parts.hostname, allowed_domains):
            raise SiteConfigError(
                f"{where}: start URL {url!r} is outside allowed_domains {list(allowed_domains)}; "
                f"add its domain or fix the URL (the offsite filter would drop it)"
            )
    article_pattern = _pattern(entry, "article_url_pattern", where)
    follow_pattern = (
        _pattern(entry, "follow_url_pattern", where) if "follow_url_pattern" in entry else None
    )
    remove_selectors = _string_list(entry, "remove_selectors", where, required=False)
    for selector in remove_selectors:
        try:
            _CSS_TRANSLATOR.css_to_xpath(selector)
        except cssselect.SelectorError as exc:
            raise SiteConfigError(
                f"{where}: remove_selectors entry {selector!r} is not a usable CSS selector "
                f"({exc}); fix or remove it"
            ) from None
    max_pages = entry.get("max_source_pages", DEFAULT_MAX_PAGES)
    if isinstance(max_pages, bool) or not isinstance(max_pages, int) or max_pages < 1:
        raise SiteConfigError(f"{where}: max_source_pages must be a whole number >= 1, got {max_pages!r}")
    try:
        sources = parse_sources(entry.get("sources", []), where, allowed_domains, max_pages)
        canonical = parse_canonical(entry["canonical"], where, allowed_domains) if "canonical" in entry else IDENTITY
    except SourceConfigError as exc:
        raise SiteConfigError(str(exc)) from None
    if not start_urls and not sources:
        raise SiteConfigError(f"{where}: neither start_urls nor sources; give at least one list page or source")
    return SiteConfig(
        name=name,
        start_urls=start_urls,
        allowed_domains=allowed_domains,
        article_url_pattern=article_pattern,
        follow_url_pattern=follow_pattern,
        remove_selectors=remove_selectors,
        sources=sources,
        canonical=canonical,
        max_source_pages=max_pages,
    )


def _string(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise SiteConfigError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value.strip()


def _string_list(entry: Mapping[str, Any], key: str, where: str, *, required: bool) -> tuple[str, ...]:
    if key not in entry:
        return ()
    value = entry[key]
    if isinstance(value, str):
        raise SiteConfigError(f"{where}: {key} must be a list of strings; write {key} = [{value!r}]")
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise SiteConfigError(f"{where}: {key} must be a list of non-empty strings, got {value!r}")
    if required and not value:
        raise SiteConfigError(f"{where}: {key} is empty; give at least one")
    return tuple(item.strip() for item in value)


def _pattern(entry: Mapping[str, Any], key: str, where: str) -> re.Pattern[str]:
    text = _string(entry, key, where)
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise SiteConfigError(
            f"{where}: {key} is not a valid regular expression ({exc}): {text!r}; "
            f"in TOML write patterns as 'literal strings' so backslashes stay as they are"
        ) from None
    if _PATH_ONLY_RE.match(text):
        # Scrapy's LinkExtractor(allow=...) searches anywhere in the URL, so its users write paths; here a
        # pattern is matched against the whole URL and a path-only one would silently match nothing.
        raise SiteConfigError(
            f"{where}: {key} '{text}' starts with '/', but patterns match the whole URL (re.fullmatch), scheme and "
            f"host included; write e.g. 'https?://news\\.example\\.com{text.lstrip('^')}' or "
            f"'https?://[^/]+{text.lstrip('^')}' for any host"
        )
    return pattern


def _host_allowed(host: str, domains: tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    return any(host == domain or host.endswith("." + domain) for domain in domains)


def _url_matches(pattern: re.Pattern[str], url: str) -> bool:
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return False
    scheme, netloc = parts.scheme.lower(), parts.netloc.lower()
    if pattern.fullmatch(urlunsplit((scheme, netloc, parts.path, parts.query, ""))):
        return True
    # Tracking queries (?cre=..., ?from=...) do not make an article a different page.
    return bool(parts.query) and bool(pattern.fullmatch(urlunsplit((scheme, netloc, parts.path, "", ""))))
