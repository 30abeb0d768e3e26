"""The reprint report: which stories spread, who published each first, who copied it and when.

Pure: clusters (as the store gives them) in, a JSON-ready dict out (:func:`build_report`), then CSV rows
(:func:`write_csv`, one per copy) for programs and one self-contained HTML page (:func:`render_html`: no
script, no external file, inline SVG) for people. ``REPORT_SCHEMA`` is the JSON's contract (JSON Schema).

Each story is a cluster with at least one copy. Its ``origin`` is the member published first (see
:mod:`newsdedup.storage.origin`); every other member is a ``copy`` with how it matched: ``exact`` (the same
normalised text) or ``near`` and its similarity (estimated overlap in [0, 1]) with the page it matched.
``copy_matrix`` counts, for each pair of sites, the copies the second made of stories the first published
first: which portals copy from which.

``quoted`` answers "who used our reporting?": each story whose passages later pages reused (a commentary quoting
three paragraphs, a roundup, a follow-up repeating the background; :mod:`newsdedup.dedup.reuse`), reprinted or not,
with the pages that quoted it and each passage as the story has it.
"""

from __future__ import annotations

import csv
import html
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import TextIO

from newsdedup.clock import CHINA_OFFSET, parse_instant
from newsdedup.dedup.status import EXACT_DUPLICATE, NEAR_DUPLICATE
from newsdedup.storage.base import PASSAGE_FIELDS, ClusterMember, ClusterRecord, StoredReuse

_PAGE_FIELDS = ("url", "site", "title", "published_at", "fetched_at", "dated_at", "date_basis")
_NULLABLE_STRING = {"type": ["string", "null"]}
_PAGE_SCHEMA = {
    "type": "object",
    "required": list(_PAGE_FIELDS),
    "properties": {
        "url": {"type": "string"}, "site": _NULLABLE_STRING, "title": _NULLABLE_STRING,
        "published_at": _NULLABLE_STRING, "fetched_at": {"type": "string"}, "dated_at": {"type": "string"},
        "date_basis": {"enum": ["published", "published_day", "fetched"]},
    },
}
REPORT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "newsdedup reprint report",
    "type": "object",
    "required": ["generated_at", "filters", "totals", "sites", "copy_matrix", "stories", "quoted"],
    "properties": {
        "generated_at": {"type": "string"},
        "filters": {"type": "object"},
        "totals": {
            "type": "object", "required": ["stories", "copies", "sites"],
            "properties": {k: {"type": "integer", "minimum": 0} for k in ("stories", "copies", "sites")},
        },
        "sites": {"type": "array", "items": {
            "type": "object", "required": ["site", "originals", "copies_made", "copied_by_others"],
            "properties": {"site": _NULLABLE_STRING, "originals": {"type": "integer"},
                           "copies_made": {"type": "integer"}, "copied_by_others": {"type": "integer"}},
        }},
        "copy_matrix": {"type": "array", "items": {
            "type": "object", "required": ["from", "to", "copies"],
            "properties": {"from": _NULLABLE_STRING, "to": _NULLABLE_STRING, "copies": {"type": "integer", "minimum": 1}},
        }},
        "stories": {"type": "array", "items": {
            "type": "object",
            "required": ["cluster_id", "title", "origin", "copies", "sites", "first_fetched_at", "last_fetched_at"],
            "properties": {
                "cluster_id": {"type": "integer"},
                "title": _NULLABLE_STRING,
                "origin": _PAGE_SCHEMA,
                "copies": {"type": "array", "minItems": 1, "items": {
                    "allOf": [_PAGE_SCHEMA, {
                        "type": "object",
                        "required": ["kind", "similarity", "matched_url", "minutes_after_origin"],
                        "properties": {
                            "kind": {"enum": ["exact", "near"]},
                            "similarity": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                            "matched_url": _NULLABLE_STRING,
                            "minutes_after_origin": {"type": "number", "minimum": 0},
                        },
                    }],
                }},
                "sites": {"type": "array", "items": _NULLABLE_STRING},
                "first_fetched_at": {"type": "string"},
                "last_fetched_at": {"type": "string"},
            },
        }},
        "quoted": {"type": "array", "items": {
            "type": "object", "required": ["cluster_id", "title", "source", "quoted_by"],
            "properties": {
                "cluster_id": {"type": "integer"},
                "title": _NULLABLE_STRING,
                "source": {"type": "object", "required": ["url", "site", "title", "dated_at"]},
                "quoted_by": {"type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "required": ["url", "site", "title", "dated_at", "fetched_at", "chars", "fraction",
                                 "source_fraction", "basis", "passages"],
                    "properties": {
                        "chars": {"type": "integer", "minimum": 1},
                        # What put the quoted story first: its earlier publication, or (a time unknown) its arrival.
                        "basis": {"enum": ["published", "arrival"]},
                        "fraction": {"type": "number", "minimum": 0, "maximum": 1},
                        "source_fraction": {"type": "number", "minimum": 0, "maximum": 1},
                        "passages": {"type": "array", "minItems": 1, "items": {
                            "type": "object", "required": [*PASSAGE_FIELDS, "text"],
                            "properties": {"text": {"type": "string"}},
                        }},
                    },
                }},
            },
        }},
    },
}
CSV_FIELDS = (
    "cluster_id", "story_title", "origin_site", "origin_dated_at", "origin_url", "copy_site", "copy_dated_at",
    "copy_date_basis", "minutes_after_origin", "kind", "similarity", "copy_title", "copy_url", "copy_fetched_at",
)


