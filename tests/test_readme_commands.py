"""The README's command blocks run as written, wherever they can run offline.

Every line of every ``sh`` block is either run here, against a copy of the demo's database named as the README
names it (``news.sqlite`` in the current folder), or belongs to a kind this test names as checked elsewhere or not
runnable offline. A new kind of command in the README fails this test until someone decides which it is.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

# Line prefixes not run here, and why.
ELSEWHERE = {
    "python3 -m venv": "the two set-up commands: CI runs the test command, tests/test_cli.py the demo",
    "apt-get update": "the test command (its system packages first): CI runs it",
    "pip install": "installs packages",
    "scrapy crawl portal -a sites=config/sites.toml": "crawls the real portals (no internet here); "
    "tests/test_crawl_e2e.py runs the same command against a local portal",
    "scrapy crawl portal -a sites=my-sites.toml": "a user's own portal (no internet here); "
    "tests/test_discovery_crawl.py crawls a local portal of JSON, JSONP, page-data, RSS and sitemap lists",
    "newsdedup eval": "CI runs it on the shared data",
    "newsdedup monitor": "runs until stopped; tests/test_schedules.py runs it",
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
    "a throw-away server (newsdedup.servers)",
    "for i in 1 2 3; do scrapy crawl portal": "tests/test_distributed.py runs 2 such workers against a local portal",
    "python -m newsdedup.servers": "runs until Ctrl-C; tests/server_fixtures.py starts the same servers",
}


def sh_lines() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", readme, flags=re.S):
        joined = block.replace("\\\n", " ")
        lines += [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines


def runnable() -> list[str]:
    return [line for line in sh_lines() if not any(line.startswith(prefix) for prefix in ELSEWHERE)]


def test_every_readme_command_is_run_here_or_named_as_checked_elsewhere():
    unknown = [line for line in runnable() if not line.startswith("newsdedup ")]
    assert unknown == [], "decide whether these README commands can run offline: " + "; ".join(unknown)
    assert len(runnable()) >= 5


@pytest.mark.parametrize("line", runnable())
def test_readme_command_runs_on_the_demo_database(line, demo_db, tmp_path):
    shutil.copy(demo_db, tmp_path / "news.sqlite")
    command = line.split("  #")[0]  # a trailing comment after two spaces
    args = shlex.split(command, comments=True)
    result = subprocess.run([sys.executable, "-m", "newsdedup.cli", *args[1:]], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, f"{line}\n{result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr
    written = [args[i + 1] for i, arg in enumerate(args) if arg in ("-o", "--output")]
    for name in written:
        assert (tmp_path / name).stat().st_size > 0, f"{line} wrote nothing to {name}"
