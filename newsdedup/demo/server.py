"""One local HTTP server (127.0.0.1 only) for everything newsdedup crawls offline.

:class:`LoopbackServer` serves a mapping of URL paths to :class:`Response` objects from a daemon thread, counts
the requests it receives per path, and writes site files (docs/site-file.md) with :func:`site_entry`, so the real
spider crawls it exactly like a portal. The demo mini-portal (:class:`DemoPortalServer`), the page-level
benchmark and the crawl tests all run on it::

    with DemoPortalServer(day=1) as server:
        Path("demo-sites.toml").write_text(server.sites_toml(), encoding="utf-8")
        ...  # scrapy crawl portal --sites demo-sites.toml
        server.set_day(2)  # the list pages now link to new articles

Responses look like a portal's: ``Content-Type`` with the page's charset (or none), ``Last-Modified`` when the
page has one (and ``304`` for a matching ``If-Modified-Since``), ``404`` for anything not served. A subclass that
answers from more than the path (the query, the host name, how often the path was asked for, an injected fault or
a delay) overrides :meth:`LoopbackServer.respond`; it runs in the request's own thread, so it may block.
"""

from __future__ import annotations

import collections
import ipaddress
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from newsdedup.demo.content import DAYS, load_manifest, portals, render_site, robots_txt

__all__ = ["DemoPortalServer", "LoopbackServer", "Request", "Response", "load_manifest", "site_entry"]


@dataclass(frozen=True)
class Response:
    """What the server sends for one path."""

    body: bytes
    content_type: str = "text/html; charset=utf-8"
    last_modified: datetime | None = None
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()  # more headers (a redirect's ``Location``, say)


@dataclass(frozen=True)
class Request:
    """One request as :meth:`LoopbackServer.respond` sees it."""

    path: str  # the URL path, query dropped
    target: str  # the request target as the client sent it (path and query, percent-escapes kept)
    host: str  # the ``Host`` header's name, port dropped
    seen: int  # requests for ``path`` received before this one


_NOT_FOUND = Response(
    '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>404 页面不存在</title></head>\n'
    "<body><h1>404 Not Found</h1><p>抱歉，您访问的页面不存在或已被删除。</p></body></html>\n".encode("utf-8")
)


