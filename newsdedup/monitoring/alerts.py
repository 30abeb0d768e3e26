"""Watches and alerts: saved searches whose new matches are delivered through Apprise (``newsdedup alerts``).

A watch (a ``[[watch]]`` table of a TOML file, :func:`load_watches`) is a search (words every match contains, as the
desk's search), optionally on some sites, in a window, with thresholds: at least ``min_sites`` distinct sites and
``min_copies`` copies. Each run (:func:`run_alerts`):

1. finds the stories that match each watch now and owes an alert for each story not alerted for that reason before:
   ``new`` (a watch without thresholds: a new matching story) or the thresholds it crossed (``sites>=3,copies>=2``);
   the alerts owed are written to the store's ``alerts`` table, one row per watch, story and reason, in one
   transaction;
2. sends every alert owed and not yet sent, the oldest first, through the watch's Apprise URLs, each taken with an
   atomic claim and marked sent after the channel accepted it. A failed delivery stays owed: it is sent again by the
   next run, and counted.

The guarantee is **at least once**, with an idempotency key the receiver sees (in the title, the body and, for the
``json://``, ``xml://`` and ``form://`` webhooks, an ``Idempotency-Key`` header): the key is the same for every
attempt of one alert. A run killed after the channel accepted an alert but before marking it sent leaves it claimed;
once the claim is older than ``reclaim_after`` the next run sends it again, with the same key. Two runs at once
never send the same alert twice while neither is killed: each alert is claimed by one of them.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from newsdedup.clock import CHINA_OFFSET, parse_instant, utc_iso, utc_now
from newsdedup.monitoring.timespec import parse_duration

WATCH_KEYS = {"name", "query", "sites", "min_sites", "min_copies", "window", "notify"}
HEADER_SCHEMES = ("json", "jsons", "xml", "xmls", "form", "forms")  # Apprise's webhooks that take +Header=value


class WatchError(ValueError):
    """A watches file that cannot be used; the message names the file, the watch and the key."""


@dataclass(frozen=True)
class Watch:
    name: str
    query: str
    notify: tuple[str, ...]
    sites: tuple[str, ...] = ()
    min_sites: int = 1
    min_copies: int = 0
    window: timedelta = field(default=timedelta(hours=24))

    def reason(self) -> str:
        """Why an alert is owed: a new story, or the thresholds it crossed."""
        parts = ([f"sites>={self.min_sites}"] if self.min_sites > 1 else []) + (
            [f"copies>={self.min_copies}"] if self.min_copies > 0 else [])
        return ",".join(parts) or "new"


def load_watches(path: str | Path) -> list[Watch]:
    """The ``[[watch]]`` tables of a TOML file, checked: a bad one raises WatchError naming it."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise WatchError(f"{path}: cannot read the watches file ({exc})") from None
    entries = data.get("watch", [])
    if not isinstance(entries, list) or not entries:
        raise WatchError(f"{path}: no [[watch]] table")
    watches, names = [], set()
    for number, entry in enumerate(entries, 1):
        where = f"{path}: watch {entry.get('name', number)!r}" if isinstance(entry, dict) else f"{path}: watch {number}"
        if not isinstance(entry, dict):
            raise WatchError(f"{where}: is not a table")
        unknown = set(entry) - WATCH_KEYS
        if unknown:
            raise WatchError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(WATCH_KEYS))}")
        name, query = entry.get("name"), entry.get("query")
        if not isinstance(name, str) or not name.strip():
            raise WatchError(f"{where}: name must be a non-empty string")
        if name in names:
            raise WatchError(f"{where}: a second watch of that name")
        names.add(name)
        if not isinstance(query, str) or not query.split():
            raise WatchError(f"{where}: query must be words to search for")
        notify = entry.get("notify")
        if isinstance(notify, str):
            notify = [notify]
        if not isinstance(notify, list) or not notify or not all(isinstance(u, str) and "://" in u for u in notify):
            raise WatchError(f"{where}: notify must be one or more Apprise URLs (json://host:port/path, dingtalk://...)")
        sites = entry.get("sites", [])
        if not isinstance(sites, list) or not all(isinstance(s, str) for s in sites):
            raise WatchError(f"{where}: sites must be a list of site names")
        numbers = {}
        for key, low in (("min_sites", 1), ("min_copies", 0)):
            value = entry.get(key, low)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise WatchError(f"{where}: {key} must be a whole number >= {low}")
            numbers[key] = value
        try:
            window = parse_duration(str(entry.get("window", "24h")))
            utc_now() - window  # a window longer than the calendar is refused here, not at the first run
        except ValueError as exc:
            raise WatchError(f"{where}: window: {exc}") from None
        except OverflowError:
            raise WatchError(f"{where}: window: {entry.get('window')!r} is longer than the calendar") from None
        watches.append(Watch(name=name, query=" ".join(query.split()), notify=tuple(notify), sites=tuple(sites),
                             window=window, **numbers))
    return watches


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; control characters were refused before)."""
    return json.dumps(value, ensure_ascii=False)


def add_watch(path: str | Path, *, name: str, query: str, notify: list[str], sites: list[str] = (),
              min_sites: int = 1, min_copies: int = 0, window: str = "24h") -> Watch:
    """Append a watch to the watches file (created if missing), checked as :func:`load_watches` checks the file;
    the file is replaced whole (a reader sees the old file or the new one). WatchError: the watch is refused."""
    path = Path(path)
    values = [name, query, window, *notify, *sites]
    if any(any(ord(c) < 32 or ord(c) == 127 for c in v) for v in values):
        raise WatchError(f"{path}: watch {name!r}: control characters are not allowed")
    lines = ["[[watch]]", f"name = {_toml_string(name)}", f"query = {_toml_string(query)}",
             f"notify = [{', '.join(_toml_string(u) for u in notify)}]"]
    if sites:
        lines.append(f"sites = [{', '.join(_toml_string(s) for s in sites)}]")
    lines += [f"min_sites = {int(min_sites)}", f"min_copies = {int(min_copies)}", f"window = {_toml_string(window)}"]
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    text = (before.rstrip("\n") + "\n\n" if before.strip() else "") + "\n".join(lines) + "\n"
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    try:
        watches = load_watches(partial)
    except WatchError as exc:
        partial.unlink()
        raise WatchError(str(exc).replace(str(partial), str(path))) from None
    partial.replace(path)
    return watches[-1]


def idempotency_key(watch: str, cluster_id: int, reason: str) -> str:
    """The same key for every attempt to deliver one alert.

    >>> idempotency_key("metro", 12, "new")
    'newsdedup-1d74273bbd813f9219b03615'
    """
    return "newsdedup-" + hashlib.sha256(f"{watch}\x00{cluster_id}\x00{reason}".encode()).hexdigest()[:24]


def _matches(store, watch: Watch) -> list[dict]:
    """The stories matching ``watch`` now, with what an alert about each says."""
    since = utc_iso(utc_now() - watch.window)
    clusters = {hit.cluster_id for hit in store.search_articles(watch.query.split(), since=since, sites=watch.sites)
                if hit.cluster_id is not None}
    found = []
    for cluster_id in sorted(clusters):
        record = store.cluster(cluster_id)
        members = store.cluster_members(cluster_id)
        if record is None or not members:
            continue
        origin = next((m for m in members if m.url == record.origin_url), members[0])
        sites = sorted({m.site for m in members if m.site})
        copies = len(members) - 1
        if len(sites) < watch.min_sites or copies < watch.min_copies:
            continue
        found.append({"cluster_id": cluster_id, "title": origin.title, "origin_url": origin.url,
                      "origin_site": origin.site, "origin_dated_at": origin.dated_at, "sites": sites,
                      "copies": copies})
    return found


def _message(watch: Watch, alert: dict, payload: dict, desk_url: str | None) -> tuple[str, str]:
    link = f"{desk_url.rstrip('/')}/story/{alert['cluster_id']}" if desk_url else payload["origin_url"]
    published = parse_instant(payload["origin_dated_at"]).astimezone(CHINA_OFFSET).strftime("%Y-%m-%d %H:%M")
    title = f"[newsdedup] {watch.name}: {payload['title'] or payload['origin_url']}"
    body = "\n".join([
        f"{payload['title'] or ''}",
        f"origin: {payload['origin_site']} {published} (UTC+8) {payload['origin_url']}",
        f"sites: {len(payload['sites'])} ({', '.join(payload['sites'])}); copies: {payload['copies']}",
        f"reason: {alert['reason']}; link: {link}",
        f"idempotency key: {alert['key']}",
    ])
    return title, body


def _with_key(url: str, key: str) -> str:
    """The Apprise URL with the key as an Idempotency-Key header, for the webhooks that take headers."""
    if urlsplit(url).scheme.lower() not in HEADER_SCHEMES:
        return url
    return url + ("&" if "?" in url else "?") + f"+Idempotency-Key={key}"


def deliver(urls: tuple[str, ...], title: str, body: str, key: str) -> str | None:
    """Send one alert through Apprise; None when every URL accepted it, else what failed."""
    import apprise

    sender = apprise.Apprise()
    bad = [url for url in urls if not sender.add(_with_key(url, key))]
    if bad:
        return f"not an Apprise URL: {', '.join(bad)}"
    return None if sender.notify(title=title, body=body) else "a channel refused it or could not be reached"


@dataclass
class AlertRun:
    matched: int = 0  # alerts newly owed
    sent: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        tail = f"; {self.failed} failed, sent again by the next run" if self.failed else ""
        return f"alerts: {self.matched} new, {self.sent} sent{tail}"


def run_alerts(store, watches: list[Watch], *, desk_url: str | None = None,
               reclaim_after: timedelta = timedelta(minutes=10), send=deliver) -> AlertRun:
    """Owe the new matches of every watch, then send every alert owed (see the module's docstring)."""
    result = AlertRun()
    for watch in watches:
        reason = watch.reason()
        owed = store.alerts_owed(watch.name)
        rows = []
        for match in _matches(store, watch):
            if (match["cluster_id"], reason) in owed:
                continue
            rows.append((watch.name, match["cluster_id"], reason, idempotency_key(watch.name, match["cluster_id"], reason),
                         json.dumps(match, ensure_ascii=False)))
        result.matched += store.add_alerts(rows, now=utc_iso(utc_now()))
    by_name = {watch.name: watch for watch in watches}
    stale_before = utc_iso(utc_now() - reclaim_after)
    for alert in store.due_alerts(stale_before=stale_before):
        watch = by_name.get(alert["watch"])
        if watch is None:  # a watch taken out of the file: its alerts wait until it comes back
            continue
        if not store.claim_alert(alert["key"], now=utc_iso(utc_now()), stale_before=stale_before):
            continue  # another run took it
        title, body = _message(watch, alert, json.loads(alert["payload"]), desk_url)
        error = send(watch.notify, title, body, alert["key"])
        store.finish_alert(alert["key"], sent=error is None, now=utc_iso(utc_now()), error=error)
        if error is None:
            result.sent += 1
        else:
            result.failed += 1
            result.errors.append(f"{watch.name}: story {alert['cluster_id']}: {error}")
    return result
