"""`newsdedup report` on the demo's database: every reprinted story with its origin and copies, as JSON
(validated against REPORT_SCHEMA), CSV and an HTML page rendered by real headless Chromium (Debian packages
``chromium`` and ``fonts-noto-cjk``).

The README's picture (docs/report.png, also on docs/monitoring.md) comes from the Chromium test:
``NEWSDEDUP_SCREENSHOT=docs/report.png python -m pytest tests/test_report.py -k chromium`` saves the page it renders
there.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sqlite3
import tempfile
from collections import Counter, defaultdict
from urllib.parse import urlsplit

import jsonschema
import pytest

from conftest import REPO_ROOT
from local_site import newsdedup
from newsdedup.demo.content import load_manifest, portals
from newsdedup.monitoring.report import REPORT_SCHEMA, build_report
from newsdedup.storage.base import ClusterMember, ClusterRecord

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def render(page, png, size: tuple[int, int]) -> str:
    """Load ``page`` in headless Chromium: save a screenshot to ``png``, return the DOM the browser built."""
    with tempfile.TemporaryDirectory() as profile:
        flags = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"]
        subprocess.run([*flags, f"--screenshot={png}", page.resolve().as_uri()], check=True, capture_output=True,
                       timeout=120)
        return subprocess.run([*flags, "--dump-dom", page.resolve().as_uri()], check=True, capture_output=True,
                              text=True, timeout=120).stdout


def report(db, *args: str, fmt: str = "json"):
    result = newsdedup("report", "--storage", f"sqlite:///{db}", "--format", fmt, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout) if fmt == "json" else result.stdout


def reprinted_stories() -> dict[str, dict]:
    """The demo manifest's stories with more than one stored page: the original and its reprints."""
    stories: dict[str, dict] = defaultdict(lambda: {"original": None, "copies": {}})
    for path, page in load_manifest()["pages"].items():
        if page["kind"] == "original":
            stories[page["story"]]["original"] = path
        elif page["kind"] in ("verbatim_reprint", "edited_reprint"):
            stories[page["story"]]["copies"][path] = "exact" if page["kind"] == "verbatim_reprint" else "near"
    return {story: entry for story, entry in stories.items() if entry["copies"]}


def test_every_reprinted_story_with_its_origin_and_copies(demo_db):
    data = report(demo_db)
    jsonschema.validate(data, REPORT_SCHEMA)
    expected = reprinted_stories()
    assert data["totals"] == {"stories": len(expected), "copies": sum(len(e["copies"]) for e in expected.values()),
                              "sites": 4}
    found = {}
    for story in data["stories"]:
        origin = urlsplit(story["origin"]["url"]).path
        found[origin] = {urlsplit(c["url"]).path: c["kind"] for c in story["copies"]}
        assert story["origin"]["date_basis"] == "published"
        assert all(c["minutes_after_origin"] > 0 for c in story["copies"])
    assert found == {entry["original"]: entry["copies"] for entry in expected.values()}
    # Which portals copy from which: each copy counted once, from its origin's site to its own; per site, the
    # stories it published first, the copies it made and the copies others made of its stories.
    site = lambda path: path.split("/")[1]  # noqa: E731 - the demo's paths start with the portal's name
    pairs = Counter((site(entry["original"]), site(copy)) for entry in expected.values() for copy in entry["copies"])
    assert {(cell["from"], cell["to"]): cell["copies"] for cell in data["copy_matrix"]} == pairs
    originals = Counter(site(entry["original"]) for entry in expected.values())
    assert {s["site"]: (s["originals"], s["copies_made"], s["copied_by_others"]) for s in data["sites"]} == {
        name: (originals[name], sum(n for (_, to), n in pairs.items() if to == name),
               sum(n for (origin, _), n in pairs.items() if origin == name))
        for name in {name for pair in pairs for name in pair}}


