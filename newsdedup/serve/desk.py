"""What the desk's pages show, as JSON-ready dicts (the ``/api/`` answers; the HTML pages render the same dicts).

Built on the report's queries and grouping (:func:`newsdedup.monitoring.report.build_report`: origin, copies, exact
or near, delay behind the origin, who copies whom) and the store's reads; nothing here writes.

- :func:`now`: stories active in a window, ranked by the number of distinct sites, then copies;
- :func:`story`: one story, its timeline, the passages it quotes and those quoted from it, a diff per near copy;
- :func:`sites` / :func:`site`: each site's record (stories broken, copies made, median delay, whom it copies most)
  and crawl health (``site_runs``);
- :func:`search`: full-text search grouped by story, with highlighted snippets and matches per day and site.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from datetime import timedelta

from newsdedup.clock import CHINA_OFFSET, parse_instant, utc_iso, utc_now
from newsdedup.monitoring.report import build_report, quoted_stories
from newsdedup.text.diff import diff_sentences, diff_summary

MAX_STORIES = 200  # rows on the Now page
MAX_HITS = 2000  # articles a search reads (those stored last)
MAX_GROUPS = 50  # stories a search shows
RUNS_PER_SITE = 10


def _hours(later: str, earlier: str) -> float:
    return (parse_instant(later) - parse_instant(earlier)).total_seconds() / 3600


def _since(window: timedelta | None) -> str | None:
    return None if window is None else utc_iso(utc_now() - window)


def _methods(members) -> dict[str, str | None]:
    return {m.url: m.method for m in members}


def _summary(story: dict) -> dict:
    """A story of the report as a row of Now: origin, last copy, copies, sites, copies per hour."""
    copies = story["copies"]
    last = copies[-1] if copies else None
    # Copies per hour from the origin's publication to the last copy (at least an hour: a burst of copies within
    # minutes is not reported as hundreds an hour).
    span = max(1.0, _hours(last["dated_at"], story["origin"]["dated_at"])) if last else 1.0
    return {
        "cluster_id": story["cluster_id"], "title": story["title"], "origin": story["origin"],
        "sites": story["sites"], "site_count": len(story["sites"]), "copies": len(copies),
        "last_copy": last, "copies_per_hour": round(len(copies) / span, 2),
        "last_fetched_at": story["last_fetched_at"],
    }


def now(store, *, window: timedelta, site: str | None = None, min_sites: int = 1, query: str | None = None) -> dict:
    """The stories with a copy fetched in ``window``, ranked by distinct sites, then copies, then last activity."""
    since = _since(window)
    clusters = store.iter_clusters(since=since, min_members=2, sites=(site,) if site else ())
    if query:
        wanted = {hit.cluster_id for hit in store.search_articles(query.split(), limit=MAX_HITS)}
        clusters = ((record, members) for record, members in clusters if record.cluster_id in wanted)
    report = build_report(clusters, generated_at=utc_iso(utc_now()))
    rows = [_summary(story) for story in report["stories"] if len(story["sites"]) >= min_sites]
    rows.sort(key=lambda r: (r["site_count"], r["copies"], r["last_fetched_at"]), reverse=True)
    return {
        "generated_at": report["generated_at"], "since": since,
        "filters": {"window_hours": window.total_seconds() / 3600, "site": site, "min_sites": min_sites,
                    "query": query},
        "last_run_finished_at": store.last_run_finished_at(),
        "stories": rows[:MAX_STORIES], "total": len(rows),
    }


def _timeline(origin: dict, copies: list[dict], width: int = 640) -> list[dict]:
    """x positions (0..width) of the origin and each copy on a time axis from the origin to the last copy."""
    pages = [origin, *copies]
    start = parse_instant(origin["dated_at"])
    span = max((parse_instant(p["dated_at"]) - start).total_seconds() for p in pages) or 60.0
    return [{"url": p["url"], "site": p["site"], "dated_at": p["dated_at"], "x": round(max(0.0, (parse_instant(p["dated_at"]) - start)
                                                                .total_seconds()) / span * width, 1),
             "origin": p is origin} for p in pages]


def story(store, cluster_id: int) -> dict | None:
    """One story: origin and every copy (how it matched, its method, its delay), a timeline, the passages it quotes
    and those quoted from it, and for each near copy a sentence diff against the origin. None: no such story."""
    record = store.cluster(cluster_id)
    if record is None:
        return None
    members = store.cluster_members(cluster_id)
    report = build_report([(record, members)], generated_at=utc_iso(utc_now()))
    if report["stories"]:
        entry = report["stories"][0]
    else:  # a story no one copied (a search finds those too): its one page
        origin = next(m for m in members if m.url == record.origin_url)
        entry = {"cluster_id": cluster_id, "title": origin.title, "copies": [], "sites": [origin.site],
                 "origin": {f: getattr(origin, f) for f in ("url", "site", "title", "published_at", "fetched_at",
                                                             "dated_at", "date_basis")},
                 "first_fetched_at": record.first_fetched_at, "last_fetched_at": record.last_fetched_at}
    methods = _methods(members)
    entry["origin"]["method"] = methods.get(entry["origin"]["url"])
    texts = store.cluster_texts(cluster_id)
    origin_text = texts.get(entry["origin"]["url"], "")
    for copy in entry["copies"]:
        copy["method"] = methods.get(copy["url"])
        copy["diff"] = None
        if copy["kind"] == "near" and copy["url"] in texts:
            rows = diff_sentences(origin_text, texts[copy["url"]])
            copy["diff"] = {"summary": diff_summary(rows),
                            "rows": [{"op": op, "origin": old, "copy": new,
                                      "pieces": [[list(p) for p in side] for side in pieces]}
                                     for op, old, new, pieces in rows]}
    reuses = list(store.iter_reuses(cluster=cluster_id))
    quoted_from_it = quoted_stories(r for r in reuses if r.source_cluster_id == cluster_id)
    it_quotes = quoted_stories(r for r in reuses if r.source_cluster_id != cluster_id)
    return {**entry, "members": record.members, "site_count": len(entry["sites"]),
            "timeline": _timeline(entry["origin"], entry["copies"]),
            "quoted_by": quoted_from_it[0]["quoted_by"] if quoted_from_it else [],
            "quotes": it_quotes}


def _runs_by_site(store, since: str | None) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = defaultdict(list)
    for run in store.iter_site_runs(since=since):
        if len(runs[run.site]) < RUNS_PER_SITE:
            runs[run.site].append(vars(run).copy())
    return runs


def _health(runs: list[dict]) -> dict:
    last = runs[0] if runs else None
    return {"runs": len(runs), "last_run_at": last and last["finished_at"], "last_exit_code": last and last["exit_code"],
            "failed_runs": sum(1 for r in runs if r["exit_code"] != 0),
            "failures": sum(r["failed"] for r in runs), "skipped": sum(r["skipped"] for r in runs)}


def sites(store, *, window: timedelta) -> dict:
    """Per site over ``window``: see :func:`_sites`."""
    return _sites(store, window)[0]


def _sites(store, window: timedelta) -> tuple[dict, dict]:
    """Per site over ``window``: stories broken (it published first), copies made, its median delay behind the
    origin, the site it copies most, and its crawl health from its last runs."""
    since = _since(window)
    report = build_report(store.iter_clusters(since=since, min_members=2), generated_at=utc_iso(utc_now()))
    delays: dict = defaultdict(list)
    for entry in report["stories"]:
        for copy in entry["copies"]:
            delays[copy["site"]].append(copy["minutes_after_origin"])
    copies_from: dict = defaultdict(Counter)
    for cell in report["copy_matrix"]:
        if cell["from"] != cell["to"]:
            copies_from[cell["to"]][cell["from"]] += cell["copies"]
    runs = _runs_by_site(store, since)
    figures = {entry["site"]: entry for entry in report["sites"]}
    rows = []
    for name in sorted(set(figures) | set(runs), key=lambda s: (s is None, s or "")):
        entry = figures.get(name, {"site": name, "originals": 0, "copies_made": 0, "copied_by_others": 0})
        most = copies_from[name].most_common(1)
        rows.append({
            **entry, "median_delay_minutes": round(statistics.median(delays[name]), 1) if delays[name] else None,
            "copies_most_from": {"site": most[0][0], "copies": most[0][1]} if most else None,
            "health": _health(runs.get(name, [])), "last_runs": runs.get(name, []),
        })
    return {"generated_at": report["generated_at"], "since": since,
            "filters": {"window_hours": window.total_seconds() / 3600}, "sites": rows}, report


def site(store, name: str, *, window: timedelta) -> dict | None:
    """One site's row of :func:`sites`, the stories it broke and those it copied in the window. None: unknown."""
    everything, report = _sites(store, window)
    row = next((r for r in everything["sites"] if r["site"] == name), None)
    if row is None:
        return None
    stories = report["stories"]
    broke = [_summary(s) for s in stories if s["origin"]["site"] == name]
    copied = [{**_summary(s), "its_copy": next(c for c in s["copies"] if c["site"] == name)}
              for s in stories if s["origin"]["site"] != name and any(c["site"] == name for c in s["copies"])]
    return {"generated_at": everything["generated_at"], "since": everything["since"],
            "filters": everything["filters"], "site": row, "stories_broken": broke, "stories_copied": copied}