def _page(member: ClusterMember) -> dict:
    return {field: getattr(member, field) for field in _PAGE_FIELDS}


def _minutes(later: str, earlier: str) -> float:
    return round((parse_instant(later) - parse_instant(earlier)).total_seconds() / 60, 1)


def _how_matched(member: ClusterMember, origin: ClusterMember, by_url: dict[str, ClusterMember]) -> tuple:
    """(kind, similarity, matched_url) of a copy, relative to the origin: ``exact`` when it carries the origin's
    text, else ``near`` with the similarity of the match that put it in the cluster.

    Single-Pass compares with the cluster's centre only: a near copy matched the centre; when the copy is the
    centre itself (it was fetched first), the origin's own match with it says how close the two are."""
    if member.fingerprint == origin.fingerprint:
        return "exact", 1.0, origin.url

    def article(page: ClusterMember) -> ClusterMember:  # the stored article holding this page's text
        return by_url.get(page.matched_url or "", page) if page.status == EXACT_DUPLICATE else page

    text = article(member)
    if text.status == NEAR_DUPLICATE:
        return "near", text.similarity, text.matched_url
    return "near", article(origin).similarity, origin.url


def quoted_stories(reuses: Iterable[StoredReuse]) -> list[dict]:
    """The stories quoted, each with the pages that reused its passages (most characters first) and every passage
    as the story's text has it; stories quoted by the most pages first."""
    stories: dict[int, dict] = {}
    for reuse in reuses:
        story = stories.setdefault(reuse.source_cluster_id, {
            "cluster_id": reuse.source_cluster_id, "title": reuse.source_title,
            "source": {"url": reuse.source_url, "site": reuse.source_site, "title": reuse.source_title,
                       "dated_at": reuse.source_dated_at},
            "quoted_by": [],
        })
        story["quoted_by"].append({
            "url": reuse.url, "site": reuse.site, "title": reuse.title, "dated_at": reuse.dated_at,
            "fetched_at": reuse.fetched_at, "chars": reuse.chars, "fraction": reuse.fraction,
            "source_fraction": reuse.source_fraction, "basis": reuse.basis,
            "passages": [{**dict(zip(PASSAGE_FIELDS, passage)),
                          "text": reuse.source_text[passage[2]:passage[2] + passage[3]]} for passage in reuse.passages],
        })
    for story in stories.values():
        story["quoted_by"].sort(key=lambda q: (-q["chars"], q["dated_at"], q["url"]))
    return sorted(stories.values(), key=lambda s: (-len(s["quoted_by"]), s["source"]["dated_at"], s["cluster_id"]))


