"""The command blocks of the README and the documentation pages (docs/*.md) run as written, wherever they can run
offline.

Every line of every ``sh`` block is either run here, against a copy of the demo's database named as the README
names it (``news.sqlite`` in the current folder), or belongs to a kind this test names as checked elsewhere or not
runnable offline. A new kind of command in the README or the docs fails this test until someone decides which it
is.

The docs' filters name the real portals (``--site sina``) and stories of a real crawl; run as written on the
demo's database they match nothing, and a command that prints nothing proves little. So each filter value is
swapped for one the demo has (:data:`DEMO_VALUES`), and the output must hold rows, every one passing the filter.
An example whose filter is not in that table matches nothing and fails here until it is added.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
import sqlite3
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

# Line prefixes not run here, and why.
ELSEWHERE = {
    "python3 -m venv": "the two set-up commands: CI runs the test command, .ci/user-install the demo one in a copy "
    "of the checkout (the test suite installs nothing from the package registry)",
    "newsdedup demo --serve": "serves until Ctrl-C; tests/test_demo_serve.py runs it, .ci/user-install crawls it",
    "newsdedup demo": "tests/test_cli.py runs the demo",
    "newsdedup sites --example >": "writes the shipped site file (a shell redirection, not run here)",
    "apt-get update": "the test command (its system packages first): CI runs it",
    "pip install": "installs packages",
    "scrapy crawl portal --sites config/sites.toml": "crawls the real portals (no internet here); "
    "tests/test_crawl_e2e.py runs the same command against a local portal",
    "newsdedup crawl": "crawls the real portals (no internet here); tests/test_crawl_anywhere.py runs it from an "
    "empty folder against a local portal",
    "newsdedup eval": "CI runs it on the shared data",
    "newsdedup monitor": "runs until stopped; tests/test_schedules.py runs it",
    "newsdedup serve": "runs until stopped; tests/test_desk.py starts it and drives it in Chromium",
    "newsdedup alerts": "needs a watches file and a receiver; tests/test_alerts.py runs it against a local webhook",
    "printf '[scrapyd]": "tests/test_schedules.py deploys to a real Scrapyd",
    "scrapyd-deploy": "tests/test_schedules.py",
    "curl http://127.0.0.1:6800": "tests/test_schedules.py",
    # More than one machine: setting up the servers of a distributed crawl, and its workers.
    "apt-get install -y redis-server": "installs a server; tests/test_distributed.py starts the same binaries",
    "apt-get install -y postgresql": "installs a server; tests/test_distributed.py starts the same binaries",
    "printf 'bind": "configures the system's Redis (root, a private network)",
    "echo \"listen_addresses": "configures the system's PostgreSQL",
    "echo \"host newsdedup": "configures the system's PostgreSQL",
    "systemctl restart": "restarts a system service",
    "sudo -u postgres": "creates the role and database on the system's PostgreSQL; the tests create theirs on "
    "a throw-away server (tests/servers.py)",
    "for i in 1 2 3; do scrapy crawl portal": "tests/test_distributed.py runs 2 such workers against a local portal",
    "python tests/servers.py": "runs until Ctrl-C; tests/server_fixtures.py starts the same servers",
}


DOCUMENTS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
# The docs' example filter values, and values of the demo's database that stand for them. The demo's most copied
# stories have two copies each ("--min-copies 3" matches none); 海洋 is in the title of one of them.
DEMO_VALUES = {
    ("--site", "sina"): "xinghe",
    ("--site", "sina,sohu"): "xinghe,dongfang",
    ("--min-copies", "3"): "2",
    ("--query", "地震"): "海洋",
    ("--cluster", "1234"): "{cluster}",
}
FILTERS = ("--site", "--status", "--cluster", "--query", "--min-copies")


def sh_lines() -> list[str]:
    text = "\n".join(path.read_text(encoding="utf-8") for path in DOCUMENTS)
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        joined = block.replace("\\\n", " ")
        lines += [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines


def runnable() -> list[str]:
    return [line for line in sh_lines() if not any(line.startswith(prefix) for prefix in ELSEWHERE)]


def test_every_readme_command_is_run_here_or_named_as_checked_elsewhere():
    unknown = [line for line in runnable() if not line.startswith("newsdedup ")]
    assert unknown == [], "decide whether these README commands can run offline: " + "; ".join(unknown)
    assert len(runnable()) >= 5


def with_demo_values(args: list[str], db) -> list[str]:
    """``args`` with the README's example filter values swapped for the demo's (see DEMO_VALUES)."""
    with sqlite3.connect(db) as conn:  # the lowest id of a story with more than one page (ids follow crawl order)
        [(cluster,)] = conn.execute("SELECT MIN(cluster_id) FROM (SELECT cluster_id FROM articles "
                                    "GROUP BY cluster_id HAVING COUNT(*) > 1)").fetchall()
    swapped = list(args)
    for i, arg in enumerate(args[:-1]):
        if (arg, args[i + 1]) in DEMO_VALUES:
            swapped[i + 1] = DEMO_VALUES[arg, args[i + 1]].format(cluster=cluster)
    return swapped


def output_rows(args: list[str], stdout: str, folder) -> list[dict]:
    """What the command wrote (to stdout or its ``-o`` file), one dict per row: export's JSON lines, the report's
    stories (JSON) or copies (CSV)."""
    written = [args[i + 1] for i, arg in enumerate(args) if arg in ("-o", "--output")]
    text = (folder / written[0]).read_text(encoding="utf-8") if written else stdout
    if args[0] == "export":
        return [json.loads(line) for line in text.splitlines()]
    if "csv" in args:
        return list(csv.DictReader(io.StringIO(text)))
    return json.loads(text)["stories"]


def assert_rows_pass_filters(args: list[str], rows: list[dict], db, line: str) -> None:
    value = {arg: args[i + 1] for i, arg in enumerate(args[:-1]) if arg in FILTERS}
    assert rows, f"{line}: no rows in the demo's database with {value}"
    with sqlite3.connect(db) as conn:
        if "--cluster" in value:
            # the story's stored pages, and exact copies of them (recorded in repeats, not stored twice)
            stored = {url for (url,) in conn.execute("SELECT url FROM articles WHERE cluster_id = ?", (value["--cluster"],))}
            repeats = {url for (url,) in conn.execute("SELECT url FROM repeats")}
            urls = {row["url"] for row in rows}
            assert len(stored) > 1 and stored <= urls and urls - stored <= repeats, (line, rows)
        for row in rows:
            if "--site" in value:
                sites = set(value["--site"].split(","))
                if "sites" in row:  # a story touching one of them
                    assert sites & set(row["sites"]), (line, row)
                else:
                    assert row["site"] in sites, (line, row)
            if "--status" in value:
                assert row["status"] in value["--status"].split(","), (line, row)
            if "--query" in value:  # in the title or text of a page of the story
                texts = conn.execute("SELECT title || text FROM articles WHERE cluster_id = ?", (row["cluster_id"],))
                assert any(value["--query"] in text for (text,) in texts), (line, row)
            if "--min-copies" in value and "copies" in row:
                assert len(row["copies"]) >= int(value["--min-copies"]), (line, row)


@pytest.mark.parametrize("line", runnable())
def test_readme_command_runs_on_the_demo_database(line, demo_db, tmp_path):
    db = tmp_path / "news.sqlite"
    shutil.copy(demo_db, db)
    command = line.split("  #")[0]  # a trailing comment after two spaces
    args = with_demo_values(shlex.split(command, comments=True)[1:], db)
    result = subprocess.run([sys.executable, "-m", "newsdedup.cli", *args], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, f"{line}\n{result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr
    written = [args[i + 1] for i, arg in enumerate(args) if arg in ("-o", "--output")]
    for name in written:
        assert (tmp_path / name).stat().st_size > 0, f"{line} wrote nothing to {name}"
    if any(arg in FILTERS for arg in args):
        assert_rows_pass_filters(args, output_rows(args, result.stdout, tmp_path), db, line)
