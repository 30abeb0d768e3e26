"""A local HTTP server for the offline demo mini-portal (127.0.0.1 only).

Four invented portals live under path prefixes of one server (``/dongfang/``, ``/nanling/``,
``/xinghe/``, ``/qinghe/``); ``sites_toml()`` writes a site file (README.md, *Site file*) for them, so the
real spider can crawl the demo exactly like a real portal::

    with DemoPortalServer(day=1) as server:
        Path("demo-sites.toml").write_text(server.sites_toml(), encoding="utf-8")
        ...  # scrapy crawl portal -a sites=demo-sites.toml
        server.set_day(2)  # the list pages now link to new articles

Responses look like a portal's: ``Content-Type`` with the portal's charset (GBK for one, none
for another), ``Last-Modified`` (and ``304`` for a matching ``If-Modified-Since``), a
``robots.txt`` that disallows ``/admin/`` and ``/qinghe/preview/``, ``404`` for anything else.
``requests_served`` counts requests per path so tests can see what a crawler fetched.
"""

from __future__ import annotations

import collections
import ipaddress
import threading
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from newsdedup.demo.content import DAYS, Page, load_manifest, portals, render_site, robots_txt

__all__ = ["DemoPortalServer", "load_manifest"]


class DemoPortalServer:
    """The demo mini-portal on a background thread; a context manager (start on enter)."""

    def __init__(self, *, day: int = 1, host: str = "127.0.0.1", port: int = 0) -> None:
        if day not in DAYS:
            raise ValueError(f"day must be one of {DAYS}, got {day!r}")
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"host must be a loopback IP address such as '127.0.0.1', got {host!r}")
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an int in 0..65535 (0 = any free port), got {port!r}")
        self._host, self._port, self._day = host, port, day
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sites: dict[int, dict[str, Page]] = {}
        self._lock = threading.Lock()
        self.requests_served: collections.Counter[str] = collections.Counter()
        """Requests received per URL path (query dropped), robots.txt and 404s included."""

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` once started."""
        if self._httpd is None:
            raise RuntimeError("the demo server is not running; call start() or use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def day(self) -> int:
        return self._day

    def start(self) -> None:
        """Bind the port, render the pages for the bound address and serve in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("the demo server is already running")
        httpd = ThreadingHTTPServer((self._host, self._port), _Handler)
        httpd.daemon_threads = True
        httpd.demo = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._sites = {day: render_site(self.base_url, day) for day in DAYS}
        # A short poll interval makes stop() quick (shutdown waits for the next poll).
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="newsdedup-demo-portal", daemon=True
        )
        self._thread.start()

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

    def __enter__(self) -> DemoPortalServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def set_day(self, day: int) -> None:
        """Serve the content of ``day`` from now on (day 2 = day 1 plus new articles)."""
        if day not in DAYS:
            raise ValueError(f"day must be one of {DAYS}, got {day!r}")
        with self._lock:
            self._day = day

    # ------------------------------------------------------------------ site file
    def sites_toml(self) -> str:
        """A site file (README.md, *Site file*) for the four demo portals at this server's address."""
        base = self.base_url
        escaped = _regex_escape_url(base)
        blocks = [
            "# Site file of the newsdedup demo mini-portal, written by DemoPortalServer.sites_toml().",
            f"# Server: {base}  (all four portals share the host; the URL patterns keep them apart)",
        ]
        pages = load_manifest()["pages"]
        for portal in portals().values():
            example = next(path for path, page in pages.items() if page["portal"] == portal.id and page["kind"] == "original")
            blocks += [
                "",
                "[[site]]",
                f"# {portal.name}, e.g. {base}{example}",
                f"name = {_toml_str(portal.id)}",
                f"start_urls = [{', '.join(_toml_str(base + path) for path in portal.start_paths)}]",
                'allowed_domains = ["127.0.0.1"]',
                f"article_url_pattern = {_toml_str(escaped + portal.article_path)}",
                f"follow_url_pattern = {_toml_str(escaped + portal.follow_path)}",
                f"remove_selectors = [{', '.join(_toml_str(s) for s in portal.remove_selectors)}]",
            ]
        return "\n".join(blocks) + "\n"

    # ------------------------------------------------------------------ serving
    def _count(self, path: str) -> None:
        with self._lock:
            self.requests_served[path] += 1

    def _page(self, path: str) -> Page | None:
        with self._lock:
            day = self._day
        return self._sites[day].get(path)


def _regex_escape_url(url: str) -> str:
    # re.escape would also escape ':' and '/', which is harmless but unreadable in a site file.
    return "".join("\\" + ch if ch in ".?+*()[]{}|^$\\" else ch for ch in url)


def _toml_str(value: str) -> str:
    """A TOML string: a 'literal string' when possible, so regex backslashes stay readable."""
    if "'" not in value and "\n" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_NOT_FOUND = (
    '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>404 页面不存在</title></head>\n'
    "<body><h1>404 Not Found</h1><p>抱歉，您访问的页面不存在或已被删除。</p></body></html>\n"
).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    server_version = "nginx/1.24.0"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._respond(include_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._respond(include_body=False)

    def _respond(self, *, include_body: bool) -> None:
        demo: DemoPortalServer = self.server.demo  # type: ignore[attr-defined]
        path = urlsplit(self.path).path or "/"
        demo._count(path)
        if path == "/robots.txt":
            self._send(200, robots_txt(), {"Content-Type": "text/plain; charset=utf-8"}, include_body)
            return
        page = demo._page(path)
        if page is None:
            self._send(404, _NOT_FOUND, {"Content-Type": "text/html; charset=utf-8"}, include_body)
            return
        headers = {"Content-Type": page.content_type, "Last-Modified": page.last_modified_header}
        if self._not_modified_since(page):
            self._send(304, b"", {"Last-Modified": page.last_modified_header}, include_body=False)
            return
        self._send(200, page.body, headers, include_body)

    def _not_modified_since(self, page: Page) -> bool:
        value = self.headers.get("If-Modified-Since")
        if not value:
            return False
        try:
            since = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return False
        if since.tzinfo is None:
            return False
        return page.last_modified.replace(microsecond=0) <= since

    def _send(self, status: int, body: bytes, headers: dict[str, str], include_body: bool) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:  # a 304 has no body and no length
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if include_body and body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        """Silent: the crawl's own log says what was fetched."""