def build_report(clusters: Iterable[tuple[ClusterRecord, list[ClusterMember]]], *, generated_at: str,
                 filters: dict | None = None, reuses: Iterable[StoredReuse] = ()) -> dict:
    """The report of ``clusters`` (each with its members, any order) and of the passage ``reuses``."""
    stories = []
    originals: Counter = Counter()
    made: Counter = Counter()
    copied: Counter = Counter()
    matrix: Counter = Counter()
    for record, members in clusters:
        origin = next((m for m in members if m.url == record.origin_url), None)
        if origin is None or len(members) < 2:
            continue
        by_url = {m.url: m for m in members}
        copies = []
        for member in members:
            if member is origin:
                continue
            kind, similarity, matched = _how_matched(member, origin, by_url)
            copies.append({**_page(member), "kind": kind, "similarity": similarity, "matched_url": matched,
                           "minutes_after_origin": max(0.0, _minutes(member.dated_at, origin.dated_at))})
            made[member.site] += 1
            copied[origin.site] += 1
            matrix[origin.site, member.site] += 1
        copies.sort(key=lambda c: (c["dated_at"], c["fetched_at"], c["url"]))
        originals[origin.site] += 1
        stories.append({
            "cluster_id": record.cluster_id, "title": origin.title or next((m.title for m in members if m.title), None),
            "origin": _page(origin), "copies": copies,
            "sites": sorted({m.site for m in members}, key=lambda s: (s is None, s or "")),
            "first_fetched_at": record.first_fetched_at, "last_fetched_at": record.last_fetched_at,
        })
    stories.sort(key=lambda s: (-len(s["copies"]), s["origin"]["dated_at"], s["cluster_id"]))
    sites = sorted(set(originals) | set(made), key=lambda s: (s is None, s or ""))
    return {
        "generated_at": generated_at,
        "filters": dict(filters or {}),
        "totals": {"stories": len(stories), "copies": sum(made.values()), "sites": len(sites)},
        "sites": [{"site": s, "originals": originals[s], "copies_made": made[s], "copied_by_others": copied[s]}
                  for s in sites],
        "copy_matrix": [{"from": a, "to": b, "copies": n}
                        for (a, b), n in sorted(matrix.items(), key=lambda kv: (-kv[1], str(kv[0])))],
        "stories": stories,
        "quoted": quoted_stories(reuses),
    }


def write_csv(report: dict, out: TextIO) -> int:
    """One row per copy (the origin repeated on each); returns the number of rows."""
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    rows = 0
    for story in report["stories"]:
        origin = story["origin"]
        for copy in story["copies"]:
            writer.writerow({
                "cluster_id": story["cluster_id"], "story_title": story["title"], "origin_site": origin["site"],
                "origin_dated_at": origin["dated_at"], "origin_url": origin["url"], "copy_site": copy["site"],
                "copy_dated_at": copy["dated_at"], "copy_date_basis": copy["date_basis"],
                "minutes_after_origin": copy["minutes_after_origin"], "kind": copy["kind"],
                "similarity": copy["similarity"], "copy_title": copy["title"], "copy_url": copy["url"],
                "copy_fetched_at": copy["fetched_at"],
            })
            rows += 1
    return rows


# -- HTML ------------------------------------------------------------------------------------------
# Colour-blind-safe categorical palette (Okabe-Ito, then Tol's muted), one colour per site.
_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#332288",
            "#117733", "#882255", "#44AA99", "#999933")
_CSS = """
body{font-family:"Noto Sans CJK SC","Noto Sans SC","Microsoft YaHei","PingFang SC",sans-serif;margin:24px;color:#222;
max-width:1200px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666;font-size:13px}table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #e2e2e2;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}.chip{display:inline-block;border-radius:3px;padding:0 5px;
margin:1px 2px;color:#fff;font-size:12px}.story{margin:10px 0 18px}.story .t{font-weight:600;font-size:14px}
.exact{color:#555}a{color:#0b57a4;text-decoration:none}.empty{color:#888;font-style:italic}
.matrix td{width:48px;text-align:center}
blockquote{margin:2px 0 4px;padding:2px 8px;border-left:3px solid #ccc;color:#444;font-size:12px}
"""


def _china(value: str | None, *, style: str = "%Y-%m-%d %H:%M") -> str:
    if not value:
        return "—"
    return parse_instant(value).astimezone(CHINA_OFFSET).strftime(style)


def _delay(minutes: float) -> str:
    """``+35 min``, ``+2 h 15 min``, ``+1 d 3 h``: how long after the origin a copy appeared.

    >>> _delay(35), _delay(135), _delay(1620)
    ('+35 min', '+2 h 15 min', '+1 d 3 h')
    """
    minutes = round(minutes)
    if minutes < 60:
        return f"+{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 24:
        return f"+{hours} h {rest} min" if rest else f"+{hours} h"
    days, hours = divmod(hours, 24)
    return f"+{days} d {hours} h" if hours else f"+{days} d"


def _site_colours(report: dict) -> dict:
    return {entry["site"]: _PALETTE[i % len(_PALETTE)] for i, entry in enumerate(report["sites"])}


def _chip(site, colours: dict) -> str:
    return f'<span class="chip" style="background:{colours.get(site, "#777")}">{html.escape(str(site))}</span>'


