"""Shared test fixtures, and no silent skips in CI.

Data-driven tests read the real pages and texts in ``../shared/data`` (beside the repository on developer
machines and in CI).  A user's machine has no such folder, so there those tests skip; where the environment
variable ``CI`` is set (``.ci/run`` sets it, as CI services do), every skip fails instead: a test that does not
run in CI proves nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def docs_hook(name: str):
    """A module of docs/hooks/ (MkDocs hooks are files, not a package), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", REPO_ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module
SHARED_DATA = Path(os.environ.get("NEWSDEDUP_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session", autouse=True)
def _cache_home(tmp_path_factory):
    """Crawls on PostgreSQL keep their dedup state in the cache folder (NEWSDEDUP_STATE_DIR=auto): the session's,
    not the user's, also for the crawl subprocesses the tests start."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; skips the test when it is not there (fails under ``CI``)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared test data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """A database written by ``newsdedup demo`` (two crawls of the bundled mini-portal), made once a session."""
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    result = subprocess.run([sys.executable, "-m", "newsdedup.cli", "demo", "--storage", f"sqlite:///{db}"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return db
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped while CI is set, where every test must run: {reason}"