class LoopbackServer:
    """Serves ``pages`` (a mapping of URL path to :class:`Response`, or a function of the path returning one
    or None) on 127.0.0.1 from a daemon thread; a context manager (start on enter)."""

    def __init__(
        self,
        pages: Mapping[str, Response] | Callable[[str], Response | None],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"host must be a loopback IP address such as '127.0.0.1', got {host!r}")
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an int in 0..65535 (0 = any free port), got {port!r}")
        self._pages = pages.get if isinstance(pages, Mapping) else pages
        self._host, self._port = host, port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.requests_served: collections.Counter[str] = collections.Counter()
        """Requests received per URL path (query dropped), robots.txt and 404s included."""
        self.requests_received: collections.Counter[str] = collections.Counter()
        """Requests received per request target as the client sent it (path and query, percent-escapes kept)."""
        self._sent: collections.defaultdict[str, threading.Event] = collections.defaultdict(threading.Event)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` once started."""
        if self._httpd is None:
            raise RuntimeError("the server is not running; call start() or use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        """Bind the port and serve in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("the server is already running")
        httpd = ThreadingHTTPServer((self._host, self._port), _Handler)
        httpd.daemon_threads = True
        httpd.loopback = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._started()
        # A short poll interval makes stop() quick (shutdown waits for the next poll).
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="newsdedup-loopback", daemon=True
        )
        self._thread.start()

    def _started(self) -> None:
        """Hook: the port is bound (``base_url`` works), nothing served yet."""

    def stop(self) -> None:
        """Stop serving and close the socket (safe to call twice)."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def respond(self, request: Request) -> Response | None:
        """The response to ``request`` (None: 404): the page of its path."""
        return self._pages(request.path)

    def sent(self, path: str) -> threading.Event:
        """Set once a response for ``path`` was sent whole (tests order pages by it, not by time)."""
        with self._lock:
            return self._sent[path]

    def _count(self, path: str, target: str) -> int:
        """Count a request; the requests for ``path`` before it."""
        with self._lock:
            seen = self.requests_served[path]
            self.requests_served[path] += 1
            self.requests_received[target] += 1
            return seen


def _regex_escape_url(url: str) -> str:
    # re.escape would also escape ':' and '/', which is harmless but unreadable in a site file.
    return "".join("\\" + ch if ch in ".?+*()[]{}|^$\\" else ch for ch in url)


def _toml_str(value: str) -> str:
    """A TOML string: a 'literal string' when possible, so regex backslashes stay readable."""
    if "'" not in value and "\n" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def site_entry(
    base_url: str,
    *,
    name: str,
    start_paths: Iterable[str],
    article_path: str,
    follow_path: str,
    remove_selectors: Iterable[str] = (),
    comment: str = "",
) -> str:
    """One ``[[site]]`` table of a site file for pages under ``base_url``; the paths are regexes after the host."""
    escaped = _regex_escape_url(base_url)
    lines = ["[[site]]"] + ([f"# {comment}"] if comment else []) + [
        f"name = {_toml_str(name)}",
        f"start_urls = [{', '.join(_toml_str(base_url + path) for path in start_paths)}]",
        'allowed_domains = ["127.0.0.1"]',
        f"article_url_pattern = {_toml_str(escaped + article_path)}",
        f"follow_url_pattern = {_toml_str(escaped + follow_path)}",
    ]
    selectors = list(remove_selectors)
    if selectors:
        lines.append(f"remove_selectors = [{', '.join(_toml_str(s) for s in selectors)}]")
    return "\n".join(lines) + "\n"


class DemoPortalServer(LoopbackServer):
    """The demo mini-portal: four invented portals under path prefixes of one server (``/dongfang/``,
    ``/nanling/``, ``/xinghe/``, ``/qinghe/``), one in GBK, one without a charset, one page lying in its meta;
    a ``robots.txt`` that disallows ``/admin/`` and ``/qinghe/preview/``."""

    def __init__(self, *, day: int = 1, host: str = "127.0.0.1", port: int = 0) -> None:
        if day not in DAYS:
            raise ValueError(f"day must be one of {DAYS}, got {day!r}")
        super().__init__(self._demo_page, host=host, port=port)
        self._day = day
        self._sites: dict[int, dict[str, Response]] = {}

    @property
    def day(self) -> int:
        return self._day

    def _started(self) -> None:
        # Pages link to the bound address, so they are rendered once it is known.
        robots = Response(robots_txt(), "text/plain; charset=utf-8")
        self._sites = {
            day: {
                **{path: Response(page.body, page.content_type, page.last_modified)
                   for path, page in render_site(self.base_url, day).items()},
                "/robots.txt": robots,
            }
            for day in DAYS
        }

    def _demo_page(self, path: str) -> Response | None:
        with self._lock:
            day = self._day
        return self._sites[day].get(path)

    def set_day(self, day: int) -> None:
        """Serve the content of ``day`` from now on (day 2 = day 1 plus new articles)."""
        if day not in DAYS:
            raise ValueError(f"day must be one of {DAYS}, got {day!r}")
        with self._lock:
            self._day = day

    def sites_toml(self) -> str:
        """A site file (docs/site-file.md) for the four demo portals at this server's address."""
        base = self.base_url
        blocks = [
            "# Site file of the newsdedup demo mini-portal, written by DemoPortalServer.sites_toml().",
            f"# Server: {base}  (all four portals share the host; the URL patterns keep them apart)",
        ]
        pages = load_manifest()["pages"]
        for portal in portals().values():
            example = next(path for path, page in pages.items() if page["portal"] == portal.id and page["kind"] == "original")
            blocks += ["", site_entry(
                base, name=portal.id, start_paths=portal.start_paths, article_path=portal.article_path,
                follow_path=portal.follow_path, remove_selectors=portal.remove_selectors,
                comment=f"{portal.name}, e.g. {base}{example}",
            ).rstrip("\n")]
        return "\n".join(blocks) + "\n"


class _Handler(BaseHTTPRequestHandler):
    server_version = "nginx/1.24.0"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._respond(include_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._respond(include_body=False)

    def _respond(self, *, include_body: bool) -> None:
        server: LoopbackServer = self.server.loopback  # type: ignore[attr-defined]
        path = urlsplit(self.path).path or "/"
        seen = server._count(path, self.path)
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        page = server.respond(Request(path, self.path, host, seen))
        status = page.status if page is not None else 404
        page = page or _NOT_FOUND
        headers = {"Content-Type": page.content_type, **dict(page.headers)}
        if page.last_modified is not None:
            headers["Last-Modified"] = format_datetime(page.last_modified.astimezone(timezone.utc), usegmt=True)
            if self._not_modified_since(page.last_modified):
                status, include_body = 304, False
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:  # a 304 has no body and no length
            self.send_header("Content-Length", str(len(page.body)))
        self.end_headers()
        try:
            if include_body:
                self.wfile.write(page.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up on it (an over-size download, a crawl stopped)
        server.sent(path).set()

    def _not_modified_since(self, modified: datetime) -> bool:
        value = self.headers.get("If-Modified-Since")
        if not value:
            return False
        try:
            since = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return False
        return since.tzinfo is not None and modified.replace(microsecond=0) <= since

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        """Silent: the crawl's own log says what was fetched."""