def _timeline_svg(story: dict, colours: dict, width: int = 760) -> str:
    """The story's copies on a time axis from the origin (left) to the last copy (right)."""
    origin = story["origin"]
    pages = [origin, *story["copies"]]
    start = parse_instant(origin["dated_at"])
    span = max((parse_instant(p["dated_at"]) - start).total_seconds() for p in pages) or 60.0
    left, right, row = 170, 40, 22
    height = 34 + row * len(pages)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="timeline">', f'<line x1="{left}" y1="20" x2="{width - right}" y2="20" stroke="#bbb"/>']
    for fraction in (0, 0.5, 1):
        x = left + fraction * (width - left - right)
        moment = start.timestamp() + fraction * span
        label = _china(datetime.fromtimestamp(moment, CHINA_OFFSET).isoformat(), style="%m-%d %H:%M")
        parts.append(f'<text x="{x:.0f}" y="14" font-size="10" text-anchor="middle" fill="#666">{label}</text>')
    for i, page in enumerate(pages):
        seconds = (parse_instant(page["dated_at"]) - start).total_seconds()
        x = left + (seconds / span) * (width - left - right)
        y = 38 + i * row
        colour = colours.get(page["site"], "#777")
        role = "首发 origin" if page is origin else ("原文转载 exact" if page["kind"] == "exact"
                                                     else f"改写 near {page['similarity'] or 0:.2f}")
        parts.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#f0f0f0"/>')
        parts.append(f'<text x="{left - 10}" y="{y + 4}" font-size="11" text-anchor="end">'
                     f'{html.escape(str(page["site"]))} · {_china(page["dated_at"], style="%m-%d %H:%M")}</text>')
        shape = (f'<rect x="{x - 6:.1f}" y="{y - 6}" width="12" height="12" fill="{colour}"/>' if page is origin
                 else f'<circle cx="{x:.1f}" cy="{y}" r="5" fill="{colour}"/>')
        parts.append(f'<a href="{html.escape(page["url"])}"><title>{html.escape(role)}: '
                     f'{html.escape(page["title"] or "")}</title>{shape}</a>')
        if page is not origin:  # the label on the side of the dot with room for it
            anchor, dx = ("end", -9) if x > (left + width - right) / 2 else ("start", 9)
            parts.append(f'<text x="{x + dx:.1f}" y="{y + 4}" font-size="10" fill="#555" text-anchor="{anchor}">'
                         f'{_delay(page["minutes_after_origin"])} · {html.escape(role)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _quoted_html(quoted: list[dict], colours: dict, passage_chars: int = 240) -> list[str]:
    """Each quoted story, the pages that quoted it, and the passages they took (the first ``passage_chars``
    characters of each)."""
    out = ["<h2>被引用 · Quoted by (passages reused in other stories)</h2>"]
    if not quoted:
        return out + ['<p class="empty">No passage of a stored story was reused in this window.</p>']
    for story in quoted:
        source = story["source"]
        out.append(f'<div class="story"><div class="t"><a href="{html.escape(source["url"])}">'
                   f'{html.escape(story["title"] or source["url"])}</a> {_chip(source["site"], colours)} '
                   f'<span class="meta">{_china(source["dated_at"])}</span></div>'
                   "<table><tr><th>引用者 quoted by</th><th>时间 (UTC+8)</th><th>字数 chars</th>"
                   "<th>占原文 of the story</th><th>引用段落 passage</th></tr>")
        for quote in story["quoted_by"]:
            passages = "".join(
                f'<blockquote>{html.escape(p["text"][:passage_chars])}{"…" if len(p["text"]) > passage_chars else ""}'
                "</blockquote>" for p in quote["passages"])
            out.append(f'<tr><td>{_chip(quote["site"], colours)} <a href="{html.escape(quote["url"])}">'
                       f'{html.escape(quote["title"] or quote["url"])}</a></td><td>{_china(quote["dated_at"])}'
                       f'{"" if quote["basis"] == "published" else " (by arrival)"}</td>'
                       f'<td class="n">{quote["chars"]}</td><td class="n">{quote["source_fraction"]:.0%}</td>'
                       f"<td>{passages}</td></tr>")
        out.append("</table></div>")
    return out


def render_html(report: dict, *, top: int = 20) -> str:
    """One self-contained page: the top reprinted stories, a timeline of copies per story, the copy matrix."""
    colours = _site_colours(report)
    totals, filters = report["totals"], report["filters"]
    shown = {k: v for k, v in filters.items() if v not in (None, "", 1) or k == "min_copies"}
    out = [
        "<!DOCTYPE html><html lang=\"zh-CN\"><head><meta charset=\"utf-8\">",
        "<title>newsdedup 转载报告</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>转载报告 · Reprint report</h1>",
        f'<div class="meta">{totals["stories"]} 条被转载的新闻 (stories), {totals["copies"]} 次转载 (copies), '
        f'{totals["sites"]} 个网站 (sites) · 生成于 {_china(report["generated_at"])} (UTC+8) · '
        f'{html.escape(", ".join(f"{k}={v}" for k, v in shown.items()))}</div>',
        "<h2>转载最多的新闻 · Top reprinted stories</h2>",
    ]
    stories = report["stories"][:top]
    if not stories:
        out.append('<p class="empty">No reprinted story in this window.</p>')
    else:
        out.append("<table><tr><th>#</th><th>标题 title</th><th>首发 origin</th><th>首发时间 published (UTC+8)</th>"
                   "<th>转载 copies</th><th>网站 sites</th><th>最后转载 last copy</th></tr>")
        for rank, story in enumerate(stories, 1):
            origin = story["origin"]
            last = story["copies"][-1]
            basis = "" if origin["date_basis"] == "published" else f' <span class="meta">({origin["date_basis"]})</span>'
            out.append(
                f'<tr><td class="n">{rank}</td><td><a href="{html.escape(origin["url"])}">'
                f'{html.escape(story["title"] or origin["url"])}</a></td><td>{_chip(origin["site"], colours)}</td>'
                f'<td>{_china(origin["dated_at"])}{basis}</td><td class="n">{len(story["copies"])}</td>'
                f'<td>{"".join(_chip(s, colours) for s in story["sites"])}</td>'
                f'<td>{_delay(last["minutes_after_origin"])}</td></tr>'
            )
        out.append("</table>")
    out.append("<h2>转载时间线 · Timeline of copies per story</h2>")
    for rank, story in enumerate(stories, 1):
        out.append(f'<div class="story"><div class="t">{rank}. {html.escape(story["title"] or "")}</div>'
                   f'{_timeline_svg(story, colours)}</div>')
    out += _quoted_html(report["quoted"][:top], colours)
    out.append("<h2>谁转载谁 · Site-by-site copy matrix</h2>")
    sites = [entry["site"] for entry in report["sites"]]
    counts = {(cell["from"], cell["to"]): cell["copies"] for cell in report["copy_matrix"]}
    if sites:
        peak = max(counts.values(), default=1)
        out.append('<table class="matrix"><tr><th>首发 origin ↓ / 转载 copy →</th>'
                   + "".join(f"<th>{_chip(s, colours)}</th>" for s in sites) + "</tr>")
        for a in sites:
            cells = []
            for b in sites:
                n = counts.get((a, b), 0)
                shade = f"background:rgba(0,114,178,{0.12 + 0.6 * n / peak:.2f})" if n else ""
                cells.append(f'<td class="n" style="{shade}">{n or ""}</td>')
            out.append(f"<tr><th>{_chip(a, colours)}</th>{''.join(cells)}</tr>")
        out.append("</table>")
    out.append("<h2>各网站 · Per site</h2><table><tr><th>网站 site</th><th>首发 originals</th>"
               "<th>转载他人 copies made</th><th>被转载 copied by others</th></tr>")
    for entry in report["sites"]:
        out.append(f'<tr><td>{_chip(entry["site"], colours)}</td><td class="n">{entry["originals"]}</td>'
                   f'<td class="n">{entry["copies_made"]}</td><td class="n">{entry["copied_by_others"]}</td></tr>')
    out.append("</table></body></html>")
    return "\n".join(out)


def report_from_store(store, *, since: str | None = None, sites: tuple[str, ...] = (), min_copies: int = 1,
                      query: str | None = None, generated_at: str) -> dict:
    """The report over an open :class:`~newsdedup.storage.base.ArticleStore`: stories with at least
    ``min_copies`` copies, active (a copy fetched) since ``since``, touching one of ``sites`` (any site when
    empty), matching ``query``."""
    if min_copies < 1:
        raise ValueError(f"--min-copies must be >= 1, got {min_copies}")
    clusters = store.iter_clusters(since=since, min_members=min_copies + 1, sites=sites, query=query)
    filters = {"since": since, "sites": ",".join(sites) or None, "min_copies": min_copies, "query": query}
    return build_report(clusters, generated_at=generated_at, filters=filters,
                        reuses=store.iter_reuses(since=since, sites=sites, query=query))
