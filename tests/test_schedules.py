"""Scheduled runs: `newsdedup monitor` (runs, the shared lock, a clean stop), and the copy-paste lines of
docs/scheduling.md for cron (schedule and shell syntax), systemd (`systemd-analyze verify`) and Scrapyd (a real
Scrapyd on 127.0.0.1 that the project is deployed to and that runs a crawl)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from croniter import croniter

from conftest import REPO_ROOT
from faultsite import rows, wait_for
from local_site import OTHER_STORY, STORY, LocalSite, edited
from newsdedup.monitoring.monitor import schedule_lock_path
from server_fixtures import postgres, store_uri  # noqa: F401 - fixtures

# The copy-paste lines of docs/scheduling.md ("Running on a schedule").
SCHEDULING = (REPO_ROOT / "docs" / "scheduling.md").read_text(encoding="utf-8")
FAST = ("-s", "DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "NEWSDEDUP_WORKERS=1",
        "-s", "TELNETCONSOLE_ENABLED=False")


def storage_uri_of(command: str) -> str:
    return re.search(r"NEWSDEDUP_STORAGE_URI=(\S+)", command).group(1)


def lock_of(command: str) -> str:
    return re.search(r"flock -n (\S+)", command).group(1)


@pytest.fixture()
def site(tmp_path):
    with LocalSite(("alpha", "beta")) as local:
        local.publish("alpha", 1, "临江推行社区食堂", STORY, "2026-11-16 08:40")
        local.publish("beta", 1, "社区食堂来了", edited(STORY), "2026-11-16 10:15")
        local.publish("beta", 2, "本周后期全省降温", OTHER_STORY, "2026-11-16 09:00")
        (tmp_path / "sites.toml").write_text(local.sites_toml(), encoding="utf-8")
        yield local


def monitor(tmp_path, *args: str, storage: str | None = None, **popen) -> subprocess.Popen:
    command = [sys.executable, "-m", "newsdedup.cli", "monitor", "--sites", str(tmp_path / "sites.toml"),
               "--storage", storage or f"sqlite:///{tmp_path / 'news.sqlite'}", "--log", str(tmp_path / "monitor.log"),
               *(f"--set={value}" for value in FAST[1::2]), *args]
    return subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def test_monitor_runs_the_crawl_every_interval_and_writes_the_report(site, tmp_path, store_uri):
    process = monitor(tmp_path, "--every", "1s", "--runs", "2", "--report", str(tmp_path / "report.json"),
                      storage=store_uri)
    assert process.wait(timeout=240) == 0, process.stderr.read()
    log = (tmp_path / "monitor.log").read_text(encoding="utf-8")
    assert log.count("crawl finished with exit status 0") == 2
    assert "'newsdedup/store/articles': 3" in log  # the first run stores the three articles ...
    assert "'newsdedup/urlfilter/filtered': 3" in log  # ... the second fetches none of them again
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["totals"]["stories"] == 1
    assert not list(tmp_path.glob(".report.json.*"))  # written beside it, then renamed over it


def test_monitor_crawls_only_the_sites_named(site, tmp_path):
    process = monitor(tmp_path, "--every", "1s", "--runs", "1", "--site", "beta")
    assert process.wait(timeout=240) == 0, process.stderr.read()
    log = (tmp_path / "monitor.log").read_text(encoding="utf-8")
    assert "'newsdedup/store/articles': 2" in log and "newsdedup/site/alpha/" not in log  # beta's two articles only
    process = monitor(tmp_path, "--every", "1s", "--runs", "1", "--site", "alpha", "--site", "beta")  # or alpha,beta
    assert process.wait(timeout=240) == 0, process.stderr.read()
    second_run = (tmp_path / "monitor.log").read_text(encoding="utf-8")[len(log):]
    assert "'newsdedup/store/articles': 1" in second_run  # alpha's, and beta's two are not fetched again
    assert "'newsdedup/urlfilter/filtered': 2" in second_run


def test_a_report_that_cannot_be_written_is_logged_and_the_monitor_goes_on(site, tmp_path):
    (tmp_path / "www").write_text("a file where the report's folder should be", encoding="utf-8")
    process = monitor(tmp_path, "--every", "1s", "--runs", "2", "--report", str(tmp_path / "www" / "report.html"))
    assert process.wait(timeout=240) == 0, process.stderr.read()
    log = (tmp_path / "monitor.log").read_text(encoding="utf-8")
    assert log.count("crawl finished with exit status 0") == 2 and log.count("report not written to") == 2
    assert "Traceback" not in log and "Traceback" not in process.stderr.read()


def test_a_run_that_finds_the_lock_taken_does_not_start_nor_count(site, tmp_path):
    lock = schedule_lock_path(f"sqlite:///{tmp_path / 'news.sqlite'}")
    log = tmp_path / "monitor.log"
    skipped = f"skipped: another run holds {lock}"
    with open(lock, "w") as held:  # what cron's `flock -n` (or another monitor) holds while its crawl runs
        fcntl.flock(held, fcntl.LOCK_EX)
        process = monitor(tmp_path, "--every", "1s", "--runs", "1")
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text(encoding="utf-8").count(skipped) >= 2):
            assert process.poll() is None, process.stderr.read()  # two skipped ticks are not the one run asked for
            assert time.monotonic() < deadline, "no two skipped ticks within 120 s"
            time.sleep(0.1)
        text = log.read_text(encoding="utf-8")
        assert "crawl started" not in text and not (tmp_path / "news.sqlite").exists()
    # The lock released: the next tick is the one run, and the monitor stops after it.
    assert process.wait(timeout=240) == 0, process.stderr.read()
    text = log.read_text(encoding="utf-8")
    assert text.count("crawl finished with exit status 0") == 1
    assert text.index(skipped) < text.index("crawl started")


def test_sigterm_stops_the_monitor_after_the_running_crawl_shut_down_cleanly(site, tmp_path):
    site.publish("alpha", 2, "慢页面", OTHER_STORY, "2026-11-16 11:00")
    # The page is answered only once the crawl took the stop: it is in flight when the signal arrives, and the
    # crawl busy, however fast or slow the machine.
    released = site.pages["/alpha/news/2.html"].gate = threading.Event()
    process = monitor(tmp_path, "--every", "1h")
    log = tmp_path / "monitor.log"
    try:
        wait_for(lambda: site.requests["/alpha/news/2.html"], 60)
        process.send_signal(signal.SIGTERM)
        wait_for(lambda: "Received SIGINT, shutting down gracefully" in log.read_text(encoding="utf-8"), 120)
    finally:
        released.set()
    assert process.wait(timeout=120) == 0
    text = log.read_text(encoding="utf-8")
    assert "stopping (SIGTERM)" in text and "crawl finished" in text
    assert "Received SIGINT, shutting down gracefully" in text  # Scrapy's own clean stop
    # What the stop leaves depends on how far the machine got, not what it promises: every article page the crawl
    # fetched is recorded, or, fetched while its site's template was still warming up, held (not stored in a hurry),
    # reported as held, and read by the next run.
    fetched, held = (sum(_stats(text, f"newsdedup/site/{name}/{what}") for name in ("alpha", "beta"))
                     for what in ("fetched", "held_at_stop"))
    recorded = _recorded(tmp_path / "news.sqlite")
    assert site.requests["/alpha/news/2.html"] == 1 and fetched >= 1  # the slow page in flight was let finish
    assert len(recorded) + held == fetched, (sorted(recorded), held, fetched)
    assert (f"{held} fetched page(s) held for their site's template were not read, the next run fetches them again"
            in text) == (held > 0)
    before = dict(site.requests)
    process = monitor(tmp_path, "--every", "1s", "--runs", "1")
    assert process.wait(timeout=240) == 0, process.stderr.read()
    assert "crawl finished with exit status 0" in log.read_text(encoding="utf-8")[len(text):]
    articles = [path for path in site.pages if "/news/" in path]
    assert sorted(_recorded(tmp_path / "news.sqlite")) == sorted((site.base_url + path) for path in articles)
    for path in articles:  # the held (and any unfetched) pages fetched by the next run; the recorded ones not again
        assert site.requests[path] == before.get(path, 0) + ((site.base_url + path) not in recorded), path


def _stats(log: str, name: str) -> int:
    """The last value of a stat in the crawl's stats dump in ``log`` (0 when absent)."""
    values = re.findall(rf"'{re.escape(name)}': (\d+)", log)
    return int(values[-1]) if values else 0


