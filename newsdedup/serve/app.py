"""The desk's web application (Starlette): HTML pages and their JSON under ``/api/``, read-only over one store.

Security, as docs/desk.md states it: every value goes through Jinja2's autoescaping; a stored URL is a link only when
it is http(s) (:func:`safe_url`); a Content-Security-Policy allows scripts from the desk's own static files only (no
inline script, no other origin); with a token every request must carry it (``Authorization: Bearer TOKEN``, or HTTP
basic auth with the token as password, which browsers ask for); a bad parameter is a 400 with a message.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import threading
import zlib
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from newsdedup.clock import CHINA_OFFSET, parse_instant
from newsdedup.monitoring.report import _delay
from newsdedup.monitoring.timespec import parse_duration
from newsdedup.serve import desk

HERE = Path(__file__).resolve().parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"), (b"x-frame-options", b"DENY"),
]
MAX_QUERY = 200
PALETTE_SIZE = 12


class BadParameter(Exception):
    """A request parameter the desk cannot use: a 400 with this message."""


def safe_url(value) -> str | None:
    """``value`` when it is an http(s) URL, else None: a stored ``javascript:`` or ``data:`` URL is never a link.

    >>> safe_url("https://news.example/a.html"), safe_url("javascript:alert(1)"), safe_url(" JaVaScRiPt:x")
    ('https://news.example/a.html', None, None)
    """
    if not isinstance(value, str):
        return None
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return None
    return value if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def site_class(site) -> str:
    """A stable colour class per site name (the same on every page)."""
    return f"c{zlib.crc32(str(site).encode()) % PALETTE_SIZE}"


def china_time(value, style: str = "%Y-%m-%d %H:%M") -> str:
    if not value:
        return "—"
    return parse_instant(value).astimezone(CHINA_OFFSET).strftime(style)


# -- parameters ----------------------------------------------------------------------------------------------
def _window(request: Request, default: str, *, allow_all: bool = False) -> timedelta | None:
    value = request.query_params.get("window", default).strip() or default
    if allow_all and value == "all":
        return None
    try:
        window = parse_duration(value)
    except ValueError as exc:
        raise BadParameter(f"window: {exc}") from None
    except OverflowError:
        raise BadParameter(f"window: {value!r} is out of range (1m to 3660d)") from None
    if not timedelta(minutes=1) <= window <= timedelta(days=3660):
        raise BadParameter(f"window: {value!r} is out of range (1m to 3660d)")
    return window


def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    value = request.query_params.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadParameter(f"{name}: {value!r} is not a whole number") from None
    if not low <= number <= high:
        raise BadParameter(f"{name}: {number} is out of range ({low} to {high})")
    return number


def _text(request: Request, name: str, *, required: bool = False) -> str | None:
    value = " ".join(request.query_params.get(name, "").split())
    if len(value) > MAX_QUERY:
        raise BadParameter(f"{name}: longer than {MAX_QUERY} characters")
    if any(ord(c) < 32 for c in value):
        raise BadParameter(f"{name}: control characters are not allowed")
    if required and not value:
        raise BadParameter(f"{name}: say what to search for, e.g. ?q=地铁")
    if value and len(value.split()) > 10:
        raise BadParameter(f"{name}: at most 10 words")
    return value or None


def _choice(request: Request, name: str, choices: tuple[str, ...]) -> str:
    value = request.query_params.get(name, choices[0])
    if value not in choices:
        raise BadParameter(f"{name}: {value!r} is not one of {', '.join(choices)}")
    return value


def _path_int(request: Request, name: str) -> int:
    value = request.path_params[name]
    try:
        number = int(value)
    except ValueError:
        raise BadParameter(f"{name}: {value!r} is not a whole number") from None
    if abs(number) >= 2 ** 63:
        raise BadParameter(f"{name}: {value!r} is out of range")
    return number


# -- the application -----------------------------------------------------------------------------------------
class Desk:
    """The routes over one open read-only store; ``token`` (if any) is required on every request."""

    def __init__(self, store, *, token: str | None = None, poll_seconds: float = 30.0,
                 watches: Path | None = None) -> None:
        self.store = store
        self.token = token
        self.watches = watches
        self._watches_lock = threading.Lock()
        # The watch form's CSRF token: a page of another site cannot read it, so it cannot post a watch (whose
        # notify URLs would receive this store's news) through a browser that is logged in to the desk.
        self.csrf = hmac.new(secrets.token_bytes(32), b"watches", "sha256").hexdigest()
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"),
                                     autoescape=select_autoescape(default=True, default_for_string=True))
        self.templates.filters.update(safe_url=safe_url, site_class=site_class, china=china_time, delay=_delay)
        self.templates.globals.update(urlencode=urlencode, poll_ms=max(100, int(poll_seconds * 1000)))

    # Each page: (name, handler giving its data, template). The API answers the same data as JSON.
    def routes(self) -> list:
        pages = [("/", self.now_data, "now.html"), ("/story/{cluster_id}", self.story_data, "story.html"),
                 ("/sites", self.sites_data, "sites.html"), ("/sites/{site}", self.site_data, "site.html"),
                 ("/search", self.search_data, "search.html"), ("/watches", self.watches_data, "watches.html")]
        routes = []
        for path, data, template in pages:
            routes.append(Route(path, self._page(data, template), methods=["GET", "HEAD"]))
            routes.append(Route("/api/now" if path == "/" else "/api" + path, self._api(data)))
        routes += [Route("/now", lambda request: RedirectResponse("/?" + str(request.query_params), 307)),
                   Route("/api/runs/latest", self._api(self.latest_data)),
                   Route("/watches", self.create_watch, methods=["POST"]),
                   Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]
        return routes

    def _page(self, data, template: str):
        def endpoint(request: Request) -> Response:
            try:
                payload = data(request)
            except BadParameter as exc:
                return self._error(request, 400, str(exc))
            if payload is None:
                return self._error(request, 404, "not found: " + request.url.path)
            html = self.templates.get_template(template).render(
                data=payload, request=request, page=template[:-5], api=self._api_url(request), csrf=self.csrf)
            return HTMLResponse(html)
        return endpoint

    def _api(self, data):
        def endpoint(request: Request) -> Response:
            try:
                payload = data(request)
            except BadParameter as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            if payload is None:
                return JSONResponse({"error": "not found: " + request.url.path}, status_code=404)
            return Response(json.dumps(payload, ensure_ascii=False, default=_plain), media_type="application/json")
        return endpoint

    @staticmethod
    def _api_url(request: Request) -> str:
        path = "/api/now" if request.url.path == "/" else "/api" + request.url.path
        return path + (f"?{request.url.query}" if request.url.query else "")

    def _error(self, request: Request, status: int, message: str) -> HTMLResponse:
        html = self.templates.get_template("error.html").render(status=status, message=message, request=request,
                                                                page="error", api=None)
        return HTMLResponse(html, status_code=status)

    # -- the data of each page ------------------------------------------------------------------------------
    def now_data(self, request: Request) -> dict:
        return desk.now(self.store, window=_window(request, "24h"), site=_text(request, "site"),
                        min_sites=_int(request, "min_sites", 1, 1, 1000), query=_text(request, "q"))

    def story_data(self, request: Request) -> dict | None:
        return desk.story(self.store, _path_int(request, "cluster_id"))

    def sites_data(self, request: Request) -> dict:
        return desk.sites(self.store, window=_window(request, "7d"))

    def site_data(self, request: Request) -> dict | None:
        return desk.site(self.store, request.path_params["site"], window=_window(request, "7d"))

    def search_data(self, request: Request) -> dict | None:
        query = _text(request, "q")
        window = _window(request, "all", allow_all=True)
        site, order = _text(request, "site"), _choice(request, "order", ("newest", "copies"))
        if query is None:
            return {"query": None, "terms": [], "stories": [], "matches": 0, "stories_total": 0, "truncated": False,
                    "filters": {"site": site, "order": order, "window_hours": None}, "over_time": {"days": [], "sites": {}}}
        return desk.search(self.store, query, window=window, site=site, order=order)

    def watches_data(self, request: Request) -> dict:
        """The watches of the file given to serve (--watches), their notify URLs shown by scheme only (they hold
        the channels' tokens), and their alerts by state."""
        from newsdedup.monitoring.alerts import WatchError, load_watches

        data = {"file": str(self.watches) if self.watches else None, "watches": [], "error": None}
        if self.watches is None or not self.watches.exists():
            return data
        try:
            watches = load_watches(self.watches)
        except WatchError as exc:
            return {**data, "error": str(exc)}
        try:
            states = self.store.alert_states()
        except Exception:  # noqa: BLE001 - a store of schema 6 has no alerts table: no alert sent yet
            states = {}
        data["watches"] = [{
            "name": w.name, "query": w.query, "sites": list(w.sites), "min_sites": w.min_sites,
            "min_copies": w.min_copies, "window_hours": w.window.total_seconds() / 3600,
            "notify": [urlsplit(u).scheme + "://…" for u in w.notify], "alerts": states.get(w.name, {}),
        } for w in watches]
        return data

    async def create_watch(self, request: Request) -> Response:
        """The watch form: the watch appended to the watches file, then back to the list (303)."""
        from newsdedup.monitoring.alerts import WatchError, add_watch

        if self.watches is None:
            return self._error(request, 404, "no watches file: start the desk with --watches FILE")
        origin = request.headers.get("origin")
        if origin and origin != f"{request.url.scheme}://{request.url.netloc}":
            return self._error(request, 403, "a watch is created from the desk's own page only")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            return self._error(request, 400, "send the watch form (application/x-www-form-urlencoded)")
        body = await request.body()
        if len(body) > 16_384:
            return self._error(request, 400, "the form is too large")
        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        if not hmac.compare_digest(form.get("csrf", ""), self.csrf):
            return self._error(request, 403, "the form is stale or not the desk's: reload the watches page")
        try:
            fields = {
                "name": form.get("name", "").strip(), "query": " ".join(form.get("query", "").split()),
                "notify": [u for u in form.get("notify", "").split() if u],
                "sites": [s.strip() for s in form.get("sites", "").split(",") if s.strip()],
                "min_sites": int(form.get("min_sites") or 1), "min_copies": int(form.get("min_copies") or 0),
                "window": form.get("window", "").strip() or "24h",
            }
        except ValueError:
            return self._error(request, 400, "min_sites and min_copies are whole numbers")
        try:
            with self._watches_lock:
                add_watch(self.watches, **fields)
        except WatchError as exc:
            return self._error(request, 400, str(exc))
        return RedirectResponse("/watches", status_code=303)

    def latest_data(self, request: Request) -> dict:
        return {"last_run_finished_at": self.store.last_run_finished_at()}


def _plain(value):
    if hasattr(value, "_asdict"):
        return value._asdict()
    raise TypeError(f"{type(value).__name__} is not JSON")


class Guard:
    """ASGI middleware: the token check (401 without it) and the security headers on every response."""

    def __init__(self, app, token: str | None) -> None:
        self.app = app
        self.token = token

    def _allowed(self, scope) -> bool:
        if not self.token:
            return True
        headers = dict(scope.get("headers") or [])
        auth = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer":
            given = value.strip()
        elif scheme.lower() == "basic":
            try:
                given = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")[2]
            except (ValueError, UnicodeDecodeError):
                return False
        else:
            return False
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        if not self._allowed(scope):
            response = Response("401: this desk needs its token (Authorization: Bearer TOKEN, or basic auth with the "
                                "token as password)\n", status_code=401, media_type="text/plain",
                                headers={"WWW-Authenticate": 'Basic realm="newsdedup desk", charset="UTF-8"'})
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def create_app(store, *, token: str | None = None, poll_seconds: float = 30.0, watches: Path | None = None):
    """The desk over an open read-only ``store`` (:func:`newsdedup.serve.store.open_readonly`); its pages ask every
    ``poll_seconds`` whether new runs have landed; ``watches`` is the watches file its form appends to."""
    routes = Desk(store, token=token, poll_seconds=poll_seconds, watches=watches)

    async def not_found(request: Request, exc: HTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
        return routes._error(request, exc.status_code, str(exc.detail))

    app = Starlette(routes=routes.routes(), exception_handlers={HTTPException: not_found})
    app.state.desk = routes
    return Guard(app, token)
