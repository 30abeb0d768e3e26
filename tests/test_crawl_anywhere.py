"""``newsdedup crawl`` and ``newsdedup sites``: an installed newsdedup crawls from any folder, no scrapy.cfg needed.

Each crawl is a real subprocess started in an empty temporary folder (outside the repository, so Scrapy finds no
``scrapy.cfg``) against the demo portal served by this process on 127.0.0.1.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures
from newsdedup.crawl.sites import default_sites_path, load_sites
from newsdedup.demo.server import DemoPortalServer, load_manifest
from newsdedup.storage import open_store

# The console script pip installs beside this Python: what a user types.
NEWSDEDUP = str(Path(sys.executable).parent / "newsdedup")
# The demo portal is this process on loopback: no pacing (kept in a user's settings file, as a user would).
FAST_SETTINGS = """\
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = false
TELNETCONSOLE_ENABLED = false
NEWSDEDUP_WORKERS = "two"   # not a number: only the -s NEWSDEDUP_WORKERS=1 over it lets the crawl start
"""


def newsdedup(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([NEWSDEDUP, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture()
def empty_folder(tmp_path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    assert not any(parent.joinpath("scrapy.cfg").exists() for parent in (folder, *folder.parents))
    return folder


def summary_rows(log: str) -> dict[str, dict[str, int]]:
    """The closing summary's table: site -> column -> figure."""
    lines = log.split("newsdedup run finished:", 1)[1].splitlines()
    header = re.split(r"\s{2,}", lines[1].strip())  # "list pages", "article links": two spaces part columns
    rows = {}
    for line in lines[2:]:
        cells = line.split()
        if len(cells) != len(header) or not all(cell.isdigit() for cell in cells[1:]):
            if cells and not line.startswith(" "):
                break
            continue
        rows[cells[0]] = dict(zip(header[1:], map(int, cells[1:])))
    return rows


def test_newsdedup_crawl_runs_from_an_empty_folder_and_stores_the_demo_portal(empty_folder):
    (empty_folder / "fast.toml").write_text(FAST_SETTINGS, encoding="utf-8")
    with DemoPortalServer(day=1) as server:
        (empty_folder / "sites.toml").write_text(server.sites_toml(), encoding="utf-8")
        result = newsdedup("crawl", "-a", "sites=sites.toml", "--settings", "fast.toml", "-s", "NEWSDEDUP_WORKERS=1",
                           cwd=empty_folder)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Traceback" not in result.stderr
    assert "newsdedup run finished: exit status 0 (ok)" in result.stderr
    overridden = re.search(r"Overridden settings:\n(\{.*?\})", result.stderr, re.S).group(1)
    # Scrapy lists the settings that differ from its own defaults: fast.toml put these back over settings.py's.
    assert "'TELNETCONSOLE_ENABLED': False" in overridden
    assert "'DOWNLOAD_DELAY'" not in overridden and "'AUTOTHROTTLE_ENABLED'" not in overridden
    rows = summary_rows(result.stderr)
    assert set(rows) == {"dongfang", "nanling", "xinghe", "qinghe"}
    # The default database, in the folder the crawl ran in, holds what the summary says was stored.
    with open_store(f"sqlite:///{empty_folder / 'newsdedup.sqlite'}") as store:
        counts = store.counts()
    # Day 1 of the demo: every story stored once and each edited reprint as a near duplicate (the verbatim reprints
    # are repeats, not articles). Which copy of a story arrives first varies; these totals do not.
    day1 = load_manifest()["by_day"][1]
    assert counts.articles == sum(row["stored"] for row in rows.values()) == day1["unique"] + day1["edited_reprints"]
    assert counts.near_duplicate == sum(row["near"] for row in rows.values()) == day1["edited_reprints"]


def test_newsdedup_crawl_is_the_project_crawl_command_with_its_checks_and_exit_status(empty_folder):
    (empty_folder / "broken.toml").write_text('[[site]]\nname = "x"\n', encoding="utf-8")
    for spelling in (("--sites", "broken.toml"), ("-a", "sites=broken.toml")):  # the option, and Scrapy's alias
        result = newsdedup("crawl", *spelling, cwd=empty_folder)
        assert result.returncode == 2
        assert result.stderr.splitlines() == [
            "newsdedup: error: broken.toml: site #1 ('x'): missing required key(s) start_urls, allowed_domains, "
            "article_url_pattern"]
    assert not (empty_folder / "newsdedup.sqlite").exists()  # nothing touched before the checks passed
    result = newsdedup("crawl", "--sites", "broken.toml", "-a", "sites=other.toml", cwd=empty_folder)
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        "newsdedup: error: --sites broken.toml and -a sites=other.toml name two site files; give one"])

    # A misspelt NEWSDEDUP_* name is an error wherever it is given, not a setting Scrapy keeps and nothing reads.
    result = newsdedup("crawl", "-s", "NEWSDEDUP_RETENTON_DAYS=10", cwd=empty_folder)
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        "newsdedup: error: -s: unknown setting NEWSDEDUP_RETENTON_DAYS (did you mean NEWSDEDUP_RETENTION_DAYS? the "
        "NEWSDEDUP_* settings are listed in docs/settings.md)"])
    result = newsdedup("monitor", "--every", "1m", "-s", "NEWSDEDUP_RETENTON_DAYS=10", cwd=empty_folder)
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        "newsdedup monitor: error: -s: unknown setting NEWSDEDUP_RETENTON_DAYS (did you mean NEWSDEDUP_RETENTION_DAYS? "
        "the NEWSDEDUP_* settings are listed in docs/settings.md)"])
    assert not (empty_folder / "newsdedup.sqlite").exists()

    (empty_folder / "typo.toml").write_text("NEWSDEDUP_WORKRES = 2\n", encoding="utf-8")
    result = newsdedup("crawl", "--settings", "typo.toml", cwd=empty_folder)
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        "newsdedup: error: typo.toml: unknown setting NEWSDEDUP_WORKRES (did you mean NEWSDEDUP_WORKERS? the "
        "NEWSDEDUP_* settings are listed in docs/settings.md)"])

    (empty_folder / "bad.toml").write_text('NEWSDEDUP_WORKERS = "two"\n', encoding="utf-8")
    result = newsdedup("crawl", "--settings", "bad.toml", cwd=empty_folder)  # checked as -s values are
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        "newsdedup: error: NEWSDEDUP_WORKERS: expected a whole number or none, got 'two'"])


