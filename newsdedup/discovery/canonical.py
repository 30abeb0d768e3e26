"""One article, one URL: a site's canonical form of its article links.

Portals publish one article under several URLs: a mobile twin (``m.sohu.com/a/...`` and
``www.sohu.com/a/...``), ``http`` and ``https``, and links decorated with tracking parameters
(``?spm=...&from=timeline``). A site's ``[site.canonical]`` table says how to fold them into one::

    [site.canonical]
    hosts = { "m.sohu.com" = "www.sohu.com" }   # host -> host (the port is kept)
    keep_query = []                              # query parameters kept, in the URL's order; the rest dropped
    scheme = "https"                             # optional

``keep_query`` left out keeps the query as it is; ``keep_query = []`` drops all of it. The parameters kept keep the
portal's own text (``url=http://x.cn/y``, ``q=a%20b``, a bare ``id``: as the portal wrote them, not re-encoded),
since the URL requested must be the portal's. The fragment is always dropped. The spider requests the canonical URL,
so twins are fetched once, and the URL filter, ``export`` and the report all see that one URL.

>>> rules = parse_canonical({"hosts": {"m.sohu.com": "www.sohu.com"}, "keep_query": ["id"], "scheme": "https"},
...                         "site 'sohu'", ("sohu.com",))
>>> rules.apply("http://M.Sohu.com/a/123_456?spm=smpc.home&id=7&from=timeline#comments")
'https://www.sohu.com/a/123_456?id=7'
>>> rules.apply("http://m.sohu.com/a/1?url=http://x.cn/y&q=a%20b&id&from=1")
'https://www.sohu.com/a/1?id'
>>> IDENTITY.apply("http://m.sohu.com/a/1_2?x=1#c")
'http://m.sohu.com/a/1_2?x=1#c'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from w3lib.url import url_query_cleaner

from newsdedup.discovery.listsources import SourceConfigError

# A bare host name or IP address, as in allowed_domains.
_HOST_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")
_KEYS = ("hosts", "keep_query", "scheme")


@dataclass(frozen=True)
class CanonicalRules:
    hosts: Mapping[str, str] = field(default_factory=dict)
    keep_query: tuple[str, ...] | None = None  # None: the query stays as it is
    scheme: str | None = None
    active: bool = True

    def apply(self, url: str) -> str:
        """The canonical form of ``url`` (unchanged when the site declares no rules)."""
        if not self.active:
            return url
        parts = urlsplit(url.strip())
        scheme = self.scheme or parts.scheme.lower()
        host = (parts.hostname or "").rstrip(".")
        host = self.hosts.get(host, host)
        if ":" in host:  # an IPv6 address keeps its brackets
            host = f"[{host}]"
        netloc = host if parts.port is None else f"{host}:{parts.port}"
        url = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
        if self.keep_query is None:
            return url
        # Each kept parameter as the portal wrote it (parse_qsl and urlencode would re-encode url=http://x.cn/y,
        # turn %20 into + and a bare ?id into ?id=); repeated ones kept too.
        return url_query_cleaner(url, self.keep_query, unique=False)


IDENTITY = CanonicalRules(active=False)


def parse_canonical(value: Any, where: str, allowed_domains: tuple[str, ...]) -> CanonicalRules:
    """The ``canonical`` table of a site entry, validated; ``where`` names the site in errors."""
    where = f"{where}: canonical"
    if not isinstance(value, dict):
        raise SourceConfigError(f"{where} must be a table, e.g. [site.canonical] with hosts = {{...}}")
    unknown = sorted(set(value) - set(_KEYS))
    if unknown:
        raise SourceConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known keys: {', '.join(_KEYS)}")
    hosts = value.get("hosts", {})
    if not isinstance(hosts, dict):
        raise SourceConfigError(f"{where}.hosts must be a table of host = host, e.g. {{ \"m.sohu.com\" = \"www.sohu.com\" }}")
    for source, target in hosts.items():
        for host in (source, target):
            if not isinstance(host, str) or not _HOST_RE.fullmatch(host):
                raise SourceConfigError(f"{where}.hosts: {host!r} is not a bare lower-case host name (no scheme, port or path)")
        if not any(target == d or target.endswith("." + d) for d in allowed_domains):
            raise SourceConfigError(
                f"{where}.hosts: {source!r} -> {target!r}: {target!r} is outside allowed_domains {list(allowed_domains)}; "
                "the offsite filter would drop every canonical URL"
            )
    keep = value.get("keep_query")
    if keep is not None and (not isinstance(keep, list) or not all(isinstance(k, str) and k for k in keep)):
        raise SourceConfigError(f"{where}.keep_query must be a list of parameter names (write [] to drop every parameter)")
    scheme = value.get("scheme")
    if scheme is not None and scheme not in ("http", "https"):
        raise SourceConfigError(f"{where}.scheme must be \"http\" or \"https\", got {scheme!r}")
    return CanonicalRules(hosts=dict(hosts), keep_query=None if keep is None else tuple(keep), scheme=scheme)


__all__ = ["IDENTITY", "CanonicalRules", "parse_canonical"]
