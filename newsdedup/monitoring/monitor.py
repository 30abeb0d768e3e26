"""``newsdedup monitor``: run the crawl every N minutes, never two runs on one database at once.

Each run is a fresh ``newsdedup crawl`` process, which runs from any folder (a Twisted reactor cannot be
restarted, and a new process gives back all memory), started at a fixed rate: a run that overruns the interval is followed
at once by the next, never overlapped. Before each run the monitor takes an exclusive ``flock(2)`` on
the schedule lock file (``<database>.schedule.lock`` by default); the crontab line in docs/scheduling.md takes the
same lock with ``flock -n``, so a cron job, a systemd timer and a monitor can share one database and
still never run together: a run that finds the lock held is skipped and logged.

SIGTERM or SIGINT stops the monitor after the running crawl has shut down cleanly (the signal is passed
on as SIGINT, Scrapy's graceful stop), so no batch is lost. The crawl runs in a process group of its own:
Ctrl-C in a terminal signals the whole foreground group, and a crawl in the monitor's group would get
that SIGINT and the monitor's, which Scrapy takes for a second Ctrl-C and answers with an unclean stop.
"""

from __future__ import annotations

import fcntl
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TextIO
from urllib.parse import unquote

from newsdedup.run.verdict import ExitCode

LOCK_SUFFIX = ".schedule.lock"


def schedule_lock_path(storage_uri: str) -> Path:
    """The lock file of a database: beside a SQLite file, else in the current folder."""
    if storage_uri.startswith("sqlite:///"):
        return Path(unquote(storage_uri[len("sqlite:///"):]) + LOCK_SUFFIX)
    return Path("newsdedup" + LOCK_SUFFIX)


def crawl_command(*, storage_uri: str, sites: str | None = None, site: str | None = None,
                  settings: Sequence[str] = (), settings_file: str | None = None) -> list[str]:
    """The ``newsdedup crawl`` command of one run (``settings``: ``NAME=VALUE`` strings, over ``settings_file``)."""
    command = [sys.executable, "-m", "newsdedup.cli", "crawl"]
    if settings_file:
        command += ["--settings", settings_file]
    if sites:
        command += ["--sites", sites]
    if site:
        command += ["-a", f"site={site}"]
    command += ["-s", f"NEWSDEDUP_STORAGE_URI={storage_uri}"]
    for setting in settings:
        command += ["-s", setting]
    return command


class ScheduleLock:
    """An exclusive, non-blocking ``flock`` on ``path``: ``acquire()`` says whether this process got it.

    The kernel releases it when the process dies, so a killed run never leaves a stale lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None

    def acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a")  # noqa: SIM115 - held open while locked
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._file = handle
        return True

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


class Monitor:
    """Runs ``command`` every ``every`` under ``lock``; ``after_run(status)`` is called after each run."""

    def __init__(self, command: list[str], *, every: timedelta, lock: ScheduleLock, log: TextIO,
                 runs: int | None = None, after_run: Callable[[int], None] | None = None) -> None:
        if every.total_seconds() <= 0:
            raise ValueError("the interval must be positive, e.g. --every 10m")
        self.command = command
        self.every = every.total_seconds()
        self.lock = lock
        self.log = log
        self.runs = runs
        self.after_run = after_run
        self._stop = threading.Event()
        self._child: subprocess.Popen | None = None

    def say(self, message: str) -> None:
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.log.write(f"{stamp} newsdedup monitor: {message}\n")
        self.log.flush()

    def stop(self, signum: int | None = None, frame=None) -> None:
        """Stop after the current run; a running crawl gets SIGINT, Scrapy's graceful shutdown."""
        if not self._stop.is_set():
            self.say(f"stopping ({signal.Signals(signum).name if signum else 'requested'}); "
                     "the running crawl, if any, finishes its open batch")
        self._stop.set()
        if self._child is not None and self._child.poll() is None:
            self._child.send_signal(signal.SIGINT)

    def run_once(self) -> int | None:
        """One crawl under the lock; its exit status, or None when another run held the lock."""
        if not self.lock.acquire():
            self.say(f"skipped: another run holds {self.lock.path}")
            return None
        try:
            self.say("crawl started: " + " ".join(self.command[1:]))
            # process_group=0: the terminal's Ctrl-C reaches the monitor only, which passes on exactly one SIGINT.
            self._child = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT,
                                           process_group=0)
            status = self._child.wait()
            self._child = None
        finally:
            self.lock.release()
        self.say(f"crawl finished with exit status {status}")
        return status

    def run(self) -> int:
        """Loop until stopped (or ``runs`` crawls: a tick skipped because another run held the lock is not one);
        0 when every run succeeded, else 1."""
        failed = done = 0
        next_start = time.monotonic()
        while not self._stop.is_set():
            status = self.run_once()
            if status is not None:
                done += 1
                # A crawl this monitor interrupted on its way out (SIGTERM) did not fail: it was stopped.
                stopped_by_us = self._stop.is_set() and status == ExitCode.INTERRUPTED
                failed += status != 0 and not stopped_by_us
                if self.after_run is not None and not self._stop.is_set():
                    self.after_run(status)
            if self.runs is not None and done >= self.runs:
                break
            next_start += self.every
            wait = next_start - time.monotonic()
            if wait < 0:
                self.say("the run took longer than the interval; the next starts now")
                next_start = time.monotonic()
                wait = 0
            self._stop.wait(wait)
        return 1 if failed else 0