def test_filters_and_csv(demo_db):
    assert report(demo_db, "--min-copies", "2")["totals"]["stories"] == 2
    assert report(demo_db, "--since", "24h")["totals"]["stories"] == 7  # the demo has just been crawled
    assert report(demo_db, "--since", "2099-01-01")["totals"]["stories"] == 0
    only = report(demo_db, "--site", "nanling")["stories"]
    assert only and all("nanling" in story["sites"] for story in only)
    everyone = report(demo_db)["stories"]
    assert len(only) < len(everyone)
    # Several sites, repeated or comma-separated (as export takes them): stories touching any of them.
    for flags in (("--site", "nanling,qinghe"), ("--site", "nanling", "--site", "qinghe")):
        either = report(demo_db, *flags)
        assert {s["cluster_id"] for s in either["stories"]} == {
            s["cluster_id"] for s in everyone if {"nanling", "qinghe"} & set(s["sites"])}
        assert either["filters"]["sites"] == "nanling,qinghe"
    (story,) = report(demo_db, "--query", "马拉松")["stories"]
    assert "马拉松" in story["title"]
    rows = list(csv.DictReader(io.StringIO(report(demo_db, fmt="csv"))))
    assert len(rows) == 9 and {r["kind"] for r in rows} == {"exact", "near"}
    bad = newsdedup("report", "--storage", f"sqlite:///{demo_db}", "--since", "yesterday")
    assert bad.returncode == 2 and "not a date or time" in bad.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium: apt-get install chromium fonts-noto-cjk")
def test_the_html_page_renders_in_chromium(demo_db, tmp_path):
    from PIL import Image  # matplotlib's dependency

    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    report(demo_db, "--top", "4", "-o", str(page), fmt="html")
    dom = render(page, shot, size=(1100, 1250))
    # The browser built the three parts: the table of top stories, one timeline per story shown, the matrix.
    assert dom.count("<svg") == 4 and 'class="matrix"' in dom and "转载最多的新闻" in dom
    image = Image.open(shot).convert("RGB")
    assert image.size == (1100, 1250)
    # Not a blank page: dark text and coloured marks cover a real share of the pixels.
    histogram = image.convert("L").histogram()
    assert sum(histogram[:128]) / (1100 * 1250) > 0.01
    if os.environ.get("NEWSDEDUP_SCREENSHOT"):  # the README's picture, small: a 64-colour palette
        image.quantize(64).save(REPO_ROOT / os.environ["NEWSDEDUP_SCREENSHOT"], optimize=True)


def _member(url, status, dated, text, matched=None, similarity=None):
    return ClusterMember(url, url.split("/")[2], "题", None, dated, dated, "published", status, matched,
                         similarity, "spotsigs", None, text)


def test_copies_are_exact_or_near_relative_to_the_origin_whatever_the_centre():
    centre = _member("http://b/1", "unique", "2026-11-16T03:00:00+00:00", b"B")
    near = _member("http://c/1", "near_duplicate", "2026-11-16T02:00:00+00:00", b"C", "http://b/1", 0.7)
    origin = _member("http://a/1", "exact_duplicate", "2026-11-16T01:00:00+00:00", b"C", "http://c/1", 1.0)
    record = ClusterRecord(1, origin.url, origin.dated_at, "published", 3, origin.dated_at, centre.dated_at)
    data = build_report([(record, [centre, near, origin])], generated_at="2026-11-16T04:00:00+00:00")
    jsonschema.validate(data, REPORT_SCHEMA)
    copies = {c["url"]: (c["kind"], c["similarity"], c["minutes_after_origin"]) for c in data["stories"][0]["copies"]}
    # The origin repeats c's text: c is an exact copy of it; b (the centre) is as close to it as c is to b.
    assert copies == {"http://c/1": ("exact", 1.0, 60.0), "http://b/1": ("near", 0.7, 120.0)}


def test_the_demo_report_shows_only_true_relations(demo_db):
    """Issue 34: two of qinghe's finance stories end with the site's 218-character risk disclaimer (the manifest's hard
    negative). It is the site's boilerplate, never a quotation; and any quotation the report shows points from the
    page published later to the story published first."""
    disclaimer = portals()["qinghe"].disclaimer
    conn = sqlite3.connect(demo_db)
    carrying = conn.execute("SELECT COUNT(*) FROM articles WHERE site = 'qinghe' AND instr(text, ?) > 0",
                            (disclaimer[:40],)).fetchone()[0]
    conn.close()
    assert carrying == 2  # the hard negative is in the stored texts: the reuse stage had it to judge
    data = report(demo_db)
    for story in data["quoted"]:
        for quote in story["quoted_by"]:
            for passage in quote["passages"]:
                assert "风险提示" not in passage["text"] and passage["text"][:30] not in disclaimer, passage
            assert quote["dated_at"] >= story["source"]["dated_at"], (quote, story["source"])
    assert "风险提示" not in report(demo_db, fmt="html").split("Quoted by", 1)[1]