def test_scrapy_crawl_portal_takes_the_settings_file_too(tmp_path):
    (tmp_path / "bad.toml").write_text('NEWSDEDUP_WORKERS = "two"\n', encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "portal", "--settings", str(tmp_path / "bad.toml")],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr.splitlines()) == (2, [
        "newsdedup: error: NEWSDEDUP_WORKERS: expected a whole number or none, got 'two'"])


def test_sites_example_is_the_packaged_site_file_and_validates(empty_folder):
    result = newsdedup("sites", "--example", cwd=empty_folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout == default_sites_path().read_text(encoding="utf-8")
    assert result.stdout == (REPO_ROOT / "config" / "sites.toml").read_text(encoding="utf-8")
    written = newsdedup("sites", "--example", "-o", "sites.toml", cwd=empty_folder)
    assert written.returncode == 0, written.stderr
    assert (empty_folder / "sites.toml").read_text(encoding="utf-8") == result.stdout
    listed = newsdedup("sites", "--sites", "sites.toml", cwd=empty_folder)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == [site.name for site in load_sites(empty_folder / "sites.toml")] and "sina" in names
    assert listed.stderr.strip() == f"{len(names)} sites in sites.toml: valid"


def test_sites_refuses_a_broken_site_file_with_one_line(empty_folder):
    text = default_sites_path().read_text(encoding="utf-8").replace("article_url_pattern = '", "article_url_pattern = '(", 1)
    (empty_folder / "sites.toml").write_text(text, encoding="utf-8")
    result = newsdedup("sites", "--sites", "sites.toml", cwd=empty_folder)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("newsdedup sites: error: sites.toml: site #1 ('sina'): article_url_pattern"), line


def test_help_lists_crawl_and_sites(empty_folder):
    result = newsdedup("--help", cwd=empty_folder)
    assert result.returncode == 0
    commands = re.search(r"\{([a-z,]+)\}", result.stdout).group(1).split(",")
    assert {"crawl", "sites"} <= set(commands)
    crawl_help = newsdedup("crawl", "--help", cwd=empty_folder)
    assert crawl_help.returncode == 0
    assert "newsdedup crawl [options]" in crawl_help.stdout
    assert all(option in crawl_help.stdout for option in ("--settings FILE", "-s NAME=VALUE", "-a NAME=VALUE", "-O FILE"))


def test_monitor_passes_its_settings_file_on_to_each_crawl(empty_folder):
    (empty_folder / "bad.toml").write_text('NEWSDEDUP_WORKERS = "two"\n', encoding="utf-8")
    result = newsdedup("monitor", "--every", "1s", "--runs", "1", "--settings", "bad.toml", "--log", "monitor.log",
                       cwd=empty_folder)
    assert result.returncode == 1, result.stderr  # a run failed
    log = (empty_folder / "monitor.log").read_text(encoding="utf-8")
    assert "newsdedup: error: NEWSDEDUP_WORKERS: expected a whole number or none, got 'two'" in log
    assert "crawl finished with exit status 2" in log


def test_newsdedup_crawl_stores_the_demo_portal_in_each_store_and_releases_the_run_lock(empty_folder, store_uri):
    """One process, each documented store, the user's command: the run lock the command's check took is the one
    the crawl writes under (PostgreSQL's is a session lock: a second connection asking for it was refused), and it
    is released at the end, so a second run starts."""
    (empty_folder / "fast.toml").write_text(FAST_SETTINGS, encoding="utf-8")
    with DemoPortalServer(day=1) as server:
        (empty_folder / "sites.toml").write_text(server.sites_toml(), encoding="utf-8")
        runs = [newsdedup("crawl", "-a", "sites=sites.toml", "--settings", "fast.toml", "-s", "NEWSDEDUP_WORKERS=1",
                          "-s", f"NEWSDEDUP_STORAGE_URI={store_uri}", cwd=empty_folder) for _ in range(2)]
    for result in runs:
        assert result.returncode == 0, result.stderr[-4000:]
        assert "Traceback" not in result.stderr and " ERROR: " not in result.stderr, result.stderr[-4000:]
        assert "newsdedup run finished: exit status 0 (ok)" in result.stderr
    first, second = (summary_rows(result.stderr) for result in runs)
    # Day 1 of the demo portal: 16 article pages stored (.ci/check_summary.py), none again on the second run.
    assert sum(row["stored"] for row in first.values()) == 16
    assert sum(row["stored"] for row in second.values()) == 0
    with open_store(store_uri) as store:
        assert store.counts().articles == 16
