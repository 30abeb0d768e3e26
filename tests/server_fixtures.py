"""Real Redis and PostgreSQL servers for the tests that need them (started once per test session).

A test module imports the fixtures it uses (``from server_fixtures import postgres, store_uri``). Without the
server binaries a test is skipped on a developer's machine, and FAILS when ``CI`` is set: CI must run them.
"""

from __future__ import annotations

import os

import pytest

from servers import PostgresServer, RedisServer, ServerUnavailable


def _unavailable(exc: Exception):
    message = f"{exc} (the store contract and distributed tests need real servers)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _serve(server_class):
    try:
        server = server_class()
    except (ServerUnavailable, ImportError) as exc:
        _unavailable(exc)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres():
    yield from _serve(PostgresServer)


@pytest.fixture(scope="session")
def redis_server():
    yield from _serve(RedisServer)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_uri(request, tmp_path):
    """A URI of a new, empty store on each backend: the store contract is the same for both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'db.sqlite'}"
    return request.getfixturevalue("postgres").create_database()
