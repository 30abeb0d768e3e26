"""Shared test fixtures.

Data-driven tests read the real pages and texts in ``../shared/data`` (beside the
repository on developer machines and in CI).  A user's machine has no such folder,
so those tests skip rather than fail when it is absent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("NEWSDEDUP_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; skips the test when it is not there."""
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