# -- search ------------------------------------------------------------------------------------------------
def snippet(text: str, terms: list[str], width: int = 60) -> list[list]:
    """The passage of ``text`` around its first match, as ``[piece, is_match]`` pairs (the page marks the matches
    and escapes every piece: no markup comes from the text).

    >>> snippet("今天临江市的社区食堂开业了，老人排队取餐。", ["食堂"], width=6)
    [['…的社区', False], ['食堂', True], ['开业了，老人排…', False]]
    """
    folded = (text or "").lower()
    found = [(folded.find(t.lower()), t) for t in terms if t and t.lower() in folded]
    if not found:
        return [[(text or "")[: width * 2] + ("…" if len(text or "") > width * 2 else ""), False]]
    first = min(position for position, _ in found)
    start, end = max(0, first - width // 2), min(len(text), first + width + width // 2)
    window, lowered = text[start:end], folded[start:end]
    marks = [False] * len(window)
    for term in {t.lower() for t in terms if t}:
        at = lowered.find(term)
        while at >= 0:
            for i in range(at, min(at + len(term), len(window))):
                marks[i] = True
            at = lowered.find(term, at + 1)
    pieces: list[list] = []
    for char, marked in zip(window, marks):
        if pieces and pieces[-1][1] == marked:
            pieces[-1][0] += char
        else:
            pieces.append([char, marked])
    if start > 0:
        pieces[0][0] = "…" + pieces[0][0] if not pieces[0][1] else pieces[0][0]
        if pieces[0][1]:
            pieces.insert(0, ["…", False])
    if end < len(text):
        if pieces[-1][1]:
            pieces.append(["…", False])
        else:
            pieces[-1][0] += "…"
    return pieces


def _day(instant: str) -> str:
    return parse_instant(instant).astimezone(CHINA_OFFSET).strftime("%Y-%m-%d")


def search(store, query: str, *, window: timedelta | None = None, site: str | None = None,
           order: str = "newest") -> dict:
    """Articles whose title or text contains every word of ``query``, grouped by story (newest or most copied
    first), each match with a highlighted snippet; and the matches per day (China time) and site."""
    terms = query.split()
    since = _since(window)
    hits = store.search_articles(terms, since=since, sites=(site,) if site else (), limit=MAX_HITS)
    groups: dict[int, list] = defaultdict(list)
    for hit in hits:
        groups[hit.cluster_id if hit.cluster_id is not None else -hit.id].append(hit)
    stories = []
    for cluster_id, matched in groups.items():
        stories.append({"cluster_id": cluster_id, "title": matched[0].title, "members": None, "copies": None,
                        "origin_url": matched[0].url, "newest_at": max(h.dated_at for h in matched),
                        "matches": matched})

    def attach(entry: dict) -> None:  # the story's row: its size and origin (a negative key: an article alone)
        record = store.cluster(entry["cluster_id"]) if entry["cluster_id"] >= 0 else None
        entry.update(cluster_id=record and record.cluster_id, members=record.members if record else 1,
                     copies=record.members - 1 if record else 0,
                     origin_url=record.origin_url if record else entry["origin_url"])

    # Most copied first needs every story's size; newest first only the shown ones'.
    if order == "copies":
        for entry in stories:
            attach(entry)
        stories.sort(key=lambda s: (s["members"], s["newest_at"], s["origin_url"]), reverse=True)
    else:
        stories.sort(key=lambda s: (s["newest_at"], s["origin_url"]), reverse=True)
        for entry in stories[:MAX_GROUPS]:
            attach(entry)
    shown = stories[:MAX_GROUPS]
    for entry in shown:
        if entry["cluster_id"] is not None:  # the story's title is its origin's, whichever page matched
            origin = next((m for m in store.cluster_members(entry["cluster_id"]) if m.url == entry["origin_url"]), None)
            entry["title"] = (origin and origin.title) or entry["title"]
        entry["matches"] = [{"url": h.url, "site": h.site, "title": h.title, "dated_at": h.dated_at,
                             "status": h.status, "title_pieces": snippet(h.title or "", terms, width=200),
                             "snippet": snippet(store.article_text(h.id) or "", terms)}
                            for h in entry["matches"][:5]]
    days = sorted({_day(h.dated_at) for h in hits})
    per_site: dict = defaultdict(Counter)
    for hit in hits:
        per_site[hit.site][_day(hit.dated_at)] += 1
    return {
        "query": query, "terms": terms, "since": since,
        "filters": {"window_hours": None if window is None else window.total_seconds() / 3600, "site": site,
                    "order": order},
        "matches": len(hits), "truncated": len(hits) >= MAX_HITS, "stories_total": len(stories), "stories": shown,
        "over_time": {"days": days, "sites": {str(name): [counts[d] for d in days]
                                              for name, counts in sorted(per_site.items(), key=lambda kv: str(kv[0]))}},
    }