def _recorded(db: Path) -> set[str]:
    """URLs the database recorded in any outcome table."""
    with sqlite3.connect(db) as conn:
        return {url for table in ("articles", "repeats", "skipped", "failures")
                for (url,) in conn.execute(f"SELECT url FROM {table}")}


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_ctrl_c_in_a_terminal_stops_the_crawl_once_gracefully(site, tmp_path):
    """Ctrl-C signals the terminal's whole foreground process group. The crawl runs in a group of its own, so it
    gets one SIGINT (the monitor's), never the terminal's as well: two are Scrapy's forced, unclean stop."""
    site.publish("alpha", 2, "慢页面", OTHER_STORY, "2026-11-16 11:00")
    released = site.pages["/alpha/news/2.html"].gate = threading.Event()  # in flight until the crawl stops
    process = monitor(tmp_path, "--every", "1h", start_new_session=True)  # a job in a shell: its own group
    log = tmp_path / "monitor.log"
    try:
        wait_for(lambda: site.requests["/alpha/news/2.html"], 60)
        (crawl,) = _children(process.pid)
        assert os.getpgid(crawl) != os.getpgid(process.pid)
        os.killpg(process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        wait_for(lambda: "Received SIGINT, shutting down gracefully" in log.read_text(encoding="utf-8"), 120)
    finally:
        released.set()
    assert process.wait(timeout=120) == 0
    text = log.read_text(encoding="utf-8")
    assert text.count("Received SIGINT") == 1 and "twice" not in text, text[-2000:]
    assert "stopping (SIGINT)" in text and "crawl finished" in text


def crontab_commands(text: str) -> list[str]:
    """The commands of the crontab lines in ``text``'s cron blocks, each line's schedule checked."""
    commands = []
    for block in re.findall(r"```cron\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.strip() and not line.startswith("#"):
                fields = line.split(None, 5)
                assert croniter.is_valid(" ".join(fields[:5])), fields[:5]
                commands.append(fields[5])
    return commands


def test_readme_crontab_lines():
    commands = crontab_commands(SCHEDULING)
    assert len(commands) == 2  # the crawl under flock, and Scrapyd's scheduling
    for command in commands:
        assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0
        assert re.search(r">> \S+\.log 2>&1$", command)  # the output appended to a log file
    (crawl,) = [command for command in commands if "scrapy crawl portal" in command]
    # The same lock as `newsdedup monitor` on that database.
    assert lock_of(crawl) == str(schedule_lock_path(storage_uri_of(crawl)))


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_readme_systemd_units(tmp_path):
    units = dict(re.findall(r"`/etc/systemd/system/([\w.-]+)`:\n\n```ini\n(.*?)```", SCHEDULING, re.S))
    assert set(units) == {"newsdedup-crawl.service", "newsdedup-crawl.timer"}
    for name, text in units.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "verify", *(str(tmp_path / name) for name in units)],
                            capture_output=True, text=True)
    assert result.returncode == 0 and "newsdedup-crawl" not in result.stderr, result.stderr
    exec_start = re.search(r"^ExecStart=(.*)$", units["newsdedup-crawl.service"], re.M).group(1)
    assert lock_of(exec_start) == str(schedule_lock_path(storage_uri_of(exec_start)))
    assert "scrapy crawl portal" in exec_start


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.skipif(shutil.which("curl") is None, reason="docs/scheduling.md schedules Scrapyd jobs with curl")
def test_readme_scrapyd_lines_deploy_and_run_a_crawl(site, tmp_path, store_uri):
    """docs/scheduling.md's Scrapyd lines, with this test's port and paths: deploy the project, then the crontab line's
    command queues a crawl when Scrapyd is idle, and nothing while that job waits or runs."""
    scrapyd_part = SCHEDULING.split("**Scrapyd**", 1)[1]
    block = re.findall(r"```sh\n(.*?)```", scrapyd_part, re.S)[0]
    deploy, schedule = (next(line for line in block.splitlines() if line.startswith(word))
                        for word in ("scrapyd-deploy", "curl"))
    (cron,) = crontab_commands(scrapyd_part)
    assert schedule.replace("curl ", "curl -sf ", 1) in cron  # the one-off line and the cron line queue the same run
    port = _free_port()
    project = tmp_path / "project"  # scrapyd-deploy writes a setup.py and build/ into the project: use a copy
    shutil.copytree(REPO_ROOT, project, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info",
                                                                       "__pycache__", "tests", "docs"))
    config = (project / "scrapy.cfg").read_text(encoding="utf-8")
    assert "url = http://127.0.0.1:6800/" in config
    (project / "scrapy.cfg").write_text(config.replace(":6800/", f":{port}/"), encoding="utf-8")
    home = tmp_path / "scrapyd"
    home.mkdir()
    (home / "scrapyd.conf").write_text(
        f"[scrapyd]\nbind_address = 127.0.0.1\nhttp_port = {port}\nmax_proc = 1\neggs_dir = {home}/eggs\n"
        f"logs_dir = {home}/logs\ndbs_dir = {home}/dbs\nitems_dir =\n", encoding="utf-8")
    bin_dir = Path(sys.executable).parent
    server = subprocess.Popen([str(bin_dir / "scrapyd")], cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                assert _get(f"{base}/daemonstatus.json")["status"] == "ok"
                break
            except OSError:
                time.sleep(0.2)
        deployed = subprocess.run([str(bin_dir / "scrapyd-deploy"), *shlex.split(deploy)[1:]], cwd=project,
                                  capture_output=True, text=True, timeout=180)
        assert deployed.returncode == 0 and '"status": "ok"' in deployed.stdout, deployed.stdout + deployed.stderr
        db = tmp_path / "db.sqlite" if store_uri.startswith("sqlite") else store_uri
        log_file = tmp_path / "scrapyd-schedule.log"
        fast = "".join(f" -d setting={value}" for value in FAST[1::2])
        command = (cron.replace("http://127.0.0.1:6800", base)
                   .replace("/opt/newsdedup/config/sites.toml", str(tmp_path / "sites.toml"))
                   .replace("sqlite:////var/lib/newsdedup/news.sqlite", store_uri + fast)
                   .replace("/var/log/newsdedup/scrapyd-schedule.log", str(log_file)))
        assert subprocess.run(["bash", "-c", command]).returncode == 0  # idle: a crawl is queued
        # At once again: the job is pending or running (a crawl takes seconds to start), so nothing is queued.
        assert subprocess.run(["bash", "-c", command]).returncode != 0
        (scheduled,) = [json.loads(line) for line in log_file.read_text(encoding="utf-8").splitlines()]
        assert scheduled["status"] == "ok", scheduled
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            jobs = _get(f"{base}/listjobs.json?project=newsdedup")
            if any(job["id"] == scheduled["jobid"] for job in jobs["finished"]):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the Scrapyd job did not finish: {jobs}")
        log = next((home / "logs").rglob(f"{scheduled['jobid']}.log")).read_text(encoding="utf-8")
        assert "Traceback" not in log, log[-3000:]
        assert rows(db, "SELECT COUNT(*) FROM articles") == [(3,)]
        assert rows(db, "SELECT COUNT(*) FROM clusters WHERE members = 2") == [(1,)]
    finally:
        server.terminate()
        server.wait(timeout=30)
